//! Provider request encoders: the JSON each route's API takes at each place content goes.
//!
//! Built so far: `anthropic` (Messages API) and `text-only`. The other routes arrive with the
//! host's inference loop.

use mcpl_lanes::markers;
use mcpl_lanes::{LiveCopy, Part, ToolResultCopies};
use serde_json::{Value, json};

/// The routes the command knows, built or not, as `--route` spells them.
pub const ROUTE_NAMES: &[&str] = &[
    "anthropic",
    "openai-chat",
    "openai-responses",
    "gemini",
    "text-only",
];

/// A tool result's live copy as the route's API takes it: for `anthropic`, the `content` array
/// of a `tool_result` block; for `text-only`, the text.
pub fn tool_result_live(route: &str, copies: &ToolResultCopies<'_>) -> Value {
    match (route, &copies.live) {
        ("anthropic", LiveCopy::Native(parts)) => anthropic_content(parts),
        ("anthropic", LiveCopy::Stored) => json!([{"type": "text", "text": copies.stored}]),
        (_, LiveCopy::Native(parts)) => Value::String(plain_text(parts)),
        (_, LiveCopy::Stored) => Value::String(copies.stored.clone()),
    }
}

/// A user message's content as the route's API takes it.
pub fn message_content(route: &str, parts: &[Part<'_>]) -> Value {
    match route {
        "anthropic" => anthropic_content(parts),
        _ => Value::String(plain_text(parts)),
    }
}

/// Anthropic content blocks: text, and base64 image sources. Anthropic takes no audio, and the
/// route says so, so lanes never give it audio; should one arrive, it is described as text.
fn anthropic_content(parts: &[Part<'_>]) -> Value {
    Value::Array(
        parts
            .iter()
            .map(|part| match part {
                Part::Text(text) => json!({"type": "text", "text": text}),
                Part::Image { media_type, data } => json!({
                    "type": "image",
                    "source": {"type": "base64", "media_type": media_type, "data": data},
                }),
                Part::Audio { media_type, data } => {
                    json!({"type": "text", "text": audio_description(media_type, data)})
                }
            })
            .collect(),
    )
}

/// Parts as one text, joined with `\n`, for a route that takes text only.
fn plain_text(parts: &[Part<'_>]) -> String {
    parts
        .iter()
        .map(|part| match part {
            Part::Text(text) => text.clone(),
            Part::Image { media_type, data } => format!(
                "[image: {media_type}, {}]",
                markers::size_label(decoded_len(data))
            ),
            Part::Audio { media_type, data } => audio_description(media_type, data),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn audio_description(media_type: &str, data: &str) -> String {
    markers::audio_line(media_type, decoded_len(data))
}

fn decoded_len(data: &str) -> u64 {
    mcpl_classify::Payload::new(data)
        .map_or(data.len() as u64 / 4 * 3, |payload| payload.decoded_len())
}
