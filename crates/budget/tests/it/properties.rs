//! Property tests for fitting: the price holds, the head is a prefix and the tail a suffix in
//! order, images are never split, and the spill with its attachments holds the whole result.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_budget::{LocalSpillStore, PricedRoute};
use mcpl_lanes::{LiveCopy, Part};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::{TempDir, fit, payloads};

fn block() -> impl Strategy<Value = Value> {
    let image = |name: &'static str, mime: &'static str| json!({"type": "image", "mimeType": mime, "data": STANDARD.encode(mcpl_testkit::fixture(name))});
    prop_oneof![
        4 => "[a-z0-9 .,\n]{0,400}".prop_map(|t| json!({"type": "text", "text": t})),
        1 => "[一-龥。，\n]{0,200}".prop_map(|t| json!({"type": "text", "text": t})),
        1 => Just(image("image.png", "image/png")),
        1 => Just(image("large-dimensions.png", "image/png")),
        1 => Just(image("lossy.webp", "image/webp")),
        1 => Just(json!({"type": "audio", "mimeType": "audio/wav", "data": STANDARD.encode(mcpl_testkit::fixture("tone.wav"))})),
        1 => Just(json!({"type": "resource", "resource": {"uri": "file:///d.pdf", "mimeType": "application/pdf",
            "blob": STANDARD.encode(mcpl_testkit::fixture("document.pdf"))}})),
    ]
}

fn result() -> impl Strategy<Value = Value> {
    proptest::collection::vec(block(), 0..12).prop_map(|content| json!({ "content": content }))
}

fn route() -> impl Strategy<Value = PricedRoute> {
    prop_oneof![Just(PricedRoute::ANTHROPIC), Just(PricedRoute::TEXT_ONLY)]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 128,
        max_global_rejects: 100_000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_fitted_price_is_within_budget_or_the_result_is_whole_with_a_reason(
        result in result(), budget in 1u64..3000, route in route()
    ) {
        let dir = TempDir::new("prop-price");
        let mut store = LocalSpillStore::new(&dir.0).unwrap();
        let original = fit(&result, &route, u64::MAX, None);
        let fitted = fit(&result, &route, budget, Some(&mut store));
        let left_out = fitted
            .diagnostics
            .iter()
            .any(|d| d.ends_with("only a line naming its spill is sent"));
        if fitted.cut && left_out {
            // A budget smaller than the notice: one line naming the spill, never the result.
            prop_assert!(fitted.price.unwrap() <= 100);
            prop_assert!(fitted.copies.stored.starts_with("[the result was left out: "));
        } else if fitted.cut {
            prop_assert!(fitted.price.unwrap() <= budget);
        } else {
            prop_assert_eq!(&fitted.copies, &original.copies);
            if fitted.price.is_none_or(|p| p > budget) {
                prop_assert!(!fitted.diagnostics.is_empty());
            }
        }
    }

    #[test]
    fn head_and_tail_are_the_ends_of_the_original_in_order(
        result in result(), share in 0.05f64..0.95, route in route()
    ) {
        let dir = TempDir::new("prop-ends");
        let mut store = LocalSpillStore::new(&dir.0).unwrap();
        let whole = fit(&result, &route, u64::MAX, None);
        let original = whole.copies;
        // A budget below the result's price, so that most cases cut.
        let budget = ((whole.price.unwrap_or(0) as f64 * share) as u64).max(60);
        let fitted = fit(&result, &route, budget, Some(&mut store));
        prop_assume!(fitted.cut);
        let parts: Vec<&str> = fitted.copies.stored_parts().collect();
        // A budget smaller than the notice leaves the whole result out: nothing to compare.
        prop_assume!(parts.iter().any(|p| p.starts_with("[… ")));
        let notice = parts.iter().position(|p| p.starts_with("[… ")).unwrap();
        let (head, tail) = (&parts[..notice], &parts[notice + 1..]);
        // The original stored copy as one sequence of parts; for a stored-only live copy it is
        // one text, so compare as text too.
        let whole = original.stored_parts().collect::<Vec<_>>().join("\n");
        let head_text = head.join("\n");
        let tail_text = tail.join("\n");
        prop_assert!(whole.starts_with(&head_text), "head is not a prefix");
        prop_assert!(whole.ends_with(&tail_text), "tail is not a suffix");
        prop_assert!(head_text.len() + tail_text.len() <= whole.len());
        // Images are whole: every image kept is one of the original's, byte for byte, in order.
        let images = |live: &LiveCopy<'_>| -> Vec<String> {
            match live {
                LiveCopy::Native(parts) => parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::Image { data, .. } => Some((*data).to_owned()),
                        _ => None,
                    })
                    .collect(),
                LiveCopy::Stored => Vec::new(),
            }
        };
        let kept = images(&fitted.copies.live);
        let all = images(&original.live);
        let mut at = 0;
        for image in &kept {
            let found = all[at..].iter().position(|i| i == image);
            prop_assert!(found.is_some(), "an image that is not the original's, or out of order");
            at += found.unwrap_or(0) + 1;
        }
    }

    #[test]
    fn the_spill_holds_every_text_and_every_payload(result in result(), budget in 1u64..100) {
        let dir = TempDir::new("prop-spill");
        let mut store = LocalSpillStore::new(&dir.0).unwrap();
        let fitted = fit(&result, &PricedRoute::ANTHROPIC, budget, Some(&mut store));
        prop_assume!(fitted.spill.is_some());
        let spill = fitted.spill.unwrap();
        let text = std::fs::read_to_string(&spill.path).unwrap();
        // Every text, in order.
        let mut at = 0;
        for block in result["content"].as_array().unwrap() {
            if let Some(t) = block.get("text").and_then(Value::as_str) {
                let found = text[at..].find(t);
                prop_assert!(found.is_some(), "a text is missing from the spill");
                at += found.unwrap_or(0) + t.len();
            }
        }
        // Every payload's bytes, in order, and never base64 in the text.
        let saved: Vec<Vec<u8>> = spill.attachments.iter().map(|p| std::fs::read(p).unwrap()).collect();
        prop_assert!(saved == payloads(&result), "attachments differ from the payloads");
        for block in result["content"].as_array().unwrap() {
            if let Some(data) = block.get("data").and_then(Value::as_str).filter(|d| d.len() > 40) {
                prop_assert!(!text.contains(data), "base64 in the spill text");
            }
        }
    }
}
