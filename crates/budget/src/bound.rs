//! `Bound`: a text price that is never under o200k's count, on any input (decision 0105).
//!
//! o200k counts a text in two steps: a pattern splits it into pieces (a word with the space
//! before it, up to three digits, a run of punctuation, a run of white space, ...), then each
//! piece is encoded on its own. A token never spans two pieces, so the text's count is the sum
//! of its pieces' counts. `Bound` walks the same pieces and prices each one:
//!
//! - a piece of one byte is one token;
//! - a word of more than [`LONG_WORD`] ASCII letters, up to [`LONG_WORD_END`] (an id, a hash
//!   spelled in letters), costs its bytes: a token holds at least one byte, so that bounds it
//!   whatever the letters are, and a spill id in a notice costs the same whatever it spells;
//! - the random part of an id mcpl wrote (`ref_<n>_<4 random>`, `img_<6 random>_<n>`,
//!   `doc_<6 random>_<n>`) costs its bytes, however o200k splits it, so a text costs the same
//!   whatever random ids it holds;
//! - a piece of more than [`HUGE_PIECE`] bytes (a long line of CJK letters with no
//!   punctuation), or of more than [`LONG_ASCII_PIECE`] bytes all ASCII (a run of letters no
//!   person writes), costs its bytes, for the same reason: counting it exactly would take
//!   memory in proportion to it, or load `bpe-openai`'s tables, about 35 MiB, for the rest of
//!   the process;
//! - every other piece costs o200k's own count of it (the crate's compact o200k tables,
//!   decision 0137).
//!
//! So the price is o200k's count or more, on every text, by construction. The pieces of ASCII
//! text are found by a hand-written splitter that does what o200k's pattern does (the generative
//! test `bound` checks it against `bpe-openai`'s splitter); wherever a character outside ASCII
//! could change a piece, that piece is found by o200k's own pattern (`regex-automata`), which
//! does not read the vocabulary.

use std::cell::RefCell;

use crate::text::TokenEstimator;

/// A word of more ASCII letters than this, and at most [`LONG_WORD_END`], is priced at its
/// bytes.
pub const LONG_WORD: usize = 20;
/// The most letters a word priced at its bytes has: a longer run of letters is no id, and is
/// priced at o200k's count like any other piece.
pub const LONG_WORD_END: usize = 64;

/// A piece of more bytes than this is priced at its bytes: o200k's exact count of it would
/// hold a few bytes a token (`bpe-openai`'s backtracking encoder), and a piece this long is cut
/// by any budget anyway.
pub const HUGE_PIECE: usize = 64 * 1024;

/// A piece of more bytes than this, all ASCII, is priced at its bytes (decision 0143): a run of
/// letters that long is no word, and counting it would load `bpe-openai`'s tables, about 35 MiB
/// for the rest of the process. A piece outside ASCII this long (CJK text with no punctuation)
/// is still counted, up to [`HUGE_PIECE`].
pub const LONG_ASCII_PIECE: usize = 1024;

/// An upper bound on o200k's count of any text: o200k's count of each piece, or its bytes for
/// a long word or the random part of an id (see the module's documentation).
///
/// A price reads o200k's vocabulary from tables in the binary, made when the crate was built
/// (decision 0148); a text of one byte or none never reads it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bound;

impl Bound {
    /// o200k's pieces of `text`, in order, each with the byte where it starts.
    pub fn pieces(text: &str) -> Pieces<'_> {
        Pieces { text, at: 0 }
    }

    /// The price of one piece.
    pub fn piece_price(piece: &str) -> u64 {
        with_cache(|cache| price_in(cache, piece))
    }

    /// The price of `text`, or `None` as soon as it is over `limit`: a text far over a budget
    /// is read only until the budget is spent.
    pub fn count_within(text: &str, limit: u64) -> Option<u64> {
        // The cache is borrowed once for the whole text, not once a piece.
        with_cache(|cache| {
            let mut priced = Bound::priced(text);
            let mut total = 0u64;
            while let Some((_, _, price)) = priced.next_with(|piece| price_in(cache, piece)) {
                total += price;
                if total > limit {
                    return None;
                }
            }
            Some(total)
        })
    }

    /// o200k's pieces of `text`, each with where it starts and its price: a piece inside the
    /// random part of an id mcpl wrote costs nothing, and the first of them costs the whole
    /// part's bytes.
    pub fn priced(text: &str) -> Priced<'_> {
        let mut spans = IdSpans::new(text.as_bytes());
        Priced {
            pieces: Bound::pieces(text),
            span: spans.next(),
            spans,
            next_span: 0,
            charged: usize::MAX,
        }
    }
}

/// The pieces of a text with their prices; see [`Bound::priced`].
#[derive(Debug, Clone)]
pub struct Priced<'t> {
    pieces: Pieces<'t>,
    /// The random parts of ids after `span`, in order, as byte ranges: found only as the pieces
    /// reach them, so a text far over a budget is not read to its end for them.
    spans: IdSpans<'t>,
    /// The first random part that does not end before the last piece; `None` past the last.
    span: Option<(usize, usize)>,
    /// How many random parts came before `span`.
    next_span: usize,
    /// The span whose bytes were charged already.
    charged: usize,
}

impl<'t> Iterator for Priced<'t> {
    type Item = (usize, &'t str, u64);

    fn next(&mut self) -> Option<(usize, &'t str, u64)> {
        self.next_with(Bound::piece_price)
    }
}

impl<'t> Priced<'t> {
    /// The next piece, its price from `price` unless it lies inside an id's random part.
    fn next_with(&mut self, price: impl FnOnce(&str) -> u64) -> Option<(usize, &'t str, u64)> {
        let (start, piece) = self.pieces.next()?;
        let end = start + piece.len();
        while self.span.is_some_and(|(_, span_end)| span_end <= start) {
            self.span = self.spans.next();
            self.next_span += 1;
        }
        let price = match self.span {
            // A piece wholly inside a random part: the part's bytes, once, bound every token
            // of the pieces in it, whatever they spell.
            Some((span_start, span_end)) if span_start <= start && end <= span_end => {
                if self.charged == self.next_span {
                    0
                } else {
                    self.charged = self.next_span;
                    (span_end - span_start) as u64
                }
            }
            _ => price(piece),
        };
        Some((start, piece, price))
    }
}

/// Whether a byte is a base-36 digit as mcpl writes them.
fn base36(b: u8) -> bool {
    b.is_ascii_digit() || b.is_ascii_lowercase()
}

/// The random parts of the ids mcpl writes into what a model sees, as byte ranges in order,
/// each found when it is asked for: the `_xxxx` ending `ref_<counter>_xxxx`, and the `_xxxxxx`
/// nonce of `img_xxxxxx_<n>` and `doc_xxxxxx_<n>`. Each stands alone: neither a letter nor a
/// digit before the id, nor one right after the random part of a `ref`.
#[derive(Debug, Clone)]
struct IdSpans<'t> {
    bytes: &'t [u8],
    /// Where the search for the next `_` begins.
    from: usize,
}

impl<'t> IdSpans<'t> {
    fn new(bytes: &'t [u8]) -> IdSpans<'t> {
        IdSpans { bytes, from: 0 }
    }
}

impl Iterator for IdSpans<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let bytes = self.bytes;
        while let Some(found) = memchr::memchr(b'_', bytes.get(self.from..)?) {
            let at = self.from + found;
            self.from = at + 1;
            if let Some(span) = id_span_at(bytes, at) {
                return Some(span);
            }
        }
        self.from = bytes.len();
        None
    }
}

/// The random part of an id whose first `_` is at `at`, when one is there.
fn id_span_at(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    if at < 3 || (at > 3 && bytes[at - 4].is_ascii_alphanumeric()) {
        return None;
    }
    let run = |from: usize| {
        bytes[from.min(bytes.len())..]
            .iter()
            .take_while(|b| base36(**b))
            .count()
    };
    match &bytes[at - 3..at] {
        b"ref" => {
            let counter = run(at + 1);
            let underscore = at + 1 + counter;
            (counter > 0 && bytes.get(underscore) == Some(&b'_') && run(underscore + 1) == 4)
                .then_some((underscore, underscore + 5))
        }
        b"img" | b"doc" => {
            let after = at + 7;
            (run(at + 1) == 6
                && bytes.get(after) == Some(&b'_')
                && bytes.get(after + 1).is_some_and(u8::is_ascii_digit))
            .then_some((at, after))
        }
        _ => None,
    }
}

/// Whether a piece is a word of more than [`LONG_WORD`] ASCII letters and at most
/// [`LONG_WORD_END`], after at most one character that is no letter.
fn is_long_word(bytes: &[u8]) -> bool {
    let letters = match bytes.first() {
        Some(b) if b.is_ascii_alphabetic() => bytes,
        _ => &bytes[1..],
    };
    (LONG_WORD + 1..=LONG_WORD_END).contains(&letters.len())
        && letters.iter().all(u8::is_ascii_alphabetic)
}

/// The pieces of a text, as o200k's pattern splits it.
#[derive(Debug, Clone)]
pub struct Pieces<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Iterator for Pieces<'t> {
    type Item = (usize, &'t str);

    fn next(&mut self) -> Option<(usize, &'t str)> {
        let rest = &self.text[self.at..];
        if rest.is_empty() {
            return None;
        }
        let length = match ascii_piece(rest.as_bytes()) {
            Some(length) => length,
            // o200k splits a text by anchored matches, each from where the last ended, so its
            // first piece of the rest is its piece here too.
            None => crate::o200k::first_piece(rest),
        };
        // Every piece holds at least one character; a split that found none ends the text as
        // one piece rather than looping.
        let length = if length == 0 { rest.len() } else { length };
        let start = self.at;
        self.at += length;
        Some((start, &rest[..length]))
    }
}

/// What an ASCII byte is to o200k's pattern; `Wide` is a byte of a character outside ASCII,
/// which the hand-written splitter leaves to the pattern itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Lower,
    Upper,
    Digit,
    /// White space that is no line break: space, tab, vertical tab, form feed.
    Blank,
    /// `\r` or `\n`.
    Break,
    /// Anything else in ASCII: punctuation, symbols, control characters.
    Other,
    Wide,
    End,
}

fn kind(bytes: &[u8], at: usize) -> Kind {
    match bytes.get(at) {
        None => Kind::End,
        Some(b'a'..=b'z') => Kind::Lower,
        Some(b'A'..=b'Z') => Kind::Upper,
        Some(b'0'..=b'9') => Kind::Digit,
        Some(b' ' | b'\t' | 0x0B | 0x0C) => Kind::Blank,
        Some(b'\r' | b'\n') => Kind::Break,
        Some(b) if b.is_ascii() => Kind::Other,
        Some(_) => Kind::Wide,
    }
}

/// The length of the first o200k piece of `bytes`, when the ASCII characters it reads decide
/// it; `None` where a character outside ASCII could change it. o200k's pattern, in its order:
///
/// 1. `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
/// 2. `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
/// 3. `\p{N}{1,3}`
/// 4. ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
/// 5. `\s*[\r\n]+`
/// 6. `\s+$`
/// 7. `\s+(?!\S)`, then `\s+`.
fn ascii_piece(bytes: &[u8]) -> Option<usize> {
    use Kind::*;
    let first = kind(bytes, 0);
    let letter = |k: Kind| matches!(k, Lower | Upper);
    // Words (1 and 2): one character that is no line break, letter or digit may come first.
    let start = match first {
        Blank | Other => 1,
        _ => 0,
    };
    match kind(bytes, start) {
        Wide => return None,
        k if letter(k) && (start == 1 || letter(first)) => {
            let mut at = start;
            while kind(bytes, at) == Upper {
                at += 1;
            }
            while kind(bytes, at) == Lower {
                at += 1;
            }
            // A letter, mark or digit outside ASCII could go on with the word.
            if kind(bytes, at) == Wide {
                return None;
            }
            return contraction(bytes, at).map(|extra| at + extra);
        }
        _ => {}
    }
    match first {
        // 3: up to three digits.
        Digit => {
            let mut at = 0;
            while at < 3 {
                match kind(bytes, at) {
                    Digit => at += 1,
                    Wide => return None,
                    _ => break,
                }
            }
            Some(at)
        }
        // 4: a run of punctuation, after at most one space, then line breaks and slashes.
        Other => punctuation(bytes, 0),
        Blank if bytes[0] == b' ' && kind(bytes, 1) == Other => punctuation(bytes, 1),
        Blank | Break => {
            let mut end = 0;
            let mut last_break = None;
            loop {
                match kind(bytes, end) {
                    Blank => end += 1,
                    Break => {
                        last_break = Some(end);
                        end += 1;
                    }
                    // White space outside ASCII (a no-break space, say) would go on with the run.
                    Wide => return None,
                    _ => break,
                }
            }
            Some(match last_break {
                // 5: white space up to the last line break of the run.
                Some(last) => last + 1,
                // 6: white space to the end of the text.
                None if end == bytes.len() => end,
                // 7: a run of white space but its last character, which goes with what follows.
                None if end >= 2 => end - 1,
                None => 1,
            })
        }
        _ => None,
    }
}

/// Pattern 4 from `from`: punctuation and symbols, then line breaks and slashes.
fn punctuation(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        match kind(bytes, at) {
            Kind::Other => at += 1,
            Kind::Wide => return None,
            _ => break,
        }
    }
    while matches!(bytes.get(at), Some(b'\r' | b'\n' | b'/')) {
        at += 1;
    }
    Some(at)
}

/// The length of the contraction (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`, `'d`, in any case) at
/// `at`, 0 when there is none; `None` when a character outside ASCII follows the apostrophe
/// (`ſ` folds to `s`).
fn contraction(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'\'') {
        return Some(0);
    }
    let lower = |i: usize| bytes.get(at + i).map(u8::to_ascii_lowercase);
    if bytes.get(at + 1).is_some_and(|b| !b.is_ascii()) {
        return None;
    }
    Some(match (lower(1), lower(2)) {
        (Some(b's' | b't' | b'm' | b'd'), _) => 2,
        (Some(b'r' | b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => 3,
        _ => 0,
    })
}

/// How many pieces the count cache holds.
const CACHE_SLOTS: usize = 4096;
/// The longest piece the cache holds, in bytes.
const CACHE_PIECE: usize = 16;

/// A piece and its count, in a slot of the cache.
#[derive(Clone, Copy)]
struct Slot {
    length: u8,
    bytes: [u8; CACHE_PIECE],
    count: u32,
}

thread_local! {
    /// The counts of recent short pieces: text repeats its words, and a lookup here is a few
    /// times cheaper than o200k's encoder.
    static CACHE: RefCell<Vec<Slot>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with this thread's cache, filled with empty slots on first use. A nested call (a
/// price asked for inside `f`, which nothing here does) gets a cache of its own.
fn with_cache<T>(f: impl FnOnce(&mut [Slot]) -> T) -> T {
    CACHE.with(|cache| match cache.try_borrow_mut() {
        Ok(mut cache) => {
            if cache.is_empty() {
                cache.resize(CACHE_SLOTS, EMPTY_SLOT);
            }
            f(&mut cache)
        }
        Err(_) => f(&mut vec![EMPTY_SLOT; CACHE_SLOTS]),
    })
}

/// A slot that holds no piece: no piece is `u8::MAX` bytes long in the cache.
const EMPTY_SLOT: Slot = Slot {
    length: u8::MAX,
    bytes: [0; CACHE_PIECE],
    count: 0,
};

/// The price of one piece that lies in no id's random part (see the module's documentation).
fn price_in(cache: &mut [Slot], piece: &str) -> u64 {
    let bytes = piece.as_bytes();
    if bytes.len() <= 1
        || bytes.len() > HUGE_PIECE
        || (bytes.len() > LONG_ASCII_PIECE && bytes.is_ascii())
        || is_long_word(bytes)
    {
        return bytes.len() as u64;
    }
    cached_count(cache, bytes)
}

/// o200k's count of one piece, through the cache when the piece is short.
fn cached_count(cache: &mut [Slot], bytes: &[u8]) -> u64 {
    if bytes.len() > CACHE_PIECE {
        return crate::o200k::vocabulary().count(bytes) as u64;
    }
    let mut key = [0u8; CACHE_PIECE];
    key[..bytes.len()].copy_from_slice(bytes);
    let (low, high) = key.split_at(8);
    let word = |half: &[u8]| u64::from_le_bytes(half.try_into().unwrap_or_default());
    let hash = (word(low) ^ word(high).rotate_left(29) ^ bytes.len() as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let slot = (hash >> 52) as usize % CACHE_SLOTS;
    let Some(entry) = cache.get_mut(slot) else {
        return crate::o200k::vocabulary().count(bytes) as u64;
    };
    if usize::from(entry.length) == bytes.len() && entry.bytes == key {
        return u64::from(entry.count);
    }
    let count = crate::o200k::vocabulary().count(bytes);
    *entry = Slot {
        length: bytes.len() as u8,
        bytes: key,
        count: count as u32,
    };
    count as u64
}

impl TokenEstimator for Bound {
    fn as_sync(&self) -> Option<&(dyn TokenEstimator + Sync)> {
        Some(self)
    }

    fn count(&self, text: &str) -> u64 {
        Bound::count_within(text, u64::MAX).unwrap_or(u64::MAX)
    }

    fn count_within(&self, text: &str, limit: u64) -> Option<u64> {
        Bound::count_within(text, limit)
    }

    fn estimate(&self, text: &str) -> u64 {
        // The quick figure, with the random part of each id at its bytes as in the price, so
        // that it too is the same whatever ids a text holds.
        let heuristic = |text: &str| crate::text::Heuristic.count(text);
        let mut total = 0;
        let mut at = 0;
        for (start, end) in IdSpans::new(text.as_bytes()) {
            total += heuristic(&text[at..start]) + (end - start) as u64;
            at = end;
        }
        total + heuristic(&text[at..])
    }

    fn prefix_within(&self, text: &str, budget: u64) -> usize {
        let mut total = 0u64;
        let mut end = text.len();
        for (start, piece, price) in Bound::priced(text) {
            if total + price > budget {
                end = start + longest_prefix(piece, piece.len(), budget - total);
                break;
            }
            total += price;
        }
        // A cut inside a piece, or a last piece that reads differently at the text's end, can
        // cost more than the pieces did; the prefix itself is what must fit.
        if end == text.len() || Bound::count_within(&text[..end], budget).is_some() {
            return end;
        }
        longest_prefix(text, end, budget)
    }

    fn suffix_within(&self, text: &str, budget: u64) -> usize {
        // Pieces are found from the front, so a window at the end is split on its own, as the
        // suffix will be sent; a window that fits whole is doubled.
        let mut window = usize::try_from(budget.saturating_mul(8))
            .unwrap_or(usize::MAX)
            .max(64);
        let start = loop {
            let from = if window >= text.len() {
                0
            } else {
                text.ceil_char_boundary(text.len() - window)
            };
            let tail = &text[from..];
            let pieces: Vec<(usize, &str, u64)> = Bound::priced(tail).collect();
            let mut total = 0u64;
            let mut start = text.len();
            let mut full = true;
            for &(at, piece, price) in pieces.iter().rev() {
                if total + price > budget {
                    start = from + at + shortest_start(piece, 0, budget - total);
                    full = false;
                    break;
                }
                total += price;
                start = from + at;
            }
            if !full || from == 0 {
                break start;
            }
            window = window.saturating_mul(2);
        };
        // A suffix that starts inside a piece splits anew (three digits group from its start):
        // the suffix itself is what must fit.
        if start == 0 || Bound::count_within(&text[start..], budget).is_some() {
            return start;
        }
        shortest_start(text, start, budget)
    }
}

/// The longest prefix of `text[..over]` within `budget`, by halves: each prefix priced whole.
fn longest_prefix(text: &str, over: usize, budget: u64) -> usize {
    let (mut fits, mut over) = (0, over);
    while over - fits > 1 {
        let middle = text.floor_char_boundary(fits + (over - fits) / 2);
        let middle = if middle <= fits {
            text.ceil_char_boundary(fits + 1)
        } else {
            middle
        };
        if middle >= over {
            break;
        }
        if Bound::count_within(&text[..middle], budget).is_some() {
            fits = middle;
        } else {
            over = middle;
        }
    }
    fits
}

/// The start of the longest suffix within `budget` that starts after `over`, by halves: each
/// suffix priced whole.
fn shortest_start(text: &str, over: usize, budget: u64) -> usize {
    let (mut over, mut fits) = (over, text.len());
    while fits - over > 1 {
        let middle = text.ceil_char_boundary(over + (fits - over) / 2);
        let middle = if middle >= fits {
            text.floor_char_boundary(fits - 1)
        } else {
            middle
        };
        if middle <= over {
            break;
        }
        if Bound::count_within(&text[middle..], budget).is_some() {
            fits = middle;
        } else {
            over = middle;
        }
    }
    fits
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every id's random part, listed at once from every `_`.
    fn every_span(bytes: &[u8]) -> Vec<(usize, usize)> {
        memchr::memchr_iter(b'_', bytes)
            .filter_map(|at| id_span_at(bytes, at))
            .collect()
    }

    /// Each piece's start and price as [`Bound::priced`] gave them when it listed every id's
    /// random part first.
    fn priced_with_every_span_listed(text: &str) -> Vec<(usize, u64)> {
        let spans = every_span(text.as_bytes());
        let (mut next, mut charged) = (0, usize::MAX);
        Bound::pieces(text)
            .map(|(start, piece)| {
                let end = start + piece.len();
                while spans
                    .get(next)
                    .is_some_and(|&(_, span_end)| span_end <= start)
                {
                    next += 1;
                }
                let price = match spans.get(next) {
                    Some(&(span_start, span_end)) if span_start <= start && end <= span_end => {
                        match charged == next {
                            true => 0,
                            false => {
                                charged = next;
                                (span_end - span_start) as u64
                            }
                        }
                    }
                    _ => Bound::piece_price(piece),
                };
                (start, price)
            })
            .collect()
    }

    proptest::proptest! {
        /// The ids' random parts found as the pieces reach them price every piece as the list
        /// of them all did: ids of each kind, next to each other, inside words, cut short, and
        /// underscores everywhere.
        #[test]
        fn random_parts_found_as_they_are_reached_price_as_the_whole_list(
            picks in proptest::collection::vec(0usize..14, 0..40),
            limit in 0u64..200,
        ) {
            const FRAGMENTS: &[&str] = &[
                "ref_1_abcd", "ref_z9_0a1b", "img_a1b2c3_7", "doc_zzzzzz_12", " ", "_", "x", "ref_",
                "ref_12_abc", "snake_case_name ", "é_", "\n", "ref_1_abcde", "9",
            ];
            let text: String = picks.iter().map(|&i| FRAGMENTS[i]).collect();
            let lazy: Vec<(usize, u64)> =
                Bound::priced(&text).map(|(start, _, price)| (start, price)).collect();
            let listed = priced_with_every_span_listed(&text);
            proptest::prop_assert_eq!(&lazy, &listed);
            let total: u64 = listed.iter().map(|&(_, price)| price).sum();
            proptest::prop_assert_eq!(
                Bound::count_within(&text, limit),
                (total <= limit).then_some(total)
            );
            let bytes = text.as_bytes();
            let found: Vec<(usize, usize)> = IdSpans::new(bytes).collect();
            proptest::prop_assert_eq!(found, every_span(bytes));
        }
    }

    fn o200k_pieces(text: &str) -> Vec<&str> {
        bpe_openai::o200k_base().split(text).collect()
    }

    #[test]
    fn the_pieces_are_o200ks_on_ascii_and_beside_other_characters() {
        for text in [
            "Hello world, it's 12345 o'clock!!\n\n  \tindented  \n",
            "camelCaseWord HTTPServer ALLCAPS's x'LL y'Re",
            "  leading   spaces then end   ",
            "a\r\n\r\n  b/ c //\n/x !\n/ ?",
            "\x0b\x0c\x1f\x00 mixed é café ſ 'ſ ñ\u{a0}\u{a0}x 中文 ١٢٣4",
            "x'ſ don'ſ 1٢3 $é ¡hola! —dash— a\u{300}b",
            "",
            " ",
            "\n",
            "'",
            "it's",
            "IT'S",
        ] {
            let ours: Vec<&str> = Bound::pieces(text).map(|(_, p)| p).collect();
            assert_eq!(ours, o200k_pieces(text), "{text:?}");
        }
    }

    #[test]
    fn a_huge_piece_costs_its_bytes_and_no_fewer_than_o200k_counts() {
        // A line of CJK letters with no punctuation is one piece.
        let text = "\u{4e2d}\u{6587}\u{5b57}\u{7b26}".repeat(HUGE_PIECE / 12 + 1);
        assert_eq!(Bound::pieces(&text).count(), 1);
        assert!(text.len() > HUGE_PIECE);
        let price = Bound.count(&text);
        assert_eq!(price, text.len() as u64);
        assert!(price >= bpe_openai::o200k_base().count(&text) as u64);
        // One byte less than the limit is still counted.
        let under = &text[..text.floor_char_boundary(HUGE_PIECE)];
        assert_eq!(
            Bound.count(under),
            bpe_openai::o200k_base().count(under) as u64
        );
    }

    #[test]
    fn the_budget_doc_names_the_sizes_priced_at_their_bytes() {
        let doc = include_str!("../../../docs/budget.md").replace("\n  ", " ");
        let words = format!(
            "a word of {} to {} ASCII letters costs its bytes",
            LONG_WORD + 1,
            LONG_WORD_END
        );
        assert!(doc.contains(&words), "{words}");
        let huge = format!("a piece over {} KiB", HUGE_PIECE / 1024);
        assert!(doc.contains(&huge), "{huge}");
        let ascii = format!("a piece over {} KiB all in ASCII", LONG_ASCII_PIECE / 1024);
        assert!(doc.contains(&ascii), "{ascii}");
    }

    #[test]
    fn a_long_ascii_piece_costs_its_bytes_and_no_fewer_than_o200k_counts() {
        let over = "x".repeat(LONG_ASCII_PIECE + 1);
        assert_eq!(Bound::pieces(&over).count(), 1);
        assert_eq!(Bound.count(&over), over.len() as u64);
        assert!(Bound.count(&over) >= bpe_openai::o200k_base().count(&over) as u64);
        // At the limit, the piece is still counted.
        let at = &over[..LONG_ASCII_PIECE];
        assert_eq!(Bound.count(at), bpe_openai::o200k_base().count(at) as u64);
    }

    #[test]
    fn a_long_word_costs_its_bytes_whatever_it_spells() {
        let a = Bound.count("read_result(\"spill_abcdefghijklmnopqrstuvwxyzab\")");
        let b = Bound.count("read_result(\"spill_qqqqqqqqqqqqqqqqqqqqqqqqqqqq\")");
        assert_eq!(a, b);
        assert!(
            a >= bpe_openai::o200k_base()
                .count("read_result(\"spill_qqqqqqqqqqqqqqqqqqqqqqqqqqqq\")")
                as u64
        );
    }
}
