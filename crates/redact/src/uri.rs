//! A uri's canonical forms and the parts searched for, what makes a url credential-shaped or
//! credential-free, and where urls are in a view.

use crate::view::{CREDENTIAL_PARAMETERS, REDACT_MIN_CHARS, View, is_control_or_format};

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
pub(crate) fn authority(view: &str) -> Option<(&str, usize, usize)> {
    let bytes = view.as_bytes();
    let scheme_end = memchr::memchr_iter(b':', bytes).find(|&i| bytes[i..].starts_with(b"://"))?;
    let start = scheme_end + 3;
    let end = memchr::memchr3(b'/', b'?', b'#', &bytes[start..]).map_or(view.len(), |i| start + i);
    Some((&view[..scheme_end], start, end))
}

pub(crate) fn default_port(scheme: &str) -> Option<&'static str> {
    match scheme {
        "http" | "ws" => Some(":80"),
        "https" | "wss" => Some(":443"),
        _ => None,
    }
}

/// Each string searched for a hidden uri, given its canonical form: the form itself, the same
/// with its default port, and its parts ([`parts_of`]), those long enough to search for
/// ([`is_searchable`]). A string may come more than once.
pub(crate) fn patterns_of(key: &str, scratch: &mut String, mut each: impl FnMut(&str)) {
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
pub(crate) fn parts_of(key: &str, mut emit: impl FnMut(&str)) {
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

/// The most urls of one stretch (a run without a terminator) remembered for the session: a
/// stretch of many urls gives many credential-shaped ones, each holding the next, and
/// remembering every one would cost the stretch's length many times over.
pub const MAX_URLS_PER_STRETCH: usize = 32;

/// The longest url remembered for the session. A longer credential-shaped url is withheld but
/// not remembered: a run of texts with no white space between them joins into one stretch, and
/// each url in it runs to the stretch's end.
pub const MAX_URL_BYTES: usize = 8 * 1024;

/// The longest scheme read back from a `://`.
const MAX_SCHEME_CHARS: usize = 32;

/// The longest name in [`CREDENTIAL_PARAMETERS`]: a parameter's name is read this far at most.
const MAX_PARAMETER_NAME: usize = {
    let (mut longest, mut at) = (0, 0);
    while at < CREDENTIAL_PARAMETERS.len() {
        if CREDENTIAL_PARAMETERS[at].len() > longest {
            longest = CREDENTIAL_PARAMETERS[at].len();
        }
        at += 1;
    }
    longest
};

/// Every credential-shaped url of a view, as [`is_credential_shaped`] judges
/// `view[start..end]`, handed to `each` with whether it is remembered for the session. A url
/// runs from each `scheme://`, overlapping ones included, up to white space, a quote, `<`, `>`,
/// a backtick, `{`, `}`, `|`, `\\` or `^`, less trailing punctuation: so the urls of one
/// stretch without a terminator share their end, and each holds every later one.
///
/// Each stretch gives its first credential-shaped url, whose range holds every later one's,
/// and every credential-shaped url among its first [`MAX_URLS_PER_STRETCH`] that is at most
/// [`MAX_URL_BYTES`] long, with `true` (remembered). Every url is judged, in time linear in the
/// view: a stretch's urls are judged together ([`Stretch`]), each reading only what is its
/// own, so a stretch of a million urls costs its length, not its length a million times.
pub(crate) fn credential_urls(view: &str, mut each: impl FnMut(usize, usize, bool)) {
    let b = view.as_bytes();
    let mut stretch: Option<Stretch<'_>> = None;
    // The end of the stretch the last `://` was in, how many urls it held so far, and whether
    // its first credential-shaped url is given.
    let (mut stretch_end, mut in_stretch, mut given) = (0, 0, false);
    let schemes = memchr::memchr_iter(b':', b).filter(|&i| b[i..].starts_with(b"://"));
    for i in schemes {
        if i >= stretch_end {
            stretch_end = url_end(b, i);
            stretch = Some(Stretch::new(
                b,
                i.saturating_sub(MAX_SCHEME_CHARS),
                stretch_end,
            ));
            in_stretch = 0;
            given = false;
        }
        let (Some(start), Some(judge)) = (scheme_start(b, i), stretch.as_mut()) else {
            continue;
        };
        in_stretch += 1;
        if !view.is_char_boundary(stretch_end) || !judge.is_credential_shaped(start, i) {
            continue;
        }
        let remember = in_stretch <= MAX_URLS_PER_STRETCH && stretch_end - start <= MAX_URL_BYTES;
        if remember || !given {
            each(start, stretch_end, remember);
            given = true;
        }
    }
}

/// Where the url whose `://` is at `colon` ends: at the first terminator after it, less
/// trailing `.,;:!?`. Every url of a stretch ends there: the byte before each `://`'s end is a
/// `/`, which is not trimmed.
fn url_end(b: &[u8], colon: usize) -> usize {
    let mut end = colon + 3;
    while end < b.len() && !is_url_terminator(b[end]) {
        end += 1;
    }
    while end > colon + 3 && matches!(b[end - 1], b'.' | b',' | b';' | b':' | b'!' | b'?') {
        end -= 1;
    }
    end
}

/// Where the scheme before the `://` at `colon` starts: up to [`MAX_SCHEME_CHARS`] letters,
/// digits, `+`, `-` or `.`, from the first letter. None when there is no letter.
fn scheme_start(b: &[u8], colon: usize) -> Option<usize> {
    let mut start = colon;
    while start > 0
        && colon - start < MAX_SCHEME_CHARS
        && (b[start - 1].is_ascii_alphanumeric() || matches!(b[start - 1], b'+' | b'-' | b'.'))
    {
        start -= 1;
    }
    while start < colon && !b[start].is_ascii_alphabetic() {
        start += 1;
    }
    (start < colon).then_some(start)
}

/// The urls of one stretch judged as [`is_credential_shaped`] judges each, in turn, in time
/// linear in the stretch. Each url runs to the same end and starts later than the one before,
/// so what decides its shape is either its own (its authority, the first pair of its query or
/// fragment) or the same for every url that reaches it (a later pair, a JWT): the first is
/// read url by url, each no further than the next url's `://`; the second is found once, by
/// cursors that only move forward.
struct Stretch<'v> {
    b: &'v [u8],
    end: usize,
    /// The first `#` and the first `?` at or after a place.
    hash: NextByte,
    question: NextByte,
    /// The first `&` or `;` that starts a credential pair, in a query (where a `#` ends a pair)
    /// and in a fragment (where it does not).
    query_pair: NextPair,
    fragment_pair: NextPair,
    /// Where the stretch's last JWT starts: a url holds one when it starts no later.
    last_jwt: Option<usize>,
}

impl<'v> Stretch<'v> {
    /// The stretch of `b` that ends at `end`, whose urls start at `from` or later.
    fn new(b: &'v [u8], from: usize, end: usize) -> Self {
        Stretch {
            b,
            end,
            hash: NextByte::new(b'#'),
            question: NextByte::new(b'?'),
            query_pair: NextPair::new(true),
            fragment_pair: NextPair::new(false),
            last_jwt: last_jwt(&b[..end], from),
        }
    }

    /// [`is_credential_shaped`] of the url from `start` (its `://` at `colon`) to the end.
    fn is_credential_shaped(&mut self, start: usize, colon: usize) -> bool {
        let (b, end) = (self.b, self.end);
        let authority = colon + 3;
        let authority_end =
            memchr::memchr3(b'/', b'?', b'#', &b[authority..end]).map_or(end, |at| authority + at);
        if memchr::memchr(b'@', &b[authority..authority_end]).is_some() {
            return true;
        }
        let hash = self.hash.at_or_after(b, start, end);
        let before_fragment = hash.unwrap_or(end);
        let query = self
            .question
            .at_or_after(b, start, end)
            .filter(|&at| at < before_fragment);
        if let Some(at) = query {
            let first = at + 1;
            if pair_is_credential(b, first, end, true)
                || self
                    .query_pair
                    .at_or_after(b, first, end)
                    .is_some_and(|separator| separator < before_fragment)
            {
                return true;
            }
        }
        if let Some(at) = hash {
            let first = at + 1;
            if pair_is_credential(b, first, end, false)
                || self.fragment_pair.at_or_after(b, first, end).is_some()
            {
                return true;
            }
        }
        self.last_jwt.is_some_and(|at| start <= at)
    }
}

/// The first place at or after a place where something is, for places that only grow: the
/// last answer is kept, and the view is looked through once.
#[derive(Default)]
struct Cursor {
    found: Option<usize>,
    /// How far the view was looked through for the last answer.
    looked: usize,
}

impl Cursor {
    /// The first place at or after `from` (and before `end`) that `next` finds, where `next`
    /// gives the first place at or after the one it is given.
    fn at_or_after(
        &mut self,
        from: usize,
        end: usize,
        next: impl FnOnce(usize) -> Option<usize>,
    ) -> Option<usize> {
        if let Some(at) = self.found
            && at >= from
        {
            return Some(at);
        }
        if self.found.is_none() && self.looked >= end {
            return None;
        }
        self.found = next(from.max(self.looked));
        self.looked = self.found.map_or(end, |at| at + 1);
        self.found
    }
}

/// The first place of a byte at or after a place, for places that only grow.
struct NextByte {
    byte: u8,
    cursor: Cursor,
}

impl NextByte {
    fn new(byte: u8) -> Self {
        NextByte {
            byte,
            cursor: Cursor::default(),
        }
    }

    fn at_or_after(&mut self, b: &[u8], from: usize, end: usize) -> Option<usize> {
        let byte = self.byte;
        self.cursor.at_or_after(from, end, |from| {
            memchr::memchr(byte, &b[from..end]).map(|at| from + at)
        })
    }
}

/// The first `&` or `;` at or after a place whose pair is a credential ([`pair_is_credential`]),
/// for places that only grow.
struct NextPair {
    hash_ends: bool,
    cursor: Cursor,
}

impl NextPair {
    fn new(hash_ends: bool) -> Self {
        NextPair {
            hash_ends,
            cursor: Cursor::default(),
        }
    }

    fn at_or_after(&mut self, b: &[u8], from: usize, end: usize) -> Option<usize> {
        let hash_ends = self.hash_ends;
        self.cursor.at_or_after(from, end, |mut from| {
            loop {
                match memchr::memchr2(b'&', b';', &b[from..end]) {
                    None => return None,
                    Some(at) if pair_is_credential(b, from + at + 1, end, hash_ends) => {
                        return Some(from + at);
                    }
                    Some(at) => from += at + 1,
                }
            }
        })
    }
}

/// Whether the pair that starts at `at` (it ends at `&`, `;`, the end, or, in a query, `#`) has
/// a name in [`CREDENTIAL_PARAMETERS`] and a value that is not empty, as `parameters` reads it.
/// A name is read [`MAX_PARAMETER_NAME`] bytes at most.
fn pair_is_credential(b: &[u8], at: usize, end: usize, hash_ends: bool) -> bool {
    let ends_pair = |c: u8| c == b'&' || c == b';' || (hash_ends && c == b'#');
    let limit = end.min(at + MAX_PARAMETER_NAME + 1);
    for equals in at..limit {
        match b[equals] {
            b'=' => {
                let name = &b[at..equals];
                let valued = equals + 1 < end && !ends_pair(b[equals + 1]);
                return valued && CREDENTIAL_PARAMETERS.iter().any(|p| p.as_bytes() == name);
            }
            c if ends_pair(c) => return false,
            _ => {}
        }
    }
    false
}

/// Where the last JWT [`has_jwt`] finds in `b` starts, of those that start at `from` or later:
/// `eyj`, base64url to ten characters at least, a dot, ten more at least, a dot. Each run of
/// base64url is read twice at most (as a JWT's second part, then as a run of its own).
fn last_jwt(b: &[u8], from: usize) -> Option<usize> {
    let is_b64 = |c: u8| c.is_ascii_alphanumeric() || c == b'-' || c == b'_';
    let mut last = None;
    let mut at = from;
    while at < b.len() {
        if !is_b64(b[at]) {
            at += 1;
            continue;
        }
        let run = at;
        while at < b.len() && is_b64(b[at]) {
            at += 1;
        }
        if at - run >= 10 && b.get(at) == Some(&b'.') {
            let second = b[at + 1..].iter().take_while(|&&c| is_b64(c)).count();
            if second >= 10 && b.get(at + 1 + second) == Some(&b'.') {
                // A start ten characters at least before the run's end.
                let starts = &b[run..at - 10 + 3];
                if let Some(found) = memchr::memmem::rfind(starts, b"eyj") {
                    last = Some(run + found);
                }
            }
        }
    }
    last
}

/// Every url in a view, each as its byte range ([`credential_urls`] reads the same urls).
#[cfg(test)]
pub(crate) fn urls_in(view: &str) -> Vec<(usize, usize)> {
    let b = view.as_bytes();
    memchr::memchr_iter(b':', b)
        .filter(|&i| b[i..].starts_with(b"://"))
        .filter_map(|i| Some((scheme_start(b, i)?, url_end(b, i))))
        .collect()
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

/// How far past a place just after a space [`safe_cut`] still looks for a run of
/// [`SAFE_RUN`] characters before it cuts at that place.
const SPACE_CUT_LEAD: usize = 64 << 10;

/// The first place at or after `from` (a character boundary) where `text` can be cut so that
/// the views of the two sides, side by side, are the view of the whole, each character of
/// them coming from the same bytes (see [`SAFE_RUN`]); `None` when there is none. A place just
/// after a space is one too: no escape holds a space, in any layer, and the view keeps it, so
/// no escape reaches across it. A text with escapes too close together for a run (a JSON text
/// of quotes and backslashes) is cut there, when no run comes within [`SPACE_CUT_LEAD`] bytes.
pub(crate) fn safe_cut(text: &str, from: usize) -> Option<usize> {
    let mut run = 0;
    let mut after_space = None;
    for (at, c) in text.get(from..)?.char_indices() {
        if after_space.is_some_and(|cut| from + at > cut + SPACE_CUT_LEAD) {
            return after_space;
        }
        if matches!(c, '%' | '\\' | '&') {
            run = 0;
        } else if !is_control_or_format(c) {
            run += 1;
            if run >= SAFE_RUN {
                return Some(from + at + c.len_utf8());
            }
        }
        if c == ' ' && after_space.is_none() {
            after_space = Some(from + at + 1);
        }
    }
    after_space
}

/// The parts of a canonical form that could carry a capability, each searched for on its own
/// by its content (decision 0102): the user and password of its userinfo, every path segment,
/// every query and fragment value (a name without `=` counts as a value), and the whole query
/// and fragment. The scheme, the host and the port carry none. A form without `://` is one
/// part, itself.
pub(crate) fn secret_parts(key: &str, mut each: impl FnMut(&str)) {
    let Some(scheme_end) = key.find("://") else {
        each(key);
        return;
    };
    let rest = &key[scheme_end + 3..];
    let (before_fragment, fragment) = match rest.split_once('#') {
        Some((before, fragment)) => (before, Some(fragment)),
        None => (rest, None),
    };
    let (before_query, query) = match before_fragment.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (before_fragment, None),
    };
    let (authority, path) = match before_query.find('/') {
        Some(at) => before_query.split_at(at),
        None => (before_query, ""),
    };
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        userinfo.split(':').for_each(&mut each);
    }
    path.split('/')
        .filter(|s| !s.is_empty())
        .for_each(&mut each);
    for part in [query, fragment].into_iter().flatten() {
        each(part);
        for pair in part.split(['&', ';', '?', '/']) {
            let value = pair.split_once('=').map_or(pair, |(_, value)| value);
            each(value);
        }
    }
}
