//! Token prices, head/tail fitting with spill files, and the window projection.
//!
//! A host that holds an `mcpl_session::Session` does all of this in three names. Without one,
//! the smallest host code, from a tool result as the server sent it (the JSON rmcp's
//! `CallToolResult` serialises to) to the content of Anthropic's `tool_result` block, within a
//! budget of 1,000 tokens. This crate cannot depend on `mcpl-encode`, which depends on it, so the
//! last step is written out here; `mcpl-encode`'s `Encoder::Anthropic` writes the same JSON (its
//! crate docs open with this example through it) and also handles what this sketch leaves out:
//! empty texts, image types the route does not list.
//!
//! ```
//! use mcpl_budget::{Bound, PricedRoute, Pricer, fit_tool_result};
//! use mcpl_lanes::{ImageLedger, LiveCopy, Part, Projector, Registry, ServerName, ResultView, ToolResult, UriPolicy};
//! use serde_json::{Value, json};
//!
//! let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==";
//! let result = json!({"content": [
//!     {"type": "text", "text": "The chart:"},
//!     {"type": "image", "data": png, "mimeType": "image/png"},
//! ], "isError": false});
//!
//! let (mut registry, mut ledger) = (Registry::new(), ImageLedger::new());
//! let (server, route) = (ServerName::new("charts"), PricedRoute::ANTHROPIC);
//! let mut lanes = Projector::new(
//!     &mut registry,
//!     &mut ledger,
//!     &route.lanes,
//!     &server,
//!     UriPolicy::Hidden,
//! );
//! let pricer = Pricer::new(&Bound, &route);
//! let read = ResultView::of_value(&result);
//! let fitted = fit_tool_result(&mut lanes, &ToolResult::from_view(&read), pricer, 1_000, None);
//! assert!(fitted.price.is_some_and(|tokens| tokens <= 1_000));
//!
//! let content: Vec<Value> = match &fitted.copies.live {
//!     LiveCopy::Native(parts) => parts.iter().map(|part| match part {
//!         Part::Text(text) => json!({"type": "text", "text": text}),
//!         image @ Part::Image { data, .. } => json!({"type": "image",
//!             "source": {"type": "base64", "media_type": image.media_type(), "data": data}}),
//!         Part::Audio { .. } | Part::Document { .. } => unreachable!("the result has none"),
//!     }).collect(),
//!     LiveCopy::Stored => vec![json!({"type": "text", "text": fitted.copies.stored})],
//! };
//! assert_eq!(Value::Array(content), json!([
//!     {"type": "text", "text": "The chart:"},
//!     {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
//! ]));
//! ```
//!
//! The crate's main types:
//!
//! - [`TokenEstimator`] prices text: [`Bound`] by default, never under o200k's count on any
//!   text, since it prices o200k's own pieces (decision 0105); [`O200k`] counts exactly, and
//!   [`Heuristic`] is the quick figure a notice reports for what it left out.
//! - [`ImageCalculator`] prices an image from its dimensions, one rule per provider, with dated
//!   tables ([`ANTHROPIC_TABLE`], [`OPENAI_TABLE`], [`GEMINI_TABLE`]).
//! - [`PricedRoute`] is one route's whole declaration: what the lanes may send there
//!   (`mcpl_lanes::Route`) and how it prices images; [`PricedRoute::of`] gives the one for a
//!   `mcpl_lanes::RouteId`, and a [`Pricer`] prices live copies with it. An image is priced
//!   from the dimensions its part carries, so its header is never read again.
//! - [`fit_tool_result`] projects a tool result and, when its live copy is over budget, writes
//!   the whole result through a [`SpillStore`] ([`LocalSpillStore`] by default) and cuts the
//!   middle of both copies, leaving the [`omission_notice`] in its place.
//! - [`read_back()`] reads a spill of the store's conversation back by its [`SpillId`], a part
//!   within a token budget at a time, for the host's `read_result` tool.
//! - [`project_round`] is the window projection: what a round appends, as it will be sent.
//!
//! A result over its budget is spilled whole, then cut:
//!
//! ```
//! use mcpl_budget::{Bound, PricedRoute, Pricer, fit_tool_result};
//! use mcpl_lanes::{ImageLedger, Projector, Registry, ServerName, ResultView, ToolResult, UriPolicy};
//! use serde_json::json;
//!
//! let (mut registry, mut ledger) = (Registry::new(), ImageLedger::new());
//! let server = ServerName::new("logs");
//! let route = PricedRoute::ANTHROPIC;
//! let mut lanes = Projector::new(
//!     &mut registry,
//!     &mut ledger,
//!     &route.lanes,
//!     &server,
//!     UriPolicy::Hidden,
//! );
//! let result = json!({"content": [{"type": "text", "text": "line\n".repeat(10_000)}]});
//! let dir = std::env::temp_dir().join(format!("mcpl-doc-{}", std::process::id()));
//! let mut store = mcpl_budget::LocalSpillStore::new(&dir).unwrap();
//! let pricer = Pricer::new(&Bound, &route);
//! let read = ResultView::of_value(&result);
//! let fitted = fit_tool_result(&mut lanes, &ToolResult::from_view(&read), pricer, 500, Some(&mut store));
//! assert!(fitted.cut && fitted.price.unwrap() <= 500);
//! assert!(fitted.copies.stored.contains("tokens omitted ("));
//! # std::fs::remove_dir_all(dir).unwrap();
//! ```
//!
//! The crate writes nothing but spill files, and only through a [`SpillStore`].

pub mod bound;
pub mod fit;
pub mod image;
mod o200k;
mod o200k_hash;
pub mod read_back;
pub mod route;
pub mod spill;
pub mod store_config;
pub mod text;
pub mod window;

pub use bound::{Bound, HUGE_PIECE, LONG_ASCII_PIECE, LONG_WORD, LONG_WORD_END, Pieces, Priced};
pub use fit::{
    CutError, DEFAULT_BUDGET, DEFAULT_MESSAGE_BUDGET, DEFAULT_TOOL_BUDGET_CEILING, Fitted, Omitted,
    cut, cut_with, fit_detached, fit_tool_result, fit_tool_result_copies, omission_notice,
    read_back_notice,
};
pub use image::{
    ANTHROPIC_TABLE, Detail, GEMINI_TABLE, ImageCalculator, OPENAI_TABLE, PricedModels,
};
pub use read_back::{READ_BACK_LIMIT, ReadBack, ReadBackError, read_back};
pub use route::{
    GEMINI_AUDIO_TOKENS_PER_SECOND, MOVED_IMAGE_OVERHEAD, NativeMedia,
    OPENAI_AUDIO_TOKENS_PER_SECOND, PageRule, PricedRoute, Pricer, Unpriceable,
};
pub use spill::{
    LocalSpillStore, MAX_ATTACHMENT_FILES, Manifest, ManifestAttachment, REST_FILE,
    SPILL_ID_LENGTH, SPILL_ID_PREFIX, SPILL_WRITEBACK_EVERY, Spill, SpillError, SpillId,
    SpillNotice, SpillStore, extension_for, is_spill_name, private_dir, write_spill,
    write_spill_of, write_text_spill,
};
pub use store_config::{S3Location, SpillStoreConfig};
pub use text::{
    CJK_SINGLES, HANGUL_SINGLES, Heuristic, O200K_SINGLE_TOKENS, O200k, TokenEstimator,
};
pub use window::{Correction, Round, project_round};
