//! Reading JSON as servers send it: what strict JSON refuses inside an otherwise readable
//! document is repaired, not fatal. [`parse_json_lenient`] repairs lone surrogates only;
//! [`parse_json_repaired`] repairs all of these:
//!
//! - Lone UTF-16 surrogate escapes (`"\ud800"`) become U+FFFD. JavaScript servers emit them when
//!   they cut a string between the halves of an emoji; serde_json rightly refuses them, which
//!   would lose the whole result for one odd character. The escape is rewritten to `\ufffd` (the
//!   same length, so offsets in error messages still point at the input).
//! - Bytes that are not UTF-8 become U+FFFD, as `String::from_utf8_lossy` replaces them.
//! - A value nested deeper than [`MAX_DEPTH`] levels becomes the string [`TOO_DEEP`]; the
//!   parser's own limit (128) keeps its stack safe, and the rest of the document is kept.
//! - A number outside `f64`'s range (`1e400`) becomes a string of its own digits.
//!
//! Everything else that is not JSON stays an error.

use serde_json::Value;

/// The deepest nesting kept; a value below it becomes [`TOO_DEEP`].
pub const MAX_DEPTH: usize = 100;
/// What a value nested deeper than [`MAX_DEPTH`] becomes.
pub const TOO_DEEP: &str = "[nested deeper than 100 levels: not read]";

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

/// Parses one JSON document as a server sent it, repairing everything the module's overview
/// lists: lone surrogates, bytes that are not UTF-8, nesting deeper than [`MAX_DEPTH`] and
/// numbers out of range. Returns the value and how many repairs were made. A host reads
/// messages with it, so that one odd value never loses a whole result; `mcpl classify` uses
/// [`parse_json_lenient`], which tells the user what is wrong with a file instead.
pub fn parse_json_repaired(bytes: &[u8]) -> Result<(Value, usize), serde_json::Error> {
    match serde_json::from_slice(bytes) {
        Ok(value) => Ok((value, 0)),
        Err(error) => {
            let (text, utf8) = match std::str::from_utf8(bytes) {
                Ok(_) => (std::borrow::Cow::Borrowed(bytes), 0),
                Err(_) => {
                    let lossy = String::from_utf8_lossy(bytes);
                    let replaced = lossy.matches('\u{FFFD}').count();
                    (
                        std::borrow::Cow::Owned(lossy.into_owned().into_bytes()),
                        replaced,
                    )
                }
            };
            let (shaped, reshaped) = repair_structure(&text);
            let (repaired, surrogates) = replace_lone_surrogates(&shaped);
            let replaced = utf8 + reshaped + surrogates;
            if replaced == 0 {
                return Err(error);
            }
            serde_json::from_slice(&repaired).map(|value| (value, replaced))
        }
    }
}

/// Replaces values nested deeper than [`MAX_DEPTH`] with [`TOO_DEEP`] and numbers outside
/// `f64`'s range with strings of their digits, outside strings only. Returns the new text and
/// how many values it replaced.
fn repair_structure(bytes: &[u8]) -> (Vec<u8>, usize) {
    let mut out = Vec::with_capacity(bytes.len());
    let mut replaced = 0;
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let end = json_string_end(bytes, i);
                out.extend_from_slice(&bytes[i..end]);
                i = end;
                continue;
            }
            b'[' | b'{' if depth >= MAX_DEPTH => {
                i = container_end(bytes, i);
                out.push(b'"');
                out.extend_from_slice(TOO_DEEP.as_bytes());
                out.push(b'"');
                replaced += 1;
                continue;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'-' | b'0'..=b'9' => {
                let end = bytes[i..]
                    .iter()
                    .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    .map_or(bytes.len(), |n| i + n);
                let number = &bytes[i..end];
                let out_of_range = std::str::from_utf8(number)
                    .ok()
                    .and_then(|n| n.parse::<f64>().ok())
                    .is_some_and(f64::is_infinite);
                if out_of_range {
                    out.push(b'"');
                    out.extend_from_slice(number);
                    out.push(b'"');
                    replaced += 1;
                } else {
                    out.extend_from_slice(number);
                }
                i = end;
                continue;
            }
            _ => {}
        }
        out.push(bytes[i]);
        i += 1;
    }
    (out, replaced)
}

/// The index just past the JSON string that starts at `start` (a quote) in raw JSON bytes,
/// escapes skipped, or the end of the input when the string is not closed.
pub fn json_string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The index just past the container that opens at `start`, or the end of the input.
fn container_end(bytes: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i = json_string_end(bytes, i);
                continue;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    bytes.len()
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
    fn invalid_utf8_becomes_replacement_characters() {
        let (value, replaced) = parse_json_repaired(b"{\"text\":\"a\xFFb\xC3\"}").unwrap();
        assert_eq!(replaced, 2);
        assert_eq!(value["text"], "a\u{FFFD}b\u{FFFD}");
    }

    #[test]
    fn values_nested_too_deep_become_a_marker_and_the_rest_is_kept() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let json = format!(r#"{{"a":"[{{","deep":{deep},"b":[1,{{"c":"]"}}]}}"#);
        let (value, replaced) = parse_json_repaired(json.as_bytes()).unwrap();
        assert_eq!(replaced, 1);
        assert_eq!(value["a"], "[{");
        assert_eq!(value["b"][1]["c"], "]");
        let mut inner = &value["deep"];
        for _ in 0..MAX_DEPTH - 1 {
            inner = &inner[0];
        }
        assert_eq!(inner, TOO_DEEP);
    }

    #[test]
    fn numbers_out_of_range_become_their_digits() {
        let (value, replaced) =
            parse_json_repaired(br#"{"n":1e400,"m":-2E+999,"ok":1.5e3,"s":"1e400"}"#).unwrap();
        assert_eq!(replaced, 2);
        assert_eq!(value["n"], "1e400");
        assert_eq!(value["m"], "-2E+999");
        assert_eq!(value["ok"], 1500.0);
        assert_eq!(value["s"], "1e400");
    }

    #[test]
    fn the_lenient_reader_repairs_only_surrogates() {
        assert!(parse_json_lenient(b"[\"\xFF\"]").is_err());
        assert!(parse_json_lenient(b"[1e400]").is_err());
    }

    #[test]
    fn other_errors_stay_errors() {
        assert!(parse_json_repaired(b"[1,").is_err());
        assert!(parse_json_repaired(b"[1e400,").is_err());
        assert!(parse_json_lenient(br#"["\ud800"#).is_err());
    }
}
