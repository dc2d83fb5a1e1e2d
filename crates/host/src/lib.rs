//! The thin adapter that makes mcpl's library crates do real work, and the `mcpl` command.
//!
//! Today it holds the input side of the command: [`input::read_document`] reads one JSON
//! document from a file or standard input, telling empty, truncated, too deep and malformed
//! input apart, and [`input::content_blocks`] finds the content blocks in any of the shapes the
//! command takes (a content array, a tool result, a push event's params, a channel message, an
//! injection, or a JSON-RPC message holding one).
//!
//! ```
//! use mcpl_host::input::{content_blocks, parse_document};
//!
//! let document = parse_document("example", br#"{"jsonrpc": "2.0", "id": 1,
//!     "result": {"content": [{"type": "text", "text": "hi \ud800"}]}}"#).unwrap();
//! assert_eq!(document.lone_surrogates_replaced, 1);
//! let blocks = content_blocks(&document.value).unwrap();
//! assert_eq!(blocks[0]["text"], "hi \u{FFFD}");
//! ```
//!
//! Only this crate does I/O other than spill files, and only it knows about processes and HTTP.

pub mod client;
pub mod config;
pub mod conformance;
pub mod conversation;
pub mod demo;
pub mod encode;
pub mod fetch;
pub mod host_loop;
#[cfg(feature = "http")]
pub mod http;
pub mod input;
pub mod loopback;
pub mod mcpl;
pub mod model;
pub mod project;
