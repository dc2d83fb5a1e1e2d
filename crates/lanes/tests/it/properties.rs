//! Property tests for lanes.md's four properties, on any JSON shaped like content:
//! no hidden uri or withheld base64 in any output, one shown thing per block in order and never a
//! panic, an idempotent script view, and a stable stored copy.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_lanes::{LiveCopy, Route, ToolResult, UriPolicy};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::Host;

/// Uris the generated blocks carry. A block's uri must not appear in any output, even where the
/// same string also stands in a label or in data.
const URIS: &[&str] = &[
    "https://secret.example.com/a?token=LEAK1",
    "demo://resource/LEAK2",
    "file:///private/LEAK3",
    "https://cdn.example.com/LEAK4.png",
];

fn payload() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(STANDARD.encode(mcpl_testkit::fixture("image.png"))),
        Just(STANDARD.encode(mcpl_testkit::fixture("lossy.webp"))),
        Just(STANDARD.encode(mcpl_testkit::fixture("archive.zip"))),
        Just(STANDARD.encode(mcpl_testkit::fixture("tone.wav"))),
        Just(STANDARD.encode(mcpl_testkit::fixture("plain.svg"))),
        Just(String::new()),
        "[A-Za-z0-9+/]{0,40}",
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[a-z ]{0,12}".prop_map(Value::from),
        proptest::sample::select(URIS).prop_map(Value::from),
        proptest::sample::select(
            &[
                "never",
                "ref",
                "image/png",
                "audio/wav",
                "image/svg+xml",
                "application/pdf",
                "text/plain",
                ""
            ][..]
        )
        .prop_map(Value::from),
        payload().prop_map(Value::from),
    ]
}

/// A content block of any kind, odd ones included.
fn block() -> impl Strategy<Value = Value> {
    let uri = proptest::sample::select(URIS).prop_map(Value::from);
    let maybe = |v: BoxedStrategy<Value>| proptest::option::of(v);
    prop_oneof![
        "[a-z .]{0,30}".prop_map(|t| json!({"type": "text", "text": t})),
        (payload(), maybe(leaf().boxed()), maybe(uri.clone().boxed()), maybe(leaf().boxed()))
            .prop_map(|(data, mime, uri, disposition)| {
                let mut b = Map::new();
                b.insert("type".into(), "image".into());
                b.insert("data".into(), data.into());
                if let Some(m) = mime { b.insert("mimeType".into(), m); }
                if let Some(u) = uri { b.insert("uri".into(), u); }
                if let Some(d) = disposition { b.insert("disposition".into(), d); }
                Value::Object(b)
            }),
        (payload(), leaf()).prop_map(|(data, mime)| json!({"type": "audio", "data": data, "mimeType": mime})),
        (uri.clone(), leaf(), leaf(), leaf()).prop_map(|(uri, name, mime, disposition)| json!({
            "type": "resource", "uri": uri, "name": name, "mimeType": mime, "sizeBytes": 12, "disposition": disposition})),
        (uri.clone(), leaf()).prop_map(|(uri, mime)| json!({"type": "image", "uri": uri, "mimeType": mime})),
        (uri.clone(), leaf()).prop_map(|(uri, name)| json!({"type": "resource_link", "uri": uri, "name": name})),
        (uri.clone(), "[a-z ]{0,20}", leaf()).prop_map(|(uri, text, mime)| json!({"type": "resource", "resource": {"uri": uri, "text": text, "mimeType": mime}})),
        (uri.clone(), payload(), leaf()).prop_map(|(uri, blob, mime)| json!({"type": "resource", "resource": {"uri": uri, "blob": blob, "mimeType": mime}})),
        (uri.clone(), leaf()).prop_map(|(uri, disposition)| json!({"type": "resource", "disposition": disposition, "resource": {"uri": uri, "text": "x"}})),
        leaf(),
        Just(json!({"type": "video"})),
    ]
}

/// A key of structured content: a word, a uri the session hides, a `type` (a block's when its
/// value names a block type), or one with an escape or a character outside ASCII.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,6}",
        proptest::sample::select(URIS).prop_map(str::to_owned),
        Just("type".to_owned()),
        Just("[withheld link 1]".to_owned()),
        "[a-zé\"\\\n]{1,4}",
    ]
}

fn result() -> impl Strategy<Value = Value> {
    let structured = block().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((key(), inner), 0..4)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    });
    (
        proptest::collection::vec(block(), 0..8),
        proptest::option::of(structured),
        any::<bool>(),
    )
        .prop_map(|(content, structured, error)| {
            let mut r = Map::new();
            r.insert("content".into(), Value::Array(content));
            if let Some(s) = structured {
                r.insert("structuredContent".into(), s);
            }
            if error {
                r.insert("isError".into(), true.into());
            }
            Value::Object(r)
        })
}

/// Base64 of inline data that also claims a disposition or carries a uri: withheld everywhere,
/// unless the same string also arrived somewhere a lane shows (another block's data, a label).
fn withheld_payloads(result: &Value) -> Vec<String> {
    let (mut withheld, mut elsewhere) = (Vec::new(), Vec::new());
    let mut walk = vec![result];
    while let Some(v) = walk.pop() {
        match v {
            Value::Object(o) => {
                let claims =
                    o.contains_key("disposition") || o.get("uri").is_some_and(Value::is_string);
                for (key, value) in o {
                    match value {
                        Value::String(s) if key == "data" && claims => withheld.push(s.clone()),
                        Value::String(s) => elsewhere.push(s.clone()),
                        other => walk.push(other),
                    }
                }
            }
            Value::Array(a) => walk.extend(a),
            Value::String(s) => elsewhere.push(s.clone()),
            _ => {}
        }
    }
    withheld.retain(|d| d.len() >= 16 && !elsewhere.contains(d));
    withheld
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn no_uri_and_no_withheld_data_in_any_output(result in result()) {
        let mut host = Host::new();
        let lanes = host.all_lanes(&result, UriPolicy::Hidden);
        let withheld = withheld_payloads(&result);
        let content = result["content"].clone();
        for (scope, outputs) in [(&result, lanes.result_texts()), (&content, lanes.message_texts())] {
            let uris = mcpl_lanes::block_uris(scope);
            for output in &outputs {
                for uri in &uris {
                    prop_assert!(!output.contains(uri.as_str()), "{uri} in {output}");
                }
                for data in &withheld {
                    prop_assert!(!output.contains(data.as_str()), "withheld data shown");
                }
            }
        }
    }

    #[test]
    fn never_and_credential_uris_stay_hidden_under_the_opt_in(result in result()) {
        let mut host = Host::new();
        let lanes = host.all_lanes(&result, UriPolicy::CredentialFree);
        let content = result["content"].clone();
        for (scope, outputs) in [(&result, lanes.result_texts()), (&content, lanes.message_texts())] {
            let hidden = mcpl_lanes::HiddenUris::of(&[scope], UriPolicy::CredentialFree);
            let uris = mcpl_lanes::block_uris(scope);
            for output in &outputs {
                for uri in uris.iter().filter(|u| !hidden.shows(u)) {
                    prop_assert!(!output.contains(uri.as_str()), "{uri} shown in {output}");
                }
            }
        }
    }

    #[test]
    fn one_shown_thing_per_block_in_order(content in proptest::collection::vec(block(), 1..10)) {
        let mut host = Host::new();
        let content = Value::Array(content);
        let result = json!({"content": content.clone()});
        let read = mcpl_lanes::ResultView::of_value(&result);
        let copies = host.on(&Route::ANTHROPIC, UriPolicy::Hidden).tool_result(&ToolResult::from_view(&read));
        if let LiveCopy::Native(parts) = &copies.live {
            prop_assert_eq!(parts.len(), content.as_array().unwrap().len());
        }
        if let Ok(view) = host.on(&Route::ANTHROPIC, UriPolicy::Hidden).push(&content) {
            prop_assert_eq!(view.parts.len(), content.as_array().unwrap().len());
        }
        let view = host.on(&Route::TEXT_ONLY, UriPolicy::Hidden).injection_user(&content);
        prop_assert_eq!(view.parts.len(), content.as_array().unwrap().len());
        let script = host.on(&Route::ANTHROPIC, UriPolicy::Hidden).script_result(&result);
        prop_assert_eq!(script["content"].as_array().unwrap().len(), content.as_array().unwrap().len());
    }

    #[test]
    fn a_result_read_from_bytes_projects_as_its_value_does(result in result()) {
        mcpl_lanes::fuzz::view_matches_value(&serde_json::to_vec(&result).unwrap());
        // Spaces between tokens, which raw structured content keeps (decision 0142).
        mcpl_lanes::fuzz::view_matches_value(&serde_json::to_vec_pretty(&result).unwrap());
    }

    #[test]
    fn the_script_view_is_idempotent(result in result()) {
        let mut host = Host::new();
        let once = host.on(&Route::ANTHROPIC, UriPolicy::Hidden).script_result(&result);
        let twice = host.on(&Route::ANTHROPIC, UriPolicy::Hidden).script_result(&once);
        prop_assert_eq!(once, twice);
    }

    #[test]
    fn the_stored_copy_is_stable(result in result()) {
        let mut host = Host::new();
        let read = mcpl_lanes::ResultView::of_value(&result);
        let first = host.on(&Route::ANTHROPIC, UriPolicy::Hidden).tool_result(&ToolResult::from_view(&read)).stored;
        let read = mcpl_lanes::ResultView::of_value(&result);
        let second = host.on(&Route::ANTHROPIC, UriPolicy::Hidden).tool_result(&ToolResult::from_view(&read)).stored;
        prop_assert_eq!(first, second);
    }
}
