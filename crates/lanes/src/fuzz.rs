//! The entry point for the `lanes` fuzz target and the tests that replay what it found.
//!
//! It runs every lane on any JSON and checks lanes.md's properties, so a fuzz run finds leaks
//! and unstable output as well as panics.

use serde_json::Value;

use crate::{
    HiddenUris, ImageLedger, LiveCopy, Projector, REDACT_MIN_CHARS, Registry, RouteId, ServerName,
    ToolResult, UriPolicy, block_uris,
};

/// Parses `bytes` as JSON (lone surrogates mended) and runs every lane on it as a tool result,
/// and on its `content` as a push event, a channel message and both kinds of injection.
pub fn every_lane_on_json_bytes(bytes: &[u8]) {
    view_matches_value(bytes);
    if let Ok((value, _)) = mcpl_classify::parse_json_lenient(bytes) {
        every_lane(&value);
    }
}

/// Checks that a tool result read straight from bytes ([`ToolResult::from_view`]) gives, on
/// every route, the same copies and the same spill text as the same bytes parsed into a
/// `Value` ([`ResultView::of_value`](mcpl_classify::ResultView::of_value)), twice in a row on one host (so the session's memory
/// plays its part too).
pub fn view_matches_value(bytes: &[u8]) {
    let Ok((value, _)) = mcpl_classify::parse_json_lenient(bytes) else {
        return;
    };
    let (mended, replaced) = mcpl_classify::mend_lone_surrogates(bytes);
    let view = match mcpl_classify::ResultView::parse(&mended) {
        Ok(view) => view,
        Err(error) => panic!("the value reads, the view fails: {error}"),
    };
    // A `Value` keeps the last of two members with one key; raw structured content shows both
    // (decision 0142), so the two reads differ there by design.
    if let Some(mcpl_classify::DataView::Raw(raw)) = &view.structured
        && repeats_a_key(raw)
    {
        return;
    }
    // Mending only when the bytes do not read counts what mending first counts.
    let mut buffer = Vec::new();
    match mcpl_classify::parse_view_mending(bytes, &mut buffer) {
        Ok((_, counted)) => assert_eq!(counted, replaced, "mended escapes"),
        Err(error) => panic!("the view reads once mended, not when mending on failure: {error}"),
    }
    let server = ServerName::new("fuzz");
    let hosts = || (Registry::with_seed(1), ImageLedger::with_seed(2));
    let ((mut registry, mut ledger), (mut view_registry, mut view_ledger)) = (hosts(), hosts());
    let attach = |media: &mcpl_classify::Media<'_>, shown: &str| {
        format!("[attached {} bytes for {shown}]", media.data.len())
    };
    for route in RouteId::ALL.map(RouteId::route) {
        for _ in 0..2 {
            let mut lanes = Projector {
                registry: &mut registry,
                ledger: &mut ledger,
                route,
                server: &server,
                uri_policy: UriPolicy::Hidden,
            };
            let read = crate::ResultView::of_value(&value);
            let parsed = ToolResult::from_view(&read);
            let copies = lanes.tool_result(&parsed);
            // A spill made from the copies, before a second pass changes the session, is the
            // second pass's text, where that pass registers nothing anew: the ledger and the
            // registry keep every image and reference of the result.
            let of_copies = lanes
                .tool_result_spill_of(&parsed, &copies, &mut attach.clone())
                .map(std::borrow::Cow::into_owned);
            let spill = lanes.tool_result_spill(&parsed, &mut attach.clone());
            if parsed.blocks().count() <= crate::LEDGER_MAX_IMAGES
                && let Some(of_copies) = of_copies
            {
                assert_eq!(of_copies, spill, "the spill made from the copies");
            }
            let mut lanes = Projector {
                registry: &mut view_registry,
                ledger: &mut view_ledger,
                route,
                server: &server,
                uri_policy: UriPolicy::Hidden,
            };
            let read = ToolResult::from_view(&view);
            assert!(read.blocks().eq(parsed.blocks()), "the blocks");
            assert_eq!(lanes.tool_result(&read), copies, "the copies");
            assert_eq!(
                lanes.tool_result_spill(&read, &mut attach.clone()),
                spill,
                "the spill text"
            );
        }
    }
}

/// Whether an object anywhere in raw JSON has two members with one key.
fn repeats_a_key(raw: &serde_json::value::RawValue) -> bool {
    let mut keys = std::collections::HashSet::new();
    let mut repeats = false;
    let _ = mcpl_classify::raw_members(raw, &mut |key, value| {
        repeats = repeats || key.is_some_and(|key| !keys.insert(key)) || repeats_a_key(value);
    });
    repeats
}

/// Runs every lane on a value and checks: no block's uri in any output under the default policy,
/// one part per block where blocks are shown one by one, an idempotent script view, and a
/// stable stored copy.
pub fn every_lane(result: &Value) {
    let mut registry = Registry::with_seed(1);
    let mut ledger = ImageLedger::with_seed(2);
    let server = ServerName::new("fuzz");
    for route in RouteId::ALL.map(RouteId::route) {
        let mut lanes = Projector {
            registry: &mut registry,
            ledger: &mut ledger,
            route,
            server: &server,
            uri_policy: UriPolicy::Hidden,
        };
        let read = crate::ResultView::of_value(result);
        let parsed = ToolResult::from_view(&read);
        let copies = lanes.tool_result(&parsed);
        let again = lanes.tool_result(&parsed);
        assert_eq!(copies.stored, again.stored, "the stored copy is stable");
        let mut outputs = vec![copies.stored.clone().into_owned()];
        if let LiveCopy::Native(parts) = &copies.live {
            // One part per block, and one more where structured content is shown.
            if let Some(Value::Array(blocks)) = parsed.content {
                assert!(parts.len() == blocks.len() || parts.len() == blocks.len() + 1);
            }
            outputs.extend(parts.iter().map(part_text));
        }
        let script = lanes.script_result(result);
        assert_eq!(
            lanes.script_result(&script),
            script,
            "the script view is idempotent"
        );
        strings_of(&script, &mut outputs);
        check_no_uri(result, &outputs);

        let content = parsed.content.cloned().unwrap_or(Value::Null);
        let mut message_outputs = Vec::new();
        if let Ok(view) = lanes.push(&content) {
            assert_eq!(Some(view.parts.len()), content.as_array().map(Vec::len));
            message_outputs.push(view.stored);
            message_outputs.extend(view.parts.iter().map(part_text));
        }
        if let Ok(view) = lanes.channel_message(&content) {
            message_outputs.push(view.stored);
        }
        message_outputs.push(lanes.injection_user(&content).stored);
        message_outputs.push(lanes.injection_system(&content));
        check_no_uri(&content, &message_outputs);
    }
}

fn check_no_uri(scope: &Value, outputs: &[String]) {
    let hidden = HiddenUris::of(&[scope], UriPolicy::Hidden);
    for uri in block_uris(scope)
        .iter()
        .filter(|u| u.chars().count() >= REDACT_MIN_CHARS && !hidden.shows(u))
    {
        for output in outputs {
            assert!(
                !output.contains(uri.as_str()),
                "a block's uri reached a lane's output"
            );
        }
    }
}

/// A part's text. A native payload is sound base64, which no uri with a scheme can be spelled
/// in (`:` is not in its alphabet): it is bytes, exempt from redaction (decision 0029), so only
/// its media type counts.
fn part_text(part: &crate::Part<'_>) -> String {
    match part {
        crate::Part::Text(text) => text.clone(),
        crate::Part::Image { sniffed, .. } | crate::Part::Audio { sniffed, .. } => {
            sniffed.mime().to_owned()
        }
        crate::Part::Document { .. } => "application/pdf".to_owned(),
    }
}

/// Every key and string in a value, as a model reading it would see them; an image's or audio's
/// sound base64 data is bytes, as in [`part_text`].
fn strings_of(value: &Value, out: &mut Vec<String>) {
    use base64::Engine as _;
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings_of(v, out)),
        Value::Object(object) => {
            let payload = matches!(
                object.get("type").and_then(Value::as_str),
                Some("image" | "audio")
            );
            for (key, v) in object {
                out.push(key.clone());
                let bytes = payload
                    && key == "data"
                    && v.as_str().is_some_and(|data| {
                        base64::engine::general_purpose::STANDARD
                            .decode(data)
                            .is_ok()
                    });
                if !bytes {
                    strings_of(v, out);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}
