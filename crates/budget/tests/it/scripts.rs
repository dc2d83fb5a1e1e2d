//! The texts the old per-class weights undercounted, each fitted to a budget and counted by
//! o200k as sent: Mongolian, Cherokee, Canadian syllabics, Amharic, Tibetan, Braille, Arabic
//! with diacritics, private-use characters, upper-case hex and UUIDs, and 10,000 one-character
//! text blocks. Each must come out within its budget by o200k's own count.

use mcpl_budget::{O200k, PricedRoute, TokenEstimator};
use mcpl_lanes::LiveCopy;
use serde_json::{Value, json};

use crate::fit_spilled;

/// About `n` characters cycling through `range`, with a space every `word` characters.
fn script(range: std::ops::RangeInclusive<u32>, word: usize, n: usize) -> String {
    let chars: Vec<char> = range.filter_map(char::from_u32).collect();
    (0..n)
        .map(|i| {
            if word > 0 && i % word == word - 1 {
                ' '
            } else {
                chars[(i * 7 + i / 13) % chars.len()]
            }
        })
        .collect()
}

fn hex_upper(n: usize) -> String {
    (0..n)
        .map(|i| format!("{:08X}", (i as u64).wrapping_mul(0x9E37_79B9) as u32))
        .collect::<Vec<_>>()
        .join("\n")
}

fn uuids_upper(n: usize) -> String {
    (0..n)
        .map(|i| {
            let x = (i as u128).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835);
            let h = format!("{x:032X}");
            format!(
                "{}-{}-{}-{}-{}",
                &h[..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..]
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the model is sent of a fitted result, as text.
fn sent(fitted: &mcpl_budget::Fitted<'_>) -> String {
    match &fitted.copies.live {
        LiveCopy::Stored => fitted.copies.stored.to_string(),
        LiveCopy::Native(parts) => parts
            .iter()
            .filter_map(|p| match p {
                mcpl_lanes::Part::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

#[test]
fn texts_the_old_weights_undercounted_fit_their_budget_by_o200ks_count() {
    let texts: Vec<(&str, String)> = vec![
        ("mongolian", script(0x1820..=0x1877, 7, 60_000)),
        ("cherokee", script(0x13A0..=0x13F4, 6, 60_000)),
        ("canadian syllabics", script(0x1401..=0x166C, 6, 60_000)),
        ("amharic", script(0x1200..=0x135A, 5, 60_000)),
        ("tibetan", script(0x0F40..=0x0F6C, 4, 60_000)),
        ("braille", script(0x2800..=0x28FF, 0, 60_000)),
        ("arabic with diacritics", {
            let letters: Vec<char> = ('\u{0628}'..='\u{064A}').collect();
            let marks: Vec<char> = ('\u{064B}'..='\u{0652}').collect();
            (0..40_000)
                .map(|i| {
                    format!(
                        "{}{}{}",
                        letters[i % letters.len()],
                        marks[i % marks.len()],
                        if i % 5 == 4 { " " } else { "" }
                    )
                })
                .collect()
        }),
        ("private use", script(0xE000..=0xF8FF, 0, 40_000)),
        ("upper-case hex", hex_upper(8_000)),
        ("upper-case uuids", uuids_upper(3_000)),
    ];
    for (name, text) in texts {
        for budget in [300u64, 3_000, 20_000] {
            let result = json!({"content": [{"type": "text", "text": text}]});
            let fitted = fit_spilled(&result, &PricedRoute::ANTHROPIC, budget, "scripts");
            let tokens = O200k.count(&sent(&fitted));
            assert!(
                tokens <= budget,
                "{name} at {budget}: {tokens} o200k tokens sent"
            );
            let stored = O200k.count(&fitted.copies.stored);
            assert!(
                stored <= budget,
                "{name} at {budget}: {stored} o200k tokens stored"
            );
        }
    }
}

#[test]
fn ten_thousand_one_character_blocks_fit_their_budget_by_o200ks_count() {
    let blocks: Vec<Value> = (0..10_000)
        .map(|i| json!({"type": "text", "text": char::from(b'A' + (i % 26) as u8).to_string()}))
        .collect();
    let result = json!({"content": blocks});
    for budget in [500u64, 5_000] {
        let fitted = fit_spilled(&result, &PricedRoute::ANTHROPIC, budget, "one-char");
        let tokens = O200k.count(&sent(&fitted));
        assert!(tokens <= budget, "at {budget}: {tokens} o200k tokens sent");
        assert!(O200k.count(&fitted.copies.stored) <= budget);
    }
}
