//! The scripted model: a script plays its steps, and a bad script names its key.

use mcpl_host::model::*;
use serde_json::json;

#[test]
fn a_script_plays_its_steps_then_answers() {
    let mut model = Scripted::from_slice(
        br#"{"steps": [{"tool_calls": [{"server": "demo", "name": "text", "arguments": {"n": 1}},
                                       {"name": "fetch_reference", "arguments": {"ref_id": "r"}}]},
                       {"tool_calls": []}],
             "final": "done"}"#,
    )
    .unwrap();
    let turn = model.complete(&json!({})).unwrap();
    assert_eq!(turn.tool_calls.len(), 2);
    assert_eq!(turn.tool_calls[0].name, "demo__text");
    assert_eq!(turn.tool_calls[0].id, "call_1");
    assert_eq!(turn.tool_calls[0].arguments, json!({"n": 1}));
    assert_eq!(turn.tool_calls[1].name, "fetch_reference");
    assert!(model.complete(&json!({})).unwrap().tool_calls.is_empty());
    let last = model.complete(&json!({})).unwrap();
    assert_eq!(last.text, "done");
    assert!(last.tool_calls.is_empty());
    assert_eq!(model.calls_made(), 2);
}

#[test]
fn a_bad_script_names_the_key() {
    let error = Scripted::from_slice(br#"{"steps": [{"tool_calls": [{"server": "demo"}]}]}"#)
        .unwrap_err()
        .to_string();
    assert!(error.contains("steps[0].tool_calls[0]"), "{error}");
    assert!(error.contains("missing field `name`"), "{error}");
}
