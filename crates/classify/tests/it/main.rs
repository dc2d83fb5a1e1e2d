//! The classifier's integration tests, in one binary: data-driven cases over real-encoder
//! fixtures, property tests, and replayed fuzz crashes.

mod cases;
mod limits;
mod properties;
mod regressions;

use std::path::{Path, PathBuf};

/// The `tests/` folder of this crate.
fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}
