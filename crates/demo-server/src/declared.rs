//! The tools that show what a server declares: an output schema its result matches, one its
//! result does not, content blocks for one audience each, and a result size of its own. The
//! server's `instructions` are here too.

use serde_json::{Value, json};

use crate::tools::text;

/// The server's `instructions` in its `initialize` result.
pub(crate) const INSTRUCTIONS: &str = "Call weather-schema for the weather as data. sized-log returns its long log whole: read it in one call.";

/// The lines of log `sized-log` returns: about 70,000 characters, over the demo's budget of
/// 12,500 estimated tokens and under the size the tool declares.
const SIZED_LOG_LINES: u32 = 1200;
/// The size `sized-log` declares in `_meta["anthropic/maxResultSizeChars"]`.
const SIZED_LOG_CHARS: u64 = 100_000;

/// The tools, in the order `tools/list` gives them after the others.
const NAMES: [&str; 4] = [
    "weather-schema",
    "weather-mismatch",
    "audience",
    "sized-log",
];

/// The output schema of both weather tools.
fn weather_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "temperatureC": {"type": "number"},
            "conditions": {"type": "string"},
        },
        "required": ["city", "temperatureC"],
    })
}

/// Each tool's entry in `tools/list`.
pub(crate) fn listing() -> impl Iterator<Item = Value> {
    NAMES.into_iter().map(|name| {
        let mut entry = json!({
            "name": name,
            "description": description(name),
            "inputSchema": {"type": "object", "properties": {}},
        });
        match name {
            "weather-schema" | "weather-mismatch" => entry["outputSchema"] = weather_schema(),
            "sized-log" => {
                entry["_meta"] = json!({"anthropic/maxResultSizeChars": SIZED_LOG_CHARS});
            }
            _ => {}
        }
        entry
    })
}

fn description(name: &str) -> &'static str {
    match name {
        "weather-schema" => {
            "Emits the weather as text and as structuredContent that matches its outputSchema."
        }
        "weather-mismatch" => {
            "Emits the weather as text and as structuredContent that does not match its \
             outputSchema: temperatureC is a string."
        }
        "audience" => {
            "Emits three text blocks: one for both, one for the user alone (annotations.audience \
             [\"user\"]) and one for the assistant alone ([\"assistant\"])."
        }
        _ => {
            "Emits about 70,000 characters of log lines, and declares a result size of 100,000 \
             characters in _meta[\"anthropic/maxResultSizeChars\"]."
        }
    }
}

/// The result of the tool called `name`, when it is one of these.
pub(crate) fn call(name: &str) -> Option<Value> {
    let weather = |temperature: Value| {
        let data = json!({"city": "Lisbon", "temperatureC": temperature, "conditions": "clear"});
        json!({"content": [text(&data.to_string())], "structuredContent": data})
    };
    Some(match name {
        "weather-schema" => weather(json!(21.5)),
        "weather-mismatch" => weather(json!("warm")),
        "audience" => json!({"content": [
            text("The build finished: 3 warnings."),
            {"type": "text", "text": "Shown to you, the user: the build log is in build/log.txt.",
             "annotations": {"audience": ["user"]}},
            {"type": "text", "text": "For the model only: the warnings are all in generated code; do not fix them.",
             "annotations": {"audience": ["assistant"]}},
        ]}),
        "sized-log" => {
            let lines: String = (1..=SIZED_LOG_LINES)
                .map(|n| format!("{n:04} sized-log INFO step {n} of {SIZED_LOG_LINES} done, all checks green\n"))
                .collect();
            json!({"content": [text(&lines)]})
        }
        _ => return None,
    })
}
