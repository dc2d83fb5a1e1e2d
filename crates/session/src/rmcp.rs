//! An adapter for hosts on [rmcp](https://docs.rs/rmcp), the official Rust MCP SDK (the
//! `rmcp` feature; decision 0125).
//!
//! rmcp reads every answer into its typed `ServerResult`, an untagged union, and two things a
//! session must see do not survive that:
//!
//! - a result with an MCPL reference at the top of its content
//!   (`{"type": "resource", "uri": ..., "disposition": "ref"}`) is no `CallToolResult` to
//!   rmcp: it falls through to `CustomResult`, and `Peer::call_tool` fails with "Unexpected
//!   response type";
//! - an embedded resource holding both `text` and `blob` comes out of rmcp's
//!   `ResourceContents` with its text only: the blob is gone.
//!
//! So a host reads tool results raw: [`Tap::reader`] wraps the server's stdout before rmcp's
//! `(reader, writer)` transport gets it, and [`call_tool_raw`] sends `tools/call` through
//! rmcp and returns the answer's `result` exactly as the server wrote it, which
//! [`Session::tool_result`] (or [`Session::raw_tool_result`]) takes. Over a transport the
//! tap does not read (Streamable HTTP, say), `call_tool_raw` falls back to rmcp's typed
//! result serialised, and says so in [`RawResult::fallback`].
//!
//! ```no_run
//! # async fn host() -> Result<(), Box<dyn std::error::Error>> {
//! use mcpl_session::rmcp::{Tap, call_tool_raw};
//! use mcpl_session::{RouteId, Session};
//! use rmcp::ServiceExt;
//!
//! # let child_stdout = tokio::io::empty();
//! # let child_stdin = tokio::io::sink();
//! let tap = Tap::new();
//! let client = ().serve((tap.reader(child_stdout), child_stdin)).await?;
//! let raw = call_tool_raw(&client, &tap, "get-tiny-image", serde_json::json!({})).await?;
//! let mut session = Session::new(RouteId::Anthropic);
//! let shown = session.raw_tool_result("everything", &raw);
//! // shown.content goes in the tool_result block's content.
//! # Ok(())
//! # }
//! ```
//!
//! A result a host already has typed goes through [`Session::rmcp_tool_result`]: whatever
//! rmcp kept of it is shown as any result is.

mod tap;

use ::rmcp::model::{CallToolResult, ClientRequest, ContentBlock, CustomRequest, ServerResult};
use ::rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::{Session, Shown};

pub use tap::{DEFAULT_MAX_HELD, DEFAULT_MAX_MESSAGE, Tap, TapReader};

/// A tool result as [`call_tool_raw`] read it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RawResult {
    /// The answer's `result`: as the server wrote it, or rmcp's typed result serialised when
    /// `fallback` says why.
    pub result: Value,
    /// `None` when the tap read the answer whole; otherwise why `result` is rmcp's typed
    /// result serialised (which lacks what rmcp could not type).
    pub fallback: Option<String>,
}

/// Why a tool could not be called.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// rmcp could not send the request, or the server answered with a JSON-RPC error.
    #[error("tools/call {tool}: {source}")]
    Service {
        /// The tool called.
        tool: String,
        /// rmcp's error.
        #[source]
        source: ServiceError,
    },
}

/// Calls the tool `name` with `arguments` (a JSON object, or `null` for none) through rmcp,
/// and returns the answer's `result` as the server wrote it, read by `tap` off the
/// transport's read side: every block rmcp cannot type is there. The request is rmcp's
/// `ClientRequest::CustomRequest` with method `tools/call`, so rmcp's own parse of the answer
/// cannot fail it.
///
/// When `tap` did not see the answer (another transport, or an answer over its limits) the
/// result is rmcp's typed result serialised, and [`RawResult::fallback`] says why.
///
/// It makes one round: an answer asking for input (`resultType: "input_required"`, protocol
/// 2026-07-28) or starting a task comes back as it is, where rmcp's `call_tool` would go on.
pub async fn call_tool_raw(
    peer: &Peer<RoleClient>,
    tap: &Tap,
    name: &str,
    arguments: Value,
) -> Result<RawResult, CallError> {
    call_tool_raw_with_options(peer, tap, name, arguments, PeerRequestOptions::no_options()).await
}

/// [`call_tool_raw`] with rmcp's request options: a timeout, say.
pub async fn call_tool_raw_with_options(
    peer: &Peer<RoleClient>,
    tap: &Tap,
    name: &str,
    arguments: Value,
    options: PeerRequestOptions,
) -> Result<RawResult, CallError> {
    let failed = |source| CallError::Service {
        tool: name.to_owned(),
        source,
    };
    let mut params = Map::new();
    params.insert("name".to_owned(), Value::String(name.to_owned()));
    if !arguments.is_null() {
        params.insert("arguments".to_owned(), arguments);
    }
    let request = ClientRequest::CustomRequest(CustomRequest::new(
        "tools/call",
        Some(Value::Object(params)),
    ));
    // The id is rmcp's to choose, and the answer may be read before it is known: the tap keeps
    // what comes meanwhile until the id is claimed.
    let armed = tap.arm();
    let handle = peer
        .send_request_with_option(request, options)
        .await
        .map_err(failed)?;
    let claim = armed.claim(&handle.id);
    let typed = handle.await_response().await.map_err(failed)?;
    // The tap read the line before rmcp did: the answer is there if it was seen at all.
    let why = match claim.take() {
        Ok(line) => match result_of(&line) {
            Some(result) => {
                return Ok(RawResult {
                    result,
                    fallback: None,
                });
            }
            None => "the tap's copy of the answer holds no result".to_owned(),
        },
        Err(missed) => missed.to_string(),
    };
    Ok(RawResult {
        result: typed_json(&typed),
        fallback: Some(format!(
            "tools/call {name}: {why}; this is rmcp's typed result, without what rmcp could not type"
        )),
    })
}

/// The `result` of a JSON-RPC answer's line.
fn result_of(line: &[u8]) -> Option<Value> {
    #[derive(Deserialize)]
    struct Answer {
        result: Option<Value>,
    }
    serde_json::from_slice::<Answer>(line).ok()?.result
}

/// rmcp's typed answer as JSON.
fn typed_json(typed: &ServerResult) -> Value {
    serde_json::to_value(typed).unwrap_or_else(|error| unserialisable(&error))
}

/// A result saying rmcp's value could not be written as JSON (it always can: no map of its has
/// keys other than strings).
fn unserialisable(error: &serde_json::Error) -> Value {
    json!({
        "content": [{"type": "text", "text": format!("[the host could not read this result: {error}]")}],
        "isError": true,
    })
}

/// rmcp's typed `CallToolResult` as the JSON a session reads.
pub fn tool_result_json(result: &CallToolResult) -> Value {
    serde_json::to_value(result).unwrap_or_else(|error| unserialisable(&error))
}

/// rmcp's content blocks as a tool result's JSON: `{"content": [...]}`.
pub fn content_json(content: &[ContentBlock]) -> Value {
    match serde_json::to_value(content) {
        Ok(blocks) => json!({"content": blocks}),
        Err(error) => unserialisable(&error),
    }
}

impl Session {
    /// A tool result rmcp typed, as the model gets it: [`Session::tool_result`] of its JSON.
    /// What rmcp's typing dropped (a resource's blob beside its text) is not there to show;
    /// read results with [`call_tool_raw`] to keep it.
    pub fn rmcp_tool_result(&mut self, server: &str, result: &CallToolResult) -> Shown {
        self.tool_result(server, &tool_result_json(result))
    }

    /// rmcp content blocks `server` sent, shown as a tool result made of them.
    pub fn rmcp_content(&mut self, server: &str, content: &[ContentBlock]) -> Shown {
        self.tool_result(server, &content_json(content))
    }

    /// A result [`call_tool_raw`] read, as the model gets it; when it is rmcp's typed result,
    /// the first diagnostic says why.
    pub fn raw_tool_result(&mut self, server: &str, raw: &RawResult) -> Shown {
        let mut shown = self.tool_result(server, &raw.result);
        if let Some(why) = &raw.fallback {
            shown.diagnostics.insert(0, why.clone());
        }
        shown
    }
}
