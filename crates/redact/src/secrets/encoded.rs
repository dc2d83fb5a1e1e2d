//! Base64 and base32 runs of a view, decoded to the texts they may hide.

use base64::Engine;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use data_encoding::BASE32_NOPAD_NOCASE;

use crate::secrets::view::{Unit, View};

/// Runs shorter than this are left alone: 16 base64 characters hold 12 bytes.
pub(crate) const MIN_RUN: usize = 16;

/// Lenient about padding and stray bits, because a run may end in the context's characters.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// A text decoded from the original bytes `start..end`.
pub(crate) struct Hidden {
    pub start: u32,
    pub end: u32,
    pub text: String,
}

/// True for the characters of base64, standard and url-safe together.
pub(crate) fn is_base64(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '-' | '_')
}

/// [`is_base64`] of each byte, looked up.
static BASE64_BYTE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'-' | b'_');
        b += 1;
    }
    table
};

/// Whether `bytes` hold a run of at least [`MIN_RUN`] bytes that [`is_base64`] takes. Each
/// window of that length is read from its end: at the last byte that is no base64, every
/// window holding it is passed over at once, so prose is read a few bytes a window.
pub(crate) fn has_base64_run(bytes: &[u8]) -> bool {
    let mut start = 0;
    while let Some(window) = bytes.get(start..start + MIN_RUN) {
        match window.iter().rposition(|&b| !BASE64_BYTE[usize::from(b)]) {
            None => return true,
            Some(bad) => start += bad + 1,
        }
    }
    false
}

fn is_base32(c: char) -> bool {
    c.is_ascii_alphabetic() || ('2'..='7').contains(&c)
}

/// Calls `found` with every text decoded from a base64 or base32 run of a view; with `seen`,
/// not for runs of original characters, which the layer below held just the same. With `edge`,
/// the view begins where a text with no place to cut was cut anyway
/// ([`crate::decoded::windows`]): a run at its start may have begun before it, so it is read at
/// every alignment.
pub(crate) fn for_each_hidden(view: &View, seen: bool, edge: bool, mut found: impl FnMut(Hidden)) {
    // The run and its neighbours are original and side by side, so nothing changed there.
    let unchanged = |from: usize, to: usize| {
        let around = &view.units[from.saturating_sub(1)..(to + 1).min(view.units.len())];
        seen && around.iter().all(Unit::is_raw) && around.windows(2).all(|w| w[0].end == w[1].start)
    };
    for (from, body, to) in runs(&view.units, is_base64) {
        if unchanged(from, to) {
            continue;
        }
        let mut starts = [None; 4];
        starts[0] = Some(from);
        if edge && from == 0 {
            starts = [Some(0), Some(1), Some(2), Some(3)];
        }
        // A run such as `files/QUJD...` begins with its context: a `/`, `+`, `-` or `_`
        // may end it, and the first of them for each alignment gives another start.
        for (k, u) in view.units[from..body].iter().enumerate() {
            if !u.ch.is_ascii_alphanumeric() {
                starts[(k + 1) % 4].get_or_insert(from + k + 1);
            }
        }
        for start in starts
            .into_iter()
            .flatten()
            .filter(|&s| body - s >= MIN_RUN)
        {
            let chars = view.units[start..body].iter().map(|u| u.ch);
            decode(
                chars,
                view.units[start].start,
                view.units[to - 1].end,
                base64,
                &mut found,
            );
        }
        if let Some((chars, start)) = after_equals(view, from, body) {
            decode(chars, start, view.units[to - 1].end, base64, &mut found);
        }
        base32_runs(view, from, to, edge, &mut found);
    }
}

/// Base32 runs lie inside base64 runs, as its characters are base64 characters too. With
/// `edge`, a run at the view's start is read at each of base32's eight alignments.
fn base32_runs(view: &View, from: usize, to: usize, edge: bool, found: &mut impl FnMut(Hidden)) {
    for (f, body, t) in runs(&view.units[from..to], is_base32) {
        let (f, body, t) = (from + f, from + body, from + t);
        let alignments = if edge && f == 0 { 8 } else { 1 };
        for start in (f..body).take(alignments) {
            let chars = view.units[start..body].iter().map(|u| u.ch);
            decode(
                chars,
                view.units[start].start,
                view.units[t - 1].end,
                base32,
                found,
            );
        }
        if let Some((chars, start)) = after_equals(view, f, body) {
            decode(chars, start, view.units[t - 1].end, base32, found);
        }
    }
}

/// The run read from its first `=XX` on, taken literally: in `code=4FJD` the `=` is the
/// context's and `4F` starts the run, though the view decoded `=4F` as quoted-printable.
fn after_equals(
    view: &View,
    from: usize,
    body: usize,
) -> Option<(impl Iterator<Item = char>, u32)> {
    // The decoded character may be in the run, or just before it when it is not base64.
    let first = view
        .alts
        .partition_point(|a| (a.at as usize) < from.saturating_sub(1));
    let mut near = view.alts[first..]
        .iter()
        .take_while(|a| (a.at as usize) < body);
    let alt = near.find(|a| a.pair.is_some())?;
    let at = alt.at as usize;
    let rest = view.units[at + 1..body].iter().map(|u| u.ch);
    Some((alt.pair?.into_iter().chain(rest), alt.start))
}

/// Decodes one candidate run and reports it when it is text.
fn decode(
    chars: impl Iterator<Item = char>,
    start: u32,
    end: u32,
    decoder: fn(Vec<u8>) -> Option<Vec<u8>>,
    found: &mut impl FnMut(Hidden),
) {
    let chars: Vec<u8> = chars.filter(char::is_ascii).map(|c| c as u8).collect();
    if chars.len() < MIN_RUN {
        return;
    }
    if let Some(text) = decoder(chars).and_then(|b| text_of(&b)) {
        found(Hidden { start, end, text });
    }
}

fn base64(mut chars: Vec<u8>) -> Option<Vec<u8>> {
    for c in &mut chars {
        *c = match c {
            b'-' => b'+',
            b'_' => b'/',
            _ => *c,
        };
    }
    if chars.len() % 4 == 1 {
        chars.pop();
    }
    BASE64.decode(&chars).ok()
}

/// Whole groups of eight decode whatever their bits; a short tail only when it is exact.
fn base32(chars: Vec<u8>) -> Option<Vec<u8>> {
    let whole = chars.len() / 8 * 8;
    let mut bytes = BASE32_NOPAD_NOCASE.decode(&chars[..whole]).ok()?;
    if let Ok(tail) = BASE32_NOPAD_NOCASE.decode(&chars[whole..]) {
        bytes.extend(tail);
    }
    Some(bytes)
}

/// Maximal runs `(from, end of body, end with padding)` of `alphabet`, long enough to decode.
fn runs(units: &[Unit], alphabet: impl Fn(char) -> bool) -> Vec<(usize, usize, usize)> {
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
        // Two characters shorter may still do, when they follow an `=XX` read literally.
        if body - from + 2 >= MIN_RUN {
            out.push((from, body, i));
        }
    }
    out
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
    use crate::secrets::view::{decode_layer, units_of};
    use base64::engine::general_purpose::STANDARD;

    fn hidden(text: &str) -> Vec<String> {
        let top = View {
            units: units_of(text),
            alts: Vec::new(),
        };
        let view = decode_layer(&top).unwrap_or(top);
        let mut out = Vec::new();
        for_each_hidden(&view, false, false, |h| out.push(h.text));
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
    fn a_run_may_start_after_the_contexts_equals() {
        // `=04` reads as quoted-printable, and `%..` keeps the raw run from being whole.
        let b64 = STANDARD.encode("\u{4C0}a8f3k2j9x7q1");
        assert!(b64.starts_with("04"), "{b64}");
        let text = format!("code={}%{:02X}{}", &b64[..6], b64.as_bytes()[6], &b64[7..]);
        assert!(
            hidden(&text).iter().any(|h| h.contains("a8f3k2j9x7q1")),
            "{text}"
        );
    }

    #[test]
    fn binary_and_short_runs_are_ignored() {
        let binary =
            base64::engine::general_purpose::STANDARD.encode([0xFFu8, 0xFE, 0x80, 0x81].repeat(8));
        assert!(hidden(&binary).is_empty());
        assert!(hidden("QUJDREVGR0g=").is_empty());
    }
}

#[cfg(test)]
mod run_tests {
    use super::{MIN_RUN, has_base64_run, is_base64};

    /// The run counted byte by byte, as the skipping search must agree with.
    fn naive(bytes: &[u8]) -> bool {
        let mut run = 0;
        bytes.iter().any(|&b| {
            run = if is_base64(char::from(b)) { run + 1 } else { 0 };
            run >= MIN_RUN
        })
    }

    #[test]
    fn the_skipping_search_finds_what_a_byte_by_byte_count_finds() {
        let alphabet = b"ab+/ -_.=\n0Z\xc3\xa9";
        let mut state = 7u64;
        for len in 0..200 {
            for _ in 0..50 {
                let bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                        // Mostly base64, so runs of every length come up.
                        let pick = (state >> 33) as usize;
                        if pick.is_multiple_of(8) {
                            alphabet[pick % alphabet.len()]
                        } else {
                            b'a' + (pick % 26) as u8
                        }
                    })
                    .collect();
                assert_eq!(has_base64_run(&bytes), naive(&bytes), "{bytes:?}");
            }
        }
    }
}
