//! The configurable limits: 5 MiB per native image and 64 KiB opaque by default.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_classify::{Block, Limits, Summary, classify};
use rstest::rstest;
use serde_json::json;

#[test]
fn an_image_over_five_mib_is_renderable_but_over_the_native_limit() {
    let size = 5 * 1024 * 1024 + 1;
    let block = json!({"type": "image", "mimeType": "image/png", "data": STANDARD.encode(mcpl_testkit::grown_png("image.png", size))});
    let Block::InlineImage(media) = classify(&block) else {
        panic!("an inline image")
    };
    assert!(media.renderable());
    assert_eq!(media.decoded_bytes, Some(size as u64));
    assert!(!media.within(Limits::DEFAULT.native_image_bytes));
    assert!(media.within(size as u64));

    let summary = Summary::of(&classify(&block), &Limits::default());
    assert_eq!(summary.within_native_limit, Some(false));
    assert_eq!(summary.within_opaque_limit, Some(false));
    let raised = Limits::DEFAULT.with_native_image_bytes(8 * 1024 * 1024);
    assert_eq!(
        Summary::of(&classify(&block), &raised).within_native_limit,
        Some(true)
    );
}

#[rstest]
#[case::native_image(Limits::DEFAULT.native_image_bytes)]
#[case::opaque(Limits::DEFAULT.opaque_bytes)]
fn exactly_at_the_limits_is_within_them(#[case] limit: u64) {
    let block = json!({"type": "image", "data": STANDARD.encode(mcpl_testkit::grown_png("image.png", limit as usize))});
    let Block::InlineImage(media) = classify(&block) else {
        panic!("an inline image")
    };
    assert!(media.within(limit));
    assert!(!media.within(limit - 1));
}

#[test]
fn the_default_limits_are_five_mib_and_sixty_four_kib() {
    assert_eq!(Limits::default().native_image_bytes, 5 * 1024 * 1024);
    assert_eq!(Limits::default().opaque_bytes, 64 * 1024);
}
