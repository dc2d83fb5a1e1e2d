//! MCPL's render and registry conformance vectors (`conformance/`, format
//! `mcpl-bulk-references-1`), run against the lanes and the registry. The fetch cases run
//! against the fetcher, in the host.

use mcpl_lanes::{Part, Registry, Route, ToolResult, UriPolicy};
use serde_json::{Value, json};

use crate::Host;

/// The fixture origin; rendering never dials it.
const ORIGIN: &str = "http://127.0.0.1:47801";
/// The adapter's declared bound on every model-visible view, as agent-framework declares it.
const MAX_VIEW_CHARS: usize = 2048;

/// The model-visible views of one render: the push event's content as sent, the push's history
/// text, and a tool result's stored and live copies.
struct Views {
    texts: Vec<(&'static str, String)>,
    history: String,
}

fn render(host: &mut Host, blocks: &Value) -> Views {
    let result = json!({ "content": blocks });
    let mut lanes = host.on(&Route::ANTHROPIC, UriPolicy::Hidden);
    let copies = lanes.tool_result(&ToolResult::from_value(&result));
    let live = match &copies.live {
        mcpl_lanes::LiveCopy::Stored => copies.stored.clone(),
        mcpl_lanes::LiveCopy::Native(parts) => parts_json(parts),
    };
    let mut texts = vec![
        ("tool result stored", copies.stored.clone()),
        ("tool result live", live),
    ];
    match lanes.push(blocks) {
        Ok(view) => {
            texts.push(("push payload", parts_json(&view.parts)));
            texts.push(("push history", view.stored));
        }
        Err(_) => texts.push(("push refusal", String::new())),
    }
    Views {
        history: copies.stored,
        texts,
    }
}

fn parts_json(parts: &[Part<'_>]) -> String {
    let parts: Vec<Value> = parts
        .iter()
        .map(|part| match part {
            Part::Text(text) => json!({"type": "text", "text": text}),
            Part::Image { sniffed, data, .. } => {
                json!({"type": "image", "mimeType": sniffed.mime(), "data": data})
            }
            Part::Audio { sniffed, data } => {
                json!({"type": "audio", "mimeType": sniffed.mime(), "data": data})
            }
        })
        .collect();
    serde_json::to_string(&parts).unwrap()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn has_control_or_bidi(text: &str) -> bool {
    text.chars().any(|c| {
        matches!(c, '\u{0}'..='\u{1F}' | '\u{7F}'..='\u{9F}' | '\u{200E}' | '\u{200F}'
            | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
            && c != '\n'
    })
}

#[test]
fn render_cases_pass() {
    let vectors = mcpl_testkit::conformance_vectors();
    assert_eq!(vectors["format"], "mcpl-bulk-references-1");
    let mut passed = 0;
    for case in vectors["cases"].as_array().unwrap() {
        // Fetch cases are checked here too for the view before any fetch, which is a render.
        let operation = case["operation"].as_str().unwrap();
        if operation == "registry" {
            continue;
        }
        let id = case["id"].as_str().unwrap();
        let mut case = case.clone();
        mcpl_testkit::expand_vector(&mut case, ORIGIN);
        let expect = &case["expect"];
        let mut host = Host::new();
        let views = render(&mut host, &case["blocks"]);
        for (name, text) in &views.texts {
            assert!(
                text.chars().count() <= MAX_VIEW_CHARS,
                "{id}: {name} is {} chars",
                text.chars().count()
            );
            for hidden in strings(&expect["hidden"]) {
                assert!(!text.contains(&hidden), "{id}: {name} shows {hidden:?}");
            }
            for included in strings(&expect["includes"]) {
                assert!(text.contains(&included), "{id}: {name} lacks {included:?}");
            }
            if expect["truncationMarked"] == true {
                assert!(text.contains('…'), "{id}: {name} has no truncation mark");
            }
        }
        let records = registered_ids(&host.registry, &case["blocks"]);
        if expect["stub"] == true {
            assert!(!records.is_empty(), "{id}: no reference record");
            for (name, text) in &views.texts {
                for record in &records {
                    assert!(
                        text.contains(record.as_str()),
                        "{id}: {name} lacks {record}"
                    );
                }
            }
        }
        if let Some(payload) = expect["stubOrInlineBase64"].as_str() {
            use base64::Engine as _;
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(payload)
                .unwrap();
            let decoded = String::from_utf8_lossy(&decoded).into_owned();
            for (name, text) in &views.texts {
                let shown = records.iter().any(|r| text.contains(r.as_str()))
                    || text.contains(&decoded)
                    || text.contains(payload);
                assert!(shown, "{id}: {name} shows neither a stub nor the payload");
            }
        }
        if expect["cleanLabel"] == true {
            assert!(
                !has_control_or_bidi(&views.history),
                "{id}: history label not clean"
            );
        }
        if let Some(kind) = expect["kind"].as_str() {
            assert_eq!(
                mcpl_classify::classify(&case["blocks"][0]).kind_name(),
                kind,
                "{id}"
            );
        }
        if let Some(missing) = expect["missingFields"].as_array() {
            let record = host
                .registry
                .lookup(records.first().unwrap_or_else(|| panic!("{id}: no record")))
                .unwrap();
            for field in missing {
                let absent = match field.as_str().unwrap() {
                    "name" => record.claims.name.is_none(),
                    "mimeType" => record.claims.mime_type.is_none(),
                    "expiresAt" => record.claims.expires_at.is_none(),
                    "sizeBytes" => record.claims.size_bytes.is_none(),
                    other => panic!("{id}: unknown field {other}"),
                };
                assert!(absent, "{id}: {field} kept");
            }
            assert_eq!(
                record.claims.disposition,
                Some(mcpl_classify::Disposition::Never),
                "{id}"
            );
        }
        passed += 1;
    }
    // 28 render cases and 14 fetch cases' views before fetching.
    assert_eq!(passed, 42);
}

/// The ids of the records the blocks' references made, found by uri.
fn registered_ids(registry: &Registry, blocks: &Value) -> Vec<String> {
    let mut ids = Vec::new();
    for block in blocks.as_array().unwrap() {
        if let mcpl_classify::Block::Reference(reference) = mcpl_classify::classify(block)
            && let Some(record) = registry.find_uri(reference.uri)
        {
            ids.push(record.id.to_string());
        }
    }
    ids
}

#[test]
fn the_registry_case_passes() {
    let vectors = mcpl_testkit::conformance_vectors();
    let case = vectors["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["operation"] == "registry")
        .cloned()
        .unwrap();
    let mut case = case;
    mcpl_testkit::expand_vector(&mut case, ORIGIN);
    let registrations = case["registrations"].as_u64().unwrap() as usize;
    let block = &case["blocks"][0];
    let mut host = Host::new();
    let register = |host: &mut Host, uri: &str| {
        let mut block = block.clone();
        block["uri"] = Value::from(uri);
        let mcpl_classify::Block::Reference(reference) = mcpl_classify::classify(&block) else {
            panic!("a reference")
        };
        host.registry
            .register(&reference, &host.server.clone())
            .id
            .clone()
    };
    let first_uri = block["uri"].as_str().unwrap().to_owned();
    let first = register(&mut host, &first_uri);
    // Re-registering a live reference keeps its id.
    assert_eq!(register(&mut host, &first_uri), first);
    let mut issued = vec![first.clone()];
    for n in 1..registrations {
        issued.push(register(&mut host, &format!("{first_uri}/{n}")));
    }
    // The first record was evicted: a defined miss that says "unknown reference".
    let miss = host.registry.lookup(first.as_str()).unwrap_err();
    assert!(miss.to_string().contains("unknown reference"));
    let never_issued = host.registry.lookup("ref_zzzz_0000").unwrap_err();
    assert!(never_issued.to_string().contains("unknown reference"));
    // A new registration after eviction gets a new id; every id issued is distinct.
    let again = register(&mut host, &first_uri);
    assert_ne!(again, first);
    issued.push(again.clone());
    let mut distinct = issued.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), issued.len());
    // The new record carries the block's uri as its claimed testimony.
    assert_eq!(
        host.registry.lookup(again.as_str()).unwrap().claims.uri,
        first_uri
    );
}
