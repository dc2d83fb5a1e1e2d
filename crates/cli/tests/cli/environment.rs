//! A stdio server's environment (decision 0101): the few variables of mcpl's that the official
//! SDKs pass, what the server's `env` sets, and what its `mcpl.inheritEnv` adds. Each server
//! here is `sh`, which writes what it was given to a file and then becomes the demo server.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Value, json};

/// Secrets in mcpl's environment, as a provider key and the S3 store's credentials are.
const SECRETS: [(&str, &str); 2] = [
    ("AWS_SECRET_ACCESS_KEY", "aws-secret-for-the-host-only"),
    ("MCPL_TEST_SECRET_KEY", "test-secret-for-the-host-only"),
];

/// What `sh` sets in its own environment, whatever it was given.
const SHELL_OWN: [&str; 4] = ["PWD", "OLDPWD", "SHLVL", "_"];

/// A shell function as bash exports one: the SDKs never pass such a value on.
const SHELL_FUNCTION: &str = "() { echo pwned; }";

/// `mcpl run` with one server whose config has `env` and whose `mcpl` options are `options`,
/// mcpl itself started with [`SECRETS`], a known `HOME` and `TERM`, and a function in `SHELL`.
/// Gives every variable the server saw.
fn seen_by_server(test: &str, env: Value, options: Value) -> BTreeMap<String, String> {
    let dir = scratch(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let dump = dir.join("environment");
    let config = dir.join("config.json");
    let server = json!({
        "command": "sh",
        "args": ["-c", "env > \"$0\" && exec \"$1\" serve-demo", dump, env!("CARGO_BIN_EXE_mcpl")],
        "env": env,
        "mcpl": options,
    });
    let file = json!({"mcpServers": {"env": server}, "mcpl": {"spillDir": dir.join("spill")}});
    std::fs::write(&config, file.to_string()).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcpl"))
        .arg("run")
        .arg("--config")
        .arg(&config)
        .envs(SECRETS)
        .env("HOME", &dir)
        .env("TERM", "dumb")
        .env("SHELL", SHELL_FUNCTION)
        .env_remove("MCPL_LOG")
        .output()
        .expect("the mcpl binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let text = std::fs::read_to_string(&dump).expect("the server wrote its environment");
    let _ = std::fs::remove_dir_all(&dir);
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

/// The test's own folder, which is also the `HOME` mcpl is started with.
fn scratch(test: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mcpl-cli-env-{test}-{}", std::process::id()))
}

#[test]
fn a_server_sees_only_the_sdk_list_and_its_own_env() {
    let seen = seen_by_server("minimal", json!({"FROM_CONFIG": "yes"}), json!({}));
    let allowed: Vec<&str> = mcpl_host::config::DEFAULT_INHERITED_ENV
        .iter()
        .chain(&SHELL_OWN)
        .chain(&["FROM_CONFIG"])
        .copied()
        .collect();
    // Names only in the message: a value could be one of the machine's own secrets.
    let names: Vec<&String> = seen.keys().collect();
    for name in &names {
        assert!(
            allowed.contains(&name.as_str()),
            "the server saw {name}, which is not on the list: {names:?}"
        );
    }
    for (name, value) in SECRETS {
        let shown = seen.values().any(|v| v.contains(value));
        assert!(
            !seen.contains_key(name) && !shown,
            "{name} reached the server"
        );
    }
    assert_eq!(seen["FROM_CONFIG"], "yes");
    assert_eq!(seen["HOME"], scratch("minimal").display().to_string());
    assert_eq!(seen["TERM"], "dumb");
    let path = std::env::var("PATH").expect("the tests run with a PATH");
    assert_eq!(seen["PATH"], path);
    assert!(
        !seen.contains_key("SHELL"),
        "a shell function is not passed on"
    );
}

#[test]
fn a_server_s_env_wins_over_what_it_inherits() {
    let seen = seen_by_server(
        "wins",
        json!({"HOME": "/from/config", "AWS_SECRET_ACCESS_KEY": "the-server-s-own"}),
        json!({"inheritEnv": false}),
    );
    assert_eq!(seen["HOME"], "/from/config");
    assert_eq!(seen["AWS_SECRET_ACCESS_KEY"], "the-server-s-own");
    assert!(!seen.contains_key("MCPL_TEST_SECRET_KEY"));
}

#[test]
fn inherit_env_names_the_variables_a_server_also_gets() {
    let seen = seen_by_server(
        "named",
        json!({}),
        json!({"inheritEnv": ["MCPL_TEST_SECRET_KEY", "MCPL_TEST_UNSET_VARIABLE"]}),
    );
    assert_eq!(seen["MCPL_TEST_SECRET_KEY"], SECRETS[1].1);
    assert!(!seen.contains_key("AWS_SECRET_ACCESS_KEY"));
    assert!(!seen.contains_key("MCPL_TEST_UNSET_VARIABLE"));
    assert_eq!(seen["TERM"], "dumb", "the minimal list still comes");
}

#[test]
fn inherit_env_true_gives_a_server_all_of_mcpl_s_environment() {
    let seen = seen_by_server("all", json!({}), json!({"inheritEnv": true}));
    for (name, value) in SECRETS {
        assert_eq!(seen.get(name).map(String::as_str), Some(value), "{name}");
    }
    assert_eq!(seen["SHELL"], SHELL_FUNCTION, "all of it, as it is");
    assert_eq!(
        seen["CARGO_PKG_NAME"], "mcpl-cli",
        "cargo's variables for the test reach it too"
    );
}
