//! Issue 13, "no credential reaches the model": every case it lists, through every lane, the
//! script view and the spill text. Each test names the secret that must not appear.

use mcpl_lanes::{Route, ToolResult, UriPolicy};
use serde_json::{Value, json};

use crate::Host;

const SIGNED: &str = "https://files.example.com/reports/q3.pdf?token=SECRETTOKEN123";

/// Every text a model could see for `result` on one host: every lane, the script view, a
/// script's field, and the spill text (payloads attached by name).
fn outputs(host: &mut Host, result: &Value, policy: UriPolicy) -> Vec<String> {
    let lanes = host.all_lanes(result, policy);
    let mut texts = lanes.result_texts();
    texts.extend(lanes.message_texts());
    let read = mcpl_lanes::ResultView::of_value(result);
    let parsed = ToolResult::from_view(&read);
    let spill = host
        .on(&Route::ANTHROPIC, policy)
        .tool_result_spill(&parsed, &mut |_, _| "[attachment]".to_owned());
    texts.push(spill.into_owned());
    texts
}

#[track_caller]
fn assert_absent(texts: &[String], secret: &str) {
    for text in texts {
        assert!(!text.contains(secret), "{secret} shown in {text}");
    }
}

fn shown(result: &Value, policy: UriPolicy) -> Vec<String> {
    outputs(&mut Host::new(), result, policy)
}

fn link(uri: &str) -> Value {
    json!({"type": "resource_link", "uri": uri, "name": "report"})
}

#[test]
fn a_label_is_sanitised_before_it_is_searched() {
    for mark in ['\u{0}', '\u{202e}', '\u{85}', '\u{200b}', '\u{feff}'] {
        let spelled = SIGNED.replace("token", &format!("tok{mark}en"));
        for block in [
            json!({"type": "resource_link", "uri": SIGNED, "name": spelled}),
            json!({"type": "resource_link", "uri": SIGNED, "name": "r", "mimeType": spelled}),
            json!({"type": "resource", "resource": {"uri": SIGNED, "blob": "AAAA", "mimeType": spelled}}),
        ] {
            assert_absent(
                &shown(&json!({"content": [block]}), UriPolicy::Hidden),
                "SECRET",
            );
        }
        let unknown = json!({"content": [link(SIGNED), {"type": spelled}]});
        assert_absent(&shown(&unknown, UriPolicy::Hidden), "SECRET");
    }
}

/// The spellings issue 13 lists, of `uri`: JSON's `\/` and `\u00XX` escapes, HTML character
/// references, upper case, percent-encoding, and lower case.
fn spellings(uri: &str) -> Vec<String> {
    let escaped = |c: char, with: &str| uri.replace(c, with);
    vec![
        escaped('/', "\\/"),
        escaped('=', "\\u003d"),
        escaped('&', "\\u0026"),
        escaped('&', "&amp;"),
        escaped(':', "&#58;"),
        escaped('/', "&#x2F;"),
        escaped('/', "&sol;"),
        uri.to_uppercase(),
        uri.to_lowercase(),
        escaped('/', "%2F"),
        escaped(':', "%3a"),
        uri.chars().map(|c| format!("%{:02X}", c as u32)).collect(),
    ]
}

#[test]
fn every_spelling_of_a_hidden_uri_is_redacted() {
    // One credential-shaped uri (the scan would withhold it unclaimed), and one that only the
    // block's claim hides; the block's own uri is in upper case.
    for (uri, secret) in [
        (
            "https://files.example.com/q3.pdf?a=1&token=SECRETTOKEN123",
            "secrettoken123",
        ),
        ("demo://resource/private-report-7&x=1", "private-report-7"),
    ] {
        for spelled in spellings(uri) {
            let result = json!({"content": [
                link(&uri.to_uppercase()),
                {"type": "text", "text": format!("see {spelled} now")},
            ]});
            for text in shown(&result, UriPolicy::Hidden) {
                assert!(!text.to_lowercase().contains(secret), "{spelled}: {text}");
            }
        }
    }
}

#[test]
fn a_uri_split_across_adjacent_text_blocks_is_redacted() {
    let (head, tail) = SIGNED.split_at(30);
    let result = json!({"content": [
        link(SIGNED),
        {"type": "text", "text": format!("see {head}")},
        {"type": "text", "text": format!("{tail} now")},
    ]});
    let texts = shown(&result, UriPolicy::Hidden);
    assert_absent(&texts, "SECRETTOKEN123");
    assert_absent(&texts, "?token=");
}

#[test]
fn never_is_read_whatever_its_case() {
    let uri = "https://files.example.com/reports/q3.pdf";
    let result = json!({"content": [
        {"type": "resource", "uri": uri, "name": "r", "disposition": "NEVER"},
        {"type": "resource_link", "uri": uri, "name": "again"},
        {"type": "text", "text": format!("at {uri}")},
    ]});
    assert_absent(&shown(&result, UriPolicy::CredentialFree), uri);
}

#[test]
fn never_holds_for_case_trailing_slash_and_default_port() {
    let uri = "https://files.example.com/reports/q3.pdf";
    for variant in [
        "HTTPS://FILES.EXAMPLE.COM/reports/q3.pdf",
        "https://files.example.com/reports/q3.pdf/",
        "https://files.example.com:443/reports/q3.pdf",
    ] {
        let result = json!({"content": [
            {"type": "resource", "uri": uri, "name": "r", "disposition": "never"},
            {"type": "resource_link", "uri": variant, "name": "again"},
            {"type": "text", "text": format!("at {variant}")},
        ]});
        let texts = shown(&result, UriPolicy::CredentialFree);
        assert_absent(&texts, "q3.pdf");
    }
}

#[test]
fn credential_free_means_free_of_credentials() {
    for hidden in [
        "https://files.example.com/dl/8f3kQ9zXw2LmP4vR7tYb1NcA6sDe/report.pdf",
        "https://files.example.com/a%3Ftoken=SECRET",
        "https://files.example.com/a%23access_token=SECRET",
        "https://files.example.com/a%253Ftoken=SECRET",
    ] {
        assert!(!mcpl_lanes::is_credential_free(hidden), "{hidden}");
        let texts = shown(
            &json!({"content": [link(hidden)]}),
            UriPolicy::CredentialFree,
        );
        assert_absent(&texts, "files.example.com");
    }
}

#[test]
fn a_hidden_uri_stays_hidden_for_the_whole_session() {
    // Not credential-shaped, so only the session's memory can hide it in later results.
    let uri = "demo://resource/private-report-7";
    let mut host = Host::new();
    let first = json!({"content": [link(uri)]});
    assert_absent(&outputs(&mut host, &first, UriPolicy::Hidden), uri);
    let later = json!({"content": [{"type": "text", "text": format!("it was {uri}")}]});
    let texts = outputs(&mut host, &later, UriPolicy::CredentialFree);
    assert_absent(&texts, uri);
    let injected = host
        .on(&Route::ANTHROPIC, UriPolicy::Hidden)
        .injection_system(&later["content"]);
    assert!(!injected.contains(uri), "{injected}");
}

#[test]
fn unclaimed_credential_shaped_urls_are_withheld() {
    for (url, secret) in [
        (
            "https://bucket.s3.amazonaws.com/k.pdf?X-Amz-Credential=AKIAEXAMPLE&X-Amz-Signature=f00dfeed",
            "f00dfeed",
        ),
        ("https://alice:hunter2@host.example.com/x", "hunter2"),
        (
            "https://api.example.com/v1?access_token=ya29SECRET",
            "ya29SECRET",
        ),
        ("https://api.example.com/cb#id_token=abcSECRET", "abcSECRET"),
        (
            "https://x.blob.core.windows.net/c/b?sv=2020&sp=r&se=2030&sig=AzSECRET",
            "AzSECRET",
        ),
        (
            "https://api.example.com/v1/eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
        ),
        ("https://api.example.com/v1?API_KEY=k3ySECRET", "k3ySECRET"),
    ] {
        let result = json!({"content": [{"type": "text", "text": format!("fetch {url} please")}]});
        let texts = shown(&result, UriPolicy::Hidden);
        assert_absent(&texts, secret);
        assert!(
            texts[0].starts_with("fetch [withheld link] please"),
            "{}",
            texts[0]
        );
    }
}

#[test]
fn uris_used_as_keys_become_distinct_placeholders_and_no_value_is_lost() {
    let (a, b) = (
        "https://files.example.com/a?token=ONE111",
        "https://files.example.com/b?token=TWO222",
    );
    let result = json!({
        "content": [link(a), link(b)],
        "structuredContent": {a: {"rows": 111}, b: {"rows": 222}},
    });
    let texts = shown(&result, UriPolicy::Hidden);
    // The stored copy, the live copies, the script view and the spill keep both values.
    for text in texts.iter().take(4).chain(texts.last()) {
        assert!(text.contains("111") && text.contains("222"), "{text}");
    }
    assert_absent(&texts, "ONE111");
    assert_absent(&texts, "TWO222");
    let stored = &texts[0];
    assert!(
        stored.contains(r#"{"[withheld link 1]":{"rows":111},"[withheld link 2]":{"rows":222}}"#),
        "{stored}"
    );
}

/// Ordinary documentation and repository links: none is credential-shaped, so text holding them
/// comes through byte for byte.
const BENIGN_LINKS: &[&str] = &[
    "https://github.com/rust-lang/rust/issues?q=is%3Aopen+label%3AT-compiler",
    "https://github.com/rust-lang/rust/commit/3f5fd8dd41153bc5fdca9427e9e05be2c767ba23",
    "https://github.com/login/oauth/authorize?client_id=abc123&scope=repo",
    "https://docs.rs/serde_json/latest/serde_json/#functions",
    "https://doc.rust-lang.org/std/collections/struct.HashMap.html#method.entry",
    "https://docs.python.org/3/library/urllib.parse.html#url-parsing",
    "https://en.wikipedia.org/wiki/Rust_(programming_language)",
    "https://stackoverflow.com/questions/24907/how-to-x?tab=votes&page=2",
    "https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s",
    "https://crates.io/crates/serde",
    "https://example.com/search?query=token+bucket&keyword=signature",
    "https://www.google.com/maps/@51.5074,-0.1278,15z",
    "http://localhost:8080/api/v1/items?limit=50&offset=100",
    "https://registry.npmjs.org/@modelcontextprotocol%2fsdk",
    "file:///home/user/project/README.md",
];

#[test]
fn ordinary_links_come_through_untouched() {
    for link in BENIGN_LINKS {
        let text = format!("See {link} for more, or ({link}).\nNext line: {link}");
        let result = json!({"content": [{"type": "text", "text": text}]});
        let lanes = Host::new().all_lanes(&result, UriPolicy::Hidden);
        assert_eq!(lanes.stored, text);
        assert!(lanes.push.contains(&text), "{}", lanes.push);
        assert_eq!(lanes.injection_system, text);
    }
}

mod differential {
    use proptest::prelude::*;

    use super::*;

    /// One spelling of a uri that a reader (or a model) would take for the same uri.
    #[derive(Debug, Clone, Copy)]
    enum Spelling {
        JsonSlash,
        JsonUnicode,
        HtmlAmp,
        HtmlDecimal,
        HtmlHex,
        HtmlNamed,
        Upper,
        Lower,
        PercentSome,
        PercentAll,
        Invisible,
    }

    const SPELLINGS: &[Spelling] = &[
        Spelling::JsonSlash,
        Spelling::JsonUnicode,
        Spelling::HtmlAmp,
        Spelling::HtmlDecimal,
        Spelling::HtmlHex,
        Spelling::HtmlNamed,
        Spelling::Upper,
        Spelling::Lower,
        Spelling::PercentSome,
        Spelling::PercentAll,
        Spelling::Invisible,
    ];

    const DELIMITERS: &str = ":/?=&#@";

    fn spell(text: &str, spelling: Spelling) -> String {
        let each = |f: &dyn Fn(char) -> Option<String>| -> String {
            text.chars()
                .map(|c| f(c).unwrap_or_else(|| c.to_string()))
                .collect()
        };
        let delimiter = |c: char| DELIMITERS.contains(c);
        match spelling {
            Spelling::JsonSlash => text.replace('/', "\\/"),
            Spelling::JsonUnicode => {
                each(&|c| delimiter(c).then(|| format!("\\u{:04x}", c as u32)))
            }
            Spelling::HtmlAmp => text.replace('&', "&amp;"),
            Spelling::HtmlDecimal => each(&|c| delimiter(c).then(|| format!("&#{};", c as u32))),
            Spelling::HtmlHex => each(&|c| delimiter(c).then(|| format!("&#x{:X};", c as u32))),
            Spelling::HtmlNamed => text.replace('/', "&sol;").replace(':', "&colon;"),
            Spelling::Upper => text.to_uppercase(),
            Spelling::Lower => text.to_lowercase(),
            Spelling::PercentSome => each(&|c| delimiter(c).then(|| format!("%{:02X}", c as u32))),
            Spelling::PercentAll => each(&|c| {
                let mut utf8 = [0; 4];
                Some(
                    c.encode_utf8(&mut utf8)
                        .bytes()
                        .map(|b| format!("%{b:02X}"))
                        .collect(),
                )
            }),
            Spelling::Invisible => each(&|c| (c == '/').then(|| "/\u{200b}".to_owned())),
        }
    }

    /// A uri with the secret in its query, fragment, userinfo or path.
    fn uri_with(secret: String) -> impl Strategy<Value = String> {
        (
            proptest::sample::select(&["https", "http", "demo", "s3"][..]),
            "[a-z]{3,8}",
            0..4usize,
        )
            .prop_map(move |(scheme, host, place)| match place {
                0 => format!("{scheme}://{host}.example.com/r/q3.pdf?a=1&token={secret}"),
                1 => format!("{scheme}://{host}.example.com/cb#access_token={secret}&x=1"),
                2 => format!("{scheme}://user:{secret}@{host}.example.com/r"),
                _ => format!("{scheme}://{host}.example.com/d/{secret}/r.pdf"),
            })
    }

    fn case()
    -> impl Strategy<Value = (String, String, Vec<Spelling>, String, String, Option<usize>)> {
        "S3CR3T[A-Za-z0-9]{8,12}".prop_flat_map(|secret| {
            (
                uri_with(secret.clone()),
                Just(secret),
                proptest::collection::vec(proptest::sample::select(SPELLINGS), 1..4),
                "[A-Za-z,.]{0,12} ",
                " [A-Za-z,.]{0,12}",
                proptest::option::of(1..40usize),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// A claimed uri, spelled any way in the server's text (split across two blocks or
        /// not), never shows its secret on any lane, route, the script view or the spill; the
        /// text around it is kept byte for byte.
        #[test]
        fn no_spelling_shows_the_secret((uri, secret, spellings, before, after, split) in case()) {
            let spelled = spellings.iter().fold(uri.clone(), |text, &s| spell(&text, s));
            let mut blocks = vec![json!({"type": "resource_link", "uri": uri, "name": "r"})];
            match split.filter(|&at| at < spelled.len() && spelled.is_char_boundary(at)) {
                Some(at) => {
                    blocks.push(json!({"type": "text", "text": format!("{before}{}", &spelled[..at])}));
                    blocks.push(json!({"type": "text", "text": format!("{}{after}", &spelled[at..])}));
                }
                None => blocks.push(json!({"type": "text", "text": format!("{before}{spelled}{after}")})),
            }
            let result = json!({"content": blocks});
            let secret = secret.to_lowercase();
            for policy in [UriPolicy::Hidden, UriPolicy::CredentialFree] {
                let texts = shown(&result, policy);
                for text in &texts {
                    prop_assert!(
                        !mcpl_lanes::normalised(text).contains(&secret),
                        "{:?} of {} shown in {}", spellings, uri, text
                    );
                }
                prop_assert!(texts[0].contains(before.as_str()), "{}", texts[0]);
                prop_assert!(texts[0].contains(after.as_str()), "{}", texts[0]);
            }
        }
    }
}

#[test]
fn a_servers_error_message_is_cleaned_and_redacted() {
    let mut host = Host::new();
    let claimed = json!({"content": [link("demo://resource/private-report-7")]});
    outputs(&mut host, &claimed, UriPolicy::Hidden);
    let shown = host
        .on(&Route::ANTHROPIC, UriPolicy::Hidden)
        .server_text("error -32000: no DEMO://resource/private-report-7\u{0}, try https://x.example/o?tok\u{202e}en=SECRET1");
    assert_eq!(
        shown,
        "error -32000: no [withheld link], try [withheld link]"
    );
}

/// A credential url the scan finds late in a text may stand earlier in another spelling (here
/// without its scheme, or protocol-relative), where the scan has gone by: the first call hides
/// it there too, and a second call shows the same (decision 0104).
#[test]
fn a_found_url_is_hidden_in_its_earlier_spellings_on_the_first_call() {
    let url = "ftp://deploy-7f3kq9zx@mirror.example.net/pub/a8Fq2LmZ0pXw";
    for earlier in [
        "deploy-7f3kq9zx@mirror.example.net/pub/a8Fq2LmZ0pXw",
        "//deploy-7f3kq9zx@mirror.example.net/pub/a8Fq2LmZ0pXw",
    ] {
        let text = format!("first {earlier} then {url} end");
        let result = json!({"content": [{"type": "text", "text": text}]});
        let mut host = Host::new();
        let first = host.all_lanes(&result, UriPolicy::Hidden);
        for secret in ["deploy-7f3kq9zx", "a8Fq2LmZ0pXw"] {
            assert!(!first.stored.contains(secret), "{}", first.stored);
            assert!(!first.push.contains(secret), "{}", first.push);
        }
        let second = host.all_lanes(&result, UriPolicy::Hidden);
        assert_eq!(first.stored, second.stored);
        assert_eq!(first.push, second.push);
        assert_eq!(first.injection_system, second.injection_system);
    }
}

/// Structured content read from bytes stays raw (decision 0142): it shows as its `Value` would,
/// blocks inside it replaced and uris hidden, and a key that repeats is shown twice.
#[test]
fn raw_structured_content_shows_every_member_and_hides_its_uris() {
    let bytes = format!(
        r#"{{"content": [], "structuredContent": {{"a": 1, "{SIGNED}": "x", "a": 2,
            "file": {{"type": "resource_link", "uri": "{SIGNED}", "name": "q3"}},
            "note": "see {SIGNED}", "n": [1.5e3, true, null, "\u00e9"]}}}}"#
    );
    let read = mcpl_lanes::ResultView::parse(bytes.as_bytes()).expect("the bytes read");
    let parsed = ToolResult::from_view(&read);
    let mut host = Host::new();
    let copies = host
        .on(&Route::ANTHROPIC, UriPolicy::Hidden)
        .tool_result(&parsed);
    let stored = copies.stored.into_owned();
    assert!(!stored.contains("SECRETTOKEN123"), "{stored}");
    assert!(
        stored.starts_with(r#"{"a":1,"[withheld link 1]":"x","[withheld link 2]":2,"file":"#),
        "{stored}"
    );
    assert!(
        stored.ends_with(r#""n":[1500.0,true,null,"é"]}"#),
        "{stored}"
    );
    // Without the repeated key, the raw read and the `Value`'s are the same text.
    let unique = bytes.replace(r#""a": 2,"#, "");
    let read = mcpl_lanes::ResultView::parse(unique.as_bytes()).expect("the bytes read");
    let from_bytes = Host::new()
        .on(&Route::ANTHROPIC, UriPolicy::Hidden)
        .tool_result(&ToolResult::from_view(&read))
        .stored
        .into_owned();
    let value: Value = serde_json::from_str(&unique).expect("the bytes parse");
    let read = mcpl_lanes::ResultView::of_value(&value);
    let from_value = Host::new()
        .on(&Route::ANTHROPIC, UriPolicy::Hidden)
        .tool_result(&ToolResult::from_view(&read))
        .stored
        .into_owned();
    assert_eq!(from_bytes, from_value);
}

/// Thousands of texts of one url each join into one run with no white space between them: one
/// stretch of urls, each running to the stretch's end. Every url is judged, and the first holds
/// every later one's token; the work and the session's memory stay linear. Ten thousand such
/// texts took 9.8 GiB and 92 s, each url up to the end found and remembered.
#[test]
fn a_run_of_thousands_of_url_texts_is_withheld_in_linear_work() {
    let blocks: Vec<Value> = (0..3000)
        .map(|i| json!({"type": "text", "text": format!("https://a.example/x?token=SECRET{i:05}")}))
        .collect();
    let result = json!({"content": blocks});
    let mut host = Host::new();
    let texts = outputs(&mut host, &result, UriPolicy::Hidden);
    for i in [0, 31, 32, 1500, 2999] {
        assert_absent(&texts, &format!("SECRET{i:05}"));
    }
    // In the run, the urls are too long to be remembered for the session: the session holds
    // only urls a text holds alone (a lane that reads the first text by itself finds its url),
    // never one that runs across texts.
    let hidden = host.registry.hidden();
    let own = (0..3000)
        .filter(|i| hidden.contains(&format!("https://a.example/x?token=SECRET{i:05}")))
        .count();
    assert!(hidden.len() <= 1, "{}", hidden.len());
    assert_eq!(own, hidden.len());
}

/// A tool that lists links one a text block: the run is one stretch of urls, and none of them
/// carries a credential, so every link comes through. Before, the urls past the 32nd were
/// withheld as crowded, and a list longer than 8 KiB was withheld whole as one url too long to
/// read.
#[test]
fn a_list_of_plain_links_one_a_block_comes_through_whole() {
    for count in [40, 400, 5000] {
        let links: Vec<String> = (0..count)
            .map(|i| format!("https://docs.example/page/{i}"))
            .collect();
        let blocks: Vec<Value> = links
            .iter()
            .map(|link| json!({"type": "text", "text": link}))
            .collect();
        let texts = outputs(
            &mut Host::new(),
            &json!({"content": blocks}),
            UriPolicy::Hidden,
        );
        for text in &texts {
            assert!(!text.contains("[withheld"), "{count} links: {text:.200}");
        }
        let all = texts.concat();
        for link in &links {
            assert!(all.contains(link.as_str()), "{count} links: no {link}");
        }
    }
}
