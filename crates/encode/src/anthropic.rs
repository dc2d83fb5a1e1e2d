//! Anthropic's Messages API (`POST /v1/messages`), and the text-only route in its shape.

use mcpl_budget::PricedRoute;
use serde_json::{Map, Value, json};

use super::{
    audio_description, document_not_sent, image_not_sent, plain_text, takes_document, takes_image,
};
use crate::conversation::{Content, Message, ModelRequest, ToolOutput};

/// Which of the two routes in this shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flavor {
    /// Anthropic: content blocks with native images.
    Native,
    /// Text only: every content is a string.
    TextOnly,
}

/// `{model, max_tokens, system, messages, tools}`; `system` and `tools` only when there are
/// any. A tool-results message becomes a user message of `tool_result` blocks, in call order.
pub(super) fn request(request: &ModelRequest<'_>, flavor: Flavor) -> Value {
    let mut body = Map::new();
    body.insert("model".to_owned(), json!(request.model));
    body.insert("max_tokens".to_owned(), json!(request.max_tokens));
    let cache = flavor == Flavor::Native;
    if !request.system.is_empty() {
        let system = if cache {
            json!([{"type": "text", "text": request.system, "cache_control": ephemeral()}])
        } else {
            json!(request.system)
        };
        body.insert("system".to_owned(), system);
    }
    let mut messages: Vec<Value> = request
        .messages
        .iter()
        .map(|message| match message {
            Message::User(content) => json!({
                "role": "user",
                "content": user_content(content, flavor),
            }),
            Message::Assistant { text, tool_calls } => {
                let mut blocks = Vec::new();
                if !blank(text) {
                    blocks.push(json!({"type": "text", "text": text}));
                } else if tool_calls.is_empty() {
                    blocks.push(json!({"type": "text", "text": EMPTY}));
                }
                blocks.extend(tool_calls.iter().map(|call| {
                    json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": call.arguments_object(),
                    })
                }));
                json!({"role": "assistant", "content": blocks})
            }
            Message::ToolResults(outputs) => {
                let blocks: Vec<Value> = outputs
                    .iter()
                    .map(|output| {
                        let mut block = json!({
                            "type": "tool_result",
                            "tool_use_id": output.call_id,
                            "content": tool_result_content(output, flavor),
                        });
                        if output.is_error {
                            block["is_error"] = json!(true);
                        }
                        block
                    })
                    .collect();
                json!({"role": "user", "content": blocks})
            }
        })
        .collect();
    // The stable history ends with the last assistant turn: everything up to it reads the same
    // in every later request (the results after it still carry their live copies).
    if cache
        && let Some(last) = request
            .messages
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { .. }))
    {
        mark(&mut messages[last]["content"]);
    }
    body.insert("messages".to_owned(), Value::Array(messages));
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                })
            })
            .collect();
        if cache && let Some(last) = tools.last_mut() {
            last["cache_control"] = ephemeral();
        }
        body.insert("tools".to_owned(), Value::Array(tools));
    }
    Value::Object(body)
}

/// A prompt-cache breakpoint. The Messages API takes at most four; a request marks three: the
/// last tool, the system prompt, and the last block of the stable history (decision 0052).
fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// Marks the last block of a message's content as a cache breakpoint.
fn mark(content: &mut Value) {
    if let Some(block) = content.as_array_mut().and_then(|blocks| blocks.last_mut())
        && let Some(block) = block.as_object_mut()
    {
        block.insert("cache_control".to_owned(), ephemeral());
    }
}

/// A `tool_result` block's `content`: text and image blocks (the stored copy as one text block
/// when nothing goes native), or on text-only the stored copy, whose images and audio are
/// already their stored text.
pub(super) fn tool_result_content(output: &ToolOutput, flavor: Flavor) -> Value {
    match (flavor, &output.live) {
        (Flavor::TextOnly, _) => Value::String(output.stored.clone()),
        (Flavor::Native, Some(parts)) => content_blocks(parts, &PricedRoute::ANTHROPIC),
        (Flavor::Native, None) => content_blocks(
            &[Content::Text(output.stored.clone())],
            &PricedRoute::ANTHROPIC,
        ),
    }
}

fn user_content(content: &[Content], flavor: Flavor) -> Value {
    match flavor {
        Flavor::Native => content_blocks(content, &PricedRoute::ANTHROPIC),
        Flavor::TextOnly => Value::String(plain_text(content)),
    }
}

/// Content blocks: text, base64 image sources and base64 PDF `document`s. Anthropic takes no
/// audio, and the route says so, so lanes never give it audio; should some arrive, it is
/// described in text. Texts that are empty or only whitespace are left out: the API refuses a
/// text block without a character that is not whitespace. Content left with no block at all
/// is one text block, [`EMPTY`]: the API refuses an empty user message too.
pub(super) fn content_blocks(content: &[Content], route: &PricedRoute) -> Value {
    let blocks: Vec<Value> = content
        .iter()
        .filter(|part| !matches!(part, Content::Text(text) if blank(text)))
        .map(|part| match part {
            Content::Text(text) => json!({"type": "text", "text": text}),
            Content::Image { sniffed, data, .. } if takes_image(route, *sniffed) => json!({
                "type": "image",
                "source": {"type": "base64", "media_type": sniffed.mime(), "data": data},
            }),
            Content::Image { sniffed, data, .. } => {
                json!({"type": "text", "text": image_not_sent(sniffed.mime(), data)})
            }
            Content::Audio { sniffed, data } => {
                json!({"type": "text", "text": audio_description(sniffed.mime(), data)})
            }
            Content::Document { data, .. } if takes_document(route) => json!({
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": data},
            }),
            Content::Document { data, .. } => {
                json!({"type": "text", "text": document_not_sent(data)})
            }
        })
        .collect();
    if blocks.is_empty() {
        return json!([{"type": "text", "text": EMPTY}]);
    }
    Value::Array(blocks)
}

/// The text of content that has nothing to show: what a user message or a tool result holds
/// when everything in it was empty or whitespace.
pub(super) const EMPTY: &str = "(empty)";

/// Whether a text has no character but whitespace, which the Messages API refuses as a block.
pub(super) fn blank(text: &str) -> bool {
    text.chars().all(char::is_whitespace)
}
