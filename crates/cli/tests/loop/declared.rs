//! What the demo server declares, through the loop: its instructions in every request's system
//! prompt, a structured content its output schema refuses, blocks for one audience each, and a
//! tool's own result size.

use mcpl_budget::PricedRoute;
use mcpl_host::config::ServerOptions;
use mcpl_host::host_loop::CallReport;
use serde_json::Value;

use super::{config, demo_server, play, tempdir};

const TOOLS: &[(&str, &str)] = &[
    ("demo", "weather-schema"),
    ("demo", "weather-mismatch"),
    ("demo", "audience"),
    ("demo", "sized-log"),
];

fn call<'h>(calls: &'h [CallReport], tool: &str) -> &'h CallReport {
    calls.iter().find(|c| c.tool == tool).unwrap()
}

#[test]
fn instructions_schemas_audiences_and_sizes_reach_the_model_as_declared() {
    let spill = tempdir::Dir::new("declared");
    let config = config(vec![demo_server("demo", ServerOptions::default())], &spill);
    let steps: Vec<&[(&str, &str)]> = TOOLS.iter().map(std::slice::from_ref).collect();
    let (host, outcome, bodies) = play(&config, &PricedRoute::ANTHROPIC, &steps);
    assert_eq!(outcome.unwrap(), "done");
    // The instructions are in the system prompt, fenced, and the same bytes every request.
    let system = bodies[0]["system"].to_string();
    assert!(
        system.contains("<server-instructions server=\\\"demo\\\">"),
        "{system}"
    );
    assert!(system.contains("sized-log"), "{system}");
    for body in &bodies {
        assert_eq!(body["system"].to_string(), system);
    }
    let matched = call(&host.calls, "weather-schema");
    assert!(
        !matched.output.stored.contains("[mcpl:"),
        "{}",
        matched.output.stored
    );
    let mismatch = call(&host.calls, "weather-mismatch");
    assert!(
        mismatch.output.stored.ends_with(
            "[mcpl: structuredContent does not match the tool's outputSchema: /temperatureC: \"warm\" is not of type \"number\"]"
        ),
        "{}",
        mismatch.output.stored
    );
    assert!(mismatch.output.stored.contains("Lisbon"));
    let audience = call(&host.calls, "audience");
    assert!(!audience.output.stored.contains("Shown to you, the user"));
    assert!(audience.output.stored.contains("For the model only"));
    assert_eq!(
        audience.for_user,
        ["Shown to you, the user: the build log is in build/log.txt."]
    );
    let every_request = bodies.iter().map(Value::to_string).collect::<String>();
    assert!(!every_request.contains("Shown to you, the user"));
    // Over the server's budget of 12,500 estimated tokens, under the tool's own.
    let sized = call(&host.calls, "sized-log");
    assert!(sized.spill.is_none(), "{:?}", sized.diagnostics);
    assert!(
        sized.estimated_tokens > mcpl_budget::DEFAULT_BUDGET,
        "{}",
        sized.estimated_tokens
    );
}

#[test]
fn the_configs_tool_budget_and_the_ceiling_hold_a_declared_size() {
    for (tool_budget, ceiling) in [(Some(2_000), 50_000), (None, 3_000)] {
        let spill = tempdir::Dir::new("declared-budget");
        let mut options = ServerOptions::default();
        if let Some(tokens) = tool_budget {
            options.tool_budgets.insert("sized-log".to_owned(), tokens);
        }
        options.instructions_bytes = 0;
        let mut config = config(vec![demo_server("demo", options)], &spill);
        config.max_tool_budget = ceiling;
        let (host, _, bodies) = play(
            &config,
            &PricedRoute::ANTHROPIC,
            &[&[("demo", "sized-log")]],
        );
        let sized = call(&host.calls, "sized-log");
        assert!(sized.spill.is_some(), "{tool_budget:?} {ceiling}");
        assert!(sized.estimated_tokens <= tool_budget.unwrap_or(ceiling));
        assert!(
            !bodies[0]["system"]
                .to_string()
                .contains("server-instructions")
        );
    }
}
