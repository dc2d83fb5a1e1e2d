//! The normalised view redaction searches, the session's hidden set, and what makes a url
//! credential-shaped.
//!
//! A server's string is never searched as it came. Its view drops control and format
//! characters, folds ASCII to lower case, and decodes percent-encoding, JSON string escapes and
//! HTML character references, layer on layer (at most [`DECODE_LAYERS`]), keeping for every
//! byte of the view the bytes of the original it came from. A match in the view replaces exactly
//! those original bytes, so text outside a match is kept byte for byte.

use std::collections::HashSet;

use crate::unicode::{fold, folds_to_itself};

/// What a hidden uri becomes wherever it appears in a server's string.
pub const WITHHELD_LINK: &str = "[withheld link]";

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
                push_folded(&mut out, &mut segs, c, i, len);
            }
            i += len;
            continue;
        }
        let Some(c) = source[i..].chars().next() else {
            break;
        };
        if !c.is_ascii() && !is_control_or_format(c) && !folds_to_itself(c) {
            // A character whose compatibility form or lower case differs stands alone.
            push_folded(&mut out, &mut segs, c, i, c.len_utf8());
        } else if !is_control_or_format(c) {
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

/// What `c`, read from `len` bytes at `from`, reads as in the view, each character of it
/// mapped back to those bytes.
fn push_folded(out: &mut String, segs: &mut Vec<Seg>, c: char, from: usize, len: usize) {
    fold(c, |folded| {
        segs.push(Seg {
            view: out.len(),
            from,
            from_len: len,
            linear: false,
        });
        out.push(folded);
    });
}

/// Whether the view drops a character: a control character, a format character that hides or
/// reorders text, or any other Default_Ignorable_Code_Point (`unicode::is_dropped`).
pub fn is_control_or_format(c: char) -> bool {
    crate::unicode::is_dropped(c)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hidden::*;
    use crate::search::*;
    use crate::uri::*;

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
        let urls: Vec<&str> = urls_in(view).iter().map(|&(s, e)| &view[s..e]).collect();
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
            .map(|&(s, e)| &nested[s..e])
            .collect();
        assert_eq!(urls, [nested, "https://u:p@b.example/"]);
        assert_eq!(credentials(nested), [(9, nested.len(), true)]);
    }

    /// The redaction doc states the limits on remembered urls as the code has them.
    #[test]
    fn the_redaction_doc_names_the_limits_on_remembered_urls() {
        let doc = include_str!("../../../docs/redaction.md").replace("\n   ", " ");
        for claim in [
            format!("`MAX_URLS_PER_STRETCH` = {MAX_URLS_PER_STRETCH}"),
            format!(
                "`MAX_URL_BYTES` = {},{:03} bytes",
                MAX_URL_BYTES / 1000,
                MAX_URL_BYTES % 1000
            ),
            "only a credential-shaped one is withheld".to_owned(),
            format!(
                "(`HIDDEN_SET_CAPACITY` = {},{:03}) is not run again",
                HIDDEN_SET_CAPACITY / 1000,
                HIDDEN_SET_CAPACITY % 1000
            ),
        ] {
            assert!(doc.contains(&claim), "{claim}");
        }
    }

    /// What [`credential_urls`] gives for a view: each range and whether it is remembered.
    fn credentials(view: &str) -> Vec<(usize, usize, bool)> {
        let mut found = Vec::new();
        credential_urls(view, |start, end, remember| {
            found.push((start, end, remember))
        });
        found
    }

    /// A list of urls one a text block joins into one stretch, each url running to its end.
    /// Every url is judged as it would be alone with the rest of the stretch, in linear time:
    /// none is withheld for being crowded or long (a list of 400 plain links was withheld
    /// whole), and a credential-shaped one withholds the stretch from where it starts.
    #[test]
    fn every_url_of_a_long_stretch_is_judged_in_linear_time() {
        let list = |n: usize, odd: Option<(usize, &str)>| -> String {
            (0..n)
                .map(|i| match odd {
                    Some((at, url)) if at == i => url.to_owned(),
                    _ => format!("https://a.example/files/{i}"),
                })
                .collect()
        };
        for n in [33, 400, 100_000] {
            assert_eq!(credentials(&list(n, None)), []);
        }
        // Userinfo is the url's own: the urls before it are credential-free.
        let stretch = list(100_000, Some((40, "https://u:p@b.example/")));
        let at = stretch.find("https://u:p@").unwrap();
        assert_eq!(credentials(&stretch), [(at, stretch.len(), false)]);
        // A query reaches every url before it: the first url is credential-shaped, and none of
        // the first 32 is short enough to remember.
        let stretch = list(100_000, Some((50_000, "https://b.example/?token=SECRET")));
        assert_eq!(credentials(&stretch), [(0, stretch.len(), false)]);
        // A short stretch remembers its first 32 credential-shaped urls.
        let stretch = list(40, Some((39, "https://b.example/#sig=SECRET")));
        let found = credentials(&stretch);
        assert_eq!(found.len(), MAX_URLS_PER_STRETCH);
        assert!(
            found
                .iter()
                .all(|&(_, end, remember)| remember && end == stretch.len())
        );
        let long = format!(
            "see https://a.example/{}?token=1 now",
            "x".repeat(MAX_URL_BYTES)
        );
        assert_eq!(credentials(&long), [(4, long.len() - 4, false)]);
    }

    #[test]
    fn a_compiled_set_searched_by_tails_keeps_no_table_of_its_patterns_and_still_finds_them() {
        let uris: Vec<String> = (0..5000)
            .map(|i| format!("https://h.example/r/{i}?sig=s{i}"))
            .collect();
        let uris: Vec<&str> = uris.iter().map(String::as_str).collect();
        let compiled = HiddenSet::new().hide_result(&uris, &[]);
        let search = compiled.search();
        assert!(
            matches!(search.searcher, Some(Searcher::ByTail { .. })),
            "{:?}",
            search.searcher.as_ref().map(|_| ())
        );
        // The table that found a pattern again is gone; the keys keep theirs.
        let patterns = compiled.patterns();
        assert!(patterns.len() > uris.len());
        assert!(!patterns.contains(uris[4321]));
        assert!(compiled.keys.contains(uris[4321]));
        let text = format!("see {} and sig=s4321 now", uris[4321]);
        let found = search
            .searcher
            .as_ref()
            .map(|searcher| searcher.find_all(patterns, &text))
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
        set.hide_result(&["demo://earlier/one", "demo://earlier/two"], &[]);
        let mut uris = vec!["demo://earlier/two".to_owned()];
        uris.extend((0..HIDDEN_SET_CAPACITY + 10).map(|n| format!("demo://resource/{n}")));
        let uris: Vec<&str> = uris.iter().map(String::as_str).collect();
        let compiled = set.hide_result(&uris, &[]);
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
        set.hide_result(&uris, &[]);
        // The oldest uri again, and one new one that pushes it out of the full set.
        let compiled = set.hide_result(&["demo://resource/0", "demo://resource/new"], &[]);
        assert!(!set.contains("demo://resource/0"));
        assert!(compiled.keys.contains("demo://resource/0"));
        assert!(compiled.patterns().contains("demo://resource/0"));
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
        let compiled = set.hide_result(&uris, &[]);
        assert!(compiled.is_searched());
        assert!(compiled.search.get().is_none());
        // Every pattern without `://` is a query or a credential value, with its `=` or not.
        assert_eq!(compiled.anchors, None);
        let search = compiled.search();
        assert!(std::ptr::eq(search, compiled.search()));
        let last = canonical(uris[count - 1]);
        let patterns = compiled.patterns();
        let found = search
            .searcher
            .as_ref()
            .map(|searcher| searcher.find_all(patterns, &last))
            .unwrap_or_default();
        assert_eq!(found.first(), Some(&(0, last.len())));
        // The url found alone is searched for by itself, not by its parts.
        let found_key = canonical("https://found.example/?token=abcdefgh");
        let alone_parts = patterns
            .iter()
            .filter(|pattern| *pattern == "abcdefgh" || *pattern == "token=abcdefgh")
            .count();
        assert_eq!(alone_parts, 0);
        assert_eq!(
            patterns.iter().any(|pattern| pattern == found_key),
            count <= HIDDEN_SET_CAPACITY
        );
    }

    #[test]
    fn a_url_found_in_text_and_then_carried_by_a_result_is_searched_for_by_its_parts() {
        let mut set = HiddenSet::new();
        let key = canonical("https://a.example/f?token=0123456789abcdef");
        assert!(set.insert_found(key));
        let compiled = set.hide_result(&["https://a.example/f?token=0123456789abcdef"], &[]);
        assert!(compiled.patterns().contains("0123456789abcdef"));
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

    /// The words random views are made of: schemes, authorities, userinfo, queries and
    /// fragments with credential names and others, separators, JWT pieces, terminators and
    /// trailing punctuation, so that urls nest, share stretches and end in every way.
    const URL_WORDS: &[&str] = &[
        "https://",
        "a://",
        "://",
        "x+y.z://",
        "1://",
        "a.example",
        "/",
        "/p",
        "u:p@",
        "@",
        "?",
        "#",
        "&",
        ";",
        "=",
        "=v",
        "token",
        "token=s",
        "tokens=s",
        "sig=",
        "x-amz-signature=",
        "code=1",
        "access_token",
        "eyj",
        "eyjaaaaaaaaaa",
        "aaaaaaaaaaa",
        ".",
        "-",
        "_",
        " ",
        "\n",
        "\"",
        "<",
        ",",
        ":",
        "!",
        "é",
        "jwt=x&",
        "?a=1&token=t#k",
        "#sig=1",
    ];

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

        /// Every url of a view is judged as `is_credential_shaped` judges it alone: the
        /// ranges given cover exactly the credential-shaped urls, and those remembered are the
        /// credential-shaped among each stretch's first `MAX_URLS_PER_STRETCH` (a stretch's
        /// urls share their end), none longer than `MAX_URL_BYTES`.
        #[test]
        fn credential_urls_judge_every_url_as_it_is_judged_alone(
            words in proptest::collection::vec(proptest::sample::select(URL_WORDS), 0..80),
        ) {
            let view = words.concat();
            let urls = urls_in(&view);
            let shaped: Vec<(usize, usize)> = urls
                .iter()
                .copied()
                .filter(|&(s, e)| is_credential_shaped(&view[s..e]))
                .collect();
            let mut remembered = Vec::new();
            let mut covered = vec![false; view.len()];
            for &(s, e) in &shaped {
                let place = urls.iter().filter(|&&(_, end)| end == e).position(|&u| u == (s, e));
                if place.is_some_and(|p| p < MAX_URLS_PER_STRETCH) && e - s <= MAX_URL_BYTES {
                    remembered.push((s, e));
                }
                covered[s..e].iter_mut().for_each(|c| *c = true);
            }
            let found = credentials(&view);
            let mut given = vec![false; view.len()];
            for &(s, e, _) in &found {
                proptest::prop_assert!(shaped.contains(&(s, e)), "{:?} in {:?}", (s, e), view);
                given[s..e].iter_mut().for_each(|c| *c = true);
            }
            proptest::prop_assert_eq!(given, covered, "{:?}", view);
            let kept: Vec<(usize, usize)> =
                found.iter().filter(|f| f.2).map(|&(s, e, _)| (s, e)).collect();
            proptest::prop_assert_eq!(kept, remembered, "{:?}", view);
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
            // Every other pattern is added as a slice of the base, the rest as copies.
            let base = patterns.concat();
            let mut by_table = Gathering::by_table(&base);
            let mut by_tails = Gathering::by_tails(&base, 0);
            let mut at = 0;
            for (n, pattern) in patterns.iter().enumerate() {
                let added = match n % 2 {
                    0 => &base[at..at + pattern.len()],
                    _ => pattern.as_str(),
                };
                by_table.add(added);
                by_tails.add(added);
                at += pattern.len();
            }
            let (by_table, by_tails) = (by_table.finish(), by_tails.finish());
            let (read_table, read_tails) = (by_table.patterns.over(&base), by_tails.patterns.over(&base));
            proptest::prop_assert!(read_table.iter().eq(read_tails.iter()));
            let kind = |search: &Search| search.searcher.as_ref().map(std::mem::discriminant);
            proptest::prop_assert_eq!(kind(&by_table), kind(&by_tails));
            let found = |search: &Search| {
                search
                    .searcher
                    .as_ref()
                    .map(|searcher| searcher.find_all(search.patterns.over(&base), &text))
            };
            proptest::prop_assert_eq!(found(&by_table), found(&by_tails));
            if matches!(by_tails.searcher, Some(Searcher::ByPrefix { .. })) {
                for pattern in &patterns {
                    proptest::prop_assert!(read_tails.contains(pattern));
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
            for pattern in compiled.patterns().iter() {
                built.note(pattern);
            }
            proptest::prop_assert_eq!(compiled.anchors, built.mask.map(Anchors::of_mask));
            // The shortest length read from the forms is the shortest pattern's.
            let shortest = compiled.patterns().iter().map(str::len).min();
            for length in [0, 1, 31, 32, 33, 36, 48, 64] {
                proptest::prop_assert_eq!(
                    compiled.may_hold_a_pattern(length),
                    shortest.is_some_and(|shortest| length >= shortest)
                );
            }
            proptest::prop_assert_eq!(compiled.is_searched(), compiled.patterns().len() > 0);
            proptest::prop_assert_eq!(compiled.is_searched(), search.searcher.is_some());
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 12,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// A result of more uris than the session keeps, read from bytes, keeps each uri that
        /// folds to its canonical form as a span of the bytes (decision 0164), and its set
        /// reads as one that copies every form: the same forms in the same order, the same
        /// answers, patterns, anchors and matches. Spellings draw on capital letters, default
        /// ports, trailing slashes and escapes (which fold to no form of theirs and are
        /// copied), and repeat one another.
        #[test]
        fn a_set_borrowing_a_results_uris_reads_as_one_that_copies_them(
            extra in 1usize..40,
            spellings in proptest::collection::vec(
                (
                    "(https|HTTPS|Http|demo)://(h|H)\\.(example|EXAMPLE)(:443)?",
                    "/(r|R|l)",
                    "(\\?(sig|Sig|X-Amz-Signature)=[a-fA-F0-9]{8,16})?(/|%41|%2F)?",
                ),
                1..8,
            ),
            seed in 0usize..1000,
        ) {
            // The bytes a result was read from: each uri in quotes, between commas. More
            // numbers than the set keeps, each spelled as its place draws; one uri in seven
            // repeats an earlier number, in the spelling of its own place.
            let numbers = HIDDEN_SET_CAPACITY + extra;
            let mut source = String::from("[");
            let mut ranges = Vec::with_capacity(numbers * 7 / 6);
            let mut place = 0;
            for n in 0..numbers {
                let repeat = (n % 6 == 5).then_some(n / 2);
                for n in std::iter::once(n).chain(repeat) {
                    let (scheme, path, rest) = &spellings[(place + seed) % spellings.len()];
                    place += 1;
                    let uri = format!("{scheme}{path}/{n}{rest}");
                    source.push('"');
                    ranges.push(source.len()..source.len() + uri.len());
                    source.push_str(&uri);
                    source.push_str("\",");
                }
            }
            source.push(']');
            let borrowed: Vec<&str> = ranges.iter().map(|r| &source[r.clone()]).collect();
            let copied: Vec<String> = borrowed.iter().map(|uri| (*uri).to_owned()).collect();
            let copied: Vec<&str> = copied.iter().map(String::as_str).collect();
            let lent = HiddenSet::new().hide_result(&borrowed, source.as_bytes());
            let kept = HiddenSet::new().hide_result(&copied, &[]);
            proptest::prop_assert!(lent.fills_the_set && kept.fills_the_set);
            proptest::prop_assert!(!kept.keys.borrows());
            // Every uri that folds to its form is borrowed; only the others are copied.
            let folding = borrowed
                .iter()
                .any(|uri| spells(uri, &canonical(uri)));
            proptest::prop_assert_eq!(lent.keys.borrows(), folding);
            let forms = |compiled: &Compiled<'_>| -> Vec<String> {
                compiled.keys.iter().map(std::borrow::Cow::into_owned).collect()
            };
            proptest::prop_assert_eq!(forms(&lent), forms(&kept));
            proptest::prop_assert_eq!(lent.keys.len(), kept.keys.len());
            proptest::prop_assert!(lent.keys.own().len() <= kept.keys.own().len());
            if folding {
                proptest::prop_assert!(lent.keys.own().len() < kept.keys.own().len());
            }
            for uri in &borrowed {
                let form = canonical(uri);
                proptest::prop_assert!(lent.keys.contains(&form), "{}", form);
                let other = format!("{form}~");
                proptest::prop_assert!(!lent.keys.contains(&other));
            }
            proptest::prop_assert_eq!(lent.anchors, kept.anchors);
            proptest::prop_assert_eq!(lent.is_searched(), kept.is_searched());
            for length in [8, 20, 24, 32, 40] {
                proptest::prop_assert_eq!(
                    lent.may_hold_a_pattern(length),
                    kept.may_hold_a_pattern(length)
                );
            }
            let lent_patterns: Vec<&str> = lent.patterns().iter().collect();
            let kept_patterns: Vec<&str> = kept.patterns().iter().collect();
            proptest::prop_assert_eq!(&lent_patterns, &kept_patterns);
            // A uri quoted in text, in another case, is found by both at the same places.
            let quoted = borrowed[(seed * 31) % borrowed.len()].to_ascii_uppercase();
            let text = View::of(&format!("see {quoted} and more")).text;
            let find = |compiled: &Compiled<'_>| {
                compiled
                    .searcher()
                    .map(|(searcher, patterns)| searcher.find_all(patterns, &text))
                    .unwrap_or_default()
            };
            let found = find(&lent);
            proptest::prop_assert!(!found.is_empty(), "{}", text);
            proptest::prop_assert_eq!(found, find(&kept));
        }
    }

    #[test]
    fn a_set_reads_only_its_borrowed_spellings_in_lower_case() {
        let base = "x HTTPS://A.example/Q y";
        let mut set = Strings::borrowing(base, 4);
        assert!(set.insert_spelled(&base[2..21], "https://a.example/q"));
        // A copy is kept as it is, capitals and all.
        assert!(set.insert("Copied/AS-IS"));
        assert!(!set.insert("https://a.example/q"));
        assert!(set.contains("https://a.example/q"));
        assert!(!set.contains("HTTPS://A.example/Q"));
        assert!(set.contains("Copied/AS-IS"));
        assert!(!set.contains("copied/as-is"));
        let forms: Vec<String> = set.iter().map(std::borrow::Cow::into_owned).collect();
        assert_eq!(forms, ["https://a.example/q", "Copied/AS-IS"]);
        assert_eq!(set.own(), "Copied/AS-IS");
        assert!(set.borrows());
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
        set.hide_result(&uris[..HIDDEN_SET_CAPACITY], &[]);
        assert!(set.contains("demo://resource/0"));
        set.hide_result(&uris[HIDDEN_SET_CAPACITY..], &[]);
        assert_eq!(set.len(), HIDDEN_SET_CAPACITY);
        assert!(!set.contains("demo://resource/0"));
        assert!(set.contains("demo://resource/1"));
        assert!(set.contains(&format!("DEMO://resource/{HIDDEN_SET_CAPACITY}")));
    }
}
