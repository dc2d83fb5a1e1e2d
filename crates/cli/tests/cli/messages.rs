//! What servers send between calls is held to each server's message budget
//! (`mcpl.messageBudget`): an injected text over it is spilled whole and replaced by what fits,
//! so the system prompt and the user's turn never carry more than the budget of any one text.

use serde_json::{Value, json};

use crate::read_result::{Scratch, part_text, run, tool_result};

#[test]
fn injected_texts_over_the_message_budget_are_spilled_and_cut() {
    let scratch = Scratch::new("injections");
    let config = scratch.write(
        "config.json",
        &json!({
            "mcpServers": {"demo": {"command": env!("CARGO_BIN_EXE_mcpl"), "args": ["serve-demo"],
                                    "mcpl": {"messageBudget": 12}}},
            "mcpl": {"spillDir": scratch.0.join("spill"), "contextWindow": 1_000_000},
        }),
    );
    let script = json!({"steps": [{"tool_calls": [{"server": "demo", "name": "text"}]}],
                        "final": "done"});
    let (output, bodies) = run(&scratch, &config, &script, "injections");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let first = &bodies[0];
    let system = first["system"].to_string();
    assert!(
        !system.contains("each of its tools returns one kind of content"),
        "{system}"
    );
    assert!(
        system.contains("[left out: read it with read_result(\\\"spill_"),
        "{system}"
    );
    let user: String = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(Value::to_string)
        .collect();
    assert!(
        !user.contains("the user's project is called Lighthouse"),
        "{user}"
    );
    // A budget that holds them changes nothing.
    let config = scratch.write(
        "config-roomy.json",
        &json!({
            "mcpServers": {"demo": {"command": env!("CARGO_BIN_EXE_mcpl"), "args": ["serve-demo"]}},
            "mcpl": {"spillDir": scratch.0.join("spill"), "contextWindow": 1_000_000},
        }),
    );
    let (output, bodies) = run(&scratch, &config, &script, "roomy");
    assert_eq!(output.status.code(), Some(0));
    assert!(
        bodies[0]["system"]
            .to_string()
            .contains("each of its tools returns one kind of content")
    );
}

/// Runs the demo's `script` with `maxImages: 0` and `budget` under `key` (`budget` or
/// `messageBudget`): once with room, then with a budget just under what `sent` picked of the
/// request bodies. Returns what `sent` picks of the second run, and its budget.
fn with_room_then_without(
    name: &str,
    script: &Value,
    key: &str,
    sent: impl Fn(&[Value]) -> String,
) -> (String, u64) {
    let scratch = Scratch::new(name);
    let run_with = |budget: u64, run_name: &str| {
        let config = scratch.write(
            &format!("config-{run_name}.json"),
            &json!({
                "mcpServers": {"demo": {"command": env!("CARGO_BIN_EXE_mcpl"), "args": ["serve-demo"],
                                        "mcpl": {key: budget}}},
                "mcpl": {"spillDir": scratch.0.join("spill"), "contextWindow": 1_000_000,
                         "maxImages": 0},
            }),
        );
        let (output, bodies) = run(&scratch, &config, script, run_name);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        sent(&bodies)
    };
    let roomy = run_with(1_000, "roomy");
    assert!(
        roomy.contains("[image not sent in this request: "),
        "{roomy}"
    );
    let budget = o200k(&roomy) - 3;
    (run_with(budget, "tight"), budget)
}

fn o200k(text: &str) -> u64 {
    mcpl_budget::TokenEstimator::count(&mcpl_budget::O200k, text)
}

#[test]
fn the_notices_the_request_limits_write_are_held_to_the_results_budget() {
    // `maxImages: 0`: the demo's PNG is left out of the request, and a notice says so beside its
    // placeholder. With room, the result goes so; with a budget just under that, it goes as its
    // stored copy, which was fitted to the budget.
    let script = json!({"steps": [{"tool_calls": [{"server": "demo", "name": "png"}]}],
                        "final": "done"});
    let (tight, budget) = with_room_then_without("limit-notices", &script, "budget", |bodies| {
        part_text(tool_result(&bodies[1], "call_1").expect("the png's result"))
    });
    let tokens = o200k(&tight);
    assert!(
        tokens <= budget,
        "{tokens} o200k tokens over the budget of {budget}: {tight}"
    );
    assert!(
        !tight.contains("[image not sent in this request: "),
        "{tight}"
    );
}

/// The text of the first user message whose text holds `needle`, its blocks joined by lines.
fn message_with(body: &Value, needle: &str) -> Option<String> {
    body["messages"]
        .as_array()?
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_array())
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .find(|text| text.contains(needle))
}

#[test]
fn the_notices_the_request_limits_write_are_held_to_a_messages_budget() {
    // The demo's push event `evt-1` holds a text, a PNG and a reference. With `maxImages: 0`
    // its PNG is left out with a notice; with a message budget just under that, the event goes
    // as its stored text.
    let script = json!({"steps": [{"tool_calls": [{"server": "demo", "name": "push-events"}]},
                                  {"tool_calls": [{"server": "demo", "name": "text"}]}],
                        "final": "done"});
    let (tight, budget) = with_room_then_without(
        "message-limit-notices",
        &script,
        "messageBudget",
        |bodies| {
            bodies
                .iter()
                .find_map(|body| message_with(body, "Build 42 finished"))
                .expect("the push event")
        },
    );
    let tokens = o200k(&tight);
    assert!(
        tokens <= budget,
        "{tokens} o200k tokens over the budget of {budget}: {tight}"
    );
}

#[test]
fn results_of_one_round_over_the_window_are_cleared_and_the_run_goes_on() {
    // Three results of 6,000 tokens in one round, a window of 16,000: the latest results are
    // cleared, oldest first, each replaced by a line naming its spill, instead of ending the run.
    let scratch = Scratch::new("latest-cleared");
    let config = scratch.write(
        "config.json",
        &json!({
            "mcpServers": {"demo": {"command": env!("CARGO_BIN_EXE_mcpl"), "args": ["serve-demo"],
                                    "mcpl": {"budget": 6000}}},
            "mcpl": {"spillDir": scratch.0.join("spill"), "contextWindow": 16_000},
        }),
    );
    let call = json!({"server": "demo", "name": "over-budget"});
    let script = json!({"steps": [{"tool_calls": [call, call, call]}], "final": "done"});
    let (output, bodies) = run(&scratch, &config, &script, "latest");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let last = bodies.last().unwrap().to_string();
    assert!(last.contains("read it with read_result"), "{last}");
    assert!(stderr.contains("cleared"), "{stderr}");
}
