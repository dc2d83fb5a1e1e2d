//! Google's Gemini API (`POST /v1beta/models/<model>:generateContent`).
//!
//! A tool result is a `functionResponse` part (`response: {"output": ...}`, or `{"error": ...}`
//! for a result the server marked an error). Its images follow the turn's function responses as
//! `inline_data` parts of the same user turn, labelled with their call: every Gemini model takes
//! that, while images inside a `functionResponse` are Gemini 3 only. Field names are the REST
//! API's camelCase, except `inline_data` and `mime_type`, spelled as the API's own REST examples
//! and the project's design input spell them (the API reads either spelling). Tool schemas go as
//! `parametersJsonSchema`, which takes JSON Schema as MCP servers write it. A `functionCall`
//! carries the call's `id` and its `functionResponse` the same `id`; the `thoughtSignature` the
//! model returned on a `functionCall` part goes back on that part exactly.

use mcpl_budget::PricedRoute;
use serde_json::{Map, Value, json};

use super::{
    MovedImage, MovedImages, Moves, audio_description, document_not_sent, image_not_sent,
    takes_audio, takes_document, takes_image,
};
use crate::conversation::{Content, Message, ModelRequest, ToolCall, ToolOutput};

const ROUTE: &PricedRoute = &PricedRoute::GEMINI;

/// `{systemInstruction, contents, tools, generationConfig: {maxOutputTokens}}`; the model is in
/// the URL, not the body.
pub(super) fn request(request: &ModelRequest<'_>) -> Value {
    let contents: Vec<Value> = request
        .messages
        .iter()
        .map(|message| match message {
            Message::User(content) => json!({"role": "user", "parts": parts(content)}),
            Message::Assistant { text, tool_calls } => {
                let mut model_parts = Vec::new();
                if !text.is_empty() || tool_calls.is_empty() {
                    model_parts.push(json!({"text": text}));
                }
                model_parts.extend(tool_calls.iter().map(function_call_part));
                json!({"role": "model", "parts": model_parts})
            }
            Message::ToolResults(outputs) => {
                json!({"role": "user", "parts": tool_results_parts(outputs)})
            }
        })
        .collect();
    let mut body = Map::new();
    if !request.system.is_empty() {
        body.insert(
            "systemInstruction".to_owned(),
            json!({"parts": [{"text": request.system}]}),
        );
    }
    body.insert("contents".to_owned(), Value::Array(contents));
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "parametersJsonSchema": tool.input_schema,
                })
            })
            .collect();
        body.insert(
            "tools".to_owned(),
            json!([{"functionDeclarations": declarations}]),
        );
    }
    body.insert(
        "generationConfig".to_owned(),
        json!({"maxOutputTokens": request.max_tokens}),
    );
    Value::Object(body)
}

/// A `functionCall` part with the call's id, and the `thoughtSignature` the model returned on
/// it, byte for byte (Gemini 3 answers a conversation that drops it with a 4xx).
fn function_call_part(call: &ToolCall) -> Value {
    let mut part = json!({"functionCall": {"id": call.id, "name": call.name, "args": call.arguments_object()}});
    if let (Some(signature), Some(object)) = (&call.signature, part.as_object_mut()) {
        object.insert(
            "thoughtSignature".to_owned(),
            Value::String(signature.clone()),
        );
    }
    part
}

/// The parts contiguous tool results make: each result's `functionResponse` in call order, then
/// the results' images, labelled.
pub(super) fn tool_results_parts(outputs: &[ToolOutput]) -> Vec<Value> {
    let mut moved = MovedImages::default();
    let mut out: Vec<Value> = outputs
        .iter()
        .map(|output| {
            let text = moved
                .text_of(output, Moves::media(ROUTE))
                .unwrap_or_else(|| output.stored.clone());
            let key = if output.is_error { "error" } else { "output" };
            json!({"functionResponse": {
                "id": output.call_id,
                "name": output.name,
                "response": {key: text},
            }})
        })
        .collect();
    out.extend(moved.encode(
        |text| json!({"text": text}),
        |item: &MovedImage<'_>| inline_data(gemini_audio_type(item.media_type), item.data),
    ));
    out
}

/// A user turn's parts: `text`, and `inline_data` for the images and audio the route takes.
pub(super) fn parts(content: &[Content]) -> Vec<Value> {
    content
        .iter()
        .map(|part| match part {
            Content::Text(text) => json!({"text": text}),
            Content::Image { sniffed, data, .. } if takes_image(ROUTE, *sniffed) => {
                inline_data(sniffed.mime(), data)
            }
            Content::Image { sniffed, data, .. } => {
                json!({"text": image_not_sent(sniffed.mime(), data)})
            }
            Content::Audio { sniffed, data } if takes_audio(ROUTE, *sniffed) => {
                inline_data(gemini_audio_type(sniffed.mime()), data)
            }
            Content::Audio { sniffed, data } => {
                json!({"text": audio_description(sniffed.mime(), data)})
            }
            Content::Document { data, .. } if takes_document(ROUTE) => {
                inline_data("application/pdf", data)
            }
            Content::Document { data, .. } => json!({"text": document_not_sent(data)}),
        })
        .collect()
}

fn inline_data(media_type: &str, data: &str) -> Value {
    json!({"inline_data": {"mime_type": media_type, "data": data}})
}

/// Gemini lists MP3 as `audio/mp3`, not the registered `audio/mpeg`.
fn gemini_audio_type(media_type: &str) -> &str {
    match media_type {
        "audio/mpeg" => "audio/mp3",
        other => other,
    }
}
