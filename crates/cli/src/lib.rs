//! The `mcpl` command's pieces, behind its `main`: reading input documents, `mcpl project`,
//! `mcpl demo` and the conformance runner. Nothing depends on this crate; it is a library only
//! so its own tests can reach these pieces.
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
pub mod project;
