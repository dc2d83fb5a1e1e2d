//! Tool definitions as each route takes them: an input schema that is an object schema, a
//! description within the route's length, and no more tools than the route takes. A server's
//! definitions are whatever it sent; these rules make them ones no provider refuses.
//!
//! The limits, as each API documents or enforces them (checked 2026-12-04):
//! - Chat Completions: "A max of 128 functions are supported" (API reference, `tools`); a
//!   function's `description` over 1024 characters is refused with `string_above_max_length`
//!   (the error several MCP hosts reported in 2025).
//! - Responses: the same functions, held to the same numbers.
//! - Gemini: 128 function declarations, the conservative figure (the API documents no count).
//! - Messages (Anthropic): no count or description length documented; none applied.
//!
//! Every route wants `type: object` at the top of an input schema (Chat Completions and
//! Responses refuse anything else). A schema that is not one (a bare `$ref`, `anyOf`, a string
//! schema) is wrapped as the one required property [`WRAPPED`] of an object schema, its
//! `$defs` and `definitions` lifted beside it so its references still resolve; the host unwraps
//! the model's arguments before calling the server.

use serde_json::{Map, Value, json};

use crate::conversation::ToolSpec;
use mcpl_lanes::RouteId;

/// The property a wrapped schema becomes.
pub const WRAPPED: &str = "input";

/// What a route takes of tool definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolRules {
    /// The most tools one request may offer.
    pub max_tools: Option<usize>,
    /// The most characters of one tool's description.
    pub description_chars: Option<usize>,
}

impl ToolRules {
    /// The rules of `route`.
    pub const fn of(route: RouteId) -> ToolRules {
        match route {
            RouteId::OpenAiChat | RouteId::OpenAiResponses => ToolRules {
                max_tools: Some(128),
                description_chars: Some(1024),
            },
            RouteId::Gemini => ToolRules {
                max_tools: Some(128),
                description_chars: None,
            },
            RouteId::Anthropic | RouteId::TextOnly => ToolRules {
                max_tools: None,
                description_chars: None,
            },
        }
    }
}

/// Tool definitions held to a route's rules, and what that changed.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Conformed {
    /// The tools offered, in the order given, within the rules.
    pub tools: Vec<ToolSpec>,
    /// The tools whose schema was wrapped: a call's arguments are its [`WRAPPED`] property.
    pub wrapped: Vec<String>,
    /// The tools left out, over the route's count, in the order given.
    pub left_out: Vec<String>,
    /// What changed, one line each, naming the tool and the limit.
    pub notes: Vec<String>,
}

/// Holds `tools` to the rules of `route`: each schema made an object schema, each description
/// cut to the route's length, and the tools after the route's count left out (the first ones
/// given are kept, so a host lists its own tools first).
pub fn conform(route: RouteId, tools: Vec<ToolSpec>) -> Conformed {
    let rules = ToolRules::of(route);
    let mut conformed = Conformed::default();
    for mut tool in tools {
        if rules
            .max_tools
            .is_some_and(|max| conformed.tools.len() >= max)
        {
            conformed.left_out.push(tool.name);
            continue;
        }
        let (schema, wrapped) = object_schema(tool.input_schema);
        tool.input_schema = schema;
        if wrapped {
            conformed.notes.push(format!(
                "tool {}: its input schema is not an object schema; offered as the property {WRAPPED} of one",
                tool.name
            ));
            conformed.wrapped.push(tool.name.clone());
        }
        if let Some(max) = rules.description_chars
            && tool.description.chars().count() > max
        {
            // Room for the ellipsis: the first `max - 1` characters stay.
            let end = tool
                .description
                .char_indices()
                .nth(max.saturating_sub(1))
                .map_or(0, |(i, _)| i);
            tool.description.truncate(end);
            tool.description.push('…');
            conformed.notes.push(format!(
                "tool {}: its description was cut to the route's {max} characters",
                tool.name
            ));
        }
        conformed.tools.push(tool);
    }
    if let (Some(max), false) = (rules.max_tools, conformed.left_out.is_empty()) {
        conformed.notes.push(format!(
            "{} tools are not offered: the {} route takes at most {max} tools in a request (the first not offered: {})",
            conformed.left_out.len(),
            route.name(),
            conformed.left_out[0]
        ));
    }
    conformed
}

/// `schema` as an object schema, and whether it had to be wrapped. A schema that is not a JSON
/// object takes any object; one without a `type` but with `properties` is given
/// `type: object`; one whose `type` is `object` stays as it is.
fn object_schema(schema: Value) -> (Value, bool) {
    let Value::Object(mut map) = schema else {
        return (json!({"type": "object"}), false);
    };
    match map.get("type") {
        Some(Value::String(kind)) if kind == "object" => return (Value::Object(map), false),
        None if map.contains_key("properties") && !has_combinator(&map) => {
            map.insert("type".to_owned(), json!("object"));
            return (Value::Object(map), false);
        }
        _ => {}
    }
    let mut wrapper = Map::new();
    wrapper.insert("type".to_owned(), json!("object"));
    for key in ["$defs", "definitions"] {
        if let Some(defs) = map.remove(key) {
            wrapper.insert(key.to_owned(), defs);
        }
    }
    wrapper.insert(
        "properties".to_owned(),
        json!({ WRAPPED: Value::Object(map) }),
    );
    wrapper.insert("required".to_owned(), json!([WRAPPED]));
    (Value::Object(wrapper), true)
}

fn has_combinator(map: &Map<String, Value>) -> bool {
    ["$ref", "anyOf", "oneOf", "allOf", "not", "if"]
        .iter()
        .any(|key| map.contains_key(*key))
}

/// The arguments a server gets for a call the model made to a wrapped tool: the [`WRAPPED`]
/// property, or the arguments as they are when they have none.
pub fn unwrap_arguments(arguments: &Value) -> Value {
    arguments
        .get(WRAPPED)
        .cloned()
        .unwrap_or_else(|| arguments.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, schema: Value) -> ToolSpec {
        ToolSpec {
            name: name.to_owned(),
            description: "d".to_owned(),
            input_schema: schema,
        }
    }

    #[test]
    fn every_schema_becomes_an_object_schema() {
        let cases = [
            (json!({"type": "object", "properties": {}}), false),
            (json!({"properties": {"a": {"type": "string"}}}), false),
            (json!("a string"), false),
            (json!([1, 2]), false),
            (
                json!({"$ref": "#/$defs/A", "$defs": {"A": {"type": "object"}}}),
                true,
            ),
            (json!({"type": "string"}), true),
            (
                json!({"anyOf": [{"type": "object"}, {"type": "null"}]}),
                true,
            ),
            (json!({"type": ["object", "null"]}), true),
        ];
        for (schema, wrapped) in cases {
            let conformed = conform(RouteId::OpenAiChat, vec![tool("t", schema.clone())]);
            let out = &conformed.tools[0].input_schema;
            assert_eq!(out["type"], "object", "{schema} -> {out}");
            assert_eq!(conformed.wrapped.len(), usize::from(wrapped), "{schema}");
        }
        let conformed = conform(
            RouteId::Anthropic,
            vec![tool(
                "t",
                json!({"$ref": "#/$defs/A", "$defs": {"A": {"type": "object"}}}),
            )],
        );
        let out = &conformed.tools[0].input_schema;
        assert_eq!(out["$defs"]["A"]["type"], "object", "{out}");
        assert_eq!(out["properties"]["input"]["$ref"], "#/$defs/A");
        assert_eq!(
            unwrap_arguments(&json!({"input": {"a": 1}})),
            json!({"a": 1})
        );
    }

    #[test]
    fn tools_over_the_count_are_left_out_and_descriptions_cut() {
        let tools: Vec<ToolSpec> = (0..202)
            .map(|n| ToolSpec {
                name: format!("t{n}"),
                description: "é".repeat(2000),
                input_schema: json!({"type": "object"}),
            })
            .collect();
        let conformed = conform(RouteId::OpenAiChat, tools.clone());
        assert_eq!(conformed.tools.len(), 128);
        assert_eq!(conformed.left_out.len(), 74);
        assert_eq!(conformed.left_out[0], "t128");
        assert!(
            conformed
                .tools
                .iter()
                .all(|t| t.description.chars().count() <= 1024)
        );
        assert!(conformed.notes.last().unwrap().starts_with(
            "74 tools are not offered: the openai-chat route takes at most 128 tools in a request"
        ));
        let conformed = conform(RouteId::Anthropic, tools);
        assert_eq!(conformed.tools.len(), 202);
        assert!(conformed.notes.is_empty());
    }
}
