//! `Challenge`: what a `WWW-Authenticate` header's `Bearer` challenge asks (RFC 6750 §3,
//! RFC 9728 §5.1), read leniently from whatever a server sends.

/// The longest header value read; the rest of a longer one is ignored.
const MAX_HEADER_BYTES: usize = 16 * 1024;

/// The `Bearer` challenge of a `WWW-Authenticate` header: the parameters MCP reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Challenge {
    /// `resource_metadata`: where the protected resource metadata is (RFC 9728 §5.1).
    pub resource_metadata: Option<String>,
    /// `scope`, split on spaces: the scopes the current request needs.
    pub scopes: Vec<String>,
    /// `error` (`invalid_token`, `insufficient_scope`).
    pub error: Option<String>,
    /// Whether the challenge's scheme is `DPoP` (RFC 9449 §7.1): the server wants a token bound
    /// to a key.
    pub dpop: bool,
}

impl Challenge {
    /// Reads the first `Bearer` challenge of a header value (several challenges may share one
    /// value, separated by commas). Scheme and parameter names match in any case; values may be
    /// quoted strings (with `\` escapes) or bare tokens; parameters may be separated by commas
    /// or, as some servers write them, by spaces alone. A parameter named twice keeps its first
    /// value. No input fails: a header with no `Bearer` challenge gives the empty challenge.
    pub fn parse(header: &str) -> Challenge {
        let mut end = header.len().min(MAX_HEADER_BYTES);
        while !header.is_char_boundary(end) {
            end -= 1;
        }
        let mut parser = Parser {
            rest: &header[..end],
        };
        let mut in_bearer = false;
        let mut seen_bearer = false;
        let mut challenge = Challenge::default();
        let mut scope_seen = false;
        loop {
            parser.skip(|c| c.is_whitespace() || c == ',');
            if parser.rest.is_empty() {
                break;
            }
            let Some(name) = parser.token() else {
                // Not a token: skip one character of whatever it is.
                parser.bump();
                continue;
            };
            parser.skip(char::is_whitespace);
            if parser.rest.starts_with('=') {
                parser.bump();
                parser.skip(char::is_whitespace);
                let value = parser.value();
                if !in_bearer {
                    continue;
                }
                let name = name.to_ascii_lowercase();
                match name.as_str() {
                    "resource_metadata" if challenge.resource_metadata.is_none() => {
                        challenge.resource_metadata = Some(value);
                    }
                    "scope" if !scope_seen => {
                        scope_seen = true;
                        challenge.scopes = split_scopes(&value);
                    }
                    "error" if challenge.error.is_none() => challenge.error = Some(value),
                    _ => {}
                }
            } else {
                // A new challenge's scheme; only the first Bearer one counts.
                if seen_bearer {
                    if in_bearer {
                        break;
                    }
                    continue;
                }
                in_bearer =
                    name.eq_ignore_ascii_case("bearer") || name.eq_ignore_ascii_case("dpop");
                seen_bearer = in_bearer;
                challenge.dpop = name.eq_ignore_ascii_case("dpop");
            }
        }
        challenge
    }

    /// Whether the challenge says the token lacks a scope (`error="insufficient_scope"`).
    pub fn insufficient_scope(&self) -> bool {
        self.error
            .as_deref()
            .is_some_and(|error| error.eq_ignore_ascii_case("insufficient_scope"))
    }
}

/// A space-separated scope list as its distinct scopes, in order.
pub(crate) fn split_scopes(value: &str) -> Vec<String> {
    let mut scopes: Vec<String> = Vec::new();
    for scope in value.split_ascii_whitespace() {
        if !scopes.iter().any(|s| s == scope) {
            scopes.push(scope.to_owned());
        }
    }
    scopes
}

struct Parser<'a> {
    rest: &'a str,
}

impl<'a> Parser<'a> {
    fn bump(&mut self) {
        let mut chars = self.rest.chars();
        chars.next();
        self.rest = chars.as_str();
    }

    fn skip(&mut self, what: impl Fn(char) -> bool) {
        self.rest = self.rest.trim_start_matches(what);
    }

    /// An RFC 7230 token (tchar+).
    fn token(&mut self) -> Option<&'a str> {
        let end = self
            .rest
            .find(|c: char| !is_tchar(c))
            .unwrap_or(self.rest.len());
        if end == 0 {
            return None;
        }
        let (token, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(token)
    }

    /// A quoted string (unescaped, an unterminated one runs to the end) or a bare value up to
    /// the next comma or space.
    fn value(&mut self) -> String {
        if let Some(quoted) = self.rest.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            while let Some((at, c)) = chars.next() {
                match c {
                    '"' => {
                        self.rest = &quoted[at + 1..];
                        return value;
                    }
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    c => value.push(c),
                }
            }
            self.rest = "";
            return value;
        }
        let end = self
            .rest
            .find(|c: char| c == ',' || c.is_whitespace())
            .unwrap_or(self.rest.len());
        let (value, rest) = self.rest.split_at(end);
        self.rest = rest;
        value.to_owned()
    }
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scopes(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_dpop_challenge_is_read_and_marked() {
        let challenge =
            Challenge::parse(r#"DPoP error="use_dpop_nonce", resource_metadata="https://r/prm""#);
        assert!(challenge.dpop);
        assert_eq!(challenge.error.as_deref(), Some("use_dpop_nonce"));
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("https://r/prm")
        );
        assert!(!Challenge::parse(r#"Bearer scope="a""#).dpop);
    }

    #[test]
    fn reads_the_spec_example() {
        let challenge = Challenge::parse(
            "Bearer error=\"insufficient_scope\", scope=\"files:write files:read\", \
             resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource\", \
             error_description=\"File write permission required\"",
        );
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(challenge.scopes, scopes(&["files:write", "files:read"]));
        assert!(challenge.insufficient_scope());
    }

    #[test]
    fn odd_spellings_still_read() {
        // Lowercase scheme, upper-case names, spaces around `=`, bare values, no commas.
        let challenge = Challenge::parse(
            "bearer RESOURCE_METADATA = https://a.example/prm Scope=mcp:basic error=Insufficient_Scope",
        );
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("https://a.example/prm")
        );
        assert_eq!(challenge.scopes, scopes(&["mcp:basic"]));
        assert!(challenge.insufficient_scope());
    }

    #[test]
    fn escapes_and_the_first_bearer_challenge_among_others() {
        let challenge = Challenge::parse(
            "Basic realm=\"x, y\", Bearer realm=\"a \\\"b\\\"\", scope=\"s1  s1 s2\", \
             DPoP resource_metadata=\"https://wrong.example\"",
        );
        assert_eq!(challenge.scopes, scopes(&["s1", "s2"]));
        assert_eq!(challenge.resource_metadata, None);
    }

    #[test]
    fn a_parameter_named_twice_keeps_its_first_value() {
        let challenge = Challenge::parse("Bearer scope=\"a\", scope=\"b\"");
        assert_eq!(challenge.scopes, scopes(&["a"]));
    }

    #[test]
    fn hostile_input_gives_an_empty_or_partial_challenge() {
        for header in [
            "",
            "=",
            "Bearer",
            "Bearer scope=\"unterminated",
            "\u{0}\u{7f}\"\"==,,,",
            "Bearer ,,,, ==== \"\" scope",
            "Negotiate abc==, Bearer error=",
            "Bearer résumé=\"x\" scope=\"é\"",
        ] {
            let _ = Challenge::parse(header);
        }
        assert_eq!(
            Challenge::parse("Bearer scope=\"unterminated").scopes,
            scopes(&["unterminated"])
        );
        assert_eq!(Challenge::parse("Basic realm=x"), Challenge::default());
        let long = format!("Bearer scope=\"{}\"", "a".repeat(1_000_000));
        assert!(Challenge::parse(&long).scopes[0].len() <= MAX_HEADER_BYTES);
    }
}
