//! A single image whose price alone is over the budget is never sent: with room for the notice
//! it goes as its placeholder, and the notice counts it and says how to read it back; with a
//! budget smaller than the notice the whole result goes as one line naming its spill. Either
//! way the image is in the spill.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_budget::PricedRoute;
use mcpl_lanes::LiveCopy;
use serde_json::json;

use crate::fit_spilled;

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
        let fitted = fit_spilled(&result, &PricedRoute::ANTHROPIC, budget, "hard-cap");
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
        // Whatever the notice's room, the model gets a line or three, never the image's price.
        assert!(
            fitted
                .price
                .is_some_and(|p| p < 60 || (budget >= 200 && p <= budget)),
            "budget {budget}: {:?}",
            fitted.price
        );
        // With room for its placeholder beside the notice, the image becomes its placeholder,
        // and the notice counts the image as left out.
        if budget >= 200 {
            let stored = &fitted.copies.stored;
            assert!(
                stored.starts_with("The chart:\n[image: image/png, ")
                    && stored.contains(" ref img_"),
                "budget {budget}: {stored}"
            );
            assert!(
                stored.contains(", 1 images); "),
                "budget {budget}: {stored}"
            );
        }
    }
}

#[test]
fn a_capped_image_keeps_its_place_between_the_texts_around_it() {
    // The image's placeholder sits where the image was, and both texts around it are whole.
    let result = json!({"content": [
        {"type": "text", "text": "before"},
        {"type": "image", "mimeType": "image/png", "data": big_png()},
        {"type": "text", "text": "after"},
    ]});
    let fitted = fit_spilled(&result, &PricedRoute::ANTHROPIC, 300, "hard-cap-between");
    let stored = &fitted.copies.stored;
    let lines: Vec<&str> = stored.lines().collect();
    assert_eq!(lines[0], "before", "{stored}");
    assert!(lines[1].starts_with("[image: image/png, "), "{stored}");
    assert!(stored.contains("\nafter"), "{stored}");
    assert!(stored.contains("1 images); read the rest with"), "{stored}");
    assert!(fitted.price.is_some_and(|p| p <= 300));
}

#[test]
fn the_notice_counts_the_documents_and_audio_it_left_out() {
    // A three-page PDF costs the anthropic route about 3,000 tokens a page: far over 800, so it
    // is left out of the cut, and the notice says so; a kept one would go natively.
    let pdf = STANDARD.encode(mcpl_testkit::fixture("three-pages.pdf"));
    let wav = STANDARD.encode(mcpl_testkit::fixture("tone.wav"));
    let filler = "a line of the log\n".repeat(400);
    let result = json!({"content": [
        {"type": "text", "text": filler},
        {"type": "resource", "resource": {"uri": "file:///r.pdf", "mimeType": "application/pdf", "blob": pdf}},
        {"type": "text", "text": filler},
    ]});
    let fitted = fit_spilled(&result, &PricedRoute::ANTHROPIC, 800, "notice-documents");
    assert!(fitted.cut);
    assert!(
        fitted.copies.stored.contains(" images, 1 documents); "),
        "{}",
        fitted.copies.stored
    );
    // Audio, on the one route that takes it natively.
    let result = json!({"content": [
        {"type": "text", "text": filler},
        {"type": "audio", "mimeType": "audio/wav", "data": wav},
        {"type": "text", "text": filler},
    ]});
    let fitted = fit_spilled(&result, &PricedRoute::OPENAI_CHAT, 300, "notice-audio");
    assert!(fitted.cut);
    assert!(
        fitted.copies.stored.contains(" images, 1 audio clips); "),
        "{}",
        fitted.copies.stored
    );
}
