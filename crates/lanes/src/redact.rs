//! The normalised view redaction searches, the session's hidden set, and what makes a url
//! credential-shaped.
//!
//! A server's string is never searched as it came. Its view drops control and format
//! characters, folds ASCII to lower case, and decodes percent-encoding, JSON string escapes and
//! HTML character references, layer on layer (at most [`DECODE_LAYERS`]), keeping for every
//! byte of the view the bytes of the original it came from. A match in the view replaces exactly
//! those original bytes, so text outside a match is kept byte for byte.

use std::collections::{HashSet, VecDeque};
use std::hash::BuildHasher as _;
use std::sync::{Arc, OnceLock};

use crate::claims::{Added, Searcher, Tails};
use crate::registry::ServerName;

/// The sets and maps of uris and patterns: a result may hold tens of thousands, each hashed
/// several times, so they use foldhash (randomly seeded per process, as hashbrown's own default),
/// not the standard library's SipHash.
pub(crate) type FastSet<T> = HashSet<T, foldhash::fast::RandomState>;
/// See [`FastSet`].
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// How many decoding layers a view peels: enough for every composition of percent-encoding,
/// JSON escapes and HTML references, and one more.
pub const DECODE_LAYERS: usize = 4;

/// How many hidden uris a session remembers; past it the oldest is forgotten. A forgotten uri is
/// still hidden in any result that carries it, and still withheld wherever it is
/// credential-shaped (unless its server turned that off).
pub const HIDDEN_SET_CAPACITY: usize = 4096;

/// Hidden uris shorter than this are not searched for in free text: they cannot carry a
/// credential, and replacing every occurrence of, say, `a:b` would garble text.
pub const REDACT_MIN_CHARS: usize = 8;

/// Query and fragment parameter names that carry credentials, in lower case: a url with one of
/// them (with a value) is withheld wherever it appears, claimed or not.
pub const CREDENTIAL_PARAMETERS: &[&str] = &[
    "token",
    "access_token",
    "id_token",
    "refresh_token",
    "auth_token",
    "private_token",
    "code",
    "sig",
    "signature",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "x-goog-signature",
    "x-goog-credential",
    "se",
    "sp",
    "key",
    "api_key",
    "apikey",
    "secret",
    "client_secret",
    "password",
    "passwd",
    "auth",
    "session",
    "jwt",
];

/// One stretch of a view and the bytes of the layer below it came from: a linear stretch maps
/// byte to byte; any other stretch is one decoded character standing for `from_len` bytes.
#[derive(Debug, Clone, Copy)]
struct Seg {
    view: usize,
    from: usize,
    from_len: usize,
    linear: bool,
}

/// A string as redaction sees it, with the way back to the original's bytes.
#[derive(Debug)]
pub(crate) struct View {
    pub(crate) text: String,
    /// `layers[0]` maps the first view to the original; each later one maps a view to the one
    /// before it.
    layers: Vec<Vec<Seg>>,
}

impl View {
    pub(crate) fn of(original: &str) -> View {
        // Printable ASCII (most uris and texts) has nothing to drop: the first layer is the
        // text in lower case, one stretch mapping byte to byte.
        let (mut text, first) = if original.bytes().all(|b| (0x20..0x7F).contains(&b)) {
            let seg = Seg {
                view: 0,
                from: 0,
                from_len: 0,
                linear: true,
            };
            (original.to_ascii_lowercase(), vec![seg])
        } else {
            layer(original, false)
        };
        let mut layers = vec![first];
        for _ in 0..DECODE_LAYERS {
            if !text.bytes().any(|b| matches!(b, b'%' | b'\\' | b'&')) {
                break;
            }
            let (decoded, segs) = layer(&text, true);
            if decoded == text {
                break;
            }
            text = decoded;
            layers.push(segs);
        }
        View { text, layers }
    }

    /// The original's byte range a range of the view came from.
    pub(crate) fn origin(&self, start: usize, end: usize) -> (usize, usize) {
        let (mut start, mut end) = (start, end);
        for segs in self.layers.iter().rev() {
            let first = &segs[seg_at(segs, start)];
            let new_start = if first.linear {
                first.from + (start - first.view)
            } else {
                first.from
            };
            let last = &segs[seg_at(segs, end - 1)];
            let new_end = if last.linear {
                last.from + (end - 1 - last.view) + 1
            } else {
                last.from + last.from_len
            };
            start = new_start;
            end = new_end.max(new_start);
        }
        (start, end)
    }
}

fn seg_at(segs: &[Seg], at: usize) -> usize {
    segs.partition_point(|s| s.view <= at).saturating_sub(1)
}

/// One layer of a view: without `decode`, control and format characters dropped and ASCII
/// folded; with it, one layer of escapes decoded (and what they decode to dropped or folded).
fn layer(source: &str, decode: bool) -> (String, Vec<Seg>) {
    let mut out = String::with_capacity(source.len());
    let mut segs: Vec<Seg> = Vec::new();
    let mut i = 0;
    while i < source.len() {
        let decoded = if decode { decode_at(source, i) } else { None };
        if let Some((c, len)) = decoded {
            if !is_control_or_format(c) {
                segs.push(Seg {
                    view: out.len(),
                    from: i,
                    from_len: len,
                    linear: false,
                });
                out.push(c.to_ascii_lowercase());
            }
            i += len;
            continue;
        }
        let Some(c) = source[i..].chars().next() else {
            break;
        };
        if !is_control_or_format(c) {
            let contiguous = segs
                .last()
                .is_some_and(|s| s.linear && s.from + (out.len() - s.view) == i);
            if !contiguous {
                segs.push(Seg {
                    view: out.len(),
                    from: i,
                    from_len: 0,
                    linear: true,
                });
            }
            out.push(c.to_ascii_lowercase());
        }
        i += c.len_utf8();
    }
    if segs.is_empty() {
        segs.push(Seg {
            view: 0,
            from: 0,
            from_len: 0,
            linear: true,
        });
    }
    (out, segs)
}

/// Control characters (C0, DEL, C1) and the format characters that hide or reorder text.
pub(crate) fn is_control_or_format(c: char) -> bool {
    matches!(c,
        '\u{0000}'..='\u{001F}'
        | '\u{007F}'..='\u{009F}'
        | '\u{00AD}'
        | '\u{061C}'
        | '\u{180E}'
        | '\u{200B}'..='\u{200F}'
        | '\u{2028}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206F}'
        | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}'
        | '\u{E0001}'
        | '\u{E0020}'..='\u{E007F}')
}

/// The character an escape at `at` stands for, and the escape's length in bytes.
fn decode_at(s: &str, at: usize) -> Option<(char, usize)> {
    let b = s.as_bytes();
    match b[at] {
        b'%' => percent_at(b, at),
        b'\\' => json_escape_at(b, at),
        b'&' => html_reference_at(s, at),
        _ => None,
    }
}

fn hex(b: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(b).ok()?;
    if text.is_empty() || !text.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(text, 16).ok()
}

fn percent_byte(b: &[u8], at: usize) -> Option<u8> {
    if b.get(at) != Some(&b'%') {
        return None;
    }
    let value = hex(b.get(at + 1..at + 3)?)?;
    u8::try_from(value).ok()
}

/// `%XX`, or a UTF-8 sequence of them.
fn percent_at(b: &[u8], at: usize) -> Option<(char, usize)> {
    let first = percent_byte(b, at)?;
    let len = match first {
        0x00..=0x7F => return Some((char::from(first), 3)),
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => return None,
    };
    let mut bytes = vec![first];
    for k in 1..len {
        bytes.push(percent_byte(b, at + 3 * k)?);
    }
    let c = std::str::from_utf8(&bytes).ok()?.chars().next()?;
    Some((c, 3 * len))
}

/// `\/`, `\\`, `\"`, `\'`, `\n`-style escapes, `\xXX`, and `\uXXXX` (surrogate pairs joined).
fn json_escape_at(b: &[u8], at: usize) -> Option<(char, usize)> {
    let simple = match *b.get(at + 1)? {
        c @ (b'/' | b'\\' | b'"' | b'\'') => Some(char::from(c)),
        b'n' => Some('\n'),
        b't' => Some('\t'),
        b'r' => Some('\r'),
        b'b' => Some('\u{8}'),
        b'f' => Some('\u{c}'),
        _ => None,
    };
    if let Some(c) = simple {
        return Some((c, 2));
    }
    match *b.get(at + 1)? {
        b'x' => Some((char::from_u32(hex(b.get(at + 2..at + 4)?)?)?, 4)),
        b'u' => {
            let unit = hex(b.get(at + 2..at + 6)?)?;
            if (0xD800..0xDC00).contains(&unit) && b.get(at + 6..at + 8) == Some(b"\\u") {
                let low = hex(b.get(at + 8..at + 12)?)?;
                if (0xDC00..0xE000).contains(&low) {
                    let c = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    return Some((char::from_u32(c)?, 12));
                }
            }
            Some((char::from_u32(unit)?, 6))
        }
        _ => None,
    }
}

/// HTML's named references that can spell a uri, and numeric references (`&#38;`, `&#x26;`,
/// the `;` optional as browsers read them).
fn html_reference_at(s: &str, at: usize) -> Option<(char, usize)> {
    let rest = s.get(at + 1..)?;
    if let Some(numeric) = rest.strip_prefix('#') {
        let (digits, radix) = match numeric.strip_prefix(['x', 'X']) {
            Some(h) => (h, 16),
            None => (numeric, 10),
        };
        let count = digits
            .bytes()
            .take_while(|c| {
                if radix == 16 {
                    c.is_ascii_hexdigit()
                } else {
                    c.is_ascii_digit()
                }
            })
            .count();
        if count == 0 || count > 7 {
            return None;
        }
        let value = u32::from_str_radix(&digits[..count], radix).ok()?;
        let prefix = 2 + usize::from(radix == 16);
        let semicolon = usize::from(digits[count..].starts_with(';'));
        return Some((char::from_u32(value)?, prefix + count + semicolon));
    }
    let name_len = rest
        .bytes()
        .take(12)
        .take_while(u8::is_ascii_alphanumeric)
        .count();
    if !rest[name_len..].starts_with(';') {
        return None;
    }
    let c = match &rest[..name_len] {
        "amp" | "AMP" => '&',
        "lt" | "LT" => '<',
        "gt" | "GT" => '>',
        "quot" | "QUOT" => '"',
        "apos" => '\'',
        "sol" => '/',
        "bsol" => '\\',
        "colon" => ':',
        "quest" => '?',
        "equals" => '=',
        "num" => '#',
        "percnt" => '%',
        "period" => '.',
        "commat" => '@',
        "lowbar" | "UnderBar" => '_',
        "hyphen" | "dash" => '-',
        "plus" => '+',
        "semi" => ';',
        "comma" => ',',
        "excl" => '!',
        "dollar" => '$',
        "tilde" => '~',
        "nbsp" => '\u{a0}',
        _ => return None,
    };
    Some((c, 1 + name_len + 1))
}

/// A string as redaction reads it: control and format characters dropped, ASCII in lower case,
/// percent-encoding, JSON escapes and HTML references decoded (layer on layer).
pub fn normalised(text: &str) -> String {
    View::of(text).text
}

/// A uri as redaction compares it: its view, without a default port or trailing slashes.
pub(crate) fn canonical(uri: &str) -> String {
    let mut key = String::new();
    canonical_into(uri, &mut key);
    key
}

/// [`canonical`], written into `key` (cleared first), so that a result's tens of thousands of
/// uris reuse one buffer. A uri of printable ASCII with nothing to decode, as most are, is its
/// view in lower case, made without a [`View`].
pub(crate) fn canonical_into(uri: &str, key: &mut String) {
    key.clear();
    if is_plain(uri) {
        key.push_str(uri);
        key.make_ascii_lowercase();
    } else {
        key.push_str(&View::of(uri).text);
    }
    if let Some((scheme, start, end)) = authority(key)
        && let Some(port) = default_port(scheme)
        && key[start..end].ends_with(port)
    {
        key.replace_range(end - port.len()..end, "");
    }
    while key.ends_with('/') {
        key.pop();
    }
}

/// Whether a string's view is the string in lower case, byte for byte (it is printable ASCII
/// with no `%`, `\\` or `&`, which start escapes), and if so whether it has an upper-case letter.
pub(crate) fn plain_case(text: &str) -> Option<bool> {
    let mut upper = false;
    // Whole chunks without an early exit inside, and comparisons rather than a table, which the
    // compiler vectorises.
    for chunk in text.as_bytes().chunks(64) {
        let (mut not_plain, mut has_upper) = (false, false);
        for &b in chunk {
            // Outside 0x20..0x7F, or a byte that starts an escape.
            not_plain |= (b.wrapping_sub(0x20) >= 0x5F) | (b == b'%') | (b == b'\\') | (b == b'&');
            has_upper |= b.wrapping_sub(b'A') < 26;
        }
        if not_plain {
            return None;
        }
        upper |= has_upper;
    }
    Some(upper)
}

/// Whether a string's view is the string in lower case, byte for byte.
pub(crate) fn is_plain(text: &str) -> bool {
    plain_case(text).is_some()
}

/// Where a url's authority is in a view: after `scheme://`, up to the first `/`, `?` or `#`.
fn authority(view: &str) -> Option<(&str, usize, usize)> {
    let bytes = view.as_bytes();
    let scheme_end = memchr::memchr_iter(b':', bytes).find(|&i| bytes[i..].starts_with(b"://"))?;
    let start = scheme_end + 3;
    let end = memchr::memchr3(b'/', b'?', b'#', &bytes[start..]).map_or(view.len(), |i| start + i);
    Some((&view[..scheme_end], start, end))
}

fn default_port(scheme: &str) -> Option<&'static str> {
    match scheme {
        "http" | "ws" => Some(":80"),
        "https" | "wss" => Some(":443"),
        _ => None,
    }
}

/// Each string searched for a hidden uri, given its canonical form: the form itself, the same
/// with its default port, and its parts ([`parts_of`]), those long enough to search for
/// ([`is_searchable`]). A string may come more than once.
fn patterns_of(key: &str, scratch: &mut String, mut each: impl FnMut(&str)) {
    let mut emit = |pattern: &str| {
        if is_searchable(pattern) {
            each(pattern);
        }
    };
    emit(key);
    if let Some((scheme, _, end)) = authority(key)
        && let Some(port) = default_port(scheme)
    {
        // A form with an authority holds `://`, and so does the same with its port.
        scratch.clear();
        scratch.push_str(&key[..end]);
        scratch.push_str(port);
        scratch.push_str(&key[end..]);
        emit(scratch);
    }
    parts_of(key, emit);
}

/// A canonical form's query, its fragment and each credential parameter's value in them, long
/// enough or not.
fn parts_of(key: &str, mut emit: impl FnMut(&str)) {
    let bytes = key.as_bytes();
    if memchr::memchr2(b'?', b'#', bytes).is_none() {
        return;
    }
    // `?` and `#` are ASCII: the text either side of one is whole characters.
    let (before_fragment, fragment) = match memchr::memchr(b'#', bytes) {
        Some(at) => (&key[..at], Some(&key[at + 1..])),
        None => (key, None),
    };
    let query =
        memchr::memchr(b'?', before_fragment.as_bytes()).map(|at| &before_fragment[at + 1..]);
    for part in [query, fragment].into_iter().flatten() {
        emit(part);
        for (name, value) in parameters(part) {
            if CREDENTIAL_PARAMETERS.contains(&name) {
                emit(value);
            }
        }
    }
}

fn parameters(part: &str) -> impl Iterator<Item = (&str, &str)> {
    part.split(['&', ';'])
        .filter_map(|pair| pair.split_once('='))
        .filter(|(_, value)| !value.is_empty())
}

/// Whether a string is long enough to be searched for in free text: at least
/// [`REDACT_MIN_CHARS`] code points.
pub(crate) fn is_searchable(s: &str) -> bool {
    s.len() >= 4 * REDACT_MIN_CHARS
        || (s.len() >= REDACT_MIN_CHARS && (s.is_ascii() || s.chars().count() >= REDACT_MIN_CHARS))
}

/// Whether a url (in a view: lower case, decoded) carries a credential a host can see: userinfo,
/// a credential parameter in its query or fragment ([`CREDENTIAL_PARAMETERS`]), or a JWT.
pub(crate) fn is_credential_shaped(view: &str) -> bool {
    if let Some((_, start, end)) = authority(view)
        && view[start..end].contains('@')
    {
        return true;
    }
    let (before_fragment, fragment) = match view.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (view, None),
    };
    let query = before_fragment.split_once('?').map(|(_, q)| q);
    let named = [query, fragment]
        .into_iter()
        .flatten()
        .flat_map(parameters)
        .any(|(name, _)| CREDENTIAL_PARAMETERS.contains(&name));
    named || has_jwt(view)
}

/// Whether a view holds a JWT: `eyJ`, then base64url, a dot, base64url, a dot.
fn has_jwt(view: &str) -> bool {
    let is_b64 = |c: u8| c.is_ascii_alphanumeric() || c == b'-' || c == b'_';
    view.match_indices("eyj").any(|(at, _)| {
        let b = &view.as_bytes()[at..];
        let first = b.iter().take_while(|&&c| is_b64(c)).count();
        if first < 10 || b.get(first) != Some(&b'.') {
            return false;
        }
        let second = b[first + 1..].iter().take_while(|&&c| is_b64(c)).count();
        second >= 10 && b.get(first + 1 + second) == Some(&b'.')
    })
}

/// Whether a path segment (in a view) looks like a secret: a run of at least 12 letters and
/// digits, two of each at least, between `-`, `_`, `.` or `~`, or a UUID.
fn is_random_looking(segment: &str) -> bool {
    let uuid = segment.len() == 36
        && segment.bytes().enumerate().all(|(i, c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                c == b'-'
            } else {
                c.is_ascii_hexdigit()
            }
        });
    uuid || segment.split(['-', '_', '.', '~']).any(|piece| {
        piece.len() >= 12
            && piece.bytes().all(|c| c.is_ascii_alphanumeric())
            && piece.bytes().filter(u8::is_ascii_digit).count() >= 2
            && piece.bytes().filter(u8::is_ascii_alphabetic).count() >= 2
    })
}

/// Whether a uri carries no credential a host can see: it has a scheme, is not `data:`, has no
/// white space or control character, and, read through every spelling, no `?`, `#` or `@`
/// (encoded or not), no random-looking path segment, and nothing credential-shaped.
pub fn is_credential_free(uri: &str) -> bool {
    let Some((scheme, _)) = uri.split_once(':') else {
        return false;
    };
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok
        || scheme.eq_ignore_ascii_case("data")
        || uri
            .chars()
            .any(|c| c.is_whitespace() || is_control_or_format(c))
    {
        return false;
    }
    let view = View::of(uri).text;
    !view.contains(['?', '#', '@'])
        && !view.split('/').any(is_random_looking)
        && !is_credential_shaped(&view)
}

/// The most `://` one stretch without a terminator may hold before the whole stretch is withheld
/// as one: each is judged with the rest of the stretch, so more would cost quadratic time, and
/// no ordinary text strings that many urls together.
pub const MAX_URLS_PER_STRETCH: usize = 32;

/// The longest scheme read back from a `://`.
const MAX_SCHEME_CHARS: usize = 32;

/// Every url in a view: from each `scheme://`, overlapping ones included, up to white space, a
/// quote, `<`, `>`, a backtick, `{`, `}`, `|`, `\` or `^`, less trailing punctuation; byte
/// ranges, each with whether it is past [`MAX_URLS_PER_STRETCH`] (then it runs to the stretch's
/// end and is withheld whatever its shape). Every `://` is read, even inside another url, so that
/// whatever a later search finds of a url found here, this reading found too (a stored copy made
/// twice reads the same).
pub(crate) fn urls_in(view: &str) -> Vec<(usize, usize, bool)> {
    let b = view.as_bytes();
    let mut found = Vec::new();
    // The end of the stretch the last `://` was in, and how many it held so far.
    let (mut stretch_end, mut in_stretch) = (0, 0);
    let schemes = memchr::memchr_iter(b':', b).filter(|&i| b[i..].starts_with(b"://"));
    for i in schemes {
        if i >= stretch_end {
            stretch_end = i + 3;
            while stretch_end < b.len() && !is_url_terminator(b[stretch_end]) {
                stretch_end += 1;
            }
            in_stretch = 0;
        }
        in_stretch += 1;
        let mut start = i;
        while start > 0
            && i - start < MAX_SCHEME_CHARS
            && (b[start - 1].is_ascii_alphanumeric() || matches!(b[start - 1], b'+' | b'-' | b'.'))
        {
            start -= 1;
        }
        while start < i && !b[start].is_ascii_alphabetic() {
            start += 1;
        }
        if start == i {
            continue;
        }
        if in_stretch > MAX_URLS_PER_STRETCH {
            // Withheld whole: from this url to the stretch's end.
            found.push((start, stretch_end, true));
            continue;
        }
        let mut end = stretch_end;
        while end > i + 3 && matches!(b[end - 1], b'.' | b',' | b';' | b':' | b'!' | b'?') {
            end -= 1;
        }
        if view.is_char_boundary(end) {
            found.push((start, end, false));
        }
    }
    found
}

/// Whether the view of `text` holds no `://`, so that [`urls_in`] finds nothing in it, told
/// without making the view: `text` has nothing to decode (no `%`, `\\` or `&`), and no `:` in it
/// is followed by `//` once the characters the view drops are left out.
pub(crate) fn view_holds_no_url(text: &str) -> bool {
    holds_no_scheme_separator(text, true)
}

/// Whether no run of pieces that each answer so holds `://` in its view, whatever the pieces
/// beside it: as [`view_holds_no_url`], and each `:` is followed within the piece by a character
/// the view keeps that is not `/`, or by `/` and then one. A `:` with less after it could begin
/// a `://` that the next piece finishes.
pub(crate) fn piece_holds_no_url(piece: &str) -> bool {
    holds_no_scheme_separator(piece, false)
}

/// [`view_holds_no_url`] when the text is `whole`, else [`piece_holds_no_url`].
fn holds_no_scheme_separator(text: &str, whole: bool) -> bool {
    let bytes = text.as_bytes();
    if memchr::memchr3(b'%', b'\\', b'&', bytes).is_some() {
        return false;
    }
    memchr::memchr_iter(b':', bytes).all(|at| {
        // A colon is ASCII, so the text after it starts on a character boundary.
        let mut next = text
            .get(at + 1..)
            .unwrap_or_default()
            .chars()
            .filter(|&c| !is_control_or_format(c));
        match (next.next(), next.next()) {
            (Some('/'), Some('/')) => false,
            (None, _) | (Some('/'), None) => whole,
            _ => true,
        }
    })
}

/// Whether a byte of a view ends a url: white space, a quote, `<`, `>`, a backtick, `{`, `}`,
/// `|`, `\\` or `^`. No url [`urls_in`] finds holds one, or reaches back past one.
pub(crate) fn is_url_terminator(c: u8) -> bool {
    c.is_ascii_whitespace()
        || matches!(
            c,
            b'"' | b'\'' | b'<' | b'>' | b'`' | b'{' | b'}' | b'|' | b'\\' | b'^'
        )
}

/// How many characters that start no escape (`%`, `\\`, `&`; dropped characters not counted,
/// as the view does not hold them) must come before a place where a text is cut so that its
/// two sides' views, side by side, are the whole text's view. An escape reaches at most 14
/// characters past where it starts, and only an escape or what one decodes to starts one in a
/// later layer, so escapes before such a run reach at most [`DECODE_LAYERS`] times 14 (56)
/// characters into it, and look at most 14 further: 72 keeps every escape on one side.
pub(crate) const SAFE_RUN: usize = 72;

/// The first place at or after `from` (a character boundary) where `text` can be cut so that
/// the views of the two sides, side by side, are the view of the whole, each character of
/// them coming from the same bytes (see [`SAFE_RUN`]); `None` when there is none.
pub(crate) fn safe_cut(text: &str, from: usize) -> Option<usize> {
    let mut run = 0;
    for (at, c) in text.get(from..)?.char_indices() {
        if matches!(c, '%' | '\\' | '&') {
            run = 0;
        } else if !is_control_or_format(c) {
            run += 1;
            if run >= SAFE_RUN {
                return Some(from + at + c.len_utf8());
            }
        }
    }
    None
}

/// The uris a session has hidden, at most [`HIDDEN_SET_CAPACITY`], oldest forgotten first, and
/// the servers whose unclaimed credential-shaped urls are not withheld. The host's
/// [`Registry`](crate::Registry) holds one for the life of the host, so every lane of every
/// server uses the same.
#[derive(Debug, Default)]
pub struct HiddenSet {
    order: VecDeque<String>,
    /// Each uri held, by canonical form, and whether it is searched for by its parts too (a uri
    /// a result carries) or by itself alone (a credential-shaped url found in text).
    entries: FastMap<String, bool>,
    unscanned: HashSet<ServerName>,
    compiled: Option<Arc<Compiled>>,
}

/// Distinct strings kept in one buffer and found again by their hash: a set of tens of
/// thousands of patterns costs a few allocations, not one (or three) per string.
#[derive(Debug, Default)]
pub(crate) struct Strings {
    text: String,
    /// Where each string ends in `text`; each starts where the one before it ends.
    ends: Vec<usize>,
    /// Each string's index, by the string's hash: four bytes a string, the hash computed again
    /// from the string when the table grows (sets are sized up front, so it seldom does).
    table: hashbrown::HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

impl Strings {
    /// An empty set with room for `capacity` strings.
    pub(crate) fn with_capacity(capacity: usize) -> Strings {
        Strings {
            ends: Vec::with_capacity(capacity),
            table: hashbrown::HashTable::with_capacity(capacity),
            ..Strings::default()
        }
    }

    /// An empty set with room for `capacity` strings of `text` bytes in all, and no table: its
    /// strings are added with [`Strings::push_unindexed`] by a caller that tells a new string from
    /// a held one itself.
    pub(crate) fn unindexed(capacity: usize, text: usize) -> Strings {
        Strings {
            text: String::with_capacity(text),
            ends: Vec::with_capacity(capacity),
            ..Strings::default()
        }
    }

    /// Room for `more` strings besides those held.
    pub(crate) fn reserve(&mut self, more: usize) {
        self.ends.reserve(more);
        self.table.reserve(more, |&i| {
            Strings::hash_at(&self.hasher, &self.text, &self.ends, i)
        });
    }

    /// The hash the table holds the string at `index` by, from the set's parts (so that a
    /// closure can read them while the table is borrowed).
    fn hash_at(
        hasher: &foldhash::fast::RandomState,
        text: &str,
        ends: &[usize],
        index: u32,
    ) -> u64 {
        hasher.hash_one(Strings::at(text, ends, index))
    }

    fn at<'s>(text: &'s str, ends: &[usize], index: u32) -> &'s str {
        let index = index as usize;
        let start = if index == 0 { 0 } else { ends[index - 1] };
        &text[start..ends[index]]
    }

    /// The bytes of the string at `index`, of those inserted, read without slicing the buffer
    /// as text (no character boundary to check: every string is whole).
    pub(crate) fn bytes(&self, index: u32) -> &[u8] {
        let index = index as usize;
        let start = if index == 0 { 0 } else { self.ends[index - 1] };
        &self.text.as_bytes()[start..self.ends[index]]
    }

    /// How many strings the set holds.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The strings, in the order they were first inserted.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &str> {
        (0..self.ends.len()).map(|i| Strings::at(&self.text, &self.ends, i as u32))
    }

    /// Whether the set holds `s`.
    pub(crate) fn contains(&self, s: &str) -> bool {
        let hash = self.hasher.hash_one(s);
        self.table
            .find(hash, |&i| Strings::at(&self.text, &self.ends, i) == s)
            .is_some()
    }

    /// Drops the table that finds a string again, once nothing will insert into the set or ask
    /// whether it holds a string ([`Strings::contains`] then answers `false`): the strings stay,
    /// by index.
    pub(crate) fn forget_table(&mut self) {
        self.table = hashbrown::HashTable::new();
    }

    /// Gives back what the buffers reserved beyond what they hold.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.table
            .shrink_to_fit(|&i| Strings::hash_at(&self.hasher, &self.text, &self.ends, i));
    }

    /// Appends `s` without looking for it in the set, which must not hold it (the table, if the
    /// set has one, is not told): its index, or `None` past `u32::MAX` strings (more than any
    /// input limit lets in), when nothing is added.
    pub(crate) fn push_unindexed(&mut self, s: &str) -> Option<u32> {
        let next = u32::try_from(self.ends.len()).ok()?;
        self.text.push_str(s);
        self.ends.push(self.text.len());
        Some(next)
    }

    /// Makes the table that finds each string again, for a set whose strings were appended with
    /// [`Strings::push_unindexed`] (so are distinct).
    pub(crate) fn index_all(&mut self) {
        self.table = hashbrown::HashTable::with_capacity(self.ends.len());
        for index in 0..self.ends.len() {
            // Fewer than `u32::MAX` strings are ever held.
            let index = index as u32;
            let hash = Strings::hash_at(&self.hasher, &self.text, &self.ends, index);
            self.table.insert_unique(hash, index, |&i| {
                Strings::hash_at(&self.hasher, &self.text, &self.ends, i)
            });
        }
    }

    /// Adds `s`; whether it was new.
    pub(crate) fn insert(&mut self, s: &str) -> bool {
        let hash = self.hasher.hash_one(s);
        // Past `u32::MAX` strings (more than any input limit lets in) nothing more is added.
        let Ok(next) = u32::try_from(self.ends.len()) else {
            return false;
        };
        let entry = self.table.entry(
            hash,
            |&i| Strings::at(&self.text, &self.ends, i) == s,
            |&i| Strings::hash_at(&self.hasher, &self.text, &self.ends, i),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(vacant) => {
                vacant.insert(next);
                self.text.push_str(s);
                self.ends.push(self.text.len());
                true
            }
        }
    }
}

/// A set of hidden uris, ready to search for: their canonical forms, and what a text must
/// hold for one of their patterns to be in it. The patterns themselves, and the search made of
/// them, are built the first time a text may hold one (decision 0100): a result whose texts
/// hold none of the bytes the patterns need never builds them.
#[derive(Debug, Default)]
pub(crate) struct Compiled {
    /// The uris' canonical forms.
    pub(crate) keys: Strings,
    /// Which of `keys` are searched for alone, without their parts (credential-shaped urls
    /// found in text), in order.
    alone: Vec<u32>,
    /// Whether any string is searched for.
    searched: bool,
    /// Which of [`ANCHOR_BYTES`] every pattern without `://` holds one of; `None` when some
    /// pattern holds neither (decision 0099).
    pub(crate) anchors: Option<Anchors>,
    search: OnceLock<Search>,
}

/// The strings searched for, and the search made of them.
#[derive(Debug, Default)]
pub(crate) struct Search {
    /// Every string searched for.
    pub(crate) patterns: Strings,
    pub(crate) searcher: Option<Searcher>,
}

/// Bytes one of which a hidden uri's pattern without `://` usually holds: a query's `=`, a
/// path's `/`, a name's `.`, ... In that order, so a set of uris with queries needs only the
/// first.
const ANCHOR_BYTES: [u8; 6] = [b'=', b'/', b'.', b'?', b'#', b'@'];

impl Compiled {
    /// The uris carried by a result, each searched for with its parts, with room for `more`
    /// uris besides.
    fn of_keys(mut keys: Strings, more: usize) -> Compiled {
        keys.reserve(more);
        Compiled {
            keys,
            ..Compiled::default()
        }
    }

    /// Adds a uri by its canonical form: with its parts, or alone.
    fn add(&mut self, key: &str, with_parts: bool) {
        let index = self.keys.len();
        if self.keys.insert(key) && !with_parts {
            // `Strings` holds fewer than `u32::MAX` strings.
            self.alone.push(index as u32);
        }
    }

    /// Each key with whether it is searched for with its parts.
    fn each_key(&self) -> impl Iterator<Item = (&str, bool)> {
        let mut alone = self.alone.iter().copied().peekable();
        self.keys.iter().enumerate().map(move |(index, key)| {
            let with_parts = alone.next_if_eq(&(index as u32)).is_none();
            (key, with_parts)
        })
    }

    /// The set as added, its anchors read from every pattern its keys make (no pattern kept).
    /// A form's default-port spelling is read only until some pattern is long enough to search
    /// for: it holds `://` whenever there is one ([`patterns_of`]), so it needs no anchor.
    fn finish(mut self) -> Compiled {
        self.keys.shrink_to_fit();
        let mut anchors = AnchorsOf::default();
        let mut scratch = String::new();
        for (key, with_parts) in self.each_key() {
            match with_parts && !anchors.searched {
                true => patterns_of(key, &mut scratch, |pattern| anchors.note(pattern)),
                false => {
                    anchors.note(key);
                    if with_parts {
                        parts_of(key, |part| anchors.note(part));
                    }
                }
            }
        }
        self.searched = anchors.searched;
        self.anchors = anchors.mask.map(Anchors::of_mask);
        self
    }

    /// Whether any string is searched for.
    pub(crate) fn is_searched(&self) -> bool {
        self.searched
    }

    /// Whether the patterns and their search have been built.
    #[cfg(test)]
    pub(crate) fn is_built(&self) -> bool {
        self.search.get().is_some()
    }

    /// The search and the patterns it finds, built on the first call; `None` when no string is
    /// searched for.
    pub(crate) fn searcher(&self) -> Option<(&Searcher, &Strings)> {
        if !self.searched {
            return None;
        }
        let search = self.search();
        search
            .searcher
            .as_ref()
            .map(|searcher| (searcher, &search.patterns))
    }

    /// The patterns and their search, built on the first call.
    pub(crate) fn search(&self) -> &Search {
        self.search.get_or_init(|| {
            let key_bytes = self.keys.text.len();
            let mut gathering = Gathering::by_tails(self.keys.len(), key_bytes);
            let mut scratch = String::new();
            for (key, with_parts) in self.each_key() {
                each_pattern(key, with_parts, &mut scratch, |pattern| {
                    gathering.add(pattern);
                });
            }
            gathering.finish()
        })
    }

    /// Whether no pattern can be in the view of a text whose view holds no `://`
    /// ([`view_holds_no_url`], which the caller checks: no `://`, even with control or format
    /// characters between, and no escape that could decode to one): the text holds none of the
    /// anchor bytes every pattern without `://` holds. A view only drops characters, folds ASCII
    /// letters and decodes escapes, so without an escape it holds no byte the text lacks.
    /// `false` when a pattern holds neither `://` nor an anchor byte.
    pub(crate) fn lacks_anchors(&self, text: &str) -> bool {
        self.anchors
            .is_some_and(|anchors| anchors.absent_from(text.as_bytes()))
    }
}

/// The patterns of a key searched for with its parts ([`patterns_of`]), or of one searched for
/// alone: the key itself, when long enough.
fn each_pattern(key: &str, with_parts: bool, scratch: &mut String, mut each: impl FnMut(&str)) {
    if with_parts {
        patterns_of(key, scratch, each);
    } else if is_searchable(key) {
        each(key);
    }
}

/// Patterns being gathered, each kept once: while they tell, by their last eight bytes, which
/// the search by tails then keeps (decision 0094); else by the set's own table, once more of
/// them end alike than the search by tails takes.
pub(crate) struct Gathering {
    patterns: Strings,
    tails: Option<Tails>,
}

impl Gathering {
    /// Room for the patterns of about `uris` uris, held in `key_bytes` bytes of canonical
    /// forms, told apart by their last eight bytes.
    pub(crate) fn by_tails(uris: usize, key_bytes: usize) -> Gathering {
        // A uri's patterns mostly end alike (its form, the same with its default port, its
        // query and its last credential value): about one last eight bytes a uri. Their text
        // is about twice the forms', and a query more.
        let text = (key_bytes / 2)
            .saturating_mul(5)
            .saturating_add(uris.saturating_mul(8));
        Gathering {
            patterns: Strings::unindexed(uris.saturating_mul(3), text),
            tails: Some(Tails::with_capacity(uris, uris.saturating_mul(3))),
        }
    }

    /// Patterns told apart by the set's own table from the start.
    #[cfg(test)]
    pub(crate) fn by_table() -> Gathering {
        Gathering {
            patterns: Strings::default(),
            tails: None,
        }
    }

    /// Adds a pattern (at least eight bytes), unless it is held.
    pub(crate) fn add(&mut self, pattern: &str) {
        if let Some(tails) = &mut self.tails {
            match tails.add(&mut self.patterns, pattern) {
                Added::New | Added::Held => return,
                Added::Crowded => {
                    self.patterns.index_all();
                    self.tails = None;
                }
            }
        }
        self.patterns.insert(pattern);
    }

    /// The patterns gathered, in the order first added, and the search made of them.
    pub(crate) fn finish(self) -> Search {
        let Gathering {
            mut patterns,
            tails,
        } = self;
        let searcher = match tails {
            _ if patterns.len() == 0 => None,
            Some(tails) => Some(Searcher::of_tails(&mut patterns, tails)),
            None => Some(Searcher::new(&patterns)),
        };
        // Only the search by beginnings asks whether a string is a pattern; the others find
        // patterns by index, and nothing adds to a finished set.
        if !matches!(searcher, Some(Searcher::ByPrefix { .. })) {
            patterns.forget_table();
        }
        patterns.shrink_to_fit();
        Search { patterns, searcher }
    }
}

/// The anchors of a set of patterns, read one pattern at a time.
#[derive(Debug)]
struct AnchorsOf {
    /// Whether any pattern was long enough to search for.
    searched: bool,
    /// Bit `k` for `ANCHOR_BYTES[k]`; `None` once a pattern holds neither `://` nor an anchor.
    mask: Option<u8>,
}

impl Default for AnchorsOf {
    fn default() -> AnchorsOf {
        AnchorsOf {
            searched: false,
            mask: Some(0),
        }
    }
}

impl AnchorsOf {
    /// Notes a string, if it is long enough to be searched for.
    fn note(&mut self, pattern: &str) {
        if !is_searchable(pattern) {
            return;
        }
        self.searched = true;
        let bytes = pattern.as_bytes();
        if let Some(held) = self.mask
            && !holds_scheme_separator(bytes)
        {
            self.mask = ANCHOR_BYTES
                .iter()
                .position(|b| memchr::memchr(*b, bytes).is_some())
                .map(|k| held | 1 << k);
        }
    }
}

/// Whether a pattern holds `://`.
fn holds_scheme_separator(pattern: &[u8]) -> bool {
    memchr::memchr_iter(b':', pattern).any(|at| pattern[at..].starts_with(b"://"))
}

/// The anchor bytes a set of patterns needs (decision 0099).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Anchors {
    bytes: [u8; ANCHOR_BYTES.len()],
    count: usize,
}

impl Anchors {
    /// The bytes of [`ANCHOR_BYTES`] that `mask` names (bit `k` for `ANCHOR_BYTES[k]`).
    fn of_mask(mask: u8) -> Anchors {
        let mut anchors = Anchors {
            bytes: [0; ANCHOR_BYTES.len()],
            count: 0,
        };
        for (k, &byte) in ANCHOR_BYTES.iter().enumerate() {
            if mask & 1 << k != 0 {
                anchors.bytes[anchors.count] = byte;
                anchors.count += 1;
            }
        }
        anchors
    }

    /// Whether `bytes` holds none of them.
    fn absent_from(&self, bytes: &[u8]) -> bool {
        let wanted = &self.bytes[..self.count];
        match *wanted {
            [] => true,
            [a] => memchr::memchr(a, bytes).is_none(),
            [a, b] => memchr::memchr2(a, b, bytes).is_none(),
            [a, b, c] => memchr::memchr3(a, b, c, bytes).is_none(),
            _ => !bytes.iter().any(|byte| wanted.contains(byte)),
        }
    }
}

impl HiddenSet {
    /// An empty set; every server's credential-shaped urls withheld.
    pub fn new() -> HiddenSet {
        HiddenSet::default()
    }

    /// How many uris the set holds.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether the set holds no uri.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Whether a uri, in any spelling, is in the set.
    pub fn contains(&self, uri: &str) -> bool {
        self.entries.contains_key(&canonical(uri))
    }

    /// Whether unclaimed credential-shaped urls from `server` are withheld (the default).
    pub fn scans(&self, server: &ServerName) -> bool {
        !self.unscanned.contains(server)
    }

    /// Turns the withholding of `server`'s unclaimed credential-shaped urls on or off. Uris a
    /// result claims, and uris already hidden, stay hidden either way.
    pub fn set_scan(&mut self, server: &ServerName, on: bool) {
        if on {
            self.unscanned.remove(server);
        } else {
            self.unscanned.insert(server.clone());
        }
    }

    /// Adds a result's uris, in order, and returns the set to search that result for: the
    /// set's own uris and every one of the result's. A result's uri the set forgets while the
    /// result is added (it was the oldest), or that the set cannot keep (the result brought more
    /// new uris than the set keeps), is still searched for in that result.
    ///
    /// A result with more new uris than the set keeps replaces the set with its newest ones,
    /// and only those are ever added to it: the others would be forgotten at once.
    pub(crate) fn hide_result(&mut self, uris: &[&str]) -> Arc<Compiled> {
        let mut keys = Strings::with_capacity(uris.len());
        // A canonical form is at most as long as its uri.
        keys.text.reserve(uris.iter().map(|uri| uri.len()).sum());
        let mut key = String::new();
        for uri in uris {
            canonical_into(uri, &mut key);
            if !key.is_empty() {
                keys.insert(&key);
            }
        }
        let new = keys
            .iter()
            .filter(|key| !self.entries.contains_key(*key))
            .count();
        if new > HIDDEN_SET_CAPACITY {
            let mut newest: Vec<String> = keys
                .iter()
                .rev()
                .filter(|key| !self.entries.contains_key(*key))
                .take(HIDDEN_SET_CAPACITY)
                .map(str::to_owned)
                .collect();
            newest.reverse();
            self.order.clear();
            self.entries.clear();
            self.compiled = None;
            for key in newest {
                self.entries.insert(key.clone(), true);
                self.order.push_back(key);
            }
            return Arc::new(Compiled::of_keys(keys, 0).finish());
        }
        for key in keys.iter() {
            self.insert_key(key, true);
        }
        if keys.iter().all(|key| self.entries.contains_key(key)) {
            return self.compiled();
        }
        let mut compiled = Compiled::of_keys(keys, self.entries.len());
        for (key, &with_parts) in &self.entries {
            compiled.add(key, with_parts);
        }
        Arc::new(compiled.finish())
    }

    /// Adds a credential-shaped url found in text, by its canonical form alone.
    pub(crate) fn insert_found(&mut self, key: String) -> bool {
        self.insert_key(&key, false)
    }

    /// Adds a uri by its canonical form; whether the set changed. A uri held alone and now
    /// carried by a result is searched for by its parts from then on.
    fn insert_key(&mut self, key: &str, with_parts: bool) -> bool {
        if key.is_empty() {
            return false;
        }
        if let Some(held) = self.entries.get_mut(key) {
            if with_parts && !*held {
                *held = true;
                self.compiled = None;
                return true;
            }
            return false;
        }
        self.order.push_back(key.to_owned());
        self.entries.insert(key.to_owned(), with_parts);
        while self.order.len() > HIDDEN_SET_CAPACITY {
            if let Some(oldest) = self.order.pop_front() {
                self.entries.remove(&oldest);
            }
        }
        self.compiled = None;
        true
    }

    /// The set's uris, ready to search for, made once per change.
    pub(crate) fn compiled(&mut self) -> Arc<Compiled> {
        if let Some(compiled) = &self.compiled {
            return Arc::clone(compiled);
        }
        let mut compiled = Compiled::of_keys(Strings::with_capacity(self.entries.len()), 0);
        for (key, &with_parts) in &self.entries {
            compiled.add(key, with_parts);
        }
        let compiled = Arc::new(compiled.finish());
        self.compiled = Some(Arc::clone(&compiled));
        compiled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_maps_back_to_the_original_bytes() {
        let original = "A%2Fb&amp;c\u{0}D\\u0026e";
        let view = View::of(original);
        assert_eq!(view.text, "a/b&cd&e");
        let at = view.text.find("b&c").unwrap();
        let (start, end) = view.origin(at, at + 3);
        assert_eq!(&original[start..end], "b&amp;c");
        let (start, end) = view.origin(0, view.text.len());
        assert_eq!(&original[start..end], original);
        // Layers compose: an HTML reference to a percent sign that encodes a slash.
        assert_eq!(View::of("a&#37;2Fb").text, "a/b");
        assert_eq!(View::of("\\u0026amp;").text, "&");
    }

    #[test]
    fn canonical_forms_drop_case_default_ports_and_trailing_slashes() {
        assert_eq!(
            canonical("HTTPS://Files.Example.com:443/Q3.pdf/"),
            "https://files.example.com/q3.pdf"
        );
        assert_eq!(canonical("http://a.example:8080/"), "http://a.example:8080");
        assert_eq!(canonical("demo://x%2Fy"), "demo://x/y");
    }

    #[test]
    fn urls_are_found_and_judged_in_a_view() {
        let view = "see https://a.example/x?token=1, and (ftp://b.example/y).";
        let urls: Vec<&str> = urls_in(view).iter().map(|&(s, e, _)| &view[s..e]).collect();
        assert_eq!(urls, ["https://a.example/x?token=1", "ftp://b.example/y)"]);
        assert!(is_credential_shaped("https://a.example/x?token=1"));
        assert!(is_credential_shaped("https://u:p@a.example/"));
        assert!(is_credential_shaped("https://a.example/#access_token=x"));
        assert!(!is_credential_shaped("https://a.example/x?page=2&tokens=3"));
        assert!(!is_credential_shaped("https://a.example/x?token="));
        // Every `://` is read, inside another url too.
        let nested = "x://a/?q=https://u:p@b.example/";
        let urls: Vec<&str> = urls_in(nested)
            .iter()
            .map(|&(s, e, _)| &nested[s..e])
            .collect();
        assert_eq!(urls, [nested, "https://u:p@b.example/"]);
        let crowded = "a://".repeat(MAX_URLS_PER_STRETCH + 1);
        let last = urls_in(&crowded).pop().unwrap();
        assert_eq!(last, (4 * MAX_URLS_PER_STRETCH, crowded.len(), true));
    }

    #[test]
    fn a_compiled_set_searched_by_tails_keeps_no_table_of_its_patterns_and_still_finds_them() {
        let uris: Vec<String> = (0..5000)
            .map(|i| format!("https://h.example/r/{i}?sig=s{i}"))
            .collect();
        let uris: Vec<&str> = uris.iter().map(String::as_str).collect();
        let compiled = HiddenSet::new().hide_result(&uris);
        let search = compiled.search();
        assert!(
            matches!(search.searcher, Some(Searcher::ByTail { .. })),
            "{:?}",
            search.searcher.as_ref().map(|_| ())
        );
        // The table that found a pattern again is gone; the keys keep theirs.
        assert!(search.patterns.len() > uris.len());
        assert!(!search.patterns.contains(uris[4321]));
        assert!(compiled.keys.contains(uris[4321]));
        let text = format!("see {} and sig=s4321 now", uris[4321]);
        let found = search
            .searcher
            .as_ref()
            .map(|searcher| searcher.find_all(&search.patterns, &text))
            .unwrap_or_default();
        let start = text.find(uris[4321]).unwrap_or_default();
        let query = text.rfind("sig=s4321").unwrap_or_default();
        assert_eq!(
            found,
            [
                (start, start + uris[4321].len()),
                (query, query + "sig=s4321".len())
            ]
        );
    }

    #[test]
    fn a_result_with_more_uris_than_the_set_keeps_hides_all_of_its_own() {
        let mut set = HiddenSet::new();
        set.hide_result(&["demo://earlier/one", "demo://earlier/two"]);
        let mut uris = vec!["demo://earlier/two".to_owned()];
        uris.extend((0..HIDDEN_SET_CAPACITY + 10).map(|n| format!("demo://resource/{n}")));
        let uris: Vec<&str> = uris.iter().map(String::as_str).collect();
        let compiled = set.hide_result(&uris);
        assert_eq!(set.len(), HIDDEN_SET_CAPACITY);
        assert!(!set.contains("demo://resource/9"));
        for uri in &uris {
            assert!(compiled.keys.contains(uri), "{uri}");
        }
        // Forgotten, and not the result's: not searched for in it.
        assert!(!compiled.keys.contains("demo://earlier/one"));
        assert_eq!(compiled.keys.len(), uris.len());
    }

    #[test]
    fn a_results_own_uri_forgotten_while_it_is_added_is_still_searched_for() {
        let mut set = HiddenSet::new();
        let uris: Vec<String> = (0..HIDDEN_SET_CAPACITY)
            .map(|n| format!("demo://resource/{n}"))
            .collect();
        let uris: Vec<&str> = uris.iter().map(String::as_str).collect();
        set.hide_result(&uris);
        // The oldest uri again, and one new one that pushes it out of the full set.
        let compiled = set.hide_result(&["demo://resource/0", "demo://resource/new"]);
        assert!(!set.contains("demo://resource/0"));
        assert!(compiled.keys.contains("demo://resource/0"));
        assert!(compiled.search().patterns.contains("demo://resource/0"));
        assert!(compiled.keys.contains("demo://resource/new"));
        // Every other uri the set holds is searched for too.
        assert!(compiled.keys.contains("demo://resource/1"));
    }

    /// A set's patterns are what its keys make, with their parts or alone, and its anchors are
    /// read from them before they are built; built once, they find every key.
    #[rstest::rstest]
    fn a_sets_patterns_are_built_once_from_its_keys(
        #[values(2, HIDDEN_SET_CAPACITY + 1)] count: usize,
    ) {
        let uris: Vec<String> = (0..count)
            .map(|n| format!("https://h.example/r/{n}?sig=s{n:08}"))
            .collect();
        let uris: Vec<&str> = uris.iter().map(String::as_str).collect();
        let mut set = HiddenSet::new();
        assert!(set.insert_found(canonical("https://found.example/?token=abcdefgh")));
        let compiled = set.hide_result(&uris);
        assert!(compiled.is_searched());
        assert!(compiled.search.get().is_none());
        // Every pattern without `://` is a query or a credential value, with its `=` or not.
        assert_eq!(compiled.anchors, None);
        let search = compiled.search();
        assert!(std::ptr::eq(search, compiled.search()));
        let last = canonical(uris[count - 1]);
        let found = search
            .searcher
            .as_ref()
            .map(|searcher| searcher.find_all(&search.patterns, &last))
            .unwrap_or_default();
        assert_eq!(found.first(), Some(&(0, last.len())));
        // The url found alone is searched for by itself, not by its parts.
        let found_key = canonical("https://found.example/?token=abcdefgh");
        let alone_parts = search
            .patterns
            .iter()
            .filter(|pattern| *pattern == "abcdefgh" || *pattern == "token=abcdefgh")
            .count();
        assert_eq!(alone_parts, 0);
        assert_eq!(
            search.patterns.iter().any(|pattern| pattern == found_key),
            count <= HIDDEN_SET_CAPACITY
        );
    }

    #[test]
    fn a_url_found_in_text_and_then_carried_by_a_result_is_searched_for_by_its_parts() {
        let mut set = HiddenSet::new();
        let key = canonical("https://a.example/f?token=0123456789abcdef");
        assert!(set.insert_found(key));
        let compiled = set.hide_result(&["https://a.example/f?token=0123456789abcdef"]);
        assert!(compiled.search().patterns.contains("0123456789abcdef"));
    }

    #[rstest::rstest]
    #[case::colon_then_space("row 0: fox", true)]
    #[case::colon_then_slash_then_letter("a:/b", true)]
    #[case::colon_then_hidden_then_letter("a:\u{200b}x", true)]
    #[case::no_colon("plain words", true)]
    #[case::colon_at_the_end("see https:", false)]
    #[case::colon_then_one_slash("see https:/", false)]
    #[case::colon_then_only_hidden("a:\u{200b}\u{ad}", false)]
    #[case::scheme_separator("x://y", false)]
    #[case::escape("a%3A", false)]
    fn a_piece_holds_no_url_only_when_no_neighbour_can_finish_one(
        #[case] piece: &str,
        #[case] holds_none: bool,
    ) {
        assert_eq!(piece_holds_no_url(piece), holds_none);
    }

    proptest::proptest! {
        /// A text said to hold no url in its view is one with nothing to decode whose view has
        /// no `://`.
        #[test]
        fn a_view_holds_no_url_exactly_when_it_has_no_scheme_separator(
            text in "[:/a %&\\\\\n\t\u{200b}\u{ad}\u{e9}]{0,24}",
        ) {
            let undecoded = !text.contains(['%', '\\', '&']);
            let expected = undecoded && !View::of(&text).text.contains("://");
            proptest::prop_assert_eq!(view_holds_no_url(&text), expected);
            if expected {
                proptest::prop_assert!(urls_in(&View::of(&text).text).is_empty());
            }
        }

        /// Pieces that each hold no url, joined in any order, hold none: a `:` near a piece's
        /// end, which the next could turn into `://`, makes its piece fail.
        #[test]
        fn pieces_that_hold_no_url_join_into_a_text_that_holds_none(
            pieces in proptest::collection::vec("[:/a \n\u{200b}\u{ad}\u{e9}]{0,6}", 1..6),
        ) {
            for piece in &pieces {
                if piece_holds_no_url(piece) {
                    proptest::prop_assert!(view_holds_no_url(piece));
                }
            }
            if pieces.iter().all(|piece| piece_holds_no_url(piece)) {
                let joined = pieces.concat();
                proptest::prop_assert!(!View::of(&joined).text.contains("://"));
                proptest::prop_assert!(urls_in(&View::of(&joined).text).is_empty());
            }
        }

        /// The short way for plain text is exact: where `plain_case` says a string is plain,
        /// its view is the string in lower case and maps back byte for byte.
        #[test]
        fn a_plain_strings_view_is_itself_in_lower_case(
            text in "[ -~]{0,40}|[ -~\\t\\n\u{ad}\u{200b}\u{e9}]{0,40}",
        ) {
            let view = View::of(&text);
            match plain_case(&text) {
                Some(upper) => {
                    proptest::prop_assert_eq!(&view.text, &text.to_ascii_lowercase());
                    proptest::prop_assert_eq!(upper, text.bytes().any(|b| b.is_ascii_uppercase()));
                    for end in 1..=text.len() {
                        proptest::prop_assert_eq!(view.origin(end - 1, end), (end - 1, end));
                    }
                }
                None => proptest::prop_assert!(
                    text.bytes().any(|b| !(0x20..0x7F).contains(&b) || b"%&\\".contains(&b))
                ),
            }
        }
    }

    proptest::proptest! {
        /// Patterns gathered by their last eight bytes are the patterns a table gathers, in the
        /// same order; the search made from them is the one `Searcher::new` makes from those,
        /// and finds the same. Many strings ending alike (past what the search by tails takes)
        /// hand the gathering over to the table.
        #[test]
        fn patterns_gathered_by_their_tails_are_those_a_table_gathers(
            patterns in proptest::collection::vec(
                proptest::prop_oneof![
                    1 => "[ab:/]{8,14}",
                    2 => "[ab]{0,7}xxxxxxxx",
                    1 => "(http|demo)://[ab]{1,3}",
                ],
                0..120,
            ),
            text in "[abx:/ ]{0,80}|(http://|demo://|[abx ]){0,20}",
        ) {
            let mut by_table = Gathering::by_table();
            let mut by_tails = Gathering::by_tails(0, 0);
            for pattern in &patterns {
                by_table.add(pattern);
                by_tails.add(pattern);
            }
            let (by_table, by_tails) = (by_table.finish(), by_tails.finish());
            proptest::prop_assert!(by_table.patterns.iter().eq(by_tails.patterns.iter()));
            let kind = |search: &Search| search.searcher.as_ref().map(std::mem::discriminant);
            proptest::prop_assert_eq!(kind(&by_table), kind(&by_tails));
            let found = |search: &Search| {
                search
                    .searcher
                    .as_ref()
                    .map(|searcher| searcher.find_all(&search.patterns, &text))
            };
            proptest::prop_assert_eq!(found(&by_table), found(&by_tails));
            if matches!(by_tails.searcher, Some(Searcher::ByPrefix { .. })) {
                for pattern in &patterns {
                    proptest::prop_assert!(by_tails.patterns.contains(pattern));
                }
            }
        }
    }

    proptest::proptest! {
        /// The anchors read from a set's forms before its patterns are built are those of the
        /// patterns once built, and it is searched exactly when it has a pattern.
        #[test]
        fn anchors_read_from_the_forms_are_those_of_the_patterns(
            keys in proptest::collection::vec(
                (
                    "(https|http|wss|demo|urn|mailto)(://|:)[a-z.@]{0,12}(:443|:80)?(/[a-z]{0,6})?",
                    "(\\?((token|sig|page|q)=[a-z0-9.]{0,12}&?){0,3})?(#[a-z=.]{0,10})?",
                    proptest::bool::ANY,
                ),
                0..12,
            ),
        ) {
            let mut compiled = Compiled::of_keys(Strings::default(), 0);
            for (start, rest, with_parts) in &keys {
                compiled.add(&canonical(&format!("{start}{rest}")), *with_parts);
            }
            let compiled = compiled.finish();
            let search = compiled.search();
            let mut built = AnchorsOf::default();
            for pattern in search.patterns.iter() {
                built.note(pattern);
            }
            proptest::prop_assert_eq!(compiled.anchors, built.mask.map(Anchors::of_mask));
            proptest::prop_assert_eq!(compiled.is_searched(), search.patterns.len() > 0);
            proptest::prop_assert_eq!(compiled.is_searched(), search.searcher.is_some());
        }
    }

    #[test]
    fn plain_uris_take_the_short_way_to_the_same_canonical_form() {
        for uri in [
            "HTTPS://Files.Example.com:443/Q3.pdf/",
            "http://a.example:80",
            "wss://A.example:443/x?y=Z#F",
            "demo://x/y//",
            "https://a.example:4430/",
            "",
            "/",
        ] {
            assert!(is_plain(uri), "{uri}");
            let slow = View::of(uri).text;
            let slow = match authority(&slow) {
                Some((scheme, start, end))
                    if default_port(scheme).is_some_and(|p| slow[start..end].ends_with(p)) =>
                {
                    let port = default_port(scheme).unwrap_or_default();
                    format!("{}{}", &slow[..end - port.len()], &slow[end..])
                }
                _ => slow,
            };
            assert_eq!(canonical(uri), slow.trim_end_matches('/'), "{uri}");
        }
        for text in [
            "a%2Fb",
            "a\\u0041",
            "a&amp;b",
            "tab\tin",
            "caf\u{e9}",
            "\u{7f}",
        ] {
            assert!(!is_plain(text), "{text}");
        }
    }

    #[test]
    fn past_its_capacity_the_set_forgets_the_oldest() {
        let mut set = HiddenSet::new();
        // A full set, then one more in a later result.
        let uris: Vec<String> = (0..=HIDDEN_SET_CAPACITY)
            .map(|n| format!("demo://resource/{n}"))
            .collect();
        let uris: Vec<&str> = uris.iter().map(String::as_str).collect();
        set.hide_result(&uris[..HIDDEN_SET_CAPACITY]);
        assert!(set.contains("demo://resource/0"));
        set.hide_result(&uris[HIDDEN_SET_CAPACITY..]);
        assert_eq!(set.len(), HIDDEN_SET_CAPACITY);
        assert!(!set.contains("demo://resource/0"));
        assert!(set.contains("demo://resource/1"));
        assert!(set.contains(&format!("DEMO://resource/{HIDDEN_SET_CAPACITY}")));
    }
}
