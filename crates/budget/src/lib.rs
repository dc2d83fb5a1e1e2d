//! Token prices, head/tail fitting with spill files, and the window projection.

pub mod image;
pub mod text;

pub use image::{
    ANTHROPIC_TABLE, Detail, GEMINI_TABLE, ImageCalculator, OPENAI_TABLE, PricedModels,
};
#[cfg(feature = "exact")]
pub use text::O200k;
pub use text::{Heuristic, TokenEstimator};
