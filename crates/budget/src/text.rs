//! Text prices: the `TokenEstimator` trait, a fast heuristic, and (feature `exact`) o200k.

/// Prices text in tokens.
pub trait TokenEstimator {
    /// The price of `text` in tokens.
    fn count(&self, text: &str) -> u64;

    /// The price of `text`, or `None` when it is over `limit`. An estimator that can stop
    /// early reads a text far over its limit only until the limit is spent.
    fn count_within(&self, text: &str, limit: u64) -> Option<u64> {
        let count = self.count(text);
        (count <= limit).then_some(count)
    }

    /// A quick figure for `text`, for what is only reported (the tokens an omission notice
    /// says were left out), never for a budget: the count itself unless the estimator has a
    /// cheaper one.
    fn estimate(&self, text: &str) -> u64 {
        self.count(text)
    }

    /// The same estimator, when several threads may ask it at once: a fit then counts a big
    /// result's totals on a second core while its spill is written (decision 0173). `None`,
    /// the default, keeps every count on the fit's own thread.
    fn as_sync(&self) -> Option<&(dyn TokenEstimator + Sync)> {
        None
    }

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

/// The weights, in thousandths of a token, so sums stay exact integers. Fitted to o200k by a
/// linear program over every class of the corpus (`benches/corpus/`): each class between 1.0
/// and 1.25 times o200k, each piece of 1,000 characters at least 1.0 times, close to the
/// hand-fitted weights before them. An ASCII character weighs at most 1,000 (one byte is at most
/// one token), and one outside ASCII at most its UTF-8 length in tokens.
mod weight {
    /// An ASCII letter or digit after anything but a letter or digit: a new word.
    pub(super) const WORD_START: u32 = 861;
    /// A letter or digit after one letter or digit that follows something else:
    /// `PAIR[previous][class]`, classes lower, upper, digit.
    pub(super) const PAIR: [[u32; 3]; 3] = [
        // After a lowercase letter: lower, upper (camelCase), digit.
        [125, 450, 450],
        // After a capital that starts a word: `The`.
        [22, 250, 450],
        // After a digit: letters start a new token, digits group in threes.
        [450, 450, 330],
    ];
    /// A letter or digit after two letters or digits: `TRIPLE[before][previous][class]`. Runs of
    /// one kind are cheap (words, numbers); runs that mix case and digits are where o200k splits
    /// almost every character (base64, hex, ids).
    pub(super) const TRIPLE: [[[u32; 3]; 3]; 3] = [
        // before lower: LL*, LU*, LD*
        [[80, 1000, 1000], [1000, 1000, 985], [1000, 1000, 408]],
        // before upper: UL*, UU*, UD*
        [[125, 1000, 1000], [1000, 237, 1000], [1000, 450, 330]],
        // before digit: DL*, DU*, DD*
        [[125, 1000, 1000], [250, 250, 450], [1000, 450, 401]],
    ];
    /// The second space or tab of a run: a run of white space (indentation) is a token of its
    /// own.
    pub(super) const SPACE_RUN_START: u32 = 620;
    /// Each further space or tab of a run.
    pub(super) const SPACE_RUN: u32 = 36;
    /// A line break.
    pub(super) const NEWLINE: u32 = 450;
    /// A line break after a line break: o200k merges runs of them.
    pub(super) const NEWLINE_RUN: u32 = 123;
    /// ASCII punctuation and symbols.
    pub(super) const PUNCT: u32 = 882;
    /// Punctuation after punctuation (`"},{"`), which o200k merges.
    pub(super) const PUNCT_RUN: u32 = 200;
    /// A CJK ideograph that is one o200k token on its own (the common ones).
    pub(super) const CJK_SINGLE: u32 = 739;
    /// A CJK ideograph that o200k splits into two or three tokens.
    pub(super) const CJK_SPLIT: u32 = 2637;
    /// Kana, CJK punctuation, compatibility ideographs and full-width forms.
    pub(super) const CJK_OTHER: u32 = 829;
    /// CJK Extension A: two or three tokens each.
    pub(super) const CJK_EXTENSION_A: u32 = 3000;
    /// A Hangul syllable that is one o200k token on its own.
    pub(super) const HANGUL_SINGLE: u32 = 700;
    /// A Hangul syllable (or jamo) that o200k splits.
    pub(super) const HANGUL_SPLIT: u32 = 2579;
    /// Arabic letters and marks.
    pub(super) const ARABIC: u32 = 328;
    /// Thai.
    pub(super) const THAI: u32 = 397;
    /// Devanagari.
    pub(super) const DEVANAGARI: u32 = 379;
    /// A combining mark (U+0300-U+036F and the other combining blocks): one or two tokens.
    pub(super) const MARK: u32 = 2000;
    /// A zero-width joiner, non-joiner or space, or a variation selector.
    pub(super) const JOINER: u32 = 1000;
    /// An emoji or symbol of U+1F000-U+1FAFF.
    pub(super) const EMOJI: u32 = 2505;
    /// Any other character outside the Basic Multilingual Plane (CJK Extension B and later
    /// among them): four bytes, at most four tokens.
    pub(super) const SUPPLEMENTARY: u32 = 4000;
    /// Any other letter outside ASCII (accented Latin, Cyrillic, Greek, ...).
    pub(super) const OTHER_LETTER: u32 = 450;
    /// Anything else (symbols, punctuation outside ASCII).
    pub(super) const OTHER: u32 = 1200;
}

/// Which CJK ideographs (U+4E00-U+9FFF) and Hangul syllables (U+AC00-U+D7A3) o200k encodes
/// as one token on its own, one bit each, in that order: the common ones. Made from
/// `bpe-openai`'s o200k; the `exact` feature's tests check it still matches.
pub const O200K_SINGLE_TOKENS: &[u8; 4021] = include_bytes!("o200k-single-tokens.bin");

/// The first code point and count of the CJK ideographs the table covers.
pub const CJK_SINGLES: (u32, u32) = (0x4E00, 0x9FFF - 0x4E00 + 1);
/// The first code point and count of the Hangul syllables the table covers.
pub const HANGUL_SINGLES: (u32, u32) = (0xAC00, 0xD7A3 - 0xAC00 + 1);

/// Whether bit `index` of the table's part starting at byte `start` is set.
fn single_token(start: usize, index: u32) -> bool {
    let index = index as usize;
    O200K_SINGLE_TOKENS
        .get(start + index / 8)
        .is_some_and(|byte| byte >> (index % 8) & 1 == 1)
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

/// Whether a class is a letter or digit.
const fn alnum(c: Class) -> bool {
    matches!(c, Class::Lower | Class::Upper | Class::Digit)
}

/// The weight of an ASCII character of class `c` after characters of classes `previous` and,
/// before it, `before`.
const fn ascii_weight(c: Class, previous: Class, before: Class) -> u32 {
    if alnum(c) {
        if !alnum(previous) {
            weight::WORD_START
        } else if alnum(before) {
            weight::TRIPLE[before as usize][previous as usize][c as usize]
        } else {
            weight::PAIR[previous as usize][c as usize]
        }
    } else {
        match (c, previous) {
            (Class::Blank, Class::Blank) if before as u8 == Class::Blank as u8 => weight::SPACE_RUN,
            (Class::Blank, Class::Blank) => weight::SPACE_RUN_START,
            // A single space is part of the next word's token.
            (Class::Blank, _) => 0,
            (Class::Newline, Class::Newline) => weight::NEWLINE_RUN,
            (Class::Newline, _) => weight::NEWLINE,
            (_, Class::Punct) => weight::PUNCT_RUN,
            _ => weight::PUNCT,
        }
    }
}

/// The weight of a character outside ASCII, whatever came before it.
fn non_ascii_weight(c: char) -> u32 {
    let code = u32::from(c);
    match c {
        '\u{4E00}'..='\u{9FFF}' => {
            if single_token(0, code - CJK_SINGLES.0) {
                weight::CJK_SINGLE
            } else {
                weight::CJK_SPLIT
            }
        }
        '\u{AC00}'..='\u{D7A3}' => {
            if single_token(CJK_SINGLES.1.div_ceil(8) as usize, code - HANGUL_SINGLES.0) {
                weight::HANGUL_SINGLE
            } else {
                weight::HANGUL_SPLIT
            }
        }
        '\u{3400}'..='\u{4DBF}' => weight::CJK_EXTENSION_A,
        '\u{3000}'..='\u{30FF}' | '\u{F900}'..='\u{FAFF}' | '\u{FF00}'..='\u{FFEF}' => {
            weight::CJK_OTHER
        }
        '\u{1100}'..='\u{11FF}' | '\u{3130}'..='\u{318F}' => weight::HANGUL_SPLIT,
        '\u{0300}'..='\u{036F}'
        | '\u{1AB0}'..='\u{1AFF}'
        | '\u{1DC0}'..='\u{1DFF}'
        | '\u{20D0}'..='\u{20FF}'
        | '\u{FE20}'..='\u{FE2F}' => weight::MARK,
        '\u{0600}'..='\u{06FF}'
        | '\u{0750}'..='\u{077F}'
        | '\u{08A0}'..='\u{08FF}'
        | '\u{FB50}'..='\u{FDFF}'
        | '\u{FE70}'..='\u{FEFF}' => weight::ARABIC,
        '\u{0E00}'..='\u{0E7F}' => weight::THAI,
        '\u{0900}'..='\u{097F}' => weight::DEVANAGARI,
        '\u{200B}'..='\u{200D}' | '\u{FE0E}' | '\u{FE0F}' => weight::JOINER,
        '\u{1F000}'..='\u{1FAFF}' => weight::EMOJI,
        '\u{10000}'.. => weight::SUPPLEMENTARY,
        // General punctuation (dashes, quotes, spaces) holds no letter: the common case of
        // text outside ASCII in English, answered without the slower letter lookup.
        '\u{2000}'..='\u{206F}' => weight::OTHER,
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
        // is computed from one byte to the next: sixteen ASCII bytes are weighed with no branch
        // between them, two at a time from one table, which the processor does at once.
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
        let mut chunks = bytes.chunks_exact(16);
        let mut at = 0;
        for chunk in &mut chunks {
            let word = u128::from_le_bytes(std::array::from_fn(|i| chunk[i]));
            if word & 0x8080_8080_8080_8080_8080_8080_8080_8080 == 0 {
                total += weigh_ascii::<16>(chunk, &mut before, &mut previous);
            } else {
                // Some character outside ASCII: each half of eight bytes that has none is still
                // weighed at once.
                for (half, bytes) in chunk.chunks_exact(8).enumerate() {
                    if bytes.iter().all(u8::is_ascii) {
                        total += weigh_ascii::<8>(bytes, &mut before, &mut previous);
                    } else {
                        for (i, &b) in bytes.iter().enumerate() {
                            total += weigh_one(at + 8 * half + i, before, previous);
                            (before, previous) = (previous, CLASS_OF_BYTE[usize::from(b)]);
                        }
                    }
                }
            }
            at += 16;
        }
        for (i, &b) in chunks.remainder().iter().enumerate() {
            total += weigh_one(at + i, before, previous);
            (before, previous) = (previous, CLASS_OF_BYTE[usize::from(b)]);
        }
        total
    }
}

/// The weight of `N` ASCII bytes (`N` a multiple of eight, `bytes` at least that long) after
/// characters of classes `before` and `previous`, which it moves on to the last two bytes'
/// classes: two characters a table read, indexed by the classes of the two before them and
/// their own, which one read of [`PAIR_CLASSES`] gives from the two bytes.
fn weigh_ascii<const N: usize>(bytes: &[u8], before: &mut u8, previous: &mut u8) -> u64 {
    let mut back = usize::from(*before & 7) << 3 | usize::from(*previous & 7);
    let mut sum = 0u32;
    for eight in bytes[..N].chunks_exact(8) {
        let word = u64::from_le_bytes(std::array::from_fn(|i| eight[i]));
        for shift in [0, 16, 32, 48] {
            // Two ASCII bytes, each under 128, side by side.
            let pair = (word >> shift) as usize & 0x7F7F;
            let classes = usize::from(PAIR_CLASSES[pair]);
            sum += u32::from(PAIR_WEIGHTS[(back << 6 | classes) & 4095]);
            back = classes;
        }
    }
    (*before, *previous) = ((back >> 3) as u8, (back & 7) as u8);
    u64::from(sum)
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
        let mut other = 0;
        while other < 8 {
            let o = CLASSES[other];
            assert!(ascii_weight(c, Class::Start, o) == ascii_weight(c, Class::NonAscii, o));
            assert!(ascii_weight(c, o, Class::Start) == ascii_weight(c, o, Class::NonAscii));
            other += 1;
        }
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
            table[i] = ascii_weight(class, previous, before);
        }
        i += 1;
    }
    table
};

/// `PAIR_CLASSES[first | second << 8]`, for two ASCII bytes: their classes, `first`'s in the
/// upper three bits (`first_class << 3 | second_class`). Indices with a byte over 127 are unused.
static PAIR_CLASSES: [u8; 0x7F80] = {
    let mut table = [0u8; 0x7F80];
    let mut i = 0;
    while i < 0x7F80 {
        table[i] = CLASS_OF_BYTE[i & 127] << 3 | CLASS_OF_BYTE[i >> 8 & 127];
        i += 1;
    }
    table
};

/// `PAIR_WEIGHTS[before << 9 | previous << 6 | first << 3 | second]`: the weights of two ASCII
/// characters in a row, of classes `first` and `second`, after characters of classes `previous`
/// and `before`, summed (at most 2,000, so 16 bits hold it): the byte loop reads one number for
/// two characters.
const PAIR_WEIGHTS: [u16; 4096] = {
    let mut table = [0u16; 4096];
    let mut i = 0;
    while i < 4096 {
        let (before, previous, first, second) = (i >> 9, i >> 6 & 7, i >> 3 & 7, i & 7);
        let sum = ASCII_WEIGHTS[before << 6 | previous << 3 | first]
            + ASCII_WEIGHTS[previous << 6 | first << 3 | second];
        assert!(sum <= u16::MAX as u32);
        table[i] = sum as u16;
        i += 1;
    }
    table
};

impl TokenEstimator for Heuristic {
    fn as_sync(&self) -> Option<&(dyn TokenEstimator + Sync)> {
        Some(self)
    }

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
        // priced differently on their own, by at most a token each (no ASCII character weighs
        // more; one outside ASCII weighs the same in any place).
        let margin = 2000;
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

/// The exact o200k counter (OpenAI's GPT-4o and later encoding), offline: o200k's pieces, each
/// counted with tiktoken's byte-pair merge over the vocabulary vendored in the crate (decision
/// 0137). The tests check it against `bpe-openai`.
#[derive(Debug, Clone, Copy, Default)]
pub struct O200k;

impl TokenEstimator for O200k {
    fn as_sync(&self) -> Option<&(dyn TokenEstimator + Sync)> {
        Some(self)
    }

    fn count(&self, text: &str) -> u64 {
        let vocabulary = crate::o200k::vocabulary();
        crate::Bound::pieces(text)
            .map(|(_, piece)| vocabulary.count(piece.as_bytes()) as u64)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn general_punctuation_weighs_what_a_character_that_is_no_letter_weighs() {
        for c in ('\u{2000}'..='\u{206F}').filter(|c| !matches!(c, '\u{200B}'..='\u{200D}')) {
            assert!(!c.is_alphabetic(), "{c:?}");
            assert_eq!(non_ascii_weight(c), weight::OTHER, "{c:?}");
        }
    }

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
        // length, in runs of every length up to three; then mostly ASCII with a rare character
        // outside it, in texts long enough for the loop's sixteen-byte and eight-byte steps.
        let alphabets = [
            ("aZ5 \t\n\r.{é快한😀", 40),
            (
                "abcdefghijklmnopqrstuvwxyzABC0123456789    \t\n\n.,;{}é",
                120,
            ),
            ("abcdefghij klmno\n", 120),
        ];
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for (alphabet, longest) in alphabets {
            let alphabet: Vec<char> = alphabet.chars().collect();
            for _ in 0..2000 {
                let mut text = String::new();
                for _ in 0..seed % longest {
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
    }

    #[test]
    fn cjk_costs_more_than_a_quarter_token_a_character() {
        let chinese = "当一个智能体调用外部工具时服务器返回的内容往往比人们想象的更复杂";
        let chars = chinese.chars().count() as u64;
        assert!(Heuristic.count(chinese) >= chars * 3 / 4);
    }
}
