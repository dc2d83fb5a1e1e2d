//! Origins: where a reference points and where a server's connection was dialed, read by the
//! WHATWG url parser (the `url` crate) so that the two compare as a browser would compare them.

use std::fmt;

use ureq::http::Uri;
use url::Url;

/// An http(s) origin: scheme, host as the WHATWG parser serialises it (lowercased, IDNA hosts
/// in punycode, IPv4 in dotted decimal, IPv6 in brackets) and port, the scheme's default port
/// dropped. `ws` is read as `http` and `wss` as `https`, since a server dialed over a WebSocket
/// serves its payloads over plain HTTP on the same origin.
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
        let url = parse_http(url)?;
        Origin::of_url(&url)
    }

    /// The origin of a parsed http(s) or ws(s) url; `Url::port` is already `None` for the
    /// scheme's default port, and `ws`/`wss` share `http`/`https`'s defaults.
    fn of_url(url: &Url) -> Option<Origin> {
        let secure = match url.scheme() {
            "http" | "ws" => false,
            "https" | "wss" => true,
            _ => return None,
        };
        let host = url.host_str().filter(|h| !h.is_empty())?.to_owned();
        Some(Origin {
            secure,
            host,
            port: url.port(),
        })
    }

    /// Whether `uri` is what ureq dials for this origin: its host and port as `http::Uri`
    /// reads them. The uri is made from the WHATWG serialisation, so they agree; this check
    /// keeps the origin checked the origin dialed should the two parsers ever differ.
    fn dialed_by(&self, uri: &Uri) -> bool {
        let secure = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return false,
        };
        let default = if secure { 443 } else { 80 };
        secure == self.secure
            && uri.host() == Some(self.host.as_str())
            && uri.port_u16().filter(|&p| p != default) == self.port
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
    /// An http(s) url: the uri ureq dials and its origin, which the check compares.
    Http { uri: Uri, origin: Origin },
    /// A scheme the host never reads (`file:`, and `ws:`/`wss:`, which name no payload).
    Never { scheme: String },
    /// Any other scheme (`demo://...`): an MCP resource, read with `resources/read`.
    Resource { scheme: String },
}

/// Reads a reference's uri, or `None` when it does not parse.
///
/// The WHATWG parser decides the scheme, so a spelling it normalises (` http://x`, `ht\tp://x`)
/// is checked as the http url it is. A uri it refuses is still a resource when it has an
/// RFC 3986 scheme other than http(s): the host never dials those, it hands them back to the
/// server that sent them, unchanged.
pub(crate) fn target(uri: &str) -> Option<Target> {
    let (scheme, url) = match Url::parse(uri) {
        Ok(url) => (url.scheme().to_owned(), Some(url)),
        Err(_) => (rfc3986_scheme(uri)?, None),
    };
    match scheme.as_str() {
        "http" | "https" => {
            let mut url = url.filter(|url| !has_userinfo(url))?;
            let origin = Origin::of_url(&url)?;
            // A fragment names a part of the payload and never goes on the wire.
            url.set_fragment(None);
            let uri: Uri = url.as_str().parse().ok()?;
            origin
                .dialed_by(&uri)
                .then_some(Target::Http { uri, origin })
        }
        "file" | "ws" | "wss" => Some(Target::Never {
            scheme: format!("{scheme}:"),
        }),
        _ => Some(Target::Resource {
            scheme: format!("{scheme}:"),
        }),
    }
}

/// The scheme, lowercased; `None` without a well-formed scheme (RFC 3986: a letter, then
/// letters, digits, `+`, `-` or `.`, then a colon).
fn rfc3986_scheme(uri: &str) -> Option<String> {
    let (scheme, _) = uri.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let well_formed = first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    well_formed.then(|| scheme.to_ascii_lowercase())
}

/// An http(s) or ws(s) url without userinfo.
fn parse_http(url: &str) -> Option<Url> {
    let url = Url::parse(url).ok()?;
    let http = matches!(url.scheme(), "http" | "https" | "ws" | "wss");
    (http && !has_userinfo(&url)).then_some(url)
}

/// Userinfo is refused: `http://a@b/` dials `b`, and a reader of the uri should not have to
/// know that, nor should a password in a uri reach the wire.
fn has_userinfo(url: &Url) -> bool {
    !url.username().is_empty() || url.password().is_some()
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn origin(url: &str) -> String {
        Origin::of_dialed(url).map_or("none".to_owned(), |o| o.to_string())
    }

    /// What the fetcher makes of a reference: the uri it dials and that uri's origin, or the
    /// scheme it refuses or reads as a resource, or that the uri does not parse.
    fn read(uri: &str) -> String {
        match target(uri) {
            Some(Target::Http { uri, origin }) => format!("dials {uri} on {origin}"),
            Some(Target::Never { scheme }) => format!("never {scheme}"),
            Some(Target::Resource { scheme }) => format!("resource {scheme}"),
            None => "does not parse".to_owned(),
        }
    }

    #[rstest]
    #[case("wss://Files.Example:443/mcp", "https://files.example")]
    #[case("ws://127.0.0.1:80", "http://127.0.0.1")]
    #[case("http://127.0.0.1:8080/x", "http://127.0.0.1:8080")]
    #[case("https://h:80", "https://h:80")]
    #[case("HTTPS://[::1]:443", "https://[::1]")]
    #[case("https://bücher.example/mcp", "https://xn--bcher-kva.example")]
    #[case("https://[0:0:0:0:0:0:0:1]", "https://[::1]")]
    #[case(" https://files.example:0443\t", "https://files.example")]
    #[case("https://user@files.example", "none")]
    #[case("ftp://h", "none")]
    #[case("not a url", "none")]
    fn dialed_origins_are_normalised(#[case] dialed: &str, #[case] expected: &str) {
        assert_eq!(origin(dialed), expected);
    }

    #[rstest]
    #[case(
        "HTTP://Files.Example:80/a?b=c#d",
        "dials http://files.example/a?b=c on http://files.example"
    )]
    // A path and query are percent-encoded as WHATWG says, so `http::Uri` takes them.
    #[case(
        "http://files.example/ü?q={\"a\":1}#ü",
        "dials http://files.example/%C3%BC?q={%22a%22:1} on http://files.example"
    )]
    #[case("file:///etc/passwd", "never file:")]
    #[case("wss://files.example/x", "never wss:")]
    #[case("demo://images/cat.png", "resource demo:")]
    // A resource uri the WHATWG parser refuses is still handed back to its server unchanged.
    #[case("demo://a b/c", "resource demo:")]
    #[case("1http://x", "does not parse")]
    #[case("http://", "does not parse")]
    #[case("http://user@evil.example/", "does not parse")]
    #[case("http://files.example:99999/", "does not parse")]
    #[case("http://a b.example/", "does not parse")]
    #[case("http://a%20b.example/", "does not parse")]
    // IDNA: a Unicode host is its punycode; full-width dots are dots, a soft hyphen is nothing.
    #[case(
        "http://bücher.example/a",
        "dials http://xn--bcher-kva.example/a on http://xn--bcher-kva.example"
    )]
    #[case(
        "http://BÜCHER.example/",
        "dials http://xn--bcher-kva.example/ on http://xn--bcher-kva.example"
    )]
    #[case(
        "http://files\u{FF0E}example/",
        "dials http://files.example/ on http://files.example"
    )]
    #[case(
        "http://fi\u{AD}les.example/",
        "dials http://files.example/ on http://files.example"
    )]
    // Percent-encoded host characters are decoded before the host is read.
    #[case(
        "http://%66iles.example/",
        "dials http://files.example/ on http://files.example"
    )]
    #[case(
        "http://files%2Eexample/",
        "dials http://files.example/ on http://files.example"
    )]
    // IP literals: IPv6 compressed, IPv4 in any of the forms browsers accept.
    #[case(
        "http://[0:0::1]:8080/",
        "dials http://[::1]:8080/ on http://[::1]:8080"
    )]
    #[case(
        "http://[::FFFF:127.0.0.1]/",
        "dials http://[::ffff:7f00:1]/ on http://[::ffff:7f00:1]"
    )]
    #[case("http://0x7f.1/", "dials http://127.0.0.1/ on http://127.0.0.1")]
    #[case("http://2130706433/", "dials http://127.0.0.1/ on http://127.0.0.1")]
    #[case("http://0177.0.0.1/", "dials http://127.0.0.1/ on http://127.0.0.1")]
    // Explicit default ports are dropped, other ports kept.
    #[case(
        "https://files.example:443/a",
        "dials https://files.example/a on https://files.example"
    )]
    #[case(
        "http://files.example:0080/a",
        "dials http://files.example/a on http://files.example"
    )]
    #[case(
        "https://files.example:80/a",
        "dials https://files.example:80/a on https://files.example:80"
    )]
    // Empty userinfo is no userinfo.
    #[case(
        "http://@files.example/a",
        "dials http://files.example/a on http://files.example"
    )]
    #[case(
        "http://:@files.example/a",
        "dials http://files.example/a on http://files.example"
    )]
    // Hostile spellings, read as WHATWG reads them: backslashes are slashes, tabs and newlines
    // are dropped, leading and trailing spaces trimmed, and `http:` needs no slashes.
    #[case(
        "http:\\\\evil.example\\x",
        "dials http://evil.example/x on http://evil.example"
    )]
    #[case(
        "http://files.example\\@evil.example/",
        "dials http://files.example/@evil.example/ on http://files.example"
    )]
    #[case("http://files.example\n@evil.example/", "does not parse")]
    #[case(
        "ht\ttp://fi\nles.exa\rmple/a",
        "dials http://files.example/a on http://files.example"
    )]
    #[case(
        " \u{1}http://files.example/a ",
        "dials http://files.example/a on http://files.example"
    )]
    #[case(
        "http:files.example/a",
        "dials http://files.example/a on http://files.example"
    )]
    #[case(
        "http:/files.example/a",
        "dials http://files.example/a on http://files.example"
    )]
    #[case(
        "http:///files.example/a",
        "dials http://files.example/a on http://files.example"
    )]
    #[case(
        "http://files.example./a",
        "dials http://files.example./a on http://files.example."
    )]
    fn targets_are_read_as_whatwg_reads_them(#[case] uri: &str, #[case] expected: &str) {
        assert_eq!(read(uri), expected);
    }

    #[test]
    fn an_overlong_uri_without_a_scheme_does_not_parse() {
        assert_eq!(read(&"a".repeat(4096)), "does not parse");
    }

    /// Whether a reference is on the origin a server was dialed at.
    fn same_origin(reference: &str, dialed: &str) -> bool {
        let Some(Target::Http { origin, .. }) = target(reference) else {
            panic!("{reference} is no http target")
        };
        Some(origin) == Origin::of_dialed(dialed)
    }

    #[rstest]
    #[case("https://a.example:443/x", "https://a.example", true)]
    #[case("https://a.example/x", "wss://a.example:443/mcp", true)]
    #[case("HTTPS://A.EXAMPLE/x", "https://a.example", true)]
    #[case("https://bücher.example/x", "https://xn--bcher-kva.example", true)]
    #[case("https://xn--bcher-kva.example/x", "https://BÜCHER.example", true)]
    #[case("http://[::1]:8080/x", "http://[0::1]:8080/mcp", true)]
    #[case("http://127.0.0.1/x", "http://0x7f000001", true)]
    #[case("https://a.example:8443/x", "https://a.example", false)]
    #[case("http://a.example/x", "https://a.example", false)]
    #[case("https://a.example./x", "https://a.example", false)]
    #[case("http://[::ffff:127.0.0.1]/x", "http://127.0.0.1", false)]
    #[case("https://b%C3%BCcher.example/x", "https://xn--bcher-kva.example", true)]
    fn origins_compare_as_whatwg_serialises_them(
        #[case] reference: &str,
        #[case] dialed: &str,
        #[case] same: bool,
    ) {
        assert_eq!(same_origin(reference, dialed), same);
    }
}
