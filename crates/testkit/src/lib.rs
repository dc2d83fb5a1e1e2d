//! Test support for the mcpl crates: fixtures, conformance vectors and the performance
//! workloads.
//!
//! Data-driven cases write `{"$fixture": "image.png"}` where a payload's base64 goes, and
//! [`expand_fixtures`] fills it in from the real-encoder fixtures. `{"$fixture": "image.png",
//! "$grow_to": 5242881}` grows a PNG to that many bytes with a text chunk placed before its
//! `IEND` chunk, as an encoder writing metadata would, for cases about size limits.
//! `{"$base64_of": "<text>", "$times": n}` is the base64 of the text repeated `n` times, and
//! `{"$repeat": "<text>", "count": n}` is the text itself repeated (as in the conformance
//! vectors).
//!
//! [`s3_endpoint`] finds the S3-compatible server `.ci/run` starts, and [`create_bucket`] and
//! [`list_keys`] do what a spill store test needs of it.
//!
//! [`tls_front`] puts a TLS server, its certificate signed by the private CA [`test_ca`], in
//! front of a plain loopback server.
//!
//! [`workloads`] makes the three standard performance workloads the benches run, in memory and
//! from fixed seeds.
//!
//! ```
//! let mut case = serde_json::json!({"type": "image", "data": {"$fixture": "image.png"}});
//! let lengths = mcpl_testkit::expand_fixtures(&mut case);
//! assert_eq!(lengths, vec![167]);
//! assert!(case["data"].as_str().unwrap().starts_with("iVBORw0KGgo"));
//! ```

use std::path::{Path, PathBuf};

mod s3;
mod tls;
mod workloads;

pub use tls::{test_ca, tls_fixtures, tls_front};

pub use s3::{
    S3_ENDPOINT_VARIABLE, S3_TEST_ENV, create_bucket, keys_of, list_keys, s3_endpoint, s3_request,
    try_s3_request,
};
pub use workloads::{
    SplitMix64, Workload, w1_mixed_10mb, w2_100k_blocks, w3_one_big_image, workloads,
};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// The workspace's root folder.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The bytes of a fixture made by `crates/classify/tests/fixtures/make_fixtures.py`.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = workspace_root()
        .join("crates/classify/tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A PNG fixture grown to `size` bytes by a `tEXt` chunk before its `IEND` chunk.
pub fn grown_png(name: &str, size: usize) -> Vec<u8> {
    let png = fixture(name);
    let (body, end) = png.split_at(png.len() - 12);
    let filler = size
        .checked_sub(png.len() + 12)
        .unwrap_or_else(|| panic!("{name} cannot shrink to {size} bytes"));
    let mut out = body.to_vec();
    out.extend_from_slice(&(filler as u32).to_be_bytes());
    out.extend_from_slice(b"tEXt");
    out.resize(out.len() + filler, b'x');
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(end);
    out
}

/// Replaces every `{"$fixture": "<name>"}` (optionally with `"$grow_to": <bytes>`) with that
/// fixture's base64, and returns the decoded lengths, in document order.
pub fn expand_fixtures(value: &mut Value) -> Vec<u64> {
    let mut lengths = Vec::new();
    expand_into(value, &mut lengths);
    lengths
}

fn expand_into(value: &mut Value, lengths: &mut Vec<u64>) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(name)) = object.get("$fixture") {
                let bytes = match object.get("$grow_to").and_then(Value::as_u64) {
                    Some(size) => grown_png(name, size as usize),
                    None => fixture(name),
                };
                lengths.push(bytes.len() as u64);
                *value = Value::String(STANDARD.encode(bytes));
                return;
            }
            if let (Some(Value::String(unit)), Some(count)) = (
                object.get("$repeat"),
                object.get("count").and_then(Value::as_u64),
            ) {
                *value = Value::String(unit.repeat(count as usize));
                return;
            }
            if let Some(Value::String(text)) = object.get("$base64_of") {
                let times = object.get("$times").and_then(Value::as_u64).unwrap_or(1);
                let bytes = text.repeat(times as usize).into_bytes();
                lengths.push(bytes.len() as u64);
                *value = Value::String(STANDARD.encode(bytes));
                return;
            }
            object.values_mut().for_each(|v| expand_into(v, lengths));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| expand_into(v, lengths)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

/// The repository's copy of MCPL's bulk-reference conformance vectors (`conformance/`, whose
/// README gives their origin and sha256).
pub fn conformance_vectors_path() -> PathBuf {
    workspace_root().join("conformance/bulk-reference-vectors.json")
}

/// MCPL's bulk-reference conformance vectors, parsed.
pub fn conformance_vectors() -> Value {
    let path = conformance_vectors_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
