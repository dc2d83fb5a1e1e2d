//! Copies taken from their result (`ToolResultCopies::detach`) fit as the result does: the same
//! fitted copies, prices, diagnostics and spill text, whichever way they are fitted. Results are
//! drawn at random (texts, signed urls, links, embedded texts, payloads, structured content,
//! blocks that are no block) and each is fitted both ways against the same budget; a result
//! whose copies do not detach is fitted from the copies already made
//! (`fit_tool_result_copies`), which must agree too.

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_budget::{
    Bound, Fitted, LocalSpillStore, PricedRoute, Pricer, SpillStore, fit_detached, fit_tool_result,
    fit_tool_result_copies,
};
use mcpl_lanes::{ResultView, ToolResult};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::{TempDir, with_projector};

/// What a fit gives, with the spill's folder and id taken out: its copies, prices, whether it
/// was cut, its diagnostics, and the spill text as written.
type Outcome = (
    String,
    String,
    Option<u64>,
    u64,
    bool,
    Vec<String>,
    Option<String>,
);

fn outcome(fitted: &Fitted<'_>, dir: &Path) -> Outcome {
    let folder = dir.display().to_string();
    let id = fitted.spill.as_ref().map(|s| s.id.to_string());
    let plain = |text: &str| {
        let text = text.replace(&folder, "DIR");
        match &id {
            Some(id) => text.replace(id, "ID"),
            None => text,
        }
    };
    let spill = fitted
        .spill
        .as_ref()
        .map(|s| plain(&std::fs::read_to_string(&s.path).unwrap()));
    (
        plain(&fitted.copies.stored),
        plain(&format!("{:?}", fitted.copies.live)),
        fitted.price,
        fitted.stored_price,
        fitted.cut,
        fitted.diagnostics.iter().map(|d| plain(d)).collect(),
        spill,
    )
}

fn store_of(store: &mut LocalSpillStore, spill: bool) -> Option<&mut dyn SpillStore> {
    match spill {
        true => Some(store as &mut dyn SpillStore),
        false => None,
    }
}

/// Fits `result` the usual way, and the way a caller that frees the result does: whether its
/// copies detached, and both outcomes.
fn both_ways(
    result: &Value,
    route: &PricedRoute,
    budget: u64,
    spill: bool,
) -> (bool, Outcome, Outcome) {
    let view = ResultView::of_value(result);
    let read = ToolResult::from_view(&view);
    let pricer = Pricer::new(&Bound, route);
    // Two folders of one length: a notice names its spill's path, and its length counts.
    let dir = TempDir::new("detached");
    let (whole_dir, freed_dir) = (dir.0.join("a"), dir.0.join("b"));
    let mut store = LocalSpillStore::new(&whole_dir).unwrap();
    let whole = with_projector(route, |projector| {
        let fitted = fit_tool_result(
            projector,
            &read,
            pricer,
            budget,
            store_of(&mut store, spill),
        );
        outcome(&fitted, &whole_dir)
    });
    let mut store = LocalSpillStore::new(&freed_dir).unwrap();
    let (detached, freed) = with_projector(route, |projector| {
        let copies = projector.tool_result(&read);
        match copies.detach(&read) {
            Ok(copies) => {
                let fitted = fit_detached(
                    projector,
                    copies,
                    pricer,
                    budget,
                    store_of(&mut store, spill),
                );
                (true, outcome(&fitted, &freed_dir))
            }
            Err(copies) => {
                let fitted = fit_tool_result_copies(
                    projector,
                    &read,
                    copies,
                    pricer,
                    budget,
                    store_of(&mut store, spill),
                );
                (false, outcome(&fitted, &freed_dir))
            }
        }
    });
    (detached, whole, freed)
}

const TINY_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==";

/// A block of text: a text, a url, a link or an embedded text.
fn text_block() -> impl Strategy<Value = Value> {
    let word = "[a-z0-9]{1,8}";
    prop_oneof![
        4 => "[a-z0-9 .,\n]{0,120}".prop_map(|t| json!({"type": "text", "text": t})),
        1 => (word, word).prop_map(|(host, sig)| json!({"type": "text",
            "text": format!("see https://{host}.example/r?sig={sig} now")})),
        1 => (word, word).prop_map(|(host, token)| json!({"type": "text",
            "text": format!("at https://{host}.example/a?token={token}-s3cr3t-value")})),
        2 => (word, word, "[a-z ]{0,60}").prop_map(|(host, sig, text)| json!({"type": "resource",
            "resource": {"uri": format!("https://{host}.example/r?sig={sig}"),
                "mimeType": "text/plain", "text": text}})),
        2 => (word, word).prop_map(|(host, name)| json!({"type": "resource_link",
            "uri": format!("https://{host}.example/l"), "name": format!("{name}.csv"),
            "mimeType": "text/csv"})),
    ]
}

/// Any block: a block of text, a payload, or something that is no block.
fn block() -> impl Strategy<Value = Value> {
    prop_oneof![
        9 => text_block(),
        1 => Just(json!({"type": "image", "data": TINY_PNG, "mimeType": "image/png"})),
        1 => Just(json!({"type": "image", "data": "", "mimeType": "image/png"})),
        1 => Just(json!({"type": "resource", "resource": {"uri": "file:///a.bin",
            "blob": STANDARD.encode([0u8, 1, 2, 3]), "mimeType": "application/octet-stream"}})),
        1 => prop_oneof![Just(json!(3)), Just(json!("loose")), Just(json!({"type": "text"}))],
    ]
}

fn result() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            proptest::collection::vec(text_block(), 0..40),
            proptest::collection::vec(block(), 0..40),
        ],
        prop_oneof![4 => Just(None), 1 => Just(Some(json!({"rows": [1, 2]})))],
        any::<bool>(),
    )
        .prop_map(|(content, structured, is_error)| {
            let mut result = json!({ "content": content });
            if let Some(structured) = structured {
                result["structuredContent"] = structured;
            }
            if is_error {
                result["isError"] = json!(true);
            }
            result
        })
}

/// Whether a result holds a payload a spill attaches, or data a spill shows that its stored
/// copy may not.
fn holds_more_than_its_stored_copy(result: &Value) -> bool {
    let payload = |block: &Value| {
        ["data", "blob"].iter().any(|field| {
            block[field].as_str().is_some_and(|s| !s.is_empty())
                || block["resource"][field]
                    .as_str()
                    .is_some_and(|s| !s.is_empty())
        })
    };
    result.get("structuredContent").is_some()
        || result["content"]
            .as_array()
            .is_none_or(|blocks| blocks.iter().any(payload))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn detached_copies_fit_as_their_result_does(
        result in result(),
        budget in 1u64..400,
        text_only in any::<bool>(),
        spill in prop_oneof![4 => Just(true), 1 => Just(false)],
    ) {
        let route = match text_only {
            true => PricedRoute::TEXT_ONLY,
            false => PricedRoute::ANTHROPIC,
        };
        let (detached, whole, freed) = both_ways(&result, &route, budget, spill);
        prop_assert_eq!(whole, freed);
        if detached {
            prop_assert!(!holds_more_than_its_stored_copy(&result), "{result}");
        }
    }
}

/// Many small blocks of text, links and embedded texts (a small `w2`): the copies detach, and
/// the result is cut and spilled the same either way.
#[test]
fn many_small_blocks_detach_and_fit_the_same() {
    let blocks: Vec<Value> = (0..400)
        .map(|i| match i % 4 {
            0 => json!({"type": "text", "text": format!("row {i}: the quick brown fox")}),
            1 => json!({"type": "resource", "resource": {
                "uri": format!("https://h.example/r/{i}?sig=s{i}"),
                "mimeType": "text/plain", "text": "jumps over the lazy dog"}}),
            2 => json!({"type": "resource_link", "uri": format!("https://h.example/l/{i}"),
                "name": format!("file{i}.csv"), "mimeType": "text/csv"}),
            _ => json!({"type": "text", "text": "and runs"}),
        })
        .collect();
    let result = json!({ "content": blocks });
    let (detached, whole, freed) = both_ways(&result, &PricedRoute::ANTHROPIC, 500, true);
    assert!(detached);
    assert!(whole.4, "the result is cut");
    assert!(whole.6.is_some(), "the result is spilled");
    assert_eq!(whole, freed);
}

/// Copies that borrow a server's text, or a payload, or need the result for their spill, stay
/// with their result.
#[test]
fn copies_that_need_their_result_do_not_detach() {
    let cases = [
        // One text redaction leaves as it is: the stored copy borrows it.
        json!({"content": [{"type": "text", "text": "one long text"}]}),
        json!({"content": [{"type": "text", "text": "a"},
            {"type": "image", "data": TINY_PNG, "mimeType": "image/png"}]}),
        json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "structuredContent": {"a": 1}}),
        json!({"content": {"type": "text", "text": "not an array"}}),
    ];
    for result in cases {
        let (detached, whole, freed) = both_ways(&result, &PricedRoute::ANTHROPIC, 5, true);
        assert!(!detached, "{result}");
        assert_eq!(whole, freed, "{result}");
    }
}
