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

impl Heuristic {
    /// The weight of `c`, given the two characters before it.
    fn weight(c: char, previous: Option<char>, before: Option<char>) -> u32 {
        let p = previous.unwrap_or(' ');
        let blank = |c: Option<char>| c == Some(' ') || c == Some('\t');
        match c {
            'a'..='z' if p.is_ascii_lowercase() => weight::LETTER,
            'a'..='z' if p.is_ascii_uppercase() => weight::AFTER_CAPITAL,
            'A'..='Z' if p.is_ascii_lowercase() => weight::CASE_CHANGE,
            'A'..='Z' if p.is_ascii_uppercase() => weight::CAPITAL_RUN,
            'a'..='z' | 'A'..='Z' if p.is_ascii_digit() => weight::CASE_CHANGE,
            '0'..='9' if p.is_ascii_digit() => weight::DIGIT,
            '0'..='9' if p.is_ascii_alphabetic() => weight::CASE_CHANGE,
            'a'..='z' | 'A'..='Z' | '0'..='9' => weight::WORD_START,
            ' ' | '\t' if blank(previous) && blank(before) => weight::SPACE_RUN,
            ' ' | '\t' if blank(previous) => weight::SPACE_RUN_START,
            // A single space is part of the next word's token.
            ' ' | '\t' => 0,
            '\n' | '\r' => weight::NEWLINE,
            c if c.is_ascii() => weight::PUNCT,
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

    fn thousandths(text: &str) -> u64 {
        let (mut previous, mut before) = (None, None);
        let mut total = 0u64;
        for c in text.chars() {
            total += u64::from(Heuristic::weight(c, previous, before));
            (before, previous) = (previous, Some(c));
        }
        total
    }
}

impl TokenEstimator for Heuristic {
    fn count(&self, text: &str) -> u64 {
        Heuristic::thousandths(text).div_ceil(1000)
    }

    fn prefix_within(&self, text: &str, budget: u64) -> usize {
        let limit = budget * 1000;
        let (mut previous, mut before) = (None, None);
        let mut total = 0u64;
        for (i, c) in text.char_indices() {
            total += u64::from(Heuristic::weight(c, previous, before));
            if total > limit {
                return i;
            }
            (before, previous) = (previous, Some(c));
        }
        text.len()
    }

    fn suffix_within(&self, text: &str, budget: u64) -> usize {
        // A character's weight depends on the two before it, so walk backwards pricing each
        // character as it stands in the whole text. The suffix's first two characters may be
        // priced differently on their own, by at most a word start and a white-space run start.
        let margin = u64::from(weight::WORD_START + weight::SPACE_RUN_START);
        let limit = (budget * 1000).saturating_sub(margin);
        let mut total = 0u64;
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        for k in (0..chars.len()).rev() {
            let (i, c) = chars[k];
            let previous = k.checked_sub(1).map(|j| chars[j].1);
            let before = k.checked_sub(2).map(|j| chars[j].1);
            total += u64::from(Heuristic::weight(c, previous, before));
            if total > limit {
                return i + c.len_utf8();
            }
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
    fn cjk_costs_more_than_a_quarter_token_a_character() {
        let chinese = "当一个智能体调用外部工具时服务器返回的内容往往比人们想象的更复杂";
        let chars = chinese.chars().count() as u64;
        assert!(Heuristic.count(chinese) >= chars * 3 / 4);
    }
}
