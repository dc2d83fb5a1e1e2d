//! `Http`: the one blocking HTTP agent (ureq) behind discovery, registration and `oauth2`'s
//! token requests, and the rule of which urls may carry credentials.

use std::time::Duration;

use oauth2::{HttpRequest, HttpResponse, SyncHttpClient};
use serde_json::Value;
use url::{Host, Url};

use crate::error::{AuthError, shown};

/// The largest metadata document or token endpoint answer read.
pub(crate) const MAX_BODY_BYTES: u64 = 1024 * 1024;

/// How long one request may take, connection to last byte.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A failed exchange with an authorization server, worded without the request's body (which
/// may hold a code, a verifier or a secret).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpError(String);

impl HttpError {
    pub(crate) fn new(reason: String) -> HttpError {
        HttpError(reason)
    }
}

/// The agent: redirects never followed, statuses answered rather than turned into errors, no
/// proxy, bodies cut at [`MAX_BODY_BYTES`].
#[derive(Clone)]
pub(crate) struct Http {
    agent: ureq::Agent,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Http")
    }
}

impl Http {
    pub(crate) fn new() -> Http {
        let config = ureq::Agent::config_builder()
            .max_redirects(0)
            .http_status_as_error(false)
            .proxy(None)
            .timeout_global(Some(REQUEST_TIMEOUT))
            .user_agent(concat!("mcpl/", env!("CARGO_PKG_VERSION")));
        #[cfg(feature = "tls")]
        let config = config.tls_config(mcpl_tls::trust().ureq_config());
        let agent = config.build().new_agent();
        Http { agent }
    }

    /// GETs a JSON document: `Ok(None)` for any status but 200, or a 200 that is not a JSON
    /// object (a web app's catch-all page), so the caller tries the next place; an error when
    /// the server cannot be reached.
    pub(crate) fn get_json(&self, url: &Url, what: &str) -> Result<Option<Value>, AuthError> {
        let request = oauth2::http::Request::get(url.as_str())
            .header("accept", "application/json")
            .body(Vec::new())
            .map_err(|_| AuthError::http(what, url, "the url cannot be requested"))?;
        let response = self
            .call(request)
            .map_err(|error| AuthError::http(what, url, &error.to_string()))?;
        if response.status() != 200 {
            tracing::debug!(%url, status = response.status().as_u16(), "{what}: not here");
            return Ok(None);
        }
        match serde_json::from_slice::<Value>(response.body()) {
            Ok(value @ Value::Object(_)) => Ok(Some(value)),
            _ => {
                tracing::debug!(%url, "{what}: not a JSON object");
                Ok(None)
            }
        }
    }

    /// POSTs a JSON body and reads a JSON object back, with the status.
    pub(crate) fn post_json(
        &self,
        url: &Url,
        body: &Value,
        what: &str,
    ) -> Result<(u16, Option<Value>), AuthError> {
        let request = oauth2::http::Request::post(url.as_str())
            .header("accept", "application/json")
            .header("content-type", "application/json")
            .body(body.to_string().into_bytes())
            .map_err(|_| AuthError::http(what, url, "the url cannot be requested"))?;
        let response = self
            .call(request)
            .map_err(|error| AuthError::http(what, url, &error.to_string()))?;
        let value = serde_json::from_slice::<Value>(response.body())
            .ok()
            .filter(Value::is_object);
        Ok((response.status().as_u16(), value))
    }

    /// GETs a url without following its redirect, and gives the status and `Location`.
    pub(crate) fn get_location(
        &self,
        url: &Url,
        what: &str,
    ) -> Result<(u16, Option<String>), AuthError> {
        let request = oauth2::http::Request::get(url.as_str())
            .body(Vec::new())
            .map_err(|_| AuthError::http(what, url, "the url cannot be requested"))?;
        let response = self
            .call(request)
            .map_err(|error| AuthError::http(what, url, &error.to_string()))?;
        let location = response
            .headers()
            .get("location")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        Ok((response.status().as_u16(), location))
    }
}

impl SyncHttpClient for Http {
    type Error = HttpError;

    fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let target = request.uri().to_string();
        let response = self.agent.run(request).map_err(|error| {
            // ureq's errors name the failure and at most the url; never a body.
            HttpError(format!("request to {} failed: {}", shown(&target), error))
        })?;
        let (parts, body) = response.into_parts();
        let bytes = body
            .into_with_config()
            .limit(MAX_BODY_BYTES)
            .read_to_vec()
            .map_err(|error| {
                HttpError(format!(
                    "the answer from {} could not be read: {}",
                    shown(&target),
                    error
                ))
            })?;
        Ok(HttpResponse::from_parts(parts, bytes))
    }
}

/// Whether credentials may travel to `url`: https, or http to a loopback host (OAuth 2.1
/// §1.5; MCP's redirect uris are localhost or https).
pub(crate) fn secure(url: &Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => match url.host() {
            Some(Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
            Some(Host::Ipv4(ip)) => ip.is_loopback(),
            Some(Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        },
        _ => false,
    }
}

/// `url` itself, or the error saying it may not carry credentials.
pub(crate) fn require_secure(url: &Url, what: &str) -> Result<(), AuthError> {
    if secure(url) {
        Ok(())
    } else {
        Err(AuthError::Insecure {
            what: what.to_owned(),
            url: shown(url.as_str()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_or_loopback_http_only() {
        for (url, expected) in [
            ("https://as.example/token", true),
            ("http://127.0.0.1:8080/token", true),
            ("http://127.9.9.9/token", true),
            ("http://[::1]:9/token", true),
            ("http://LOCALHOST:9/token", true),
            ("http://as.example/token", false),
            ("http://localhost.evil.example/token", false),
            ("ftp://as.example/token", false),
        ] {
            let url = Url::parse(url).expect("a url");
            assert_eq!(secure(&url), expected, "{url}");
        }
    }
}
