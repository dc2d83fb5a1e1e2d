//! A grammar of spellings: proptest strategies that write a secret the ways a hostile server
//! might, and put it into a text.
//!
//! A spelling composes one to three rules. Rules on characters (case, look-alikes, insertions)
//! come first and encodings after, since a case change or an insertion would break an encoding.
//! Each encoding encodes its own escape character wherever it occurs, as real encoders do.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use proptest::prelude::*;
use proptest::sample::select;

/// One rewriting of a text, named by the string the strategies report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    Upper,
    Lower,
    MixedCase,
    Fullwidth,
    MathBold,
    Ignorables,
    Separators,
    Percent,
    JsonU,
    HexX,
    Octal,
    Html,
    QuotedPrintable,
    Base64,
    Base64NoPad,
    Base64Url,
    Base64UrlNoPad,
    Base32Upper,
    Base32Lower,
}

/// Where a spelling is put.
#[derive(Clone, Copy, Debug)]
enum Context {
    Text,
    Json,
    UrlPath,
    UrlQuery,
}

const IGNORABLES: [char; 7] = [
    '\u{34F}',
    '\u{FE0F}',
    '\u{200B}',
    '\u{3164}',
    '\u{17B4}',
    '\u{180B}',
    '\u{E0001}',
];
const SEPARATORS: [&str; 5] = ["-", " ", "%20", ".", "\n"];
const WORDS: [&str; 12] = [
    "the", "server", "said", "token", "is", "ready", "see", "attached", "value", "for", "you", "ok",
];
/// HTML names whose meaning is exactly the character.
#[rustfmt::skip]
const NAMED: [(char, &str); 16] = [
    ('&', "amp"), ('<', "lt"), ('>', "gt"), ('"', "quot"), ('/', "sol"), (':', "colon"),
    ('?', "quest"), ('=', "equals"), ('.', "period"), (',', "comma"), ('_', "lowbar"),
    ('+', "plus"), ('%', "percnt"), ('\\', "bsol"), ('\n', "NewLine"), ('\u{2010}', "hyphen"),
];

/// A secret's spellings: the spelling and the names of the rules applied, in order.
pub fn spelled(secret: String) -> impl Strategy<Value = (String, Vec<&'static str>)> {
    prop::collection::vec((select(Rule::ALL.to_vec()), any::<u64>()), 1..=3).prop_map(
        move |mut steps| {
            steps.sort_by_key(|(rule, _)| rule.stage());
            // A rule on characters drawn twice would insert into its own insertions.
            steps.dedup_by(|a, b| a.0 == b.0 && a.0.stage() < 4);
            let text = steps.iter().fold(secret.clone(), |text, (rule, seed)| {
                rule.apply(&text, *seed)
            });
            (text, steps.iter().map(|(rule, _)| rule.name()).collect())
        },
    )
}

/// A url's spellings that keep its shape once decoded: every rule but separators, which
/// would cut it. Gives the spelling and the names of the rules applied, in order.
pub fn spelled_whole(url: String) -> impl Strategy<Value = (String, Vec<&'static str>)> {
    let rules: Vec<Rule> = Rule::ALL
        .into_iter()
        .filter(|r| *r != Rule::Separators)
        .collect();
    prop::collection::vec((select(rules), any::<u64>()), 1..=3).prop_map(move |mut steps| {
        steps.sort_by_key(|(rule, _)| rule.stage());
        steps.dedup_by(|a, b| a.0 == b.0 && a.0.stage() < 4);
        let text = steps
            .iter()
            .fold(url.clone(), |text, (rule, seed)| rule.apply(&text, *seed));
        (text, steps.iter().map(|(rule, _)| rule.name()).collect())
    })
}

/// A secret spelled and put into ordinary text, a JSON string, a url path or a url query.
///
/// Gives the whole text, the spelling alone, and the rules' names followed by the context's.
pub fn in_context(secret: String) -> impl Strategy<Value = (String, String, Vec<&'static str>)> {
    let contexts = vec![
        Context::Text,
        Context::Json,
        Context::UrlPath,
        Context::UrlQuery,
    ];
    (spelled(secret), select(contexts), any::<u64>()).prop_map(
        |((spelling, mut names), context, seed)| {
            let text = context.wrap(&spelling, &mut Coin(seed));
            names.push(context.name());
            (text, spelling, names)
        },
    )
}

/// A small deterministic source of choices, so that one seed stands for one spelling.
struct Coin(u64);

impl Coin {
    /// splitmix64.
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let z = (self.0 ^ (self.0 >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize]
    }
}

impl Rule {
    #[rustfmt::skip]
    pub(crate) const ALL: [Rule; 19] = [
        Rule::Upper, Rule::Lower, Rule::MixedCase, Rule::Fullwidth, Rule::MathBold,
        Rule::Ignorables, Rule::Separators, Rule::Percent, Rule::JsonU, Rule::HexX, Rule::Octal,
        Rule::Html, Rule::QuotedPrintable, Rule::Base64, Rule::Base64NoPad, Rule::Base64Url,
        Rule::Base64UrlNoPad, Rule::Base32Upper, Rule::Base32Lower,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Rule::Upper => "upper",
            Rule::Lower => "lower",
            Rule::MixedCase => "mixed-case",
            Rule::Fullwidth => "fullwidth",
            Rule::MathBold => "math-bold",
            Rule::Ignorables => "ignorables",
            Rule::Separators => "separators",
            Rule::Percent => "percent",
            Rule::JsonU => "json-u",
            Rule::HexX => "hex-x",
            Rule::Octal => "octal",
            Rule::Html => "html",
            Rule::QuotedPrintable => "quoted-printable",
            Rule::Base64 => "base64",
            Rule::Base64NoPad => "base64-nopad",
            Rule::Base64Url => "base64url",
            Rule::Base64UrlNoPad => "base64url-nopad",
            Rule::Base32Upper => "base32-upper",
            Rule::Base32Lower => "base32-lower",
        }
    }

    /// Case first, then look-alikes, ignorables, separators, then encodings in the order drawn.
    ///
    /// Ignorables go before separators, so that none lands inside a `%20`.
    fn stage(self) -> u8 {
        match self {
            Rule::Upper | Rule::Lower | Rule::MixedCase => 0,
            Rule::Fullwidth | Rule::MathBold => 1,
            Rule::Ignorables => 2,
            Rule::Separators => 3,
            _ => 4,
        }
    }

    /// Rewrites `text`; the seed decides which characters, and which of equivalent forms.
    pub(crate) fn apply(self, text: &str, seed: u64) -> String {
        let coin = &mut Coin(seed);
        // Either every character is rewritten or about half of them.
        let every = coin.one_in(2);
        let chosen = move |coin: &mut Coin| every || coin.one_in(2);
        match self {
            Rule::Upper => text.to_uppercase(),
            Rule::Lower => text.to_lowercase(),
            Rule::MixedCase => map_chars(text, coin, |coin, c, out| {
                if coin.one_in(2) {
                    out.extend(c.to_uppercase())
                } else {
                    out.extend(c.to_lowercase())
                }
            }),
            Rule::Fullwidth => map_chars(text, coin, |coin, c, out| {
                let wide = c.is_ascii_alphanumeric() && chosen(coin);
                out.push(
                    char::from_u32(c as u32 + 0xFEE0)
                        .filter(|_| wide)
                        .unwrap_or(c),
                );
            }),
            Rule::MathBold => map_chars(text, coin, |coin, c, out| {
                let bold = match c {
                    'A'..='Z' => 0x1D400 + (c as u32 - 'A' as u32),
                    'a'..='z' => 0x1D41A + (c as u32 - 'a' as u32),
                    '0'..='9' => 0x1D7CE + (c as u32 - '0' as u32),
                    _ => c as u32,
                };
                out.push(char::from_u32(bold).filter(|_| chosen(coin)).unwrap_or(c));
            }),
            Rule::Ignorables | Rule::Separators => {
                let mut first = true;
                let mut before = None;
                map_chars(text, coin, |coin, c, out| {
                    // Separators go between letters and digits only, never into a `%20`.
                    let gap = before.is_some_and(|b: char| {
                        self == Rule::Ignorables || b.is_alphanumeric() && c.is_alphanumeric()
                    });
                    // The first gap always gets one, so that the rule always shows.
                    if gap && (std::mem::take(&mut first) || chosen(coin)) {
                        if self == Rule::Ignorables {
                            out.push(coin.pick(&IGNORABLES));
                        } else {
                            out.push_str(coin.pick(&SEPARATORS));
                        }
                    }
                    before = Some(c);
                    out.push(c);
                })
            }
            Rule::Percent => bytewise(text, coin, chosen, '%', |b, upper| hex2("%", b, upper)),
            Rule::HexX => bytewise(text, coin, chosen, '\\', |b, upper| hex2("\\x", b, upper)),
            Rule::Octal => bytewise(text, coin, chosen, '\\', |b, _| format!("\\{b:03o}")),
            Rule::JsonU => map_chars(text, coin, |coin, c, out| {
                if c != '\\' && !chosen(coin) {
                    return out.push(c);
                }
                let upper = coin.one_in(2);
                for unit in c.encode_utf16(&mut [0; 2]) {
                    out.push_str(&if upper {
                        format!("\\u{unit:04X}")
                    } else {
                        format!("\\u{unit:04x}")
                    });
                }
            }),
            Rule::Html => map_chars(text, coin, |coin, c, out| {
                let named = NAMED.iter().find(|(n, _)| *n == c).map(|(_, name)| *name);
                if c != '&' && !chosen(coin) {
                    out.push(c);
                } else if let Some(name) = named.filter(|_| c == '&' || coin.one_in(2)) {
                    out.push_str(&format!("&{name};"));
                } else if coin.one_in(2) {
                    out.push_str(&format!("&#{};", c as u32));
                } else {
                    out.push_str(&format!("&#x{:x};", c as u32));
                }
            }),
            Rule::QuotedPrintable => map_chars(text, coin, |coin, c, out| {
                if !out.is_empty() && coin.one_in(8) {
                    out.push_str(coin.pick(&["=\r\n", "=\n"]));
                }
                // Quoted-printable carries 7-bit text only, and its own `=` encoded.
                if c == '=' || !c.is_ascii() || chosen(coin) {
                    c.encode_utf8(&mut [0; 4])
                        .bytes()
                        .for_each(|b| out.push_str(&hex2("=", b, true)));
                } else {
                    out.push(c);
                }
            }),
            Rule::Base64 => STANDARD.encode(text),
            Rule::Base64NoPad => STANDARD_NO_PAD.encode(text),
            Rule::Base64Url => URL_SAFE.encode(text),
            Rule::Base64UrlNoPad => URL_SAFE_NO_PAD.encode(text),
            Rule::Base32Upper | Rule::Base32Lower => {
                let encoding = if coin.one_in(2) {
                    &data_encoding::BASE32
                } else {
                    &data_encoding::BASE32_NOPAD
                };
                let upper = encoding.encode(text.as_bytes());
                if self == Rule::Base32Upper {
                    upper
                } else {
                    upper.to_lowercase()
                }
            }
        }
    }
}

/// Builds a text character by character.
fn map_chars(
    text: &str,
    coin: &mut Coin,
    mut f: impl FnMut(&mut Coin, char, &mut String),
) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    text.chars().for_each(|c| f(coin, c, &mut out));
    out
}

/// Rewrites chosen characters, and always `escape`, byte by byte of their UTF-8.
fn bytewise(
    text: &str,
    coin: &mut Coin,
    chosen: impl Fn(&mut Coin) -> bool,
    escape: char,
    spell: impl Fn(u8, bool) -> String,
) -> String {
    map_chars(text, coin, |coin, c, out| {
        if c != escape && !chosen(coin) {
            return out.push(c);
        }
        let upper = coin.one_in(2);
        c.encode_utf8(&mut [0; 4])
            .bytes()
            .for_each(|b| out.push_str(&spell(b, upper)));
    })
}

fn hex2(prefix: &str, b: u8, upper: bool) -> String {
    if upper {
        format!("{prefix}{b:02X}")
    } else {
        format!("{prefix}{b:02x}")
    }
}

impl Context {
    fn name(self) -> &'static str {
        match self {
            Context::Text => "context-text",
            Context::Json => "context-json",
            Context::UrlPath => "context-url-path",
            Context::UrlQuery => "context-url-query",
        }
    }

    fn wrap(self, spelling: &str, coin: &mut Coin) -> String {
        let words = |coin: &mut Coin| {
            let n = 1 + coin.next() % 5;
            (0..n)
                .map(|_| coin.pick(&WORDS))
                .collect::<Vec<_>>()
                .join(" ")
        };
        match self {
            Context::Text => format!("{} {spelling} {}", words(coin), words(coin)),
            Context::Json => {
                let escaped = json_string(spelling, coin);
                format!(
                    r#"{{"id": 7, "token": "{escaped}", "note": "{}"}}"#,
                    words(coin)
                )
            }
            Context::UrlPath => format!("https://example.com/files/{spelling}/raw?x=1"),
            Context::UrlQuery => format!(
                "https://example.com/cb?code={spelling}&state={}",
                coin.pick(&WORDS)
            ),
        }
    }
}

/// The spelling as the inside of a JSON string; `/` is escaped or not, as JSON allows.
fn json_string(text: &str, coin: &mut Coin) -> String {
    let mut out = String::new();
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' if coin.one_in(2) => out.push_str("\\/"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::Secrets;

    const SECRET: &str = "a8f3K2j9x7q1";

    /// What each rule's output shows, for every seed.
    fn shows(rule: Rule) -> &'static [&'static str] {
        match rule {
            Rule::Upper => &["A8F3K2J9X7Q1"],
            Rule::Lower => &["a8f3k2j9x7q1"],
            Rule::MixedCase => &[],
            Rule::Fullwidth | Rule::MathBold | Rule::Ignorables => &[],
            Rule::Separators => &[],
            Rule::Percent => &["%"],
            Rule::JsonU => &["\\u"],
            Rule::HexX => &["\\x"],
            Rule::Octal => &["\\"],
            Rule::Html => &["&#"],
            Rule::QuotedPrintable => &["="],
            Rule::Base64 | Rule::Base64NoPad => &["YThmM0sy"],
            Rule::Base64Url | Rule::Base64UrlNoPad => &["YThmM0sy"],
            Rule::Base32Upper => &["ME4GMM2LGJVDS6BXOEYQ"],
            Rule::Base32Lower => &["me4gmm2lgjvds6bxoeyq"],
        }
    }

    #[test]
    fn each_rule_changes_the_spelling_but_not_the_skeleton() {
        let mut secrets = Secrets::default();
        secrets.insert(SECRET);
        for rule in Rule::ALL {
            for seed in 0..50 {
                let spelling = rule.apply(SECRET, seed);
                if !matches!(rule, Rule::MixedCase) {
                    assert_ne!(spelling, SECRET, "{rule:?} {seed}");
                }
                for shown in shows(rule) {
                    assert!(spelling.contains(shown), "{rule:?} {seed}: {spelling:?}");
                }
                assert_eq!(
                    secrets.redact(&spelling, "#"),
                    "#",
                    "{rule:?} {seed}: {spelling:?}"
                );
            }
        }
    }

    #[test]
    fn encodings_encode_their_own_escape_character() {
        assert_eq!(Rule::Percent.apply("%", 1), "%25");
        assert!(Rule::HexX.apply("\\", 1).eq_ignore_ascii_case("\\x5c"));
        assert_eq!(Rule::Octal.apply("\\", 1), "\\134");
        assert_eq!(Rule::Html.apply("&", 1), "&amp;");
        assert_eq!(Rule::QuotedPrintable.apply("=", 1), "=3D");
    }

    #[test]
    fn character_rules_come_first() {
        let mut stages: Vec<u8> = Rule::ALL.iter().map(|r| r.stage()).collect();
        stages.dedup();
        assert_eq!(stages, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn json_strings_escape_what_json_needs() {
        assert_eq!(
            json_string("a\"b\\c\n\u{1}", &mut Coin(0)),
            "a\\\"b\\\\c\\n\\u0001"
        );
    }
}
