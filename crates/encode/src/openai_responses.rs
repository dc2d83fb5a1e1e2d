//! OpenAI's Responses API (`POST /v1/responses`).
//!
//! Tool calls and results are `input` items of their own (`function_call`,
//! `function_call_output`); a result's `output` is its text, or a list of `input_text` and
//! `input_image` items when an image goes with it. The API takes no audio input.

use mcpl_budget::PricedRoute;
use mcpl_classify::Sniffed;
use serde_json::{Map, Value, json};

use super::{
    DOCUMENT_FILENAME, ImageDetail, audio_description, data_url, document_not_sent, image_not_sent,
    takes_document, takes_image, takes_tool_image,
};
use crate::conversation::{Content, Message, ModelRequest, ToolOutput};

const ROUTE: &PricedRoute = &PricedRoute::OPENAI_RESPONSES;

/// `{model, instructions, input, tools, max_output_tokens}`; `instructions` and `tools` only
/// when there are any. Function tools are sent with `strict: false`: the API's default is
/// strict, which refuses the optional properties most MCP tools' schemas have.
pub(super) fn request(request: &ModelRequest<'_>, detail: ImageDetail) -> Value {
    let mut input = Vec::new();
    for message in request.messages {
        match message {
            Message::User(content) => {
                input.push(json!({"role": "user", "content": user_content(content, detail)}));
            }
            Message::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    input.push(json!({"role": "assistant", "content": text}));
                }
                input.extend(tool_calls.iter().map(|call| {
                    json!({
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": call.arguments_object().to_string(),
                    })
                }));
            }
            Message::ToolResults(outputs) => {
                input.extend(outputs.iter().map(|result| {
                    json!({
                        "type": "function_call_output",
                        "call_id": result.call_id,
                        "output": output(result, detail),
                    })
                }));
            }
        }
    }
    let mut body = Map::new();
    body.insert("model".to_owned(), json!(request.model));
    if !request.system.is_empty() {
        body.insert("instructions".to_owned(), json!(request.system));
    }
    body.insert("input".to_owned(), Value::Array(input));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.input_schema,
                    "strict": false,
                })
            })
            .collect();
        body.insert("tools".to_owned(), Value::Array(tools));
    }
    body.insert("max_output_tokens".to_owned(), json!(request.max_tokens));
    Value::Object(body)
}

/// A `function_call_output`'s `output`: the stored copy as a string, or the live parts as
/// `input_text`, `input_image` and `input_file` (a PDF) items.
pub(super) fn output(output: &ToolOutput, detail: ImageDetail) -> Value {
    match &output.live {
        None => Value::String(output.stored.clone()),
        Some(parts) => items(parts, detail, |sniffed| takes_tool_image(ROUTE, sniffed)),
    }
}

/// A user message's content: `input_text` and `input_image` items.
pub(super) fn user_content(content: &[Content], detail: ImageDetail) -> Value {
    items(content, detail, |sniffed| takes_image(ROUTE, sniffed))
}

fn items(content: &[Content], detail: ImageDetail, takes: impl Fn(Sniffed) -> bool) -> Value {
    Value::Array(
        content
            .iter()
            .map(|part| match part {
                Content::Text(text) => input_text(text),
                // `detail` defaults to `auto`; it is sent because some of the API's own type
                // definitions mark it required.
                Content::Image {
                    sniffed,
                    data,
                    dimensions,
                } if takes(*sniffed) => json!({
                    "type": "input_image",
                    "image_url": data_url(sniffed.mime(), data),
                    "detail": detail.of(Some(*dimensions)),
                }),
                Content::Image { sniffed, data, .. } => {
                    input_text(&image_not_sent(sniffed.mime(), data))
                }
                Content::Audio { sniffed, data } => {
                    input_text(&audio_description(sniffed.mime(), data))
                }
                Content::Document { data, .. } if takes_document(ROUTE) => json!({
                    "type": "input_file",
                    "filename": DOCUMENT_FILENAME,
                    "file_data": data_url("application/pdf", data),
                }),
                Content::Document { data, .. } => input_text(&document_not_sent(data)),
            })
            .collect(),
    )
}

fn input_text(text: &str) -> Value {
    json!({"type": "input_text", "text": text})
}
