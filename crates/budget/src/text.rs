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
            let weight = STATE_WEIGHTS[state_of(previous, before)][c as usize];
            (weight, ascii_class(c as u8))
        } else {
            (non_ascii_weight(c), Class::NonAscii)
        }
    }

    fn thousandths(text: &str) -> u64 {
        // An ASCII character's weight depends on the previous character's class and on whether
        // the one before it was blank, and both can be read off the bytes before it (a byte over
        // 127 ends a character outside ASCII, which is never blank). So each byte is weighed on
        // its own, with no state computed from the one before, and the processor can weigh
        // several bytes at once.
        let mut total = 0u64;
        // Before the first character, as if after one outside ASCII: they weigh the same.
        let outside = CLASS_BITS[usize::from(OUTSIDE_ASCII)];
        let (mut before, mut previous) = (outside, outside);
        for (i, &b) in text.as_bytes().iter().enumerate() {
            if b < 128 {
                let state = usize::from(previous & !1 | before & 1);
                total += u64::from(STATE_WEIGHTS[state & 15][usize::from(b & 127)]);
            } else if b >= 0xC0 {
                // The first byte of a character outside ASCII, whose weight is its own.
                let c = text[i..].chars().next().unwrap_or('\u{FFFD}');
                total += u64::from(non_ascii_weight(c));
            }
            (before, previous) = (previous, CLASS_BITS[usize::from(b)]);
        }
        total
    }
}

/// A state of the counting loop: the previous character's class, and whether the character
/// before it was blank.
const fn state_of(previous: Class, before: Class) -> usize {
    previous as usize * 2 + (before as usize == Class::Blank as usize) as usize
}

/// Every class, in the order of its number.
const STATE_CLASSES: [Class; 8] = [
    Class::Lower,
    Class::Upper,
    Class::Digit,
    Class::Blank,
    Class::Newline,
    Class::Punct,
    Class::NonAscii,
    Class::Start,
];

/// A byte that ends a character outside ASCII. The counting loop also reads it as the bytes
/// before the text: at the start an ASCII character weighs what it weighs after a character
/// outside ASCII, as the compiler checks here.
const OUTSIDE_ASCII: u8 = 0x80;

const _: () = {
    let mut b = 0;
    while b < 128 {
        let c = ascii_class(b);
        assert!(ascii_weight(c, Class::Start, false) == ascii_weight(c, Class::NonAscii, false));
        b += 1;
    }
};

/// `CLASS_BITS[byte]`: what a byte tells the state of the characters after it. Its class,
/// times two, for the next character (any byte over 127 ends a character outside ASCII); and
/// in the lowest bit, whether it is blank, for the one after that.
const CLASS_BITS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let class = if b < 128 {
            ascii_class(b as u8)
        } else {
            Class::NonAscii
        };
        table[b] = state_of(class, class) as u8;
        b += 1;
    }
    table
};

/// `STATE_WEIGHTS[state][byte]`: an ASCII byte's weight in a state.
const STATE_WEIGHTS: [[u32; 128]; 16] = {
    let mut table = [[0u32; 128]; 16];
    let mut state = 0;
    while state < 16 {
        let mut b = 0;
        while b < 128 {
            table[state][b] = ascii_weight(
                ascii_class(b as u8),
                STATE_CLASSES[state / 2],
                state % 2 == 1,
            );
            b += 1;
        }
        state += 1;
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
