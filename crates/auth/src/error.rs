//! `AuthError`: every way authorization fails, worded without any credential.

use url::Url;

/// The longest server-given text an error repeats.
const MAX_SHOWN_CHARS: usize = 200;
/// The longest error code an error repeats: RFC 6749's and RFC 7591's registered codes are all
/// shorter than 32 characters.
const MAX_ERROR_CODE_CHARS: usize = 40;

/// Why authorization with a remote server failed. No variant holds a token, a code, a
/// verifier, a client secret or a key: what a server sent is repeated only where it names a
/// place or a standard error code, cut at 200 characters with control characters replaced.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A request could not be made or its answer read.
    #[error("{what} at {url}: {reason}")]
    Http {
        /// What was being fetched.
        what: String,
        /// Where.
        url: String,
        /// Why it failed.
        reason: String,
    },
    /// A url that would carry a credential is neither https nor loopback http.
    #[error("{what} must be https (or http on a loopback host): {url}")]
    Insecure {
        /// What the url is.
        what: String,
        /// The url.
        url: String,
    },
    /// No protected resource metadata, and no authorization server at the origin either.
    #[error("no authorization server found for {server}")]
    NoAuthorizationServer {
        /// The MCP server.
        server: String,
    },
    /// The protected resource metadata cannot be used.
    #[error("the protected resource metadata at {url} cannot be used: {reason}")]
    ResourceMetadata {
        /// Where it was.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The protected resource metadata is for another resource (RFC 9728 §3.3).
    #[error(
        "the protected resource metadata names resource {found}, which is not this server ({expected})"
    )]
    ResourceMismatch {
        /// The `resource` it names.
        found: String,
        /// The server mcpl dialed.
        expected: String,
    },
    /// No authorization server metadata at any well-known place for the issuer.
    #[error("no authorization server metadata found for issuer {issuer}")]
    NoServerMetadata {
        /// The issuer.
        issuer: String,
    },
    /// The metadata names another issuer than the one its url was built from (RFC 8414 §3.3).
    #[error("the authorization server metadata at {url} names issuer {found}, not {expected}")]
    IssuerMismatch {
        /// Where the metadata was.
        url: String,
        /// The `issuer` it names.
        found: String,
        /// The issuer its url was built from.
        expected: String,
    },
    /// The authorization server metadata cannot be used.
    #[error("the authorization server metadata at {url} cannot be used: {reason}")]
    ServerMetadata {
        /// Where it was.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The authorization server does not say it supports PKCE with S256.
    #[error(
        "the authorization server {issuer} does not list S256 in code_challenge_methods_supported"
    )]
    NoPkce {
        /// The issuer.
        issuer: String,
    },
    /// No client identity can be had for this authorization server.
    #[error(
        "no client id for {issuer}: no pre-registered client, no client id metadata document support and no registration endpoint"
    )]
    NoClientId {
        /// The issuer.
        issuer: String,
    },
    /// The pre-registered client belongs to another authorization server.
    #[error(
        "the pre-registered client is for {configured}, but the server's authorization server is now {issuer}"
    )]
    PreRegisteredElsewhere {
        /// The issuer the config names.
        configured: String,
        /// The issuer the metadata names.
        issuer: String,
    },
    /// Dynamic client registration failed.
    #[error("client registration at {url} failed: {reason}")]
    Registration {
        /// The registration endpoint.
        url: String,
        /// Why.
        reason: String,
    },
    /// The authorization response was refused before any token request (state, `iss`, code)
    /// or carried an error.
    #[error("the authorization response was refused: {reason}")]
    AuthorizationResponse {
        /// Why.
        reason: String,
    },
    /// The token endpoint refused or its answer could not be used.
    #[error("the token request to {url} failed: {reason}")]
    Token {
        /// The token endpoint.
        url: String,
        /// Why.
        reason: String,
    },
    /// The person did not finish in time.
    #[error("no authorization arrived on the loopback redirect within {seconds} s")]
    Timeout {
        /// The limit.
        seconds: u64,
    },
    /// Only callbacks with another `state` than the one sent reached the loopback redirect in
    /// time: forged, or left from an earlier attempt. Each was ignored.
    #[error(
        "no authorization response with the state sent arrived on the loopback redirect within {seconds} s ({ignored} with another state ignored)"
    )]
    ForgedCallbacks {
        /// The limit.
        seconds: u64,
        /// How many callbacks were ignored.
        ignored: u32,
    },
    /// The loopback redirect could not be received, or the url could not be shown.
    #[error("the authorization step failed: {0}")]
    Redirect(String),
    /// The token file cannot be used.
    #[error("token file {path}: {reason}")]
    TokenFile {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The private key for `private_key_jwt` cannot be used.
    #[error("the client assertion key cannot be used: {0}")]
    Key(String),
}

impl AuthError {
    pub(crate) fn http(what: &str, url: &Url, reason: &str) -> AuthError {
        AuthError::Http {
            what: what.to_owned(),
            url: shown(url.as_str()),
            reason: shown(reason),
        }
    }
}

/// Server-given text as an error may repeat it: at most 200 characters, control characters
/// replaced with U+FFFD.
pub(crate) fn shown(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(MAX_SHOWN_CHARS)
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect();
    if text.chars().nth(MAX_SHOWN_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// An OAuth `error` code as an error may repeat it. RFC 6749 (§4.1.2.1, §5.2) allows only
/// %x20-21 / %x23-5B / %x5D-7E in it, so any other character becomes `?`, and it is cut at
/// [`MAX_ERROR_CODE_CHARS`]. Its `error_description` is never repeated: a server may echo the
/// request in it, and the request holds the code, the PKCE verifier, the client secret or the
/// refresh token.
pub(crate) fn error_code(code: &str) -> String {
    let allowed = |c: char| matches!(c, '\x20'..='\x21' | '\x23'..='\x5b' | '\x5d'..='\x7e');
    let mut out: String = code
        .chars()
        .take(MAX_ERROR_CODE_CHARS)
        .map(|c| if allowed(c) { c } else { '?' })
        .collect();
    if code.chars().nth(MAX_ERROR_CODE_CHARS).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_code_keeps_rfc_6749_characters_and_is_cut() {
        assert_eq!(error_code("invalid_grant"), "invalid_grant");
        assert_eq!(error_code("a\"b\\c\nd\u{e9}"), "a?b?c?d?");
        let long = "x".repeat(500);
        assert_eq!(error_code(&long).chars().count(), MAX_ERROR_CODE_CHARS + 1);
    }

    #[test]
    fn shown_cuts_and_replaces_control_characters() {
        assert_eq!(shown("a\nb\u{1b}[31m"), "a\u{fffd}b\u{fffd}[31m");
        let long = "x".repeat(500);
        assert_eq!(shown(&long).chars().count(), MAX_SHOWN_CHARS + 1);
    }
}
