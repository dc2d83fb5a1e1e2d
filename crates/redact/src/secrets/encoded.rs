//! Base64 and base32 runs of a view, decoded to the texts they may hide.

use base64::Engine;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use data_encoding::BASE32_NOPAD_NOCASE;

use crate::secrets::view::Unit;

/// Runs shorter than this are left alone: 16 base64 characters hold 12 bytes.
pub(crate) const MIN_RUN: usize = 16;

/// Lenient about padding and stray bits, because a run may end in the context's characters.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// A text decoded from the units `from..to` of a view.
pub(crate) struct Hidden {
    pub from: usize,
    pub to: usize,
    pub text: String,
}

/// True for the characters of base64, standard and url-safe together.
pub(crate) fn is_base64(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '-' | '_')
}

fn is_base32(c: char) -> bool {
    c.is_ascii_alphabetic() || ('2'..='7').contains(&c)
}

/// Calls `found` with every text decoded from a base64 or base32 run of `units`.
pub(crate) fn for_each_hidden(units: &[Unit], mut found: impl FnMut(Hidden)) {
    for (from, body, to) in runs(units, is_base64) {
        base64_run(units, from, body, to, &mut found);
    }
    for (from, body, to) in runs(units, is_base32) {
        let chars: Vec<u8> = units[from..body].iter().map(|u| u.ch as u8).collect();
        // Whole groups of eight decode whatever their bits; a short tail only when it is exact.
        let whole = chars.len() / 8 * 8;
        let Ok(mut bytes) = BASE32_NOPAD_NOCASE.decode(&chars[..whole]) else {
            continue;
        };
        if let Ok(tail) = BASE32_NOPAD_NOCASE.decode(&chars[whole..]) {
            bytes.extend(tail);
        }
        if let Some(text) = text_of(&bytes) {
            found(Hidden { from, to, text });
        }
    }
}

/// Maximal runs `(from, end of body, end with padding)` of `alphabet` with 16 or more characters.
fn runs(units: &[Unit], alphabet: fn(char) -> bool) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < units.len() {
        if !alphabet(units[i].ch) {
            i += 1;
            continue;
        }
        let from = i;
        while i < units.len() && alphabet(units[i].ch) {
            i += 1;
        }
        let body = i;
        while i < units.len() && units[i].ch == '=' {
            i += 1;
        }
        if body - from >= MIN_RUN {
            out.push((from, body, i));
        }
    }
    out
}

/// Decodes a base64 run from its start, and from after a `/`, `+`, `-` or `_` when that gives
/// another alignment: a run such as `files/QUJD...` begins with its context.
fn base64_run(units: &[Unit], from: usize, body: usize, to: usize, found: &mut impl FnMut(Hidden)) {
    let mut starts = [None; 4];
    starts[0] = Some(from);
    for (k, u) in units[from..body].iter().enumerate() {
        if !u.ch.is_ascii_alphanumeric() {
            starts[(k + 1) % 4].get_or_insert(from + k + 1);
        }
    }
    for start in starts
        .into_iter()
        .flatten()
        .filter(|&s| body - s >= MIN_RUN)
    {
        let mut chars: Vec<u8> = units[start..body]
            .iter()
            .map(|u| match u.ch {
                '-' => b'+',
                '_' => b'/',
                c => c as u8,
            })
            .collect();
        if chars.len() % 4 == 1 {
            chars.pop();
        }
        if let Some(text) = BASE64.decode(&chars).ok().and_then(|b| text_of(&b)) {
            found(Hidden {
                from: start,
                to,
                text,
            });
        }
    }
}

/// The bytes as text, unless more than a quarter of them is not UTF-8: such bytes are binary,
/// or the run was not base64 at all.
fn text_of(bytes: &[u8]) -> Option<String> {
    let bad: usize = bytes.utf8_chunks().map(|c| c.invalid().len()).sum();
    (!bytes.is_empty() && bad * 4 <= bytes.len())
        .then(|| String::from_utf8_lossy(bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::view::units_of;

    fn hidden(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_hidden(&units_of(text), |h| out.push(h.text));
        out
    }

    #[test]
    fn base64_standard_and_url_safe_with_or_without_padding() {
        let plain = "secret?>token~~";
        for engine in [
            base64::engine::general_purpose::STANDARD,
            base64::engine::general_purpose::STANDARD_NO_PAD,
            base64::engine::general_purpose::URL_SAFE,
            base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ] {
            let text = format!("x {} y", engine.encode(plain));
            assert!(hidden(&text).iter().any(|h| h == plain), "{text}");
        }
    }

    #[test]
    fn base64_after_a_path_is_realigned() {
        let text = format!(
            "com/files/{}/raw",
            base64::engine::general_purpose::STANDARD.encode("a8f3k2j9x7q1")
        );
        assert!(
            hidden(&text).iter().any(|h| h.starts_with("a8f3k2j9x7q1")),
            "{text}"
        );
    }

    #[test]
    fn base32_upper_and_lower_with_or_without_padding() {
        let plain = "a8f3k2j9x7q1z";
        let upper = data_encoding::BASE32.encode(plain.as_bytes());
        for text in [
            upper.clone(),
            upper.to_lowercase(),
            upper.trim_end_matches('=').to_owned(),
        ] {
            assert!(hidden(&text).iter().any(|h| h == plain), "{text}");
        }
    }

    #[test]
    fn binary_and_short_runs_are_ignored() {
        let binary =
            base64::engine::general_purpose::STANDARD.encode([0xFFu8, 0xFE, 0x80, 0x81].repeat(8));
        assert!(hidden(&binary).is_empty());
        assert!(hidden("QUJDREVGR0g=").is_empty());
    }
}
