//! Tokens by their vendor's prefix alone, whatever their length: `sk-ant-…`, `sk-proj-…`,
//! `ghp_…`, `xoxb-…`, `AKIA…`. gitleaks' rules pin each format's exact length, so a key of a
//! newer or older length would pass them; this rule needs only the prefix and a random run.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, Input, MatchKind};

use crate::formats::Found;

/// The prefixes vendors put before a secret token, longest first where one starts another.
const PREFIXES: &[&str] = &[
    "sk-ant-",
    "sk-proj-",
    "sk-svcacct-",
    "sk-admin-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "rk_test_",
    "sk-",
    "github_pat_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "glpat-",
    "glsa_",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxr-",
    "xoxs-",
    "xapp-",
    "AKIA",
    "ASIA",
    "AIza",
    "ya29.",
    "npm_",
    "pypi-",
    "hf_",
    "shpat_",
    "shpss_",
    "dop_v1_",
    "SG.",
];

/// The fewest token characters after the prefix.
const MIN_RUN: usize = 16;

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

/// The searcher of every prefix, in [`PREFIXES`]' order: where several start at one byte, the
/// first listed is the one found. `None` only if it could not be built.
fn searcher() -> Option<&'static AhoCorasick> {
    static CELL: OnceLock<Option<AhoCorasick>> = OnceLock::new();
    CELL.get_or_init(|| {
        AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostFirst)
            .build(PREFIXES)
            .ok()
    })
    .as_ref()
}

/// Every token in `text` that starts with a vendor prefix (not inside a longer word) and goes
/// on with at least [`MIN_RUN`] token characters holding a letter and a digit.
///
/// The prefixes are found by one vectorised search (most text holds none); each place one
/// starts is looked at as a word's start would be. The search goes on from the byte after a
/// prefix that starts no token, so a prefix inside it is found too.
pub(crate) fn scan(text: &str, found: &mut Vec<Found>) {
    let Some(searcher) = searcher() else {
        return scan_words(text, found);
    };
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(m) = searcher.find(Input::new(b).range(from..)) {
        let at = m.start();
        from = at + 1;
        if at > 0 && b[at - 1].is_ascii_alphanumeric() {
            continue;
        }
        let prefix = PREFIXES[m.pattern().as_usize()];
        if let Some(end) = token_end(b, at, prefix) {
            found.push(Found {
                start: at,
                end,
                rule: "mcpl-vendor-prefix",
            });
            from = end;
        }
    }
}

/// Where the token that `prefix` starts at `at` ends, if it is one.
fn token_end(b: &[u8], at: usize, prefix: &str) -> Option<usize> {
    let body = at + prefix.len();
    // AWS key ids are upper-case letters and digits only.
    let aws = matches!(prefix, "AKIA" | "ASIA");
    let end = body
        + b[body..]
            .iter()
            .take_while(|&&c| {
                if aws {
                    c.is_ascii_uppercase() || c.is_ascii_digit()
                } else {
                    is_token_byte(c)
                }
            })
            .count();
    let run = &b[body..end];
    (run.len() >= MIN_RUN
        && run.iter().any(u8::is_ascii_digit)
        && run.iter().any(u8::is_ascii_alphabetic))
    .then_some(end)
}

/// [`scan`] word by word, without the searcher: each word's start compared with the prefixes
/// in turn. The searcher's stand-in, and the oracle its test checks it against.
fn scan_words(text: &str, found: &mut Vec<Found>) {
    let b = text.as_bytes();
    let mut at = 0;
    while at < b.len() {
        if !b[at].is_ascii_alphanumeric() {
            at += 1;
            continue;
        }
        let starts_word = at == 0 || !b[at - 1].is_ascii_alphanumeric();
        let prefix = starts_word
            .then(|| PREFIXES.iter().find(|p| b[at..].starts_with(p.as_bytes())))
            .flatten();
        match prefix.and_then(|prefix| token_end(b, at, prefix)) {
            Some(end) => {
                found.push(Found {
                    start: at,
                    end,
                    rule: "mcpl-vendor-prefix",
                });
                at = end;
            }
            None => {
                at += 1;
                while b.get(at).is_some_and(u8::is_ascii_alphanumeric) {
                    at += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<&str> {
        let mut found = Vec::new();
        scan(text, &mut found);
        found.iter().map(|f| &text[f.start..f.end]).collect()
    }

    #[test]
    fn a_vendor_token_of_any_length_is_found() {
        assert_eq!(
            tokens("key sk-ant-api03-Ab3Cd5Ef7Gh9Ij1K ok"),
            ["sk-ant-api03-Ab3Cd5Ef7Gh9Ij1K"]
        );
        assert_eq!(
            tokens("sk-proj-Ab3Cd5Ef7Gh9Ij1Kl3"),
            ["sk-proj-Ab3Cd5Ef7Gh9Ij1Kl3"]
        );
        assert_eq!(
            tokens("(ghp_a1B2c3D4e5F6g7H8i9J0)"),
            ["ghp_a1B2c3D4e5F6g7H8i9J0"]
        );
    }

    #[test]
    fn ordinary_words_with_a_prefix_are_kept() {
        for text in [
            "sk-learn-more-about-this",
            "task-abcdef0123456789",
            "ASIAN-FOOD-MARKET-2024",
            "hf_short1",
        ] {
            assert!(tokens(text).is_empty(), "{text}: {:?}", tokens(text));
        }
    }

    #[test]
    fn the_search_finds_what_a_walk_over_every_word_finds() {
        // Texts drawn from pieces that start, end and nest prefixes, tokens and word edges.
        let pieces = [
            "sk-",
            "sk-ant-",
            "ant-",
            "ghp_",
            "AKIA",
            "ASIA",
            "xoxb-",
            "SG.",
            "ya29.",
            "a1B2c3D4",
            "e5F6g7H8",
            "ZZ99",
            " ",
            "-",
            "_",
            ".",
            "x",
            "é",
            "0",
            "sk-sk-",
            "github_pat_",
            "dop_v1_",
            "pypi-",
        ];
        let mut state = 7u64;
        for _ in 0..20_000 {
            let mut text = String::new();
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            for _ in 0..(state >> 60) + 4 {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                text.push_str(pieces[(state >> 33) as usize % pieces.len()]);
            }
            let (mut fast, mut walk) = (Vec::new(), Vec::new());
            scan(&text, &mut fast);
            scan_words(&text, &mut walk);
            let spans = |f: &[Found]| f.iter().map(|f| (f.start, f.end)).collect::<Vec<_>>();
            assert_eq!(spans(&fast), spans(&walk), "{text}");
        }
    }
}
