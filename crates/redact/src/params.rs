//! Credential parameters anywhere in a text: `name=value` or `"name": "value"` whose name,
//! read through every spelling, says it holds a secret.
//!
//! The rule needs no url around the parameter, so a url cut before its query, a scheme-less
//! host, a single-page app's `#/callback?access_token=…` and a JSON answer echoed in prose are
//! all covered. A name is read in the view (decoded, folded, invisible characters gone) and then
//! by its letters and digits alone: `accessToken`, `access_token`, `access-token`,
//! `auth[token]` and `ACCESS%5FTOKEN` are one name. A value is read in the original text from
//! where it starts to the first character that ends a value there, so an encoded space (`%20`)
//! does not cut it short.

use crate::hidden::REDACT_WINDOW;
use crate::scrub::Sweep;
use crate::unicode::folds_to_itself;
use crate::uri::is_plain;
use crate::view::{View, is_control_or_format};

/// Names that hold a secret wherever they appear in a name (`oauth_token`, `x-api-key`,
/// `client_secret`, `X-Amz-Signature`), read by letters and digits only.
const SECRET_WORDS: &[&str] = &[
    "token",
    "secret",
    "passw",
    "signature",
    "credential",
    "apikey",
    "accesskey",
    "privatekey",
    "sessionid",
    "sessionkey",
    "authkey",
    "authorization",
    "jwt",
    "bearer",
];

/// Whole names that hold a secret (`sig=`, `pwd=`, `auth=`).
const SECRET_NAMES: &[&str] = &["sig", "pwd", "pass", "auth", "passphrase"];

/// Names that hold a secret only when the value looks random (`code=`, `key=`, `session=`, a
/// name ending in `key`): `key=value` and `code=200` are ordinary.
const RANDOM_VALUE_NAMES: &[&str] = &["code", "key", "sp", "se", "st", "ak", "sk"];

/// Endings that make a name say *about* a secret, not hold one: `token_endpoint`,
/// `token_type`, `privateKeyFile`, `secret_name`, `key_id`.
const ABOUT_ENDINGS: &[&str] = &[
    "endpoint",
    "url",
    "uri",
    "type",
    "types",
    "method",
    "methods",
    "file",
    "path",
    "name",
    "id",
    "ids",
    "expires",
    "expiresin",
    "expiry",
    "supported",
    "length",
    "len",
    "count",
    "hint",
];

/// The fewest letters and digits a value needs before it is withheld (and a digit, or 32).
const MIN_VALUE_CHARS: usize = 8;

/// The longest name read back from a separator.
const MAX_NAME_BYTES: usize = 64;

/// Which kind of secret a name says its value is, read by its letters and digits only.
fn name_holds_secret(name: &str) -> Option<bool> {
    let letters: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if letters.is_empty() {
        return None;
    }
    if ABOUT_ENDINGS.iter().any(|e| letters.ends_with(e)) && !letters.ends_with("sessionid") {
        return None;
    }
    if SECRET_NAMES.contains(&letters.as_str()) || SECRET_WORDS.iter().any(|w| letters.contains(w))
    {
        return Some(true);
    }
    if RANDOM_VALUE_NAMES.contains(&letters.as_str()) || letters.ends_with("key") {
        return Some(false);
    }
    None
}

/// Whether a name (of an environment variable, a header, a parameter) says its value is a
/// secret, read by its letters and digits alone: `OPENAI_API_KEY`, `AWS_SECRET_ACCESS_KEY`,
/// `GITHUB_TOKEN`, `X-Api-Key`, `DB_PASSWORD`.
pub fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    // The shell's working folders, not passwords.
    !matches!(name.as_str(), "pwd" | "oldpwd") && name_holds_secret(&name).is_some()
}

/// Whether a value looks random: at least 12 letters and digits, two of each at least.
fn looks_random(value: &str) -> bool {
    let alnum = value.chars().filter(char::is_ascii_alphanumeric).count();
    let digits = value.chars().filter(char::is_ascii_digit).count();
    let letters = value.chars().filter(char::is_ascii_alphabetic).count();
    alnum >= 12 && digits >= 2 && letters >= 2
}

/// Whether a character of the original text ends a parameter's value.
fn ends_value(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '"' | '\'' | '`' | '&' | '#' | '<' | '>' | ',' | ';' | ')' | ']' | '}' | '|' | '\\'
        )
}

/// Whether a character of the original may be part of a value: what tokens, keys and
/// their encodings are spelled with, invisible characters included (they spell nothing).
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            '_' | '-' | '.' | '~' | '+' | '/' | '=' | '%' | ':' | '@' | '!' | '*' | '$'
        )
        || (!c.is_ascii() && !c.is_whitespace())
}

/// Whether a view character may be part of a parameter's name.
fn in_name(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'[' | b']' | b'$')
}

/// Whether a text may hold a credential parameter at all: it has a separator, or an escape
/// that may decode to one.
pub(crate) fn may_hold(text: &str) -> bool {
    memchr::memchr3(b'=', b':', b'%', text.as_bytes()).is_some()
        || memchr::memchr2(b'\\', b'&', text.as_bytes()).is_some()
}

/// The byte ranges of `text` that are the values of credential parameters. A text over twice
/// [`REDACT_WINDOW`] is read a window at a time ([`windows`]), so its whole view is never made.
pub(crate) fn values_in(text: &str, withheld: &[(usize, usize)]) -> Vec<(usize, usize)> {
    values_in_windows(text, withheld, REDACT_WINDOW)
}

/// [`values_in`], a window of `size` bytes at a time.
fn values_in_windows(text: &str, withheld: &[(usize, usize)], size: usize) -> Vec<(usize, usize)> {
    if text.len() <= 2 * size {
        return values_in_one(text, withheld);
    }
    // A long text that cannot hold one is not cut into windows either.
    if !may_hold(text) {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut sorted = withheld.to_vec();
    sorted.sort_unstable();
    let mut withheld = Sweep::new(&sorted);
    for (offset, window) in windows(text, size) {
        // What the other rules withhold within the window, in its own bytes.
        let within = withheld.within(offset, offset + window.len());
        found.extend(
            values_in_one(window, &within)
                .into_iter()
                .map(|(start, stop)| (offset + start, offset + stop)),
        );
    }
    found
}

/// Ranges a name may not reach into, sorted by their start, each with the furthest end of it
/// and those before it: whether one overlaps a span is two binary searches, however many
/// there are.
struct Blocked {
    starts: Vec<usize>,
    furthest: Vec<usize>,
}

impl Blocked {
    fn new(withheld: &[(usize, usize)], markers: Vec<(usize, usize)>) -> Self {
        let mut ranges = markers;
        ranges.extend_from_slice(withheld);
        ranges.sort_unstable();
        let mut furthest = 0;
        Blocked {
            starts: ranges.iter().map(|range| range.0).collect(),
            furthest: ranges
                .iter()
                .map(|range| {
                    furthest = furthest.max(range.1);
                    furthest
                })
                .collect(),
        }
    }

    /// Whether a range overlaps `start..end`: one that begins before `end` ends after `start`.
    fn overlaps(&self, (start, end): (usize, usize)) -> bool {
        let before_end = self.starts.partition_point(|&begin| begin < end);
        before_end > 0 && self.furthest[before_end - 1] > start
    }
}

/// Whether a character reads as itself in every layer of a view and is none of what a rule
/// here reads: a letter or digit, or a character beyond ASCII that is kept and folds to itself.
fn is_inert(c: char) -> bool {
    c.is_ascii_alphanumeric() || (!c.is_ascii() && !is_control_or_format(c) && folds_to_itself(c))
}

/// Whether a text may be cut just before `at`: a space ends the first part, after a word of
/// [`is_inert`] characters (dropped ones may sit in it) that a space begins, and the second
/// part begins with an inert character. No escape reaches across a space, so each part's
/// view is the whole view's stretch; no name reads back over the space, and a value's opening
/// white space and quotes stop at the word, so no parameter spans the cut.
fn cuts_before(text: &str, at: usize) -> bool {
    let Some(word) = before_space_then_inert(text, at) else {
        return false;
    };
    if !word.chars().last().is_some_and(is_inert) {
        return false;
    }
    // Back over the word to the space that begins it, a short way at most.
    for (read, c) in word.chars().rev().enumerate() {
        if c == ' ' {
            return true;
        }
        if read >= MAX_WORD_CHARS || !(is_inert(c) || is_control_or_format(c)) {
            return false;
        }
    }
    false
}

/// What both cut rules ask first: `text` before `at` ends with a space, and after it begins with
/// an [`is_inert`] character. Gives the text before the space.
fn before_space_then_inert(text: &str, at: usize) -> Option<&str> {
    let (before, after) = (text.get(..at)?, text.get(at..)?);
    after
        .chars()
        .next()
        .is_some_and(is_inert)
        .then(|| before.strip_suffix(' '))
        .flatten()
}

/// The longest word [`cuts_before`] reads back over.
const MAX_WORD_CHARS: usize = 64;

/// The longest word [`cuts_between_words`] decodes.
const MAX_DECODED_WORD: usize = 1024;

/// Whether a text may be cut just before `at`, where [`cuts_before`] would not have it: a
/// space ends the first part and the second begins with an [`is_inert`] character, as there;
/// the word before the space (back to the space before it, at most [`MAX_DECODED_WORD`] bytes)
/// may hold escapes, but its view ends with a letter or digit.
///
/// No escape holds a space, so the view of that word is the whole view's stretch, and it is
/// the last thing the first part's view reads: a view that ends with a letter or digit leaves
/// no name or separator waiting for a value beyond the space. A line of
/// `name%20with%2Fslash` words is cut this way.
fn cuts_between_words(text: &str, at: usize) -> bool {
    let Some(word_end) = before_space_then_inert(text, at) else {
        return false;
    };
    let reach = word_end.len().saturating_sub(MAX_DECODED_WORD);
    let word_start = match memchr::memrchr(b' ', &word_end.as_bytes()[reach..]) {
        Some(space) => reach + space + 1,
        None if reach == 0 => 0,
        None => return false,
    };
    let word = &word_end[word_start..];
    View::of(word).text.chars().last().is_some_and(is_inert)
}

/// Whether `at` falls inside a marker redaction wrote, which holds spaces of its own: a window
/// that ends inside `[withheld link 3]` leaves `3]` to begin the next, where a name could read
/// back over it.
fn in_marker(text: &str, at: usize) -> bool {
    // The longest marker is `[withheld link N]`, N a count.
    let around = text.floor_char_boundary(at.saturating_sub(40))..text.ceil_char_boundary(at + 40);
    let offset = around.start;
    crate::scrub::markers_in(&text[around])
        .iter()
        .any(|&(start, end)| offset + start < at && at < offset + end)
}

/// `text` in windows of about `size` bytes, each with its offset: the whole text when it is at
/// most twice as long, else cut where [`cuts_before`] says, or failing that for a window's
/// length, where [`cuts_between_words`] says, never inside a marker ([`in_marker`]). A text
/// with nowhere to cut for a long way makes a longer window.
fn windows(text: &str, size: usize) -> impl Iterator<Item = (usize, &str)> {
    crate::decoded::windows_cut(text, size, move |text, from| {
        let spaces = || memchr::memchr_iter(b' ', &text.as_bytes()[from..]).map(|k| from + k + 1);
        let reach = from.saturating_add(size);
        spaces()
            .take_while(|&cut| cut <= reach)
            .find(|&cut| cuts_before(text, cut) && !in_marker(text, cut))
            .or_else(|| {
                spaces().find(|&cut| {
                    ((cut > reach && cuts_before(text, cut)) || cuts_between_words(text, cut))
                        && !in_marker(text, cut)
                })
            })
    })
}

/// [`values_in`] on one text, its view made whole.
fn values_in_one(text: &str, withheld: &[(usize, usize)]) -> Vec<(usize, usize)> {
    if !may_hold(text) {
        return Vec::new();
    }
    // Printable ASCII with nothing to decode is its own view, but for case: no view to make.
    let view = (!is_plain(text)).then(|| View::of(text));
    let seen = view.as_ref().map_or(text, |view| view.text.as_str());
    let b = seen.as_bytes();
    // The bytes of the original a character of the view came from.
    let origin = |at: usize| {
        view.as_ref()
            .map_or((at, at + 1), |view| view.origin(at, at + 1))
    };
    // A name never reaches into what another rule withholds, nor into a marker redaction
    // wrote in its place, so withholding it never changes what a later name is: the `secret`
    // of `[withheld secret]` names nothing, in a text or in a layer decoded from it. (A cut
    // between windows never falls inside a marker.)
    let blocked = Blocked::new(withheld, crate::scrub::markers_in(text));
    let joins = |at: usize| !blocked.overlaps(origin(at - 1));
    let mut found: Vec<(usize, usize)> = Vec::new();
    for k in memchr::memchr2_iter(b'=', b':', b) {
        let colon = b[k] == b':';
        // `://` begins a url, `::` is a path in code.
        if colon
            && (b[k + 1..].starts_with(b"//")
                || b.get(k + 1) == Some(&b':')
                || (k > 0 && b[k - 1] == b':'))
        {
            continue;
        }
        // The name: back over white space and a closing quote, then its characters.
        let mut end = k;
        while end > 0 && b[end - 1] == b' ' {
            end -= 1;
        }
        if end > 0 && matches!(b[end - 1], b'"' | b'\'') {
            end -= 1;
        }
        let mut start = end;
        while start > 0
            && end - start < MAX_NAME_BYTES
            && in_name(b[start - 1])
            && (start == end || joins(start))
        {
            start -= 1;
        }
        let Some(strong) = name_holds_secret(&seen[start..end]) else {
            continue;
        };
        // The value: past white space and an opening quote, in the view.
        let mut from = k + 1;
        while from < b.len() && matches!(b[from], b' ' | b'"' | b'\'') {
            from += 1;
        }
        if from >= b.len() {
            continue;
        }
        let origin_start = view
            .as_ref()
            .map_or(from, |view| view.origin(from, from + 1).0);
        // The value is a run of token characters that ends where a value ends: a run that
        // goes on into a call or an expression (`TokenUrl::new(`) is code, not a value.
        let rest = &text[origin_start..];
        let run = rest
            .char_indices()
            .find(|&(_, c)| !is_token_char(c))
            .map_or(rest.len(), |(at, _)| at);
        if rest[run..].chars().next().is_some_and(|c| !ends_value(c)) {
            continue;
        }
        let value_end = origin_start + run;
        let value = &text[origin_start..value_end];
        let alnum = value.chars().filter(char::is_ascii_alphanumeric).count();
        let shaped = if strong {
            alnum >= MIN_VALUE_CHARS && (value.chars().any(|c| c.is_ascii_digit()) || alnum >= 32)
        } else {
            looks_random(value)
        };
        if shaped {
            found.push((origin_start, value_end));
        }
    }
    found.sort_unstable();
    found
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Two binary searches say what a look at every range says, empty ranges included.
        #[test]
        fn blocked_overlaps_what_some_range_overlaps(
            withheld in proptest::collection::vec((0usize..100, 0usize..30), 0..20),
            markers in proptest::collection::vec((0usize..100, 0usize..30), 0..5),
            spans in proptest::collection::vec((0usize..110, 0usize..5), 1..20),
        ) {
            let ranges = |drawn: &[(usize, usize)]| -> Vec<(usize, usize)> {
                drawn.iter().map(|&(start, length)| (start, start + length)).collect()
            };
            let (withheld, markers) = (ranges(&withheld), ranges(&markers));
            let blocked = Blocked::new(&withheld, markers.clone());
            for (start, end) in ranges(&spans) {
                let naive = withheld
                    .iter()
                    .chain(&markers)
                    .any(|&(s, e)| start < e && s < end);
                prop_assert_eq!(blocked.overlaps((start, end)), naive);
            }
        }
    }

    fn withheld(text: &str) -> Vec<&str> {
        values_in(text, &[])
            .into_iter()
            .map(|(s, e)| &text[s..e])
            .collect()
    }

    #[test]
    fn every_spelling_of_a_name_is_one_name() {
        for text in [
            "https://h.example/cb?oauth_token=Zx81kQ02mmYT",
            "see h.example/cb?accessToken=Zx81kQ02mmYT ok",
            "//h.example/x?api-key=Zx81kQ02mmYT",
            "x-api-key=Zx81kQ02mmYT",
            "auth[token]=Zx81kQ02mmYT",
            "https://app.example/#/callback?access_token=Zx81kQ02mmYT",
            "ACCESS%5FTOKEN=Zx81kQ02mmYT",
            "acc\u{034F}ess_tok\u{FE0F}en=Zx81kQ02mmYT",
            "https://h.example/a\\b?token=Zx81kQ02mmYT",
            "https://h.example/a^b?token=Zx81kQ02mmYT",
            "https://h.example/{a}?token=Zx81kQ02mmYT",
            "{\"access_token\": \"Zx81kQ02mmYT\"}",
            "ｔｏｋｅｎ=Zx81kQ02mmYT",
        ] {
            assert_eq!(withheld(text), ["Zx81kQ02mmYT"], "{text}");
        }
    }

    #[test]
    fn an_encoded_space_does_not_cut_a_value_short() {
        assert_eq!(withheld("?token=Zx81%20kQ02mmYT&x=1"), ["Zx81%20kQ02mmYT"]);
    }

    #[test]
    fn ordinary_parameters_are_kept() {
        for text in [
            "https://docs.example/search?q=rust&page=2",
            "key=value and code=200",
            "status: ok, token: see below",
            "a == b; x = 1",
            "https://example.com/path",
            "keyboard=qwerty",
            "monkey: banana",
        ] {
            assert!(withheld(text).is_empty(), "{text}: {:?}", withheld(text));
        }
    }

    #[test]
    fn a_marker_is_never_part_of_a_name() {
        // The fuzz target's case: the marker's own word before a `:` named nothing.
        assert!(withheld("see [withheld secret]see2j9x7q1:shpss_x7q11z").is_empty());
        assert_eq!(
            withheld("[withheld link]token=Zx81kQ02mmYT"),
            ["Zx81kQ02mmYT"]
        );
    }

    /// Pieces of text about parameters: names, separators, escapes that decode to them or to
    /// spaces, markers, invisible characters and words of every kind, side by side.
    const PIECES: &[&str] = &[
        "token",
        "api_key",
        "code",
        "=",
        ": ",
        " = ",
        " ",
        "  ",
        "\"",
        "'",
        "Zx81kQ02mmYT",
        "4f0AX4XfWh7r2k",
        "%20",
        "%3D",
        "%253D",
        "%2",
        "&amp;",
        "&#61;",
        "\\u003d",
        "\\\\",
        "\\n",
        "name%20with%2Fslash",
        "\u{200b}",
        "\u{e9}",
        "\u{4e2d}",
        "[withheld secret]",
        "[withheld link 3]",
        "[withheld",
        "secret]",
        "x",
        "7",
        ",",
        "\n",
    ];

    proptest! {
        /// A text read a window at a time, however small the windows, finds the values reading
        /// it whole finds, with what other rules withheld anywhere in it.
        #[test]
        fn windows_find_what_the_whole_text_finds(
            picks in proptest::collection::vec(0..PIECES.len(), 0..160),
            size in 1usize..80,
            withheld in proptest::collection::vec((0usize..400, 1usize..12), 0..4),
        ) {
            let text: String = picks.iter().map(|&i| PIECES[i]).collect();
            let withheld: Vec<(usize, usize)> = withheld
                .into_iter()
                .map(|(start, length)| (start.min(text.len()), (start + length).min(text.len())))
                .collect();
            prop_assert_eq!(
                values_in_windows(&text, &withheld, size),
                values_in_one(&text, &withheld),
                "{:?}", text
            );
        }
    }

    #[test]
    fn a_line_of_escaped_words_is_cut_between_them() {
        let text = "name%20with%2Fslash ".repeat(400);
        assert!(windows(&text, 100).count() > 10);
    }

    #[test]
    fn a_long_text_read_in_windows_finds_what_its_whole_view_finds() {
        // Lines of escapes and invisible characters, with parameters about every cut.
        let line = "x\"q\" \\ \t\u{e9}\u{1F600} token = Zx81kQ02mmYT%20 a&amp;key=4f0AX4XfWh7r2k ";
        let text = line.repeat(2 * REDACT_WINDOW / line.len() + 500);
        let withheld = [(10, 20), (REDACT_WINDOW + 5, REDACT_WINDOW + 9)];
        let windows: Vec<usize> = windows(&text, REDACT_WINDOW).map(|(at, _)| at).collect();
        assert!(windows.len() > 1, "the text is read in windows");
        let found = values_in(&text, &withheld);
        assert!(found.len() > 1000, "{}", found.len());
        assert_eq!(found, values_in_one(&text, &withheld));
    }

    #[test]
    fn folding_twice_reads_as_folding_once() {
        // A window's view stops decoding when its own text stops changing: it is the whole
        // view's stretch only if a fold of a folded character changes nothing.
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            if is_control_or_format(c) {
                continue;
            }
            let mut once = String::new();
            crate::unicode::fold(c, |f| once.push(f));
            let mut twice = String::new();
            for f in once.chars().filter(|&f| !is_control_or_format(f)) {
                crate::unicode::fold(f, |g| twice.push(g));
            }
            assert_eq!(once, twice, "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn a_random_value_of_a_weak_name_is_withheld() {
        assert_eq!(withheld("?code=4f0AX4XfWh7r2k"), ["4f0AX4XfWh7r2k"]);
        assert_eq!(withheld("signing_key: a81kq02mmyt9z"), ["a81kq02mmyt9z"]);
    }
}
