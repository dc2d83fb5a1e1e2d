//! What servers send between calls is held to each server's message budget
//! (`mcpl.messageBudget`): an injected text over it is spilled whole and replaced by what fits,
//! so the system prompt and the user's turn never carry more than the budget of any one text.

use serde_json::{Value, json};

use crate::read_result::{Scratch, run};

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
