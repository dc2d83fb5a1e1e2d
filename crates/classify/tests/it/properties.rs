//! Property tests for the spec's invariants: no panic on any JSON, exact decoded sizes, and
//! sniffing a prefix agreeing with sniffing the whole payload.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_classify::{
    Limits, Media, SNIFF_LEN, Summary, classify, decoded_len, parse_json_lenient, sniff,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Leading bytes of every format the sniffer names, so that generated payloads reach each rule.
const MAGIC: &[&[u8]] = &[
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
    b"\xFF\xD8\xFF\xE0",
    b"\xFF\xD8\xFF\xC0\0\x11\x08",
    b"GIF89a",
    b"RIFF\0\0\0\0WEBPVP8 ",
    b"RIFF\0\0\0\0WEBPVP8L",
    b"RIFF\0\0\0\0WEBPVP8X",
    b"RIFF\0\0\0\0WAVE",
    b"%PDF-",
    b"PK\x03\x04",
    b"\x1F\x8B\x08",
    b"OggS",
    b"fLaC",
    b"II*\0",
    b"ID3",
    b"\xFF\xFB",
    b"\0\0\0\x1cftypavif",
    b"\0\0\0\x18ftypheic",
    b"BM",
    b"\xEF\xBB\xBF <svg",
    b"<?xml",
];

fn payload_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..2048),
        (
            proptest::sample::select(MAGIC),
            proptest::collection::vec(any::<u8>(), 0..2048)
        )
            .prop_map(|(magic, tail)| [magic, &tail[..]].concat()),
    ]
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,20}".prop_map(Value::String),
        proptest::sample::select(
            &[
                "text",
                "image",
                "audio",
                "resource",
                "resource_link",
                "never",
                "ref",
                "image/png",
                "",
                "https://a.example/x?token=t",
            ][..]
        )
        .prop_map(Value::from),
        payload_bytes().prop_map(|bytes| Value::String(STANDARD.encode(bytes))),
    ]
}

/// Any JSON, weighted towards objects with the keys content blocks use.
fn any_json() -> impl Strategy<Value = Value> {
    const KEYS: &[&str] = &[
        "type",
        "text",
        "data",
        "mimeType",
        "uri",
        "resource",
        "blob",
        "name",
        "sizeBytes",
        "size",
        "digest",
        "disposition",
        "expiresAt",
        "other",
    ];
    json_leaf().prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((proptest::sample::select(KEYS), inner), 0..8).prop_map(
                |pairs| {
                    Value::Object(
                        pairs
                            .into_iter()
                            .map(|(k, v)| (k.to_owned(), v))
                            .collect::<Map<String, Value>>(),
                    )
                }
            ),
        ]
    })
}

fn classify_deeply(value: &Value) {
    let block = classify(value);
    let summary = Summary::of(&block, &Limits::default());
    assert_eq!(summary.kind, block.kind_name());
    match value {
        Value::Array(items) => items.iter().for_each(classify_deeply),
        Value::Object(object) => object.values().for_each(classify_deeply),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn classification_never_panics(value in any_json()) {
        classify_deeply(&value);
    }

    #[test]
    fn a_result_read_from_bytes_classifies_as_its_value_does(value in any_json(), wrap in 0..3u8) {
        // As a content array, as a result's content beside structured content, and alone.
        let document = match wrap {
            0 => json!({"content": value.as_array().cloned().unwrap_or_else(|| vec![value.clone()]),
                "structuredContent": value, "isError": true}),
            1 => json!([value]),
            _ => value,
        };
        mcpl_classify::fuzz::view_matches_value(&serde_json::to_vec(&document).unwrap());
    }

    #[test]
    fn decoded_size_from_length_is_exact(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let data = STANDARD.encode(&bytes);
        let padding = data.bytes().rev().take_while(|&c| c == b'=').count();
        prop_assert_eq!(decoded_len(data.len(), padding), bytes.len() as u64);
        let media = Media::inspect(&data, None);
        prop_assert_eq!(media.decoded_bytes, Some(bytes.len() as u64));
        prop_assert_eq!(media.base64, None);
    }

    #[test]
    fn prefix_sniff_matches_whole_payload(bytes in payload_bytes()) {
        // Through base64, where only the prefix is decoded.
        let data = STANDARD.encode(&bytes);
        prop_assert_eq!(Media::inspect(&data, None).sniffed, sniff(&bytes));
        // And directly: any prefix at least SNIFF_LEN long gives the whole payload's answer.
        let cut = bytes.len().min(SNIFF_LEN);
        prop_assert_eq!(sniff(&bytes[..cut]), sniff(&bytes));
    }

    #[test]
    fn the_lenient_reader_keeps_valid_json_and_mends_lone_surrogates(
        text in "\\PC{0,40}",
        cut in 0usize..40,
        unit in 0xD800u32..0xE000,
    ) {
        // Valid JSON reads as serde_json reads it, with nothing replaced.
        let json = serde_json::to_string(&text).unwrap();
        let (value, replaced) = parse_json_lenient(json.as_bytes()).unwrap();
        prop_assert_eq!(value, Value::String(text.clone()));
        prop_assert_eq!(replaced, 0);
        // A lone surrogate escape inserted between characters becomes U+FFFD; the rest is kept.
        let at = text.char_indices().map(|(i, _)| i).nth(cut).unwrap_or(text.len());
        let (before, after) = text.split_at(at);
        let spliced = format!(
            "{}\\u{unit:04x}{}",
            &serde_json::to_string(before).unwrap()[..serde_json::to_string(before).unwrap().len() - 1],
            &serde_json::to_string(after).unwrap()[1..]
        );
        let (value, replaced) = parse_json_lenient(spliced.as_bytes()).unwrap();
        prop_assert_eq!(replaced, 1);
        prop_assert_eq!(value, Value::String(format!("{before}\u{FFFD}{after}")));
    }

    #[test]
    fn payload_properties_hold(bytes in payload_bytes()) {
        mcpl_classify::fuzz::inspect_payload_bytes(&bytes);
    }
}
