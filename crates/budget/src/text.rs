//! Text prices: the `TokenEstimator` trait, a fast heuristic, and (feature `exact`) o200k.

/// Prices text in tokens.
pub trait TokenEstimator {
    /// The estimated tokens of `text`.
    fn count(&self, text: &str) -> u64;

    /// The byte length of the longest prefix of `text` within `budget` tokens, at a character
    /// boundary.
    fn prefix_within(&self, text: &str, budget: u64) -> usize {
        let boundaries: Vec<usize> = char_boundaries(text);
        // The largest boundary whose prefix fits; prices grow with length.
        let (mut lo, mut hi) = (0, boundaries.len() - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if self.count(&text[..boundaries[mid]]) <= budget {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        boundaries[lo]
    }

    /// The byte index where the longest suffix of `text` within `budget` tokens starts, at a
    /// character boundary.
    fn suffix_within(&self, text: &str, budget: u64) -> usize {
        let boundaries: Vec<usize> = char_boundaries(text);
        let (mut lo, mut hi) = (0, boundaries.len() - 1);
        // The smallest boundary whose suffix fits.
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.count(&text[boundaries[mid]..]) <= budget {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        boundaries[lo]
    }
}

fn char_boundaries(text: &str) -> Vec<usize> {
    text.char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
        .collect()
}

/// A fast estimate that does not undercount CJK text.
///
/// Each character has a weight by its class and by whether it continues a run of letters; a
/// text's price is the sum, rounded up. The weights were fitted to o200k (the `exact` feature)
/// on the corpus in `benches/corpus/`; `cargo bench -p mcpl-budget --features exact --bench
/// estimate` reports the error on each part. CJK characters weigh more than o200k charges on
/// average, so a budget holds even for Chinese and Japanese text, where `characters / 4`
/// undercounts three to four times.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Heuristic;

/// The weights, in thousandths of a token, so sums stay exact integers.
mod weight {
    /// An ASCII letter or digit that starts a word.
    pub(super) const WORD_START: u32 = 600;
    /// A lowercase letter that continues a lowercase word.
    pub(super) const LETTER: u32 = 125;
    /// A capital after a lowercase letter, or a letter after a digit or a digit after a letter:
    /// where o200k usually starts a new token (camelCase, base64, hex).
    pub(super) const CASE_CHANGE: u32 = 450;
    /// A capital after a capital (acronyms and base64 split more than words).
    pub(super) const CAPITAL_RUN: u32 = 250;
    /// A lowercase letter after a capital.
    pub(super) const AFTER_CAPITAL: u32 = 250;
    /// A digit that continues a number (o200k groups digits in threes).
    pub(super) const DIGIT: u32 = 330;
    /// The second space or tab of a run: a run of white space (indentation) is a token of its
    /// own.
    pub(super) const SPACE_RUN_START: u32 = 620;
    /// Each further space or tab of a run.
    pub(super) const SPACE_RUN: u32 = 20;
    /// A line break.
    pub(super) const NEWLINE: u32 = 450;
    /// ASCII punctuation and symbols.
    pub(super) const PUNCT: u32 = 640;
    /// A CJK ideograph, kana, or CJK punctuation.
    pub(super) const CJK: u32 = 760;
    /// A Hangul syllable.
    pub(super) const HANGUL: u32 = 700;
    /// Any other letter outside ASCII (accented Latin, Cyrillic, Greek, ...).
    pub(super) const OTHER_LETTER: u32 = 450;
    /// Anything else (emoji, symbols): often more than one token each.
    pub(super) const OTHER: u32 = 1200;
}

/// What kind of character came before: a character's weight depends on the one before it,
/// and for white space on the one before that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Class {
    Lower = 0,
    Upper = 1,
    Digit = 2,
    Blank = 3,
    Newline = 4,
    Punct = 5,
    NonAscii = 6,
    Start = 7,
}

const fn ascii_class(b: u8) -> Class {
    match b {
        b'a'..=b'z' => Class::Lower,
        b'A'..=b'Z' => Class::Upper,
        b'0'..=b'9' => Class::Digit,
        b' ' | b'\t' => Class::Blank,
        b'\n' | b'\r' => Class::Newline,
        _ => Class::Punct,
    }
}

/// The weight of an ASCII character of class `c` after `previous`, with `before` blank or not.
const fn ascii_weight(c: Class, previous: Class, before_blank: bool) -> u32 {
    match (c, previous) {
        (Class::Lower, Class::Lower) => weight::LETTER,
        (Class::Lower, Class::Upper) => weight::AFTER_CAPITAL,
        (Class::Upper, Class::Lower) => weight::CASE_CHANGE,
        (Class::Upper, Class::Upper) => weight::CAPITAL_RUN,
        (Class::Lower | Class::Upper, Class::Digit) => weight::CASE_CHANGE,
        (Class::Digit, Class::Digit) => weight::DIGIT,
        (Class::Digit, Class::Lower | Class::Upper) => weight::CASE_CHANGE,
        (Class::Lower | Class::Upper | Class::Digit, _) => weight::WORD_START,
        (Class::Blank, Class::Blank) if before_blank => weight::SPACE_RUN,
        (Class::Blank, Class::Blank) => weight::SPACE_RUN_START,
        // A single space is part of the next word's token.
        (Class::Blank, _) => 0,
        (Class::Newline, _) => weight::NEWLINE,
        _ => weight::PUNCT,
    }
}

/// The weight of a character outside ASCII, whatever came before it.
fn non_ascii_weight(c: char) -> u32 {
    match c {
        '\u{3000}'..='\u{30FF}'
        | '\u{3400}'..='\u{4DBF}'
        | '\u{4E00}'..='\u{9FFF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{FF00}'..='\u{FFEF}'
        | '\u{20000}'..='\u{2FFFF}' => weight::CJK,
        '\u{AC00}'..='\u{D7AF}' | '\u{1100}'..='\u{11FF}' | '\u{3130}'..='\u{318F}' => {
            weight::HANGUL
        }
        c if c.is_alphabetic() => weight::OTHER_LETTER,
        _ => weight::OTHER,
    }
}

impl Heuristic {
    /// The weight of `c` and its class, given the classes of the two characters before it.
    fn weight(c: char, previous: Class, before: Class) -> (u32, Class) {
        if c.is_ascii() {
            let class = ascii_class(c as u8);
            (
                ascii_weight_after(before as u8, previous as u8, class as u8),
                class,
            )
        } else {
            (non_ascii_weight(c), Class::NonAscii)
        }
    }

    fn thousandths(text: &str) -> u64 {
        // An ASCII character's weight depends only on its class, the previous character's class
        // and whether the one before that was blank, and all three can be read off the bytes (a
        // byte over 127 belongs to a character outside ASCII, which is never blank). So no state
        // is computed from one byte to the next: eight ASCII bytes are weighed with no branch
        // between them, which the processor does at once.
        let bytes = text.as_bytes();
        let weigh_one = |at: usize, before: u8, previous: u8| {
            let b = bytes[at];
            if b < 128 {
                u64::from(ascii_weight_after(
                    before,
                    previous,
                    CLASS_OF_BYTE[usize::from(b)],
                ))
            } else if b >= 0xC0 {
                // The first byte of a character outside ASCII, whose weight is its own.
                let c = text[at..].chars().next().unwrap_or('\u{FFFD}');
                u64::from(non_ascii_weight(c))
            } else {
                0
            }
        };
        let mut total = 0u64;
        // Before the first character, as if after one outside ASCII: they weigh the same.
        let (mut before, mut previous) = (Class::NonAscii as u8, Class::NonAscii as u8);
        let mut chunks = bytes.chunks_exact(8);
        let mut at = 0;
        for chunk in &mut chunks {
            let word = u64::from_le_bytes(std::array::from_fn(|i| chunk[i]));
            if word & 0x8080_8080_8080_8080 == 0 {
                let c: [u8; 8] = std::array::from_fn(|i| CLASS_OF_BYTE[usize::from(chunk[i])]);
                let w = |before, previous, class| {
                    u64::from(ascii_weight_after(before, previous, class))
                };
                total += w(before, previous, c[0])
                    + w(previous, c[0], c[1])
                    + w(c[0], c[1], c[2])
                    + w(c[1], c[2], c[3])
                    + w(c[2], c[3], c[4])
                    + w(c[3], c[4], c[5])
                    + w(c[4], c[5], c[6])
                    + w(c[5], c[6], c[7]);
                (before, previous) = (c[6], c[7]);
            } else {
                for (i, &b) in chunk.iter().enumerate() {
                    total += weigh_one(at + i, before, previous);
                    (before, previous) = (previous, CLASS_OF_BYTE[usize::from(b)]);
                }
            }
            at += 8;
        }
        for (i, &b) in chunks.remainder().iter().enumerate() {
            total += weigh_one(at + i, before, previous);
            (before, previous) = (previous, CLASS_OF_BYTE[usize::from(b)]);
        }
        total
    }
}

/// The weight of an ASCII character of class `class` after characters of classes `previous`
/// and, before it, `before` (classes as numbers, from [`CLASS_OF_BYTE`]).
fn ascii_weight_after(before: u8, previous: u8, class: u8) -> u32 {
    ASCII_WEIGHTS
        [usize::from(before & 7) << 6 | usize::from(previous & 7) << 3 | usize::from(class & 7)]
}

/// Every class, in the order of its number.
const CLASSES: [Class; 8] = [
    Class::Lower,
    Class::Upper,
    Class::Digit,
    Class::Blank,
    Class::Newline,
    Class::Punct,
    Class::NonAscii,
    Class::Start,
];

/// At the start an ASCII character weighs what it weighs after a character outside ASCII, so
/// the counting loop starts as if after one; the compiler checks it here.
const _: () = {
    let mut b = 0;
    while b < 128 {
        let c = ascii_class(b);
        assert!(ascii_weight(c, Class::Start, false) == ascii_weight(c, Class::NonAscii, false));
        b += 1;
    }
};

/// `CLASS_OF_BYTE[byte]`: the class of an ASCII byte, or for any byte over 127 (part of a
/// character outside ASCII) `NonAscii`, as a number.
const CLASS_OF_BYTE: [u8; 256] = {
    let mut table = [Class::NonAscii as u8; 256];
    let mut b = 0;
    while b < 128 {
        table[b] = ascii_class(b as u8) as u8;
        b += 1;
    }
    table
};

/// `ASCII_WEIGHTS[before << 6 | previous << 3 | class]`: the weight of an ASCII character of
/// `class` after characters of classes `previous` and `before`.
const ASCII_WEIGHTS: [u32; 512] = {
    let mut table = [0u32; 512];
    let mut i = 0;
    while i < 512 {
        let (before, previous, class) = (CLASSES[i >> 6], CLASSES[i >> 3 & 7], CLASSES[i & 7]);
        if !matches!(class, Class::NonAscii | Class::Start) {
            let before_blank = before as u8 == Class::Blank as u8;
            table[i] = ascii_weight(class, previous, before_blank);
        }
        i += 1;
    }
    table
};

impl TokenEstimator for Heuristic {
    fn count(&self, text: &str) -> u64 {
        Heuristic::thousandths(text).div_ceil(1000)
    }

    fn prefix_within(&self, text: &str, budget: u64) -> usize {
        let limit = budget * 1000;
        let (mut previous, mut before) = (Class::Start, Class::Start);
        let mut total = 0u64;
        for (i, c) in text.char_indices() {
            let (weight, class) = Heuristic::weight(c, previous, before);
            total += u64::from(weight);
            if total > limit {
                return i;
            }
            (before, previous) = (previous, class);
        }
        text.len()
    }

    fn suffix_within(&self, text: &str, budget: u64) -> usize {
        // A character's weight depends on the two before it, so walk backwards pricing each
        // character as it stands in the whole text. The suffix's first two characters may be
        // priced differently on their own, by at most a word start and a white-space run start.
        let margin = u64::from(weight::WORD_START + weight::SPACE_RUN_START);
        let limit = (budget * 1000).saturating_sub(margin);
        let class_of = |c: Option<char>| {
            c.map_or(Class::Start, |c| {
                Heuristic::weight(c, Class::Start, Class::Start).1
            })
        };
        let mut total = 0u64;
        let mut end = text.len();
        while let Some(c) = text[..end].chars().next_back() {
            let start = end - c.len_utf8();
            let mut earlier = text[..start].chars().rev();
            let previous = class_of(earlier.next());
            let before = class_of(earlier.next());
            total += u64::from(Heuristic::weight(c, previous, before).0);
            if total > limit {
                return end;
            }
            end = start;
        }
        0
    }
}

/// The exact o200k counter (OpenAI's GPT-4o and later encoding), offline: its tables are
/// compiled into the crate by `bpe-openai`.
#[cfg(feature = "exact")]
#[derive(Debug, Clone, Copy, Default)]
pub struct O200k;

#[cfg(feature = "exact")]
impl TokenEstimator for O200k {
    fn count(&self, text: &str) -> u64 {
        bpe_openai::o200k_base().count(text) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_suffixes_fit_and_are_maximal() {
        let text = "The quick brown fox — 快速的棕色狐狸 — jumps over 12345 lazy dogs.\n";
        let h = Heuristic;
        for budget in 0..=h.count(text) + 1 {
            let p = h.prefix_within(text, budget);
            assert!(text.is_char_boundary(p));
            assert!(h.count(&text[..p]) <= budget);
            if p < text.len() {
                let next = p + text[p..].chars().next().unwrap().len_utf8();
                assert!(h.count(&text[..next]) > budget);
            }
            let s = h.suffix_within(text, budget);
            assert!(text.is_char_boundary(s));
            assert!(
                h.count(&text[s..]) <= budget,
                "budget {budget}: {}",
                &text[s..]
            );
        }
    }

    #[test]
    fn the_byte_loop_weighs_as_the_characters_do() {
        // Each class, both kinds of blank and of line break, and characters of every UTF-8
        // length, in runs of every length up to three.
        let alphabet: Vec<char> = "aZ5 \t\n\r.{é快한😀".chars().collect();
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..2000 {
            let mut text = String::new();
            for _ in 0..seed % 40 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let c = alphabet[(seed % alphabet.len() as u64) as usize];
                for _ in 0..1 + seed / 7 % 3 {
                    text.push(c);
                }
            }
            let (mut previous, mut before) = (Class::Start, Class::Start);
            let mut expected = 0u64;
            for c in text.chars() {
                let (weight, class) = Heuristic::weight(c, previous, before);
                expected += u64::from(weight);
                (before, previous) = (previous, class);
            }
            assert_eq!(Heuristic::thousandths(&text), expected, "{text:?}");
        }
    }

    #[test]
    fn cjk_costs_more_than_a_quarter_token_a_character() {
        let chinese = "当一个智能体调用外部工具时服务器返回的内容往往比人们想象的更复杂";
        let chars = chinese.chars().count() as u64;
        assert!(Heuristic.count(chinese) >= chars * 3 / 4);
    }
}
