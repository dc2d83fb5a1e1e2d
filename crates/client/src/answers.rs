//! The requests every MCP server may make of its host, answered by the connection itself:
//! `ping`, `roots/list` (with the roots configured for the server) and `elicitation/create` with
//! no person at the keyboard.

use serde_json::{Map, Value, json};

use crate::{Root, RpcError};

/// The answer to a standard request, or `None` for a method the host answers.
pub(crate) fn standard(
    method: &str,
    params: &Value,
    roots: &[Root],
) -> Option<Result<Value, RpcError>> {
    match method {
        "ping" => Some(Ok(json!({}))),
        "roots/list" if !roots.is_empty() => Some(Ok(roots_list(roots))),
        "elicitation/create" => Some(Ok(elicit_without_person(params))),
        _ => None,
    }
}

fn roots_list(roots: &[Root]) -> Value {
    let roots: Vec<Value> = roots
        .iter()
        .map(|root| match &root.name {
            Some(name) => json!({"uri": root.uri, "name": name}),
            None => json!({"uri": root.uri}),
        })
        .collect();
    json!({"roots": roots})
}

/// A form elicitation answered with no one to ask: accepted with the schema's defaults when
/// every required field has one, declined otherwise (and always for url mode).
pub fn elicit_without_person(params: &Value) -> Value {
    let mode = params.get("mode").and_then(Value::as_str).unwrap_or("form");
    if mode != "form" {
        return json!({"action": "decline"});
    }
    let schema = params.get("requestedSchema");
    let properties = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    let required: Vec<&str> = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    if let Some(properties) = properties {
        for (name, property) in properties {
            if let Some(default) = property.get("default") {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    if required.iter().all(|name| content.contains_key(*name)) {
        json!({"action": "accept", "content": content})
    } else {
        json!({"action": "decline"})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_elicitation_is_accepted_with_defaults_only_when_every_required_field_has_one() {
        let params = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "verified": {"type": "boolean", "default": true},
            "nickname": {"type": "string"}
        }, "required": ["name"]}});
        assert_eq!(
            elicit_without_person(&params),
            json!({"action": "accept", "content": {"name": "John Doe", "age": 30,
                "score": 95.5, "status": "active", "verified": true}})
        );
        let mut missing = params.clone();
        missing["requestedSchema"]["required"] = json!(["name", "nickname"]);
        assert_eq!(
            elicit_without_person(&missing),
            json!({"action": "decline"})
        );
        let url = json!({"mode": "url", "url": "https://x.example", "message": "m"});
        assert_eq!(elicit_without_person(&url), json!({"action": "decline"}));
        assert_eq!(
            elicit_without_person(&json!({"requestedSchema": {"type": "object"}})),
            json!({"action": "accept", "content": {}})
        );
    }

    #[test]
    fn ping_and_roots_are_answered_and_roots_only_when_set() {
        assert_eq!(standard("ping", &json!({}), &[]), Some(Ok(json!({}))));
        assert_eq!(standard("roots/list", &json!({}), &[]), None);
        let roots = [Root {
            uri: "file:///work".to_owned(),
            name: Some("work".to_owned()),
        }];
        assert_eq!(
            standard("roots/list", &json!({}), &roots),
            Some(Ok(
                json!({"roots": [{"uri": "file:///work", "name": "work"}]})
            ))
        );
        assert_eq!(standard("push/event", &json!({}), &roots), None);
    }
}
