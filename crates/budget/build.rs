//! Makes o200k's tables from the vendored vocabulary when the crate is built (decision 0148).
//!
//! `data/o200k_base.tiktoken.gz` holds one token a line: its bytes in base64, a space, its rank.
//! The build writes three files the crate includes: every token's bytes one after the other in
//! rank order (`o200k.bytes`), where each token's bytes end (`o200k.ends`, 32-bit little-endian
//! numbers) and an open-addressing table from a token's bytes to its rank (`o200k.table`,
//! 32-bit slots), and the longest token's length (`o200k.longest`). Built at run time, these
//! were 4 MiB on the heap of every run that priced a text, and reading the gzip touched its
//! 1.7 MB more.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

#[path = "src/o200k_hash.rs"]
mod o200k_hash;

use o200k_hash::{RANK_BITS, hash, tag};

const VOCABULARY: &str = "data/o200k_base.tiktoken.gz";

fn main() {
    println!("cargo::rerun-if-changed={VOCABULARY}");
    println!("cargo::rerun-if-changed=src/o200k_hash.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    if let Err(error) = std::fs::read(VOCABULARY)
        .map_err(|e| e.to_string())
        .and_then(|gz| tables(&gz))
        .and_then(|tables| tables.write(&out))
    {
        println!("cargo::error={VOCABULARY}: {error}");
    }
}

/// The tables, as the crate reads them.
struct Tables {
    bytes: Vec<u8>,
    ends: Vec<u32>,
    table: Vec<u32>,
    longest: usize,
}

impl Tables {
    fn write(&self, out: &Path) -> Result<(), String> {
        let words =
            |words: &[u32]| -> Vec<u8> { words.iter().flat_map(|w| w.to_le_bytes()).collect() };
        let put = |name: &str, bytes: &[u8]| {
            std::fs::File::create(out.join(name))
                .and_then(|mut file| file.write_all(bytes))
                .map_err(|e| format!("{name}: {e}"))
        };
        put("o200k.bytes", &self.bytes)?;
        put("o200k.ends", &words(&self.ends))?;
        put("o200k.table", &words(&self.table))?;
        put("o200k.longest", self.longest.to_string().as_bytes())
    }
}

/// A token in a slot of the rank table, in 32 bits, so a cache line holds sixteen and the table
/// 2 MiB: its rank, the top eleven bits of its hash, and a set bit 31, so 0 is no token. A
/// probe compares the hash's bits before it reads the token's bytes.
fn slot(rank: u32, hash: u64) -> u32 {
    rank | tag(hash) << RANK_BITS | 1 << 31
}

/// Reads a gzipped `.tiktoken` file whose ranks are its line numbers, from 0.
fn tables(gz: &[u8]) -> Result<Tables, String> {
    use base64::Engine as _;
    let mut reader = std::io::BufReader::new(flate2::read::GzDecoder::new(gz));
    let (mut bytes, mut ends, mut line) = (Vec::new(), Vec::new(), Vec::new());
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
        let space = line
            .iter()
            .position(|&b| b == b' ')
            .ok_or(format!("line {number}: no space"))?;
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
        if bytes.len() >= 1 << 24 || number >= 1 << RANK_BITS {
            return Err(format!("line {number}: too many tokens or bytes"));
        }
        ends.push(bytes.len() as u32);
    }
    let size = (ends.len() * 2).next_power_of_two().max(2);
    let mut table = vec![0u32; size];
    let mut longest = 0;
    let mut start = 0;
    for (rank, &end) in ends.iter().enumerate() {
        let token = &bytes[start as usize..end as usize];
        start = end;
        if !(1..=255).contains(&token.len()) {
            return Err(format!("token {rank} is {} bytes", token.len()));
        }
        longest = longest.max(token.len());
        let hash = hash(token);
        let mask = size - 1;
        let mut at = hash as usize & mask;
        while table[at] != 0 {
            let held = (table[at] & ((1 << RANK_BITS) - 1)) as usize;
            let held_start = if held == 0 {
                0
            } else {
                ends[held - 1] as usize
            };
            if &bytes[held_start..ends[held] as usize] == token {
                return Err(format!("token {rank} is there twice"));
            }
            at = (at + 1) & mask;
        }
        table[at] = slot(rank as u32, hash);
    }
    Ok(Tables {
        bytes,
        ends,
        table,
        longest,
    })
}
