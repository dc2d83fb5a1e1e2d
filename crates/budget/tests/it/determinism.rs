//! The same result and budget give the same bytes to the model on every run: the cut never
//! depends on the random id the spill drew. Each run below spills to a store of its own, so each
//! notice names another id; with the id masked, the fitted copies are the same.

use mcpl_budget::{
    Bound, LocalSpillStore, O200k, PricedRoute, Pricer, SpillNotice, SpillStore, TokenEstimator,
};
use serde_json::json;

use crate::{TempDir, fit_spilled};

/// `text` with every spill id replaced by `spill_<id>`.
fn masked(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("spill_") {
        out.push_str(&rest[..at + 6]);
        let id = &rest[at + 6..];
        let letters = id.bytes().take_while(u8::is_ascii_lowercase).count();
        out.push_str("<id>");
        rest = &id[letters..];
    }
    out.push_str(rest);
    out
}

#[test]
fn a_result_is_cut_at_the_same_place_whatever_id_its_spill_drew() {
    // Lines of words and numbers whose prices differ, so a notice one token dearer moves the
    // cut by a line.
    let text: String = (0..3_000)
        .map(|i| format!("row {i}: value {} of {}\n", i * 7, i % 13))
        .collect();
    let result = json!({"content": [{"type": "text", "text": text}]});
    let mut seen = Vec::new();
    for run in 0..12 {
        let fitted = fit_spilled(
            &result,
            &PricedRoute::ANTHROPIC,
            777,
            &format!("determinism-{run}"),
        );
        assert!(fitted.cut);
        assert!(O200k.count(&fitted.copies.stored) <= 777);
        assert_eq!(fitted.stored_price, Bound.count(&fitted.copies.stored));
        seen.push((masked(&fitted.copies.stored), fitted.stored_price));
    }
    assert!(
        seen.windows(2).all(|w| w[0] == w[1]),
        "{:#?}",
        seen.iter().map(|s| s.1).collect::<Vec<_>>()
    );
}

#[test]
fn a_spill_id_costs_the_same_whatever_letters_it_drew() {
    let mut prices: Vec<u64> = (0..200u64)
        .map(|seed| {
            let id: String = (0..28)
                .map(|i| (b'a' + ((seed * 7919 + i * 104_729) % 26) as u8) as char)
                .collect();
            Bound.count(&format!("[… 12 tokens omitted (40 characters, 0 images); read the rest with read_result(\"spill_{id}\")]"))
        })
        .collect();
    prices.dedup();
    assert_eq!(prices.len(), 1, "{prices:?}");
}

/// `text` with the random part of every reference id made `xxxx`.
fn refs_masked(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("ref_") {
        out.push_str(&rest[..at + 4]);
        rest = &rest[at + 4..];
        let counter = rest.bytes().take_while(u8::is_ascii_alphanumeric).count();
        out.push_str(&rest[..counter]);
        rest = &rest[counter..];
        if let Some(random) = rest.strip_prefix('_') {
            out.push_str("_xxxx");
            rest = &random[4.min(random.len())..];
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn a_result_with_references_is_cut_at_the_same_place_whatever_their_random_ids() {
    use mcpl_budget::{Pricer, fit_tool_result};
    use mcpl_lanes::{ImageLedger, Projector, Registry, ServerName, ToolResult, UriPolicy};
    // Lines that each name a link the lanes hide behind a reference id.
    let mut blocks = Vec::new();
    for i in 0..400 {
        blocks.push(
            json!({"type": "text", "text": format!("row {i}: value {} of {}", i * 7, i % 13)}),
        );
        blocks.push(json!({"type": "resource_link", "uri": format!("https://files.example/{i}?token=t{i}"), "name": format!("file-{i}.txt")}));
    }
    let result = json!({"content": blocks});
    let route = PricedRoute::ANTHROPIC;
    let mut seen = Vec::new();
    for seed in 0..8u64 {
        let dir = TempDir::new(&format!("determinism-refs-{seed}"));
        let mut store = LocalSpillStore::new(&dir.0)
            .unwrap()
            .with_notice(SpillNotice::ReadResult);
        let (mut registry, mut ledger) = (
            Registry::with_seed(seed * 7919 + 1),
            ImageLedger::with_seed(seed),
        );
        let server = ServerName::new("test");
        let mut projector = Projector::new(
            &mut registry,
            &mut ledger,
            &route.lanes,
            &server,
            UriPolicy::Hidden,
        );
        let pricer = Pricer::new(&Bound, &route);
        let read = mcpl_lanes::ResultView::of_value(&result);
        let fitted = fit_tool_result(
            &mut projector,
            &ToolResult::from_view(&read),
            pricer,
            1_500,
            Some(&mut store as &mut dyn SpillStore),
        );
        assert!(fitted.cut);
        assert!(
            fitted.copies.stored.contains("ref_"),
            "{}",
            fitted.copies.stored
        );
        seen.push(refs_masked(&masked(&fitted.copies.stored)));
    }
    let first = &seen[0];
    for (seed, other) in seen.iter().enumerate() {
        let differs = first.lines().zip(other.lines()).find(|(a, b)| a != b);
        assert!(
            first == other,
            "seed {seed}: {differs:?}, {} and {} lines",
            first.lines().count(),
            other.lines().count()
        );
    }
}

/// [`Bound`] with no way to be shared between threads, so a fit counts a result's totals on
/// its own thread, after the spill.
struct Unshared;

impl TokenEstimator for Unshared {
    fn count(&self, text: &str) -> u64 {
        Bound.count(text)
    }

    fn count_within(&self, text: &str, limit: u64) -> Option<u64> {
        Bound.count_within(text, limit)
    }

    fn estimate(&self, text: &str) -> u64 {
        Bound.estimate(text)
    }

    fn prefix_within(&self, text: &str, budget: u64) -> usize {
        Bound.prefix_within(text, budget)
    }

    fn suffix_within(&self, text: &str, budget: u64) -> usize {
        Bound.suffix_within(text, budget)
    }
}

/// A big result's totals counted on a second core while its spill is written (decision 0173)
/// are the totals the cut counts after it: the notice says the same, for a result whose live
/// copy is its stored text and for one with images, priced or estimated.
#[test]
fn totals_counted_beside_the_spill_are_the_cut_s_own() {
    assert!(Unshared.as_sync().is_none());
    assert!(Bound.as_sync().is_some());
    let text: String = (0..40_000)
        .map(|i| format!("row {i}: value {} of {} é漢\n", i * 7, i % 13))
        .collect();
    let image = json!({"type": "image", "data": crate::stored::TINY_PNG, "mimeType": "image/png"});
    let results = [
        json!({"content": [{"type": "text", "text": text}]}),
        json!({"content": [{"type": "text", "text": &text[..text.len() / 2]}, image, {"type": "text", "text": &text[text.len() / 2..]}]}),
    ];
    for (n, result) in results.iter().enumerate() {
        assert!(serde_json::to_string(result).unwrap().len() > 512 << 10);
        let mut notices = Vec::new();
        for (which, estimator) in [
            ("shared", &Bound as &dyn TokenEstimator),
            ("unshared", &Unshared),
        ] {
            let dir = TempDir::new(&format!("totals-beside-{n}-{which}"));
            let mut store = LocalSpillStore::new(&dir.0)
                .unwrap()
                .with_notice(SpillNotice::ReadResult);
            let fitted = crate::fit_with(
                result,
                &PricedRoute::ANTHROPIC,
                Pricer::new(estimator, &PricedRoute::ANTHROPIC),
                2_000,
                Some(&mut store as &mut dyn SpillStore),
            );
            assert!(fitted.cut && fitted.spill.is_some(), "{n} {which}");
            notices.push((
                masked(&fitted.copies.stored),
                fitted.price,
                fitted.stored_price,
            ));
        }
        assert_eq!(notices[0], notices[1], "result {n}");
        assert!(notices[0].0.contains("tokens omitted"), "{}", notices[0].0);
    }
}
