//! Provider request encoders: the JSON each route's API takes, for a whole request and at each
//! place content goes.
//!
//! A host that holds an `mcpl_session::Session` does all of this in three names. Without one,
//! the smallest host code, from a tool result as the server sent it (the JSON rmcp's
//! `CallToolResult` serialises to) to the content of Anthropic's `tool_result` block, within a
//! budget of 1,000 tokens:
//!
//! ```
//! use mcpl_budget::{Bound, Pricer, fit_tool_result};
//! use mcpl_encode::conversation::ToolOutput;
//! use mcpl_encode::Encoder;
//! use mcpl_lanes::{
//!     ImageLedger, Projector, Registry, RouteId, ServerName, ResultView, ToolResult, UriPolicy,
//! };
//! use serde_json::json;
//!
//! let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==";
//! let result = json!({"content": [
//!     {"type": "text", "text": "The chart:"},
//!     {"type": "image", "data": png, "mimeType": "image/png"},
//! ], "isError": false});
//!
//! let (mut registry, mut ledger) = (Registry::new(), ImageLedger::new());
//! let anthropic = Encoder::new(RouteId::Anthropic);
//! let (server, route) = (ServerName::new("charts"), anthropic.route());
//! let mut lanes = Projector::new(
//!     &mut registry,
//!     &mut ledger,
//!     &route.lanes,
//!     &server,
//!     UriPolicy::Hidden,
//! );
//! let pricer = Pricer::new(&Bound, route);
//! let read = ResultView::of_value(&result);
//! let fitted = fit_tool_result(&mut lanes, &ToolResult::from_view(&read), pricer, 1_000, None);
//! assert!(fitted.price.is_some_and(|tokens| tokens <= 1_000));
//!
//! let output = ToolOutput::from_copies("toolu_1", "chart", &fitted.copies);
//! assert_eq!(anthropic.tool_result(&output), json!([
//!     {"type": "text", "text": "The chart:"},
//!     {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
//! ]));
//! ```
//!
//! [`conversation`] holds what a host keeps between rounds: [`conversation::Message`]s of
//! [`conversation::Content`], a result's [`conversation::ToolOutput`] (its stored copy, and its
//! live copy on the round it lands) and the [`conversation::ModelRequest`] an encoder reads. One
//! [`Encoder`] per route writes a whole request body ([`Encoder::request`]) or one place in it
//! ([`Encoder::tool_result`], [`Encoder::follow_up`], [`Encoder::message_content`]); the shapes
//! and how they were checked are in `docs/decisions/0013-provider-encoders.md`. There is one
//! encoder per [`RouteId`]:
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
//! type the route does not list, anything on `text-only`) is described in text. The crate does no
//! I/O: values in, [`serde_json::Value`] out.
//!
//! ```
//! use mcpl_encode::conversation::{Content, Message, ModelRequest};
//! use mcpl_encode::Encoder;
//! use mcpl_lanes::RouteId;
//!
//! let messages = [Message::User(vec![Content::Text("hi".to_owned())])];
//! let request = ModelRequest::new("gpt-5.4", "Be brief.", &messages, &[], 256);
//! let body = Encoder::new(RouteId::OpenAiChat).request(&request);
//! assert_eq!(body["messages"][0]["role"], "system");
//! assert_eq!(body["messages"][1]["content"][0]["text"], "hi");
//! ```

pub mod conversation;
pub mod decode;
pub mod tools;
pub mod validate;
pub mod window;

mod anthropic;
mod gemini;
mod limits;
mod openai_chat;
mod openai_responses;

use std::borrow::Cow;

use mcpl_budget::PricedRoute;
use mcpl_classify::Sniffed;
use mcpl_lanes::{Part, RequestLimits, RouteId, markers};
use serde_json::Value;

pub use limits::{
    LimitHit, LimitTexts, audio_limit_notice, document_limit_notice, is_animated,
    request_limit_notice,
};

use crate::conversation::{Content, Message, ModelRequest, ToolOutput};

/// The text that opens the content a route moves a tool result's images into.
pub(crate) const MOVED_IMAGES_HEADER: &str = "Images from the tool results above:";

/// The text that opens that content when it carries documents or audio too.
pub(crate) const MOVED_MEDIA_HEADER: &str =
    "Images, documents and audio from the tool results above:";

/// The file name a native PDF goes under where a route's shape asks for one.
pub(crate) const DOCUMENT_FILENAME: &str = "document.pdf";

/// The line a tool result's text carries where its `n`th document or audio (`kind`) was moved
/// out.
pub(crate) fn moved_media_pointer(kind: &str, n: usize) -> String {
    format!("[{kind} {n} of this result is shown after the tool results]")
}

/// The label before a moved document or audio, naming the call it came from.
pub(crate) fn moved_media_label(kind: &str, n: usize, call_id: &str, tool: &str) -> String {
    let mut label = format!("{kind} {n} of the result of call {call_id} ({tool}):");
    label[..1].make_ascii_uppercase();
    label
}

/// A PDF a route does not take at that place, described in text.
pub(crate) fn document_not_sent(data: &str) -> String {
    format!(
        "[document: application/pdf, {}; not sent: this route does not take it here]",
        markers::size_label(decoded_len(data))
    )
}

/// The line a tool result's text carries where one of its images was moved out: `n` counts the
/// result's moved images from 1.
pub(crate) fn moved_image_pointer(n: usize) -> String {
    format!("[image {n} of this result is shown after the tool results]")
}

/// The label before a moved image, naming the call it came from.
pub(crate) fn moved_image_label(n: usize, call_id: &str, tool: &str) -> String {
    format!("Image {n} of the result of call {call_id} ({tool}):")
}

/// An image the route does not take in that place (a type it does not list, or any image on a
/// text-only route), described in text.
pub(crate) fn image_not_sent(media_type: &str, data: &str) -> String {
    format!(
        "[image: {media_type}, {}; not sent: this route does not take it here]",
        markers::size_label(decoded_len(data))
    )
}

/// One encoder per route: the JSON the route's API takes, for a whole request and at each
/// place content goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoder {
    route: RouteId,
    limits: RequestLimits,
    scaling: bool,
    detail: ImageDetail,
}

impl From<RouteId> for Encoder {
    fn from(route: RouteId) -> Encoder {
        Encoder::new(route)
    }
}

impl Encoder {
    /// The encoder of a route.
    pub const fn new(route: RouteId) -> Encoder {
        Encoder {
            route,
            limits: route.request_limits(),
            scaling: true,
            detail: ImageDetail::Auto,
        }
    }

    /// The same encoder with image scaling on or off (on by default): off, an image over a
    /// per-image limit or the many-images side is left out with its notice instead of scaled.
    pub const fn with_scaling(self, scaling: bool) -> Encoder {
        Encoder { scaling, ..self }
    }

    /// The same encoder sending OpenAI images at another `detail` (see [`ImageDetail`]).
    pub const fn with_image_detail(self, detail: ImageDetail) -> Encoder {
        Encoder { detail, ..self }
    }

    /// The same encoder held to other request limits (a route setting: Anthropic's direct API
    /// takes 10 MB of base64 per image, larger-window models more images).
    pub const fn with_limits(self, limits: RequestLimits) -> Encoder {
        Encoder { limits, ..self }
    }

    /// The request limits it holds every request to.
    pub const fn limits(self) -> RequestLimits {
        self.limits
    }

    /// The route it encodes for.
    pub const fn id(self) -> RouteId {
        self.route
    }

    /// What the route takes and how it prices images.
    pub const fn route(self) -> &'static PricedRoute {
        PricedRoute::of(self.route)
    }

    /// The whole request body the route's API takes, within the route's [`RequestLimits`].
    /// Gemini's body has no `model`: its model goes in the URL path.
    ///
    /// The whole request is checked as it is assembled: an image over the per-side cap, the
    /// per-image base64 or the many-images side, or an animated GIF on a route that takes none,
    /// is scaled to fit (`mcpl-scale`) and goes with a notice after it. An image that would
    /// still take the request over a limit (the latest message's images keep priority, then
    /// call order) goes as its stored placeholder with [`request_limit_notice`] after it. A body still over the route's size
    /// sheds its lowest-priority images until it fits or has none left.
    pub fn request(self, request: &ModelRequest<'_>) -> Value {
        let mut decision = limits::decide(request.messages, self.route, &self.limits, self.scaling);
        loop {
            let messages = decision.apply(request.messages);
            let body = self.encode(&ModelRequest {
                messages: &messages,
                ..*request
            });
            let Some(max) = self.limits.body_bytes else {
                return body;
            };
            let len = body_len(&body);
            if len <= max || !decision.shed(len - max, max) {
                return body;
            }
        }
    }

    /// As [`Encoder::request`], with the body checked by [`validate::validate`] as it is
    /// sent: each block or tool the route's API would refuse is repaired (a block becomes a
    /// text marker saying why, a tool is left out), and a line says what was done. The body's
    /// size is left to the caller, which knows what may be cleared.
    pub fn checked_request(self, request: &ModelRequest<'_>) -> (Value, Vec<String>) {
        let mut body = self.request(request);
        let violations = validate::validate(self.route, &self.limits, &body);
        let repaired = validate::repair(self.route, &mut body, &violations);
        (body, repaired)
    }

    /// The messages as [`Encoder::request`] carries them, before the body limit: every image
    /// over a per-image limit, the many-images side or an animated GIF scaled to fit (with the
    /// notice after it), and every image, audio or document over a request limit as its
    /// placeholder with the notice; borrowed when nothing changes. A host prices these, so the
    /// dimensions it prices are the ones sent; encoding them again changes nothing more.
    pub fn within_limits<'m>(self, messages: &'m [Message]) -> Cow<'m, [Message]> {
        limits::decide(messages, self.route, &self.limits, self.scaling).apply(messages)
    }

    fn encode(self, request: &ModelRequest<'_>) -> Value {
        match self.route {
            RouteId::Anthropic => anthropic::request(request, anthropic::Flavor::Native),
            RouteId::OpenAiChat => openai_chat::request(request, self.detail),
            RouteId::OpenAiResponses => openai_responses::request(request, self.detail),
            RouteId::Gemini => gemini::request(request),
            RouteId::TextOnly => anthropic::request(request, anthropic::Flavor::TextOnly),
        }
    }

    /// A tool result at its own place in the request: the `content` of an Anthropic
    /// `tool_result` block (a string on text-only), the `content` of an OpenAI tool message, the
    /// `output` of a `function_call_output`, or the parts a Gemini result adds to its user turn
    /// (its `functionResponse`, then its images).
    pub fn tool_result(self, output: &ToolOutput) -> Value {
        match self.route {
            RouteId::Anthropic => anthropic::tool_result_content(output, anthropic::Flavor::Native),
            RouteId::TextOnly => {
                anthropic::tool_result_content(output, anthropic::Flavor::TextOnly)
            }
            RouteId::OpenAiChat => {
                openai_chat::tool_message_content(output, &mut MovedImages::default())
            }
            RouteId::OpenAiResponses => openai_responses::output(output, self.detail),
            RouteId::Gemini => {
                Value::Array(gemini::tool_results_parts(std::slice::from_ref(output)))
            }
        }
    }

    /// The content of the user message a route adds after contiguous tool results to carry
    /// their images (`openai-chat` only); `Null` where the route adds none.
    pub fn follow_up(self, outputs: &[ToolOutput]) -> Value {
        match self.route {
            RouteId::OpenAiChat => {
                openai_chat::follow_up(outputs, self.detail).unwrap_or(Value::Null)
            }
            RouteId::Anthropic | RouteId::OpenAiResponses | RouteId::Gemini | RouteId::TextOnly => {
                Value::Null
            }
        }
    }

    /// A user message's content: content blocks (Anthropic), content parts (OpenAI), parts
    /// (Gemini), or one string (text-only).
    pub fn message_content(self, content: &[Content]) -> Value {
        match self.route {
            RouteId::Anthropic => anthropic::content_blocks(content, self.route()),
            RouteId::OpenAiChat => openai_chat::user_content(content, self.detail),
            RouteId::OpenAiResponses => openai_responses::user_content(content, self.detail),
            RouteId::Gemini => Value::Array(gemini::parts(content)),
            RouteId::TextOnly => Value::String(plain_text(content)),
        }
    }

    /// A user message's content, from the parts a lane made.
    pub fn message_parts(self, parts: &[Part<'_>]) -> Value {
        let content: Vec<Content> = parts.iter().map(Content::from_part).collect();
        self.message_content(&content)
    }
}

/// The bytes a request body takes serialised as it is sent ([`body_bytes`]), counted without
/// writing it out.
pub fn body_len(body: &Value) -> u64 {
    mcpl_classify::compact_json_len(body)
}

/// A request body as it is sent: compact JSON, the bytes `serde_json::to_vec` writes, written
/// faster where it carries long strings (decision 0150).
pub fn body_bytes(body: &Value) -> Vec<u8> {
    mcpl_classify::compact_json(body)
}

/// Writes a request body to `out` as it is sent: the bytes of [`body_bytes`].
pub fn write_body(out: &mut (impl std::io::Write + ?Sized), body: &Value) -> std::io::Result<()> {
    mcpl_classify::write_compact_json(out, body)
}

/// Whether the route takes an image of this type natively in a user message.
fn takes_image(route: &PricedRoute, sniffed: Sniffed) -> bool {
    route.lanes.images_in_messages && route.lanes.takes_image_type(Some(sniffed))
}

/// Whether the route takes an image of this type natively in a tool result (directly or moved
/// after it).
fn takes_tool_image(route: &PricedRoute, sniffed: Sniffed) -> bool {
    route.lanes.images_in_tool_results && takes_image(route, sniffed)
}

/// Whether a user message on the route takes audio of this type natively.
fn takes_audio(route: &PricedRoute, sniffed: Sniffed) -> bool {
    route.lanes.takes_audio(Some(sniffed))
}

/// Whether a tool result on the route takes audio of this type natively (moved after it).
fn takes_tool_audio(route: &PricedRoute, sniffed: Sniffed) -> bool {
    route.lanes.takes_tool_audio(Some(sniffed))
}

/// Whether a tool result on the route takes a PDF natively.
fn takes_document(route: &PricedRoute) -> bool {
    route.lanes.documents_in_tool_results
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
            Content::Image { sniffed, data, .. } => image_not_sent(sniffed.mime(), data),
            Content::Audio { sniffed, data } => audio_description(sniffed.mime(), data),
            Content::Document { data, .. } => document_not_sent(data),
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

/// What a route moves out of a tool result into the content after the turn's results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MovedKind {
    Image,
    Document,
    Audio,
}

impl MovedKind {
    fn word(self) -> &'static str {
        match self {
            MovedKind::Image => "image",
            MovedKind::Document => "document",
            MovedKind::Audio => "audio",
        }
    }
}

/// A tool result's images (and documents and audio, where the route moves them) moved out of
/// it, in order, with what their labels name.
#[derive(Debug, Default)]
struct MovedImages<'o> {
    images: Vec<MovedImage<'o>>,
}

#[derive(Debug)]
struct MovedImage<'o> {
    kind: MovedKind,
    n: usize,
    call_id: &'o str,
    tool: &'o str,
    media_type: &'static str,
    data: &'o str,
    /// The image's size, for the detail it goes at.
    dimensions: Option<mcpl_classify::Dimensions>,
}

/// Which parts of a tool result a route moves out of it: the images, documents and audio it
/// takes in a tool result.
#[derive(Clone, Copy)]
struct Moves<'r> {
    route: &'r PricedRoute,
}

impl Moves<'_> {
    fn media(route: &PricedRoute) -> Moves<'_> {
        Moves { route }
    }

    fn kind(self, part: &Content) -> Option<MovedKind> {
        match part {
            Content::Image { sniffed, .. } if takes_tool_image(self.route, *sniffed) => {
                Some(MovedKind::Image)
            }
            Content::Document { .. } if takes_document(self.route) => Some(MovedKind::Document),
            Content::Audio { sniffed, .. } if takes_tool_audio(self.route, *sniffed) => {
                Some(MovedKind::Audio)
            }
            Content::Text(_)
            | Content::Image { .. }
            | Content::Audio { .. }
            | Content::Document { .. } => None,
        }
    }
}

/// The `detail` an OpenAI image goes at: a route option. [`ImageDetail::Auto`] (the default)
/// sends `low` for an image no side of which is over [`ImageDetail::LOW_DETAIL_SIDE`], which
/// low detail shows whole, and `auto` otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ImageDetail {
    /// `low` for a small image, else `auto`.
    #[default]
    Auto,
    /// Always `low`.
    Low,
    /// Always `high`.
    High,
}

impl ImageDetail {
    /// OpenAI's low detail: the image at 512 x 512 px
    /// (<https://platform.openai.com/docs/guides/images-vision>).
    pub const LOW_DETAIL_SIDE: u32 = 512;

    /// The `detail` value for an image of these dimensions.
    pub fn of(self, dimensions: Option<mcpl_classify::Dimensions>) -> &'static str {
        match self {
            ImageDetail::Low => "low",
            ImageDetail::High => "high",
            ImageDetail::Auto => match dimensions {
                Some(d) if d.width.max(d.height) <= ImageDetail::LOW_DETAIL_SIDE => "low",
                _ => "auto",
            },
        }
    }
}

impl<'o> MovedImages<'o> {
    /// The result's text with each moved part replaced by its pointer line; `moves` says which
    /// parts the route moves.
    fn text_of(&mut self, output: &'o ToolOutput, moves: Moves<'_>) -> Option<String> {
        let parts = output.live.as_ref()?;
        let mut counts = [0usize; 3];
        let lines: Vec<String> = parts
            .iter()
            .map(|part| {
                let Some(kind) = moves.kind(part) else {
                    return match part {
                        Content::Text(text) => text.clone(),
                        Content::Image { sniffed, data, .. } => {
                            image_not_sent(sniffed.mime(), data)
                        }
                        Content::Audio { sniffed, data } => audio_description(sniffed.mime(), data),
                        Content::Document { data, .. } => document_not_sent(data),
                    };
                };
                let n = &mut counts[kind as usize];
                *n += 1;
                let (media_type, data, dimensions) = match part {
                    Content::Image {
                        sniffed,
                        data,
                        dimensions,
                    } => (sniffed.mime(), data.as_str(), Some(*dimensions)),
                    Content::Audio { sniffed, data } => (sniffed.mime(), data.as_str(), None),
                    Content::Document { data, .. } => (Sniffed::Pdf.mime(), data.as_str(), None),
                    Content::Text(_) => return String::new(),
                };
                self.images.push(MovedImage {
                    kind,
                    n: *n,
                    call_id: &output.call_id,
                    tool: &output.name,
                    media_type,
                    data,
                    dimensions,
                });
                match kind {
                    MovedKind::Image => moved_image_pointer(*n),
                    other => moved_media_pointer(other.word(), *n),
                }
            })
            .collect();
        Some(lines.join("\n"))
    }

    /// The header, then each moved part after its label, each as the route encodes a text and
    /// that part; nothing when nothing moved.
    fn encode(
        &self,
        text: impl Fn(String) -> Value,
        item: impl Fn(&MovedImage<'_>) -> Value,
    ) -> Vec<Value> {
        if self.images.is_empty() {
            return Vec::new();
        }
        let header = if self.images.iter().all(|m| m.kind == MovedKind::Image) {
            MOVED_IMAGES_HEADER
        } else {
            MOVED_MEDIA_HEADER
        };
        let mut out = vec![text(header.to_owned())];
        for moved in &self.images {
            out.push(text(match moved.kind {
                MovedKind::Image => moved_image_label(moved.n, moved.call_id, moved.tool),
                other => moved_media_label(other.word(), moved.n, moved.call_id, moved.tool),
            }));
            out.push(item(moved));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_measured_as_it_is_serialised() {
        let body = serde_json::json!({"a": "quote \" tab \t é 漢 \u{1}", "b": [1, 2.5, null, true],
            "c": {"d": "A".repeat(100)}});
        let sent = serde_json::to_string(&body).map_or(0, |text| text.len());
        assert_eq!(body_len(&body), sent as u64);
    }

    #[test]
    fn each_route_has_its_encoder_and_priced_route() {
        for id in RouteId::ALL {
            let encoder = Encoder::from(id);
            assert_eq!(encoder.id(), id);
            assert_eq!(encoder.route().id(), id);
        }
    }

    /// Where a route moves a tool result's images, the text it adds around each (the pointer,
    /// the label naming the call, the header) is priced with the image: it must stay within the
    /// route's declared overhead, even for a call id and a tool name of 64 characters.
    #[test]
    fn the_text_around_a_moved_image_stays_within_its_priced_overhead() {
        use mcpl_budget::{Bound, MOVED_IMAGE_OVERHEAD, TokenEstimator};
        let call_id = "call_".to_owned() + &"aZ9_".repeat(15);
        let tool = "server-name__".to_owned() + &"tool-name_".repeat(6);
        let (call_id, tool) = (&call_id[..64], &tool[..64]);
        let around = [
            MOVED_IMAGES_HEADER.to_owned(),
            moved_image_pointer(99),
            moved_image_label(99, call_id, tool),
        ];
        let tokens: u64 = around.iter().map(|text| Bound.count(text)).sum();
        assert!(
            tokens <= MOVED_IMAGE_OVERHEAD,
            "{tokens} tokens around one image"
        );
        for encoder in [
            Encoder::new(RouteId::OpenAiChat),
            Encoder::new(RouteId::Gemini),
        ] {
            assert_eq!(
                encoder.route().image_overhead,
                MOVED_IMAGE_OVERHEAD,
                "{}",
                encoder.id().name()
            );
        }
        for encoder in [
            Encoder::new(RouteId::Anthropic),
            Encoder::new(RouteId::OpenAiResponses),
            Encoder::new(RouteId::TextOnly),
        ] {
            assert_eq!(encoder.route().image_overhead, 0, "{}", encoder.id().name());
        }
    }
}
