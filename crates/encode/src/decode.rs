//! Each provider's answer read back into the provider-neutral conversation: the mirror of the
//! encoders. A [`Turn`] holds the answer's text, its tool calls and the usage it reported;
//! anything a turn cannot be made of is an [`AnswerError`] naming the place. No I/O: the host's
//! HTTP backends fetch the answers and call these.

use serde_json::Value;

use crate::conversation::{ToolCall, Turn, Usage};

/// Why a provider's answer is not a turn; its words become the message of the host's provider error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// A Messages API answer without its `content` array.
    #[error("the answer has no content array")]
    NoContent,
    /// A `tool_use` block without a field it needs.
    #[error("content[{index}]: a tool_use block without {field}")]
    ToolUseWithout {
        /// Its place in the answer.
        index: usize,
        /// The field it lacks.
        field: &'static str,
    },
    /// A Chat Completions answer without a first choice's message.
    #[error("the answer has no choices[0].message")]
    NoMessage,
    /// A Responses API answer without its `output` array.
    #[error("the answer has no output array")]
    NoOutput,
    /// A Responses `function_call` item, or a Gemini `functionCall` part, without a field.
    #[error("output[{index}]: a function call without {field}")]
    FunctionCallWithout {
        /// Its place in the answer.
        index: usize,
        /// The field it lacks.
        field: &'static str,
    },
    /// A `generateContent` answer without a first candidate's parts.
    #[error("the answer has no candidates[0].content.parts")]
    NoParts,
    /// A tool call without a field it needs (`id`, `function/name`, `function/arguments`).
    #[error("tool_calls[{index}]: no {field}")]
    ToolCallWithout {
        /// Its place in the answer.
        index: usize,
        /// The field it lacks.
        field: &'static str,
    },
}

/// A Messages API answer: its text blocks joined with `\n`, its `tool_use` blocks as calls.
/// Other blocks (thinking, say) are not part of the turn.
pub fn anthropic_turn(answer: &Value) -> Result<Turn, AnswerError> {
    let blocks = answer
        .get("content")
        .and_then(Value::as_array)
        .ok_or(AnswerError::NoContent)?;
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => texts.push(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => {
                let field = |name: &'static str| {
                    block
                        .get(name)
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .ok_or(AnswerError::ToolUseWithout {
                            index: i,
                            field: name,
                        })
                };
                tool_calls.push(ToolCall {
                    id: field("id")?,
                    name: field("name")?,
                    arguments: block
                        .get("input")
                        .cloned()
                        .unwrap_or_else(|| Value::Object(serde_json::Map::new())),
                    signature: None,
                });
            }
            _ => {}
        }
    }
    Ok(Turn {
        text: texts.join("\n"),
        tool_calls,
        usage: usage(answer, "/usage/input_tokens", "/usage/output_tokens").map(|usage| Usage {
            cache_read_tokens: count(answer, "/usage/cache_read_input_tokens"),
            cache_write_tokens: count(answer, "/usage/cache_creation_input_tokens"),
            ..usage
        }),
    })
}

/// A Chat Completions answer: the first choice's message content and its function tool calls,
/// whose JSON-string arguments are parsed (an empty string is `{}`).
pub fn openai_chat_turn(answer: &Value) -> Result<Turn, AnswerError> {
    let message = answer
        .pointer("/choices/0/message")
        .ok_or(AnswerError::NoMessage)?;
    let text = message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let mut tool_calls = Vec::new();
    for (i, call) in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .enumerate()
    {
        let field = |pointer: &'static str| {
            call.pointer(pointer)
                .and_then(Value::as_str)
                .ok_or(AnswerError::ToolCallWithout {
                    index: i,
                    field: pointer.trim_start_matches('/'),
                })
        };
        let id = field("/id")?;
        let name = field("/function/name")?;
        let arguments = arguments(field("/function/arguments")?);
        tool_calls.push(ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments,
            signature: None,
        });
    }
    Ok(Turn {
        text,
        tool_calls,
        usage: usage(answer, "/usage/prompt_tokens", "/usage/completion_tokens").map(|usage| {
            Usage {
                cache_read_tokens: count(answer, "/usage/prompt_tokens_details/cached_tokens"),
                ..usage
            }
        }),
    })
}

/// A call's JSON-string arguments, parsed (an empty string is `{}`). Arguments that are not
/// JSON are kept as the string the model wrote: the call is the model's mistake, and the host
/// answers it with an error result rather than ending the turn.
fn arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// The usage at these two pointers; `None` unless both are counts.
fn usage(answer: &Value, input: &str, output: &str) -> Option<Usage> {
    Some(Usage {
        input_tokens: answer.pointer(input)?.as_u64()?,
        output_tokens: answer.pointer(output)?.as_u64()?,
        ..Usage::default()
    })
}

/// The count at a pointer; 0 when there is none.
fn count(answer: &Value, pointer: &str) -> u64 {
    answer.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

/// A Responses API answer: the `output_text` parts of its `message` items joined with `\n`, its
/// `function_call` items as calls (by `call_id`, which the `function_call_output` answers).
/// Reasoning items are not part of the turn.
pub fn openai_responses_turn(answer: &Value) -> Result<Turn, AnswerError> {
    let items = answer
        .get("output")
        .and_then(Value::as_array)
        .ok_or(AnswerError::NoOutput)?;
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .map_or(&[][..], Vec::as_slice)
                {
                    if part.get("type").and_then(Value::as_str) == Some("output_text") {
                        texts.push(part.get("text").and_then(Value::as_str).unwrap_or(""));
                    }
                }
            }
            Some("function_call") => {
                let field = |name: &'static str| {
                    item.get(name)
                        .and_then(Value::as_str)
                        .ok_or(AnswerError::FunctionCallWithout {
                            index: i,
                            field: name,
                        })
                };
                let name = field("name")?;
                tool_calls.push(ToolCall {
                    id: field("call_id")?.to_owned(),
                    name: name.to_owned(),
                    arguments: arguments(field("arguments")?),
                    signature: None,
                });
            }
            _ => {}
        }
    }
    Ok(Turn {
        text: texts.join("\n"),
        tool_calls,
        usage: usage(answer, "/usage/input_tokens", "/usage/output_tokens").map(|usage| Usage {
            cache_read_tokens: count(answer, "/usage/input_tokens_details/cached_tokens"),
            ..usage
        }),
    })
}

/// A `generateContent` answer: the first candidate's text parts (thought summaries left out)
/// joined with `\n`, its `functionCall` parts as calls with the part's `thoughtSignature`
/// kept. A call without an `id` gets `gemini_call_N`, numbered across the conversation.
/// Usage counts the thought tokens as output, as they are billed.
pub fn gemini_turn(answer: &Value, calls: &mut usize) -> Result<Turn, AnswerError> {
    let parts = answer
        .pointer("/candidates/0/content/parts")
        .and_then(Value::as_array)
        .ok_or(AnswerError::NoParts)?;
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let signature = part
            .get("thoughtSignature")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let Some(call) = part.get("functionCall") {
            let name = call.get("name").and_then(Value::as_str).ok_or(
                AnswerError::FunctionCallWithout {
                    index: i,
                    field: "name",
                },
            )?;
            *calls += 1;
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("gemini_call_{calls}"), str::to_owned);
            tool_calls.push(ToolCall {
                id,
                name: name.to_owned(),
                arguments: call
                    .get("args")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(serde_json::Map::new())),
                signature,
            });
        } else if part.get("thought").and_then(Value::as_bool) != Some(true)
            && let Some(text) = part.get("text").and_then(Value::as_str)
        {
            texts.push(text);
        }
    }
    let thoughts = answer
        .pointer("/usageMetadata/thoughtsTokenCount")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let usage = answer.get("usageMetadata").map(|meta| {
        let count = |name: &str| meta.get(name).and_then(Value::as_u64).unwrap_or(0);
        Usage {
            input_tokens: count("promptTokenCount"),
            output_tokens: count("candidatesTokenCount").saturating_add(thoughts),
            cache_read_tokens: count("cachedContentTokenCount"),
            cache_write_tokens: 0,
        }
    });
    Ok(Turn {
        text: texts.join("\n"),
        tool_calls,
        usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_become_turns() {
        let turn = anthropic_turn(&json!({"content": [
            {"type": "thinking", "thinking": "hm"},
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "toolu_1", "name": "demo__chart", "input": {"n": 1}},
        ]}))
        .unwrap();
        assert_eq!(turn.text, "Looking.");
        assert_eq!(turn.tool_calls[0].arguments, json!({"n": 1}));
        let turn = openai_chat_turn(&json!({"choices": [{"message": {"content": null,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}]}}]}))
        .unwrap();
        assert_eq!(turn.text, "");
        assert_eq!(turn.tool_calls[0].arguments, json!({}));
        // Arguments that are not JSON keep the call: the host answers it with an error result.
        let bad = openai_chat_turn(&json!({"choices": [{"message": {"tool_calls": [
            {"id": "c1", "function": {"name": "f", "arguments": "{\"n\": "}}]}}]}))
        .unwrap();
        assert_eq!(bad.tool_calls[0].arguments, json!("{\"n\": "));
        let missing = openai_chat_turn(&json!({"choices": [{"message": {"tool_calls": [
            {"id": "c1", "function": {"arguments": "{}"}}]}}]}));
        assert_eq!(
            missing.unwrap_err().to_string(),
            "tool_calls[0]: no function/name"
        );
        let missing = anthropic_turn(&json!({"content": [{"type": "tool_use", "id": "t"}]}));
        assert_eq!(
            missing.unwrap_err().to_string(),
            "content[0]: a tool_use block without name"
        );
        assert_eq!(
            anthropic_turn(&json!({})).unwrap_err().to_string(),
            "the answer has no content array"
        );
        assert_eq!(
            openai_chat_turn(&json!({"choices": []}))
                .unwrap_err()
                .to_string(),
            "the answer has no choices[0].message"
        );
    }
}
