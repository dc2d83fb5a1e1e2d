//! The classifier's integration tests, in one binary: data-driven cases over real-encoder
//! fixtures, property tests, and replayed fuzz crashes.

mod cases;
mod conformance;
mod limits;
mod properties;
mod regressions;

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// The `tests/` folder of this crate.
fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// The bytes of a fixture made by `tests/fixtures/make_fixtures.py`.
fn fixture(name: &str) -> Vec<u8> {
    let path = tests_dir().join("fixtures").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Replaces every `{"$fixture": "<name>"}` in a case with the named fixture's base64, and
/// returns the fixture lengths found, in document order.
fn expand_fixtures(value: &mut Value, lengths: &mut Vec<Option<u64>>) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(name)) = object.get("$fixture") {
                let bytes = fixture(name);
                lengths.push(Some(bytes.len() as u64));
                *value = Value::String(STANDARD.encode(bytes));
                return;
            }
            for child in object.values_mut() {
                expand_fixtures(child, lengths);
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| expand_fixtures(item, lengths)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}
