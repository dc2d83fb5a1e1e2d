//! The three rules of mcpl's own: JWTs of any header, PEM private keys, HTTP auth headers.

use std::sync::OnceLock;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use regex::bytes::Regex;

use crate::formats::gitleaks::compile;
use crate::formats::{Found, secret_text};

/// Rule id of a JWT found by its decoded header.
pub(crate) const JWT: &str = "mcpl-jwt";
/// Rule id of a PEM private key block.
pub(crate) const PRIVATE_KEY: &str = "mcpl-pem-private-key";
/// Rule id of the value of an HTTP authentication header.
pub(crate) const AUTH_HEADER: &str = "mcpl-http-auth-header";

/// One of mcpl's own rules.
#[derive(Clone, Copy)]
pub(crate) enum Own {
    /// Three to five base64url segments whose first decodes to a JSON object.
    Jwt,
    /// `-----BEGIN ... PRIVATE KEY-----` up to its END line.
    PrivateKey,
    /// `Authorization`, `Proxy-Authorization`, `X-Api-Key` and kin.
    AuthHeader,
}

// A JWT header is at least `{"alg":""}`, which is 14 characters of base64url. The
// segment after it may be empty, as a JWE's key is with `"alg":"dir"`; so may the
// signature of an unsecured JWT. A JWE's last two segments are never empty.
const JWT_PATTERN: &str =
    r"[A-Za-z0-9_-]{14,}\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+){0,2}";

/// The shortest JWT header in base64url, as in the pattern.
const MIN_HEADER: usize = 14;

/// How many starts after a `-` or `_` are tried when a JWT header does not decode.
const MAX_GLUED_STARTS: usize = 4;

const BEGIN_PATTERN: &str = r"(?i)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----";
const END_PATTERN: &str = r"(?i)-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----";

// A scheme word is skipped so that the credential after it is what is withheld.
// Eight characters at least keep `Bearer $TOKEN` and `<token>` placeholders out.
const HEADER_PATTERN: &str = r#"(?i)\b(?:(?:proxy-)?authorization|(?:x-(?:[a-z0-9]+-)*)?api-?key|x-auth-token|x-access-token|private-token|x-vault-token|ocp-apim-subscription-key|x-functions-key)(?:\\?["'])?[ \t]*[:=][ \t]*(?:\\?["'])?(?:(?:bearer|basic|token|digest|negotiate|ntlm|apikey|sso-key|dsn)[ \t]+)?([a-z0-9._~+/=:-]{8,})"#;

impl Own {
    /// Every own rule, in the order their ids are listed.
    pub(crate) const ALL: [Own; 3] = [Own::Jwt, Own::PrivateKey, Own::AuthHeader];

    /// The id reported in [`Found::rule`].
    pub(crate) fn id(self) -> &'static str {
        match self {
            Own::Jwt => JWT,
            Own::PrivateKey => PRIVATE_KEY,
            Own::AuthHeader => AUTH_HEADER,
        }
    }

    /// Lowercase words one of which must be in the text; none means always run.
    pub(crate) fn keywords(self) -> &'static [&'static str] {
        match self {
            // A header may start with any of several letters, so no keyword narrows it.
            Own::Jwt => &[],
            Own::PrivateKey => &["private key"],
            Own::AuthHeader => &["authorization", "api-key", "apikey", "-token", "-key"],
        }
    }

    /// Runs the rule over `text` and pushes what it finds.
    pub(crate) fn scan(self, text: &str, out: &mut Vec<Found>) {
        match self {
            Own::Jwt => jwts(text, out),
            Own::PrivateKey => private_keys(text, out),
            Own::AuthHeader => auth_headers(text, out),
        }
    }
}

fn regex(cell: &'static OnceLock<Option<Regex>>, pattern: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| compile(pattern)).as_ref()
}

/// Whether a base64url segment decodes to text that is a JSON object.
fn is_json_object(segment: &[u8]) -> bool {
    let Ok(bytes) = URL_SAFE_NO_PAD.decode(segment) else {
        return false;
    };
    let Ok(decoded) = std::str::from_utf8(&bytes) else {
        return false;
    };
    let trimmed = decoded.trim_matches([' ', '\t', '\n', '\r']);
    trimmed.starts_with('{') && trimmed.ends_with('}')
}

fn jwts(text: &str, out: &mut Vec<Found>) {
    static CELL: OnceLock<Option<Regex>> = OnceLock::new();
    let Some(re) = regex(&CELL, JWT_PATTERN) else {
        return;
    };
    let hay = text.as_bytes();
    for m in re.find_iter(hay) {
        let token = m.as_bytes();
        let header_len = token.iter().position(|&b| b == b'.').unwrap_or(token.len());
        // A run like `id-eyJ...` glues a word to the token; try a few starts after `-` or
        // `_`. Few, so that a run of dashes costs a handful of decodes, not one per dash.
        let starts = std::iter::once(0).chain(
            token
                .iter()
                .take(header_len)
                .enumerate()
                .filter(|&(_, &b)| b == b'-' || b == b'_')
                .map(|(i, _)| i + 1)
                .take(MAX_GLUED_STARTS),
        );
        for skip in starts {
            let header = token.get(skip..header_len).unwrap_or_default();
            if header.len() >= MIN_HEADER && is_json_object(header) {
                if let Some((start, end, _)) = secret_text(text, m.start() + skip, m.end()) {
                    out.push(Found {
                        start,
                        end,
                        rule: JWT,
                    });
                }
                break;
            }
        }
    }
}

/// Bytes a PEM body may hold, written plainly, in a JSON string or with XML or URL escapes.
fn is_body_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b.is_ascii_whitespace() || b"+/=\\:,-.()%&#;".contains(&b)
}

/// A key needs this many base64 characters in its body; fewer hold nothing of it.
const MIN_BODY: usize = 32;

fn private_keys(text: &str, out: &mut Vec<Found>) {
    static BEGIN: OnceLock<Option<Regex>> = OnceLock::new();
    static END: OnceLock<Option<Regex>> = OnceLock::new();
    let (Some(begin), Some(end_re)) = (regex(&BEGIN, BEGIN_PATTERN), regex(&END, END_PATTERN))
    else {
        return;
    };
    let hay = text.as_bytes();
    let mut from = 0;
    while let Some(b) = hay.get(from..).and_then(|h| begin.find(h)) {
        let start = from + b.start();
        let body_start = from + b.end();
        let body = hay.get(body_start..).unwrap_or_default();
        let run = body
            .iter()
            .position(|&c| !is_body_byte(c))
            .unwrap_or(body.len());
        // The END line closes the block when only body bytes stand before it; a key
        // cut short, or one whose END is missing, is withheld up to the end of its body.
        // An END line is made of body bytes, so it lies inside the run when it counts.
        let run_bytes = body.get(..run).unwrap_or_default();
        let (inner, end) = match end_re.find(run_bytes) {
            Some(e) => (
                run_bytes.get(..e.start()).unwrap_or_default(),
                body_start + e.end(),
            ),
            None => (run_bytes, body_start + run),
        };
        let base64 = inner.iter().filter(|b| b.is_ascii_alphanumeric()).count();
        if base64 < MIN_BODY {
            from = end.max(start + 1);
            continue;
        }
        if let Some((s, e, _)) = secret_text(text, start, end) {
            out.push(Found {
                start: s,
                end: e,
                rule: PRIVATE_KEY,
            });
        }
        from = end.max(start + 1);
    }
}

/// Whether a header value looks like a credential rather than a word or a code path.
///
/// Tokens of twenty characters or more, and shorter ones with a digit, count;
/// `request.header` or `Negotiate` do not.
fn is_credential_like(value: &[u8]) -> bool {
    value.len() >= 20 || value.iter().any(u8::is_ascii_digit)
}

fn auth_headers(text: &str, out: &mut Vec<Found>) {
    static CELL: OnceLock<Option<Regex>> = OnceLock::new();
    let Some(re) = regex(&CELL, HEADER_PATTERN) else {
        return;
    };
    for caps in re.captures_iter(text.as_bytes()) {
        if let Some(v) = caps.get(1)
            && is_credential_like(v.as_bytes())
            && let Some((start, end, _)) = secret_text(text, v.start(), v.end())
        {
            out.push(Found {
                start,
                end,
                rule: AUTH_HEADER,
            });
        }
    }
}
