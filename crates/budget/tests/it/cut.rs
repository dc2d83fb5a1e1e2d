//! `cut` on its own: why a result over its budget could not be cut, as a [`CutError`] a host
//! can match on, in the words `fit_tool_result`'s diagnostics quote.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_budget::{Bound, CutError, PricedRoute, Pricer, Unpriceable, cut};
use mcpl_lanes::{RouteId, ToolResult};

use crate::with_projector;
use rstest::rstest;
use serde_json::{Value, json};

const SPILL_PATH: &str = "/tmp/mcpl-spill/result.txt";

/// A long log, with a PNG after it when `image` is set.
fn result(image: bool) -> Value {
    let mut content = vec![json!({"type": "text", "text": "a line of a long log\n".repeat(400)})];
    if image {
        content.push(json!({"type": "image", "mimeType": "image/png",
            "data": STANDARD.encode(mcpl_testkit::fixture("image.png"))}));
    }
    json!({ "content": content })
}

/// What `cut` says of the result on `route` with `budget`: the fitted price, or the error.
fn cut_on(result: &Value, route: &PricedRoute, budget: u64) -> Result<Option<u64>, CutError> {
    let copies = with_projector(route, |projector| {
        let read: &_ = Box::leak(Box::new(mcpl_lanes::ResultView::of_value(result)));
        projector.tool_result(&ToolResult::from_view(read))
    });
    let pricer = Pricer::new(&Bound, route);
    cut(&copies, pricer, budget, SPILL_PATH).map(|fitted| fitted.map(|(_, price)| price))
}

fn without_images() -> PricedRoute {
    let mut route = PricedRoute::ANTHROPIC;
    route.images = None;
    route
}

// 31 tokens: o200k's count of the longest notice naming `SPILL_PATH`, and its separators.
#[rstest]
#[case::fits(false, PricedRoute::ANTHROPIC, 100_000, Ok(None))]
#[case::notice_over_budget(false, PricedRoute::ANTHROPIC, 10, Err(CutError::NoticeOverBudget { reserve: 31 }))]
#[case::image_unpriceable(true, without_images(), 100, Err(CutError::Unpriceable(Unpriceable::NoImageCalculator { route: RouteId::Anthropic })))]
fn cut_says_why_it_cannot_cut(
    #[case] image: bool,
    #[case] route: PricedRoute,
    #[case] budget: u64,
    #[case] expected: Result<Option<u64>, CutError>,
) {
    assert_eq!(cut_on(&result(image), &route, budget), expected);
}

#[test]
fn a_cut_result_is_within_its_budget() {
    let price = cut_on(&result(true), &PricedRoute::ANTHROPIC, 500).unwrap();
    assert!(price.is_some_and(|price| price <= 500), "{price:?}");
}

#[rstest]
#[case(CutError::NoticeOverBudget { reserve: 46 }, "the budget cannot hold the omission notice (46 tokens)")]
#[case(CutError::NoCut, "no cut within the budget was found")]
#[case(
    CutError::Unpriceable(Unpriceable::NoImageCalculator { route: RouteId::Anthropic }),
    "route anthropic cannot price images"
)]
fn cut_errors_read_as_the_diagnostics_quote_them(#[case] error: CutError, #[case] words: &str) {
    assert_eq!(error.to_string(), words);
}
