//! A `Value` written as compact JSON, byte for byte what `serde_json::to_vec` writes, faster on
//! long strings.
//!
//! A request body carries each image and document as a base64 string of megabytes, and it is
//! written out, and measured, on every turn. `serde_json` looks up each byte of a string in a
//! table to find what must be escaped; this writer asks eight bytes at a time, as one word,
//! whether any of them is a quote, a backslash or a control character, so a run with nothing
//! to escape costs little more than a copy. Where a byte must be escaped, it is escaped as
//! `serde_json` does (decision 0150). A length is what the writer writes, counted.

use std::io::{self, Write};

use serde_json::Value;

/// The bytes asked about at once, as one word.
const CHUNK: usize = 8;

/// `value` as compact JSON: the same bytes as `serde_json::to_vec(value)`.
pub fn compact_json(value: &Value) -> Vec<u8> {
    // Measuring first would walk a body of many small values twice; a vector that doubles
    // copies a long one's bytes about once more.
    let mut out = Vec::new();
    // Writing to a `Vec` cannot fail.
    let _ = write_compact_json(&mut out, value);
    out
}

/// Writes `value` as compact JSON to `out`: the bytes `serde_json::to_writer` writes.
pub fn write_compact_json<W: Write + ?Sized>(out: &mut W, value: &Value) -> io::Result<()> {
    match value {
        Value::Null => out.write_all(b"null"),
        Value::Bool(true) => out.write_all(b"true"),
        Value::Bool(false) => out.write_all(b"false"),
        // Numbers are short and few: `serde_json` writes them, so they are spelt as it spells
        // them.
        Value::Number(number) => serde_json::to_writer(&mut *out, number).map_err(io::Error::from),
        Value::String(text) => write_json_str(out, text),
        Value::Array(items) => {
            out.write_all(b"[")?;
            for (at, item) in items.iter().enumerate() {
                if at > 0 {
                    out.write_all(b",")?;
                }
                write_compact_json(out, item)?;
            }
            out.write_all(b"]")
        }
        Value::Object(map) => {
            out.write_all(b"{")?;
            for (at, (key, item)) in map.iter().enumerate() {
                if at > 0 {
                    out.write_all(b",")?;
                }
                write_json_str(out, key)?;
                out.write_all(b":")?;
                write_compact_json(out, item)?;
            }
            out.write_all(b"}")
        }
    }
}

/// The length of `value`'s compact JSON, counted without writing it:
/// `serde_json::to_vec(value).len()`. It is what [`write_compact_json`] writes, counted.
pub fn compact_json_len(value: &Value) -> u64 {
    /// Counts the bytes written and keeps none.
    struct Count(u64);
    impl Write for Count {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0 += bytes.len() as u64;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail.
    let _ = write_compact_json(&mut count, value);
    count.0
}

/// Writes `text` as a JSON string, quotes and all, escaped as `serde_json` escapes it.
pub fn write_json_str<W: Write + ?Sized>(out: &mut W, text: &str) -> io::Result<()> {
    out.write_all(b"\"")?;
    let bytes = text.as_bytes();
    let mut from = 0;
    let mut at = 0;
    while let Some(found) = next_escape(bytes, at) {
        out.write_all(&bytes[from..found])?;
        write_escape(out, bytes[found])?;
        from = found + 1;
        at = from;
    }
    out.write_all(&bytes[from..])?;
    out.write_all(b"\"")
}

/// Whether JSON needs `byte` escaped in a string.
#[inline]
fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// Where the first byte to escape at or after `from` is.
#[inline]
fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    // Eight bytes at a time, asked as one word: the chunk that holds one is then read byte by
    // byte.
    while let Some(chunk) = bytes.get(at..at + CHUNK) {
        let mut word = [0; CHUNK];
        word.copy_from_slice(chunk);
        if holds_escape(u64::from_le_bytes(word)) {
            break;
        }
        at += CHUNK;
    }
    bytes[at..]
        .iter()
        .position(|&b| needs_escape(b))
        .map(|found| at + found)
}

/// Whether any of a word's eight bytes is one JSON escapes: below 0x20, a quote or a
/// backslash. Each test is exact for the word as a whole (a byte's borrow reaches only the
/// bytes above one that is found), which is all that is asked.
#[inline]
fn holds_escape(word: u64) -> bool {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    let below = |n: u8| word.wrapping_sub(ONES * u64::from(n)) & !word & HIGHS;
    let zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGHS;
    let quote = zero(word ^ (ONES * u64::from(b'"')));
    let backslash = zero(word ^ (ONES * u64::from(b'\\')));
    (below(0x20) | quote | backslash) != 0
}

/// What a byte JSON needs escaped is written as, as `serde_json` writes it.
fn escape_of(byte: u8) -> Escape {
    match byte {
        b'"' => Escape::Short(b'"'),
        b'\\' => Escape::Short(b'\\'),
        0x08 => Escape::Short(b'b'),
        0x0c => Escape::Short(b'f'),
        b'\n' => Escape::Short(b'n'),
        b'\r' => Escape::Short(b'r'),
        b'\t' => Escape::Short(b't'),
        other => Escape::Unicode(other),
    }
}

/// A byte's escape: `\n` and its kind, or `\u00XX`.
enum Escape {
    Short(u8),
    Unicode(u8),
}

fn write_escape<W: Write + ?Sized>(out: &mut W, byte: u8) -> io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match escape_of(byte) {
        Escape::Short(letter) => out.write_all(&[b'\\', letter]),
        Escape::Unicode(byte) => out.write_all(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(byte >> 4)],
            HEX[usize::from(byte & 0xf)],
        ]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Strings drawn from all of Unicode, with the bytes JSON escapes (and their neighbours)
    /// drawn more often than chance would, at every place against a chunk's edge.
    fn any_text() -> impl Strategy<Value = String> {
        let unit = prop_oneof![
            3 => any::<char>(),
            3 => prop::sample::select(vec!['"', '\\', '\u{0}', '\u{8}', '\u{c}', '\n', '\r',
                '\t', '\u{1f}', ' ', '\u{7f}', '/', '\u{2028}', '\u{10ffff}']),
            4 => prop::char::range('a', 'z'),
        ];
        prop::collection::vec(unit, 0..80).prop_map(|chars| chars.into_iter().collect())
    }

    fn any_number() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ]
    }

    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any_number(),
            any_text().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::vec((any_text(), inner), 0..8)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// The oracle is `serde_json` itself: the same bytes, and the length counted right.
        #[test]
        fn writes_what_serde_json_writes(value in any_value()) {
            let expected = serde_json::to_vec(&value).unwrap();
            prop_assert_eq!(&compact_json(&value), &expected);
            prop_assert_eq!(compact_json_len(&value), expected.len() as u64);
        }

        #[test]
        fn a_string_is_written_as_serde_json_writes_it(text in any_text()) {
            let mut out = Vec::new();
            write_json_str(&mut out, &text).unwrap();
            prop_assert_eq!(out, serde_json::to_vec(&text).unwrap());
        }
    }

    #[test]
    fn each_escape_is_spelt_as_serde_json_spells_it() {
        let every: String = (0u8..0x80).map(char::from).collect();
        let value = json!({"k\u{1}": [every.clone(), 1, -2, 2.5, null, true, false, {}, []]});
        assert_eq!(compact_json(&value), serde_json::to_vec(&value).unwrap());
        // A run with an escape at every place in and beside a chunk.
        for at in 0..40 {
            let mut text = "x".repeat(40);
            text.insert(at, '"');
            let value = Value::String(text);
            assert_eq!(compact_json(&value), serde_json::to_vec(&value).unwrap());
            assert_eq!(
                compact_json_len(&value),
                serde_json::to_vec(&value).unwrap().len() as u64
            );
        }
    }
}
