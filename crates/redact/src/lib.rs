//! Every secret in a server's strings and JSON replaced by its marker.
//!
//! A uri can carry a credential: a signed link, a token in a query, a password in userinfo, a
//! capability in a path. This crate decides which uris one result (or message) hides
//! ([`HiddenUris`]), remembers those a session hid ([`HiddenSet`]), and redacts any string a
//! server sent: every hidden uri, in any spelling its normalised view sees through, becomes
//! [`WITHHELD_LINK`]; so does every credential-shaped url, claimed or not.
//!
//! ```
//! use mcpl_redact::{HiddenSet, HiddenUris, UriPolicy};
//! use serde_json::json;
//!
//! let result = json!({"content": [
//!     {"type": "resource_link", "uri": "https://files.example/r/1?sig=abcdefgh12", "name": "r"},
//! ]});
//! let mut session = HiddenSet::new();
//! let hidden = HiddenUris::in_session(&[&result], UriPolicy::Hidden, &mut session, true);
//! let shown = hidden.redact("see HTTPS://files.example/r/1?sig=abcdefgh12 now");
//! assert_eq!(shown, "see [withheld link] now");
//! ```
//!
//! **Architecture Invariant:** mcpl-redact knows no lanes, routes, tokens or provider JSON:
//! strings and JSON in, the same out with every secret replaced by its marker. It depends on
//! `mcpl-classify` alone among mcpl's crates, does no I/O and never returns `Err`.

mod beside;
mod decoded;
pub mod formats;
#[cfg(feature = "fuzzing")]
pub mod fuzz;
mod hidden;
mod params;
mod scrub;
mod search;
mod secrets;
mod unicode;
mod uri;
mod view;
mod walk;

pub use hidden::{
    HiddenSet, HiddenUris, MAX_REDACTION_PASSES, MAX_URI_PARTS, PassCheck, PieceCheck, ServerName,
    UriPolicy,
};
pub use params::is_secret_name;
pub use scrub::{Secrets, WITHHELD_SECRET};
pub use secrets::Admitted;
/// The grammar of secret spellings: proptest strategies for generative leak tests.
#[cfg(feature = "spellings")]
pub use secrets::spellings;
pub use uri::{MAX_URL_BYTES, MAX_URLS_PER_STRETCH, is_credential_free, normalised};
pub use view::{
    CREDENTIAL_PARAMETERS, DECODE_LAYERS, HIDDEN_SET_CAPACITY, REDACT_MIN_CHARS, WITHHELD_LINK,
};
pub use walk::{CONTENT_BLOCK_TYPES, block_uris, is_content_block, names_a_block};

/// Internals the lanes crate builds on: a scope of values and byte views, the label redaction,
/// and the session's found credential urls. Not for hosts.
#[doc(hidden)]
pub mod internal {
    pub use crate::hidden::floor_boundary;
    pub use crate::view::is_control_or_format;
    pub use crate::walk::Scope;
}
