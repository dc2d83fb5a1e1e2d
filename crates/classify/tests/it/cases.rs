//! Data-driven cases: each `tests/cases/*.json` is a block, or an array of blocks, and its
//! classification is a snapshot in `snapshots/`. Adding a case is adding a file.

use mcpl_classify::{Limits, Summary, classify};
use serde_json::Value;

use mcpl_testkit::expand_fixtures;

/// Classifies a case's blocks, checks what must hold whatever the snapshot says, and returns
/// the summaries.
fn check(case: &Value) -> Vec<Summary> {
    let mut case = case.clone();
    let blocks: Vec<Value> = match case.take() {
        Value::Array(blocks) => blocks,
        block => vec![block],
    };
    blocks
        .into_iter()
        .map(|mut block| {
            let fixture_lengths = expand_fixtures(&mut block);
            let summary = Summary::of(&classify(&block), &Limits::default());
            // Read straight from bytes, the block is the same.
            let bytes = serde_json::to_vec(&[&block]).unwrap();
            mcpl_classify::fuzz::view_matches_value(&bytes);
            if summary.renderable {
                assert!(summary.base64_error.is_none(), "renderable with bad base64");
                assert!(
                    matches!(
                        summary.sniffed_type,
                        Some("image/png" | "image/jpeg" | "image/gif" | "image/webp")
                    ),
                    "renderable as {:?}",
                    summary.sniffed_type
                );
            }
            // A fixture's decoded size, worked out from its base64 length, is its file's length.
            if let [length] = fixture_lengths[..] {
                assert_eq!(
                    summary.decoded_bytes,
                    Some(length),
                    "decoded size of a fixture"
                );
            }
            summary
        })
        .collect()
}

#[test]
fn cases() {
    insta::glob!("..", "cases/*.json", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        let case: Value = serde_json::from_str(&text).unwrap();
        insta::assert_json_snapshot!(check(&case));
    });
}
