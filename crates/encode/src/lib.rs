//! Provider request encoders: the JSON each route's API takes, for a whole request and at each
//! place content goes.
//!
//! One [`Encoder`] per route (the shapes and how they were checked are in
//! `docs/decisions/0013-provider-encoders.md`):
//!
//! - `anthropic`: the Messages API; a `tool_result`'s content holds text and base64 images.
//! - `openai-chat`: Chat Completions; a tool message is text only, so a result's images move
//!   into one labelled user message after the contiguous tool messages; user audio goes as
//!   `input_audio` (WAV and MP3).
//! - `openai-responses`: the Responses API; a `function_call_output` holds `input_text` and
//!   `input_image` items.
//! - `gemini`: `generateContent`; a `functionResponse` part, with the result's images as
//!   `inline_data` parts after the turn's function responses.
//! - `text-only`: the Messages API's shape with every content a string; images and audio are
//!   described in text.
//!
//! Encoding never fails: a part the route cannot take natively (audio in a tool result, an image
//! type the route does not list, anything on `text-only`) is described in text.
//!
//! ```
//! use mcpl_encode::conversation::{Content, Message, ModelRequest};
//! use mcpl_encode::Encoder;
//!
//! let messages = [Message::User(vec![Content::Text("hi".to_owned())])];
//! let request = ModelRequest {
//!     model: "gpt-5.4",
//!     system: "Be brief.",
//!     messages: &messages,
//!     tools: &[],
//!     max_tokens: 256,
//! };
//! let body = Encoder::OpenAiChat.request(&request);
//! assert_eq!(body["messages"][0]["role"], "system");
//! assert_eq!(body["messages"][1]["content"][0]["text"], "hi");
//! ```

pub mod conversation;

mod anthropic;
mod gemini;
mod openai_chat;
mod openai_responses;

use mcpl_budget::PricedRoute;
use mcpl_lanes::{LiveCopy, Part, ToolResultCopies, markers};
use serde_json::Value;

use crate::conversation::{Content, ModelRequest, ToolOutput};

/// The routes the command knows, as `--route` spells them (the order of [`Encoder::ALL`]).
pub const ROUTE_NAMES: &[&str] = &[
    "anthropic",
    "openai-chat",
    "openai-responses",
    "gemini",
    "text-only",
];

/// The text that opens the content a route moves a tool result's images into.
pub const MOVED_IMAGES_HEADER: &str = "Images from the tool results above:";

/// The line a tool result's text carries where one of its images was moved out: `n` counts the
/// result's moved images from 1.
pub fn moved_image_pointer(n: usize) -> String {
    format!("[image {n} of this result is shown after the tool results]")
}

/// The label before a moved image, naming the call it came from.
pub fn moved_image_label(n: usize, call_id: &str, tool: &str) -> String {
    format!("Image {n} of the result of call {call_id} ({tool}):")
}

/// An image the route does not take in that place (a type it does not list, or any image on a
/// text-only route), described in text.
pub fn image_not_sent(media_type: &str, data: &str) -> String {
    format!(
        "[image: {media_type}, {}; not sent: this route does not take it here]",
        markers::size_label(decoded_len(data))
    )
}

/// One encoder per route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoder {
    /// Anthropic's Messages API.
    Anthropic,
    /// OpenAI's Chat Completions API.
    OpenAiChat,
    /// OpenAI's Responses API.
    OpenAiResponses,
    /// Google's Gemini `generateContent`.
    Gemini,
    /// A text-only model, in the Messages API's shape.
    TextOnly,
}

impl Encoder {
    /// Every encoder, in the order of [`ROUTE_NAMES`] and `PricedRoute::ALL`.
    pub const ALL: [Encoder; 5] = [
        Encoder::Anthropic,
        Encoder::OpenAiChat,
        Encoder::OpenAiResponses,
        Encoder::Gemini,
        Encoder::TextOnly,
    ];

    /// The encoder of the route with that name.
    pub fn named(route: &str) -> Option<Encoder> {
        Encoder::ALL.into_iter().find(|e| e.name() == route)
    }

    /// The route's name.
    pub fn name(self) -> &'static str {
        self.route().lanes.name
    }

    /// What the route takes and how it prices images.
    pub fn route(self) -> &'static PricedRoute {
        match self {
            Encoder::Anthropic => &PricedRoute::ANTHROPIC,
            Encoder::OpenAiChat => &PricedRoute::OPENAI_CHAT,
            Encoder::OpenAiResponses => &PricedRoute::OPENAI_RESPONSES,
            Encoder::Gemini => &PricedRoute::GEMINI,
            Encoder::TextOnly => &PricedRoute::TEXT_ONLY,
        }
    }

    /// The whole request body the route's API takes. Gemini's body has no `model`: its model
    /// goes in the URL path.
    pub fn request(self, request: &ModelRequest<'_>) -> Value {
        match self {
            Encoder::Anthropic => anthropic::request(request, anthropic::Flavor::Native),
            Encoder::OpenAiChat => openai_chat::request(request),
            Encoder::OpenAiResponses => openai_responses::request(request),
            Encoder::Gemini => gemini::request(request),
            Encoder::TextOnly => anthropic::request(request, anthropic::Flavor::TextOnly),
        }
    }

    /// A tool result at its own place in the request: the `content` of an Anthropic
    /// `tool_result` block (a string on text-only), the `content` of an OpenAI tool message, the
    /// `output` of a `function_call_output`, or the parts a Gemini result adds to its user turn
    /// (its `functionResponse`, then its images).
    pub fn tool_result(self, output: &ToolOutput) -> Value {
        match self {
            Encoder::Anthropic => anthropic::tool_result_content(output, anthropic::Flavor::Native),
            Encoder::TextOnly => {
                anthropic::tool_result_content(output, anthropic::Flavor::TextOnly)
            }
            Encoder::OpenAiChat => {
                openai_chat::tool_message_content(output, &mut MovedImages::default())
            }
            Encoder::OpenAiResponses => openai_responses::output(output),
            Encoder::Gemini => {
                Value::Array(gemini::tool_results_parts(std::slice::from_ref(output)))
            }
        }
    }

    /// The content of the user message a route adds after contiguous tool results to carry
    /// their images (`openai-chat` only); `Null` where the route adds none.
    pub fn follow_up(self, outputs: &[ToolOutput]) -> Value {
        match self {
            Encoder::OpenAiChat => openai_chat::follow_up(outputs).unwrap_or(Value::Null),
            Encoder::Anthropic | Encoder::OpenAiResponses | Encoder::Gemini | Encoder::TextOnly => {
                Value::Null
            }
        }
    }

    /// A user message's content: content blocks (Anthropic), content parts (OpenAI), parts
    /// (Gemini), or one string (text-only).
    pub fn message_content(self, content: &[Content]) -> Value {
        match self {
            Encoder::Anthropic => anthropic::content_blocks(content, self.route()),
            Encoder::OpenAiChat => openai_chat::user_content(content),
            Encoder::OpenAiResponses => openai_responses::user_content(content),
            Encoder::Gemini => Value::Array(gemini::parts(content)),
            Encoder::TextOnly => Value::String(plain_text(content)),
        }
    }
}

/// The request body for the named route; a name no route has gets the text-only body, which
/// every Messages-shaped API takes.
pub fn request(route: &str, request: &ModelRequest<'_>) -> Value {
    Encoder::named(route)
        .unwrap_or(Encoder::TextOnly)
        .request(request)
}

/// The name `mcpl project` gives the tool call a result answers, where a route's shape names
/// one (the command projects a result without a call).
pub const PROJECT_CALL_ID: &str = "call_1";

/// The tool name `mcpl project` gives that call.
pub const PROJECT_TOOL_NAME: &str = "tool";

/// A tool result's copies as the conversation holds them on the round it lands, answering
/// `mcpl project`'s call.
pub fn project_output(copies: &ToolResultCopies<'_>) -> ToolOutput {
    ToolOutput {
        call_id: PROJECT_CALL_ID.to_owned(),
        name: PROJECT_TOOL_NAME.to_owned(),
        stored: copies.stored.clone(),
        live: match &copies.live {
            LiveCopy::Native(parts) => Some(parts.iter().map(Content::from_part).collect()),
            LiveCopy::Stored => None,
        },
        is_error: copies.is_error,
    }
}

/// A tool result's live copy as the named route takes it at its place (see
/// [`Encoder::tool_result`]); an unknown route gets the text-only form.
pub fn tool_result_live(route: &str, copies: &ToolResultCopies<'_>) -> Value {
    encoder_or_text(route).tool_result(&project_output(copies))
}

/// The user message content the named route moves a tool result's images into, or `Null`.
pub fn follow_up(route: &str, copies: &ToolResultCopies<'_>) -> Value {
    encoder_or_text(route).follow_up(std::slice::from_ref(&project_output(copies)))
}

/// A user message's content as the named route's API takes it; an unknown route gets text.
pub fn message_content(route: &str, parts: &[Part<'_>]) -> Value {
    let content: Vec<Content> = parts.iter().map(Content::from_part).collect();
    encoder_or_text(route).message_content(&content)
}

fn encoder_or_text(route: &str) -> Encoder {
    Encoder::named(route).unwrap_or(Encoder::TextOnly)
}

/// Whether the route takes an image of this media type natively in a user message.
fn takes_image(route: &PricedRoute, media_type: &str) -> bool {
    route.lanes.images_in_messages
        && route
            .lanes
            .image_types
            .iter()
            .any(|t| t.mime() == media_type)
}

/// Whether the route takes an image of this media type natively in a tool result (directly or
/// moved after it).
fn takes_tool_image(route: &PricedRoute, media_type: &str) -> bool {
    route.lanes.images_in_tool_results && takes_image(route, media_type)
}

/// Whether a user message on the route takes audio of this media type natively.
fn takes_audio(route: &PricedRoute, media_type: &str) -> bool {
    route
        .lanes
        .audio_in_messages
        .iter()
        .any(|t| t.mime() == media_type)
}

/// A base64 image as a data URL.
fn data_url(media_type: &str, data: &str) -> String {
    format!("data:{media_type};base64,{data}")
}

/// Content as one text, joined with `\n`, images and audio described.
fn plain_text(content: &[Content]) -> String {
    content
        .iter()
        .map(|part| match part {
            Content::Text(text) => text.clone(),
            Content::Image { media_type, data } => image_not_sent(media_type, data),
            Content::Audio { media_type, data } => audio_description(media_type, data),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Audio a route does not take at that place, as the stored copy words it.
fn audio_description(media_type: &str, data: &str) -> String {
    markers::audio_line(media_type, decoded_len(data))
}

fn decoded_len(data: &str) -> u64 {
    mcpl_classify::Payload::new(data)
        .map_or(data.len() as u64 / 4 * 3, |payload| payload.decoded_len())
}

/// A tool result's images moved out of it, in order, with what their labels name.
#[derive(Debug, Default)]
struct MovedImages<'o> {
    images: Vec<MovedImage<'o>>,
}

#[derive(Debug)]
struct MovedImage<'o> {
    n: usize,
    call_id: &'o str,
    tool: &'o str,
    media_type: &'o str,
    data: &'o str,
}

impl<'o> MovedImages<'o> {
    /// The result's text with each moved image replaced by its pointer line; `take` says which
    /// images the route moves.
    fn text_of(
        &mut self,
        output: &'o ToolOutput,
        mut take: impl FnMut(&str) -> bool,
    ) -> Option<String> {
        let parts = output.live.as_ref()?;
        let mut n = 0;
        let lines: Vec<String> = parts
            .iter()
            .map(|part| match part {
                Content::Text(text) => text.clone(),
                Content::Image { media_type, data } if take(media_type) => {
                    n += 1;
                    self.images.push(MovedImage {
                        n,
                        call_id: &output.call_id,
                        tool: &output.name,
                        media_type,
                        data,
                    });
                    moved_image_pointer(n)
                }
                Content::Image { media_type, data } => image_not_sent(media_type, data),
                Content::Audio { media_type, data } => audio_description(media_type, data),
            })
            .collect();
        Some(lines.join("\n"))
    }

    /// The header, then each image after its label, each as the route encodes a text and an
    /// image; nothing when no image moved.
    fn encode(
        &self,
        text: impl Fn(String) -> Value,
        image: impl Fn(&str, &str) -> Value,
    ) -> Vec<Value> {
        if self.images.is_empty() {
            return Vec::new();
        }
        let mut out = vec![text(MOVED_IMAGES_HEADER.to_owned())];
        for moved in &self.images {
            out.push(text(moved_image_label(moved.n, moved.call_id, moved.tool)));
            out.push(image(moved.media_type, moved.data));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoders_routes_and_names_agree() {
        let names: Vec<&str> = Encoder::ALL.iter().map(|e| e.name()).collect();
        assert_eq!(names, ROUTE_NAMES);
        let priced: Vec<&str> = PricedRoute::ALL.iter().map(|r| r.lanes.name).collect();
        assert_eq!(names, priced);
        for encoder in Encoder::ALL {
            assert_eq!(Encoder::named(encoder.name()), Some(encoder));
        }
    }

    #[test]
    fn an_unknown_route_gets_text() {
        let parts = [Part::Image {
            media_type: "image/png",
            data: "iVBORw0KGgo=",
        }];
        assert_eq!(
            message_content("nowhere", &parts),
            Value::String(
                "[image: image/png, 8B; not sent: this route does not take it here]".to_owned()
            )
        );
    }
}
