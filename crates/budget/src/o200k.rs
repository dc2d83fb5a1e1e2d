//! o200k's vocabulary and pattern, kept compact (decision 0137): the exact count of a piece and
//! the pieces of a text outside ASCII, without `bpe-openai`'s tables.
//!
//! The vocabulary is OpenAI's `o200k_base.tiktoken` (vendored gzipped in `data/`), read once per
//! process into one buffer of every token's bytes, in rank order, and an open-addressing table
//! from a token's bytes to its rank: about 4 MiB. A piece is counted with tiktoken's byte-pair
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
use std::io::BufRead;
use std::sync::LazyLock;

use base64::Engine;
use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};

/// `o200k_base.tiktoken`, gzipped: one token a line, its bytes in base64, a space, its rank.
const VOCABULARY_GZ: &[u8] = include_bytes!("../data/o200k_base.tiktoken.gz");

/// The vendored file's tokens, and their bytes in all: the buffers' sizes (another file still
/// reads, its buffers grown as needed).
const VENDORED_TOKENS: usize = 199_998;
const VENDORED_BYTES: usize = 1_397_670;

/// No rank: a join that is no token.
const EMPTY: u32 = u32::MAX;

/// A token in a slot of the rank table, in 32 bits, so a cache line holds sixteen and the table
/// 2 MiB: its rank (bits 0 to 19), the top eleven bits of its hash (20 to 30), and a set bit 31,
/// so 0 is no token. A probe compares the hash's bits before it reads the token's bytes.
fn slot(rank: u32, hash: u64) -> u32 {
    rank | tag(hash) << RANK_BITS | 1 << 31
}

/// The bits of a rank in a slot.
const RANK_BITS: u32 = 20;

/// The eleven bits of a hash a slot keeps.
fn tag(hash: u64) -> u32 {
    (hash >> 53) as u32
}

/// A piece up to this many bytes is merged by scanning its parts; a longer one with a heap.
const SCAN_PIECE: usize = 64;
/// A piece up to this many bytes is merged here; a longer one (a KiB of letters with no space,
/// digit or punctuation) is counted by `bpe-openai`, whose tables load only then.
pub(crate) const MERGE_PIECE: usize = 1024;

/// o200k's tokens: their bytes, in rank order, and a table from bytes to rank.
pub(crate) struct Vocabulary {
    /// Every token's bytes, one after the other, in rank order.
    bytes: Vec<u8>,
    /// Where each token's bytes end in `bytes`, by rank.
    ends: Vec<u32>,
    /// Open addressing, linear probing: a token as [`slot`] packs it, or 0 where there is none.
    table: Vec<u32>,
    /// The length of the longest token.
    longest: usize,
}

static VOCABULARY: LazyLock<Vocabulary> =
    LazyLock::new(|| Vocabulary::read(VOCABULARY_GZ).expect("the vendored o200k vocabulary"));

/// o200k's vocabulary, read on first use.
pub(crate) fn vocabulary() -> &'static Vocabulary {
    &VOCABULARY
}

/// A hash of a short byte string, for the rank table.
fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        h = (h ^ u64::from_le_bytes(word))
            .wrapping_mul(K)
            .rotate_left(26);
    }
    let mut last = [0u8; 8];
    last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h ^ u64::from_le_bytes(last)).wrapping_mul(K);
    h ^ (h >> 31)
}

impl Vocabulary {
    /// Reads a gzipped `.tiktoken` file whose ranks are its line numbers, from 0.
    pub(crate) fn read(gz: &[u8]) -> Result<Vocabulary, String> {
        // A line at a time: the whole text is never held.
        let mut reader = std::io::BufReader::new(flate2::read::GzDecoder::new(gz));
        // Sized for the vendored file at once: a buffer grown by doubling would hold its old
        // and new copies together, and that would be the run's peak for a small result.
        let mut bytes = Vec::with_capacity(VENDORED_BYTES);
        let mut ends = Vec::with_capacity(VENDORED_TOKENS);
        let mut line = Vec::new();
        loop {
            line.clear();
            reader
                .read_until(b'\n', &mut line)
                .map_err(|e| format!("gunzip: {e}"))?;
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            if line.is_empty() {
                break;
            }
            let number = ends.len();
            let space = memchr::memchr(b' ', &line).ok_or(format!("line {number}: no space"))?;
            base64::engine::general_purpose::STANDARD
                .decode_vec(&line[..space], &mut bytes)
                .map_err(|e| format!("line {number}: {e}"))?;
            let rank = std::str::from_utf8(&line[space + 1..])
                .ok()
                .and_then(|rank| rank.parse::<usize>().ok());
            if rank != Some(number) {
                return Err(format!("line {number}: the rank is not the line's number"));
            }
            // What `ends` and a slot can say: 16 MiB of bytes, a million tokens.
            if bytes.len() >= 1 << 24 || number >= 1 << 20 {
                return Err(format!("line {number}: too many tokens or bytes"));
            }
            ends.push(bytes.len() as u32);
        }
        bytes.shrink_to_fit();
        let size = (ends.len() * 2).next_power_of_two().max(2);
        let mut vocabulary = Vocabulary {
            bytes,
            ends,
            table: vec![0; size],
            longest: 0,
        };
        for rank in 0..vocabulary.ends.len() as u32 {
            let length = vocabulary.token(rank).len();
            if !(1..=255).contains(&length) {
                return Err(format!("token {rank} is {length} bytes"));
            }
            vocabulary.longest = vocabulary.longest.max(length);
            let token = vocabulary.token(rank);
            if vocabulary.rank(token).is_some() {
                return Err(format!("token {rank} is there twice"));
            }
            let hash = hash(token);
            let mask = vocabulary.table.len() - 1;
            let mut at = hash as usize & mask;
            while vocabulary.table[at] != 0 {
                at = (at + 1) & mask;
            }
            vocabulary.table[at] = slot(rank, hash);
        }
        Ok(vocabulary)
    }

    /// How many tokens there are.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The bytes of the token of rank `rank`.
    pub(crate) fn token(&self, rank: u32) -> &[u8] {
        let rank = rank as usize;
        let start = if rank == 0 { 0 } else { self.ends[rank - 1] };
        &self.bytes[start as usize..self.ends[rank] as usize]
    }

    /// The rank of the token spelled `bytes`, if it is one.
    pub(crate) fn rank(&self, bytes: &[u8]) -> Option<u32> {
        if bytes.len() > self.longest || bytes.is_empty() {
            return None;
        }
        let hash = hash(bytes);
        let (mask, tag) = (self.table.len() - 1, tag(hash));
        let mut at = hash as usize & mask;
        loop {
            let entry = self.table[at];
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
    fn the_buffers_are_sized_for_the_vendored_file() {
        let vocabulary = vocabulary();
        assert_eq!(vocabulary.ends.len(), VENDORED_TOKENS);
        assert_eq!(vocabulary.bytes.len(), VENDORED_BYTES);
        assert_eq!(vocabulary.bytes.capacity(), VENDORED_BYTES);
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
