//! Token prices, head/tail fitting with spill files, and the window projection.

pub mod text;

#[cfg(feature = "exact")]
pub use text::O200k;
pub use text::{Heuristic, TokenEstimator};
