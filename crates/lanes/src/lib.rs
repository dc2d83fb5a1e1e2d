//! What each lane shows a model for each kind of content block.
//!
//! Not built yet: this crate will hold the tool-result stored and live copies, the push, channel
//! and injection lanes, the script view, the reference registry and the image ledger, each
//! matching [`mcpl_classify::Block`] exhaustively. It knows nothing about tokens.
//!
//! ```
//! // The lanes read the classifier's one answer.
//! let block = serde_json::json!({"type": "text", "text": "hi"});
//! assert_eq!(mcpl_classify::classify(&block).kind_name(), "text");
//! ```
