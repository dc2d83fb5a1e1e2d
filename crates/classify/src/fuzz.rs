//! Entry points for the fuzz targets in `fuzz/` and for the tests that replay what they found.
//!
//! Each checks properties as well as the absence of panics, so a fuzz run finds wrong answers
//! too, not only crashes.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::{
    Block, BlockView, ContentView, DataView, Limits, Media, ResultView, Summary, classify, sniff,
};

/// Parses `bytes` as JSON and classifies every object and array at any depth, checking what
/// must hold of each answer, reads the same bytes as a tool result straight from bytes
/// ([`view_matches_value`]), and writes the `Value` out again as a request body is written
/// ([`compact_matches_serde_json`]).
pub fn classify_json_bytes(bytes: &[u8]) {
    view_matches_value(bytes);
    if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
        classify_everywhere(&value);
        compact_matches_serde_json(&value);
    }
}

/// Checks that [`crate::compact_json`] writes what `serde_json::to_vec` writes, and that
/// [`crate::compact_json_len`] counts it.
pub fn compact_matches_serde_json(value: &Value) {
    let expected = serde_json::to_vec(value).expect("a `Value` serialises");
    assert_eq!(crate::compact_json(value), expected, "{value:?}");
    assert_eq!(crate::compact_json_len(value), expected.len() as u64);
}

/// Checks that a tool result read from bytes ([`ResultView`]) is what the same bytes parsed into
/// a `Value` give: both fail or neither does, the same content (each block classified the
/// same, the same data), the same structured content and error flag, and for every element of
/// the content array the same fields' JSON kept for the uri walk. A split read of the content
/// array, cut anywhere, is the same view or none.
pub fn view_matches_value(bytes: &[u8]) {
    let value = serde_json::from_slice::<Value>(bytes);
    let view = ResultView::parse(bytes);
    // A large result's content array may be read in two halves on two threads (decision
    // 0169): wherever the guess cuts it, that read is the whole parse's, or there is none.
    for near in [0, bytes.len() / 3, bytes.len() / 2] {
        if let Some(read) = crate::view::split_read(bytes, near) {
            match &view {
                Ok(view) => assert!(
                    read == *view,
                    "the halves read {read:?}, the whole {view:?}"
                ),
                Err(error) => panic!("the halves read {read:?}, the whole fails: {error}"),
            }
        }
    }
    let (value, view) = match (value, view) {
        (Ok(value), Ok(view)) => (value, view),
        (Err(_), Err(_)) => return,
        (value, view) => panic!("the value reads {value:?}, the view {view:?}"),
    };
    // The view of the parsed `Value` (the one reader's entry point for a `Value`) reads the
    // same as the view of the bytes.
    view_reads_as(&value, &ResultView::of_value(&value));
    view_reads_as(&value, &view);
}

/// The checks of [`view_matches_value`] on one view of `value`.
fn view_reads_as(value: &Value, view: &ResultView<'_>) {
    let (content, structured, is_error) = match value {
        Value::Object(object) if !is_block(value) => (
            object.get("content"),
            object.get("structuredContent"),
            object.get("isError") == Some(&Value::Bool(true)),
        ),
        other => (Some(other), None, false),
    };
    assert_eq!(
        view.structured.as_ref().map(DataView::to_value).as_deref(),
        structured,
        "structured content"
    );
    assert_eq!(view.is_error, is_error, "error flag");
    match (&view.content, content) {
        (None, None) => {}
        (Some(ContentView::Blocks(views)), Some(Value::Array(blocks))) => {
            assert_eq!(views.len(), blocks.len());
            for (view, block) in views.iter().zip(blocks) {
                assert_eq!(view.classify(), classify(block), "{block}");
                if let (BlockView::Object(_) | BlockView::Text(_), Value::Object(object)) =
                    (view, block)
                {
                    let mut kept: Vec<&Value> = view.json_values().collect();
                    let mut expected: Vec<&Value> = object
                        .iter()
                        .filter(|(key, v)| {
                            !v.is_string()
                                && (key.as_str() != "resource" || !v.is_object())
                                && (KNOWN.contains(&key.as_str()) || read_nested(v))
                        })
                        .map(|(_, v)| v)
                        .collect();
                    kept.sort_by_key(|v| v.to_string());
                    expected.sort_by_key(|v| v.to_string());
                    assert_eq!(kept, expected, "values kept for the uri walk");
                    let flagged = match view {
                        BlockView::Object(object) => object.for_the_user_alone(),
                        _ => false,
                    };
                    assert_eq!(flagged, user_alone(object), "for the user alone");
                    if let BlockView::Object(_) = view {
                        // A scaled image's block: its data and type replaced in the view read
                        // as the object with them replaced (decision 0161). A view of bytes
                        // need not hold what a view of the `Value` holds (it may keep other
                        // nested fields of an object with a key twice), only read as it does:
                        // it is held to the same reading, a view of the `Value` to the same
                        // view.
                        let mut replaced = object.clone();
                        replaced.insert("data".to_owned(), Value::from("AAAA"));
                        replaced.insert("mimeType".to_owned(), Value::from("image/png"));
                        let replaced = Value::Object(replaced);
                        let image = view.clone().with_image("AAAA".to_owned(), "image/png");
                        assert_eq!(image.classify(), classify(&replaced), "{block}");
                        let mut walked: Vec<&Value> = image.json_values().collect();
                        let expected = BlockView::of_value(&replaced);
                        let mut expected_walked: Vec<&Value> = expected.json_values().collect();
                        walked.sort_by_key(|v| v.to_string());
                        expected_walked.sort_by_key(|v| v.to_string());
                        assert_eq!(walked, expected_walked, "{block}");
                        let of_value = BlockView::of_value(block);
                        if let BlockView::Object(_) = of_value {
                            assert_eq!(
                                of_value.with_image("AAAA".to_owned(), "image/png"),
                                expected,
                                "{block}"
                            );
                        }
                    }
                }
            }
        }
        (Some(ContentView::Data(data)), Some(value)) => assert_eq!(&**data, value),
        (view, value) => panic!("content read as {view:?}, in the value {value:?}"),
    }
}

/// Whether another field's value is one a reader may use, said here on its own: an object or
/// an array holding the string `type` anywhere (a key or a value).
fn read_nested(value: &Value) -> bool {
    fn holds(value: &Value, word: &str) -> bool {
        match value {
            Value::String(s) => s == word,
            Value::Array(items) => items.iter().any(|item| holds(item, word)),
            Value::Object(object) => object.iter().any(|(k, v)| k == word || holds(v, word)),
            _ => false,
        }
    }
    (value.is_object() || value.is_array()) && holds(value, "type")
}

/// Whether a block's `annotations` name the user alone, said here on its own: an object whose
/// `audience` is one or more `"user"` and nothing else.
fn user_alone(block: &serde_json::Map<String, Value>) -> bool {
    match block.get("annotations").and_then(|a| a.get("audience")) {
        Some(Value::Array(roles)) => {
            !roles.is_empty() && roles.iter().all(|role| role.as_str() == Some("user"))
        }
        _ => false,
    }
}

/// The fields an [`ObjectView`](crate::ObjectView) keeps by name.
const KNOWN: &[&str] = &crate::view::FIELDS;

fn is_block(value: &Value) -> bool {
    value
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| ["text", "image", "audio", "resource", "resource_link"].contains(&t))
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
