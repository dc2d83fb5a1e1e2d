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
