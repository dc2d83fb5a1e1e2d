//! `mcpl run` and a server's tool list: listed again when it changes, and deferred behind
//! `search_tools` when the definitions would take too much of the window (decision 0131).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::mcpl;

/// A folder of its own for one test, removed when the test ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("mcpl-cli-toolset-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// Runs `mcpl run` with `server` as `s` and the script's `steps`; the request bodies.
    fn run(&self, server: Value, mcpl_options: Value, steps: Value) -> Vec<Value> {
        let mut options = json!({"spillDir": self.0.join("spill")});
        options
            .as_object_mut()
            .unwrap()
            .extend(mcpl_options.as_object().unwrap().clone());
        let config = self.0.join("config.json");
        let config_json = json!({"mcpServers": {"s": server}, "mcpl": options});
        std::fs::write(&config, config_json.to_string()).unwrap();
        let script = self.0.join("script.json");
        std::fs::write(
            &script,
            json!({"steps": steps, "final": "done"}).to_string(),
        )
        .unwrap();
        let transcript = self.0.join("transcript.jsonl");
        let model = format!("scripted:{}", script.display());
        let output = mcpl(
            &[
                "run",
                "--config",
                config.to_str().unwrap(),
                "--model",
                &model,
                "--transcript",
                transcript.to_str().unwrap(),
            ],
            b"",
        );
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        std::fs::read_to_string(&transcript)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn demo() -> Value {
    json!({"command": env!("CARGO_BIN_EXE_mcpl"), "args": ["serve-demo"]})
}

fn python(args: &[&str]) -> Value {
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/changing_tools_server.py");
    let mut all = vec![server.to_str().unwrap().to_owned()];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    json!({"command": "python3", "args": all})
}

/// The tools' names in a Messages API request body.
fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The tools of a Messages API request body as their bytes, without the cache breakpoint the
/// encoder marks the last one with.
fn tools(body: &Value) -> Vec<String> {
    let mut tools = body["tools"].as_array().unwrap().clone();
    for tool in &mut tools {
        tool.as_object_mut().unwrap().remove("cache_control");
    }
    tools.iter().map(Value::to_string).collect()
}

/// The texts of the last message's tool results, in order.
fn last_results(body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().unwrap();
    messages.last().unwrap()["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| match &b["content"] {
            Value::String(text) => text.clone(),
            blocks => blocks[0]["text"].as_str().unwrap_or_default().to_owned(),
        })
        .collect()
}

#[test]
fn a_changed_tool_list_is_offered_from_the_next_request_and_a_flood_is_one_listing() {
    let scratch = Scratch::new("changed");
    let bodies = scratch.run(
        demo(),
        json!({}),
        json!([
            {"tool_calls": [{"server": "s", "name": "change-tools", "arguments": {"times": 10000}}]},
            {"tool_calls": [{"server": "s", "name": "added-tool"}]},
        ]),
    );
    let (before, after) = (tools(&bodies[0]), tools(&bodies[1]));
    assert!(!tool_names(&bodies[0]).contains(&"s__added-tool".to_owned()));
    // The tools offered before keep their place and bytes; the new one comes last.
    assert!(after.starts_with(&before));
    assert_eq!(tool_names(&bodies[1]).last().unwrap(), "s__added-tool");
    // Ten thousand notifications, one listing again: the start's and that one.
    assert_eq!(
        last_results(&bodies[2]),
        ["added-tool answered; tools/list was answered 2 times"]
    );
}

#[test]
fn a_tool_that_left_the_list_is_an_error_result_in_words() {
    let scratch = Scratch::new("vanished");
    let bodies = scratch.run(
        python(&[]),
        json!({}),
        json!([
            {"tool_calls": [{"server": "s", "name": "once"}]},
            {"tool_calls": [{"server": "s", "name": "once"}, {"server": "s", "name": "stay"}]},
        ]),
    );
    assert_eq!(tool_names(&bodies[1]).last().unwrap(), "s__stay");
    assert!(!tool_names(&bodies[1]).contains(&"s__once".to_owned()));
    assert_eq!(
        last_results(&bodies[2]),
        [
            "tool call failed: s__once is no longer offered: server s changed its tools; call one of the tools offered now",
            "called stay",
        ]
    );
}

#[test]
fn over_stdio_at_2026_07_28_the_list_changed_comes_on_a_subscriptions_listen() {
    // The server sends list_changed only on the subscription it was asked to open.
    let scratch = Scratch::new("listen");
    let mut server = python(&["stateless"]);
    server["protocol"] = json!("modern");
    let bodies = scratch.run(
        server,
        json!({}),
        json!([
            {"tool_calls": [{"server": "s", "name": "once"}]},
            {"tool_calls": [{"server": "s", "name": "stay"}]},
        ]),
    );
    assert!(tool_names(&bodies[0]).contains(&"s__once".to_owned()));
    assert!(!tool_names(&bodies[1]).contains(&"s__once".to_owned()));
    assert_eq!(last_results(&bodies[2]), ["called stay"]);
}

#[test]
fn many_large_tools_are_found_with_search_tools_and_loaded_in_order() {
    let scratch = Scratch::new("deferred");
    let bodies = scratch.run(
        python(&["big", "300"]),
        json!({}),
        json!([
            {"tool_calls": [{"name": "search_tools", "arguments": {"query": "weather city 42"}}]},
            {"tool_calls": [{"server": "s", "name": "tool42", "arguments": {"day": "monday"}}]},
        ]),
    );
    let first = tool_names(&bodies[0]);
    assert!(first.contains(&"search_tools".to_owned()), "{first:?}");
    assert!(
        !first.iter().any(|name| name.starts_with("s__")),
        "{first:?}"
    );
    let found = &last_results(&bodies[1])[0];
    assert!(
        found.starts_with("s__tool42 (loaded): Reads the weather of city number 42."),
        "{found}"
    );
    // The loaded tools come after the ones offered before, which keep their bytes.
    assert!(tools(&bodies[1]).starts_with(&tools(&bodies[0])));
    assert_eq!(tool_names(&bodies[1])[first.len()], "s__tool42");
    assert_eq!(last_results(&bodies[2]), ["called tool42"]);

    // With the share at 100%, every tool is offered and there is no search.
    let scratch = Scratch::new("not-deferred");
    let bodies = scratch.run(
        python(&["big", "300"]),
        json!({"deferToolsAbovePercent": 100, "contextWindow": 1000000}),
        json!([]),
    );
    let names = tool_names(&bodies[0]);
    assert!(!names.contains(&"search_tools".to_owned()));
    assert_eq!(
        names.iter().filter(|name| name.starts_with("s__")).count(),
        300
    );
}
