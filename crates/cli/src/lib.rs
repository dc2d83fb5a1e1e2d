//! The `mcpl` command's pieces, behind its `main`: reading input documents, `mcpl project`,
//! `mcpl demo` and the conformance runner. Nothing depends on this crate; it is a library only
//! so its own tests can reach these pieces.
//!
//! - [`input`]: [`input::read_document`] and [`input::parse_document`] read one JSON
//!   [`input::Document`] leniently, and [`input::content_blocks`] finds its content blocks in
//!   any shape the contract names.
//! - [`project`]: [`project::project`] runs one [`project::Lane`] over a document as a
//!   [`project::Request`] says, fitting and pricing a tool result, into a
//!   [`project::Projection`].
//! - [`demo`]: [`demo::run_demo`] plays the scripted conversation against the embedded demo
//!   server into a [`demo::DemoRun`], shown by [`demo::render_text`] or [`demo::render_json`].
//! - [`report`]: [`report::render`] writes `--report`'s HTML page from one or more hosts'
//!   runs ([`report::Report`]), every string through a [`report::Guard`].
//! - [`conformance`]: [`conformance::run_conformance`] runs MCPL's bulk-reference vectors and
//!   answers a [`conformance::Tally`].
//! - [`oauth`]: [`oauth::authorize`] gives each dialed server that asks for OAuth an
//!   [`oauth::OAuth`] authorizer, the bridge from mcpl-auth to mcpl-client.
//!
//! ```
//! use mcpl_cli::input::{content_blocks, parse_document};
//!
//! let document = parse_document("example", br#"{"jsonrpc": "2.0", "id": 1,
//!     "result": {"content": [{"type": "text", "text": "hi \ud800"}]}}"#).unwrap();
//! assert_eq!(document.lone_surrogates_replaced, 1);
//! let blocks = content_blocks(&document.value).unwrap();
//! assert_eq!(blocks[0]["text"], "hi \u{FFFD}");
//! ```

pub mod conformance;
pub mod demo;
pub mod input;
pub mod oauth;
pub mod project;
pub mod report;
