//! Origins: where a reference points and where a server's connection was dialed, normalised
//! so that the two compare as the fetcher's origin check needs.

use std::fmt;

use ureq::http::Uri;

/// An http(s) origin: scheme, lowercased host and port, the scheme's default port dropped.
/// `ws` is read as `http` and `wss` as `https`, since a server dialed over a WebSocket serves
/// its payloads over plain HTTP on the same origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    secure: bool,
    host: String,
    port: Option<u16>,
}

impl Origin {
    /// The origin of a server's dialed address (`https://files.example`,
    /// `wss://Files.Example:443/mcp`), or `None` when it is not an http(s) or ws(s) url.
    pub fn of_dialed(url: &str) -> Option<Origin> {
        let (scheme, _) = split_scheme(url)?;
        let secure = match scheme.as_str() {
            "http" | "ws" => false,
            "https" | "wss" => true,
            _ => return None,
        };
        let rest = &url[scheme.len()..];
        let normalised = format!("{}{rest}", if secure { "https" } else { "http" });
        let uri = parse_http(&normalised)?;
        Origin::of_uri(&uri)
    }

    /// The origin of an http(s) uri ureq would dial.
    fn of_uri(uri: &Uri) -> Option<Origin> {
        let secure = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("http") => false,
            Some(s) if s.eq_ignore_ascii_case("https") => true,
            _ => return None,
        };
        let host = uri.host().filter(|h| !h.is_empty())?.to_ascii_lowercase();
        let default = if secure { 443 } else { 80 };
        let port = uri.port_u16().filter(|&p| p != default);
        Some(Origin { secure, host, port })
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.secure { "https" } else { "http" };
        write!(f, "{scheme}://{}", self.host)?;
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        Ok(())
    }
}

/// What a reference's uri is, for the fetcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// An http(s) url: the parsed uri ureq dials and its origin, which the check compares.
    Http { uri: Uri, origin: Origin },
    /// A scheme the host never reads (`file:`, and `ws:`/`wss:`, which name no payload).
    Never { scheme: String },
    /// Any other scheme (`demo://...`): an MCP resource, read with `resources/read`.
    Resource { scheme: String },
}

/// Reads a reference's uri, or `None` when it does not parse.
pub(crate) fn target(uri: &str) -> Option<Target> {
    let (scheme, _) = split_scheme(uri)?;
    match scheme.as_str() {
        "http" | "https" => {
            // A fragment names a part of the payload, never goes on the wire, and is not
            // something `http::Uri` takes.
            let without_fragment = uri.split('#').next().unwrap_or(uri);
            let uri = parse_http(without_fragment)?;
            let origin = Origin::of_uri(&uri)?;
            Some(Target::Http { uri, origin })
        }
        "file" | "ws" | "wss" => Some(Target::Never {
            scheme: format!("{scheme}:"),
        }),
        _ => Some(Target::Resource {
            scheme: format!("{scheme}:"),
        }),
    }
}

/// The scheme, lowercased, and the rest after its colon; `None` without a well-formed scheme
/// (RFC 3986: a letter, then letters, digits, `+`, `-` or `.`).
fn split_scheme(uri: &str) -> Option<(String, &str)> {
    let colon = uri.find(':')?;
    let scheme = &uri[..colon];
    let mut chars = scheme.chars();
    let first = chars.next()?;
    if !first.is_ascii_alphabetic()
        || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return None;
    }
    Some((scheme.to_ascii_lowercase(), &uri[colon + 1..]))
}

/// An http(s) uri as ureq parses it, so the origin checked is the origin dialed. Userinfo is
/// refused: `http://a@b/` dials `b`, and a reader of the uri should not have to know that.
fn parse_http(uri: &str) -> Option<Uri> {
    let parsed: Uri = uri.parse().ok()?;
    if parsed.authority()?.as_str().contains('@') {
        return None;
    }
    Some(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(url: &str) -> String {
        Origin::of_dialed(url).map_or("none".to_owned(), |o| o.to_string())
    }

    #[test]
    fn dialed_origins_are_normalised() {
        assert_eq!(
            origin("wss://Files.Example:443/mcp"),
            "https://files.example"
        );
        assert_eq!(origin("ws://127.0.0.1:80"), "http://127.0.0.1");
        assert_eq!(origin("http://127.0.0.1:8080/x"), "http://127.0.0.1:8080");
        assert_eq!(origin("https://h:80"), "https://h:80");
        assert_eq!(origin("HTTPS://[::1]:443"), "https://[::1]");
        assert_eq!(origin("ftp://h"), "none");
        assert_eq!(origin("not a url"), "none");
    }

    #[test]
    fn targets_are_told_apart() {
        let Some(Target::Http { origin, .. }) = target("HTTP://Files.Example:80/a?b=c#d") else {
            panic!("an http target")
        };
        assert_eq!(origin.to_string(), "http://files.example");
        assert_eq!(
            target("file:///etc/passwd"),
            Some(Target::Never {
                scheme: "file:".to_owned()
            })
        );
        assert_eq!(
            target("demo://images/cat.png"),
            Some(Target::Resource {
                scheme: "demo:".to_owned()
            })
        );
        assert_eq!(target(&"a".repeat(4096)), None);
        assert_eq!(target("http://"), None);
        assert_eq!(target("http://user@evil.example/"), None);
        assert_eq!(target("1http://x"), None);
    }
}
