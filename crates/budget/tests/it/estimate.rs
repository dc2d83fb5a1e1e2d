//! The prices against the exact o200k counter on every class of the corpus. `Bound`, the price
//! budgets use: never under o200k, and at most 1.3 times it, on each class and on each piece of
//! 1,000 characters. `Heuristic`, the quick figure a notice reports: never under it, and at most
//! 1.25 times it, on each class as a whole; never under it and at most 1.31 times it on each
//! piece of 1,000 characters (a last piece under 200 characters aside).

#[path = "../../benches/corpus/classes.rs"]
mod classes;

use mcpl_budget::{Bound, Heuristic, O200k, TokenEstimator};

/// The corpus's prose and code parts, measured with the generated classes.
const PARTS: &[(&str, &str)] = &[
    (
        "english prose",
        include_str!("../../benches/corpus/english-gpl3.txt"),
    ),
    (
        "rust code",
        include_str!("../../benches/corpus/rust-block.rs.txt"),
    ),
    (
        "json",
        include_str!("../../benches/corpus/json-peer-responses.json"),
    ),
    ("chinese", include_str!("../../benches/corpus/chinese.txt")),
    (
        "japanese",
        include_str!("../../benches/corpus/japanese.txt"),
    ),
    ("mixed", include_str!("../../benches/corpus/mixed.txt")),
];

/// Pieces of about `size` characters, cut at character boundaries.
fn pieces(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut chars) = (0, 0);
    for (i, c) in text.char_indices() {
        chars += 1;
        if chars >= size {
            let end = i + c.len_utf8();
            out.push(&text[start..end]);
            (start, chars) = (end, 0);
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// The corpus's parts and its generated classes, by name.
fn every_class() -> Vec<(&'static str, String)> {
    PARTS
        .iter()
        .map(|(name, text)| (*name, (*text).to_owned()))
        .chain(classes::classes())
        .collect()
}

#[test]
fn the_heuristic_is_between_one_and_one_and_a_quarter_of_o200k_on_every_class() {
    let mut failures = Vec::new();
    for (name, text) in every_class() {
        let text = text.as_str();
        let (exact, guess) = (O200k.count(text), Heuristic.count(text));
        let ratio = guess as f64 / exact as f64;
        let (mut low, mut high) = (f64::MAX, 0f64);
        for piece in pieces(text, 1000)
            .into_iter()
            .filter(|piece| piece.chars().count() >= 200)
        {
            let r = Heuristic.count(piece) as f64 / O200k.count(piece).max(1) as f64;
            (low, high) = (low.min(r), high.max(r));
        }
        eprintln!(
            "{name:<26} o200k {exact:>6} heuristic {guess:>6} ratio {ratio:.3} pieces {low:.3}..{high:.3}"
        );
        if !(1.0..=1.25).contains(&ratio) || low < 1.0 || high > 1.31 {
            failures.push(name);
        }
    }
    assert!(
        failures.is_empty(),
        "outside 1.0..=1.25 of o200k: {failures:?}"
    );
}

#[test]
fn bound_is_o200k_or_more_and_within_one_and_three_tenths_on_every_class() {
    let mut failures = Vec::new();
    for (name, text) in every_class() {
        let text = text.as_str();
        let (exact, bound) = (O200k.count(text), Bound.count(text));
        let ratio = bound as f64 / exact as f64;
        let mut high = 0f64;
        for piece in pieces(text, 1000) {
            let (exact, bound) = (O200k.count(piece), Bound.count(piece));
            if bound < exact {
                failures.push(format!("{name}: a piece at {bound} under o200k's {exact}"));
            }
            high = high.max(bound as f64 / exact.max(1) as f64);
        }
        eprintln!(
            "{name:<26} o200k {exact:>6} bound {bound:>6} ratio {ratio:.3} pieces ..{high:.3}"
        );
        if !(1.0..=1.3).contains(&ratio) || high > 1.3 {
            failures.push(format!("{name}: ratio {ratio:.3}, pieces up to {high:.3}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn the_single_token_table_is_o200k_s() {
    use mcpl_budget::{CJK_SINGLES, HANGUL_SINGLES, O200K_SINGLE_TOKENS};
    let mut table = Vec::new();
    for (first, count) in [CJK_SINGLES, HANGUL_SINGLES] {
        let mut bits = vec![0u8; count.div_ceil(8) as usize];
        for i in 0..count {
            let c = char::from_u32(first + i).unwrap().to_string();
            if O200k.count(&c) == 1 {
                bits[(i / 8) as usize] |= 1 << (i % 8);
            }
        }
        table.extend(bits);
    }
    assert_eq!(table.as_slice(), O200K_SINGLE_TOKENS.as_slice());
}
