//! Both copies fitted: the stored copy, which every later request carries, is priced and cut to
//! the budget on its own, whatever the live copy costs.

use mcpl_budget::{Bound, LocalSpillStore, PricedRoute, SpillStore, TokenEstimator};
use serde_json::{Value, json};

use crate::{TempDir, fit};

/// A 1×1 PNG: it costs the live copy a token or two, its placeholder several.
pub(crate) const TINY_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==";

fn tiny_pngs(n: usize) -> Value {
    let blocks: Vec<Value> = (0..n)
        .map(|_| json!({"type": "image", "data": TINY_PNG, "mimeType": "image/png"}))
        .collect();
    json!({"content": blocks})
}

#[test]
fn many_tiny_images_give_a_stored_copy_within_the_budget() {
    for (images, budget) in [(3_000, 1_000), (300, 200), (1_000, 5_000)] {
        let dir = TempDir::new("stored");
        let mut store = LocalSpillStore::new(&dir.0).unwrap();
        let result = tiny_pngs(images);
        let fitted = fit(
            &result,
            &PricedRoute::ANTHROPIC,
            budget,
            Some(&mut store as &mut dyn SpillStore),
        );
        let stored = Bound.count(&fitted.copies.stored);
        assert_eq!(fitted.stored_price, stored);
        assert!(
            stored <= budget,
            "{images} images: stored {stored} > {budget}"
        );
        assert!(fitted.price.is_some_and(|live| live <= budget), "{images}");
        assert!(fitted.cut && fitted.spill.is_some(), "{images}");
        // Placeholders are kept whole or left out; one line names the spill.
        let spill = &fitted.spill.as_ref().unwrap().path;
        let lines: Vec<&str> = fitted.copies.stored.lines().collect();
        assert!(lines.len() > 2, "{images}");
        for line in &lines {
            assert!(
                (line.starts_with("[image: image/png, ") && line.ends_with(']'))
                    || (line.starts_with("[… ") && line.ends_with(&format!("{spill}]"))),
                "{line}"
            );
        }
        assert_eq!(lines.iter().filter(|l| l.starts_with("[… ")).count(), 1);
    }
}

#[test]
fn a_stored_copy_within_the_budget_is_left_whole() {
    let result = tiny_pngs(20);
    let whole = fit(&result, &PricedRoute::ANTHROPIC, 100_000, None);
    let dir = TempDir::new("stored-whole");
    let mut store = LocalSpillStore::new(&dir.0).unwrap();
    let budget = whole.stored_price;
    let fitted = fit(
        &result,
        &PricedRoute::ANTHROPIC,
        budget,
        Some(&mut store as &mut dyn SpillStore),
    );
    assert!(!fitted.cut && fitted.spill.is_none());
    assert_eq!(fitted.copies.stored, whole.copies.stored);
    // One token less and the stored copy is cut, though the live copy fits.
    let fitted = fit(
        &result,
        &PricedRoute::ANTHROPIC,
        budget - 1,
        Some(&mut store as &mut dyn SpillStore),
    );
    assert!(fitted.price.is_some_and(|live| live < budget - 1));
    assert!(
        fitted.cut && fitted.stored_price < budget,
        "{} {:?}",
        fitted.stored_price,
        fitted.diagnostics
    );
}

#[test]
fn without_a_spill_store_an_over_budget_stored_copy_is_kept_whole_and_said() {
    let result = tiny_pngs(3_000);
    let fitted = fit(&result, &PricedRoute::ANTHROPIC, 1_000, None);
    assert!(!fitted.cut);
    assert!(fitted.stored_price > 1_000);
    assert_eq!(
        fitted.diagnostics,
        [format!(
            "the result is {} estimated tokens, over its budget of 1000, and no spill store is set; it is kept whole",
            fitted.price.unwrap()
        )]
    );
}
