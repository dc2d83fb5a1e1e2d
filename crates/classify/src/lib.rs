//! What an MCP or MCPL content block is, answered once for every lane.
//!
//! [`classify`] reads one block, as the JSON a server sent, and answers with a [`Block`]: every
//! lane matches that answer exhaustively, so no lane can fall back to a default branch unseen.
//!
//! - [`Block::Text`], [`Block::InlineImage`], [`Block::InlineAudio`]: the ordinary blocks.
//! - [`Block::InlineContradiction`]: inline data that also claims a disposition or a uri; its
//!   data is withheld.
//! - [`Block::Reference`]: a payload named by uri (MCPL `resource`, uri-form image or audio, MCP
//!   `resource_link`), with its optional fields read by RFC-005 §8's rules into a [`Reference`].
//! - [`Block::EmbeddedText`], [`Block::EmbeddedBlob`], [`Block::EmbeddedUnreadable`]: MCP's
//!   embedded resource by its contents.
//! - [`Block::Invalid`]: anything else, with an [`InvalidReason`].
//!
//! Data-bearing blocks carry [`Media`]: the claimed type normalised ([`ClaimedType`]), what the
//! bytes say ([`Sniffed`]), the exact decoded size and, for PNG, JPEG, GIF and WebP, the
//! [`Dimensions`], and an [`ImageDefect`] where such bytes still cannot be shown (a PNG cut
//! short, say). All of it comes from the payload's first bytes: base64 decodes in independent
//! four-character groups, so no payload is ever decoded whole or copied.
//!
//! ```
//! use mcpl_classify::{Block, classify};
//! use serde_json::json;
//!
//! // A PNG signature and IHDR for a 3 x 2 image, labelled as a JPEG.
//! let block = json!({
//!     "type": "image",
//!     "mimeType": "image/jpeg",
//!     "data": "iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAYAAACddGYaAAAAEElEQVR4nGNgYGD4j4QRHABE1QX7fwpwkQAAAABJRU5ErkJggg==",
//! });
//! let Block::InlineImage(media) = classify(&block) else { panic!("an inline image") };
//! assert_eq!(media.sniffed.map(|s| s.mime()), Some("image/png"));
//! assert!(media.renderable());
//! assert_eq!(media.dimensions.map(|d| (d.width, d.height)), Some((3, 2)));
//! ```
//!
//! Classification never fails and does no I/O; it knows nothing about lanes, tokens or routes.

mod block;
mod compact;
mod duration;
#[cfg(feature = "fuzzing")]
pub mod fuzz;
mod lenient;
mod media;
mod payload;
mod reference;
mod sniff;
mod summary;
mod view;

pub use block::{
    Block, Contradiction, ContradictionSource, EmbeddedBlob, EmbeddedText, EmbeddedUnreadable,
    Invalid, InvalidReason, Unreadable, classify,
};
pub use compact::{compact_json, compact_json_len, write_compact_json, write_json_str};
pub use duration::audio_duration_ms;
pub use lenient::{
    MAX_DEPTH, TOO_DEEP, json_string_end, parse_json_lenient, parse_json_repaired,
    replace_lone_surrogates,
};
pub use media::{ClaimedType, DIMENSION_READ_LIMIT, Dimensions, ImageDefect, Limits, Media};
pub use payload::{
    BESIDE_CHARS, Base64Finding, Payload, PayloadReader, decode_standard, decoded_len,
};
pub use reference::{
    Disposition, DroppedField, EXPIRES_AT_MAX_CHARS, FieldRule, LABEL_MAX_CHARS, Reference,
    ReferenceForm, SIZE_BYTES_MAX, URI_MAX_CHARS,
};
pub use sniff::{SNIFF_LEN, Sniffed, sniff};
pub use summary::Summary;
pub use view::{
    BlockView, ContentView, DataView, ObjectView, ResourceField, ResultView, Slot, SourceBytes,
    first_json_byte, mend_lone_surrogates, parse_view_mending, raw_members, raw_str, result_fields,
    two_cores,
};
