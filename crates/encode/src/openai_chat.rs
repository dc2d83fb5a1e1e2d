//! OpenAI's Chat Completions API (`POST /v1/chat/completions`).
//!
//! A tool message carries text only ("for tool messages, only type `text` is supported"), so a
//! result's images are replaced in its text by a pointer line and move, labelled with their
//! call, into one user message after the contiguous tool messages: never between parallel
//! results, which must follow their assistant message directly.

use mcpl_budget::PricedRoute;
use serde_json::{Map, Value, json};

use super::{
    DOCUMENT_FILENAME, ImageDetail, MovedImage, MovedImages, MovedKind, Moves, audio_description,
    data_url, document_not_sent, image_not_sent, takes_audio, takes_image,
};
use crate::conversation::{Content, Message, ModelRequest, ToolOutput};

const ROUTE: &PricedRoute = &PricedRoute::OPENAI_CHAT;

/// `{model, messages, tools, max_completion_tokens}`; the system prompt is the first message.
pub(super) fn request(request: &ModelRequest<'_>, detail: ImageDetail) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for message in request.messages {
        match message {
            Message::User(content) => {
                messages.push(json!({"role": "user", "content": user_content(content, detail)}));
            }
            Message::Assistant { text, tool_calls } => {
                let mut assistant = json!({
                    "role": "assistant",
                    "content": if text.is_empty() && !tool_calls.is_empty() {
                        Value::Null
                    } else {
                        json!(text)
                    },
                });
                if !tool_calls.is_empty() {
                    let calls: Vec<Value> = tool_calls
                        .iter()
                        .map(|call| {
                            json!({
                                "id": call.id,
                                "type": "function",
                                "function": {
                                    "name": call.name,
                                    "arguments": call.arguments_object().to_string(),
                                },
                            })
                        })
                        .collect();
                    assistant["tool_calls"] = Value::Array(calls);
                }
                messages.push(assistant);
            }
            Message::ToolResults(outputs) => {
                let mut moved = MovedImages::default();
                for output in outputs {
                    messages.push(json!({
                        "role": "tool",
                        "tool_call_id": output.call_id,
                        "content": tool_message_text(output, &mut moved),
                    }));
                }
                if let Some(content) = moved_content(&moved, detail) {
                    messages.push(json!({"role": "user", "content": content}));
                }
            }
        }
    }
    let mut body = Map::new();
    body.insert("model".to_owned(), json!(request.model));
    body.insert("messages".to_owned(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.input_schema,
                    },
                })
            })
            .collect();
        body.insert("tools".to_owned(), Value::Array(tools));
    }
    body.insert(
        "max_completion_tokens".to_owned(),
        json!(request.max_tokens),
    );
    Value::Object(body)
}

/// A tool message's `content`: the stored copy, or the live text with moved images' pointers.
pub(super) fn tool_message_content<'o>(
    output: &'o ToolOutput,
    moved: &mut MovedImages<'o>,
) -> Value {
    Value::String(tool_message_text(output, moved))
}

fn tool_message_text<'o>(output: &'o ToolOutput, moved: &mut MovedImages<'o>) -> String {
    moved
        .text_of(output, Moves::media(ROUTE))
        .unwrap_or_else(|| output.stored.clone())
}

/// The content of the user message carrying these results' images, PDFs and audio, if any
/// moved.
pub(super) fn follow_up(outputs: &[ToolOutput], detail: ImageDetail) -> Option<Value> {
    let mut moved = MovedImages::default();
    for output in outputs {
        tool_message_text(output, &mut moved);
    }
    moved_content(&moved, detail)
}

fn moved_content(moved: &MovedImages<'_>, detail: ImageDetail) -> Option<Value> {
    let parts = moved.encode(
        |text| json!({"type": "text", "text": text}),
        |item: &MovedImage<'_>| match item.kind {
            MovedKind::Image => image_url(item.media_type, item.data, detail.of(item.dimensions)),
            MovedKind::Document => file(item.data),
            MovedKind::Audio => match audio_format(item.media_type) {
                Some(format) => input_audio(item.data, format),
                None => {
                    json!({"type": "text", "text": audio_description(item.media_type, item.data)})
                }
            },
        },
    );
    (!parts.is_empty()).then_some(Value::Array(parts))
}

/// A user message's content parts: `text`, `image_url` (a data URL) and `input_audio`.
pub(super) fn user_content(content: &[Content], detail: ImageDetail) -> Value {
    Value::Array(
        content
            .iter()
            .map(|part| match part {
                Content::Text(text) => json!({"type": "text", "text": text}),
                Content::Image {
                    sniffed,
                    data,
                    dimensions,
                } if takes_image(ROUTE, *sniffed) => {
                    image_url(sniffed.mime(), data, detail.of(Some(*dimensions)))
                }
                Content::Image { sniffed, data, .. } => {
                    json!({"type": "text", "text": image_not_sent(sniffed.mime(), data)})
                }
                Content::Audio { sniffed, data } => match audio_format(sniffed.mime()) {
                    Some(format) if takes_audio(ROUTE, *sniffed) => input_audio(data, format),
                    _ => json!({"type": "text", "text": audio_description(sniffed.mime(), data)}),
                },
                Content::Document { data, .. } => {
                    json!({"type": "text", "text": document_not_sent(data)})
                }
            })
            .collect(),
    )
}

fn image_url(media_type: &str, data: &str, detail: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": data_url(media_type, data), "detail": detail}})
}

/// A PDF as a `file` content part, its data a data URL.
fn file(data: &str) -> Value {
    json!({"type": "file", "file": {
        "filename": DOCUMENT_FILENAME,
        "file_data": data_url("application/pdf", data),
    }})
}

fn input_audio(data: &str, format: &str) -> Value {
    json!({"type": "input_audio", "input_audio": {"data": data, "format": format}})
}

/// `input_audio`'s `format`: the API takes `wav` and `mp3` only.
fn audio_format(media_type: &str) -> Option<&'static str> {
    match media_type {
        "audio/wav" => Some("wav"),
        "audio/mpeg" => Some("mp3"),
        _ => None,
    }
}
