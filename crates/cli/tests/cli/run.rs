//! `mcpl run`: the inference loop against the embedded demo server (`mcpl serve-demo`), with a
//! scripted model, as the command's contract says.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::mcpl;

/// The routes `--route` takes, and the field of a request body that holds the conversation.
const ROUTES: [(&str, &str); 5] = [
    ("anthropic", "messages"),
    ("openai-chat", "messages"),
    ("openai-responses", "input"),
    ("gemini", "contents"),
    ("text-only", "messages"),
];

/// Two model turns with tool calls, then the answer: three requests.
fn script() -> Value {
    json!({
        "steps": [
            {"tool_calls": [{"server": "demo", "name": "png"}, {"server": "demo", "name": "text"}]},
            {"tool_calls": [{"server": "demo", "name": "audio", "arguments": {}}]}
        ],
        "final": "The demo server answered."
    })
}

/// A folder of its own for one test, removed when the test ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("mcpl-cli-run-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn write(&self, name: &str, value: &Value) -> PathBuf {
        self.write_text(name, &value.to_string())
    }

    fn write_text(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A configuration with the demo server as `demo`, spilling into this folder.
    fn config(&self) -> PathBuf {
        self.write(
            "config.json",
            &json!({
                "mcpServers": {"demo": {"command": env!("CARGO_BIN_EXE_mcpl"), "args": ["serve-demo"]}},
                "mcpl": {"spillDir": self.0.join("spill")}
            }),
        )
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(config: &Path, script: &Path, transcript: &Path, extra: &[&str]) -> Output {
    let model = format!("scripted:{}", script.display());
    let mut args = vec![
        "run",
        "--config",
        config.to_str().unwrap(),
        "--model",
        &model,
        "--transcript",
        transcript.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    mcpl(&args, b"")
}

/// The transcript's request bodies, one per line.
fn bodies(transcript: &Path) -> Vec<Value> {
    std::fs::read_to_string(transcript)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The `content` of the Messages API `tool_result` block that answers `id`.
fn tool_result<'a>(body: &'a Value, id: &str) -> Option<&'a Value> {
    body["messages"]
        .as_array()?
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == id)
        .map(|b| &b["content"])
}

#[test]
fn a_scripted_run_writes_a_transcript_line_per_request_and_prints_the_answer() {
    let scratch = Scratch::new("scripted");
    let script = scratch.write("script.json", &script());
    let transcript = scratch.0.join("transcript.jsonl");
    let output = run(
        &scratch.config(),
        &script,
        &transcript,
        &["--prompt", "Show me the picture."],
    );
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "The demo server answered.\n"
    );
    // One line per tool call, in order, with its price.
    let calls: Vec<&str> = stderr
        .lines()
        .map(|line| line.split(':').take(2).collect::<Vec<_>>().join(":"))
        .map(|head| match head.as_str() {
            "mcpl: round 1 demo__png" => "png",
            "mcpl: round 1 demo__text" => "text",
            "mcpl: round 2 demo__audio" => "audio",
            _ => panic!("unexpected stderr line in {stderr}"),
        })
        .collect();
    assert_eq!(calls, ["png", "text", "audio"]);
    assert!(
        stderr.lines().all(|l| l.contains(" estimated tokens")),
        "{stderr}"
    );

    let bodies = bodies(&transcript);
    assert_eq!(bodies.len(), 3, "one request per model turn");
    let first_user = &bodies[0]["messages"][0]["content"];
    assert!(
        first_user.to_string().contains("Show me the picture."),
        "{first_user}"
    );
    // The round after a call carries its live copy: the PNG as a native image.
    let live = tool_result(&bodies[1], "call_1").unwrap();
    let image = live
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "image")
        .expect("a native image");
    assert_eq!(image["source"]["media_type"], "image/png");
    assert_eq!(
        image["source"]["data"],
        crate::fixture_base64("image.png").as_str()
    );
    // Later rounds carry its stored copy: text only.
    let stored = tool_result(&bodies[2], "call_1").unwrap().to_string();
    assert!(stored.contains("[image: image/png, 167B, ref "), "{stored}");
    assert!(!stored.contains("\"image\""), "{stored}");
    let audio = tool_result(&bodies[2], "call_3").unwrap().to_string();
    assert!(audio.contains("[audio: audio/wav, "), "{audio}");
}

#[test]
fn a_bad_config_exits_2_with_one_line_naming_the_key() {
    let scratch = Scratch::new("bad-config");
    let script = scratch.write("script.json", &script());
    let transcript = scratch.0.join("transcript.jsonl");
    let cases: &[(&str, &str)] = &[
        (
            r#"{"mcpServers": {"demo": {"command": "x", "args": [1]}}}"#,
            "mcpServers.demo.args[0]: invalid type: integer `1`, expected a string",
        ),
        (
            r#"{"mcpServers": {"demo": {"command": "x", "mcpl": {"budgt": 5}}}}"#,
            "mcpServers.demo.mcpl.budgt: unknown field `budgt`",
        ),
        (
            r#"{"mcpServers": {"demo": {"command": "x", "mcpl": {"uris": "all"}}}}"#,
            "mcpServers.demo.mcpl.uris: unknown variant `all`",
        ),
        (
            r#"{"mcpServers": {"demo": {"args": []}}}"#,
            "mcpServers.demo: missing field `command`",
        ),
        (
            r#"{"mcpServers": {}, "mcpl": {"contextWindow": "big"}}"#,
            "mcpl.contextWindow: invalid type: string",
        ),
        (
            r#"{"mcpServers": {"demo": {"command": "x", "mcpl": {"inheritEnv": "HOME"}}}}"#,
            "mcpServers.demo.mcpl.inheritEnv: invalid type: string",
        ),
        (r#"{"servers": {}}"#, "servers: unknown field `servers`"),
    ];
    for (config, key) in cases {
        let path = scratch.write_text("bad.json", config);
        let output = run(&path, &script, &transcript, &[]);
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(2), "{config}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{config}: {stderr}");
        assert!(
            stderr.starts_with(&format!("mcpl: {}: {key}", path.display())),
            "{config}: {stderr}"
        );
        assert!(output.stdout.is_empty(), "{config}");
        assert!(!transcript.exists(), "{config}: no request was made");
    }
    // A file that cannot be read is a failure, not bad input.
    let missing = scratch.0.join("missing.json");
    let output = run(&missing, &script, &transcript, &[]);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!("mcpl: {}: ", missing.display())),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn a_bad_script_exits_2_with_one_line_naming_the_key() {
    let scratch = Scratch::new("bad-script");
    let config = scratch.config();
    let transcript = scratch.0.join("transcript.jsonl");
    let cases: &[(&str, &str)] = &[
        (
            r#"{"steps": [{"tool_calls": [{"server": "demo"}]}]}"#,
            "at steps[0].tool_calls[0]: missing field `name`",
        ),
        (
            r#"{"steps": [{"tool_calls": [{"server": "demo", "name": "png", "extra": 1}]}]}"#,
            "at steps[0].tool_calls[0].extra: unknown field `extra`",
        ),
        (
            r#"{"steps": [{"tool_calls": {"server": "demo"}}]}"#,
            "at steps[0].tool_calls: invalid type: map, expected a sequence",
        ),
        (
            r#"{"steps": [], "finale": "x"}"#,
            "at finale: unknown field `finale`",
        ),
        ("not json", "at (top): expected ident"),
    ];
    for (script, key) in cases {
        let path = scratch.write_text("bad-script.json", script);
        let output = run(&config, &path, &transcript, &[]);
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(2), "{script}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{script}: {stderr}");
        assert!(
            stderr.starts_with(&format!("mcpl: model script {}: {key}", path.display())),
            "{script}: {stderr}"
        );
        assert!(output.stdout.is_empty(), "{script}");
        assert!(!transcript.exists(), "{script}: no request was made");
    }
    // A script that cannot be read is a failure, not bad input.
    let missing = scratch.0.join("no-script.json");
    let output = run(&config, &missing, &transcript, &[]);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!("mcpl: model script {}: ", missing.display())),
        "{stderr}"
    );
}

#[test]
fn every_route_runs_the_conversation_and_writes_its_requests() {
    let scratch = Scratch::new("routes");
    let config = scratch.config();
    let script = scratch.write("script.json", &script());
    for (route, conversation) in ROUTES {
        let transcript = scratch.0.join(format!("{route}.jsonl"));
        let output = run(&config, &script, &transcript, &["--route", route]);
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(0), "{route}: {stderr}");
        assert_eq!(
            String::from_utf8(output.stdout).unwrap(),
            "The demo server answered.\n",
            "{route}"
        );
        assert_eq!(stderr.lines().count(), 3, "{route}: {stderr}");
        let bodies = bodies(&transcript);
        assert_eq!(bodies.len(), 3, "{route}");
        for body in &bodies {
            assert!(body[conversation].is_array(), "{route}: {body}");
        }
        let text = std::fs::read_to_string(&transcript).unwrap();
        let png = crate::fixture_base64("image.png");
        if route == "text-only" {
            // Every image and audio block goes as its stored text.
            assert!(!text.contains("base64"), "{route}");
            assert!(!text.contains(&png), "{route}");
            assert!(text.contains("[image: image/png, 167B, ref "), "{route}");
        } else {
            // The PNG goes natively on every other route, once: in the round after its call.
            assert_eq!(text.matches(&png).count(), 1, "{route}");
        }
    }
}

/// `mcpl run` with `MCPL_LOG` unset, so standard error holds only the command's own lines.
fn run_quietly(config: &Path, script: Option<&Path>, transcript: &Path) -> Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_mcpl"));
    command
        .env_remove("MCPL_LOG")
        .arg("run")
        .arg("--config")
        .arg(config)
        .arg("--transcript")
        .arg(transcript);
    if let Some(script) = script {
        command
            .arg("--model")
            .arg(format!("scripted:{}", script.display()));
    }
    command.output().expect("the mcpl binary runs")
}

/// A configuration with the demo server under each name, and other servers as given.
fn servers(scratch: &Scratch, demos: &[&str], others: &[(&str, Value)]) -> PathBuf {
    let mut servers = serde_json::Map::new();
    for name in demos {
        servers.insert(
            (*name).to_owned(),
            json!({"command": env!("CARGO_BIN_EXE_mcpl"), "args": ["serve-demo"]}),
        );
    }
    for (name, server) in others {
        servers.insert((*name).to_owned(), server.clone());
    }
    scratch.write(
        "servers.json",
        &json!({"mcpServers": servers, "mcpl": {"spillDir": scratch.0.join("spill")}}),
    )
}

/// A script of one turn calling each `(server, name)`, then `done`.
fn calls(scratch: &Scratch, calls: &[(Option<&str>, &str)]) -> PathBuf {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(server, name)| match server {
            Some(server) => json!({"server": server, "name": name}),
            None => json!({"name": name}),
        })
        .collect();
    scratch.write(
        "calls.json",
        &json!({"steps": [{"tool_calls": calls}], "final": "done"}),
    )
}

/// The `tool_use` blocks' names in a Messages API request body.
fn tool_uses(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| b["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_tool_named_by_its_own_name_is_the_one_server_offering_it() {
    let scratch = Scratch::new("own-name");
    let config = servers(&scratch, &["demo"], &[]);
    let script = calls(&scratch, &[(None, "text"), (Some("demo"), "png")]);
    let transcript = scratch.0.join("transcript.jsonl");
    let output = run_quietly(&config, Some(&script), &transcript);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "done\n");
    assert!(stderr.starts_with("mcpl: round 1 demo__text: "), "{stderr}");
    let bodies = bodies(&transcript);
    // The model's turn is kept under the name the tool is offered by.
    assert_eq!(tool_uses(&bodies[1]), ["demo__text", "demo__png"]);
    let text = tool_result(&bodies[1], "call_1").unwrap().to_string();
    assert!(text.contains("Hello from the mcpl demo server."), "{text}");
}

#[test]
fn a_block_for_the_user_alone_is_printed_and_never_sent() {
    let scratch = Scratch::new("audience");
    let config = servers(&scratch, &["demo"], &[]);
    let script = calls(&scratch, &[(Some("demo"), "audience")]);
    let transcript = scratch.0.join("transcript.jsonl");
    let output = run_quietly(&config, Some(&script), &transcript);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "\nmcpl: round 1 demo__audience for you: Shown to you, the user: the build log is in build/log.txt.\n"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("For the model only"), "{stderr}");
    let sent = std::fs::read_to_string(&transcript).unwrap();
    assert!(!sent.contains("Shown to you, the user"));
    assert!(sent.contains("For the model only"));
}

#[test]
fn a_tool_several_servers_offer_is_an_error_result_naming_the_candidates() {
    let scratch = Scratch::new("ambiguous");
    let config = servers(&scratch, &["alpha", "beta", "gamma"], &[]);
    let script = calls(&scratch, &[(Some("alpha"), "text"), (None, "png")]);
    let transcript = scratch.0.join("transcript.jsonl");
    let output = run_quietly(&config, Some(&script), &transcript);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "done\n");
    let bodies = bodies(&transcript);
    assert_eq!(bodies.len(), 2, "the model was asked again");
    let result = tool_result(&bodies[1], "call_2").unwrap().to_string();
    assert!(
        result.contains(
            "tool call failed: 3 servers offer a tool named png; call one of alpha__png, beta__png, gamma__png"
        ),
        "{result}"
    );
    assert!(stderr.contains("mcpl: round 1 png: "), "{stderr}");
}

#[test]
fn a_tool_no_server_offers_is_an_error_result_naming_the_nearest() {
    let scratch = Scratch::new("unknown-tool");
    let config = servers(&scratch, &["demo"], &[]);
    let transcript = scratch.0.join("transcript.jsonl");
    for (server, name, called) in [
        (None, "pngg", "pngg"),
        (Some("demo"), "pngg", "demo__pngg"),
        (Some("other"), "png", "other__png"),
    ] {
        let script = calls(&scratch, &[(server, name)]);
        let output = run_quietly(&config, Some(&script), &transcript);
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(0), "{called}: {stderr}");
        let result = tool_result(&bodies(&transcript)[1], "call_1")
            .unwrap()
            .to_string();
        assert!(
            result.contains(&format!(
                "tool call failed: no tool is named {called}. The nearest: demo__png, "
            )),
            "{called}: {result}"
        );
    }
}

#[test]
fn an_empty_configuration_fails_with_one_line() {
    let scratch = Scratch::new("no-servers");
    let config = scratch.write_text("empty.json", r#"{"mcpServers": {}}"#);
    let transcript = scratch.0.join("transcript.jsonl");
    for script in [None, Some(calls(&scratch, &[(None, "text")]))] {
        let output = run_quietly(&config, script.as_deref(), &transcript);
        assert_eq!(output.status.code(), Some(1));
        assert_eq!(
            String::from_utf8(output.stderr).unwrap(),
            format!(
                "mcpl: {}: mcpServers is empty: no server to run\n",
                config.display()
            )
        );
        assert!(output.stdout.is_empty());
        assert!(!transcript.exists(), "no request was made");
    }
}

#[test]
fn a_run_with_a_server_that_cannot_start_warns_and_goes_on() {
    let scratch = Scratch::new("some-up");
    let missing = scratch.0.join("no-such-server");
    let config = servers(
        &scratch,
        &["demo"],
        &[("broken", json!({"command": missing}))],
    );
    let script = calls(
        &scratch,
        &[(Some("demo"), "text"), (Some("broken"), "text")],
    );
    let transcript = scratch.0.join("transcript.jsonl");
    let output = run_quietly(&config, Some(&script), &transcript);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "done\n");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    // The warnings come first, before the first round.
    let warning = format!(
        "mcpl: warning: server broken could not be started: {}: ",
        missing.display()
    );
    assert!(lines[0].starts_with(&warning), "{stderr}");
    assert!(
        lines[1].starts_with("mcpl: round 1 demo__text: "),
        "{stderr}"
    );
    assert!(
        lines[2].starts_with("mcpl: round 1 broken__text: ") && lines[2].ends_with(", error"),
        "{stderr}"
    );
    // The model is told the server is not available, as for a server that crashed.
    let result = tool_result(&bodies(&transcript)[1], "call_2")
        .unwrap()
        .to_string();
    assert!(
        result.contains(
            "tool call failed: server broken is not available: server broken could not be started: "
        ),
        "{result}"
    );
}

#[test]
fn tool_definitions_are_held_to_the_routes_rules() {
    // 200 tools, one with a bare `$ref` schema and one with a description of 3,000 characters:
    // Chat Completions takes 128 functions of at most 1,024 characters, each an object schema.
    let scratch = Scratch::new("many-tools");
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/many_tools_server.py");
    let config = servers(
        &scratch,
        &[],
        &[("many", json!({"command": "python3", "args": [server]}))],
    );
    let script = scratch.write(
        "script.json",
        &json!({"steps": [{"tool_calls": [
            {"server": "many", "name": "ref", "arguments": {"input": {"x": 3}}, "expect": "ok"},
            {"server": "many", "name": "t190", "expect": "error"},
        ]}], "final": "done"}),
    );
    let transcript = scratch.0.join("transcript.jsonl");
    let output = run(&config, &script, &transcript, &["--route", "openai-chat"]);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "mcpl: warning: 74 tools are not offered: the openai-chat route takes at most 128 tools in a request (the first not offered: many__t124)"
        ),
        "{stderr}"
    );
    let bodies = bodies(&transcript);
    let tools = bodies[0]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 128);
    for tool in tools {
        let function = &tool["function"];
        assert_eq!(function["parameters"]["type"], "object", "{function}");
        assert!(
            function["description"]
                .as_str()
                .unwrap_or("")
                .chars()
                .count()
                <= 1024
        );
    }
    // The wrapped tool's server got the arguments inside the wrapper.
    let result = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "call_1")
        .unwrap()
        .to_string();
    assert!(result.contains(r#"{\"x\": 3}"#), "{result}");
}

/// A `wss://` listener on loopback with a self-signed certificate, for one connection.
fn self_signed_wss() -> String {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../client/tests/fixtures");
    let cert = std::fs::read(fixtures.join("self-signed.cert.pem")).unwrap();
    let key = std::fs::read(fixtures.join("self-signed.key.pem")).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(&cert).unwrap()],
            PrivateKeyDer::from_pem_slice(&key).unwrap(),
        )
        .unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("wss://{}/mcpl", listener.local_addr().unwrap());
    let config = std::sync::Arc::new(config);
    std::thread::spawn(move || {
        if let Ok((stream, _)) = listener.accept() {
            let connection = rustls::ServerConnection::new(config).unwrap();
            let _ = tungstenite::accept(rustls::StreamOwned::new(connection, stream));
        }
    });
    url
}

#[test]
fn a_wss_server_with_a_certificate_no_root_signed_is_refused_in_words() {
    // The binary builds rustls with two crypto providers; a wss:// dial that left the choice to
    // rustls panicked. Now the server is refused for its certificate, and the run goes on.
    let scratch = Scratch::new("wss-self-signed");
    let config = servers(
        &scratch,
        &["demo"],
        &[("secure", json!({"url": self_signed_wss()}))],
    );
    let script = calls(&scratch, &[(Some("demo"), "text")]);
    let transcript = scratch.0.join("transcript.jsonl");
    let output = run_quietly(&config, Some(&script), &transcript);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("internal error"), "{stderr}");
    assert!(
        stderr.starts_with("mcpl: warning: server secure could not be started: ")
            && stderr.lines().next().unwrap().contains("certificate"),
        "{stderr}"
    );
}

/// A server that runs `script` in `sh`.
#[cfg(unix)]
fn shell(script: &str) -> Value {
    json!({"command": "sh", "args": ["-c", script]})
}

#[cfg(unix)]
#[test]
fn a_run_in_which_no_server_started_fails_with_a_line_per_server() {
    let scratch = Scratch::new("none-up");
    let missing = scratch.0.join("no-such-server");
    let config = servers(
        &scratch,
        &[],
        &[
            ("a-missing", json!({"command": missing})),
            ("b-quiet", shell("exit 0")),
            (
                "c-failing",
                shell(
                    "echo 'starting up' >&2; echo 'Error: cannot open /db: permission denied' >&2; exit 3",
                ),
            ),
            (
                "d-chatty",
                shell(
                    "i=0; while [ $i -lt 5000 ]; do echo \"debug line $i\" >&2; i=$((i+1)); done; exit 1",
                ),
            ),
        ],
    );
    let transcript = scratch.0.join("transcript.jsonl");
    let script = calls(&scratch, &[(None, "text")]);
    for script in [None, Some(script.as_path())] {
        let output = run_quietly(&config, script, &transcript);
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(output.stdout.is_empty());
        assert!(!transcript.exists(), "no request was made");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 4, "one line per server: {stderr}");
        assert!(
            lines[0].starts_with(&format!(
                "mcpl: server a-missing could not be started: {}: ",
                missing.display()
            )),
            "{stderr}"
        );
        assert_eq!(
            lines[1],
            "mcpl: server b-quiet exited before answering initialize: it exited with exit status: 0"
        );
        assert_eq!(
            lines[2],
            "mcpl: server c-failing exited before answering initialize: it exited with exit \
             status: 3; its last stderr lines: starting up | Error: cannot open /db: permission \
             denied"
        );
        // Only the last lines, bounded.
        let tail: Vec<String> = (4990..5000).map(|n| format!("debug line {n}")).collect();
        assert_eq!(
            lines[3],
            format!(
                "mcpl: server d-chatty exited before answering initialize: it exited with exit \
                 status: 1; its last stderr lines: … {}",
                tail.join(" | ")
            )
        );
    }
}

/// `docs/run.md`, the user guide.
fn guide() -> String {
    std::fs::read_to_string(crate::workspace_root().join("docs/run.md")).unwrap()
}

#[test]
fn the_guide_shows_the_memory_example_verbatim_and_it_reads() {
    let guide = guide();
    let example = crate::workspace_root().join("examples/memory");
    for name in ["config.json", "script.json"] {
        let text = std::fs::read_to_string(example.join(name)).unwrap();
        assert!(
            guide.contains(&format!("`examples/memory/{name}`"))
                && guide.contains(&format!("```json\n{text}```")),
            "docs/run.md does not show examples/memory/{name} as it is"
        );
    }
    let config = mcpl_host::config::Config::from_file(&example.join("config.json")).unwrap();
    assert_eq!(config.servers[0].launch.name, "memory");
    mcpl_host::model::Scripted::from_file(&example.join("script.json")).unwrap();
}

/// The keys the configuration takes at one place, as its error for an unknown key lists them.
fn keys_at(config: &str) -> Vec<String> {
    let error = mcpl_host::config::Config::from_slice("c.json", config.as_bytes())
        .unwrap_err()
        .to_string();
    let (_, expected) = error.split_once("expected ").unwrap();
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_guide_lists_every_config_option_with_its_default() {
    use mcpl_host::config::{
        DEFAULT_CONTEXT_WINDOW, DEFAULT_EAGER_MAX_BYTES, DEFAULT_FETCH_BUDGET_BYTES,
        DEFAULT_FETCH_MAX_BYTES, DEFAULT_TIMEOUT, ServerOptions,
    };
    let guide = guide();
    let server = keys_at(r#"{"mcpServers": {"s": {"command": "x", "?": 1}}}"#);
    let options = keys_at(r#"{"mcpServers": {"s": {"command": "x", "mcpl": {"?": 1}}}}"#);
    let fetch = keys_at(r#"{"mcpServers": {"s": {"command": "x", "mcpl": {"fetch": {"?": 1}}}}}"#);
    let host = keys_at(r#"{"mcpServers": {}, "mcpl": {"?": 1}}"#);
    let oauth = keys_at(
        r#"{"mcpServers": {"s": {"url": "http://x.example", "mcpl": {"oauth": {"?": 1}}}}}"#,
    );
    assert!(oauth.contains(&"clientCredentials".to_owned()), "{oauth:?}");
    assert!(
        fetch.len() >= 5 && options.contains(&"budget".to_owned()),
        "{fetch:?} {options:?}"
    );
    let keys = server
        .into_iter()
        .chain(options.into_iter().filter(|key| key != "fetch"))
        .chain(fetch.into_iter().map(|key| format!("fetch.{key}")))
        .chain(oauth.into_iter().map(|key| format!("oauth.{key}")))
        .chain(host);
    for key in keys {
        assert!(
            guide.contains(&format!("\n| `{key}` | ")),
            "docs/run.md has no row for the config key {key}"
        );
    }
    let defaults = ServerOptions::default();
    for (key, default) in [
        ("budget", defaults.budget),
        ("messageBudget", defaults.message_budget),
        ("timeoutMs", DEFAULT_TIMEOUT.as_millis() as u64),
        ("fetch.maxBytes", DEFAULT_FETCH_MAX_BYTES),
        ("fetch.budgetBytes", DEFAULT_FETCH_BUDGET_BYTES),
        ("fetch.eagerMaxBytes", DEFAULT_EAGER_MAX_BYTES),
        ("contextWindow", DEFAULT_CONTEXT_WINDOW),
    ] {
        assert!(
            guide.contains(&format!("\n| `{key}` | `{default}`")),
            "docs/run.md does not give {key}'s default {default}"
        );
    }
    assert_eq!(defaults.uri_policy, mcpl_lanes::UriPolicy::Hidden);
    assert!(guide.contains("\n| `uris` | `\"hidden\"` | "));
}

/// The provider variables `mcpl run` reads; each live test clears them all and sets its own.
const PROVIDER_VARIABLES: [&str; 6] = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
];

/// `mcpl run --config CONFIG --model MODEL` with only these provider variables set.
fn run_live(config: &Path, model: &str, variables: &[(&str, String)]) -> Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_mcpl"));
    command.args([
        "run",
        "--config",
        config.to_str().unwrap(),
        "--model",
        model,
    ]);
    for name in PROVIDER_VARIABLES {
        command.env_remove(name);
    }
    for (name, value) in variables {
        command.env(name, value);
    }
    command
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the mcpl binary runs")
}

/// One live route: the model spec's route, the variables pointing it at the server, the path
/// and auth header it must use, and its two answers (a call of `demo__text`, then the answer).
struct Live {
    route: &'static str,
    path: &'static str,
    auth: (&'static str, &'static str),
    key_var: &'static str,
    base_var: &'static str,
    /// What goes after the server's origin in the base url.
    base_suffix: &'static str,
    call: Value,
    answer: Value,
}

const LIVE_KEY: &str = "test-key-42";

fn live_routes() -> Vec<Live> {
    vec![
        Live {
            route: "anthropic",
            path: "/v1/messages",
            auth: ("x-api-key", LIVE_KEY),
            key_var: "ANTHROPIC_API_KEY",
            base_var: "ANTHROPIC_BASE_URL",
            base_suffix: "",
            call: json!({"id": "msg_1", "type": "message", "role": "assistant",
                "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5},
                "content": [{"type": "tool_use", "id": "toolu_live", "name": "demo__text", "input": {}}]}),
            answer: json!({"id": "msg_2", "type": "message", "role": "assistant",
                "stop_reason": "end_turn", "usage": {"input_tokens": 20, "output_tokens": 3},
                "content": [{"type": "text", "text": "Live on anthropic."}]}),
        },
        Live {
            route: "openai-chat",
            path: "/v1/chat/completions",
            auth: ("authorization", "Bearer test-key-42"),
            key_var: "OPENAI_API_KEY",
            base_var: "OPENAI_BASE_URL",
            base_suffix: "/v1",
            call: json!({"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0,
                "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "call_live", "type": "function",
                    "function": {"name": "demo__text", "arguments": "{}"}}]}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}),
            answer: json!({"id": "chatcmpl-2", "object": "chat.completion", "choices": [{"index": 0,
                "finish_reason": "stop", "message": {"role": "assistant", "content": "Live on openai-chat."}}]}),
        },
        Live {
            route: "openai-responses",
            path: "/v1/responses",
            auth: ("authorization", "Bearer test-key-42"),
            key_var: "OPENAI_API_KEY",
            base_var: "OPENAI_BASE_URL",
            base_suffix: "/v1",
            call: json!({"id": "resp_1", "object": "response", "status": "completed", "output": [
                {"type": "function_call", "id": "fc_1", "call_id": "call_live", "name": "demo__text",
                 "arguments": "{}", "status": "completed"}],
                "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}),
            answer: json!({"id": "resp_2", "object": "response", "status": "completed", "output": [
                {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": "Live on openai-responses.", "annotations": []}]}]}),
        },
        Live {
            route: "gemini",
            path: "/v1beta/models/test-model:generateContent",
            auth: ("x-goog-api-key", LIVE_KEY),
            key_var: "GEMINI_API_KEY",
            base_var: "GOOGLE_GEMINI_BASE_URL",
            base_suffix: "",
            call: json!({"candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"id": "call_live", "name": "demo__text", "args": {}},
                 "thoughtSignature": "U2lnbmF0dXJlTGl2ZQ=="}]}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5}}),
            answer: json!({"candidates": [{"content": {"role": "model", "parts": [
                {"text": "Live on gemini."}]}, "finishReason": "STOP", "index": 0}]}),
        },
    ]
}

#[test]
fn every_provider_route_runs_live_against_a_loopback_provider() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let scratch = Scratch::new("live");
    let config = scratch.config();
    for live in live_routes() {
        let count = Arc::new(AtomicUsize::new(0));
        let answers = [live.call.to_string(), live.answer.to_string()];
        let seen = Arc::clone(&count);
        let server = mcpl_loopback::Loopback::start(move |_request| {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            let body = answers.get(n).cloned().unwrap_or_default();
            mcpl_loopback::Answer::bytes("application/json", body.into_bytes())
        })
        .unwrap();
        let base = format!("{}{}", server.origin(), live.base_suffix);
        let output = run_live(
            &config,
            &format!("{}:test-model", live.route),
            &[(live.key_var, LIVE_KEY.to_owned()), (live.base_var, base)],
        );
        let route = live.route;
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(0), "{route}: {stderr}");
        assert_eq!(
            String::from_utf8(output.stdout).unwrap(),
            format!("Live on {route}.\n")
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{route}");
        let mut bodies = Vec::new();
        for request in &requests {
            assert_eq!(request.method, "POST", "{route}");
            assert_eq!(request.target, live.path, "{route}");
            assert_eq!(request.header(live.auth.0), Some(live.auth.1), "{route}");
            assert_eq!(
                request.header("content-type"),
                Some("application/json"),
                "{route}"
            );
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            if route == "gemini" {
                assert_eq!(body.get("model"), None);
            } else {
                assert_eq!(body["model"], "test-model", "{route}");
            }
            bodies.push(body);
        }
        // The second request answers the call by its id (and, on gemini, carries the call back
        // with its thought signature).
        let second = bodies[1].to_string();
        let id = if route == "anthropic" {
            "toolu_live"
        } else {
            "call_live"
        };
        assert!(second.matches(id).count() >= 2, "{route}: {second}");
        assert!(!bodies[0].to_string().contains(id), "{route}");
        if route == "gemini" {
            let call = &bodies[1]["contents"][1]["parts"][0];
            assert_eq!(call["thoughtSignature"], "U2lnbmF0dXJlTGl2ZQ==", "{second}");
            assert_eq!(call["functionCall"]["id"], "call_live");
            assert_eq!(
                bodies[1]["contents"][2]["parts"][0]["functionResponse"]["id"],
                "call_live"
            );
        }
    }
}

/// Runs `openai-chat:<model>` against a loopback Chat Completions server whose model calls the
/// demo's `png` tool, with `models` as `mcpl.models`; returns the second request's body and
/// standard error.
fn png_on_openai_chat(scratch: &Scratch, model: &str, models: Value) -> (String, String) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let config = scratch.write(
        "models.json",
        &json!({
            "mcpServers": {"demo": {"command": env!("CARGO_BIN_EXE_mcpl"), "args": ["serve-demo"]}},
            "mcpl": {"spillDir": scratch.0.join("spill"), "models": models}
        }),
    );
    let call = json!({"id": "c1", "object": "chat.completion", "choices": [{"index": 0,
        "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "call_png", "type": "function",
            "function": {"name": "demo__png", "arguments": "{}"}}]}}]});
    let answer = json!({"id": "c2", "object": "chat.completion", "choices": [{"index": 0,
        "finish_reason": "stop", "message": {"role": "assistant", "content": "Seen."}}]});
    let answers = [call.to_string(), answer.to_string()];
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    let server = mcpl_loopback::Loopback::start(move |_request| {
        let n = seen.fetch_add(1, Ordering::SeqCst);
        let body = answers.get(n).cloned().unwrap_or_default();
        mcpl_loopback::Answer::bytes("application/json", body.into_bytes())
    })
    .unwrap();
    let output = run_live(
        &config,
        &format!("openai-chat:{model}"),
        &[
            ("OPENAI_API_KEY", LIVE_KEY.to_owned()),
            ("OPENAI_BASE_URL", format!("{}/v1", server.origin())),
        ],
    );
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{model}: {stderr}");
    let requests = server.requests();
    (
        String::from_utf8_lossy(&requests[1].body).into_owned(),
        stderr,
    )
}

#[test]
fn what_goes_natively_follows_the_model_not_only_the_route() {
    let scratch = Scratch::new("models");
    // gpt-4o takes images: the PNG goes as an image part.
    let (body, stderr) = png_on_openai_chat(&scratch, "gpt-4o", json!({}));
    assert!(body.contains("image_url"), "{body}");
    assert!(
        stderr.starts_with(
            "mcpl: model gpt-4o: images, PDFs, a context window of 128000 tokens (the model table's gpt-4o)\n"
        ),
        "{stderr}"
    );
    // o3-mini takes none: the PNG goes as its placeholder.
    let (body, _) = png_on_openai_chat(&scratch, "o3-mini", json!({}));
    assert!(!body.contains("image_url"), "{body}");
    assert!(body.contains("[image: image/png, "), "{body}");
    // A model no one knows gets text only, and a warning naming it.
    let (body, stderr) = png_on_openai_chat(&scratch, "gpt-from-the-future", json!({}));
    assert!(!body.contains("image_url"), "{body}");
    assert!(
        stderr.starts_with(
            "mcpl: warning: model gpt-from-the-future is not in the model table (litellm "
        ),
        "{stderr}"
    );
    // The configuration says what it takes.
    let (body, stderr) = png_on_openai_chat(
        &scratch,
        "gpt-from-the-future",
        json!({"gpt-from-the-future": {"images": true}}),
    );
    assert!(body.contains("image_url"), "{body}");
    assert!(
        stderr.starts_with(
            "mcpl: model gpt-from-the-future: images (mcpl.models over the openai-chat route's default)\n"
        ),
        "{stderr}"
    );
}

#[test]
fn a_missing_provider_key_exits_2_with_one_line_naming_the_variable() {
    let scratch = Scratch::new("nokey");
    let config = scratch.config();
    for (model, line) in [
        (
            "anthropic:m",
            "mcpl: anthropic: ANTHROPIC_API_KEY is not set\n",
        ),
        (
            "openai-chat:m",
            "mcpl: openai-chat: OPENAI_API_KEY is not set\n",
        ),
        (
            "openai-responses:m",
            "mcpl: openai-responses: OPENAI_API_KEY is not set\n",
        ),
        ("gemini:m", "mcpl: gemini: GEMINI_API_KEY is not set\n"),
    ] {
        let output = run_live(&config, model, &[]);
        assert_eq!(output.status.code(), Some(2), "{model}");
        assert_eq!(String::from_utf8(output.stderr).unwrap(), line);
        assert!(output.stdout.is_empty());
    }
}

#[test]
fn a_token_over_plain_http_to_a_remote_host_is_warned_of_once_per_server() {
    let scratch = Scratch::new("cleartext");
    // `.invalid` never resolves (RFC 6761): the warning comes before the dial fails.
    let config = servers(
        &scratch,
        &["demo"],
        &[
            (
                "remote",
                json!({"type": "http", "url": "http://mcp.invalid/mcp", "mcpl": {"token": "t0k"}}),
            ),
            (
                "secure",
                json!({"type": "http", "url": "https://mcp.invalid/mcp", "mcpl": {"token": "t0k"}}),
            ),
        ],
    );
    let output = run_quietly(&config, None, &scratch.0.join("transcript.jsonl"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let warning = "server remote: a token or Authorization header goes to mcp.invalid over plain \
                   http; anyone on the path can read it";
    assert_eq!(stderr.matches(warning).count(), 1, "{stderr}");
    assert!(!stderr.contains("server secure: a token"), "{stderr}");
    assert!(!stderr.contains("t0k"), "{stderr}");
}

/// Removes every `cache_control` key, at any depth.
fn without_breakpoints(value: &Value) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object
                .iter()
                .filter(|(key, _)| *key != "cache_control")
                .map(|(key, value)| (key.clone(), without_breakpoints(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_breakpoints).collect()),
        other => other.clone(),
    }
}

/// The paths of a body's `cache_control` breakpoints.
fn breakpoints(value: &Value, path: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            for (key, value) in object {
                if key == "cache_control" {
                    assert_eq!(*value, json!({"type": "ephemeral"}));
                    out.push(path.to_owned());
                } else {
                    breakpoints(value, &format!("{path}/{key}"), out);
                }
            }
        }
        Value::Array(items) => {
            for (n, item) in items.iter().enumerate() {
                breakpoints(item, &format!("{path}/{n}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn ten_anthropic_rounds_keep_their_cached_prefixes_and_report_the_cache_figures() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    let scratch = Scratch::new("cache");
    let config = scratch.config();
    let seen = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&seen);
    // Round n reports n input tokens, 100n written to the cache, 1000n read from it and 2n
    // output tokens; rounds 1 to 9 call a tool, round 10 answers.
    let server = mcpl_loopback::Loopback::start(move |_request| {
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        let usage = json!({"input_tokens": n, "output_tokens": 2 * n,
            "cache_creation_input_tokens": 100 * n, "cache_read_input_tokens": 1000 * n});
        let content = if n < 10 {
            json!([{"type": "text", "text": format!("Round {n}.")},
                {"type": "tool_use", "id": format!("toolu_{n}"), "name": "demo__text", "input": {}}])
        } else {
            json!([{"type": "text", "text": "Done after ten rounds."}])
        };
        let body = json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
            "stop_reason": if n < 10 { "tool_use" } else { "end_turn" },
            "usage": usage, "content": content});
        mcpl_loopback::Answer::bytes("application/json", body.to_string().into_bytes())
    })
    .unwrap();
    let output = run_live(
        &config,
        "anthropic:test-model",
        &[
            ("ANTHROPIC_API_KEY", LIVE_KEY.to_owned()),
            ("ANTHROPIC_BASE_URL", server.origin().to_owned()),
        ],
    );
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "Done after ten rounds.\n"
    );
    // The figures are the provider's, summed: n = 1..=10 adds to 55.
    assert!(
        stderr.lines().any(|line| line
            == "mcpl: usage: 55 input tokens (55000 read from the cache, 5500 written to it), 110 output tokens"),
        "{stderr}"
    );
    let bodies: Vec<Value> = server
        .requests()
        .iter()
        .map(|request| serde_json::from_slice(&request.body).unwrap())
        .collect();
    assert_eq!(bodies.len(), 10);
    let mut marked = Vec::new();
    for (n, body) in bodies.iter().enumerate() {
        let mut found = Vec::new();
        breakpoints(body, "", &mut found);
        assert!(found.len() <= 4, "{found:?}");
        let last_tool = body["tools"].as_array().unwrap().len() - 1;
        assert!(found.contains(&format!("/tools/{last_tool}")), "{found:?}");
        assert!(found.contains(&"/system/0".to_owned()), "{found:?}");
        // From the second request on, the stable history ends with the last assistant turn,
        // whose last block is the third breakpoint.
        let message = found
            .iter()
            .find_map(|path| path.strip_prefix("/messages/"))
            .map(|rest| rest.split('/').next().unwrap().parse::<usize>().unwrap());
        if n == 0 {
            assert_eq!(found.len(), 2, "{found:?}");
        } else {
            let at = message.expect("a breakpoint in the messages");
            assert_eq!(body["messages"][at]["role"], "assistant");
            assert_eq!(at, 2 * n - 1);
        }
        marked.push(message);
    }
    // Every earlier request's prefix, up to its last breakpoint, is byte for byte the start of
    // every later request (the breakpoints themselves aside).
    let plain: Vec<Value> = bodies.iter().map(without_breakpoints).collect();
    for (i, earlier) in plain.iter().enumerate() {
        for later in &plain[i + 1..] {
            assert_eq!(earlier["system"], later["system"]);
            assert_eq!(earlier["tools"], later["tools"]);
            if let Some(at) = marked[i] {
                let prefix = |body: &Value| -> String {
                    serde_json::to_string(&body["messages"].as_array().unwrap()[..=at]).unwrap()
                };
                assert_eq!(
                    prefix(earlier),
                    prefix(later),
                    "request {} against a later one",
                    i + 1
                );
            }
        }
    }
}

/// The Python with the official SDKs installed (`.ci/run` makes it from
/// `e2e/sdk-validate/requirements.txt`); `None`, after saying why, when the test is to be
/// skipped outside CI.
fn sdk_python() -> Option<PathBuf> {
    match std::env::var_os("MCPL_SDK_PYTHON") {
        Some(python) => Some(PathBuf::from(python)),
        None if std::env::var_os("CI").is_some() => {
            panic!("MCPL_SDK_PYTHON is not set: .ci/run installs the SDK validation's venv")
        }
        None => {
            eprintln!(
                "skipped: MCPL_SDK_PYTHON is not set (a Python with anthropic, openai and google-genai)"
            );
            None
        }
    }
}

fn validate(python: &Path, args: &[&std::ffi::OsStr]) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../e2e/sdk-validate/validate.py");
    std::process::Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .expect("the SDK validation runs")
}

#[test]
fn every_route_body_passes_the_official_sdk_types() {
    let Some(python) = sdk_python() else {
        return;
    };
    let scratch = Scratch::new("sdk");
    let config = scratch.config();
    let tools = [
        "png",
        "jpeg",
        "gif",
        "webp",
        "audio",
        "pdf",
        "embedded-image",
        "structured",
        "error",
    ];
    let script = scratch.write(
        "script.json",
        &json!({
            "steps": tools.iter().map(|t| json!({"tool_calls": [{"server": "demo", "name": t}]})).collect::<Vec<_>>(),
            "final": "Done."
        }),
    );
    // Every route's transcript and demo, validated in one run of the script.
    let mut args: Vec<std::ffi::OsString> = Vec::new();
    let mut demos: Vec<std::ffi::OsString> = Vec::new();
    for (route, _) in ROUTES {
        let transcript = scratch.0.join(format!("{route}.jsonl"));
        let output = run(&config, &script, &transcript, &["--route", route]);
        assert_eq!(output.status.code(), Some(0), "{route}");
        let mut arg = std::ffi::OsString::from(format!("{route}="));
        arg.push(&transcript);
        args.push(arg);
        let demo = mcpl(&["demo", "--json", "--route", route], b"");
        assert_eq!(demo.status.code(), Some(0), "{route}");
        let demo_file = scratch.0.join(format!("demo-{route}.json"));
        std::fs::write(&demo_file, &demo.stdout).unwrap();
        demos.push(demo_file.into());
    }
    let mut all: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    all.push("--demo".as_ref());
    all.extend(demos.iter().map(|a| a.as_os_str()));
    let output = validate(&python, &all);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    // Ten requests on each of five routes, and each demo's calls.
    let checked = stdout
        .lines()
        .last()
        .and_then(|line| line.strip_prefix("sdk-validate: "))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    assert!(checked > 5 * (tools.len() + 1), "{stdout}");

    // A body with a wrong block type fails, naming where it is.
    let text = std::fs::read_to_string(scratch.0.join("anthropic.jsonl")).unwrap();
    assert!(text.contains(r#""type":"document""#));
    let broken = scratch.write_text(
        "broken.jsonl",
        &text.replace(r#""type":"document""#, r#""type":"pdf""#),
    );
    let output = validate(
        &python,
        &["--route".as_ref(), "anthropic".as_ref(), broken.as_os_str()],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("broken.jsonl:"), "{stdout}");
    // And so does an unknown key.
    let extra = scratch.write_text(
        "extra.jsonl",
        &text.replace(r#""tool_use_id""#, r#""colour":1,"tool_use_id""#),
    );
    let output = validate(
        &python,
        &["--route".as_ref(), "anthropic".as_ref(), extra.as_os_str()],
    );
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    // The script's own check: a wrong block type fails on every route.
    let output = validate(&python, &["--self-test".as_ref()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[cfg(unix)]
#[test]
fn servers_start_side_by_side_so_a_slow_one_delays_nobody() {
    // Three servers that never answer, each with a 2 s timeout, beside the demo. One after
    // another they held the run's start for 6 s; side by side, 2 s.
    let scratch = Scratch::new("side-by-side");
    let silent = |name: &str| {
        let mut server = shell("sleep 30");
        server["mcpl"] = json!({"timeoutMs": 2000});
        (name.to_owned(), server)
    };
    let others: Vec<(String, Value)> = ["a-slow", "b-slow", "c-slow"].map(silent).into();
    let others: Vec<(&str, Value)> = others
        .iter()
        .map(|(n, v)| (n.as_str(), v.clone()))
        .collect();
    let config = servers(&scratch, &["demo"], &others);
    let script = calls(&scratch, &[(Some("demo"), "text")]);
    let transcript = scratch.0.join("transcript.jsonl");
    let started = std::time::Instant::now();
    let output = run_quietly(&config, Some(&script), &transcript);
    let took = started.elapsed();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    for name in ["a-slow", "b-slow", "c-slow"] {
        assert!(
            stderr.contains(&format!(
                "server {name} did not answer initialize within 2000 ms"
            )),
            "{stderr}"
        );
    }
    assert!(
        took < std::time::Duration::from_millis(5500),
        "the run took {took:?}"
    );
}

#[cfg(unix)]
#[test]
fn ctrl_c_cancels_the_calls_in_flight_at_their_servers_and_ends_the_run_with_130() {
    use mcpl_loopback::{Answer, Loopback};
    // A Streamable HTTP server whose one tool never finishes.
    let server = Loopback::start(|request| {
        let message: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let answer = |result: Value| {
            let body = json!({"jsonrpc": "2.0", "id": message["id"], "result": result});
            Answer::bytes("application/json", body.to_string().into_bytes())
        };
        match message["method"].as_str() {
            Some("server/discover") => {
                let body = json!({"jsonrpc": "2.0", "id": message["id"],
                    "error": {"code": -32601, "message": "Method not found"}});
                Answer::bytes("application/json", body.to_string().into_bytes())
            }
            Some("initialize") => answer(json!({"protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}}, "serverInfo": {"name": "slow", "version": "1"}})),
            Some("tools/list") => answer(json!({"tools": [{"name": "forever",
                "inputSchema": {"type": "object"}}]})),
            Some("tools/call") => Answer::chunks(
                "text/event-stream",
                &b": working\n"[..],
                u64::MAX,
                std::time::Duration::from_millis(20),
            ),
            _ if request.method == "POST" => Answer {
                status: 202,
                headers: Vec::new(),
                body: mcpl_loopback::Body::Bytes(std::sync::Arc::from(&b""[..])),
            },
            _ => Answer {
                status: 405,
                headers: Vec::new(),
                body: mcpl_loopback::Body::Bytes(std::sync::Arc::from(&b""[..])),
            },
        }
    })
    .unwrap();
    let scratch = Scratch::new("interrupted");
    let url = format!("{}/mcp", server.origin());
    let config = servers(&scratch, &[], &[("slow", json!({"url": url}))]);
    let script = calls(&scratch, &[(Some("slow"), "forever")]);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_mcpl"))
        .env_remove("MCPL_LOG")
        .args(["run", "--config"])
        .arg(&config)
        .arg("--model")
        .arg(format!("scripted:{}", script.display()))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the call is in flight, Ctrl-C.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !server.requests().iter().any(|r| {
        serde_json::from_slice::<Value>(&r.body).is_ok_and(|m| m["method"] == "tools/call")
    }) {
        assert!(std::time::Instant::now() < deadline, "the call never came");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("the run was interrupted"), "{stderr}");
    let cancelled: Vec<Value> = server
        .requests()
        .iter()
        .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
        .filter(|m| m["method"] == "notifications/cancelled")
        .collect();
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(cancelled[0]["params"]["reason"], "the run was interrupted");
}

#[test]
fn progress_and_task_status_are_shown_as_they_come_and_each_call_as_it_lands() {
    let scratch = Scratch::new("long-calls");
    let config = scratch.write(
        "config.json",
        &json!({
            "mcpServers": {"demo": {"command": env!("CARGO_BIN_EXE_mcpl"), "args": ["serve-demo"],
                "mcpl": {"totalTimeoutMs": 800}}},
            "mcpl": {"spillDir": scratch.0.join("spill")}
        }),
    );
    let script = scratch.write(
        "script.json",
        &json!({
            "steps": [
                {"tool_calls": [{"server": "demo", "name": "progress"}]},
                {"tool_calls": [{"server": "demo", "name": "task"}]},
                {"tool_calls": [{"server": "demo", "name": "task-forever"}]}
            ],
            "final": "done"
        }),
    );
    let transcript = scratch.0.join("transcript.jsonl");
    let output = run(&config, &script, &transcript, &["--prompt", "Go."]);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("mcpl: "))
        .map(|line| line.split(" estimated tokens").next().unwrap())
        .collect();
    // Each call's line comes right after what its server said while it ran, before the next
    // call's: the lines are printed as they come, not when the run ends.
    assert_eq!(
        lines[..8],
        [
            r#"mcpl: progress demo/progress: 1/2 "step 1 of 2""#,
            r#"mcpl: progress demo/progress: 2/2 "step 2 of 2""#,
            "mcpl: round 1 demo__progress: 11",
            r#"mcpl: task demo/task (task-1): working "queued""#,
            r#"mcpl: task demo/task (task-1): working "step 1 of 3""#,
            r#"mcpl: task demo/task (task-1): working "step 2 of 3""#,
            "mcpl: task demo/task (task-1): completed",
            "mcpl: round 2 demo__task: 15",
        ],
        "{stderr}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("mcpl: round 3 demo__task-forever")),
        "{stderr}"
    );
    let all = bodies(&transcript);
    let notices: Vec<&str> = all.iter().filter_map(|b| b["notice"].as_str()).collect();
    assert_eq!(notices[0], r#"progress demo/progress: 1/2 "step 1 of 2""#);
    assert!(
        notices.contains(&"task demo/task (task-1): completed"),
        "{notices:?}"
    );
    let last = all
        .iter()
        .rev()
        .find(|b| b.get("messages").is_some())
        .unwrap();
    let task = tool_result(last, "call_2").unwrap().to_string();
    assert!(
        task.contains("42 rows exported"),
        "the task's result reaches the model: {task}"
    );
    // The task that never finishes is given up at the total deadline, in words the model reads.
    let forever = tool_result(last, "call_3").unwrap().to_string();
    assert!(
        forever.contains("did not finish tools/call within 800 ms in all; it was cancelled"),
        "{forever}"
    );
}
