//! A single image whose price alone is over the budget is never sent: with room for the notice
//! it is left out and counted there; with a budget smaller than the notice the whole result goes
//! as one line naming its spill. Either way the image is in the spill.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_budget::{LocalSpillStore, PricedRoute, SpillNotice, SpillStore};
use mcpl_lanes::LiveCopy;
use serde_json::json;

use crate::{TempDir, fit};

/// A PNG whose header says 1400 x 1300: about 1,600 tokens on the anthropic route.
fn big_png() -> String {
    let mut png = mcpl_testkit::fixture("image.png");
    png[16..20].copy_from_slice(&1400u32.to_be_bytes());
    png[20..24].copy_from_slice(&1300u32.to_be_bytes());
    STANDARD.encode(png)
}

#[test]
fn an_image_dearer_than_the_budget_is_never_sent() {
    let result = json!({"content": [
        {"type": "text", "text": "The chart:"},
        {"type": "image", "mimeType": "image/png", "data": big_png()},
    ]});
    for budget in [10, 40, 200, 1_000] {
        let dir = TempDir::new(&format!("hard-cap-{budget}"));
        let mut store = LocalSpillStore::new(&dir.0)
            .unwrap()
            .with_notice(SpillNotice::ReadResult);
        let fitted = fit(
            &result,
            &PricedRoute::ANTHROPIC,
            budget,
            Some(&mut store as &mut dyn SpillStore),
        );
        assert!(
            matches!(fitted.copies.live, LiveCopy::Stored),
            "budget {budget}: the image went natively"
        );
        let spill = fitted.spill.as_ref().expect("a spill");
        assert_eq!(
            spill.attachments.len(),
            1,
            "budget {budget}: the image is in the spill"
        );
        assert!(
            fitted
                .copies
                .stored
                .contains(&format!("read_result(\"{}\")", spill.id)),
            "budget {budget}: {}",
            fitted.copies.stored
        );
        // Whatever the notice's room, the model gets a line or two, never the image's price.
        assert!(
            fitted.price.is_some_and(|p| p < 60),
            "budget {budget}: {:?}",
            fitted.price
        );
    }
}
