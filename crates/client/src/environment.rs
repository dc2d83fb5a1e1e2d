//! The environment a stdio server starts with: a short list of the host's variables, never the
//! whole of it (decision 0101).

use std::ffi::OsString;

/// The host's variables every stdio server is given, those of them that are set: the list the
/// official MCP SDKs give a server unless told otherwise (the TypeScript SDK's
/// `DEFAULT_INHERITED_ENV_VARS`, read by `getDefaultEnvironment` in `src/client/stdio.ts`; the
/// Python SDK's `get_default_environment` has the same Unix list, which follows what `sudo`
/// keeps). Windows has its own. Nothing else of the host's reaches a server unless its config
/// says so, so a provider's API key or the S3 store's AWS credentials stay with the host.
pub const DEFAULT_INHERITED_ENV: &[&str] = if cfg!(windows) {
    &[
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
        "PROGRAMFILES",
    ]
} else {
    &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"]
};

/// Which of the host's environment variables a stdio server inherits, besides the `env` its
/// config sets (which wins over any of them).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum InheritEnv {
    /// [`DEFAULT_INHERITED_ENV`] only.
    #[default]
    Minimal,
    /// [`DEFAULT_INHERITED_ENV`] and these, each when the host has it.
    Named(Vec<String>),
    /// The host's whole environment, as before decision 0101.
    All,
}

impl InheritEnv {
    /// The variables a server starts with before its `env`, each read with `host`; `None` for
    /// [`InheritEnv::All`], which keeps the host's environment as it is.
    ///
    /// A default variable whose value starts with `()` is left out, as the SDKs leave it out:
    /// that is how bash exports a function, which a shell the server starts would define. A
    /// variable the config names is passed as it is: someone asked for it.
    pub(crate) fn inherited(
        &self,
        host: impl Fn(&str) -> Option<OsString>,
    ) -> Option<Vec<(String, OsString)>> {
        let named: &[String] = match self {
            InheritEnv::Minimal => &[],
            InheritEnv::Named(names) => names,
            InheritEnv::All => return None,
        };
        let defaults = DEFAULT_INHERITED_ENV.iter().filter_map(|&name| {
            let value = host(name)?;
            let function = value.as_encoded_bytes().starts_with(b"()");
            (!function).then(|| (name.to_owned(), value))
        });
        let named = named
            .iter()
            .filter_map(|name| host(name).map(|value| (name.clone(), value)));
        Some(defaults.chain(named).collect())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A host environment with a secret, a shell function and every default variable but the
    /// last.
    fn host(name: &str) -> Option<OsString> {
        let mut variables: BTreeMap<&str, &str> = DEFAULT_INHERITED_ENV
            [..DEFAULT_INHERITED_ENV.len() - 1]
            .iter()
            .map(|&name| (name, "v"))
            .collect();
        variables.insert(DEFAULT_INHERITED_ENV[0], "() { echo pwned; }");
        variables.insert("AWS_SECRET_ACCESS_KEY", "s3cret");
        variables.insert("MEMORY_FILE_PATH", "/tmp/m.jsonl");
        variables.get(name).map(OsString::from)
    }

    fn names(inherited: Option<Vec<(String, OsString)>>) -> Vec<String> {
        inherited
            .expect("a list")
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    }

    #[test]
    fn the_minimal_list_is_the_defaults_that_are_set_without_shell_functions() {
        let expected = &DEFAULT_INHERITED_ENV[1..DEFAULT_INHERITED_ENV.len() - 1];
        assert_eq!(names(InheritEnv::Minimal.inherited(host)), expected);
    }

    #[test]
    fn named_variables_are_added_when_the_host_has_them() {
        let inherit = InheritEnv::Named(vec!["MEMORY_FILE_PATH".to_owned(), "UNSET".to_owned()]);
        let names = names(inherit.inherited(host));
        assert_eq!(names.last().map(String::as_str), Some("MEMORY_FILE_PATH"));
        assert!(
            !names
                .iter()
                .any(|n| n == "UNSET" || n == "AWS_SECRET_ACCESS_KEY")
        );
    }

    #[test]
    fn all_keeps_the_host_environment() {
        assert_eq!(InheritEnv::All.inherited(host), None);
    }
}
