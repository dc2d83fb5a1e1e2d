//! No secret leaves the host (issue 26), end to end: a stdio server (`leaky_server.py`) echoes
//! the token its config gave it, mcpl's own key, a GitHub token and a signed url, in its tool
//! definition, its result, a spilled SVG and its standard error; a WebSocket server whose url
//! holds a key fails to start. Nothing of them reaches a request body, the spill or a log line.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The token the server's config gives it (a header or `env` value is a secret the host holds).
const SERVER_TOKEN: &str = "srvTok3n9x2k7q4m8w1z";
/// A key in mcpl's own environment, as a provider key is.
const HOST_KEY: &str = "hostK3y5b8n2v6c4x9z7";
/// The key in a WebSocket server's url.
const WS_KEY: &str = "wsK3y7f2k9XbT4mZ8pL1";
/// The signature in the signed url the server puts everywhere.
const SIGNATURE: &str = "9f8e7d6c5b4a39281706f5e4d3c2b1a0";
/// The GitHub token the server writes in plain text.
const GITHUB: &str = "R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3s0Q";

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpl-cli-leaks-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn every_file(dir: &Path, out: &mut String) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            every_file(&path, out);
        } else {
            out.push_str(&String::from_utf8_lossy(
                &std::fs::read(&path).unwrap_or_default(),
            ));
        }
    }
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in [SERVER_TOKEN, HOST_KEY, WS_KEY, SIGNATURE, GITHUB] {
        assert!(
            !text.to_lowercase().contains(&secret.to_lowercase()),
            "{what} holds {secret}: {text}"
        );
    }
}

#[test]
fn a_server_that_echoes_every_secret_gets_none_to_the_model_the_spill_or_the_log() {
    let dir = scratch("echo");
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/leaky_server.py");
    let config = json!({
        "mcpServers": {
            "leaky": {"command": "python3", "args": [server], "env": {"LEAKY_TOKEN": SERVER_TOKEN},
                      "mcpl": {"inheritEnv": ["MCPL_TEST_API_KEY"], "budget": 2000}},
            "dead": {"url": format!("ws://127.0.0.1:9/mcp?key={WS_KEY}")},
        },
        "mcpl": {"spillDir": dir.join("spill")},
    });
    let script = json!({
        "steps": [
            {"tool_calls": [{"server": "leaky", "name": "echo", "arguments": {"mode": "plain"}},
                            {"server": "dead", "name": "anything"}]},
        ],
        "final": "Done."
    });
    let (config_path, script_path) = (dir.join("config.json"), dir.join("script.json"));
    std::fs::write(&config_path, config.to_string()).unwrap();
    std::fs::write(&script_path, script.to_string()).unwrap();
    let transcript = dir.join("transcript.jsonl");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcpl"))
        .args(["run", "--config"])
        .arg(&config_path)
        .arg("--model")
        .arg(format!("scripted:{}", script_path.display()))
        .arg("--transcript")
        .arg(&transcript)
        .env("MCPL_TEST_API_KEY", HOST_KEY)
        .env("MCPL_LOG", "trace")
        .output()
        .expect("the mcpl binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let bodies = std::fs::read_to_string(&transcript).unwrap();
    let first: Value = serde_json::from_str(bodies.lines().next().unwrap()).unwrap();
    // The tool is offered, its definition redacted.
    let tools = first["tools"].to_string();
    assert!(tools.contains("leaky__echo"), "{tools}");
    assert!(tools.contains("[withheld"), "{tools}");
    assert_no_secret("the tools", &tools);
    // The result reached the model, cut and spilled, the stopped server's error too.
    assert!(bodies.contains("token [withheld secret]"), "{bodies}");
    assert!(bodies.contains("server dead is not available"), "{bodies}");
    assert_no_secret("a request body", &bodies);
    assert!(
        stderr.contains("leaky: calling with token"),
        "the server's stderr is logged: {stderr}"
    );
    assert_no_secret("standard error", &stderr);
    let mut spilled = String::new();
    every_file(&dir.join("spill"), &mut spilled);
    assert!(
        spilled.contains("<svg"),
        "the SVG is spilled: {spilled:.300} {stderr:.3000}"
    );
    assert_no_secret("the spill", &spilled);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `mcpl run --report` (issue 33): the page holds what the model was sent, the tool and the
/// withheld markers, but none of the secrets the server echoes, nor its signed url.
#[test]
fn the_report_page_of_a_server_that_echoes_every_secret_holds_none() {
    let dir = scratch("report");
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/leaky_server.py");
    let config = json!({
        "mcpServers": {
            "leaky": {"command": "python3", "args": [server], "env": {"LEAKY_TOKEN": SERVER_TOKEN},
                      "mcpl": {"inheritEnv": ["MCPL_TEST_API_KEY"], "budget": 2000}},
        },
        "mcpl": {"spillDir": dir.join("spill")},
    });
    let script = json!({
        "steps": [{"tool_calls": [{"server": "leaky", "name": "echo", "arguments": {"mode": "plain"}}]}],
        "final": "Done."
    });
    let (config_path, script_path) = (dir.join("config.json"), dir.join("script.json"));
    std::fs::write(&config_path, config.to_string()).unwrap();
    std::fs::write(&script_path, script.to_string()).unwrap();
    let page = dir.join("report.html");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcpl"))
        .args(["run", "--config"])
        .arg(&config_path)
        .arg("--model")
        .arg(format!("scripted:{}", script_path.display()))
        .arg("--report")
        .arg(&page)
        .env("MCPL_TEST_API_KEY", HOST_KEY)
        .output()
        .expect("the mcpl binary runs");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("leaky__echo"), "the tool is on the page");
    assert!(
        html.contains("token [withheld secret]"),
        "the result is on the page"
    );
    assert!(
        html.contains("data-tool=\"echo\""),
        "the call is on the page"
    );
    assert!(html.contains("read_result("), "its spill is on the page");
    assert_no_secret("the report page", &html);
    assert!(
        !html.contains("files.example.com"),
        "the signed url is on the page"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
