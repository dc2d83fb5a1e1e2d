//! The authorization hook of dialed connections: what `Authorization` header a request carries,
//! and what to do when a server answers 401 or 403.

use std::error::Error;

/// Gives a dialed connection's requests their `Authorization` header and hears the server's
/// challenges. The OAuth client (`mcpl-auth`) implements it; [`BearerToken`] is the fixed token
/// of a server's config.
pub trait Authorizer: Send + Sync {
    /// The whole `Authorization` header value for a request to `url` (`Bearer …`), or `None`
    /// to send none.
    fn authorization(&self, url: &url::Url) -> Option<String>;

    /// The headers a request with `method` (`POST`, `GET`) to `url` carries for its
    /// authorization: `Authorization`, and a `DPoP` proof when the token is bound to a key
    /// (RFC 9449). By default the [`Authorizer::authorization`] header alone.
    fn request_headers(&self, method: &str, url: &url::Url) -> Vec<(String, String)> {
        let _ = method;
        self.authorization(url)
            .map(|value| vec![("Authorization".to_owned(), value)])
            .unwrap_or_default()
    }

    /// Called when a request to `url` was answered `status` (401 or 403), with the answer's
    /// `WWW-Authenticate` header. `Ok(true)` means a new [`Authorizer::authorization`] is ready
    /// and the request is sent once more; `Ok(false)` fails the request with the status.
    fn on_challenge(
        &self,
        url: &url::Url,
        status: u16,
        www_authenticate: Option<&str>,
    ) -> Result<bool, Box<dyn Error + Send + Sync>>;

    /// Called when a 401 or 403 answer to a request to `url` carries a `DPoP-Nonce` header
    /// (RFC 9449 §9). `true` means the next proof carries it and the request is sent once more;
    /// by default `false`, as a bearer token needs no nonce.
    fn on_nonce(&self, url: &url::Url, nonce: &str) -> bool {
        let _ = (url, nonce);
        false
    }
}

/// How a transport hears a 401 or 403 to one request: a `DPoP-Nonce` earns one retry, a
/// challenge another; no more.
#[derive(Debug, Default)]
pub(crate) struct Heard {
    nonce: bool,
    challenge: bool,
}

impl Heard {
    /// Whether the request should be sent once more after this `status` answer.
    pub(crate) fn retry(
        &mut self,
        authorizer: &dyn Authorizer,
        server: &str,
        url: &url::Url,
        status: u16,
        www_authenticate: Option<&str>,
        nonce: Option<&str>,
    ) -> bool {
        if !matches!(status, 401 | 403) {
            return false;
        }
        if let Some(nonce) = nonce
            && !self.nonce
        {
            self.nonce = true;
            if authorizer.on_nonce(url, nonce) {
                return true;
            }
        }
        if self.challenge {
            return false;
        }
        self.challenge = true;
        match authorizer.on_challenge(url, status, www_authenticate) {
            Ok(retry) => retry,
            Err(error) => {
                tracing::warn!(server, %error, "authorization failed");
                false
            }
        }
    }
}

/// A fixed bearer token for one server, sent only to requests on that server's origin
/// (scheme, host and port as the WHATWG parser reads them).
#[derive(Clone)]
pub struct BearerToken {
    origin: url::Origin,
    token: String,
}

impl BearerToken {
    /// `token` for requests on `server`'s origin.
    pub fn new(server: &url::Url, token: impl Into<String>) -> BearerToken {
        BearerToken {
            origin: server.origin(),
            token: token.into(),
        }
    }
}

/// Never shows the token.
impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BearerToken")
            .field("origin", &self.origin.ascii_serialization())
            .finish_non_exhaustive()
    }
}

impl Authorizer for BearerToken {
    fn authorization(&self, url: &url::Url) -> Option<String> {
        (url.origin() == self.origin).then(|| format!("Bearer {}", self.token))
    }

    fn on_challenge(
        &self,
        _: &url::Url,
        _: u16,
        _: Option<&str>,
    ) -> Result<bool, Box<dyn Error + Send + Sync>> {
        // A fixed token cannot be renewed: the request fails with the status.
        Ok(false)
    }
}

/// An authorizer that tells `record` every header value it hands out, and the credential after
/// its scheme (`Bearer <token>`), before the request carries it: the host learns each token it
/// sends, a refreshed one too, so that a server echoing it back is redacted.
pub struct Recorded {
    inner: std::sync::Arc<dyn Authorizer>,
    record: std::sync::Arc<dyn Fn(&str) + Send + Sync>,
}

impl Recorded {
    /// `inner`, with every value it gives told to `record`.
    pub fn new(
        inner: std::sync::Arc<dyn Authorizer>,
        record: std::sync::Arc<dyn Fn(&str) + Send + Sync>,
    ) -> Recorded {
        Recorded { inner, record }
    }
}

impl Authorizer for Recorded {
    fn authorization(&self, url: &url::Url) -> Option<String> {
        let value = self.inner.authorization(url)?;
        (self.record)(&value);
        if let Some((_, credential)) = value.split_once(' ') {
            (self.record)(credential.trim());
        }
        Some(value)
    }

    fn request_headers(&self, method: &str, url: &url::Url) -> Vec<(String, String)> {
        let headers = self.inner.request_headers(method, url);
        for (name, value) in &headers {
            (self.record)(value);
            if name.eq_ignore_ascii_case("authorization")
                && let Some((_, credential)) = value.split_once(' ')
            {
                (self.record)(credential.trim());
            }
        }
        headers
    }

    fn on_challenge(
        &self,
        url: &url::Url,
        status: u16,
        www_authenticate: Option<&str>,
    ) -> Result<bool, Box<dyn Error + Send + Sync>> {
        self.inner.on_challenge(url, status, www_authenticate)
    }

    fn on_nonce(&self, url: &url::Url, nonce: &str) -> bool {
        self.inner.on_nonce(url, nonce)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wants a nonce, then has nothing more to give; counts what it heard.
    #[derive(Default)]
    struct Counting(std::sync::Mutex<(u32, u32)>);

    impl Authorizer for Counting {
        fn authorization(&self, _: &url::Url) -> Option<String> {
            None
        }

        fn on_challenge(
            &self,
            _: &url::Url,
            _: u16,
            _: Option<&str>,
        ) -> Result<bool, Box<dyn Error + Send + Sync>> {
            self.0.lock().unwrap().1 += 1;
            Ok(true)
        }

        fn on_nonce(&self, _: &url::Url, _: &str) -> bool {
            self.0.lock().unwrap().0 += 1;
            true
        }
    }

    #[test]
    fn a_nonce_earns_one_retry_and_a_challenge_one_more() {
        let url = url::Url::parse("https://mcp.example/mcp").unwrap();
        let authorizer = Counting::default();
        let mut heard = Heard::default();
        let mut retries = 0;
        while heard.retry(&authorizer, "s", &url, 401, None, Some("n")) {
            retries += 1;
            assert!(retries < 10, "no end");
        }
        assert_eq!(retries, 2);
        assert_eq!(*authorizer.0.lock().unwrap(), (1, 1));
        assert!(!Heard::default().retry(&authorizer, "s", &url, 500, None, Some("n")));
    }

    #[test]
    fn a_bearer_token_goes_to_its_origin_only() {
        let server = url::Url::parse("https://mcp.example/v1/mcp").unwrap();
        let token = BearerToken::new(&server, "s3cret");
        let same = url::Url::parse("https://mcp.example:443/other").unwrap();
        assert_eq!(token.authorization(&same).as_deref(), Some("Bearer s3cret"));
        for other in [
            "http://mcp.example/v1/mcp",
            "https://mcp.example:8443/v1/mcp",
            "https://evil.example/v1/mcp",
            "https://sub.mcp.example/v1/mcp",
        ] {
            let other = url::Url::parse(other).unwrap();
            assert_eq!(token.authorization(&other), None, "{other}");
        }
        assert!(!format!("{token:?}").contains("s3cret"));
        assert!(!token.on_challenge(&server, 401, None).unwrap());
    }

    #[test]
    fn a_recorded_authorizer_tells_each_value_and_its_credential() {
        let server = url::Url::parse("https://mcp.example/v1/mcp").unwrap();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = std::sync::Arc::clone(&seen);
        let recorded = Recorded::new(
            std::sync::Arc::new(BearerToken::new(&server, "s3cret-token")),
            std::sync::Arc::new(move |value: &str| sink.lock().unwrap().push(value.to_owned())),
        );
        assert_eq!(
            recorded.authorization(&server).as_deref(),
            Some("Bearer s3cret-token")
        );
        assert_eq!(
            *seen.lock().unwrap(),
            ["Bearer s3cret-token", "s3cret-token"]
        );
        let other = url::Url::parse("https://evil.example/").unwrap();
        assert_eq!(recorded.authorization(&other), None);
        assert_eq!(seen.lock().unwrap().len(), 2);
    }
}
