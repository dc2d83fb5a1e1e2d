//! Reading JSON as servers send it: lone UTF-16 surrogate escapes become U+FFFD.
//!
//! JSON text may hold `"\ud800"`, an escape of half a surrogate pair. JavaScript servers emit it
//! when they cut a string between the halves of an emoji; serde_json rightly refuses it, which
//! would lose the whole result for one odd character. This reader rewrites each lone surrogate
//! escape to `\ufffd` (the same length, so offsets in error messages still point at the input)
//! and keeps everything else.

use serde_json::Value;

/// Parses one JSON document, replacing lone surrogate escapes with U+FFFD. Returns the value
/// and how many escapes were replaced.
pub fn parse_json_lenient(bytes: &[u8]) -> Result<(Value, usize), serde_json::Error> {
    match serde_json::from_slice(bytes) {
        Ok(value) => Ok((value, 0)),
        Err(error) => {
            let (repaired, replaced) = replace_lone_surrogates(bytes);
            if replaced == 0 {
                return Err(error);
            }
            serde_json::from_slice(&repaired).map(|value| (value, replaced))
        }
    }
}

/// Rewrites every `\uD800`-`\uDFFF` escape that is not half of a valid pair to `\uFFFD`, inside
/// JSON strings only. Returns the new text and how many escapes it rewrote.
pub fn replace_lone_surrogates(bytes: &[u8]) -> (Vec<u8>, usize) {
    let mut out = bytes.to_vec();
    let mut replaced = 0;
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                let unit = (bytes.get(i + 1) == Some(&b'u'))
                    .then(|| hex4(bytes, i + 2))
                    .flatten();
                let Some(unit) = unit else {
                    // Any other escape: skip the escaped character, which may be a quote.
                    i += 2;
                    continue;
                };
                if (0xD800..0xDC00).contains(&unit) {
                    let low = (bytes.get(i + 6) == Some(&b'\\') && bytes.get(i + 7) == Some(&b'u'))
                        .then(|| hex4(bytes, i + 8))
                        .flatten();
                    if low.is_some_and(|low| (0xDC00..0xE000).contains(&low)) {
                        i += 12;
                        continue;
                    }
                    out[i + 2..i + 6].copy_from_slice(b"fffd");
                    replaced += 1;
                } else if (0xDC00..0xE000).contains(&unit) {
                    out[i + 2..i + 6].copy_from_slice(b"fffd");
                    replaced += 1;
                }
                i += 6;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    (out, replaced)
}

fn hex4(bytes: &[u8], at: usize) -> Option<u16> {
    let digits = std::str::from_utf8(bytes.get(at..at + 4)?).ok()?;
    u16::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_halves_become_replacement_characters() {
        let (value, replaced) =
            parse_json_lenient(br#"[{"type":"text","text":"a\ud800b\udc00c\ud83d\ude00"}]"#)
                .unwrap();
        assert_eq!(replaced, 2);
        assert_eq!(value[0]["text"], "a\u{FFFD}b\u{FFFD}c😀");
    }

    #[test]
    fn escaped_backslashes_and_keys_are_read_correctly() {
        // `\\ud800` is a backslash followed by text, not an escape.
        let (value, replaced) = parse_json_lenient(br#"{"k\ud800": "\\ud800 \"\ud800"}"#).unwrap();
        assert_eq!(replaced, 2);
        assert_eq!(value["k\u{FFFD}"], "\\ud800 \"\u{FFFD}");
    }

    #[test]
    fn other_errors_stay_errors() {
        assert!(parse_json_lenient(b"[1,").is_err());
        assert!(parse_json_lenient(br#"["\ud800"#).is_err());
    }
}
