//! `Bound` against its oracle, o200k (`bpe-openai`), on strings drawn from all of Unicode.
//!
//! The properties: `Bound` splits a text into o200k's own pieces; its price is never under
//! o200k's count; and the prefix and suffix it keeps for a budget cost o200k no more than the
//! budget. Each case is a mix of fragments from a grammar: characters from anywhere in Unicode
//! (every plane, unassigned and private use included), from each script's block, hex and base64
//! in both cases, UUIDs, digits, white-space runs of every kind, combining marks and variation
//! selectors, one rare character repeated, English words, code and JSON. `MCPL_BOUND_CASES` sets
//! the number of cases (`cargo xtask bound` runs many); failing seeds are kept in
//! `proptest-regressions/`.

use mcpl_budget::{Bound, O200k, TokenEstimator};

use crate::bound_check::oracle;
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("MCPL_BOUND_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(400)
}

/// Blocks and scripts, as ranges of code points: where tokenizers differ most.
const BLOCKS: &[(u32, u32)] = &[
    (0x0000, 0x007F),    // Basic Latin, control characters included
    (0x0080, 0x024F),    // Latin-1, Latin Extended
    (0x0250, 0x036F),    // IPA, spacing modifiers, combining diacritics
    (0x0370, 0x052F),    // Greek, Cyrillic
    (0x0530, 0x05FF),    // Armenian, Hebrew
    (0x0600, 0x08FF),    // Arabic, Syriac, Thaana, NKo, Samaritan
    (0x0900, 0x0DFF),    // Indic scripts
    (0x0E00, 0x0FFF),    // Thai, Lao, Tibetan
    (0x1000, 0x139F),    // Myanmar, Georgian, Hangul Jamo, Ethiopic
    (0x13A0, 0x18AF),    // Cherokee, Canadian syllabics, Ogham, Runic, Khmer, Mongolian
    (0x1900, 0x1FFF),    // Limbu ... Greek Extended
    (0x2000, 0x2BFF),    // punctuation, symbols, arrows, math, Braille, boxes
    (0x2C00, 0x2FFF),    // Glagolitic, Coptic, Tifinagh, CJK radicals
    (0x3000, 0x33FF),    // CJK symbols, kana, Bopomofo, Hangul compatibility
    (0x3400, 0x4DBF),    // CJK Extension A
    (0x4E00, 0x9FFF),    // CJK Unified Ideographs
    (0xA000, 0xABFF),    // Yi, Lisu, Vai, Bamum ...
    (0xAC00, 0xD7FF),    // Hangul syllables
    (0xE000, 0xF8FF),    // private use
    (0xF900, 0xFFFF),    // compatibility, presentation forms, half-width, specials
    (0x10000, 0x1FFFF),  // historic scripts, music, emoji
    (0x20000, 0x3FFFF),  // CJK Extensions B and later
    (0xE0000, 0xE01EF),  // tags, variation selectors supplement
    (0xF0000, 0x10FFFF), // supplementary private use
];

fn char_in(range: (u32, u32)) -> impl Strategy<Value = char> {
    (range.0..=range.1).prop_map(|c| char::from_u32(c).unwrap_or('\u{FFFD}'))
}

fn any_char() -> impl Strategy<Value = char> {
    prop_oneof![
        3 => any::<char>(),
        5 => proptest::sample::select(BLOCKS).prop_flat_map(char_in),
    ]
}

fn from_alphabet(alphabet: &'static str, len: std::ops::Range<usize>) -> BoxedStrategy<String> {
    let chars: Vec<char> = alphabet.chars().collect();
    proptest::collection::vec(proptest::sample::select(chars), len)
        .prop_map(|v| v.into_iter().collect())
        .boxed()
}

const WORDS: &[&str] = &[
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "The",
    "HTTP",
    "Server",
    "it's",
    "don't",
    "we'll",
    "They're",
    "I'M",
    "unbelievably",
    "fn",
    "let",
    "mut",
    "impl",
    "self",
    "return",
    "null",
    "true",
    "{\"id\":",
    "\"name\":",
    "},{",
    "});",
    "=>",
    "//",
    "/*",
    "0x1F",
    "3.14159",
    "2026-12-04T11:37:21Z",
    "user@example.com",
    "https://example.com/a?b=c",
];

fn fragment() -> BoxedStrategy<String> {
    prop_oneof![
        // Characters from anywhere, and from one block at a time.
        proptest::collection::vec(any_char(), 1..40).prop_map(|v| v.into_iter().collect()),
        proptest::sample::select(BLOCKS).prop_flat_map(|block| {
            proptest::collection::vec(char_in(block), 1..60)
                .prop_map(|v| v.into_iter().collect::<String>())
        }),
        // One rare character, repeated.
        (any_char(), 1usize..300).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
        // Hex, base64 and digits in runs, both cases.
        from_alphabet("0123456789abcdef", 1..80),
        from_alphabet("0123456789ABCDEF", 1..80),
        from_alphabet(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=",
            1..120
        ),
        from_alphabet("0123456789", 1..40),
        from_alphabet("abcdefghijklmnopqrstuvwxyz", 1..60),
        from_alphabet("ABCDEFGHIJKLMNOPQRSTUVWXYZ", 1..60),
        // UUIDs, upper and lower case.
        (any::<u128>(), any::<bool>()).prop_map(|(n, upper)| {
            let hex = format!("{n:032x}");
            let uuid = format!(
                "{}-{}-{}-{}-{}",
                &hex[..8],
                &hex[8..12],
                &hex[12..16],
                &hex[16..20],
                &hex[20..]
            );
            if upper { uuid.to_uppercase() } else { uuid }
        }),
        // White space of every kind, line breaks among it.
        from_alphabet(
            " \t\n\r\u{0B}\u{0C}\u{85}\u{A0}\u{1680}\u{2000}\u{2028}\u{2029}\u{3000}",
            1..30
        ),
        // Letters with combining marks, joiners and variation selectors.
        (
            from_alphabet("aeiouAEIOUक漢😀", 1..8),
            proptest::collection::vec(
                prop_oneof![
                    char_in((0x0300, 0x036F)),
                    char_in((0xFE00, 0xFE0F)),
                    char_in((0xE0100, 0xE01EF)),
                    char_in((0x200B, 0x200D)),
                ],
                1..6
            )
        )
            .prop_map(|(base, marks)| base
                .chars()
                .zip(marks.iter().cycle())
                .flat_map(|(b, m)| [b, *m])
                .collect()),
        // Words, code and JSON, joined by spaces, punctuation or nothing.
        proptest::collection::vec(
            (
                proptest::sample::select(WORDS),
                from_alphabet(" .,'\n\t!?-_/\"", 0..3)
            ),
            1..12
        )
        .prop_map(|v| v.into_iter().map(|(w, sep)| format!("{w}{sep}")).collect()),
        // The ids mcpl writes: references, image and document placeholders.
        id().prop_map(|(id, _)| id),
        // Apostrophes and contractions beside other scripts (`ſ` folds to `s`).
        from_alphabet("'sStTrReEvVmMlLdDſK a1", 1..20),
    ]
    .boxed()
}

/// A random part of `n` base-36 digits.
fn base36(n: usize) -> BoxedStrategy<String> {
    from_alphabet("0123456789abcdefghijklmnopqrstuvwxyz", n..n + 1)
}

/// An id mcpl writes, in its place in a line, and the same with another random part.
fn id() -> impl Strategy<Value = (String, String)> {
    let shape = prop_oneof![
        (1u32..5000, base36(4), base36(4)).prop_map(|(n, a, b)| {
            let counter = format!("{n:x}");
            (format!("ref_{counter}_{a}"), format!("ref_{counter}_{b}"))
        }),
        (
            base36(6),
            base36(6),
            1u32..300,
            proptest::sample::select(vec!["img", "doc"])
        )
            .prop_map(|(a, b, n, kind)| (format!("{kind}_{a}_{n}"), format!("{kind}_{b}_{n}"))),
    ];
    let around = proptest::sample::select(vec![
        ("[", "]"),
        ("ref ", ")"),
        (" ", " "),
        ("(", "\n"),
        ("\"", "\","),
    ]);
    (shape, around).prop_map(|((a, b), (before, after))| {
        (format!("{before}{a}{after}"), format!("{before}{b}{after}"))
    })
}

fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(fragment(), 1..6).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn bound_splits_as_o200k_and_never_counts_under_it(text in text()) {
        let ours: Vec<&str> = Bound::pieces(&text).map(|(_, p)| p).collect();
        let theirs: Vec<&str> = bpe_openai::o200k_base().split(&text).collect();
        prop_assert_eq!(&ours, &theirs);
        let exact = oracle(&text);
        prop_assert_eq!(O200k.count(&text), exact);
        let bound = Bound.count(&text);
        prop_assert!(bound >= exact, "bound {} under o200k {}", bound, exact);
        prop_assert_eq!(Bound.count_within(&text, bound), Some(bound));
        if bound > 0 {
            prop_assert_eq!(Bound.count_within(&text, bound - 1), None);
        }
    }

    #[test]
    fn a_text_costs_the_same_whatever_random_ids_it_holds(
        before in text(), ids in proptest::collection::vec(id(), 1..4), after in text()
    ) {
        let one: String = ids.iter().map(|(a, _)| a.as_str()).collect();
        let other: String = ids.iter().map(|(_, b)| b.as_str()).collect();
        let (one, other) = (format!("{before}{one}{after}"), format!("{before}{other}{after}"));
        prop_assert_eq!(Bound.count(&one), Bound.count(&other), "{:?} / {:?}", one, other);
        prop_assert!(Bound.count(&one) >= oracle(&one));
    }

    #[test]
    fn what_bound_keeps_for_a_budget_costs_o200k_no_more(text in text(), share in 0.0f64..1.0) {
        let budget = (Bound.count(&text) as f64 * share) as u64;
        let end = Bound.prefix_within(&text, budget);
        prop_assert!(text.is_char_boundary(end));
        prop_assert!(oracle(&text[..end]) <= budget, "prefix {:?}", &text[..end]);
        let start = Bound.suffix_within(&text, budget);
        prop_assert!(text.is_char_boundary(start));
        prop_assert!(oracle(&text[start..]) <= budget, "suffix {:?}", &text[start..]);
    }
}

#[test]
fn the_fuzzers_finds_hold() {
    let dir = mcpl_testkit::workspace_root().join("crates/budget/tests/fuzz-regressions");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        if let Err(why) = crate::bound_check::check(&text) {
            panic!("{}: {why}", path.display());
        }
        replayed += 1;
    }
    assert!(replayed >= 2, "{replayed} inputs in {}", dir.display());
}
