//! Tokens by their vendor's prefix alone, whatever their length: `sk-ant-…`, `sk-proj-…`,
//! `ghp_…`, `xoxb-…`, `AKIA…`. gitleaks' rules pin each format's exact length, so a key of a
//! newer or older length would pass them; this rule needs only the prefix and a random run.

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

/// Whether a byte is the first of some prefix: most word starts are not, and are passed over
/// without comparing a prefix.
static STARTS_A_PREFIX: [bool; 256] = {
    let mut table = [false; 256];
    let mut n = 0;
    while n < PREFIXES.len() {
        table[PREFIXES[n].as_bytes()[0] as usize] = true;
        n += 1;
    }
    table
};

/// Each prefix's first two bytes, a bit a pair: a word whose first two bytes start no prefix
/// is passed over without comparing one (every prefix is longer than two bytes).
static STARTS_A_PAIR: [u8; 8192] = {
    let mut table = [0u8; 8192];
    let mut n = 0;
    while n < PREFIXES.len() {
        let p = PREFIXES[n].as_bytes();
        let pair = (p[0] as usize) << 8 | p[1] as usize;
        table[pair >> 3] |= 1 << (pair & 7);
        n += 1;
    }
    table
};

/// Whether the bytes at `at` start some prefix's first two bytes.
fn starts_a_pair(b: &[u8], at: usize) -> bool {
    match (b.get(at), b.get(at + 1)) {
        (Some(&first), Some(&second)) => {
            let pair = usize::from(first) << 8 | usize::from(second);
            STARTS_A_PAIR[pair >> 3] & (1 << (pair & 7)) != 0
        }
        _ => false,
    }
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

/// Every token in `text` that starts with a vendor prefix (not inside a longer word) and goes
/// on with at least [`MIN_RUN`] token characters holding a letter and a digit.
pub(crate) fn scan(text: &str, found: &mut Vec<Found>) {
    let b = text.as_bytes();
    let mut at = 0;
    while at < b.len() {
        // Only a word's start can start a token: the rest of a word is passed over in one
        // tight loop, and a word's start is looked at only when its first two bytes start a
        // prefix.
        if !b[at].is_ascii_alphanumeric() {
            at += 1;
            continue;
        }
        let starts_word = at == 0 || !b[at - 1].is_ascii_alphanumeric();
        let prefix = (starts_word && STARTS_A_PREFIX[usize::from(b[at])] && starts_a_pair(b, at))
            .then(|| {
                PREFIXES
                    .iter()
                    .find(|p| p.as_bytes()[1] == b[at + 1] && b[at..].starts_with(p.as_bytes()))
            })
            .flatten();
        let Some(prefix) = prefix else {
            at += 1;
            while b.get(at).is_some_and(u8::is_ascii_alphanumeric) {
                at += 1;
            }
            continue;
        };
        let body = at + prefix.len();
        // AWS key ids are upper-case letters and digits only.
        let aws = matches!(*prefix, "AKIA" | "ASIA");
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
        if run.len() >= MIN_RUN
            && run.iter().any(u8::is_ascii_digit)
            && run.iter().any(u8::is_ascii_alphabetic)
        {
            found.push(Found {
                start: at,
                end,
                rule: "mcpl-vendor-prefix",
            });
            at = end;
        } else {
            at += 1;
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
}
