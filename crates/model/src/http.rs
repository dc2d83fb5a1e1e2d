//! HTTP backends for real providers (the `http` feature): a [`Model`] that POSTs the request
//! body its route's encoder made and reads the answer into a [`Turn`].
//!
//! [`AnthropicHttp`] speaks the Messages API (`<base>/v1/messages`), [`OpenAiChatHttp`] Chat
//! Completions (`<base>/v1/chat/completions`), [`OpenAiResponsesHttp`] the Responses API
//! (`<base>/v1/responses`) and [`GeminiHttp`] Gemini's `generateContent`
//! (`<base>/v1beta/models/<model>:generateContent`). All use a blocking `ureq` agent that follows no
//! redirect (a redirect could carry the key elsewhere), goes straight to loopback hosts and
//! through the environment's proxy otherwise. Plain `http://` is always built; `https://`
//! needs the `https` feature (mcpl-tls's one stack: rustls on ring, the trusted roots). A provider's error answer becomes
//! [`ModelError::Provider`] with its status and message, and the key is never in any error.
//! A 429 or 5xx answer is retried ([`Retry`]): after the `retry-after` the provider asked for (seconds or an HTTP date),
//! else after an exponential backoff, a bounded number of times within a bounded total wait.
//! Each answer's reported token usage is read into [`Turn::usage`].
//!
//! ```no_run
//! use mcpl_model::Model;
//! use mcpl_model::http::AnthropicHttp;
//!
//! let mut model = AnthropicHttp::from_env("claude-sonnet-4-5").unwrap();
//! let body = serde_json::json!({"model": "claude-sonnet-4-5", "max_tokens": 64,
//!     "messages": [{"role": "user", "content": "hi"}]});
//! let turn = model.complete(&body).unwrap();
//! println!("{}", turn.text);
//! ```

use std::time::Duration;

use serde_json::Value;

use crate::{Model, ModelError, Turn};
use mcpl_encode::decode::{anthropic_turn, gemini_turn, openai_chat_turn, openai_responses_turn};
use mcpl_lanes::RouteId;

/// The Messages API version header every request carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Where the Anthropic backend goes when `ANTHROPIC_BASE_URL` is unset.
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// Where the OpenAI backends go when `OPENAI_BASE_URL` is unset (with `/v1`, as the OpenAI SDK
/// writes it; a base without `/v1` means the same).
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Where the Gemini backend goes when `GOOGLE_GEMINI_BASE_URL` is unset (without the version).
pub const GEMINI_DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// The Gemini API version in every Gemini request path.
pub const GEMINI_API_VERSION: &str = "v1beta";

/// The longest a provider may take to answer, end to end.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// The longest a connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest answer read; a chat turn is far smaller.
const ANSWER_LIMIT: u64 = 16 * 1024 * 1024;

/// The most characters of an error answer quoted when it names no message.
const ERROR_QUOTE_CHARS: usize = 300;

/// The backend for the `anthropic:MODEL`, `openai-chat:MODEL`, `openai-responses:MODEL` or
/// `gemini:MODEL` model spec (the route is the part before the colon), configured from the
/// environment; `None` for a route with no HTTP backend (text-only).
pub fn model_from_env(route: RouteId, model: &str) -> Option<Result<Box<dyn Model>, ModelError>> {
    match route {
        RouteId::Anthropic => {
            Some(AnthropicHttp::from_env(model).map(|m| Box::new(m) as Box<dyn Model>))
        }
        RouteId::OpenAiChat => {
            Some(OpenAiChatHttp::from_env(model).map(|m| Box::new(m) as Box<dyn Model>))
        }
        RouteId::OpenAiResponses => {
            Some(OpenAiResponsesHttp::from_env(model).map(|m| Box::new(m) as Box<dyn Model>))
        }
        RouteId::Gemini => Some(GeminiHttp::from_env(model).map(|m| Box::new(m) as Box<dyn Model>)),
        RouteId::TextOnly => None,
    }
}

/// How often and how long a backend retries a 429 or 5xx answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Retry {
    /// The most retries after the first attempt.
    pub retries: u32,
    /// The first backoff when the provider names no `retry-after`; each later one doubles.
    pub backoff: Duration,
    /// The most time spent waiting over all retries; a `retry-after` beyond what is left ends
    /// the retrying.
    pub max_wait: Duration,
}

impl Retry {
    /// At most `retries` retries, the first after `backoff`, at most `max_wait` of waiting in
    /// all.
    pub const fn new(retries: u32, backoff: Duration, max_wait: Duration) -> Retry {
        Retry {
            retries,
            backoff,
            max_wait,
        }
    }
}

impl Default for Retry {
    /// Four retries, from one second, at most a minute of waiting in all.
    fn default() -> Retry {
        Retry {
            retries: 4,
            backoff: Duration::from_secs(1),
            max_wait: Duration::from_secs(60),
        }
    }
}

/// Anthropic's Messages API over HTTP.
#[derive(Debug)]
pub struct AnthropicHttp {
    endpoint: Endpoint,
}

impl AnthropicHttp {
    /// A backend for `model` at `base_url` (without `/v1`) with this key.
    pub fn new(base_url: &str, api_key: &str, model: &str) -> AnthropicHttp {
        AnthropicHttp {
            endpoint: Endpoint::new("anthropic", base_url, "/v1/messages", api_key, model),
        }
    }

    /// The same backend retrying as `retry` says.
    pub fn with_retry(mut self, retry: Retry) -> AnthropicHttp {
        self.endpoint.retry = retry;
        self
    }

    /// A backend for `model` keyed by `ANTHROPIC_API_KEY`, at `ANTHROPIC_BASE_URL` or
    /// [`ANTHROPIC_DEFAULT_BASE_URL`].
    pub fn from_env(model: &str) -> Result<AnthropicHttp, ModelError> {
        let (base, key) = from_env(
            "anthropic",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            ANTHROPIC_DEFAULT_BASE_URL,
        )?;
        Ok(AnthropicHttp::new(&base, &key, model))
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }
}

impl Model for AnthropicHttp {
    fn route(&self) -> Option<RouteId> {
        Some(RouteId::Anthropic)
    }

    fn complete(&mut self, body: &Value) -> Result<Turn, ModelError> {
        let answer = self.endpoint.post(body, |request, key| {
            request
                .header("x-api-key", key)
                .header("anthropic-version", ANTHROPIC_VERSION)
        })?;
        anthropic_turn(&answer).map_err(|error| self.endpoint.error(error.to_string()))
    }
}

/// OpenAI's Chat Completions API over HTTP (and any server that speaks it).
#[derive(Debug)]
pub struct OpenAiChatHttp {
    endpoint: Endpoint,
}

impl OpenAiChatHttp {
    /// A backend for `model` at `base_url` with this key. A base URL ending in `/v1`, as
    /// OpenAI's own clients write `OPENAI_BASE_URL`, is the same as one without.
    pub fn new(base_url: &str, api_key: &str, model: &str) -> OpenAiChatHttp {
        OpenAiChatHttp {
            endpoint: Endpoint::new(
                "openai-chat",
                base_url,
                "/v1/chat/completions",
                api_key,
                model,
            ),
        }
    }

    /// The same backend retrying as `retry` says.
    pub fn with_retry(mut self, retry: Retry) -> OpenAiChatHttp {
        self.endpoint.retry = retry;
        self
    }

    /// A backend for `model` keyed by `OPENAI_API_KEY`, at `OPENAI_BASE_URL` or
    /// [`OPENAI_DEFAULT_BASE_URL`].
    pub fn from_env(model: &str) -> Result<OpenAiChatHttp, ModelError> {
        let (base, key) = from_env(
            "openai-chat",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            OPENAI_DEFAULT_BASE_URL,
        )?;
        Ok(OpenAiChatHttp::new(&base, &key, model))
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }
}

impl Model for OpenAiChatHttp {
    fn route(&self) -> Option<RouteId> {
        Some(RouteId::OpenAiChat)
    }

    fn complete(&mut self, body: &Value) -> Result<Turn, ModelError> {
        let answer = self.endpoint.post(body, |request, key| {
            request.header("authorization", format!("Bearer {key}"))
        })?;
        openai_chat_turn(&answer).map_err(|error| self.endpoint.error(error.to_string()))
    }
}

/// OpenAI's Responses API over HTTP (stateless: each request carries the whole conversation).
#[derive(Debug)]
pub struct OpenAiResponsesHttp {
    endpoint: Endpoint,
}

impl OpenAiResponsesHttp {
    /// A backend for `model` at `base_url` (with or without `/v1`) with this key.
    pub fn new(base_url: &str, api_key: &str, model: &str) -> OpenAiResponsesHttp {
        OpenAiResponsesHttp {
            endpoint: Endpoint::new(
                "openai-responses",
                base_url,
                "/v1/responses",
                api_key,
                model,
            ),
        }
    }

    /// The same backend retrying as `retry` says.
    pub fn with_retry(mut self, retry: Retry) -> OpenAiResponsesHttp {
        self.endpoint.retry = retry;
        self
    }

    /// A backend for `model` keyed by `OPENAI_API_KEY`, at `OPENAI_BASE_URL` or
    /// [`OPENAI_DEFAULT_BASE_URL`].
    pub fn from_env(model: &str) -> Result<OpenAiResponsesHttp, ModelError> {
        let (base, key) = from_env(
            "openai-responses",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            OPENAI_DEFAULT_BASE_URL,
        )?;
        Ok(OpenAiResponsesHttp::new(&base, &key, model))
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }
}

impl Model for OpenAiResponsesHttp {
    fn route(&self) -> Option<RouteId> {
        Some(RouteId::OpenAiResponses)
    }

    fn complete(&mut self, body: &Value) -> Result<Turn, ModelError> {
        let answer = self.endpoint.post(body, |request, key| {
            request.header("authorization", format!("Bearer {key}"))
        })?;
        openai_responses_turn(&answer).map_err(|error| self.endpoint.error(error.to_string()))
    }
}

/// Google's Gemini API (`generateContent`) over HTTP. The model goes in the URL, not the body.
#[derive(Debug)]
pub struct GeminiHttp {
    endpoint: Endpoint,
    /// Calls numbered so far, for the ids of calls the model gave none.
    calls: usize,
}

impl GeminiHttp {
    /// A backend for `model` at `base_url` (without the version, which is
    /// [`GEMINI_API_VERSION`]) with this key.
    pub fn new(base_url: &str, api_key: &str, model: &str) -> GeminiHttp {
        let path = format!("/{GEMINI_API_VERSION}/models/{model}:generateContent");
        let mut endpoint = Endpoint::new("gemini", base_url, &path, api_key, model);
        endpoint.model_in_body = false;
        GeminiHttp { endpoint, calls: 0 }
    }

    /// The same backend retrying as `retry` says.
    pub fn with_retry(mut self, retry: Retry) -> GeminiHttp {
        self.endpoint.retry = retry;
        self
    }

    /// A backend for `model` keyed by `GEMINI_API_KEY`, at `GOOGLE_GEMINI_BASE_URL` or
    /// [`GEMINI_DEFAULT_BASE_URL`].
    pub fn from_env(model: &str) -> Result<GeminiHttp, ModelError> {
        let (base, key) = from_env(
            "gemini",
            "GEMINI_API_KEY",
            "GOOGLE_GEMINI_BASE_URL",
            GEMINI_DEFAULT_BASE_URL,
        )?;
        Ok(GeminiHttp::new(&base, &key, model))
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }
}

impl Model for GeminiHttp {
    fn route(&self) -> Option<RouteId> {
        Some(RouteId::Gemini)
    }

    fn complete(&mut self, body: &Value) -> Result<Turn, ModelError> {
        let answer = self
            .endpoint
            .post(body, |request, key| request.header("x-goog-api-key", key))?;
        gemini_turn(&answer, &mut self.calls)
            .map_err(|error| self.endpoint.error(error.to_string()))
    }
}

/// Reads a key (required) and a base URL (optional) from the environment.
fn from_env(
    provider: &'static str,
    key_var: &str,
    base_var: &str,
    default_base: &str,
) -> Result<(String, String), ModelError> {
    let key = std::env::var(key_var)
        .ok()
        .filter(|key| !key.trim().is_empty())
        .ok_or_else(|| ModelError::Provider {
            provider,
            message: format!("{key_var} is not set"),
        })?;
    let base = std::env::var(base_var)
        .ok()
        .filter(|base| !base.trim().is_empty())
        .unwrap_or_else(|| default_base.to_owned());
    Ok((base, key))
}

/// One provider endpoint: where to POST, with what key, through which agent.
struct Endpoint {
    provider: &'static str,
    url: String,
    key: String,
    model: String,
    /// Whether the body's `model` is set to the backend's (Gemini names it in the URL).
    model_in_body: bool,
    retry: Retry,
    agent: ureq::Agent,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of every output.
        f.debug_struct("Endpoint")
            .field("provider", &self.provider)
            .field("url", &self.url)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

type Request = ureq::RequestBuilder<ureq::typestate::WithBody>;

impl Endpoint {
    fn new(provider: &'static str, base_url: &str, path: &str, key: &str, model: &str) -> Self {
        let base = base_url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(ANSWER_TIMEOUT))
            .timeout_connect(Some(CONNECT_TIMEOUT));
        if is_loopback(base) {
            config = config.proxy(None);
        }
        #[cfg(feature = "https")]
        {
            config = config.tls_config(mcpl_tls::trust().ureq_config());
        }
        Endpoint {
            provider,
            url: format!("{base}{path}"),
            key: key.to_owned(),
            model: model.to_owned(),
            model_in_body: true,
            retry: Retry::default(),
            agent: config.build().into(),
        }
    }

    fn error(&self, message: String) -> ModelError {
        ModelError::Provider {
            provider: self.provider,
            message: message.replace(&self.key, "[api key]"),
        }
    }

    /// POSTs the body, with the backend's model as its `model`, and returns the answer's JSON;
    /// a transport failure or an error status is a [`ModelError::Provider`].
    fn post(
        &self,
        body: &Value,
        authorize: impl Fn(Request, &str) -> Request,
    ) -> Result<Value, ModelError> {
        if self.url.starts_with("https://") && !cfg!(feature = "https") {
            return Err(self.error(format!(
                "{} needs TLS: this mcpl was built with the http feature only (build with https)",
                self.url
            )));
        }
        let mut body = body.clone();
        if let (true, Some(object)) = (self.model_in_body, body.as_object_mut()) {
            object.insert("model".to_owned(), Value::String(self.model.clone()));
        }
        let bytes = mcpl_encode::body_bytes(&body);
        let mut waited = Duration::ZERO;
        let mut retry = 0;
        let (status, text) = loop {
            let request = self
                .agent
                .post(&self.url)
                .header("content-type", "application/json");
            let mut response = authorize(request, &self.key)
                .send(&bytes[..])
                .map_err(|e| self.error(format!("cannot reach {}: {e}", self.url)))?;
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|value| value.to_str().ok())
                .and_then(retry_after);
            let text = response
                .body_mut()
                .with_config()
                .limit(ANSWER_LIMIT)
                .read_to_string()
                .map_err(|e| self.error(format!("HTTP {status}: cannot read the answer: {e}")))?;
            let retryable = status == 429 || (500..600).contains(&status);
            if !retryable || retry >= self.retry.retries {
                break (status, text);
            }
            let backoff = self.retry.backoff.saturating_mul(1 << retry.min(16));
            let wait = retry_after.unwrap_or(backoff);
            if waited.saturating_add(wait) > self.retry.max_wait {
                break (status, text);
            }
            tracing::debug!(provider = self.provider, status, ?wait, "retrying");
            std::thread::sleep(wait);
            waited += wait;
            retry += 1;
        };
        let attempts = if retry == 0 {
            String::new()
        } else {
            format!(" (after {} attempts)", retry + 1)
        };
        let answer: Option<Value> = serde_json::from_str(&text).ok();
        if !(200..300).contains(&status) {
            return Err(self.error(format!(
                "HTTP {status}{attempts}: {}",
                error_message(answer.as_ref(), &text)
            )));
        }
        answer.ok_or_else(|| {
            self.error(format!(
                "HTTP {status}: the answer is not JSON: {}",
                quote(&text)
            ))
        })
    }
}

/// A `retry-after` value: seconds (`2`, `1.5`), or an HTTP date (`Wed, 21 Oct 2026 07:28:00
/// GMT`), which is the wait until then (none when it has passed).
fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    let wait = match value.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds >= 0.0 => Duration::from_secs_f64(seconds),
        Ok(_) => return None,
        Err(_) => {
            let at = httpdate::parse_http_date(value).ok()?;
            at.duration_since(std::time::SystemTime::now())
                .unwrap_or(Duration::ZERO)
        }
    };
    Some(wait.min(Duration::from_secs(3600)))
}

/// Whether a base URL's host is this machine (no proxy should stand between).
fn is_loopback(base: &str) -> bool {
    let authority = base.split_once("://").map_or(base, |(_, rest)| rest);
    let authority = authority.split('/').next().unwrap_or("");
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The message in a provider's error answer (`{"error": {"message": ...}}` for both Anthropic
/// and OpenAI, `{"error": "..."}` for some compatible servers), else the start of the answer.
fn error_message(answer: Option<&Value>, text: &str) -> String {
    let error = answer.and_then(|a| a.get("error"));
    let message = error
        .and_then(|e| e.get("message"))
        .or(error)
        .and_then(Value::as_str);
    match message {
        Some(message) => message.to_owned(),
        None if text.trim().is_empty() => "no answer body".to_owned(),
        None => quote(text),
    }
}

fn quote(text: &str) -> String {
    let mut quoted: String = text.chars().take(ERROR_QUOTE_CHARS).collect();
    if quoted.len() < text.len() {
        quoted.push('…');
    }
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn loopback_hosts_are_recognised() {
        assert!(is_loopback("http://127.0.0.1:8080"));
        assert!(is_loopback("http://localhost/v1"));
        assert!(is_loopback("http://[::1]:9000"));
        assert!(!is_loopback("https://api.openai.com"));
        assert!(!is_loopback("http://127.example.com"));
    }

    #[test]
    fn a_base_url_with_v1_is_the_same_as_one_without() {
        let with = OpenAiChatHttp::new("http://127.0.0.1:1/v1/", "k", "m");
        let without = OpenAiChatHttp::new("http://127.0.0.1:1", "k", "m");
        assert_eq!(with.url(), "http://127.0.0.1:1/v1/chat/completions");
        assert_eq!(with.url(), without.url());
        assert!(!format!("{with:?}").contains("\"k\""));
    }

    #[cfg(not(feature = "https"))]
    #[test]
    fn https_without_tls_says_how_to_get_it() {
        let error = AnthropicHttp::new(ANTHROPIC_DEFAULT_BASE_URL, "k", "m")
            .complete(&json!({}))
            .unwrap_err()
            .to_string();
        assert!(error.contains("needs TLS"), "{error}");
    }

    #[test]
    fn error_messages_come_from_the_provider_or_the_answer() {
        let anthropic = json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}});
        assert_eq!(error_message(Some(&anthropic), ""), "invalid x-api-key");
        assert_eq!(
            error_message(Some(&json!({"error": "model not loaded"})), ""),
            "model not loaded"
        );
        assert_eq!(error_message(None, "Bad Gateway"), "Bad Gateway");
        assert_eq!(error_message(None, ""), "no answer body");
    }
}
