//! A provider-neutral conversation: what the inference loop keeps between rounds, and what
//! every route's encoder turns into the JSON its API takes.
//!
//! The loop owns the messages. A tool result enters as its stored copy plus, on the round it
//! lands, its live copy; once that round's request is sent the loop drops the live copy, so
//! history carries the stored copy only (decision: live copies are sent once).

use mcpl_classify::{Dimensions, Sniffed};
use mcpl_lanes::Part;
use serde_json::Value;

/// One thing shown to a model: text, or native media where the route takes it. Native media
/// keeps what classification learnt of its bytes, as the lane's [`Part`] carried it, so neither
/// pricing nor encoding reads the payload again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Text.
    Text(String),
    /// A native image: what its bytes are, its size, and its base64.
    Image {
        /// PNG, JPEG, GIF or WebP, as the bytes say.
        sniffed: Sniffed,
        /// The size in pixels, as the image's header records it.
        dimensions: Dimensions,
        /// The base64 data.
        data: String,
    },
    /// Native audio: what its bytes are, and its base64.
    Audio {
        /// WAV, MP3, ..., as the bytes say.
        sniffed: Sniffed,
        /// The base64 data.
        data: String,
    },
    /// A native PDF: its pages as counted, and its base64.
    Document {
        /// The pages `lopdf` counted.
        pages: u32,
        /// The base64 data.
        data: String,
    },
}

impl Content {
    /// The owned content of one part a lane produced.
    pub fn from_part(part: &Part<'_>) -> Content {
        match part {
            Part::Text(text) => Content::Text(text.clone()),
            Part::Image {
                sniffed,
                dimensions,
                data,
            } => Content::Image {
                sniffed: *sniffed,
                dimensions: *dimensions,
                data: (*data).to_owned(),
            },
            Part::Audio { sniffed, data } => Content::Audio {
                sniffed: *sniffed,
                data: (*data).to_owned(),
            },
            Part::Document { pages, data } => Content::Document {
                pages: *pages,
                data: (*data).to_owned(),
            },
        }
    }

    /// The lane part this content is, borrowing its data (for pricing).
    pub fn as_part(&self) -> Part<'_> {
        match self {
            Content::Text(text) => Part::Text(text.clone()),
            Content::Image {
                sniffed,
                dimensions,
                data,
            } => Part::Image {
                sniffed: *sniffed,
                dimensions: *dimensions,
                data,
            },
            Content::Audio { sniffed, data } => Part::Audio {
                sniffed: *sniffed,
                data,
            },
            Content::Document { pages, data } => Part::Document {
                pages: *pages,
                data,
            },
        }
    }
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCall {
    /// The call's id, as the model gave it (or as the loop made it for a model that gives none).
    pub id: String,
    /// The tool's model-facing name (see [`model_tool_name`]).
    pub name: String,
    /// The arguments object.
    pub arguments: Value,
    /// The opaque signature the model returned with the call (Gemini's `thoughtSignature`),
    /// sent back exactly on the same part in later requests; `None` when it gave none.
    pub signature: Option<String>,
}

impl ToolCall {
    /// A call `id` of the tool the model knows as `name`, with `arguments` and no signature.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            signature: None,
        }
    }

    /// The same call, carrying the signature the model returned with it.
    pub fn with_signature(self, signature: Option<String>) -> ToolCall {
        ToolCall { signature, ..self }
    }

    /// The arguments as an object for the routes that take only an object: arguments the model
    /// wrote that are not one (its mistake, answered with an error result) go back as `{}`.
    pub fn arguments_object(&self) -> Value {
        if self.arguments.is_object() {
            self.arguments.clone()
        } else {
            Value::Object(serde_json::Map::new())
        }
    }
}

/// One tool result as the conversation holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolOutput {
    /// The id of the call it answers.
    pub call_id: String,
    /// The tool's model-facing name.
    pub name: String,
    /// The stored copy: the text kept in history.
    pub stored: String,
    /// The live copy when at least one part goes native on the round the result lands; `None`
    /// sends the stored copy.
    pub live: Option<Vec<Content>>,
    /// Whether the server marked the result an error.
    pub is_error: bool,
}

impl ToolOutput {
    /// The result of call `call_id` to the tool the model knows as `name`, shown as the text
    /// `stored` on every round, not an error.
    pub fn new(
        call_id: impl Into<String>,
        name: impl Into<String>,
        stored: impl Into<String>,
    ) -> ToolOutput {
        ToolOutput {
            call_id: call_id.into(),
            name: name.into(),
            stored: stored.into(),
            live: None,
            is_error: false,
        }
    }

    /// The same result, sent as `live` on the round it lands.
    pub fn with_live(self, live: Vec<Content>) -> ToolOutput {
        ToolOutput {
            live: Some(live),
            ..self
        }
    }

    /// The same result, marked an error by its server or not.
    pub fn with_error(self, is_error: bool) -> ToolOutput {
        ToolOutput { is_error, ..self }
    }

    /// A tool result's copies, as a lane made and fitted them, answering the call `call_id` to
    /// the tool the model knows as `name`: the live copy's parts, or the stored copy alone when
    /// none goes native.
    pub fn from_copies(
        call_id: impl Into<String>,
        name: impl Into<String>,
        copies: &mcpl_lanes::ToolResultCopies<'_>,
    ) -> ToolOutput {
        ToolOutput {
            call_id: call_id.into(),
            name: name.into(),
            stored: copies.stored.clone().into_owned(),
            live: match &copies.live {
                mcpl_lanes::LiveCopy::Native(parts) => {
                    Some(parts.iter().map(Content::from_part).collect())
                }
                mcpl_lanes::LiveCopy::Stored => None,
            },
            is_error: copies.is_error,
        }
    }
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A user message: the user's text, a push event, a channel message, an injection.
    User(Vec<Content>),
    /// An assistant turn: its text and the tool calls it made, in order.
    Assistant {
        /// The turn's text; empty when it made only tool calls.
        text: String,
        /// The tool calls.
        tool_calls: Vec<ToolCall>,
    },
    /// The results of the previous assistant turn's tool calls, in the calls' order.
    ToolResults(Vec<ToolOutput>),
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolSpec {
    /// The model-facing name.
    pub name: String,
    /// What the tool does.
    pub description: String,
    /// The JSON Schema of its arguments (an object schema).
    pub input_schema: Value,
}

impl ToolSpec {
    /// The tool the model knows as `name`, doing what `description` says, its arguments
    /// described by `input_schema`.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema,
        }
    }
}

/// Everything one provider request holds, before a route encodes it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ModelRequest<'c> {
    /// The provider's model name.
    pub model: &'c str,
    /// The system prompt, system-position injections appended.
    pub system: &'c str,
    /// The messages, in order (user-position injections already placed).
    pub messages: &'c [Message],
    /// The tools offered.
    pub tools: &'c [ToolSpec],
    /// The most tokens the model may answer with.
    pub max_tokens: u32,
}

impl<'c> ModelRequest<'c> {
    /// A request to `model` with the `system` prompt, the `messages` and the `tools`, its
    /// answer at most `max_tokens` tokens.
    pub fn new(
        model: &'c str,
        system: &'c str,
        messages: &'c [Message],
        tools: &'c [ToolSpec],
        max_tokens: u32,
    ) -> ModelRequest<'c> {
        ModelRequest {
            model,
            system,
            messages,
            tools,
            max_tokens,
        }
    }
}

/// The model-facing name of a server's tool: `<server>__<tool>`, every character outside
/// `[A-Za-z0-9_-]` replaced by `_`, `_` before it when it would start with a digit or `-`
/// (Gemini wants a letter or `_` first), at most 64 characters (what Anthropic, OpenAI and
/// Gemini all accept). The loop keeps the map back to the server and tool.
pub fn model_tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let mut name = format!("{}__{}", clean(server), clean(tool));
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        name.insert(0, '_');
    }
    name.truncate(64);
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_what_providers_accept() {
        assert_eq!(
            model_tool_name("demo", "get-tiny-image"),
            "demo__get-tiny-image"
        );
        assert_eq!(model_tool_name("my server", "a.b/c"), "my_server__a_b_c");
        assert_eq!(model_tool_name(&"s".repeat(50), &"t".repeat(50)).len(), 64);
    }

    #[test]
    fn parts_round_trip() {
        let part = Part::Image {
            sniffed: Sniffed::Png,
            dimensions: Dimensions {
                width: 16,
                height: 12,
            },
            data: "iVBO",
        };
        let content = Content::from_part(&part);
        assert_eq!(content.as_part(), part);
    }
}

/// One assistant turn.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Turn {
    /// The turn's text.
    pub text: String,
    /// The tool calls it makes; none ends the loop.
    pub tool_calls: Vec<ToolCall>,
    /// The tokens the provider reported for this turn; `None` when it reported none (a
    /// scripted model).
    pub usage: Option<Usage>,
}

impl Turn {
    /// A turn of `text` making `tool_calls`, with no usage reported.
    pub fn new(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Turn {
        Turn {
            text: text.into(),
            tool_calls,
            usage: None,
        }
    }

    /// The same turn, with the usage the provider reported.
    pub fn with_usage(self, usage: Usage) -> Turn {
        Turn {
            usage: Some(usage),
            ..self
        }
    }
}

/// The token counts a provider reports with an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Usage {
    /// The request's tokens, as the provider counted them (Anthropic counts the cached ones
    /// apart, in the two fields below; OpenAI and Gemini count them here too).
    pub input_tokens: u64,
    /// The answer's tokens.
    pub output_tokens: u64,
    /// The request's tokens read from the provider's prompt cache: Anthropic's
    /// `cache_read_input_tokens`, OpenAI's `cached_tokens`, Gemini's `cachedContentTokenCount`.
    pub cache_read_tokens: u64,
    /// The request's tokens written to the prompt cache: Anthropic's
    /// `cache_creation_input_tokens` (OpenAI and Gemini cache implicitly and report none).
    pub cache_write_tokens: u64,
}

impl Usage {
    /// `input_tokens` read and `output_tokens` written, none of them cached.
    pub const fn new(input_tokens: u64, output_tokens: u64) -> Usage {
        Usage {
            input_tokens,
            output_tokens,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        }
    }

    /// The same counts, with `read` of the input tokens read from the prompt cache and `write`
    /// written to it.
    pub const fn with_cache(self, read: u64, write: u64) -> Usage {
        Usage {
            cache_read_tokens: read,
            cache_write_tokens: write,
            ..self
        }
    }

    /// Adds another answer's counts to these.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
    }
}
