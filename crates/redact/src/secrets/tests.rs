//! Tests of the whole: spellings in contexts withheld, ordinary text left alone, odd input.

use std::borrow::Cow;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use proptest::prelude::*;

use crate::secrets::{Admitted, Secrets, spellings};

const MARKER: &str = "[withheld]";

fn secrets(list: &[&str]) -> Secrets {
    let mut secrets = Secrets::default();
    for s in list {
        assert_eq!(secrets.insert(s), Admitted::Searched, "{s}");
    }
    secrets
}

#[test]
fn admission() {
    let mut s = Secrets::default();
    assert_eq!(s.insert(""), Admitted::TooShort);
    assert_eq!(s.insert("ab-12-cd"), Admitted::TooShort);
    assert_eq!(s.insert("0000000000000000"), Admitted::TooCommon);
    assert_eq!(s.insert("12345678901"), Admitted::TooCommon);
    assert_eq!(s.insert("Password"), Admitted::TooCommon);
    assert_eq!(
        s.insert("correct horse battery staple"),
        Admitted::TooCommon
    );
    assert!(s.is_empty());
    assert_eq!(s.insert("123456789012"), Admitted::Searched);
    assert_eq!(s.insert("xkcdqrstvwbnmz"), Admitted::Searched);
    assert_eq!(s.insert("a8f3k2j9"), Admitted::Searched);
    assert_eq!(s.len(), 3);
}

#[test]
fn an_encoded_secret_is_searched_raw_and_decoded() {
    let s = secrets(&["sig%3DZm9vYmFy%2Bx"]);
    assert_eq!(s.len(), 2);
    assert_eq!(s.redact("a sig=Zm9vYmFy+x b", "#"), "a # b");
    assert_eq!(s.redact("a sig%3DZm9vYmFy%2Bx b", "#"), "a # b");
}

#[test]
fn nothing_found_is_borrowed() {
    let s = secrets(&["a8f3k2j9x7q1"]);
    let text = "%41 &amp; \\u0041 nothing here, QUJDREVGR0hJSktMTU5PUA==";
    assert!(matches!(s.redact(text, MARKER), Cow::Borrowed(t) if t == text));
    assert!(matches!(
        Secrets::default().redact(text, MARKER),
        Cow::Borrowed(_)
    ));
}

#[test]
fn each_occurrence_gets_one_marker_and_touching_ones_merge() {
    let s = secrets(&["abcdefgh12", "gh12ijklmn"]);
    assert_eq!(s.redact("x abcdefgh12ijklmn y", "#"), "x # y");
    assert_eq!(s.redact("abcdefgh12 abcdefgh12", "#"), "# #");
    assert_eq!(s.redact("AbCd.Efgh-12", "#"), "#");
}

#[test]
fn a_hit_in_base64_withholds_the_run() {
    let s = secrets(&["a8f3k2j9x7q1"]);
    let text = format!("see {} ok", STANDARD.encode("{\"key\": \"a8f3k2j9x7q1\"}"));
    assert_eq!(s.redact(&text, "#"), "see # ok");
}

#[test]
fn a_secret_may_start_inside_an_escape() {
    let s = secrets(&["4Fxyz12345"]);
    assert_eq!(s.redact("q?sig=4F%78yz12345&a=1", "#"), "q?sig=#&a=1");
    assert_eq!(s.redact("q?sig=4F=78yz12345&a=1", "#"), "q?sig=#&a=1");
    assert_eq!(s.redact("q?sig=4F%255Cx78yz12345&a=1", "#"), "q?sig=#&a=1");
    let b64 = STANDARD.encode("\u{4C0}4Fxyz12345");
    let text = format!(
        "q?sig={}%{:02X}{}&a=1",
        &b64[..6],
        b64.as_bytes()[6],
        &b64[7..]
    );
    assert_eq!(s.redact(&text, "#"), "q?sig=#&a=1", "{text}");
}

#[test]
fn debug_shows_no_secret() {
    let s = secrets(&["a8f3k2j9x7q1"]);
    let shown = format!("{s:?}");
    assert!(
        !shown.contains("a8f3") && shown.contains("Secrets"),
        "{shown}"
    );
}

#[test]
fn deep_and_large_input_is_bounded() {
    let s = secrets(&["a8f3k2j9x7q1"]);
    let deep = "%25".repeat(100_000) + "41";
    assert!(!s.contains_secret(&deep));
    let nested = (0..6).fold("a8f3k2j9x7q1".to_owned(), |t, _| STANDARD.encode(t));
    let _ = s.redact(&nested.repeat(200), "#");
    let escapes = "\\\\u0041&amp;#=3D=\n\\101".repeat(50_000);
    assert!(!s.contains_secret(&escapes));
    let wide: String = (0..200_000u32)
        .filter_map(|i| char::from_u32(0x80 + i * 7 % 0x10FF70))
        .collect();
    let _ = s.redact(&wide, "#");
}

fn alnum_secret() -> impl Strategy<Value = String> {
    let alnum: Vec<char> = ('a'..='z').chain('A'..='Z').chain('0'..='9').collect();
    prop::collection::vec(prop::sample::select(alnum), 12..=40)
        .prop_map(String::from_iter)
        .prop_filter("letters and digits", |s| {
            s.chars().any(|c| c.is_ascii_digit()) && s.chars().any(|c| c.is_ascii_alphabetic())
        })
}

fn token_secret() -> impl Strategy<Value = String> {
    prop::collection::vec(any::<u8>(), 12..=32).prop_map(|b| URL_SAFE_NO_PAD.encode(b))
}

fn ordinary_text() -> impl Strategy<Value = String> {
    let pieces = vec![
        "the",
        " ",
        "server",
        "said",
        "\n",
        "%41",
        "%",
        "\\u0041",
        "\\",
        "&amp;",
        "&#65;",
        "=3D",
        "=",
        "QUJDREVGR0hJSktMTU5PUA==",
        "ＡＢＣ",
        "\u{200B}",
        "é",
        "{\"k\": \"v\"}",
        "https://x.org/a?b=c&d",
        "abcdefghijklmnop/",
        "+",
        "code=4F",
        "\\uD835",
        "%F0%9F",
        "=\r\n",
    ];
    prop_oneof![
        any::<String>(),
        "[ -~]{0,300}",
        prop::collection::vec(prop::sample::select(pieces), 0..60).prop_map(|p| p.concat()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn every_spelling_in_every_context_is_withheld(
        (secret, (text, spelling, rules)) in prop_oneof![alnum_secret(), token_secret()]
            .prop_flat_map(|s| (Just(s.clone()), spellings::in_context(s)))
    ) {
        let mut s = Secrets::default();
        prop_assume!(s.insert(&secret) == Admitted::Searched);
        let out = s.redact(&text, MARKER);
        let why = format!("rules {rules:?}\ntext {text:?}\nout {out:?}");
        prop_assert!(out.contains(MARKER), "{}", why);
        prop_assert!(!out.contains(&secret), "{}", why);
        prop_assert!(!out.to_lowercase().contains(&secret.to_lowercase()), "{}", why);
        prop_assert!(!out.contains(&spelling), "{}", why);
        prop_assert!(!s.contains_secret(&out), "{}", why);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn text_without_a_secret_comes_back_byte_for_byte(text in ordinary_text(), secret in alnum_secret()) {
        let mut s = Secrets::default();
        s.insert(&secret);
        s.insert("a8f3k2j9x7q1");
        let out = s.redact(&text, MARKER);
        prop_assert!(matches!(out, Cow::Borrowed(t) if t == text), "{:?}", out);
    }
}

/// The spelling of a secret, ordinary text, or text with no place to cut but between
/// characters outside ASCII.
fn piece(secret: String) -> impl Strategy<Value = String> {
    prop_oneof![
        spellings::spelled(secret).prop_map(|(text, _)| text),
        ordinary_text(),
        prop::collection::vec(
            prop::sample::select(vec!["\u{4e2d}", "\u{6587}", "é", "ＡＢ", " ", "%E4%B8%AD"]),
            0..20
        )
        .prop_map(|p| p.concat()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// A text searched a window at a time, however small the windows, is withheld where the
    /// whole text's search withholds it.
    #[test]
    fn windows_find_what_the_whole_search_finds(
        (secret, pieces) in alnum_secret().prop_flat_map(|s| {
            (Just(s.clone()), prop::collection::vec(piece(s), 0..8))
        }),
        size in 1usize..120,
    ) {
        let mut s = Secrets::default();
        prop_assume!(s.insert(&secret) == Admitted::Searched);
        s.insert("a8f3k2j9x7q1");
        let text = pieces.concat();
        let matcher = s.matcher.get_or_init(|| super::build(&s.skeletons)).clone();
        let matcher = matcher.expect("an automaton over two secrets");
        let (windowed, forced) = crate::secrets::scan::find_in_windows(&matcher, &text, size);
        // A cut forced inside a run may leave a spelling longer than the windows share in no
        // one window: the next test places spellings as the windows a host uses would read them.
        if !forced {
            prop_assert_eq!(windowed, s.hits(&text), "{:?}", text);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// A plain text's walk in place finds every hit, with the same bounds, that the walk over
    /// a skeleton built from the text's units finds: two secrets, whole and cut by punctuation,
    /// among ASCII text (a plain text's skeleton holds ASCII letters and digits alone).
    #[test]
    fn the_walk_in_place_finds_what_the_built_skeleton_finds(
        a in alnum_secret(),
        b in alnum_secret(),
        around in prop::collection::vec("[ -~]{0,80}", 3),
        cut in prop::sample::select(vec!["", "-", " ", "::", "\n", "_."]),
    ) {
        let mut s = Secrets::default();
        prop_assume!(s.insert(&a) == Admitted::Searched && s.insert(&b) == Admitted::Searched);
        let split = |s: &str| format!("{}{cut}{}", &s[..s.len() / 2], &s[s.len() / 2..]);
        let text = format!(
            "{}{a}{}{}{}{b}{}",
            around[0], split(&b), around[1], split(&a), around[2]
        );
        let matcher = s.matcher.get_or_init(|| super::build(&s.skeletons)).clone();
        let matcher = matcher.expect("an automaton over two secrets");
        let [in_place, built] = crate::secrets::scan::plain_and_built(&matcher, &text);
        prop_assert!(!built.is_empty(), "{:?}", text);
        prop_assert_eq!(in_place, built, "{:?}", text);
    }
}

/// A stretch with no place to cut: base64 letters, escapes and punctuation, no white space.
fn uncut_stretch(len: usize) -> impl Strategy<Value = String> {
    let pieces = vec![
        "QUJD", "x9", "+/", "-_", "%41", r"\u0041", "=3D", "&#x41;", "\"", ",", "ab",
    ];
    prop::collection::vec(prop::sample::select(pieces), len / 3..len / 2).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A spelling of a secret anywhere in a long stretch with no place to cut, which the search
    /// cuts anyway (decision 0143), is withheld wherever the whole text's search withholds it:
    /// the windows a host uses share far more than a spelling spans.
    #[test]
    fn a_forced_cut_withholds_what_the_whole_search_withholds(
        (secret, (spelling, _)) in alnum_secret()
            .prop_flat_map(|s| (Just(s.clone()), spellings::spelled(s))),
        before in uncut_stretch(100_000),
        after in uncut_stretch(100_000),
    ) {
        let mut s = Secrets::default();
        prop_assume!(s.insert(&secret) == Admitted::Searched);
        prop_assume!(!spelling.contains(char::is_whitespace));
        let text = format!("{before}{spelling}{after}");
        let matcher = s.matcher.get_or_init(|| super::build(&s.skeletons)).clone();
        let matcher = matcher.expect("an automaton over one secret");
        let (windowed, forced) = crate::secrets::scan::find_in_windows(&matcher, &text, 1 << 16);
        // A spelling outside ASCII may hold a place to cut.
        prop_assume!(forced);
        let covered = |hits: &[(usize, usize)], at: usize| hits.iter().any(|&(s, e)| s <= at && at < e);
        let whole = s.hits(&text);
        let spelled = before.len()..before.len() + spelling.len();
        for at in spelled {
            prop_assert!(
                !covered(&whole, at) || covered(&windowed, at),
                "byte {} of {:?} withheld whole, not in windows", at, spelling
            );
        }
    }
}

/// A short label asks the secrets nothing they must build an automaton for; a text as long
/// as the shortest secret's skeleton still does, and is found (decision 0158).
#[test]
fn a_text_shorter_than_every_secret_builds_no_automaton() {
    let s = secrets(&["a8f3k2j9x7q1", "zq81pw0x6n2k4m9t"]);
    for short in ["f12", "a8f3k2j9x7q", "A8F3-k2j9_x", ""] {
        assert!(s.hits(short).is_empty(), "{short}");
    }
    assert!(s.matcher.get().is_none());
    // An escape or a non-ASCII character may read as more: the automaton is built then.
    assert_eq!(s.hits("a8f3k2j9x7q%31"), [(0, 14)]);
    assert!(s.matcher.get().is_some());
    assert_eq!(s.hits("A8F3-k2j9_x7q1"), [(0, 14)]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// A text the quick answer calls too short holds no secret for the automaton either: the
    /// oracle is the automaton's own search of the text.
    #[test]
    fn a_text_called_too_short_holds_no_secret(
        secret in prop_oneof![alnum_secret(), token_secret()],
        text in prop::collection::vec(
            prop_oneof![
                prop::char::range('\u{0}', '\u{7f}').prop_map(String::from),
                prop::sample::select(vec!["%41", "\\u0041", "&#65;", "=41", "A", "7", "\u{fdfa}", "ﬁ"])
                    .prop_map(str::to_owned),
            ],
            0..16,
        ).prop_map(|pieces| pieces.concat()),
    ) {
        let mut s = Secrets::default();
        prop_assume!(s.insert(&secret) == Admitted::Searched);
        let matcher = super::build(&s.skeletons).expect("an automaton over one secret");
        if s.too_short_for_any(&text) {
            prop_assert!(crate::secrets::scan::find(&matcher, &text).is_empty(), "{:?}", text);
        }
    }
}
