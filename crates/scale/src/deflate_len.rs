//! The length of the zlib stream fdeflate's fast compressor writes, found from code lengths
//! alone (decision 0166).
//!
//! `fdeflate::Compressor` codes every byte with one fixed Huffman table and each run of zero
//! bytes with a length and a distance of one, a run never crossing two `write_data` calls. The
//! bits it writes for a call are a sum over the call's bytes, so the stream's length is known
//! without packing a bit or taking a checksum. [`Lengths::of_fdeflate`] checks the table and
//! the run codes against the compressor itself, once: a table that does not match the linked
//! compressor is never used, and the caller compresses to count.

use std::io::{self, Write};
use std::sync::LazyLock;

/// The code length of each literal (0 to 255), of the end of block (256) and of each length
/// symbol (257 to 285) in fdeflate's fixed table: `HUFFMAN_LENGTHS` in `src/tables.rs` of
/// fdeflate 0.3.7 (MIT OR Apache-2.0, github.com/image-rs/fdeflate), copied on 2026-12-07.
const FDEFLATE_LENGTHS: [u8; 286] = [
    2, 3, 4, 5, 5, 6, 6, 7, 7, 7, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10,
    10, 10, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
    12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
    12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
    12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
    12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
    12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
    12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
    12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 11, 11, 11, 11, 11, 11, 11,
    11, 11, 11, 10, 11, 10, 10, 10, 10, 10, 10, 10, 10, 10, 9, 9, 9, 9, 9, 8, 9, 8, 8, 8, 8, 8, 7,
    7, 7, 6, 6, 6, 5, 4, 3, 12, 12, 12, 9, 9, 11, 10, 11, 11, 10, 11, 11, 11, 11, 11, 11, 12, 11,
    12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 9,
];

/// The end-of-block symbol.
const END_OF_BLOCK: usize = 256;
/// The length symbol of the longest match, 258 bytes.
const LONGEST: usize = 285;
/// The bytes of the compressor's header it writes whole; five more bits follow them.
const HEADER_BYTES: u64 = 53;
/// The bits of the header written after its whole bytes.
const HEADER_BITS: u64 = 5;
/// The Adler-32 at the end of the stream.
const CHECKSUM_BYTES: u64 = 4;

/// The deflate length symbol and its extra bits for a match of `length` bytes, 3 to 258
/// (RFC 1951, section 3.2.5).
const fn length_code(length: usize) -> (usize, u8) {
    match length {
        3..=10 => (257 + length - 3, 0),
        11..=18 => (265 + (length - 11) / 2, 1),
        19..=34 => (269 + (length - 19) / 4, 2),
        35..=66 => (273 + (length - 35) / 8, 3),
        67..=130 => (277 + (length - 67) / 16, 4),
        131..=257 => (281 + (length - 131) / 32, 5),
        _ => (285, 0),
    }
}

/// The code lengths a count reads: each byte's literal, and the bits of a run of zeros.
pub(crate) struct Lengths {
    /// Each byte's literal code length.
    literal: [u8; 256],
    /// The bits `write_run` writes for a run of `r` zeros after its first, `r` below 258:
    /// the match's length code and extra bits and the one-bit distance, or `r` literal zeros
    /// when `r` is 4 or less. The first zero is always a literal.
    tail: [u16; 258],
    /// The bits of a match of 258 bytes and its distance.
    longest: u64,
    /// The bits of the end of block.
    end: u64,
}

impl Lengths {
    /// The lengths of fdeflate's table, when the linked compressor writes exactly what they
    /// count for every literal, every run length up to 600 and the empty stream; else `None`.
    pub(crate) fn of_fdeflate() -> Option<&'static Lengths> {
        static CHECKED: LazyLock<Option<Lengths>> = LazyLock::new(|| {
            let lengths = Lengths::from_table(&FDEFLATE_LENGTHS);
            lengths.matches_fdeflate().then_some(lengths)
        });
        CHECKED.as_ref()
    }

    fn from_table(table: &[u8; 286]) -> Lengths {
        let mut literal = [0; 256];
        literal.copy_from_slice(&table[..256]);
        let zero = u16::from(table[0]);
        let tail = std::array::from_fn(|r| match r {
            ..=4 => r as u16 * zero,
            _ => {
                let (symbol, extra) = length_code(r);
                u16::from(table[symbol]) + u16::from(extra) + 1
            }
        });
        Lengths {
            literal,
            tail,
            longest: u64::from(table[LONGEST]) + 1,
            end: u64::from(table[END_OF_BLOCK]),
        }
    }

    /// The bits `write_run` writes for a run of `run` zeros, `run` at least 1.
    fn run_bits(&self, run: u32) -> u64 {
        let rest = u64::from(run - 1);
        let literal_zero = u64::from(self.literal[0]);
        literal_zero + rest / 258 * self.longest + u64::from(self.tail[(rest % 258) as usize])
    }

    /// The bits of `bytes` written as literals.
    fn literal_bits(&self, bytes: &[u8]) -> u64 {
        bytes
            .iter()
            .map(|&b| u64::from(self.literal[b as usize]))
            .sum()
    }

    /// The bits one `Compressor::write_data(data)` call writes: eight bytes at a time, a run
    /// of zero bytes ending at a byte that is not zero or at the call's last whole eight bytes;
    /// the bytes past those eights are literals.
    pub(crate) fn data_bits(&self, data: &[u8]) -> u64 {
        let mut bits = 0;
        let mut run = 0u32;
        let mut chunks = data.chunks_exact(8);
        for chunk in &mut chunks {
            let word = u64::from_le_bytes([
                chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7],
            ]);
            if word == 0 {
                run += 8;
                continue;
            }
            if run > 0 {
                let run_extra = word.trailing_zeros() / 8;
                bits += self.run_bits(run + run_extra);
                if run_extra > 0 {
                    run = word.leading_zeros() / 8;
                    bits += self.literal_bits(&chunk[run_extra as usize..8 - run as usize]);
                    continue;
                }
            }
            // No run is open here: none was, or the one that was ended at this eight's first byte.
            let run_start = word.leading_zeros() / 8;
            bits += self.literal_bits(&chunk[..8 - run_start as usize]);
            run = run_start;
        }
        if run > 0 {
            bits += self.run_bits(run);
        }
        bits + self.literal_bits(chunks.remainder())
    }

    /// The bytes of the whole zlib stream, given the bits its `write_data` calls wrote.
    pub(crate) fn stream_len(&self, data_bits: u64) -> u64 {
        HEADER_BYTES + (HEADER_BITS + data_bits + self.end).div_ceil(8) + CHECKSUM_BYTES
    }

    /// Whether the linked compressor writes, for each probe, the length this table counts: each
    /// literal 64 times, each run of 1 to 600 zeros ending at a byte that is not zero or at the
    /// end of a call, and the empty stream.
    fn matches_fdeflate(&self) -> bool {
        let mut probes: Vec<Vec<Vec<u8>>> = vec![Vec::new()];
        probes.extend((1..=255u8).map(|b| vec![vec![b; 64]]));
        probes.push(vec![vec![0]; 64]);
        for zeros in 1..=600 {
            // The run starts at every place in an eight for the shorter runs, at one for the
            // others, and ends at a byte that is not zero.
            let starts = if zeros <= 80 { 0..8 } else { 1..2 };
            for start in starts {
                let mut ended = vec![7; start];
                ended.resize(start + zeros, 0);
                ended.extend_from_slice(&[7; 9]);
                probes.push(vec![ended]);
            }
            // A run that ends a call.
            probes.push(vec![vec![0; zeros], vec![3, 0, 0, 5]]);
        }
        probes.iter().all(|calls| {
            let counted = self.stream_len(calls.iter().map(|data| self.data_bits(data)).sum());
            compressed_len(calls).is_ok_and(|written| written == counted)
        })
    }
}

/// The length of the stream fdeflate's compressor writes for these `write_data` calls.
pub(crate) fn compressed_len(calls: &[Vec<u8>]) -> io::Result<u64> {
    let mut compressor = fdeflate::Compressor::new(Counter(0))?;
    for data in calls {
        compressor.write_data(data)?;
    }
    Ok(compressor.finish()?.0)
}

/// Counts what is written.
pub(crate) struct Counter(pub(crate) u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{FDEFLATE_LENGTHS, Lengths, compressed_len};

    #[test]
    fn the_table_matches_the_linked_compressor() {
        assert!(Lengths::of_fdeflate().is_some());
    }

    /// A table one bit off anywhere the compressor reads it is refused: any literal, the end of
    /// block, and the length symbols of matches of 5 to 258 bytes (259 to 285; it codes a
    /// shorter run as literal zeros).
    #[test]
    fn a_table_off_by_a_bit_is_refused() {
        for at in [0, 1, 128, 255, 256, 259, 265, 284, 285] {
            let mut table = FDEFLATE_LENGTHS;
            table[at] += 1;
            assert!(!Lengths::from_table(&table).matches_fdeflate(), "{at}");
        }
    }

    /// Bytes drawn mostly zero or small, in runs of any length, split into calls of any
    /// size: the count is the length the compressor writes.
    fn calls() -> impl Strategy<Value = Vec<Vec<u8>>> {
        let byte = prop_oneof![
            4 => Just(0u8),
            2 => 1u8..4,
            1 => any::<u8>(),
        ];
        let run = (byte, 1usize..700).prop_map(|(b, n)| vec![b; n]);
        let call = prop::collection::vec(
            prop_oneof![run, prop::collection::vec(any::<u8>(), 0..40)],
            0..8,
        )
        .prop_map(|parts| parts.concat());
        prop::collection::vec(call, 0..6)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn the_count_is_what_the_compressor_writes(calls in calls()) {
            let lengths = Lengths::of_fdeflate().expect("the table matches");
            let bits = calls.iter().map(|data| lengths.data_bits(data)).sum();
            prop_assert_eq!(lengths.stream_len(bits), compressed_len(&calls).unwrap());
        }
    }
}
