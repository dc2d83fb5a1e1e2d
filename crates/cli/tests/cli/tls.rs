//! One TLS stack (decision 0120): `https://` and `wss://` servers on loopback, with a certificate
//! signed by a private CA that the config trusts through `mcpl.tlsRoots`, and refused in words
//! when it does not.

use std::path::PathBuf;

use mcpl_demo_server::{Options, Remote};
use mcpl_testkit::{test_ca, tls_front};
use serde_json::{Value, json};

/// Runs `mcpl run` with the demo server dialed at `url` as `secure`, calling its `text` tool,
/// `tls_roots` in the config; returns the exit status, stderr and the transcript.
fn run_against(name: &str, url: &str, tls_roots: &[PathBuf]) -> (Option<i32>, String, String) {
    let dir = std::env::temp_dir().join(format!("mcpl-cli-tls-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.json");
    let mut host = json!({"spillDir": dir.join("spill")});
    if !tls_roots.is_empty() {
        host["tlsRoots"] = json!(tls_roots);
    }
    let document = json!({"mcpServers": {"secure": {"url": url}}, "mcpl": host});
    std::fs::write(&config, document.to_string()).unwrap();
    let script = dir.join("script.json");
    let steps = json!({"steps": [{"tool_calls": [{"server": "secure", "name": "text"}]}],
                       "final": "done"});
    std::fs::write(&script, steps.to_string()).unwrap();
    let transcript = dir.join("transcript.jsonl");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcpl"))
        .env_remove("MCPL_LOG")
        .args(["run", "--config"])
        .arg(&config)
        .arg("--model")
        .arg(format!("scripted:{}", script.display()))
        .arg("--transcript")
        .arg(&transcript)
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    let transcript = std::fs::read_to_string(&transcript).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    (output.status.code(), stderr, transcript)
}

fn remote_behind_tls() -> (Remote, std::net::SocketAddr) {
    let remote = Remote::start(Options::default()).unwrap();
    let plain: std::net::SocketAddr = remote.origin()["http://".len()..].parse().unwrap();
    (remote, tls_front(plain))
}

/// Whether the transcript holds a tool result the demo's `text` tool wrote.
fn answered(transcript: &str) -> bool {
    transcript
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .any(|entry| {
            entry.to_string().contains("tool_result")
                && !entry.to_string().contains("is_error\":true")
        })
}

#[test]
fn https_and_wss_servers_signed_by_a_ca_the_config_trusts_are_dialed() {
    let (_remote, front) = remote_behind_tls();
    let ca = test_ca();
    for (name, url) in [
        ("https", format!("https://127.0.0.1:{}/mcp", front.port())),
        ("wss", format!("wss://127.0.0.1:{}/mcp", front.port())),
    ] {
        let (status, stderr, transcript) = run_against(name, &url, std::slice::from_ref(&ca));
        assert_eq!(status, Some(0), "{name}: {stderr}");
        assert!(!stderr.contains("could not be started"), "{name}: {stderr}");
        assert!(answered(&transcript), "{name}: {transcript}");
    }
}

#[test]
fn a_certificate_no_trusted_root_signed_is_refused_in_words() {
    let (_remote, front) = remote_behind_tls();
    for (name, url) in [
        (
            "https-untrusted",
            format!("https://127.0.0.1:{}/mcp", front.port()),
        ),
        (
            "wss-untrusted",
            format!("wss://127.0.0.1:{}/mcp", front.port()),
        ),
    ] {
        // The only server: the run fails, with one line saying why and what to do.
        let (status, stderr, _) = run_against(name, &url, &[]);
        assert_eq!(status, Some(1), "{name}: {stderr}");
        assert!(!stderr.contains("internal error"), "{name}: {stderr}");
        let first = stderr.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("mcpl: server secure ")
                && first.contains("certificate")
                && first.contains("mcpl.tlsRoots adds a CA"),
            "{name}: {stderr}"
        );
    }
}

#[test]
fn a_roots_file_that_holds_no_certificate_is_a_config_error_naming_it() {
    let dir = std::env::temp_dir().join(format!("mcpl-cli-tls-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let roots = dir.join("roots.pem");
    std::fs::write(&roots, "not a certificate").unwrap();
    let config = dir.join("config.json");
    let document = json!({"mcpServers": {"demo": {"command": env!("CARGO_BIN_EXE_mcpl"),
                                                  "args": ["serve-demo"]}},
                          "mcpl": {"tlsRoots": [roots]}});
    std::fs::write(&config, document.to_string()).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcpl"))
        .args(["run", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("mcpl.tlsRoots"), "{stderr}");
    assert!(stderr.contains(&roots.display().to_string()), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
