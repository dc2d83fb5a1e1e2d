//! The HTTP headers revision 2026-07-28 asks of a client (SEP-2243): `Mcp-Method` and
//! `Mcp-Name` on each POST, and `Mcp-Param-{Name}` for each tool argument whose schema names
//! an `x-mcp-header`; a tool whose `x-mcp-header`s break the rules is not offered at all.

use std::collections::HashMap;

use base64::Engine as _;
use serde_json::Value;

/// The header pairs a message carries besides the transport's own.
pub(crate) type HeaderPairs = Vec<(String, String)>;

/// Each tool's `x-mcp-header` parameters: argument name → header name.
#[derive(Debug, Default)]
pub(crate) struct ToolHeaders {
    tools: HashMap<String, Vec<(String, String)>>,
}

/// Why a tool's `x-mcp-header`s are refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BadHeader {
    Empty,
    Charset,
    Duplicate,
    NotPrimitive,
}

impl ToolHeaders {
    /// Reads a `tools/list` result: records the valid tools' header parameters and removes the
    /// tools whose `x-mcp-header`s break a rule, which a client must not call.
    pub(crate) fn learn(&mut self, server: &str, result: &mut Value) {
        let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
            return;
        };
        tools.retain(|tool| {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                return true;
            };
            match tool_headers(tool) {
                Ok(pairs) => {
                    if pairs.is_empty() {
                        self.tools.remove(name);
                    } else {
                        self.tools.insert(name.to_owned(), pairs);
                    }
                    true
                }
                Err(why) => {
                    tracing::warn!(
                        server,
                        tool = name,
                        ?why,
                        "a tool with an invalid x-mcp-header; not offered"
                    );
                    self.tools.remove(name);
                    false
                }
            }
        });
    }

    /// The `Mcp-Param-*` headers of a `tools/call`'s params.
    pub(crate) fn for_call(&self, params: &Value) -> HeaderPairs {
        let Some(pairs) = params
            .get("name")
            .and_then(Value::as_str)
            .and_then(|name| self.tools.get(name))
        else {
            return Vec::new();
        };
        let arguments = params.get("arguments");
        pairs
            .iter()
            .filter_map(|(argument, header)| {
                let value = header_value(arguments?.get(argument)?)?;
                Some((format!("Mcp-Param-{header}"), value))
            })
            .collect()
    }
}

/// A tool's `(argument, header)` pairs, or why they are refused.
fn tool_headers(tool: &Value) -> Result<Vec<(String, String)>, BadHeader> {
    let Some(properties) = tool
        .pointer("/inputSchema/properties")
        .and_then(Value::as_object)
    else {
        return Ok(Vec::new());
    };
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (argument, schema) in properties {
        let Some(header) = schema.get("x-mcp-header") else {
            continue;
        };
        let Some(header) = header.as_str() else {
            return Err(BadHeader::Charset);
        };
        if header.is_empty() {
            return Err(BadHeader::Empty);
        }
        if !header.bytes().all(is_token_byte) {
            return Err(BadHeader::Charset);
        }
        if pairs.iter().any(|(_, h)| h.eq_ignore_ascii_case(header)) {
            return Err(BadHeader::Duplicate);
        }
        // A number's text is not one value across languages (SEP-2243): not allowed.
        let primitive = match schema.get("type") {
            Some(Value::String(kind)) => ["string", "integer", "boolean"].contains(&kind.as_str()),
            _ => false,
        };
        if !primitive {
            return Err(BadHeader::NotPrimitive);
        }
        pairs.push((argument.clone(), header.to_owned()));
    }
    Ok(pairs)
}

/// RFC 9110's `tchar`: what a header name may hold.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A value as a header carries it: numbers and booleans as JSON writes them, strings as they
/// are when they are printable ASCII without leading or trailing whitespace, else
/// `=?base64?…?=`; null, objects and arrays are not sent.
pub(crate) fn header_value(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(encode_text(text)),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// A string as a header value: itself when it is safe, else base64 in `=?base64?…?=`.
pub(crate) fn encode_text(text: &str) -> String {
    let plain = text.bytes().all(|b| (0x20..0x7f).contains(&b)) && text.trim() == text;
    if plain {
        text.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(text)
        )
    }
}

/// The standard headers of one message: `Mcp-Method`, and `Mcp-Name` for the methods that
/// name a tool, prompt or resource.
pub(crate) fn standard(method: &str, params: &Value) -> HeaderPairs {
    let mut pairs = vec![("Mcp-Method".to_owned(), encode_text(method))];
    let name = match method {
        "tools/call" | "prompts/get" => params.get("name"),
        "resources/read" => params.get("uri"),
        _ => None,
    };
    if let Some(name) = name.and_then(Value::as_str) {
        pairs.push(("Mcp-Name".to_owned(), encode_text(name)));
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_encoded_as_sep_2243_says() {
        assert_eq!(header_value(&json!("us-west1")).unwrap(), "us-west1");
        assert_eq!(header_value(&json!("us west 1")).unwrap(), "us west 1");
        assert_eq!(header_value(&json!(42)).unwrap(), "42");
        assert_eq!(header_value(&json!(false)).unwrap(), "false");
        assert_eq!(header_value(&json!("")).unwrap(), "");
        assert_eq!(
            header_value(&json!("Hello, 世界")).unwrap(),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(
            header_value(&json!(" padded ")).unwrap(),
            "=?base64?IHBhZGRlZCA=?="
        );
        assert_eq!(
            header_value(&json!("\tindented")).unwrap(),
            "=?base64?CWluZGVudGVk?="
        );
        assert_eq!(header_value(&json!("a\nb")).unwrap(), "=?base64?YQpi?=");
        assert_eq!(header_value(&json!(null)), None);
        assert_eq!(header_value(&json!({"a": 1})), None);
    }

    fn tool(name: &str, properties: Value) -> Value {
        json!({"name": name, "inputSchema": {"type": "object", "properties": properties}})
    }

    #[test]
    fn tools_with_bad_headers_are_not_offered_and_good_ones_mirror_their_arguments() {
        let mut result = json!({"tools": [
            tool("good", json!({
                "region": {"type": "string", "x-mcp-header": "Region"},
                "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
                "query": {"type": "string"}
            })),
            tool("empty", json!({"v": {"type": "string", "x-mcp-header": ""}})),
            tool("object", json!({"v": {"type": "object", "x-mcp-header": "Data"}})),
            tool("null", json!({"v": {"type": "null", "x-mcp-header": "Nil"}})),
            tool("number", json!({"v": {"type": "number", "x-mcp-header": "Score"}})),
            tool("dup", json!({"a": {"type": "string", "x-mcp-header": "Same"},
                               "b": {"type": "string", "x-mcp-header": "same"}})),
            tool("space", json!({"v": {"type": "string", "x-mcp-header": "My Header"}})),
            tool("colon", json!({"v": {"type": "string", "x-mcp-header": "My:Header"}})),
            tool("accent", json!({"v": {"type": "string", "x-mcp-header": "Région"}})),
            tool("control", json!({"v": {"type": "string", "x-mcp-header": "A\u{1}"}})),
            {"name": "plain"}
        ]});
        let mut headers = ToolHeaders::default();
        headers.learn("s", &mut result);
        let names: Vec<&str> = result["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["good", "plain"]);
        let pairs = headers.for_call(&json!({"name": "good", "arguments": {
            "region": "us-west1", "verbose": null, "query": "SELECT"}}));
        assert_eq!(
            pairs,
            [("Mcp-Param-Region".to_owned(), "us-west1".to_owned())]
        );
        assert!(
            headers
                .for_call(&json!({"name": "plain", "arguments": {}}))
                .is_empty()
        );
    }

    #[test]
    fn the_standard_headers_name_the_method_and_its_target() {
        assert_eq!(
            standard("tools/call", &json!({"name": "my-hyphenated-tool"})),
            [
                ("Mcp-Method".to_owned(), "tools/call".to_owned()),
                ("Mcp-Name".to_owned(), "my-hyphenated-tool".to_owned())
            ]
        );
        assert_eq!(
            standard("resources/read", &json!({"uri": "demo://x"}))[1].1,
            "demo://x"
        );
        assert_eq!(standard("tools/list", &json!({})).len(), 1);
    }
}
