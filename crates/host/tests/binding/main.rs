//! References bound to the servers that delivered them, through the host's lanes, on every lane
//! and in either order of delivery.

mod binding;
mod redaction;
// The fetcher's own test support: scratch folders, loopback origins and registrations.
#[path = "../../../fetch/tests/it/support.rs"]
pub mod support;
