//! A model's mistakes, answered in words: a call to a tool no server offers (with the nearest
//! names), arguments that are not a JSON object, and arguments that do not match the tool's
//! input schema. Each becomes the call's error result, and the loop goes on; a run of errors
//! with no success between ends it (`HostOptions::max_consecutive_errors`).

use std::collections::HashMap;

use serde_json::Value;

/// How many of the nearest tool names an unknown tool's error lists.
const NEAREST: usize = 3;
/// The most characters of one schema error shown.
const ERROR_CHARS: usize = 240;
/// The most bytes a tool's input schema may have to be checked against: a larger one (a
/// server's to send) is not compiled, and its calls go unchecked.
const SCHEMA_BYTES: usize = 256 * 1024;

/// The tools' input schemas, each compiled the first time a call to it is checked.
#[derive(Debug, Default)]
pub(crate) struct Schemas {
    compiled: HashMap<String, Option<jsonschema::Validator>>,
}

impl Schemas {
    /// Why `arguments` do not match the input schema of `tool` (its model-facing name), or
    /// `None` when they do, or when the schema cannot be compiled (a schema the validator
    /// refuses, a remote `$ref`): a call is refused only for what a schema clearly says.
    pub(crate) fn mismatch(
        &mut self,
        tool: &str,
        schema: &Value,
        arguments: &Value,
    ) -> Option<String> {
        let validator = self
            .compiled
            .entry(tool.to_owned())
            .or_insert_with(|| compile(schema))
            .as_ref()?;
        // A member set to null is taken as left out, as servers and models commonly mean it
        // (SEP-2243 sends one): only what a schema says of the rest is checked.
        let arguments = &without_nulls(arguments);
        let errors = mcpl_session::schema_errors(validator, arguments, |error| {
            let path = error.instance_path().to_string();
            let at = if path.is_empty() {
                "(top)".to_owned()
            } else {
                path
            };
            clip(&format!("at {at}: {error}"))
        })?;
        Some(format!(
            "tool call failed: the arguments of {tool} do not match its input schema: {errors}. The tool was not called; call it again with arguments its schema takes."
        ))
    }
}

/// The validator for a schema, with linear-time patterns (a server's pattern cannot make a
/// check take exponential time) and no remote `$ref` fetched.
fn compile(schema: &Value) -> Option<jsonschema::Validator> {
    if serde_json::to_vec(schema).map_or(true, |bytes| bytes.len() > SCHEMA_BYTES) {
        return None;
    }
    jsonschema::options()
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .should_validate_formats(false)
        .build(schema)
        .ok()
}

/// `value` with every object member whose value is null left out, at any depth.
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

fn clip(text: &str) -> String {
    match text.char_indices().nth(ERROR_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// Why `arguments` are not a JSON object, or `None` when they are. Arguments the model wrote
/// that are not JSON arrive as the string it wrote.
pub(crate) fn not_an_object(tool: &str, arguments: &Value) -> Option<String> {
    let what = match arguments {
        Value::Object(_) => return None,
        Value::String(raw) => match serde_json::from_str::<Value>(raw) {
            Err(error) => format!("not JSON ({error})"),
            Ok(_) => "a JSON string, not an object".to_owned(),
        },
        Value::Array(_) => "an array, not an object".to_owned(),
        Value::Null | Value::Bool(_) | Value::Number(_) => {
            "a single value, not an object".to_owned()
        }
    };
    Some(format!(
        "tool call failed: the arguments of {tool} are {what}. The tool was not called; send its arguments as one JSON object."
    ))
}

/// The error result for a call to `name`, which no running server offers: the tools it may
/// have meant, nearest first, by edit distance to their model-facing and own names.
pub(crate) fn unknown_tool<'t>(
    name: &str,
    tools: impl Iterator<Item = (&'t str, &'t str)>,
) -> String {
    let mut scored: Vec<(f64, &str)> = tools
        .map(|(offered, own)| {
            let score = strsim::normalized_levenshtein(name, offered)
                .max(strsim::normalized_levenshtein(name, own));
            (score, offered)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    // The host's own tools are always offered, so there is always a nearest one.
    let nearest: Vec<&str> = scored.iter().take(NEAREST).map(|(_, n)| *n).collect();
    format!(
        "tool call failed: no tool is named {name}. The nearest: {}.",
        nearest.join(", ")
    )
}

/// The error result for a call by a tool's own name that several servers offer.
pub(crate) fn ambiguous_tool(name: &str, candidates: &[&str]) -> String {
    format!(
        "tool call failed: {} servers offer a tool named {name}; call one of {}",
        candidates.len(),
        candidates.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_nearest_names_come_first() {
        let tools = [
            ("memory__read_graph", "read_graph"),
            ("memory__search_nodes", "search_nodes"),
            ("files__read_file", "read_file"),
            ("files__write_file", "write_file"),
        ];
        let text = unknown_tool("read_grpah", tools.iter().copied());
        assert!(
            text.starts_with(
                "tool call failed: no tool is named read_grpah. The nearest: memory__read_graph, files__read_file, "
            ),
            "{text}"
        );
    }

    #[test]
    fn arguments_are_checked_against_the_schema() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"},
                            "name": {"type": "string", "pattern": "^(a+)+$"}},
                            "required": ["n"]});
        let mut schemas = Schemas::default();
        assert_eq!(schemas.mismatch("t", &schema, &json!({"n": 1})), None);
        let text = schemas
            .mismatch("t", &schema, &json!({"n": "one"}))
            .unwrap();
        assert!(text.contains("at /n: "), "{text}");
        let text = schemas.mismatch("t", &schema, &json!({})).unwrap();
        assert!(text.contains("\"n\" is a required property"), "{text}");
        // Null stands for left out: fine for an optional member, missing for a required one.
        assert_eq!(
            schemas.mismatch("t", &schema, &json!({"n": 1, "name": null})),
            None
        );
        assert!(
            schemas
                .mismatch("t", &schema, &json!({"n": null}))
                .is_some()
        );
        // A pattern that backtracks exponentially elsewhere is linear here.
        let evil = format!("{}!", "a".repeat(5000));
        assert!(
            schemas
                .mismatch("t", &schema, &json!({"n": 1, "name": evil}))
                .is_some()
        );
        // A schema the validator cannot compile checks nothing.
        let mut schemas = Schemas::default();
        let broken = json!({"type": "object", "properties": {"n": {"type": 12}}});
        assert_eq!(schemas.mismatch("t", &broken, &json!({"n": 1})), None);
    }

    #[test]
    fn arguments_that_are_not_an_object_say_what_they_are() {
        assert!(not_an_object("t", &json!({})).is_none());
        assert!(
            not_an_object("t", &json!("{\"n\": "))
                .unwrap()
                .contains("are not JSON (")
        );
        assert!(
            not_an_object("t", &json!([1]))
                .unwrap()
                .contains("an array")
        );
        assert!(
            not_an_object("t", &json!("\"x\""))
                .unwrap()
                .contains("a JSON string")
        );
    }
}
