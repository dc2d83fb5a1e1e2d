//! The classifier's share of MCPL's public conformance vectors
//! (`shared/conformance/bulk-reference-vectors.json`, format `mcpl-bulk-references-1`): for every
//! render and fetch case, the first block's `kind` and `missingFields` expectations. The lanes,
//! the registry and the fetcher run the rest of each case.

use mcpl_classify::{Block, Disposition, classify};
use serde_json::Value;

/// A loopback origin standing in for the fixture server; classification never dials it.
const ORIGIN: &str = "http://127.0.0.1:9";

fn vectors() -> Value {
    let path =
        crate::tests_dir().join("../../../../shared/conformance/bulk-reference-vectors.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (the conformance vectors sit beside this repository, in shared/)",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap()
}

/// Expands `$ORIGIN` in strings and `{"$repeat": s, "count": n}` objects, as the runner does.
fn expand(value: &mut Value) {
    match value {
        Value::String(s) => *s = s.replace("$ORIGIN", ORIGIN),
        Value::Object(object) => {
            if let (Some(Value::String(unit)), Some(count)) = (
                object.get("$repeat"),
                object.get("count").and_then(Value::as_u64),
            ) {
                *value = Value::String(unit.repeat(count as usize));
                return;
            }
            object.values_mut().for_each(expand);
        }
        Value::Array(items) => items.iter_mut().for_each(expand),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[test]
fn kind_and_missing_fields_vectors_hold() {
    let vectors = vectors();
    assert_eq!(vectors["format"], "mcpl-bulk-references-1");
    let mut checked = 0;
    for case in vectors["cases"].as_array().unwrap() {
        let id = case["id"].as_str().unwrap();
        let mut first = case["blocks"][0].clone();
        expand(&mut first);
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
            expand(&mut blocks);
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
