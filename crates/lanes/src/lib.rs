//! What each lane shows a model for each kind of content block.
//!
//! The smallest host code, from a tool result as the server sent it (the JSON rmcp's
//! `CallToolResult` serialises to) to the content of Anthropic's `tool_result` block. This crate
//! prices nothing and cannot depend on `mcpl-budget` or `mcpl-encode`, which depend on it, so
//! the example names the two places they go: the budget is `mcpl_budget::fit_tool_result` in
//! place of [`Projector::tool_result`] (`mcpl-budget`'s crate docs open with this example with
//! a budget of 1,000 tokens), and `mcpl-encode`'s `Encoder::Anthropic` writes the last step's
//! JSON, handling too what this sketch leaves out.
//!
//! ```
//! use mcpl_lanes::{ImageLedger, LiveCopy, Part, Projector, Registry, Route, ServerName, ResultView, ToolResult, UriPolicy};
//! use serde_json::{Value, json};
//!
//! let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==";
//! let result = json!({"content": [
//!     {"type": "text", "text": "The chart:"},
//!     {"type": "image", "data": png, "mimeType": "image/png"},
//! ], "isError": false});
//!
//! let (mut registry, mut ledger) = (Registry::new(), ImageLedger::new());
//! let server = ServerName::new("charts");
//! let mut lanes = Projector::new(
//!     &mut registry,
//!     &mut ledger,
//!     &Route::ANTHROPIC,
//!     &server,
//!     UriPolicy::Hidden,
//! );
//! // With a budget: mcpl_budget::fit_tool_result(&mut lanes, &result, pricer, 1_000, spill).copies
//! let read = ResultView::of_value(&result);
//! let copies = lanes.tool_result(&ToolResult::from_view(&read));
//!
//! // With mcpl-encode: Encoder::Anthropic.tool_result(&output)
//! let content: Vec<Value> = match &copies.live {
//!     LiveCopy::Native(parts) => parts.iter().map(|part| match part {
//!         Part::Text(text) => json!({"type": "text", "text": text}),
//!         image @ Part::Image { data, .. } => json!({"type": "image",
//!             "source": {"type": "base64", "media_type": image.media_type(), "data": data}}),
//!         Part::Audio { .. } | Part::Document { .. } => unreachable!("the result has none"),
//!     }).collect(),
//!     LiveCopy::Stored => vec![json!({"type": "text", "text": copies.stored})],
//! };
//! assert_eq!(Value::Array(content), json!([
//!     {"type": "text", "text": "The chart:"},
//!     {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
//! ]));
//! // History keeps the stored copy: text only, the image behind a ledger placeholder.
//! assert!(copies.stored.starts_with("The chart:\n"));
//! ```
//!
//! A lane is a place content reaches a model. [`Projector`] holds what every lane needs besides
//! the content (the host's [`Registry`] and [`ImageLedger`], the [`Route`] table a [`RouteId`]
//! names, the delivering [`ServerName`] and its [`UriPolicy`]) and has one method per lane:
//!
//! - [`Projector::tool_result`]: a tool result's stored copy (text kept in history, stable) and
//!   live copy ([`LiveCopy::Native`] when at least one block goes native on the route, else
//!   [`LiveCopy::Stored`], byte for byte the stored copy).
//! - [`Projector::push`], [`Projector::channel_message`], [`Projector::injection_user`],
//!   [`Projector::render_result`]: a user message's [`Part`]s, or the refusal of visibly empty
//!   content ([`PushRefusal`], [`ChannelRefusal`], [`RenderOutcome::NothingHappened`]).
//! - [`Projector::injection_system`]: text for the system prompt.
//! - [`Projector::script_result`] and [`Projector::script_field`]: what a script receives.
//!
//! Each lane matches the classifier's [`mcpl_classify::Block`] exhaustively. Every exact string
//! a lane shows is in [`markers`]. References become stubs and are registered with the server
//! that delivered them; uris are shown nowhere by default, not even inside a server's own text or
//! labels, and a uri a result marks `never` is shown nowhere in it whatever the policy
//! ([`HiddenUris`]).
//!
//! ```
//! use mcpl_lanes::{ImageLedger, LiveCopy, Projector, Registry, RouteId, ServerName, ResultView, ToolResult, UriPolicy};
//! use serde_json::json;
//!
//! let (mut registry, mut ledger) = (Registry::new(), ImageLedger::new());
//! let server = ServerName::new("docs");
//! let mut lanes = Projector::new(
//!     &mut registry,
//!     &mut ledger,
//!     RouteId::Anthropic.route(),
//!     &server,
//!     UriPolicy::Hidden,
//! );
//! let result = json!({"content": [
//!     {"type": "text", "text": "Here is the report."},
//!     {"type": "resource", "uri": "https://files.example/r/1?sig=secret",
//!      "name": "report.pdf", "mimeType": "application/pdf", "sizeBytes": 12288},
//! ]});
//! let read = ResultView::of_value(&result);
//! let copies = lanes.tool_result(&ToolResult::from_view(&read));
//! assert!(copies.stored.starts_with("Here is the report.\n[ref_1_"));
//! assert!(copies.stored.ends_with(
//!     "] report.pdf — application/pdf, ~12KB claimed — from tool result — fetch with fetch_reference"
//! ));
//! assert!(!copies.stored.contains("secret"));
//! assert_eq!(copies.live, LiveCopy::Stored);
//! ```
//!
//! The crate does no I/O, and knows nothing about tokens: pricing and fitting are
//! `mcpl-budget`'s.

mod document;
#[cfg(feature = "fuzzing")]
pub mod fuzz;
mod ledger;
pub mod markers;
mod project;
mod registry;
mod route;

pub use document::{PDF_COUNT_LIMIT, PDF_STREAM_LIMIT, PdfRefusal, native_pages, pdf_pages};
pub use ledger::{
    ImageLedger, ImageLookup, LEDGER_MAX_BASE64, LEDGER_MAX_IMAGES, LEDGER_REMEMBERED_REFS,
};
/// The one reader of a tool result, from bytes or from a `Value` (decision 0128).
pub use mcpl_classify::ResultView;
pub use mcpl_redact::{
    CONTENT_BLOCK_TYPES, CREDENTIAL_PARAMETERS, HIDDEN_SET_CAPACITY, HiddenSet, HiddenUris,
    MAX_URLS_PER_STRETCH, REDACT_MIN_CHARS, ServerName, UriPolicy, block_uris, is_content_block,
    is_credential_free, normalised,
};
pub use project::{
    Attach, ChannelRefusal, DetachedCopies, LiveCopy, MessageView, Part, PartEnds, Projector,
    Provenance, PushRefusal, RenderOutcome, ToolResult, ToolResultCopies, is_visibly_empty,
    withheld,
};
pub use registry::{Claims, Fetched, REGISTRY_CAPACITY, Record, RefId, Registry, UnknownReference};
pub use route::{RequestLimits, Route, RouteId, UnknownRoute};
