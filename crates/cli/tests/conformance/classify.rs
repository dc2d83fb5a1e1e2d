//! The classifier's share of MCPL's conformance vectors, read from the classifier's own
//! output rather than from the records the checker reads: for every render and fetch case, the
//! first block's `kind` and `missingFields` expectations, and that over-long labels of a stub
//! case were dropped, not truncated. Cases are expanded by the checker's [`expand`].

use mcpl_classify::{Block, Disposition, classify};
use mcpl_cli::conformance::expand;
use serde_json::Value;

/// A loopback origin standing in for the fixture server; classification never dials it.
const ORIGIN: &str = "http://127.0.0.1:9";

#[test]
fn kind_and_missing_fields_vectors_hold() {
    let vectors = mcpl_testkit::conformance_vectors();
    assert_eq!(vectors["format"], "mcpl-bulk-references-1");
    let mut checked = 0;
    for case in vectors["cases"].as_array().unwrap() {
        let id = case["id"].as_str().unwrap();
        let mut first = case["blocks"][0].clone();
        expand(&mut first, ORIGIN);
        let block = classify(&first);
        let expect = &case["expect"];
        if let Some(kind) = expect.get("kind").and_then(Value::as_str) {
            assert_eq!(block.kind_name(), kind, "{id}");
            checked += 1;
        }
        if let Some(missing) = expect.get("missingFields").and_then(Value::as_array) {
            let Block::Reference(reference) = &block else {
                panic!("{id}: still a reference, got {}", block.kind_name());
            };
            for field in missing {
                let absent = match field.as_str().unwrap() {
                    "name" => reference.name.is_none(),
                    "mimeType" => reference.mime_type.is_none(),
                    "expiresAt" => reference.expires_at.is_none(),
                    "sizeBytes" => reference.size_bytes.is_none(),
                    "digest" => reference.digest.is_none(),
                    other => panic!("{id}: unknown field {other}"),
                };
                assert!(absent, "{id}: {field} should be absent");
            }
            assert_eq!(reference.disposition, Some(Disposition::Never), "{id}");
            checked += 1;
        }
        // A case that expects a stub has a reference among its blocks, and its over-long labels
        // were dropped, not truncated.
        if expect.get("stub") == Some(&Value::Bool(true)) {
            let mut blocks = case["blocks"].clone();
            expand(&mut blocks, ORIGIN);
            let references: Vec<_> = blocks
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|b| match classify(b) {
                    Block::Reference(r) => Some((
                        r.name.map(|n| n.chars().count()),
                        r.mime_type.map(|m| m.chars().count()),
                    )),
                    _ => None,
                })
                .collect();
            assert!(!references.is_empty(), "{id}: no reference");
            for (name, mime) in references {
                assert!(name.unwrap_or(0) <= 255 && mime.unwrap_or(0) <= 255, "{id}");
            }
            checked += 1;
        }
    }
    // 1 kind case, 6 missingFields cases, and every stub case.
    assert!(checked >= 40, "only {checked} expectations checked");
}
