//! The canonical view: decoded characters that remember the original bytes they came from.

use icu_normalizer::DecomposingNormalizerBorrowed;
use icu_properties::props::DefaultIgnorableCodePoint;
use icu_properties::{CodePointSetData, CodePointSetDataBorrowed};

/// How many layers of escapes are peeled off one another, base64 and base32 included.
pub(crate) const MAX_LAYERS: usize = 4;
/// How many escapes deep a variable-length escape looks to see whether it is complete.
const LOOK_AHEAD: u8 = 3;

const NFKD: DecomposingNormalizerBorrowed<'static> = DecomposingNormalizerBorrowed::new_nfkd();
const IGNORABLE: CodePointSetDataBorrowed<'static> =
    CodePointSetData::new::<DefaultIgnorableCodePoint>();

/// One character of a view and the original bytes `start..end` it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Unit {
    pub ch: char,
    pub start: u32,
    pub end: u32,
}

impl Unit {
    /// True for a character of the original text, not decoded: an escape is always longer
    /// than the character it stands for.
    pub(crate) fn is_raw(&self) -> bool {
        (self.end - self.start) as usize == self.ch.len_utf8()
    }
}

/// A decoded character's literal reading, for a secret that starts inside its escape.
///
/// In `sig=4F%78yz` the `=4F` may be quoted-printable or the context's `=` before `4F`.
#[derive(Clone, Debug)]
pub(crate) struct Alt {
    /// The unit in its view.
    pub at: u32,
    /// The skeleton of the characters that spelled the escape.
    pub literal: Literal,
    /// The original start of the first of those characters that counts in a skeleton.
    pub start: u32,
    /// For `=XX`, the two characters after the `=`, which a base64 run may begin with.
    pub pair: Option<[char; 2]>,
}

/// A short skeleton kept inline, as escapes are short; a longer one is not kept.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Literal {
    bytes: [u8; 15],
    len: u8,
}

impl Literal {
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Appends a character, or returns `None` when it does not fit.
    fn push(&mut self, c: char) -> Option<()> {
        let at = usize::from(self.len);
        let room = self.bytes.get_mut(at..at + c.len_utf8())?;
        c.encode_utf8(room);
        self.len += c.len_utf8() as u8;
        Some(())
    }
}

/// One view of a text: its characters, and the literal readings of those that were decoded.
#[derive(Default)]
pub(crate) struct View {
    pub units: Vec<Unit>,
    pub alts: Vec<Alt>,
}

/// The skeleton of a view as UTF-8 bytes, with the unit each byte came from.
pub(crate) struct Skeleton {
    pub bytes: Vec<u8>,
    pub owner: Vec<u32>,
}

/// Layer 0: the text itself, each character standing for its own bytes.
///
/// The caller keeps the text under 4 GiB, so offsets fit in `u32`.
pub(crate) fn units_of(text: &str) -> Vec<Unit> {
    text.char_indices()
        .map(|(i, ch)| Unit {
            ch,
            start: i as u32,
            end: (i + ch.len_utf8()) as u32,
        })
        .collect()
}

/// A text decoded from somewhere inside the original: every character stands for all of it.
pub(crate) fn units_spanning(text: &str, start: u32, end: u32) -> Vec<Unit> {
    text.chars().map(|ch| Unit { ch, start, end }).collect()
}

/// Calls `push` with the skeleton characters of `ch`: compatibility-decomposed, lowercased,
/// alphanumeric only, default-ignorable code points dropped.
///
/// Decomposition (NFKD) rather than composition also drops accents, which only widens a match.
pub(crate) fn fold(ch: char, mut push: impl FnMut(char)) {
    if ch.is_ascii() {
        if ch.is_ascii_alphanumeric() {
            push(ch.to_ascii_lowercase());
        }
        return;
    }
    if IGNORABLE.contains(ch) {
        return;
    }
    for d in NFKD.normalize_iter(std::iter::once(ch)) {
        // A filler such as U+3164 decomposes to another ignorable that counts as a letter.
        if IGNORABLE.contains(d) {
            continue;
        }
        d.to_lowercase()
            .filter(|l| l.is_alphanumeric())
            .for_each(&mut push);
    }
}

/// The skeleton of a view's units.
pub(crate) fn skeleton(units: &[Unit]) -> Skeleton {
    let mut sk = Skeleton {
        bytes: Vec::with_capacity(units.len()),
        owner: Vec::with_capacity(units.len()),
    };
    let mut buf = [0; 4];
    for (i, u) in units.iter().enumerate() {
        fold(u.ch, |c| {
            for &b in c.encode_utf8(&mut buf).as_bytes() {
                sk.bytes.push(b);
                sk.owner.push(i as u32);
            }
        });
    }
    sk
}

/// The skeletons of a secret: of its raw spelling and of each layer it decodes to.
pub(crate) fn skeletons_of(secret: &str) -> Vec<String> {
    let mut units = units_of(secret);
    let mut out: Vec<String> = Vec::new();
    for _ in 0..=MAX_LAYERS {
        let mut sk = String::new();
        units.iter().for_each(|u| fold(u.ch, |c| sk.push(c)));
        if !out.contains(&sk) {
            out.push(sk);
        }
        match decode_layer(&View {
            units,
            alts: Vec::new(),
        }) {
            Some(next) => units = next.units,
            None => break,
        }
    }
    out
}

/// What one escape stands for.
enum Decoded {
    /// One byte of a UTF-8 sequence, which may take several escapes to spell.
    Byte(u8),
    Char(char),
    /// A quoted-printable soft line break, which stands for nothing.
    Nothing,
}

/// Decodes one layer of escapes, or returns `None` when the view holds none.
///
/// Escapes are read greedily from left to right, all kinds at once; what they decode to is
/// read again only by the next layer.
pub(crate) fn decode_layer(below: &View) -> Option<View> {
    let units = &below.units;
    // Most views hold no escape at all, and are not copied for nothing.
    let mut i = (0..units.len())
        .find(|&i| is_escape(units[i].ch) && escape_at(units, i, LOOK_AHEAD).is_some())?;
    let mut view = View {
        units: Vec::with_capacity(units.len()),
        alts: Vec::new(),
    };
    view.units.extend_from_slice(&units[..i]);
    let mut carried = below.alts.iter().peekable();
    while let Some(alt) = carried.next_if(|a| (a.at as usize) < i) {
        view.alts.push(alt.clone());
    }
    let mut bytes: Vec<(u8, usize, usize)> = Vec::new();
    while i < units.len() {
        let escape = if is_escape(units[i].ch) {
            escape_at(units, i, LOOK_AHEAD)
        } else {
            None
        };
        let Some((decoded, next)) = escape else {
            if !bytes.is_empty() {
                view.flush(&mut bytes, units);
            }
            // A character kept as it is keeps its literal reading from the layer below.
            while carried.next_if(|a| (a.at as usize) < i).is_some() {}
            if let Some(alt) = carried.next_if(|a| a.at as usize == i) {
                view.alts.push(Alt {
                    at: view.units.len() as u32,
                    ..alt.clone()
                });
            }
            view.units.push(units[i]);
            i += 1;
            continue;
        };
        match decoded {
            Decoded::Byte(b) => bytes.push((b, i, next)),
            Decoded::Char(c) => {
                view.flush(&mut bytes, units);
                view.push_decoded(c, i, next, units);
            }
            Decoded::Nothing => {}
        }
        i = next;
    }
    view.flush(&mut bytes, units);
    Some(view)
}

impl View {
    /// Adds a character decoded from `below[from..to]`, with its literal reading.
    fn push_decoded(&mut self, ch: char, from: usize, to: usize, below: &[Unit]) {
        let spelled = &below[from..to];
        let mut literal = Some(Literal::default());
        let mut start = None;
        for u in spelled {
            fold(u.ch, |c| {
                start.get_or_insert(u.start);
                literal = literal.and_then(|mut l| l.push(c).map(|()| l));
            });
        }
        if let (Some(start), Some(literal)) = (start, literal) {
            let at = self.units.len() as u32;
            let pair = match spelled {
                [e, a, b, ..] if e.ch == '=' => Some([a.ch, b.ch]),
                _ => None,
            };
            self.alts.push(Alt {
                at,
                literal,
                start,
                pair,
            });
        }
        self.units.push(Unit {
            ch,
            start: below[from].start,
            end: below[to - 1].end,
        });
    }

    /// Turns pending escaped bytes into characters.
    fn flush(&mut self, bytes: &mut Vec<(u8, usize, usize)>, below: &[Unit]) {
        if bytes.is_empty() {
            return;
        }
        let raw: Vec<u8> = bytes.iter().map(|b| b.0).collect();
        let mut k = 0;
        for chunk in raw.utf8_chunks() {
            for ch in chunk.valid().chars() {
                let n = ch.len_utf8();
                self.push_decoded(ch, bytes[k].1, bytes[k + n - 1].2, below);
                k += n;
            }
            // Bytes that are not UTF-8 stay spelled as they were: the rest of their sequence
            // may still be encoded one layer deeper, as in `%ef\u0025bc`.
            for &(_, from, to) in &bytes[k..k + chunk.invalid().len()] {
                self.units.extend_from_slice(&below[from..to]);
            }
            k += chunk.invalid().len();
        }
        bytes.clear();
    }
}

/// True for the characters that start an escape.
fn is_escape(c: char) -> bool {
    matches!(c, '%' | '\\' | '&' | '=')
}

/// Reads `n` hex digits at `units[at..]`.
fn hex(units: &[Unit], at: usize, n: usize) -> Option<u32> {
    let digits = units.get(at..at + n)?;
    digits
        .iter()
        .try_fold(0, |v, u| Some(v * 16 + u.ch.to_digit(16)?))
}

/// The escape starting at `units[i]`, what it decodes to and where it ends.
///
/// An escape of no fixed length waits for the next layer when what follows may spell more
/// of it: `\10&#51;` is `\103` spelled in two layers. Reading what follows looks ahead in
/// turn, `look_ahead` escapes deep at most.
fn escape_at(units: &[Unit], i: usize, look_ahead: u8) -> Option<(Decoded, usize)> {
    let ch = |k: usize| units.get(k).map(|u| u.ch);
    match units.get(i)?.ch {
        '%' => Some((Decoded::Byte(hex(units, i + 1, 2)? as u8), i + 3)),
        '=' => match (ch(i + 1), ch(i + 2)) {
            (Some('\n'), _) => Some((Decoded::Nothing, i + 2)),
            (Some('\r'), Some('\n')) => Some((Decoded::Nothing, i + 3)),
            _ => Some((Decoded::Byte(hex(units, i + 1, 2)? as u8), i + 3)),
        },
        '\\' => backslash(units, i, look_ahead),
        '&' => reference(units, i, look_ahead),
        _ => None,
    }
}

/// True when what follows `units[at]` may still spell a character that `wanted` accepts: an
/// escape that spells it or an escape character, or an escape character not yet readable,
/// as in `=\\n` (a soft line break in JSON). Past a soft line break, a plain character
/// counts too, as the break will be gone.
fn spells(units: &[Unit], mut at: usize, look_ahead: u8, wanted: impl Fn(char) -> bool) -> bool {
    let mut broken = false;
    loop {
        match escape_at(units, at, look_ahead) {
            Some((Decoded::Byte(b), _)) => {
                return wanted(char::from(b)) || is_escape(char::from(b));
            }
            Some((Decoded::Char(c), _)) => return wanted(c) || is_escape(c),
            Some((Decoded::Nothing, next)) => (at, broken) = (next, true),
            None => {
                return units
                    .get(at)
                    .is_some_and(|u| is_escape(u.ch) || broken && wanted(u.ch));
            }
        }
    }
}

/// JSON, `\xNN` and octal escapes.
fn backslash(units: &[Unit], i: usize, look_ahead: u8) -> Option<(Decoded, usize)> {
    let simple = |c| Some((Decoded::Char(c), i + 2));
    match units.get(i + 1)?.ch {
        'u' => {
            let high = hex(units, i + 2, 4)?;
            if (0xD800..0xDC00).contains(&high) {
                let low = units
                    .get(i + 6..i + 8)
                    .filter(|p| p[0].ch == '\\' && p[1].ch == 'u')
                    .and_then(|_| hex(units, i + 8, 4))
                    .filter(|low| (0xDC00..0xE000).contains(low));
                if let Some(low) = low {
                    let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                    return Some((Decoded::Char(char::from_u32(c)?), i + 12));
                }
            }
            // A lone surrogate stays spelled: its other half may be encoded one layer deeper.
            Some((Decoded::Char(char::from_u32(high)?), i + 6))
        }
        'x' => Some((Decoded::Byte(hex(units, i + 2, 2)? as u8), i + 4)),
        '0'..='7' => {
            let digits = units[i + 1..]
                .iter()
                .take(3)
                .map_while(|u| u.ch.to_digit(8));
            let (n, v) = digits.fold((0, 0), |(n, v), d| (n + 1, v * 8 + d));
            if look_ahead > 0
                && n < 3
                && spells(units, i + 1 + n, look_ahead - 1, |c| c.is_digit(8))
            {
                return None;
            }
            let decoded = match u8::try_from(v) {
                Ok(b) => Decoded::Byte(b),
                Err(_) => Decoded::Char(char::from_u32(v)?),
            };
            Some((decoded, i + 1 + n))
        }
        // `\\` is one escaped backslash only in the original text. A decoded backslash, as
        // from `\x5c` or `%5c`, may be the start of the next escape, as in `\x5c%5cx75`; read
        // alone, the second backslash still starts its own escape.
        '\\' if !(units[i].is_raw() && units[i + 1].is_raw()) => None,
        c @ ('"' | '\\' | '/' | '\'') => simple(c),
        'b' => simple('\u{8}'),
        'f' => simple('\u{c}'),
        'n' => simple('\n'),
        'r' => simple('\r'),
        't' => simple('\t'),
        _ => None,
    }
}

/// HTML named characters worth decoding: those a hostile server may use to hide separators.
#[rustfmt::skip]
const NAMED: &[(&str, char)] = &[
    ("amp", '&'), ("lt", '<'), ("gt", '>'), ("quot", '"'), ("apos", '\''), ("sol", '/'),
    ("colon", ':'), ("quest", '?'), ("equals", '='), ("num", '#'), ("period", '.'),
    ("comma", ','), ("lowbar", '_'), ("hyphen", '\u{2010}'), ("plus", '+'), ("percnt", '%'),
    ("commat", '@'), ("excl", '!'), ("dollar", '$'), ("semi", ';'), ("lpar", '('),
    ("rpar", ')'), ("ast", '*'), ("bsol", '\\'), ("lsqb", '['), ("rsqb", ']'), ("lcub", '{'),
    ("rcub", '}'), ("verbar", '|'), ("Tab", '\t'), ("NewLine", '\n'), ("nbsp", '\u{A0}'),
];

/// HTML character references: `&#65;`, `&#x41;` (the `;` may be missing) and `&amp;`.
fn reference(units: &[Unit], i: usize, look_ahead: u8) -> Option<(Decoded, usize)> {
    let rest = units.get(i + 1..)?;
    if rest.first()?.ch == '#' {
        let hexa = matches!(rest.get(1).map(|u| u.ch), Some('x' | 'X'));
        let (skip, radix) = if hexa { (2, 16) } else { (1, 10) };
        let digits = rest[skip..].iter().map_while(|u| u.ch.to_digit(radix));
        let (n, v) = digits.fold((0, 0u32), |(n, v), d| {
            (n + 1, v.saturating_mul(radix).saturating_add(d))
        });
        if n == 0 {
            return None;
        }
        let c = char::from_u32(v).unwrap_or('\u{FFFD}');
        let mut next = i + 1 + skip + n;
        if units.get(next).is_some_and(|u| u.ch == ';') {
            next += 1;
        } else if look_ahead > 0
            && spells(units, next, look_ahead - 1, |c| {
                c == ';' || c.is_digit(radix)
            })
        {
            return None;
        }
        return Some((Decoded::Char(c), next));
    }
    let name: String = rest
        .iter()
        .take(8)
        .map(|u| u.ch)
        .take_while(char::is_ascii_alphabetic)
        .collect();
    let (_, c) = NAMED.iter().find(|(n, _)| *n == name)?;
    let end = i + 1 + name.len();
    units.get(end).filter(|u| u.ch == ';')?;
    Some((Decoded::Char(*c), end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The skeleton of each layer of `text`, as the search sees them.
    fn layers(text: &str) -> Vec<String> {
        skeletons_of(text)
    }

    fn last(text: &str) -> String {
        layers(text).pop().unwrap_or_default()
    }

    #[test]
    fn skeletons_of_the_brief() {
        for spelling in [
            "a8f3-k2j9 x7q1",
            "A8F3K2J9X7Q1",
            "a%38f3k2j9x7q1",
            "ａ８ｆ３ｋ２ｊ９ｘ７ｑ１",
            "a8f3\u{34F}k2j9x7q1",
            "a8f3%20k2j9x7q1",
        ] {
            assert_eq!(last(spelling), "a8f3k2j9x7q1", "{spelling}");
        }
    }

    #[test]
    fn percent_decodes_utf8_sequences() {
        assert_eq!(last("%41%42c"), "abc");
        assert_eq!(last("caf%C3%A9"), "cafe");
        assert_eq!(last("%F0%9D%90%80x"), "ax");
        assert_eq!(last("100%zz"), "100zz");
    }

    #[test]
    fn json_escapes() {
        assert_eq!(last(r#"\u0041b\/c\"d"#), "abcd");
        assert_eq!(last(r"\uD835\uDC00z"), "az");
        assert_eq!(last(r"x\uD835y"), "xud835y");
        assert_eq!(last(r"\u&#x44;835\uDC00"), "a");
        assert_eq!(last(r"a\nb\tc"), "abc");
    }

    #[test]
    fn hex_and_octal_escapes() {
        assert_eq!(last(r"\x41\x62"), "ab");
        assert_eq!(last(r"\101\1427"), "ab7");
        assert_eq!(last(r"\303\251t\xC3\xA9"), "ete");
        assert_eq!(last(r"\10&#51;\1%30%31\1=301"), "caa");
    }

    #[test]
    fn html_references() {
        assert_eq!(last("&#65;&#x42;&#67 d"), "abcd");
        assert_eq!(last("a&hyphen;b&period;c&NewLine;d&amp;"), "abcd");
        assert_eq!(last("&#119808;"), "a");
        assert_eq!(last(r"&#6\u0035;&#x4%31;&#6\\u0035;"), "aaa");
        assert_eq!(last("&unknown;x"), "unknownx");
        assert_eq!(last("&#99999999999;x"), "x");
    }

    #[test]
    fn quoted_printable() {
        assert_eq!(last("=41=42c"), "abc");
        assert_eq!(last("ab=\r\ncd=\nef"), "abcdef");
        assert_eq!(last("caf=C3=\n=A9"), "cafe");
        assert_eq!(last("\\10=\n1 \\10=\n=31"), "aa");
    }

    #[test]
    fn layers_nest() {
        assert_eq!(layers("%2541"), ["2541", "41", "a"]);
        assert_eq!(last(r"\\x41"), "a");
    }

    #[test]
    fn compatibility_ignorables_and_case() {
        assert_eq!(last("ﬁ①𝐀Ｚ"), "fi1az");
        assert_eq!(
            last("a\u{3164}b\u{E0001}c\u{FE0F}d\u{200B}e\u{17B4}f\u{180B}g"),
            "abcdefg"
        );
        assert_eq!(last("ÀÉÎ"), "aei");
    }

    #[test]
    fn literal_readings_follow_the_layers() {
        let top = View {
            units: units_of("q=4F%5Cx78"),
            alts: Vec::new(),
        };
        let one = decode_layer(&top).unwrap_or_default();
        let two = decode_layer(&one).unwrap_or_default();
        let alt = two
            .alts
            .first()
            .map(|a| (a.at, a.literal.as_bytes(), a.start));
        assert_eq!(alt, Some((1, &b"4f"[..], 2)));
    }

    #[test]
    fn odd_input_does_not_panic() {
        for text in [
            "%",
            "%4",
            "\\",
            "\\u12",
            "&#",
            "&#x;",
            "=",
            "=\r",
            "\\777",
            "&",
            "\\uDBFF\\u",
        ] {
            let _ = layers(text);
        }
    }
}
