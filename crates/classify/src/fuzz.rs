//! Entry points for the fuzz targets in `fuzz/` and for the tests that replay what they found.
//!
//! Each checks properties as well as the absence of panics, so a fuzz run finds wrong answers
//! too, not only crashes.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::{Block, Limits, Media, Summary, classify, sniff};

/// Parses `bytes` as JSON and classifies every object and array at any depth, checking what
/// must hold of each answer.
pub fn classify_json_bytes(bytes: &[u8]) {
    if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
        classify_everywhere(&value);
    }
}

fn classify_everywhere(value: &Value) {
    let block = classify(value);
    let summary = Summary::of(&block, &Limits::default());
    assert_eq!(summary.kind, block.kind_name());
    if let Some(media) = block.media() {
        check_media(media);
    }
    match value {
        Value::Array(items) => items.iter().for_each(classify_everywhere),
        Value::Object(object) => object.values().for_each(classify_everywhere),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

/// Treats `bytes` as a decoded payload: encodes it, inspects it as an image block would be, and
/// checks the answer against a full decode of the same bytes.
pub fn inspect_payload_bytes(bytes: &[u8]) {
    let data = STANDARD.encode(bytes);
    let media = Media::inspect(&data, Some("image/png"));
    assert_eq!(media.decoded_bytes, Some(bytes.len() as u64));
    assert_eq!(
        media.sniffed,
        sniff(bytes),
        "prefix and whole payload disagree"
    );
    if let (Some(lazy), Ok(full)) = (media.dimensions, imagesize::blob_size(bytes)) {
        assert_eq!(
            (lazy.width as usize, lazy.height as usize),
            (full.width, full.height)
        );
    }
    check_media(&media);
    // The same bytes as a block must classify the same way.
    let block = serde_json::json!({"type": "image", "mimeType": "image/png", "data": data});
    assert!(matches!(classify(&block), Block::InlineImage(_)));
}

fn check_media(media: &Media<'_>) {
    if media.renderable() {
        assert!(media.base64.is_none());
        assert!(media.sniffed.is_some_and(|s| s.is_renderable_image()));
    }
    if let Some(decoded) = media.decoded_bytes {
        assert!(decoded <= media.data.len() as u64 / 4 * 3);
    }
}
