//! Issue 26's cases, each spelled the way its text lists, through the public API: a hidden uri
//! withheld by its secret parts in any spelling, invisible characters that split nothing,
//! credential-shaped urls and parameters the old rule missed, and plain-text credentials.

use base64::Engine as _;
use mcpl_redact::{HiddenSet, HiddenUris, UriPolicy};
use rstest::rstest;
use serde_json::json;

/// The capability in the hidden uri's path, and the signature in its query.
const PART: &str = "a8f3k2j9x7q1";
const SIG: &str = "Zm9vYmFyYmF6cXV4";
const URI: &str =
    "https://files.example.com/share/a8f3k2j9x7q1/report.pdf?sig=Zm9vYmFyYmF6cXV4&exp=1700000000";

/// A session that hid [`URI`] in an earlier result.
fn session() -> HiddenSet {
    let mut session = HiddenSet::new();
    let earlier = json!({"content": [{"type": "resource_link", "uri": URI, "name": "r"}]});
    HiddenUris::in_session(&[&earlier], UriPolicy::Hidden, &mut session, true);
    session
}

fn shown(session: &mut HiddenSet, text: &str) -> String {
    HiddenUris::in_session(&[], UriPolicy::Hidden, session, true)
        .redact(text)
        .into_owned()
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn b32(text: &str) -> String {
    data_encoding::BASE32.encode(text.as_bytes())
}

#[rstest]
#[case::the_path_alone("see /share/a8f3k2j9x7q1/report.pdf")]
#[case::scheme_less("files.example.com/share/a8f3k2j9x7q1/report.pdf?sig=Zm9vYmFyYmF6cXV4")]
#[case::protocol_relative("//files.example.com/share/a8f3k2j9x7q1/report.pdf")]
#[case::query_reordered("https://files.example.com/share/x?exp=1700000000&sig=Zm9vYmFyYmF6cXV4")]
#[case::punycode_host("https://xn--fles-example-9kb.com/share/a8f3k2j9x7q1/report.pdf")]
#[case::trailing_dot("https://files.example.com./share/a8f3k2j9x7q1/report.pdf")]
#[case::dot_segments("https://files.example.com/share/./x/../a8f3k2j9x7q1/report.pdf")]
#[case::encoded_dots("https://files.example.com/share/%2e/a8f3k2j9x7q1/report.pdf")]
#[case::backslashes("https:\\\\files.example.com\\share\\a8f3k2j9x7q1\\report.pdf")]
#[case::doubled_slash("https://files.example.com//share//a8f3k2j9x7q1//report.pdf")]
#[case::port_0443("https://files.example.com:0443/share/a8f3k2j9x7q1/report.pdf")]
#[case::ipv4("https://0x7f.1/share/a8f3k2j9x7q1/report.pdf")]
#[case::ipv6("https://[::ffff:7f00:1]/share/a8f3k2j9x7q1/report.pdf")]
#[case::fullwidth(
    "ｈｔｔｐｓ://ｆｉｌｅｓ．ｅｘａｍｐｌｅ．ｃｏｍ/ｓｈａｒｅ/ａ８ｆ３ｋ２ｊ９ｘ７ｑ１"
)]
#[case::octal("\\141\\070\\146\\063\\153\\062\\152\\071\\170\\067\\161\\061")]
#[case::quoted_printable("=61=38=66=33=6B=32=6A=39=78=37=71=31")]
#[case::split_by_spaces("A8F3 K2J9 X7Q1")]
#[case::split_by_encoded_space("a8f3%20k2j9%20x7q1")]
fn a_hidden_uri_is_withheld_by_its_parts_in_any_spelling(#[case] text: &str) {
    let out = shown(&mut session(), text);
    let skeleton: String = out
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_lowercase();
    assert!(!skeleton.contains(PART), "{text:?} gave {out:?}");
    assert!(
        !skeleton.contains(&SIG.to_lowercase()),
        "{text:?} gave {out:?}"
    );
}

#[test]
fn a_base64_or_base32_cursor_of_the_uri_is_withheld() {
    for encoded in [
        b64(URI),
        b64(&format!("{{\"next\":\"{URI}\"}}")),
        b32(URI),
        b32(URI).to_lowercase(),
    ] {
        let text = format!("next page: cursor={encoded} (opaque)");
        let out = shown(&mut session(), &text);
        assert!(!out.contains(&encoded), "{out}");
        assert!(
            out.contains("(opaque)"),
            "the text around it is kept: {out}"
        );
    }
}

#[test]
fn a_short_or_common_part_is_recorded_with_its_reason() {
    let mut session = session();
    let reasons: Vec<_> = session
        .unsearched_parts()
        .map(|(part, why)| (part.to_owned(), why))
        .collect();
    assert!(
        reasons.iter().any(|(part, _)| part == "share"),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|(part, _)| part == "report.pdf"),
        "{reasons:?}"
    );
    assert!(!reasons.iter().any(|(part, _)| part == PART), "{reasons:?}");
    // Ordinary words the uri holds are not withheld in prose.
    assert_eq!(
        shown(&mut session, "the share holds a report"),
        "the share holds a report"
    );
}

#[rstest]
#[case::combining_grapheme_joiner('\u{034F}')]
#[case::variation_selector('\u{FE0F}')]
#[case::variation_selector_supplement('\u{E0100}')]
#[case::hangul_filler('\u{3164}')]
#[case::khmer_vowel('\u{17B4}')]
#[case::mongolian_selector('\u{180B}')]
fn an_invisible_character_splits_no_host_and_no_name(#[case] c: char) {
    let host = format!(
        "https://files.exa{c}mple.com/share/b{c}c/report.pdf?sig=Zm9vYmFy{c}YmF6cXV4&exp=1700000000"
    );
    let out = shown(&mut session(), &host);
    assert!(out.contains("[withheld"), "{out:?}");
    let name = format!("https://api.example.org/cb?acc{c}ess_tok{c}en=Q7f2k9XbT4mZ8pL1");
    let out = HiddenUris::of(&[], UriPolicy::Hidden)
        .redact(&name)
        .into_owned();
    assert!(!out.contains("Q7f2k9XbT4mZ8pL1"), "{out:?}");
}

#[rstest]
#[case::cut_by_backslash("https://api.example.org/a\\b?token=Q7f2k9XbT4mZ8pL1")]
#[case::cut_by_caret("https://api.example.org/a^b?token=Q7f2k9XbT4mZ8pL1")]
#[case::cut_by_braces("https://api.example.org/{a}?token=Q7f2k9XbT4mZ8pL1")]
#[case::oauth_token("https://api.example.org/cb?oauth_token=Q7f2k9XbT4mZ8pL1")]
#[case::access_token_camel("https://api.example.org/cb?accessToken=Q7f2k9XbT4mZ8pL1")]
#[case::api_key_dashed("https://api.example.org/cb?api-key=Q7f2k9XbT4mZ8pL1")]
#[case::x_api_key("https://api.example.org/cb?x-api-key=Q7f2k9XbT4mZ8pL1")]
#[case::bracketed("https://api.example.org/cb?auth[token]=Q7f2k9XbT4mZ8pL1")]
#[case::spa_fragment("https://app.example.org/#/callback?access_token=Q7f2k9XbT4mZ8pL1")]
#[case::split_by_encoded_space("https://api.example.org/cb?token=Q7f2k9X%20bT4mZ8pL1")]
#[case::scheme_less("api.example.org/cb?token=Q7f2k9XbT4mZ8pL1")]
fn a_credential_parameter_is_withheld_wherever_the_url_ends(#[case] text: &str) {
    let out = HiddenUris::of(&[], UriPolicy::Hidden)
        .redact(text)
        .into_owned();
    assert!(!out.contains("Q7f2k9X"), "{text:?} gave {out:?}");
    assert!(!out.contains("T4mZ8pL1"), "{text:?} gave {out:?}");
}

#[test]
fn a_jwt_whose_header_does_not_start_ey_j_is_withheld() {
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = engine.encode("{ \"alg\": \"HS256\", \"typ\": \"JWT\" }");
    assert!(!header.starts_with("eyJ"), "{header}");
    let jwt = format!(
        "{header}.{}.c2lnbmF0dXJlc2lnbmF0dXJl",
        engine.encode("{\"sub\":\"42\"}")
    );
    let out = HiddenUris::of(&[], UriPolicy::Hidden)
        .redact(&format!("https://api.example.org/cb#{jwt}"))
        .into_owned();
    assert!(!out.contains(&header), "{out}");
}

#[rstest]
#[case::github(
    "token ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3s0Q ok",
    "R4nd0mT0k3nV4lu3"
)]
#[case::aws("AKIAZ7XQ3MPL4RT6WV2N is the key id", "Z7XQ3MPL4RT6WV2N")]
#[case::slack(
    "xoxb-2934857203-2938475029384-Hq2Ng7Wd9Kc4Pz8Lm3Xr6Tb1 posted",
    "Hq2Ng7Wd9Kc4Pz8Lm3Xr6Tb1"
)]
#[case::openai(
    "sk-proj-Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5Yz7T3BlbkFJAb3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5Yz7",
    "Ab3Cd5Ef7Gh9"
)]
#[case::anthropic(
    "sk-ant-api03-Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5Yz7Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5Yz7Ab3Cd5Ef7Gh9Ij1Kl3MnAA",
    "Ab3Cd5Ef7Gh9"
)]
#[case::bearer(
    "Authorization: Bearer 4f9c2a7e1b8d3f6a0c5e9b2d7a4f1c8e",
    "4f9c2a7e1b8d3f6a"
)]
#[case::pem(
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----",
    "MIIEvQIBADANBgkqhkiG9w0"
)]
fn a_plain_text_credential_is_withheld(#[case] text: &str, #[case] secret: &str) {
    let out = HiddenUris::of(&[], UriPolicy::Hidden)
        .redact(text)
        .into_owned();
    assert!(!out.contains(secret), "{text:?} gave {out:?}");
    assert!(out.contains(mcpl_redact::WITHHELD_SECRET), "{out:?}");
}

#[test]
fn a_bare_jwt_is_withheld() {
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    let out = HiddenUris::of(&[], UriPolicy::Hidden)
        .redact(&format!("the token is {jwt}."))
        .into_owned();
    assert!(!out.contains("dozjgNryP4J3"), "{out}");
}

#[test]
fn ordinary_text_comes_through() {
    for text in [
        "See https://docs.rs/serde_json/latest/serde_json/ for the API.",
        "commit 6d95b5e2b4a1 fixed it; sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "fn main() { let key = map.get(\"name\"); println!(\"{key:?}\"); }",
        "The meeting is at 10:30; bring the report.",
    ] {
        assert_eq!(shown(&mut session(), text), text);
    }
}

fn octal(text: &str) -> String {
    text.bytes().map(|b| format!("\\{b:03o}")).collect()
}

fn quoted_printable(text: &str) -> String {
    text.bytes().map(|b| format!("={b:02X}")).collect()
}

/// A hidden uri whose parts are all too short to search for alone is withheld by its whole
/// form, and a credential-shaped url by its shape: both in every decoding the canonical view
/// reads, with no secret registered.
#[rstest]
#[case::octal(octal)]
#[case::quoted_printable(quoted_printable)]
#[case::base64(b64)]
#[case::base32(b32)]
#[case::base64_of_octal(|t: &str| b64(&octal(t)))]
#[case::quoted_printable_of_base64(|t: &str| quoted_printable(&b64(t)))]
fn a_url_spelled_in_any_decoding_is_withheld(#[case] spell: fn(&str) -> String) {
    let url = "https://api.example.org/cb?access_token=Q7f2k9XbT4mZ8pL1";
    let text = format!("next: {} end", spell(url));
    let out = HiddenUris::of(&[], UriPolicy::Hidden)
        .redact(&text)
        .into_owned();
    assert!(out.contains("[withheld"), "{text:?} gave {out:?}");
    assert!(
        out.starts_with("next: ") && out.ends_with(" end"),
        "{out:?}"
    );

    let short = "https://t.example/a/b?c=d";
    let mut session = HiddenSet::new();
    let earlier = json!({"content": [{"type": "resource_link", "uri": short, "name": "r"}]});
    HiddenUris::in_session(&[&earlier], UriPolicy::Hidden, &mut session, false);
    let text = format!("see {} ok", spell(short));
    let out = shown(&mut session, &text);
    assert_eq!(out, "see [withheld link] ok", "{text:?}");
}

#[rstest]
#[case::parameter_in_quoted_printable(quoted_printable("api_key=Q7f2k9XbT4mZ8pL1"), "Q7f2k9X")]
#[case::parameter_in_octal(octal("client_secret: Q7f2k9XbT4mZ8pL1"), "Q7f2k9X")]
#[case::token_in_base64(b64("ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3s0Q"), "R4nd0m")]
fn a_credential_spelled_in_a_decoding_is_withheld(#[case] text: String, #[case] clear: &str) {
    let out = HiddenUris::of(&[], UriPolicy::Hidden)
        .redact(&text)
        .into_owned();
    assert!(
        out.contains(mcpl_redact::WITHHELD_SECRET),
        "{text:?} gave {out:?}"
    );
    assert!(!out.contains(clear), "{out:?}");
}

#[test]
fn ordinary_equals_and_base64_come_through() {
    for text in [
        "https://shop.example.org/item?id=41&page=2",
        "x=12; y=3F; color=FF00AA",
        "Subject: =?UTF-8?Q?Caf=C3=A9?= menu",
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABh6FO1AAAAABJRU5ErkJggg==",
        "cursor=eyJwYWdlIjoyLCJzaXplIjo1MH0 next",
    ] {
        assert_eq!(shown(&mut session(), text), text);
    }
}
