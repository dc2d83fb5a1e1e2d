//! HTTP backends for real providers (the `http` feature): a [`Model`] that POSTs the request
//! body its route's encoder made and reads the answer into a [`Turn`].
//!
//! [`AnthropicHttp`] speaks the Messages API (`<base>/v1/messages`), [`OpenAiChatHttp`] Chat
//! Completions (`<base>/v1/chat/completions`). Both use a blocking `ureq` agent that follows no
//! redirect (a redirect could carry the key elsewhere), goes straight to loopback hosts and
//! through the environment's proxy otherwise. Plain `http://` is always built; `https://`
//! needs the `https` feature (rustls with the webpki roots). A provider's error answer becomes
//! [`ModelError::Provider`] with its status and message, and the key is never in any error.
//!
//! ```no_run
//! use mcpl_host::http::AnthropicHttp;
//! use mcpl_host::model::Model;
//!
//! let mut model = AnthropicHttp::from_env("claude-sonnet-4-5").unwrap();
//! let body = serde_json::json!({"model": "claude-sonnet-4-5", "max_tokens": 64,
//!     "messages": [{"role": "user", "content": "hi"}]});
//! let turn = model.complete(&body).unwrap();
//! println!("{}", turn.text);
//! ```

use std::time::Duration;

use serde_json::Value;

use crate::model::{Model, ModelError, Turn};
use mcpl_encode::conversation::ToolCall;
use mcpl_lanes::RouteId;

/// The Messages API version header every request carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Where the Anthropic backend goes when `ANTHROPIC_BASE_URL` is unset.
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// Where the OpenAI backend goes when `OPENAI_BASE_URL` is unset.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com";

/// The longest a provider may take to answer, end to end.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// The longest a connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest answer read; a chat turn is far smaller.
const ANSWER_LIMIT: u64 = 16 * 1024 * 1024;

/// The most characters of an error answer quoted when it names no message.
const ERROR_QUOTE_CHARS: usize = 300;

/// The backend for the `anthropic:MODEL` or `openai-chat:MODEL` model spec (the route is the part
/// before the colon), configured from the environment; `None` for a route with no HTTP backend.
pub fn model_from_env(route: RouteId, model: &str) -> Option<Result<Box<dyn Model>, ModelError>> {
    match route {
        RouteId::Anthropic => {
            Some(AnthropicHttp::from_env(model).map(|m| Box::new(m) as Box<dyn Model>))
        }
        RouteId::OpenAiChat => {
            Some(OpenAiChatHttp::from_env(model).map(|m| Box::new(m) as Box<dyn Model>))
        }
        RouteId::OpenAiResponses | RouteId::Gemini | RouteId::TextOnly => None,
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
        Endpoint {
            provider,
            url: format!("{base}{path}"),
            key: key.to_owned(),
            model: model.to_owned(),
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
        authorize: impl FnOnce(Request, &str) -> Request,
    ) -> Result<Value, ModelError> {
        if self.url.starts_with("https://") && !cfg!(feature = "https") {
            return Err(self.error(format!(
                "{} needs TLS: this mcpl was built with the http feature only (build with https)",
                self.url
            )));
        }
        let mut body = body.clone();
        if let Some(object) = body.as_object_mut() {
            object.insert("model".to_owned(), Value::String(self.model.clone()));
        }
        let bytes = serde_json::to_vec(&body).map_err(|e| self.error(e.to_string()))?;
        let request = self
            .agent
            .post(&self.url)
            .header("content-type", "application/json");
        let mut response = authorize(request, &self.key)
            .send(&bytes[..])
            .map_err(|e| self.error(format!("cannot reach {}: {e}", self.url)))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .with_config()
            .limit(ANSWER_LIMIT)
            .read_to_string()
            .map_err(|e| self.error(format!("HTTP {status}: cannot read the answer: {e}")))?;
        let answer: Option<Value> = serde_json::from_str(&text).ok();
        if !(200..300).contains(&status) {
            return Err(self.error(format!(
                "HTTP {status}: {}",
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

/// Why a provider's answer is not a turn; its words become [`ModelError::Provider`]'s message.
#[derive(Debug, thiserror::Error)]
enum AnswerError {
    /// A Messages API answer without its `content` array.
    #[error("the answer has no content array")]
    NoContent,
    /// A `tool_use` block without a field it needs.
    #[error("content[{index}]: a tool_use block without {field}")]
    ToolUseWithout { index: usize, field: &'static str },
    /// A Chat Completions answer without a first choice's message.
    #[error("the answer has no choices[0].message")]
    NoMessage,
    /// A tool call without a field it needs (`id`, `function/name`, `function/arguments`).
    #[error("tool_calls[{index}]: no {field}")]
    ToolCallWithout { index: usize, field: &'static str },
    /// A tool call whose arguments string is not JSON.
    #[error("tool_calls[{index}] ({name}): its arguments are not JSON: {error}")]
    ArgumentsNotJson {
        index: usize,
        name: String,
        error: serde_json::Error,
    },
}

/// A Messages API answer: its text blocks joined with `\n`, its `tool_use` blocks as calls.
/// Other blocks (thinking, say) are not part of the turn.
fn anthropic_turn(answer: &Value) -> Result<Turn, AnswerError> {
    let blocks = answer
        .get("content")
        .and_then(Value::as_array)
        .ok_or(AnswerError::NoContent)?;
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => texts.push(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => {
                let field = |name: &'static str| {
                    block
                        .get(name)
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .ok_or(AnswerError::ToolUseWithout {
                            index: i,
                            field: name,
                        })
                };
                tool_calls.push(ToolCall {
                    id: field("id")?,
                    name: field("name")?,
                    arguments: block
                        .get("input")
                        .cloned()
                        .unwrap_or_else(|| Value::Object(serde_json::Map::new())),
                });
            }
            _ => {}
        }
    }
    Ok(Turn {
        text: texts.join("\n"),
        tool_calls,
    })
}

/// A Chat Completions answer: the first choice's message content and its function tool calls,
/// whose JSON-string arguments are parsed (an empty string is `{}`).
fn openai_chat_turn(answer: &Value) -> Result<Turn, AnswerError> {
    let message = answer
        .pointer("/choices/0/message")
        .ok_or(AnswerError::NoMessage)?;
    let text = message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let mut tool_calls = Vec::new();
    for (i, call) in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .enumerate()
    {
        let field = |pointer: &'static str| {
            call.pointer(pointer)
                .and_then(Value::as_str)
                .ok_or(AnswerError::ToolCallWithout {
                    index: i,
                    field: pointer.trim_start_matches('/'),
                })
        };
        let id = field("/id")?;
        let name = field("/function/name")?;
        let raw = field("/function/arguments")?;
        let arguments = if raw.trim().is_empty() {
            Value::Object(serde_json::Map::new())
        } else {
            serde_json::from_str(raw).map_err(|error| AnswerError::ArgumentsNotJson {
                index: i,
                name: name.to_owned(),
                error,
            })?
        };
        tool_calls.push(ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments,
        });
    }
    Ok(Turn { text, tool_calls })
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

    #[test]
    fn answers_become_turns() {
        let turn = anthropic_turn(&json!({"content": [
            {"type": "thinking", "thinking": "hm"},
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "toolu_1", "name": "demo__chart", "input": {"n": 1}},
        ]}))
        .unwrap();
        assert_eq!(turn.text, "Looking.");
        assert_eq!(turn.tool_calls[0].arguments, json!({"n": 1}));
        let turn = openai_chat_turn(&json!({"choices": [{"message": {"content": null,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}]}}]}))
        .unwrap();
        assert_eq!(turn.text, "");
        assert_eq!(turn.tool_calls[0].arguments, json!({}));
        let bad = openai_chat_turn(&json!({"choices": [{"message": {"tool_calls": [
            {"id": "c1", "function": {"name": "f", "arguments": "{\"n\": "}}]}}]}));
        assert!(matches!(
            bad,
            Err(AnswerError::ArgumentsNotJson { index: 0, .. })
        ));
        assert!(
            bad.unwrap_err()
                .to_string()
                .starts_with("tool_calls[0] (f): its arguments are not JSON: ")
        );
        let missing = openai_chat_turn(&json!({"choices": [{"message": {"tool_calls": [
            {"id": "c1", "function": {"arguments": "{}"}}]}}]}));
        assert_eq!(
            missing.unwrap_err().to_string(),
            "tool_calls[0]: no function/name"
        );
        let missing = anthropic_turn(&json!({"content": [{"type": "tool_use", "id": "t"}]}));
        assert_eq!(
            missing.unwrap_err().to_string(),
            "content[0]: a tool_use block without name"
        );
        assert_eq!(
            anthropic_turn(&json!({})).unwrap_err().to_string(),
            "the answer has no content array"
        );
        assert_eq!(
            openai_chat_turn(&json!({"choices": []}))
                .unwrap_err()
                .to_string(),
            "the answer has no choices[0].message"
        );
    }
}
