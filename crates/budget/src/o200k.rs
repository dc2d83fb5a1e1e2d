//! o200k's vocabulary and pattern, kept compact (decision 0137): the exact count of a piece and
//! the pieces of a text outside ASCII, without `bpe-openai`'s tables.
//!
//! The vocabulary is OpenAI's `o200k_base.tiktoken` (vendored gzipped in `data/`), made by the
//! build script into one buffer of every token's bytes, in rank order, and an open-addressing
//! table from a token's bytes to its rank: about 4 MiB, in the binary (decision 0148), so a run
//! reads only the pages its pieces need. A piece is counted with tiktoken's byte-pair
//! merge: from single bytes, the adjacent pair whose join has the lowest rank is merged first,
//! the leftmost on ties, until no join is a token. A short piece is merged by scanning its parts;
//! a longer one with a heap of adjacent pairs, stale entries skipped when popped. A piece of
//! more than [`MERGE_PIECE`] bytes (a run of letters is one piece, and a hostile server can send
//! megabytes of one) is counted by `bpe-openai`, whose backtracking count is linear: its tables
//! (about 60 MiB) load only when such a piece first comes.
//!
//! The pattern is o200k's, as `bpe-openai` writes it for `regex-automata`: its negative
//! look-ahead `\s+(?!\S)` becomes a second pattern `\s+\s` whose last character is dropped from
//! the match. Building it does not read the vocabulary.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::LazyLock;

use crate::o200k_hash::{RANK_BITS, hash, tag};

use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};

/// The length of the longest token.
const LONGEST: usize = include!(concat!(env!("OUT_DIR"), "/o200k.longest"));

/// No rank: a join that is no token.
const EMPTY: u32 = u32::MAX;

/// A piece up to this many bytes is merged by scanning its parts; a longer one with a heap.
const SCAN_PIECE: usize = 64;
/// A piece up to this many bytes is merged here; a longer one (a KiB of letters with no space,
/// digit or punctuation) is counted by `bpe-openai`, whose tables load only then.
pub(crate) const MERGE_PIECE: usize = 1024;

/// o200k's tokens: their bytes, in rank order, and a table from bytes to rank, as the build
/// script wrote them.
pub(crate) struct Vocabulary {
    /// Every token's bytes, one after the other, in rank order.
    bytes: &'static [u8],
    /// Where each token's bytes end in `bytes`, by rank: 32-bit little-endian numbers.
    ends: &'static [u8],
    /// Open addressing, linear probing, a 32-bit little-endian slot each: a token's rank and
    /// tag (see [`RANK_BITS`]), or 0 where there is none.
    table: &'static [u8],
}

static VOCABULARY: Vocabulary = Vocabulary {
    bytes: include_bytes!(concat!(env!("OUT_DIR"), "/o200k.bytes")),
    ends: include_bytes!(concat!(env!("OUT_DIR"), "/o200k.ends")),
    table: include_bytes!(concat!(env!("OUT_DIR"), "/o200k.table")),
};

/// o200k's vocabulary.
pub(crate) fn vocabulary() -> &'static Vocabulary {
    &VOCABULARY
}

/// The 32-bit little-endian number at `index` of `words`; 0 past its end.
fn word(words: &[u8], index: usize) -> u32 {
    words
        .get(index * 4..index * 4 + 4)
        .and_then(|four| <[u8; 4]>::try_from(four).ok())
        .map_or(0, u32::from_le_bytes)
}

impl Vocabulary {
    /// How many tokens there are.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ends.len() / 4
    }

    /// The bytes of the token of rank `rank`.
    pub(crate) fn token(&self, rank: u32) -> &[u8] {
        let rank = rank as usize;
        let start = if rank == 0 {
            0
        } else {
            word(self.ends, rank - 1)
        };
        let end = word(self.ends, rank);
        self.bytes
            .get(start as usize..end as usize)
            .unwrap_or_default()
    }

    /// The rank of the token spelled `bytes`, if it is one.
    pub(crate) fn rank(&self, bytes: &[u8]) -> Option<u32> {
        if bytes.len() > LONGEST || bytes.is_empty() {
            return None;
        }
        let hash = hash(bytes);
        let (mask, tag) = ((self.table.len() / 4).saturating_sub(1), tag(hash));
        let mut at = hash as usize & mask;
        loop {
            let entry = word(self.table, at);
            if entry == 0 {
                return None;
            }
            if entry >> RANK_BITS & 0x7FF == tag {
                let rank = entry & ((1 << RANK_BITS) - 1);
                if self.token(rank) == bytes {
                    return Some(rank);
                }
            }
            at = (at + 1) & mask;
        }
    }

    /// How many tokens o200k encodes one piece as (tiktoken's byte-pair merge).
    pub(crate) fn count(&self, piece: &[u8]) -> usize {
        if piece.len() <= 1 || self.rank(piece).is_some() {
            return piece.len().min(1);
        }
        if piece.len() <= SCAN_PIECE {
            self.count_by_scan(piece)
        } else if piece.len() <= MERGE_PIECE {
            self.count_by_heap(piece)
        } else {
            // bpe-openai's count backtracks over its automaton in linear time, where the merge
            // takes about a microsecond a byte: its tables load the first time a piece this long
            // comes, which text a person writes hardly ever has.
            bpe_openai::o200k_base().bpe.count(piece)
        }
    }

    /// The merge as tiktoken writes it: each part's start and the rank of its join with the
    /// next part; the lowest rank merges, the leftmost on ties. For a piece of at most
    /// [`SCAN_PIECE`] bytes.
    fn count_by_scan(&self, piece: &[u8]) -> usize {
        let rank_of = |from: u32, to: u32| {
            self.rank(&piece[from as usize..to as usize])
                .unwrap_or(EMPTY)
        };
        let n = piece.len();
        // (start, rank of this part joined with the next), on the stack; the last part has no
        // join.
        let mut parts = [(0u32, EMPTY); SCAN_PIECE];
        for (i, part) in parts.iter_mut().enumerate().take(n) {
            let i = i as u32;
            *part = (
                i,
                if (i as usize) + 2 <= n {
                    rank_of(i, i + 2)
                } else {
                    EMPTY
                },
            );
        }
        let mut length = n;
        loop {
            let mut best = (EMPTY, 0);
            for (i, &(_, rank)) in parts[..length].iter().enumerate() {
                if rank < best.0 {
                    best = (rank, i);
                }
            }
            let (rank, i) = best;
            if rank == EMPTY {
                return length;
            }
            parts.copy_within(i + 2..length, i + 1);
            length -= 1;
            let end = |k: usize| if k < length { parts[k].0 } else { n as u32 };
            let (after, next) = (end(i + 1), end(i + 2));
            parts[i].1 = if i + 1 < length {
                rank_of(parts[i].0, next)
            } else {
                EMPTY
            };
            if i > 0 {
                parts[i - 1].1 = rank_of(parts[i - 1].0, after);
            }
        }
    }

    /// The same merge with a heap of the adjacent pairs, lowest rank then leftmost start first.
    /// A popped pair is merged only if the parts at its start still join into a token of its
    /// rank; every pair that exists was pushed when it came to be, so the lowest such pair is
    /// the one tiktoken merges. Where parts start is one bit a byte: a part is a token, so the
    /// next start is at most the longest token's length away.
    fn count_by_heap(&self, piece: &[u8]) -> usize {
        let n = piece.len();
        let mut starts = Starts::new(n);
        let key = |rank: u32, start: usize| Reverse((u64::from(rank) << 40) | start as u64);
        // Room for every push up front: pages never written are never resident, and the heap
        // is never copied into a bigger buffer.
        let mut heap = Vec::with_capacity(2 * n);
        heap.extend((0..n - 1).filter_map(|i| self.rank(&piece[i..i + 2]).map(|r| key(r, i))));
        let mut heap = BinaryHeap::from(heap);
        let mut parts = n;
        while let Some(Reverse(entry)) = heap.pop() {
            let (rank, start) = ((entry >> 40) as u32, (entry & ((1 << 40) - 1)) as usize);
            if !starts.has(start) {
                continue;
            }
            let middle = starts.next(start);
            if middle >= n {
                continue;
            }
            let end = starts.next(middle);
            if self.rank(&piece[start..end]) != Some(rank) {
                continue;
            }
            starts.remove(middle);
            parts -= 1;
            if end < n {
                let after = starts.next(end);
                if let Some(rank) = self.rank(&piece[start..after]) {
                    heap.push(key(rank, start));
                }
            }
            if start > 0 {
                let before = starts.previous(start);
                if let Some(rank) = self.rank(&piece[before..end]) {
                    heap.push(key(rank, before));
                }
            }
        }
        parts
    }
}

/// Where the parts of a piece start, one bit a byte.
struct Starts {
    words: Vec<u64>,
    length: usize,
}

impl Starts {
    /// Every byte of a piece of `length` bytes starts a part.
    fn new(length: usize) -> Starts {
        let mut words = vec![u64::MAX; length.div_ceil(64)];
        if let Some(last) = words.last_mut()
            && !length.is_multiple_of(64)
        {
            *last = (1 << (length % 64)) - 1;
        }
        Starts { words, length }
    }

    fn has(&self, at: usize) -> bool {
        self.words[at / 64] & (1 << (at % 64)) != 0
    }

    fn remove(&mut self, at: usize) {
        self.words[at / 64] &= !(1 << (at % 64));
    }

    /// The first start after `at`, or the piece's length.
    fn next(&self, at: usize) -> usize {
        let from = at + 1;
        let mut word = from / 64;
        let mut bits = match self.words.get(word) {
            Some(bits) => bits & (u64::MAX << (from % 64)),
            None => return self.length,
        };
        while bits == 0 {
            word += 1;
            match self.words.get(word) {
                Some(&next) => bits = next,
                None => return self.length,
            }
        }
        word * 64 + bits.trailing_zeros() as usize
    }

    /// The last start before `at`, which is over 0; the piece's first byte always starts one.
    fn previous(&self, at: usize) -> usize {
        let mut word = at / 64;
        let mut bits = self.words[word] & ((1u64 << (at % 64)) - 1);
        while bits == 0 {
            word -= 1;
            bits = self.words[word];
        }
        word * 64 + 63 - bits.leading_zeros() as usize
    }
}

/// o200k's pattern as `bpe-openai` 0.3.2 writes it: words (two ways), up to three digits, a
/// run of punctuation, white space up to a line break, white space at the end; then white space
/// but its last character (`\s+\s`, the look-ahead dropped); then any white space.
const PATTERNS: [&str; 3] = [
    concat!(
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"|\p{N}{1,3}",
        r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"|\s*[\r\n]+",
        r"|\s+$",
    ),
    r"\s+\s",
    r"\s+",
];

/// Which of [`PATTERNS`] ends in a look-ahead character.
const LOOK_AHEAD: usize = 1;

static PATTERN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new_many(&PATTERNS).expect("o200k's pattern compiles"));

/// The length of o200k's first piece of `text`: an anchored match at its start. Every
/// character starts some piece, so only an empty text gives 0.
pub(crate) fn first_piece(text: &str) -> usize {
    let Some(found) = PATTERN.find(Input::new(text).anchored(Anchored::Yes)) else {
        return 0;
    };
    let mut end = found.end();
    if found.pattern().as_usize() == LOOK_AHEAD {
        end -= text[..end].chars().next_back().map_or(0, char::len_utf8);
    }
    end
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn the_tables_hold_the_vendored_file() {
        let vocabulary = vocabulary();
        assert_eq!(vocabulary.len(), 199_998);
        assert_eq!(vocabulary.bytes.len(), 1_397_670);
        // A slot a token and as many empty, in a power of two.
        assert_eq!(vocabulary.table.len() / 4, 1 << 19);
        let longest = (0..vocabulary.len() as u32)
            .map(|rank| vocabulary.token(rank).len())
            .max();
        assert_eq!(longest, Some(LONGEST));
    }

    /// o200k's pieces of `text`, by [`first_piece`] alone.
    fn split(text: &str) -> Vec<&str> {
        let mut pieces = Vec::new();
        let mut at = 0;
        while at < text.len() {
            let length = first_piece(&text[at..]);
            assert!(length > 0, "no piece at {at} of {text:?}");
            pieces.push(&text[at..at + length]);
            at += length;
        }
        pieces
    }

    /// The splitter and every piece's count against `bpe-openai`, the oracle.
    fn check(text: &str) -> Result<(), TestCaseError> {
        let oracle = bpe_openai::o200k_base();
        let theirs: Vec<&str> = oracle.split(text).collect();
        prop_assert_eq!(&split(text), &theirs);
        for piece in theirs {
            let bytes = piece.as_bytes();
            let expected = oracle.bpe.count(bytes);
            prop_assert_eq!(vocabulary().count(bytes), expected, "{:?}", piece);
            // The merge itself, on pieces of every length, also those `count` leaves to
            // `bpe-openai`.
            if bytes.len() > SCAN_PIECE {
                prop_assert_eq!(vocabulary().count_by_heap(bytes), expected, "{:?}", piece);
            }
        }
        Ok(())
    }

    #[test]
    fn the_vocabulary_reads_whole() {
        let v = vocabulary();
        assert_eq!(v.len(), 199_998);
        for byte in 0..=255u8 {
            assert!(v.rank(&[byte]).is_some(), "byte {byte}");
        }
        assert_eq!(v.rank(b"!"), Some(0));
        assert_eq!(v.token(199_997), b" cocos");
        assert_eq!(v.rank(b" cocos"), Some(199_997));
        assert_eq!(v.rank(b"no such token at all, surely"), None);
        // Every token is found at its own rank.
        for rank in 0..v.len() as u32 {
            assert_eq!(v.rank(v.token(rank)), Some(rank));
        }
    }

    #[test]
    fn the_vocabulary_is_bpe_openais() {
        let oracle = &bpe_openai::o200k_base().bpe;
        let v = vocabulary();
        assert_eq!(v.len(), oracle.num_tokens());
        for rank in 0..v.len() as u32 {
            assert_eq!(v.token(rank), oracle.token_bytes(rank), "token {rank}");
        }
    }

    #[test]
    fn the_two_merges_agree() {
        let v = vocabulary();
        for piece in [
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "xqzjvkwpyrtbnmxqzjvkwpyrtbnmxqzjvkwpyrtbnmxqzjvkwpyrtbnmxqzjvkwpyrtbnm",
            " supercalifragilisticexpialidocious",
            "!!!!!!!!!??????////",
            " Donaudampfschifffahrtsgesellschaftskapitän",
        ] {
            let bytes = &piece.as_bytes()[..piece.len().min(SCAN_PIECE)];
            assert_eq!(v.count_by_scan(bytes), v.count_by_heap(bytes), "{piece}");
        }
    }

    #[test]
    fn a_piece_of_a_megabyte_counts_as_the_oracle_does() {
        let oracle = &bpe_openai::o200k_base().bpe;
        let one_letter = "a".repeat(1 << 20);
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let letters: String = (0..1 << 20)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from(b'a' + (state % 26) as u8)
            })
            .collect();
        for piece in [one_letter, letters] {
            assert_eq!(split(&piece).len(), 1);
            let bytes = piece.as_bytes();
            assert_eq!(vocabulary().count(bytes), oracle.count(bytes));
            // The merge on 64 KiB of it, which `count` would leave to `bpe-openai`.
            let part = &bytes[..1 << 16];
            assert_eq!(vocabulary().count_by_heap(part), oracle.count(part));
        }
    }

    /// Characters from anywhere in Unicode, or mostly ASCII.
    fn text() -> impl Strategy<Value = String> {
        let ascii_heavy = prop_oneof![
            8 => proptest::char::range(' ', '~'),
            2 => proptest::sample::select(vec!['\n', '\r', '\t', '\u{a0}', '\u{3000}', '\'']),
            1 => any::<char>(),
        ];
        prop_oneof![
            proptest::collection::vec(any::<char>(), 0..48),
            proptest::collection::vec(ascii_heavy, 0..200),
        ]
        .prop_map(|chars| chars.into_iter().collect())
    }

    /// A run of one letter, or of letters drawn at random, of a few kilobytes.
    fn run() -> impl Strategy<Value = String> {
        prop_oneof![
            (proptest::char::range('a', 'z'), 1000..5000usize)
                .prop_map(|(c, n)| c.to_string().repeat(n)),
            proptest::collection::vec(proptest::char::range('a', 'z'), 1000..5000)
                .prop_map(|v| v.into_iter().collect()),
            proptest::collection::vec(
                proptest::sample::select(vec!['a', 'b', 'A', 'é', 'ß', 'ж', '中']),
                200..3000
            )
            .prop_map(|v| v.into_iter().collect()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        #[test]
        fn pieces_and_counts_are_o200ks(text in text()) {
            check(&text)?;
        }

        #[test]
        fn long_runs_count_as_o200k_does(before in text(), run in run()) {
            check(&format!("{before}{run}"))?;
        }
    }
}
