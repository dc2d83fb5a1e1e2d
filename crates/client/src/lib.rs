//! MCP's stdio transport: newline-delimited JSON-RPC 2.0 with a child process, read leniently
//! and within bounds, as no server can be trusted.
//!
//! A [`Connection`] owns one server process and three threads. The reader turns each stdout line
//! into an `Incoming` (a response, a request the server makes of the host, a line over the
//! message limit, or the end of the stream); the writer sends the host's lines to stdin, so no
//! write can block a call past its timeout; the third sends stderr to `tracing` and keeps
//! its last lines ([`StderrTail`]), so a server that exits before answering `initialize` says
//! why in the error itself rather than only in the logs. A call
//! ([`Connection::request`]) queues its request and then reads incoming messages until its own
//! response arrives, answering the server's requests through the caller's [`ServerRequests`] on
//! the way, so push events and channel messages sent mid-call are handled, not mistaken for the
//! answer.
//!
//! A server's process starts with a short environment: the few variables of the host's in
//! [`DEFAULT_INHERITED_ENV`], those its [`Launch::inherit_env`] names, and its own
//! [`Launch::env`]. No provider key or cloud credential of the host's reaches it unless its
//! config asks (decision 0101).
//!
//! Reading is lenient, as the official SDKs' is: a line that is not JSON, a notification and a
//! response that matches no call are logged and skipped, before `initialize` as well as during a
//! call, and a result with bytes strict JSON refuses is repaired (decision 0030). A call fails
//! alone, with a clear [`CallError`], only when the server exits, passes the timeout, sends a
//! message over [`Limits::max_message_bytes`], answers with a JSON-RPC error, or (for
//! `initialize`) speaks a protocol revision mcpl does not implement. No error quotes what the
//! server wrote: it may hold uris and credentials.
//!
//! Memory is bounded per connection: a line is never held past the limit (the rest is read and
//! dropped), at most [`INCOMING_QUEUE`] parsed messages wait for the host (the reader then stops
//! reading, and the server's own writes wait in its pipe), and at most [`OUTGOING_QUEUE`] lines
//! wait for a server that does not read (answers to its requests beyond that are dropped).
//!
//! Results are kept as raw JSON (`serde_json::Value`) so classification can take them block by
//! block: one odd block never loses the others (decision 0009).
//!
//! A long call is followed: a `tools/call` answered with a task (the tasks extension) is polled
//! until it ends, and progress notifications restart its idle time within its total time
//! ([`Call::with_total`]). What the server says meanwhile reaches an [`Observer`] as [`Notice`]s
//! (decisions 0129 and 0130).

mod answers;
mod auth;
mod environment;
mod headers;
mod http;
mod reply;
mod sse;
mod start;
mod tasks;
mod ws;

pub use answers::elicit_without_person;
pub use auth::{Authorizer, BearerToken, Recorded};
pub use environment::{DEFAULT_INHERITED_ENV, InheritEnv};
pub use http::{DEFAULT_RETRY, Dial, cleartext_credential_warning};
pub use reply::{Reply, ResultText};
pub use start::{
    Locked, MAX_LISTED_SKILLS, MAX_SKILL_PAGES, MAX_TOOL_PAGES, MAX_TOOLS, SKILLS_EXTENSION,
    Started, start_all,
};
pub use tasks::{
    DEFAULT_POLL_INTERVAL, MAX_HELD_NOTICES, MAX_POLL_INTERVAL, MIN_POLL_INTERVAL, Notice, Notices,
    Observer, PROGRESS_GAP, TASKS_EXTENSION,
};

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::ops::Range;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{
    Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError, sync_channel,
};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

/// The protocol revision the host offers in `initialize`: the latest with the handshake.
pub const PROTOCOL_VERSION: &str = "2025-11-25";
/// The stateless revision (no `initialize`; each request carries its version and the client's
/// capabilities in `_meta`), tried first on a modern connection with `server/discover`.
pub const STATELESS_PROTOCOL_VERSION: &str = "2026-07-28";
/// How many times one call is sent again with the input its server asked for
/// (`resultType: "input_required"`) before it fails.
pub const MAX_INPUT_ROUNDS: usize = 8;
/// JSON-RPC error code of revision 2026-07-28's `UnsupportedProtocolVersionError`.
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// Every protocol revision the host implements and accepts from a server, newest first.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// The longest message a server may send unless its options say otherwise: 64 MiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 << 20;
/// How many parsed messages may wait for the host per connection before the reader waits.
pub const INCOMING_QUEUE: usize = 16;
/// How many of the host's lines may wait for a server that does not read.
pub const OUTGOING_QUEUE: usize = 256;
/// The most messages [`Connection::pump`] handles at once, so a server that never stops
/// sending cannot hold up a round.
pub const PUMP_MESSAGES: usize = 256;
/// The longest [`Connection::pump`] takes.
pub const PUMP_TIME: Duration = Duration::from_millis(200);
/// How much of a line over the limit is kept to tell whose it is.
/// How many of a server's last stderr lines a start error quotes.
pub const STDERR_TAIL_LINES: usize = 10;
/// How many bytes of a server's last stderr lines a start error quotes, at most.
pub const STDERR_TAIL_BYTES: usize = 2048;
/// How long a start error waits for a server's stderr to end after its output closed.
const STDERR_CLOSE_WAIT: Duration = Duration::from_millis(500);
/// How much of one stderr line is read into memory; the rest of a longer line is skipped.
const STDERR_LINE_BYTES: usize = 64 * 1024;
const HEAD_BYTES: usize = 1024;
/// The searcher for `"id"` in a line: one built once, as building it costs more than a search.
static ID_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"id\""));
/// The searcher for the one notification a call waits for: progress.
static PROGRESS_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"notifications/progress"));
/// How long a `tasks/cancel` sent on giving up may wait for room and for its answer.
const TASK_CANCEL_WAIT: Duration = Duration::from_secs(2);
/// The searcher for the one notification the host acts on (see [`Incoming::ToolsChanged`]).
static TOOLS_CHANGED_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(TOOLS_LIST_CHANGED.as_bytes()));
/// The stateless revision's request for a stream of the server's notifications.
const LISTEN: &str = "subscriptions/listen";
/// The notification a server sends when its tools change.
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// A line buffer grown past this is given back once its line is handled.
const KEEP_BUFFER_BYTES: usize = 1 << 20;

/// How to start or reach one server.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Launch {
    /// The server's name in the host's configuration.
    pub name: String,
    /// How the host reaches it: the process below over stdio, or a url it dials.
    pub transport: Transport,
    /// Which family of the protocol the server speaks.
    pub protocol: Protocol,
    /// The roots `roots/list` answers with; the capability is declared only when there are some.
    pub roots: Vec<Root>,
    /// The program (stdio only).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables set for it, over those it inherits.
    pub env: BTreeMap<String, String>,
    /// Which of the host's environment variables it inherits: [`DEFAULT_INHERITED_ENV`] unless
    /// its config says more.
    pub inherit_env: InheritEnv,
    /// Its working directory; the host's when absent.
    pub cwd: Option<PathBuf>,
}

impl Launch {
    /// How to reach the server `name` over `transport`, with everything else at its default.
    /// The fields are public: set the rest (the environment, the roots...) after.
    pub fn new(name: impl Into<String>, transport: Transport) -> Launch {
        Launch {
            name: name.into(),
            transport,
            ..Launch::default()
        }
    }

    /// A server started as `command` with `args` and spoken to over stdio.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Launch {
        Launch {
            command: command.into(),
            args,
            ..Launch::new(name, Transport::Stdio)
        }
    }

    /// The same launch, speaking `protocol`.
    pub fn with_protocol(self, protocol: Protocol) -> Launch {
        Launch { protocol, ..self }
    }
}

/// How the host reaches a server.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub enum Transport {
    /// A child process's stdin and stdout, newline-delimited.
    #[default]
    Stdio,
    /// Streamable HTTP at a url.
    Http(Dial),
    /// MCPL over a WebSocket at a `ws://` or `wss://` url.
    Ws(Dial),
}

/// The protocol family, chosen by the transport (and the config for stdio), never by sniffing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Protocol {
    /// The `initialize` handshake offering [`PROTOCOL_VERSION`], with MCPL's capabilities.
    #[default]
    Legacy,
    /// Modern MCP: [`STATELESS_PROTOCOL_VERSION`] when `server/discover` says the server speaks
    /// it, else the `initialize` handshake without MCPL.
    Modern,
}

/// One root a server may ask for with `roots/list`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Root {
    /// Its uri (`file:///...`).
    pub uri: String,
    /// A name for it.
    pub name: Option<String>,
}

impl Root {
    /// A root at `uri`, named `name` when there is one.
    pub fn new(uri: impl Into<String>, name: Option<String>) -> Root {
        Root {
            uri: uri.into(),
            name,
        }
    }
}

/// A transport error in words, with what to do about a refused certificate when TLS is built.
fn explained(error: String) -> String {
    #[cfg(feature = "tls")]
    return mcpl_tls::explained(error);
    #[cfg(not(feature = "tls"))]
    return error;
}

/// How often a waiting call looks at [`interruption`].
const INTERRUPT_POLL: Duration = Duration::from_millis(50);

/// The process's interruption flag: once set (by a host's Ctrl-C handler, say), every call
/// waiting on any connection is cancelled (`notifications/cancelled` to its server, reason
/// `the run was interrupted`) and fails with [`CallError::Interrupted`], and no new call waits.
pub fn interruption() -> &'static Arc<AtomicBool> {
    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    FLAG.get_or_init(Arc::default)
}

/// The bounds one connection keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// How long `initialize` may take.
    pub timeout: Duration,
    /// The longest line the server may send, in bytes.
    pub max_message_bytes: usize,
}

impl Limits {
    /// The default message limit, with this timeout.
    pub fn with_timeout(timeout: Duration) -> Limits {
        Limits {
            timeout,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }

    /// The same limits with another message limit.
    pub fn with_max_message_bytes(self, max_message_bytes: usize) -> Limits {
        Limits {
            max_message_bytes,
            ..self
        }
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The error code.
    pub code: i64,
    /// The message.
    pub message: String,
    /// Extra data.
    pub data: Option<Value>,
}

impl RpcError {
    /// JSON-RPC's "method not found".
    pub fn method_not_found(method: &str) -> RpcError {
        RpcError {
            code: -32601,
            message: format!("method not found: {method}"),
            data: None,
        }
    }

    fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }

    fn from_json(error: &Value) -> RpcError {
        RpcError {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
                .to_owned(),
            data: error.get("data").cloned(),
        }
    }

    /// What the code means, for JSON-RPC's and MCP's own codes.
    pub fn meaning(&self) -> Option<&'static str> {
        match self.code {
            -32700 => Some("parse error"),
            -32600 => Some("invalid request"),
            -32601 => Some("method not found"),
            -32602 => Some("invalid params"),
            -32603 => Some("internal error"),
            -32002 => Some("resource not found"),
            -32001 => Some("request timed out"),
            _ => None,
        }
    }
}

/// Shows the code and what it means, never the server's message, which may quote anything.
impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.meaning() {
            Some(meaning) => write!(f, "JSON-RPC error {} ({meaning})", self.code),
            None => write!(f, "JSON-RPC error {}", self.code),
        }
    }
}

/// Why one call failed. The connection may still serve later calls, except after
/// [`CallError::Exited`]. No variant holds what the server wrote, except the stderr tail of a
/// server that exited before answering `initialize`, which goes to the user, never to a model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The server process could not be started.
    #[error("server {server} could not be started: {detail}")]
    Spawn {
        /// The server.
        server: String,
        /// What the operating system said.
        detail: String,
    },
    /// The server exited, or closed its output, before answering.
    #[error("server {server} exited before answering {method}: {detail}{stderr}")]
    Exited {
        /// The server.
        server: String,
        /// The method called.
        method: String,
        /// The exit status, or what is known.
        detail: String,
        /// The last lines it wrote on stderr, when it exited before answering `initialize`;
        /// empty otherwise (a tool call's error goes to the model, a server's logs do not).
        stderr: StderrTail,
    },
    /// No answer within the timeout (or the server did not read the request in time).
    #[error("server {server} did not answer {method} within {} ms", .after.as_millis())]
    Timeout {
        /// The server.
        server: String,
        /// The method called.
        method: String,
        /// The timeout.
        after: Duration,
    },
    /// The server sent a line longer than the limit while the call waited.
    #[error(
        "server {server} sent a message longer than {limit} bytes (maxMessageBytes) while {method} waited"
    )]
    TooLong {
        /// The server.
        server: String,
        /// The method called.
        method: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// The server answered with a JSON-RPC error.
    #[error("server {server} answered {method} with {error}")]
    Rpc {
        /// The server.
        server: String,
        /// The method called.
        method: String,
        /// The error.
        error: Box<RpcError>,
    },
    /// A dialed server could not be reached, or answered with an HTTP failure.
    #[error("server {server} failed {method} over HTTP: {detail}")]
    Http {
        /// The server.
        server: String,
        /// The method called.
        method: String,
        /// The status or what the network said.
        detail: String,
    },
    /// The run was interrupted while the call waited (see [`interruption`]); the server was
    /// told the call is cancelled.
    #[error("{method} to server {server} was cancelled: the run was interrupted")]
    Interrupted {
        /// The server.
        server: String,
        /// The method called.
        method: String,
    },
    /// The server still asked for input after [`MAX_INPUT_ROUNDS`] rounds of answers: the
    /// call is given up rather than its unfinished result taken for an answer.
    #[error(
        "server {server} still asked for input after {MAX_INPUT_ROUNDS} rounds of {method}; the call was given up"
    )]
    InputRounds {
        /// The server.
        server: String,
        /// The method called.
        method: String,
    },
    /// The call took longer than its total time (`Call::total`), progress or task polls
    /// included; the server was told to stop (`tasks/cancel` for a task).
    #[error("server {server} did not finish {method} within {} ms in all; it was cancelled", .after.as_millis())]
    Deadline {
        /// The server.
        server: String,
        /// The method called.
        method: String,
        /// The total time.
        after: Duration,
    },
    /// A task the call was answered with ended without a result, or could not be followed.
    #[error("server {server}'s task for {method} gave no result: {detail}")]
    Task {
        /// The server.
        server: String,
        /// The method called.
        method: String,
        /// Why, in words.
        detail: String,
    },
    /// The server speaks a protocol revision mcpl does not implement.
    #[error(
        "server {server} answered initialize with protocol version {answered}; mcpl speaks {PROTOCOL_VERSION} (and accepts {})",
        PROTOCOL_VERSIONS[1..].join(", ")
    )]
    Version {
        /// The server.
        server: String,
        /// The revision it named, when it looks like one (`YYYY-MM-DD`), or what it sent instead.
        answered: String,
    },
}

/// The last lines a server wrote on stderr: at most [`STDERR_TAIL_LINES`] lines and
/// [`STDERR_TAIL_BYTES`] bytes, the newest kept. It displays as nothing when empty, and otherwise
/// as `; its last stderr lines: <line> | <line>` (`…` first when older lines were dropped).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StderrTail {
    /// The lines, oldest first, each without its line ending.
    pub lines: Vec<String>,
    /// Whether older lines (or the start of the oldest kept line) were dropped.
    pub cut: bool,
}

impl std::fmt::Display for StderrTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.lines.is_empty() {
            return Ok(());
        }
        f.write_str("; its last stderr lines: ")?;
        if self.cut {
            f.write_str("… ")?;
        }
        f.write_str(&self.lines.join(" | "))
    }
}

/// A server's stderr as its thread reads it: the bounded tail, and whether the stream ended.
#[derive(Debug, Default)]
struct StderrLog {
    state: Mutex<StderrState>,
    ended: Condvar,
}

#[derive(Debug, Default)]
struct StderrState {
    tail: std::collections::VecDeque<String>,
    bytes: usize,
    cut: bool,
    ended: bool,
}

impl StderrLog {
    /// Keeps `line`, dropping the oldest lines past the bounds.
    fn push(&self, line: &str) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let line = keep_end(line, STDERR_TAIL_BYTES);
        state.bytes += line.len();
        state.tail.push_back(line);
        while state.tail.len() > STDERR_TAIL_LINES || state.bytes > STDERR_TAIL_BYTES {
            let Some(oldest) = state.tail.pop_front() else {
                break;
            };
            state.bytes -= oldest.len();
            state.cut = true;
        }
    }

    fn end(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.ended = true;
        }
        self.ended.notify_all();
    }

    /// The tail once the stream has ended, or as it is after `wait`.
    fn tail(&self, wait: Duration) -> StderrTail {
        let Ok(state) = self.state.lock() else {
            return StderrTail::default();
        };
        let state = match self
            .ended
            .wait_timeout_while(state, wait, |state| !state.ended)
        {
            Ok((state, _)) => state,
            Err(poisoned) => poisoned.into_inner().0,
        };
        StderrTail {
            lines: state.tail.iter().cloned().collect(),
            cut: state.cut,
        }
    }
}

/// The last `bytes` bytes of `line` at a character boundary, `…` first when cut.
fn keep_end(line: &str, bytes: usize) -> String {
    if line.len() <= bytes {
        return line.to_owned();
    }
    let mut start = line.len() - bytes + '…'.len_utf8();
    while !line.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &line[start..])
}

/// One message from the server, as the reader thread saw it. Notifications, lines that are not
/// JSON and responses without an id are logged and skipped by the reader itself.
#[derive(Debug)]
enum Incoming {
    Response {
        id: Value,
        outcome: Result<Reply, RpcError>,
    },
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A dialed request failed at the HTTP level.
    Failed {
        id: Value,
        detail: String,
    },
    /// A `notifications/progress`, checked.
    Progress(tasks::Progress),
    /// A line longer than the limit; the rest of it is dropped. What its first bytes say of it.
    TooLong {
        id: Option<Value>,
        is_request: bool,
    },
    /// `notifications/tools/list_changed`: the server's tools changed. The connection keeps
    /// one flag for any number of them (see [`Connection::take_tools_changed`]).
    ToolsChanged,
    Closed,
}

/// What the host answers when a server asks something of it (MCPL's `push/event` and
/// `channels/incoming`, or anything else).
pub trait ServerRequests {
    /// The answer to one request from `server`.
    fn answer(&mut self, server: &str, method: &str, params: &Value) -> Result<Value, RpcError>;
}

/// A host that answers every server request with "method not found".
#[derive(Debug, Clone, Copy, Default)]
pub struct RefuseAll;

impl ServerRequests for RefuseAll {
    fn answer(&mut self, _: &str, method: &str, _: &Value) -> Result<Value, RpcError> {
        Err(RpcError::method_not_found(method))
    }
}

/// One call for [`Connection::request_all`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Call {
    /// The method.
    pub method: String,
    /// Its params.
    pub params: Value,
    /// How long it may wait for its answer, from when it is sent, or from the server's last
    /// progress or task status.
    pub timeout: Duration,
    /// How long it may take in all, progress or not (tasks polled included); `None` is
    /// `timeout`.
    pub total: Option<Duration>,
}

impl Call {
    /// A call of `method` with `params`, waiting at most `timeout` for its answer.
    pub fn new(method: impl Into<String>, params: Value, timeout: Duration) -> Call {
        Call {
            method: method.into(),
            params,
            timeout,
            total: None,
        }
    }

    /// The call, taking at most `total` in all: progress notifications and a task's polls
    /// keep it waiting past `timeout`, never past `total`.
    pub fn with_total(self, total: Duration) -> Call {
        Call {
            total: Some(total),
            ..self
        }
    }
}

/// A call sent and not yet answered.
struct Outstanding {
    /// Its place in the caller's list.
    index: usize,
    call: Call,
    /// The id of its request in flight (`Null` while a task waits for its next poll).
    id: Value,
    /// When the wait ends: the answer's (or a poll's) time, never past `total`.
    deadline: Instant,
    /// How many times it was sent again with input its server asked for.
    rounds: usize,
    /// The progress token sent with it: its first request's id.
    token: Value,
    /// When it gives up, progress or not.
    total: Instant,
    /// What it waits for now.
    phase: Phase,
    /// The task its server answered with, once it did.
    task: Option<TaskState>,
    /// The last progress its server reported.
    progress: Option<f64>,
    /// When a progress notice was last shown.
    shown: Option<Instant>,
}

impl Outstanding {
    fn new(index: usize, call: Call, id: Value, deadline: Instant) -> Outstanding {
        let total = Instant::now() + call.total.unwrap_or(call.timeout);
        Outstanding {
            index,
            call,
            token: id.clone(),
            id,
            deadline: deadline.min(total),
            rounds: 0,
            total,
            phase: Phase::Call,
            task: None,
            progress: None,
            shown: None,
        }
    }
}

/// What an outstanding call waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The answer to its own request (or a round with input).
    Call,
    /// The time to poll its task.
    Sleep,
    /// The answer to `tasks/get`.
    Get,
    /// The answer to `tasks/update` (input the task asked for).
    Update,
    /// The answer to `tasks/result` (a task that completed without its result inline).
    Fetch,
}

/// A task a call was answered with.
struct TaskState {
    id: String,
    status: String,
    message: Option<String>,
    interval: Duration,
    /// How many times input it asked for was sent.
    rounds: usize,
}

/// What an answer leaves a call waiting for: more, or its result. It lives a moment on the
/// stack, so its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Step {
    Wait(Outstanding),
    Done(usize, Result<Reply, CallError>),
}

/// What an answer to a call's own request says of the call, besides its result.
enum CallState {
    /// The server asks for input: the call again, with the answers.
    Input(Call),
    /// The server asked for input more times than a call answers.
    TooManyRounds,
    /// The server answered with a task (or a task it did not describe well).
    Task(Result<tasks::TaskStart, String>),
}

/// Why a line could not be queued for the server.
enum WriteError {
    /// The server has not read what was queued before.
    Blocked,
    /// The writer stopped: the server's input is closed.
    Gone,
}

/// One message for the server: its bytes (without a line end), and what a dialed transport
/// needs to know of it.
#[derive(Debug, Clone)]
struct Outgoing {
    body: Vec<u8>,
    /// A request's id.
    id: Option<Value>,
    /// A request's or notification's method.
    method: Option<String>,
    /// The protocol revision agreed, for `MCP-Protocol-Version`.
    protocol_version: Option<String>,
    /// The message's own headers (standard and custom) over HTTP.
    headers: headers::HeaderPairs,
    /// When its call gives up: a transport stops reading its answer then (issue 29).
    deadline: Option<Instant>,
}

/// The other end: a process, or a server dialed over the network.
#[derive(Debug)]
enum Peer {
    Process(Child),
    Http(http::HttpPeer),
    Ws(ws::WsPeer),
}

/// The [`Observer`] a connection tells of notices, when it has one.
#[derive(Clone, Default)]
struct Watcher(Option<Observer>);

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Watcher(Some)"
        } else {
            "Watcher(None)"
        })
    }
}

/// A running server and the host's end of its transport.
#[derive(Debug)]
pub struct Connection {
    name: String,
    peer: Peer,
    outgoing: Option<SyncSender<Outgoing>>,
    incoming: Receiver<Incoming>,
    next_id: u64,
    exited: Option<String>,
    limit: usize,
    /// Answers to the server's requests dropped because it did not read its input.
    dropped_answers: u64,
    stderr: Arc<StderrLog>,
    roots: Vec<Root>,
    /// Whether the connection speaks [`STATELESS_PROTOCOL_VERSION`]: each request carries `_meta`.
    stateless: bool,
    /// The revision agreed (or being tried), sent as `MCP-Protocol-Version`.
    agreed: Option<String>,
    tool_headers: headers::ToolHeaders,
    /// The tools whose calls ask for a task at 2025-11-25 (`execution.taskSupport`).
    task_tools: tasks::TaskTools,
    /// Who is told of progress and task status while a call runs.
    observer: Watcher,
    /// Whether the server said its tools changed since [`Connection::take_tools_changed`].
    tools_changed: bool,
    /// The id of the `subscriptions/listen` request the connection opened, cancelled when it
    /// ends.
    listening: Option<Value>,
    /// The server's `initialize` result (for a stateless server, its `server/discover` result
    /// in the same shape: `protocolVersion`, `capabilities`, `serverInfo`, `instructions`).
    pub initialized: Value,
}

impl Connection {
    /// Starts the server and completes `initialize` within `limits.timeout`. A server that
    /// answers with a protocol revision mcpl does not implement is refused and stopped.
    pub fn start(
        launch: &Launch,
        limits: Limits,
        host: &mut dyn ServerRequests,
    ) -> Result<Connection, CallError> {
        let spawn_error = |detail: String| CallError::Spawn {
            server: launch.name.clone(),
            detail,
        };
        let (sender, incoming) = sync_channel(INCOMING_QUEUE);
        let (outgoing, lines) = sync_channel(OUTGOING_QUEUE);
        let stderr_log = Arc::new(StderrLog::default());
        if let Transport::Http(dial) | Transport::Ws(dial) = &launch.transport
            && let Some(warning) = cleartext_credential_warning(&launch.name, dial)
        {
            // Once per server: a connection is started once per server.
            tracing::warn!("{warning}");
        }
        let peer = match &launch.transport {
            Transport::Stdio => {
                let child = spawn_process(launch, limits, sender, lines, &stderr_log)
                    .map_err(spawn_error)?;
                Peer::Process(child)
            }
            Transport::Http(dial) => Peer::Http(
                http::start(
                    &launch.name,
                    dial,
                    limits.max_message_bytes,
                    limits.timeout,
                    sender,
                    lines,
                )
                .map_err(|e| spawn_error(format!("http thread: {e}")))?,
            ),
            Transport::Ws(dial) => Peer::Ws(
                ws::start(
                    &launch.name,
                    dial,
                    limits.max_message_bytes,
                    limits.timeout,
                    sender,
                    lines,
                )
                .map_err(|e| spawn_error(format!("{}: {e}", dial.url)))?,
            ),
        };
        let mut connection = Connection {
            name: launch.name.clone(),
            peer,
            outgoing: Some(outgoing),
            incoming,
            next_id: 0,
            exited: None,
            limit: limits.max_message_bytes,
            dropped_answers: 0,
            stderr: stderr_log,
            roots: launch.roots.clone(),
            stateless: false,
            agreed: None,
            tool_headers: headers::ToolHeaders::default(),
            task_tools: tasks::TaskTools::default(),
            observer: Watcher(None),
            tools_changed: false,
            listening: None,
            initialized: Value::Null,
        };
        if launch.protocol == Protocol::Modern && connection.discover(limits.timeout, host)? {
            if matches!(launch.transport, Transport::Http(_) | Transport::Stdio) {
                connection.subscribe();
            }
            return Ok(connection);
        }
        let mut capabilities = connection.capabilities_offered();
        // Revision 2025-11-25's tasks capability: the client knows tasks (it asks for them on
        // `tools/call`, see `Connection::asks_for_task`). Its `list`, `cancel` and `requests`
        // members say which task requests a client *receives*; MCPL receives none, so it
        // declares none of them.
        capabilities["tasks"] = json!({});
        if launch.protocol == Protocol::Legacy {
            capabilities["experimental"] = json!({"mcpl": {
                "pushEvents": {},
                "channels": {},
                "contextHooks": {"beforeInference": {
                    "inject": ["system", "beforeUser", "afterUser"],
                }},
            }});
        }
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": capabilities,
            "clientInfo": client_info(),
        });
        connection.initialized = connection
            .request("initialize", params, limits.timeout, host)
            .map_err(|error| match error {
                // A server that dies at start usually says why on stderr: quote its last lines.
                CallError::Exited {
                    server,
                    method,
                    detail,
                    ..
                } => CallError::Exited {
                    server,
                    method,
                    detail,
                    stderr: connection.stderr.tail(STDERR_CLOSE_WAIT),
                },
                other => other,
            })?;
        let answered = connection.protocol_version();
        if !PROTOCOL_VERSIONS.contains(&answered) {
            return Err(CallError::Version {
                server: launch.name.clone(),
                answered: shown_version(connection.initialized.get("protocolVersion")),
            });
        }
        connection.agreed = Some(answered.to_owned());
        connection.notify("notifications/initialized", json!({}));
        Ok(connection)
    }

    /// The capabilities the host declares: elicitation (answered without a person, see
    /// [`elicit_without_person`]), the skills extension ([`SKILLS_EXTENSION`]), and roots when
    /// the server has some configured.
    fn capabilities_offered(&self) -> Value {
        let mut capabilities = json!({
            "elicitation": {"form": {}},
            "extensions": {SKILLS_EXTENSION: {}, TASKS_EXTENSION: {}},
        });
        if !self.roots.is_empty() {
            capabilities["roots"] = json!({});
        }
        capabilities
    }

    /// Asks `server/discover` whether the server speaks [`STATELESS_PROTOCOL_VERSION`]; when it
    /// does, the connection speaks it and is ready. A server that refuses the revision once
    /// while naming it among those it supports is asked again; any other answer (an error, a
    /// result without the revision) leaves the connection to the `initialize` handshake.
    fn discover(
        &mut self,
        timeout: Duration,
        host: &mut dyn ServerRequests,
    ) -> Result<bool, CallError> {
        self.stateless = true;
        self.agreed = Some(STATELESS_PROTOCOL_VERSION.to_owned());
        let mut asked_again = false;
        let outcome = loop {
            match self.request("server/discover", json!({}), timeout, host) {
                Err(CallError::Rpc { error, .. })
                    if error.code == UNSUPPORTED_PROTOCOL_VERSION && !asked_again =>
                {
                    let supported = error
                        .data
                        .as_ref()
                        .and_then(|d| d.get("supported"))
                        .and_then(Value::as_array)
                        .is_some_and(|s| s.iter().any(|v| v == STATELESS_PROTOCOL_VERSION));
                    if !supported {
                        break None;
                    }
                    asked_again = true;
                }
                Ok(result) => break Some(result),
                Err(error @ (CallError::Exited { .. } | CallError::Spawn { .. })) => {
                    return Err(error);
                }
                Err(_) => break None,
            }
        };
        let speaks = outcome.as_ref().is_some_and(|result| {
            result
                .get("supportedVersions")
                .and_then(Value::as_array)
                .is_some_and(|v| v.iter().any(|v| v == STATELESS_PROTOCOL_VERSION))
        });
        let Some(result) = outcome.filter(|_| speaks) else {
            self.stateless = false;
            self.agreed = None;
            return Ok(false);
        };
        self.initialized = json!({
            "protocolVersion": STATELESS_PROTOCOL_VERSION,
            "capabilities": result.get("capabilities").cloned().unwrap_or_else(|| json!({})),
            "serverInfo": result.get("serverInfo").cloned().unwrap_or(Value::Null),
            "instructions": result.get("instructions").cloned().unwrap_or(Value::Null),
        });
        Ok(true)
    }

    /// At the stateless revision a server sends `notifications/tools/list_changed` only on a
    /// stream the client opens with `subscriptions/listen`: when the server declares
    /// `tools.listChanged`, one is opened for that notification alone. Over HTTP the transport
    /// reads its stream (and opens it again when it ends); over stdio its notifications come on
    /// the server's output like any other. Its answer, if one comes, matches no call and is
    /// skipped.
    fn subscribe(&mut self) {
        let declared = self
            .capabilities()
            .pointer("/tools/listChanged")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if !self.stateless || !declared {
            return;
        }
        self.next_id += 1;
        let id = json!(self.next_id);
        let mut params = json!({"notifications": {"toolsListChanged": true}});
        self.add_meta(&mut params);
        let headers = headers::standard(LISTEN, &params);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": LISTEN, "params": params});
        match self.write(&message, None, Some(LISTEN), headers) {
            Ok(()) => self.listening = Some(id),
            Err(_) => {
                tracing::debug!(server = %self.name, "subscriptions/listen could not be sent");
            }
        }
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The protocol revision the server answered `initialize` with (one of
    /// [`PROTOCOL_VERSIONS`] once started).
    pub fn protocol_version(&self) -> &str {
        self.initialized
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The `instructions` the server gave in its `initialize` result (or `server/discover`),
    /// as it sent them; `None` when it gave none, or something that is not a string.
    pub fn instructions(&self) -> Option<&str> {
        self.initialized.get("instructions").and_then(Value::as_str)
    }

    /// The capabilities the server declared.
    pub fn capabilities(&self) -> &Value {
        self.initialized.get("capabilities").unwrap_or(&Value::Null)
    }

    /// Whether the server offers `resources/read`.
    pub fn offers_resources(&self) -> bool {
        self.capabilities().get("resources").is_some()
    }

    /// Whether the server declares the skills extension ([`SKILLS_EXTENSION`]) and resources,
    /// which the extension reads its files with.
    pub fn offers_skills(&self) -> bool {
        self.offers_resources()
            && self
                .capabilities()
                .pointer("/extensions")
                .and_then(|e| e.get(SKILLS_EXTENSION))
                .is_some_and(|e| !e.is_null() && e != &Value::Bool(false))
    }

    /// Whether the server offers MCPL's `context/beforeInference` hook.
    pub fn offers_context_hook(&self) -> bool {
        self.capabilities()
            .pointer("/experimental/mcpl/contextHooks/beforeInference")
            .is_some_and(|hook| !hook.is_null() && hook != &Value::Bool(false))
    }

    /// Whether the connection speaks the stateless revision, [`STATELESS_PROTOCOL_VERSION`].
    pub fn is_stateless(&self) -> bool {
        self.stateless
    }

    /// Whether the server process has gone.
    pub fn has_exited(&self) -> bool {
        self.exited.is_some()
    }

    /// How many answers to the server's requests were dropped because it did not read them.
    pub fn dropped_answers(&self) -> u64 {
        self.dropped_answers
    }

    /// Tells `observer` of each call's progress and task status from now on.
    pub fn set_observer(&mut self, observer: Observer) {
        self.observer = Watcher(Some(observer));
    }

    fn observe(&self, notice: &Notice) {
        if let Some(observer) = &self.observer.0 {
            observer(notice);
        }
    }

    /// Whether the server sent `notifications/tools/list_changed` since the last call, and
    /// clears that. A flood of them is one `true`: the host lists the tools again once.
    pub fn take_tools_changed(&mut self) -> bool {
        std::mem::take(&mut self.tools_changed)
    }

    /// Sends a notification; a server that has gone, or does not read, is not an error here.
    pub fn notify(&mut self, method: &str, params: Value) {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let headers = headers::standard(method, &params);
        let _ = self.write(&message, None, Some(method), headers);
    }

    /// Calls `method` and waits up to `timeout` for its response, answering the server's own
    /// requests through `host` while it waits. The timeout counts from the call: a server that
    /// does not read its input gets it too.
    pub fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
        host: &mut dyn ServerRequests,
    ) -> Result<Value, CallError> {
        let call = Call::new(method, params, timeout);
        let mut results = self.request_all(vec![call], 1, host);
        results
            .pop()
            .unwrap_or_else(|| Err(self.exited_error(method, "no result".to_owned())))
    }

    /// Makes the calls with up to `in_flight` of them outstanding at once, answering the
    /// server's own requests through `host` while they wait, and returns their results in the
    /// calls' order. Each call's timeout counts from when it is sent. A line over the limit
    /// fails the call whose id its first bytes name, or, when they name none, every call
    /// outstanding.
    pub fn request_all(
        &mut self,
        calls: Vec<Call>,
        in_flight: usize,
        host: &mut dyn ServerRequests,
    ) -> Vec<Result<Value, CallError>> {
        self.replies(calls, in_flight, host)
            .into_iter()
            .map(|result| result.map(Reply::into_value))
            .collect()
    }

    /// [`Connection::request_all`], with each result as the server wrote it: a tool result in
    /// strict JSON stays its JSON text, for the session's one reader
    /// (`Session::declared_result_bytes`), and no `Value` is built for it.
    pub fn replies(
        &mut self,
        calls: Vec<Call>,
        in_flight: usize,
        host: &mut dyn ServerRequests,
    ) -> Vec<Result<Reply, CallError>> {
        let mut results: Vec<Option<Result<Reply, CallError>>> =
            calls.iter().map(|_| None).collect();
        let mut waiting = calls.into_iter().enumerate();
        let mut outstanding: Vec<Outstanding> = Vec::new();
        loop {
            while outstanding.len() < in_flight.max(1) {
                let Some((index, call)) = waiting.next() else {
                    break;
                };
                if interruption().load(Ordering::Relaxed) {
                    results[index] = Some(Err(CallError::Interrupted {
                        server: self.name.clone(),
                        method: call.method.clone(),
                    }));
                    continue;
                }
                match self.send(&call, None) {
                    Ok((id, deadline)) => {
                        outstanding.push(Outstanding::new(index, call, id, deadline));
                    }
                    Err(error) => results[index] = Some(Err(error)),
                }
            }
            if outstanding.is_empty() {
                break;
            }
            let now = Instant::now();
            let (expired, open): (Vec<Outstanding>, Vec<Outstanding>) =
                outstanding.into_iter().partition(|o| o.deadline <= now);
            outstanding = open;
            for o in expired {
                if o.phase == Phase::Sleep && o.total > now {
                    match self.poll(o) {
                        Step::Wait(o) => outstanding.push(o),
                        Step::Done(index, result) => results[index] = Some(result),
                    }
                    continue;
                }
                let reason = format!("timed out after {} ms", o.call.timeout.as_millis());
                self.give_up(&o, &reason);
                results[o.index] = Some(Err(match o.call.total {
                    Some(after) if o.total <= now => CallError::Deadline {
                        server: self.name.clone(),
                        method: o.call.method.clone(),
                        after,
                    },
                    _ => self.timed_out(&o.call),
                }));
            }
            if interruption().load(Ordering::Relaxed) {
                for o in std::mem::take(&mut outstanding) {
                    self.give_up(&o, "the run was interrupted");
                    results[o.index] = Some(Err(CallError::Interrupted {
                        server: self.name.clone(),
                        method: o.call.method.clone(),
                    }));
                }
                continue;
            }
            let Some(next_deadline) = outstanding.iter().map(|o| o.deadline).min() else {
                continue;
            };
            // The wait is sliced, so an interruption is seen within [`INTERRUPT_POLL`].
            let wait = next_deadline
                .saturating_duration_since(now)
                .min(INTERRUPT_POLL);
            let incoming = match self.incoming.recv_timeout(wait) {
                Ok(incoming) => incoming,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => Incoming::Closed,
            };
            match incoming {
                Incoming::Response { id, outcome } => {
                    match outstanding.iter().position(|o| o.id == id) {
                        Some(at) => {
                            let o = outstanding.swap_remove(at);
                            match self.answered(o, outcome, host) {
                                Step::Wait(o) => outstanding.push(o),
                                Step::Done(index, result) => results[index] = Some(result),
                            }
                        }
                        None => self.handle(Incoming::Response { id, outcome }, host),
                    }
                }
                Incoming::Failed { id, detail } => {
                    match outstanding.iter().position(|o| o.id == id) {
                        Some(at) => {
                            let o = outstanding.swap_remove(at);
                            results[o.index] = Some(Err(CallError::Http {
                                server: self.name.clone(),
                                method: o.call.method.clone(),
                                detail,
                            }));
                        }
                        None => self.handle(Incoming::Failed { id, detail }, host),
                    }
                }
                Incoming::TooLong {
                    id,
                    is_request: false,
                } => {
                    let named = id
                        .as_ref()
                        .and_then(|id| outstanding.iter().position(|o| &o.id == id));
                    let failed: Vec<Outstanding> = match (named, &id) {
                        (Some(at), _) => vec![outstanding.swap_remove(at)],
                        (None, None) => std::mem::take(&mut outstanding),
                        (None, Some(_)) => Vec::new(),
                    };
                    if failed.is_empty() {
                        self.handle(
                            Incoming::TooLong {
                                id,
                                is_request: false,
                            },
                            host,
                        );
                    }
                    for o in failed {
                        results[o.index] = Some(Err(CallError::TooLong {
                            server: self.name.clone(),
                            method: o.call.method.clone(),
                            limit: self.limit,
                        }));
                    }
                }
                Incoming::Progress(progress) => {
                    match outstanding.iter_mut().find(|o| o.token == progress.token) {
                        Some(o) => self.progressed(o, progress),
                        None => {
                            tracing::trace!(server = %self.name, "progress for no waiting call; skipped")
                        }
                    }
                }
                Incoming::Closed => {
                    let detail = self.exit_detail("it closed its output".to_owned());
                    for o in outstanding.drain(..) {
                        results[o.index] =
                            Some(Err(self.exited_error(&o.call.method, detail.clone())));
                    }
                }
                other => self.handle(other, host),
            }
        }
        results
            .into_iter()
            .map(|result| {
                result.unwrap_or_else(|| Err(self.exited_error("(a call)", "no result".to_owned())))
            })
            .collect()
    }

    /// Stops waiting for a call: its request in flight is cancelled, and its task, when it has
    /// one, with `tasks/cancel` (whose answer nobody waits for).
    fn give_up(&mut self, o: &Outstanding, reason: &str) {
        if o.phase == Phase::Call {
            self.cancel(o, reason);
        }
        if let Some(task) = &o.task {
            let call = Call::new(
                "tasks/cancel",
                json!({"taskId": task.id}),
                o.call.timeout.min(TASK_CANCEL_WAIT),
            );
            if let Err(error) = self.send(&call, None) {
                tracing::debug!(server = %self.name, %error, "tasks/cancel not sent");
            }
        }
    }

    /// What one answer to a call's request in flight leaves it waiting for.
    fn answered(
        &mut self,
        mut o: Outstanding,
        outcome: Result<Reply, RpcError>,
        host: &mut dyn ServerRequests,
    ) -> Step {
        // What a call's answer says of its state, read from the result's fields but its
        // content before the result is handed on.
        let state = match (&o.phase, &outcome) {
            (Phase::Call, Ok(result)) => {
                let head = result.head();
                if is_input_required(&head) {
                    Some(match o.rounds < MAX_INPUT_ROUNDS {
                        true => CallState::Input(self.with_input(&o.call, &head, host)),
                        false => CallState::TooManyRounds,
                    })
                } else if o.call.method == "tools/call" {
                    tasks::task_of(&head).map(CallState::Task)
                } else {
                    None
                }
            }
            _ => None,
        };
        match (o.phase, outcome, state) {
            (_, _, Some(CallState::Input(call))) => match self.send(&call, Some(&o.token)) {
                Ok((id, deadline)) => {
                    (o.call, o.id, o.deadline) = (call, id, deadline.min(o.total));
                    o.rounds += 1;
                    Step::Wait(o)
                }
                Err(error) => Step::Done(o.index, Err(error)),
            },
            (_, _, Some(CallState::TooManyRounds)) => Step::Done(
                o.index,
                Err(CallError::InputRounds {
                    server: self.name.clone(),
                    method: o.call.method.clone(),
                }),
            ),
            (_, _, Some(CallState::Task(Err(why)))) => {
                Step::Done(o.index, Err(self.task_error(&o.call, why)))
            }
            (_, _, Some(CallState::Task(Ok(start)))) => {
                let task = TaskState {
                    id: start.id,
                    status: start.status,
                    message: start.message,
                    interval: start.interval.unwrap_or(tasks::DEFAULT_POLL_INTERVAL),
                    rounds: 0,
                };
                self.show_task(&o.call, &task);
                o.task = Some(task);
                Step::Wait(self.sleep(o))
            }
            (Phase::Call | Phase::Sleep, outcome, None) => {
                Step::Done(o.index, self.finish(&o.call, outcome))
            }
            (Phase::Get, outcome, None) => self.task_answered(o, outcome, host),
            (Phase::Update, Ok(_), None) => Step::Wait(self.sleep(o)),
            (Phase::Fetch, Ok(result), None) => Step::Done(o.index, Ok(result)),
            (phase, Err(error), None) => {
                self.give_up(&o, "the task could not be followed");
                let method = if phase == Phase::Update {
                    "tasks/update"
                } else {
                    "tasks/result"
                };
                Step::Done(o.index, Err(self.rpc_error(method, error)))
            }
        }
    }

    /// What a `tasks/get` answer leaves a call waiting for.
    fn task_answered(
        &mut self,
        mut o: Outstanding,
        outcome: Result<Reply, RpcError>,
        host: &mut dyn ServerRequests,
    ) -> Step {
        let detail = match outcome {
            Ok(detail) => detail.into_value(),
            Err(error) => {
                self.give_up(&o, "the task could not be followed");
                return Step::Done(o.index, Err(self.rpc_error("tasks/get", error)));
            }
        };
        let Some(task) = o.task.as_mut() else {
            return Step::Done(o.index, Err(self.task_error(&o.call, "no task".to_owned())));
        };
        let fields = match tasks::task_fields(&detail) {
            Ok(fields) if fields.id == task.id => fields,
            Ok(_) => {
                self.give_up(&o, "tasks/get answered for another task");
                let why = "tasks/get answered for another task".to_owned();
                return Step::Done(o.index, Err(self.task_error(&o.call, why)));
            }
            Err(why) => {
                self.give_up(&o, "tasks/get answered without the task");
                let why = format!("tasks/get answered with {why}");
                return Step::Done(o.index, Err(self.task_error(&o.call, why)));
            }
        };
        if (&fields.status, &fields.message) != (&task.status, &task.message) {
            (task.status, task.message) = (fields.status, fields.message);
            // A new status is news from the server: the call's idle time starts again.
            o.deadline = (Instant::now() + o.call.timeout).min(o.total);
            let task = o.task.as_ref().expect("the task was just updated");
            self.show_task(&o.call, task);
        }
        let task = o.task.as_mut().expect("the task is there");
        // A poll's answer may suggest another interval; without one the last stands.
        task.interval = fields.interval.unwrap_or(task.interval);
        let (task_id, status) = (task.id.clone(), task.status.clone());
        match status.as_str() {
            "working" => Step::Wait(self.sleep(o)),
            "input_required" if task.rounds < MAX_INPUT_ROUNDS => {
                task.rounds += 1;
                let responses = self.input_responses(&detail, host);
                let params = json!({"taskId": task_id, "inputResponses": responses});
                self.task_request(o, "tasks/update", params, Phase::Update)
            }
            "input_required" => {
                self.give_up(&o, "the task kept asking for input");
                Step::Done(
                    o.index,
                    Err(CallError::InputRounds {
                        server: self.name.clone(),
                        method: o.call.method.clone(),
                    }),
                )
            }
            "completed" => match detail.get("result").filter(|r| r.is_object()) {
                Some(result) => Step::Done(
                    o.index,
                    self.finish(&o.call, Ok(Reply::Value(result.clone()))),
                ),
                None => {
                    self.task_request(o, "tasks/result", json!({"taskId": task_id}), Phase::Fetch)
                }
            },
            "failed" => {
                let error = match detail.get("error").filter(|e| e.is_object()) {
                    Some(error) => self.rpc_error(&o.call.method, RpcError::from_json(error)),
                    None => self.task_error(&o.call, "the task failed".to_owned()),
                };
                Step::Done(o.index, Err(error))
            }
            "cancelled" => {
                let why = "the server cancelled the task".to_owned();
                Step::Done(o.index, Err(self.task_error(&o.call, why)))
            }
            _ => {
                self.give_up(&o, "the task's status is unknown");
                let why = format!("tasks/get answered with an unknown status {status:?}");
                Step::Done(o.index, Err(self.task_error(&o.call, why)))
            }
        }
    }

    /// A call whose task waits for its next poll.
    fn sleep(&self, mut o: Outstanding) -> Outstanding {
        let interval = o
            .task
            .as_ref()
            .map_or(tasks::DEFAULT_POLL_INTERVAL, |t| t.interval);
        o.phase = Phase::Sleep;
        o.id = Value::Null;
        o.deadline = (Instant::now() + interval).min(o.total);
        o
    }

    /// Polls a call's task with `tasks/get`.
    fn poll(&mut self, o: Outstanding) -> Step {
        let task_id = o.task.as_ref().map(|t| t.id.clone()).unwrap_or_default();
        self.task_request(o, "tasks/get", json!({"taskId": task_id}), Phase::Get)
    }

    /// Sends one request about a call's task and waits for its answer.
    fn task_request(
        &mut self,
        mut o: Outstanding,
        method: &str,
        params: Value,
        phase: Phase,
    ) -> Step {
        let call = Call::new(method, params, o.call.timeout);
        match self.send(&call, None) {
            Ok((id, deadline)) => {
                (o.id, o.deadline, o.phase) = (id, deadline.min(o.total), phase);
                Step::Wait(o)
            }
            Err(error) => {
                self.give_up(&o, "the task could not be followed");
                Step::Done(o.index, Err(error))
            }
        }
    }

    /// Takes one progress notification for a call: shown at most every [`PROGRESS_GAP`] (the
    /// last always), and the call's idle time starts again. Progress that does not advance is
    /// neither shown nor waited for, as the protocol says progress must increase.
    fn progressed(&self, o: &mut Outstanding, progress: tasks::Progress) {
        if o.progress.is_some_and(|last| progress.progress <= last) {
            return;
        }
        let now = Instant::now();
        o.progress = Some(progress.progress);
        if o.phase != Phase::Sleep {
            o.deadline = (now + o.call.timeout).min(o.total);
        }
        let last = progress
            .total
            .is_some_and(|total| progress.progress >= total);
        if last
            || o.shown
                .is_none_or(|at| now.duration_since(at) >= PROGRESS_GAP)
        {
            o.shown = Some(now);
            self.observe(&Notice::Progress {
                server: self.name.clone(),
                tool: tasks::tool_name(&o.call.params),
                progress: progress.progress,
                total: progress.total,
                message: progress.message,
            });
        }
    }

    fn show_task(&self, call: &Call, task: &TaskState) {
        self.observe(&Notice::Task {
            server: self.name.clone(),
            tool: tasks::tool_name(&call.params),
            task_id: task.id.clone(),
            status: task.status.clone(),
            message: task.message.clone(),
        });
    }

    fn task_error(&self, call: &Call, detail: String) -> CallError {
        CallError::Task {
            server: self.name.clone(),
            method: call.method.clone(),
            detail,
        }
    }

    fn rpc_error(&self, method: &str, error: RpcError) -> CallError {
        CallError::Rpc {
            server: self.name.clone(),
            method: method.to_owned(),
            error: Box::new(error),
        }
    }

    /// Tells the server a call it will not be waited for any more is cancelled
    /// (`notifications/cancelled`), so it can stop the work; never for `initialize`, which the
    /// protocol does not let a client cancel.
    fn cancel(&mut self, o: &Outstanding, reason: &str) {
        if o.call.method == "initialize" {
            return;
        }
        self.notify(
            "notifications/cancelled",
            json!({"requestId": o.id, "reason": reason}),
        );
    }

    /// A call's result as the caller gets it; a `tools/list` result loses the tools whose
    /// `x-mcp-header`s break the rules, and teaches the connection the others' headers.
    fn finish(
        &mut self,
        call: &Call,
        outcome: Result<Reply, RpcError>,
    ) -> Result<Reply, CallError> {
        let result = outcome.map_err(|error| CallError::Rpc {
            server: self.name.clone(),
            method: call.method.clone(),
            error: Box::new(error),
        })?;
        if call.method != "tools/list" {
            return Ok(result);
        }
        let mut result = result.into_value();
        self.tool_headers.learn(&self.name, &mut result);
        self.task_tools.learn(&result);
        Ok(Reply::Value(result))
    }

    /// The call again, with the answers to the input its server asked for (multi round-trip
    /// requests): `inputResponses` keyed as the `inputRequests` were, and `requestState`
    /// exactly as the server sent it, or not at all when it sent none.
    fn with_input(&mut self, call: &Call, result: &Value, host: &mut dyn ServerRequests) -> Call {
        let responses = self.input_responses(result, host);
        let mut params = match &call.params {
            Value::Object(params) => params.clone(),
            _ => serde_json::Map::new(),
        };
        params.remove("requestState");
        params.insert("inputResponses".to_owned(), Value::Object(responses));
        if let Some(state) = result.get("requestState") {
            params.insert("requestState".to_owned(), state.clone());
        }
        Call {
            method: call.method.clone(),
            params: Value::Object(params),
            ..call.clone()
        }
    }

    /// The answers to the `inputRequests` in a result (or a task waiting for input), keyed as
    /// they were; a request the host cannot answer is left out.
    fn input_responses(
        &mut self,
        result: &Value,
        host: &mut dyn ServerRequests,
    ) -> serde_json::Map<String, Value> {
        let mut responses = serde_json::Map::new();
        if let Some(requests) = result.get("inputRequests").and_then(Value::as_object) {
            for (key, request) in requests {
                let method = request
                    .get("method")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let params = request.get("params").unwrap_or(&Value::Null);
                match self.answer_request(method, params, host) {
                    Ok(answer) => {
                        responses.insert(key.clone(), answer);
                    }
                    Err(error) => {
                        tracing::debug!(server = %self.name, %method, %error, "an input request not answered");
                    }
                }
            }
        }
        responses
    }

    /// The answer to one of the server's requests: the standard ones here, the rest by `host`.
    fn answer_request(
        &mut self,
        method: &str,
        params: &Value,
        host: &mut dyn ServerRequests,
    ) -> Result<Value, RpcError> {
        answers::standard(method, params, &self.roots)
            .unwrap_or_else(|| host.answer(&self.name, method, params))
    }

    /// Queues one call's request, waiting for room until its deadline; returns its id and
    /// deadline. A `tools/call` carries a progress token in `_meta`: `token`, or its own id.
    fn send(&mut self, call: &Call, token: Option<&Value>) -> Result<(Value, Instant), CallError> {
        if let Some(detail) = &self.exited {
            return Err(self.exited_error(&call.method, detail.clone()));
        }
        let deadline = Instant::now() + call.timeout;
        self.next_id += 1;
        let id = self.next_id;
        let mut params = call.params.clone();
        if self.stateless {
            self.add_meta(&mut params);
        }
        if call.method == "tools/call" {
            if !params.is_object() {
                params = json!({});
            }
            if !params["_meta"].is_object() {
                params["_meta"] = json!({});
            }
            params["_meta"]["progressToken"] = token.cloned().unwrap_or_else(|| json!(id));
            if self.asks_for_task(&params) {
                let ttl = call.total.unwrap_or(call.timeout).min(tasks::MAX_TASK_TTL);
                params["task"] = json!({"ttl": ttl.as_millis() as u64});
            }
        }
        let mut headers = headers::standard(&call.method, &params);
        if call.method == "tools/call" {
            headers.extend(self.tool_headers.for_call(&params));
        }
        let message = json!({"jsonrpc": "2.0", "id": id, "method": call.method, "params": params});
        match self.write(&message, Some(deadline), Some(&call.method), headers) {
            Ok(()) => Ok((json!(id), deadline)),
            Err(WriteError::Blocked) => Err(self.timed_out(call)),
            Err(WriteError::Gone) => {
                let detail = self.exit_detail("its input closed".to_owned());
                Err(self.exited_error(&call.method, detail))
            }
        }
    }

    /// Whether a `tools/call` asks for a task (revision 2025-11-25's task augmentation): the
    /// server accepts task-augmented calls and listed the tool with `execution.taskSupport`
    /// `"required"` or `"optional"`. The 2026-07-28 tasks extension needs no such param.
    fn asks_for_task(&self, params: &Value) -> bool {
        !self.stateless
            && tasks::accepts_task_calls(self.capabilities())
            && params
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|name| self.task_tools.wants_task(name))
    }

    fn timed_out(&self, call: &Call) -> CallError {
        CallError::Timeout {
            server: self.name.clone(),
            method: call.method.clone(),
            after: call.timeout,
        }
    }

    /// Handles what the server has sent so far without waiting: answers its requests through
    /// `host`. It stops after [`PUMP_MESSAGES`] messages or [`PUMP_TIME`], so a server that never
    /// stops sending cannot hold up the caller; the rest waits for the next pump or call.
    /// Returns how many requests it answered.
    pub fn pump(&mut self, host: &mut dyn ServerRequests) -> usize {
        let mut answered = 0;
        if self.exited.is_some() {
            return answered;
        }
        let until = Instant::now() + PUMP_TIME;
        for _ in 0..PUMP_MESSAGES {
            match self.incoming.try_recv() {
                Ok(Incoming::Closed) | Err(TryRecvError::Disconnected) => {
                    self.exit_detail("it closed its output".to_owned());
                    return answered;
                }
                Ok(incoming @ Incoming::Request { .. }) => {
                    answered += 1;
                    self.handle(incoming, host);
                }
                Ok(other) => self.handle(other, host),
                Err(TryRecvError::Empty) => return answered,
            }
            if Instant::now() >= until {
                break;
            }
        }
        answered
    }

    /// Puts the stateless revision's `_meta` in a request's params: the revision, the
    /// client's capabilities and who it is, beside what the caller put there.
    fn add_meta(&self, params: &mut Value) {
        if !params.is_object() {
            *params = json!({});
        }
        let meta = &mut params["_meta"];
        if !meta.is_object() {
            *meta = json!({});
        }
        meta["io.modelcontextprotocol/protocolVersion"] = json!(STATELESS_PROTOCOL_VERSION);
        meta["io.modelcontextprotocol/clientCapabilities"] = self.capabilities_offered();
        meta["io.modelcontextprotocol/clientInfo"] = client_info();
    }

    fn handle(&mut self, incoming: Incoming, host: &mut dyn ServerRequests) {
        match incoming {
            Incoming::Request { id, method, params } => {
                let answer = self.answer_request(&method, &params, host);
                let message = match answer {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()}),
                };
                if let Err(WriteError::Blocked) = self.write(&message, None, None, Vec::new()) {
                    self.dropped_answers += 1;
                    tracing::debug!(server = %self.name, %method, "the server does not read; answer dropped");
                }
            }
            Incoming::Response { id, .. } => {
                tracing::debug!(server = %self.name, %id, "a response that matches no waiting call; skipped");
            }
            Incoming::Failed { id, .. } => {
                tracing::debug!(server = %self.name, %id, "a failure that matches no waiting call; skipped");
            }
            Incoming::TooLong { .. } => {
                tracing::warn!(server = %self.name, limit = self.limit, "a message over the limit that no call waits for; dropped");
            }
            Incoming::Progress(_) => {
                tracing::trace!(server = %self.name, "progress while no call waits; skipped");
            }
            Incoming::ToolsChanged => self.tools_changed = true,
            Incoming::Closed => {
                self.exit_detail("it closed its output".to_owned());
            }
        }
    }

    /// Queues one line for the writer. With a deadline it waits for room until then; without,
    /// a full queue is [`WriteError::Blocked`] at once.
    fn write(
        &mut self,
        message: &Value,
        deadline: Option<Instant>,
        method: Option<&str>,
        mut headers: headers::HeaderPairs,
    ) -> Result<(), WriteError> {
        let Some(outgoing) = &self.outgoing else {
            return Err(WriteError::Gone);
        };
        let Ok(body) = serde_json::to_vec(message) else {
            return Err(WriteError::Gone);
        };
        if let Some(version) = &self.agreed {
            headers.push(("MCP-Protocol-Version".to_owned(), version.clone()));
        }
        let mut line = Outgoing {
            body,
            id: message.get("id").filter(|_| method.is_some()).cloned(),
            method: method.map(str::to_owned),
            protocol_version: self.agreed.clone(),
            headers,
            deadline,
        };
        loop {
            match outgoing.try_send(line) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Disconnected(_)) => return Err(WriteError::Gone),
                Err(TrySendError::Full(back)) => {
                    let left = deadline.map_or(Duration::ZERO, |d| {
                        d.saturating_duration_since(Instant::now())
                    });
                    if left.is_zero() {
                        return Err(WriteError::Blocked);
                    }
                    std::thread::sleep(left.min(Duration::from_millis(5)));
                    line = back;
                }
            }
        }
    }

    /// Records that the server has gone and says how: its exit status when it has one.
    fn exit_detail(&mut self, fallback: String) -> String {
        if let Some(detail) = &self.exited {
            return detail.clone();
        }
        let Peer::Process(child) = &mut self.peer else {
            self.exited = Some(fallback.clone());
            return fallback;
        };
        // The process may take a moment to be reaped after closing its output.
        let deadline = Instant::now() + Duration::from_millis(500);
        let detail = loop {
            match child.try_wait() {
                Ok(Some(status)) => break format!("it exited with {status}"),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                _ => break fallback,
            }
        };
        self.exited = Some(detail.clone());
        detail
    }

    fn exited_error(&self, method: &str, detail: String) -> CallError {
        CallError::Exited {
            server: self.name.clone(),
            method: method.to_owned(),
            detail,
            stderr: StderrTail::default(),
        }
    }
}

impl Drop for Connection {
    /// Closes the server's stdin (once the writer has sent what was queued), gives it a moment
    /// to exit, then kills it; a dialed server's session is ended with `DELETE`.
    fn drop(&mut self) {
        if let Some(id) = self.listening.take() {
            // The subscription ends when the client cancels it.
            self.notify(
                "notifications/cancelled",
                json!({"requestId": id, "reason": "the connection closes"}),
            );
        }
        drop(self.outgoing.take());
        let child = match &mut self.peer {
            Peer::Process(child) => child,
            Peer::Http(peer) => return peer.close(),
            Peer::Ws(peer) => return peer.close(),
        };
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// A protocol version as an error may show it: only when it looks like one (`YYYY-MM-DD`),
/// since anything else is the server's own bytes.
fn shown_version(answered: Option<&Value>) -> String {
    match answered {
        None => "(none)".to_owned(),
        Some(Value::String(version))
            if version.len() == 10
                && version.bytes().enumerate().all(|(i, b)| {
                    if i == 4 || i == 7 {
                        b == b'-'
                    } else {
                        b.is_ascii_digit()
                    }
                }) =>
        {
            version.clone()
        }
        Some(_) => "(not a revision date)".to_owned(),
    }
}

/// Who the host is, in `initialize` and in each stateless request's `_meta`.
fn client_info() -> Value {
    json!({"name": "mcpl", "version": env!("CARGO_PKG_VERSION")})
}

/// Whether a result asks for input before it can be complete (revision 2026-07-28); a result
/// without `resultType` is complete.
fn is_input_required(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// Starts the server process with its reader, writer and stderr threads.
fn spawn_process(
    launch: &Launch,
    limits: Limits,
    sender: SyncSender<Incoming>,
    lines: Receiver<Outgoing>,
    stderr_log: &Arc<StderrLog>,
) -> Result<Child, String> {
    let mut command = Command::new(&launch.command);
    if let Some(inherited) = launch.inherit_env.inherited(|name| std::env::var_os(name)) {
        command.env_clear().envs(inherited);
    }
    command
        .args(&launch.args)
        .envs(&launch.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(cwd) = &launch.cwd {
        command.current_dir(cwd);
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("{}: {e}", launch.command))?;
    let (stdin, stdout, stderr) =
        match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(stdin), Some(stdout), Some(stderr)) => (stdin, stdout, stderr),
            _ => return Err("no pipes to the process".to_owned()),
        };
    spawn_reader(&launch.name, stdout, limits.max_message_bytes, sender)
        .map_err(|e| format!("reader thread: {e}"))?;
    spawn_writer(&launch.name, stdin, lines).map_err(|e| format!("writer thread: {e}"))?;
    spawn_stderr_logger(&launch.name, stderr, Arc::clone(stderr_log))
        .map_err(|e| format!("stderr thread: {e}"))?;
    Ok(child)
}

fn spawn_writer(
    name: &str,
    mut stdin: ChildStdin,
    lines: Receiver<Outgoing>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(format!("mcpl-{name}-stdin"))
        .spawn(move || {
            // Ends when the connection drops its sender (closing stdin) or a write fails.
            for line in lines {
                let written = stdin
                    .write_all(&line.body)
                    .and_then(|()| stdin.write_all(b"\n"))
                    .and_then(|()| stdin.flush());
                if written.is_err() {
                    return;
                }
            }
        })
        .map(drop)
}

fn spawn_reader(
    name: &str,
    stdout: impl Read + Send + 'static,
    limit: usize,
    sender: SyncSender<Incoming>,
) -> std::io::Result<()> {
    let server = name.to_owned();
    std::thread::Builder::new()
        .name(format!("mcpl-{name}-stdout"))
        .spawn(move || {
            read_lines(
                &server,
                BufReader::with_capacity(64 << 10, stdout),
                limit,
                &sender,
            )
        })
        .map(drop)
}

/// Reads lines until the stream ends, sending each message as an [`Incoming`]. A line is held
/// only up to `limit` bytes: past it, [`Incoming::TooLong`] is sent at once and the rest of the
/// line is read and dropped. Lines may be long within the limit (a filesystem server sends an
/// 11 MB line for a 4 MB image, twice over).
fn read_lines(server: &str, mut reader: impl BufRead, limit: usize, sender: &SyncSender<Incoming>) {
    let mut line: Vec<u8> = Vec::new();
    let mut dropping = false;
    loop {
        let buffer = match reader.fill_buf() {
            Ok([]) => break,
            Ok(buffer) => buffer,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let (piece, ends_line) = match memchr::memchr(b'\n', buffer) {
            Some(at) => (&buffer[..at], true),
            None => (buffer, false),
        };
        let used = piece.len() + usize::from(ends_line);
        if !dropping {
            if line.len() + piece.len() > limit {
                dropping = true;
                let mut head = std::mem::take(&mut line);
                head.extend_from_slice(&piece[..piece.len().min(HEAD_BYTES)]);
                let (id, is_request) = head_identity(&head[..head.len().min(HEAD_BYTES)]);
                tracing::warn!(
                    server,
                    limit,
                    "a message over the limit; the rest of it is dropped"
                );
                if sender.send(Incoming::TooLong { id, is_request }).is_err() {
                    return;
                }
            } else {
                line.extend_from_slice(piece);
            }
        }
        reader.consume(used);
        if ends_line {
            if !dropping
                && let Some(incoming) = parse_line_taking(server, &mut line)
                && sender.send(incoming).is_err()
            {
                return;
            }
            dropping = false;
            if line.capacity() > KEEP_BUFFER_BYTES {
                line = Vec::new();
            } else {
                line.clear();
            }
        }
    }
    if !dropping
        && let Some(incoming) = parse_line_taking(server, &mut line)
        && sender.send(incoming).is_err()
    {
        return;
    }
    let _ = sender.send(Incoming::Closed);
}

/// The fields that say what a message is, read without building its params or result.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default)]
    id: Option<serde::de::IgnoredAny>,
}

/// What a response line carries, read as a stdio connection reads each line it owns: its
/// result (the server's JSON text, kept in the line, when the line is strict JSON) or its
/// error; `None` for a line that is no response. For benches and hosts that read lines
/// themselves.
pub fn response_of(mut line: Vec<u8>) -> Option<Result<Reply, RpcError>> {
    match parse_line_taking("", &mut line)? {
        Incoming::Response { outcome, .. } => Some(outcome),
        _ => None,
    }
}

/// [`parse_line`] for a line the caller owns: a strict response keeps its result in the line,
/// which is taken (`line` is left empty), not copied.
fn parse_line_taking(server: &str, line: &mut Vec<u8>) -> Option<Incoming> {
    let trimmed = line.trim_ascii();
    let start = trimmed.as_ptr() as usize - line.as_ptr() as usize;
    let end = start + trimmed.len();
    match read_line(server, &line[start..end]) {
        LineRead::Message(incoming) => incoming,
        LineRead::Result { id, at } => {
            let text = ResultText::new(std::mem::take(line), start + at.start, start + at.end)?;
            Some(Incoming::Response {
                id,
                outcome: Ok(Reply::Json(text)),
            })
        }
    }
}

/// One line as the host handles it; `None` for what is logged and skipped: blank lines, lines
/// that are not JSON objects, notifications, and responses without an id. A strict response's
/// result is copied out of the line.
fn parse_line(server: &str, line: &[u8]) -> Option<Incoming> {
    match read_line(server, line) {
        LineRead::Message(incoming) => incoming,
        LineRead::Result { id, at } => {
            let result = line.get(at)?.to_vec();
            let length = result.len();
            Some(Incoming::Response {
                id,
                outcome: Ok(Reply::Json(ResultText::new(result, 0, length)?)),
            })
        }
    }
}

/// What [`read_line`] found in a line.
enum LineRead {
    /// A response in strict JSON: its id, and where its result is in the line.
    Result { id: Value, at: Range<usize> },
    /// Anything else, as the host handles it (see [`parse_line`]).
    Message(Option<Incoming>),
}

/// A response's fields, read strictly: its result is kept as JSON text. A line with a `method`
/// or an `error` field (even `null`), a repeated field, or no `result` but `null` takes the
/// lenient path instead.
#[derive(Deserialize)]
struct Response<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(borrow, default)]
    result: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    method: Seen,
    #[serde(default)]
    error: Seen,
}

/// Whether a field is there, whatever its value (`null` included).
#[derive(Default)]
struct Seen(bool);

impl<'de> Deserialize<'de> for Seen {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Seen, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer).map(|_| Seen(true))
    }
}

/// Reads one line: a strict response's id and where its result is, or the message the line is
/// (see [`parse_line`]). The strict read comes first: a line it takes holds an `"id"` and no
/// `method`, which none of the lenient read's notifications does.
fn read_line(server: &str, line: &[u8]) -> LineRead {
    match read_strict(line) {
        Some((id, at)) => LineRead::Result { id, at },
        None => LineRead::Message(read_lenient(server, line)),
    }
}

/// A response in strict JSON with a non-null id and a result, and no `method` or `error`: its
/// id and where its result is in `line` (see [`Reply`]).
fn read_strict(line: &[u8]) -> Option<(Value, Range<usize>)> {
    // A line with no `"id"` anywhere is no response the host waits for (see `read_lenient`).
    ID_KEY.find(line)?;
    let Ok(Response {
        id: Some(id),
        result: Some(result),
        method: Seen(false),
        error: Seen(false),
    }) = serde_json::from_slice::<Response<'_>>(line)
    else {
        return None;
    };
    let start = (result.get().as_ptr() as usize).checked_sub(line.as_ptr() as usize)?;
    (!id.is_null()).then(|| (id, start..start + result.get().len()))
}

/// A line that is not a strict response, as the host handles it (see [`parse_line`]).
fn read_lenient(server: &str, line: &[u8]) -> Option<Incoming> {
    if line.is_empty() {
        return None;
    }
    // A line with no `"id"` anywhere is a notification or a response without an id: neither is
    // waited for, so it is skipped without being parsed (a flood of them costs a scan each).
    if ID_KEY.find(line).is_none() && PROGRESS_KEY.find(line).is_none() {
        if TOOLS_CHANGED_KEY.find(line).is_some()
            && let Ok(Envelope {
                method: Some(method),
                id: None,
            }) = serde_json::from_slice::<Envelope<'_>>(line)
            && method == TOOLS_LIST_CHANGED
        {
            return Some(Incoming::ToolsChanged);
        }
        tracing::trace!(
            server,
            bytes = line.len(),
            "a message without an id; skipped"
        );
        return None;
    }
    // Notifications other than progress are only logged: read their method without building
    // the rest.
    if let Ok(Envelope {
        method: Some(method),
        id: None,
    }) = serde_json::from_slice::<Envelope<'_>>(line)
        && method != "notifications/progress"
    {
        if method == TOOLS_LIST_CHANGED {
            return Some(Incoming::ToolsChanged);
        }
        tracing::debug!(server, %method, "notification");
        return None;
    }
    let value = match mcpl_classify::parse_json_repaired(line) {
        Ok((value, repaired)) => {
            if repaired > 0 {
                tracing::debug!(
                    server,
                    repaired,
                    "a message strict JSON refuses was repaired"
                );
            }
            value
        }
        Err(_) => {
            tracing::warn!(
                server,
                bytes = line.len(),
                "a line that is not JSON; skipped"
            );
            return None;
        }
    };
    let Value::Object(mut object) = value else {
        tracing::warn!(server, "a JSON line that is not an object; skipped");
        return None;
    };
    let method = object
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let id = object.remove("id").filter(|id| !id.is_null());
    match (method, id) {
        (Some(method), Some(id)) => Some(Incoming::Request {
            id,
            method,
            params: object.remove("params").unwrap_or(Value::Null),
        }),
        (Some(method), None) if method == "notifications/progress" => {
            let progress = tasks::progress_of(object.get("params").unwrap_or(&Value::Null));
            if progress.is_none() {
                tracing::debug!(
                    server,
                    "a progress notification without token or progress; skipped"
                );
            }
            progress.map(Incoming::Progress)
        }
        (Some(method), None) => {
            tracing::debug!(server, %method, "notification");
            None
        }
        (None, Some(id)) => {
            let outcome = match (object.remove("result"), object.get("error")) {
                (_, Some(error)) => Err(RpcError::from_json(error)),
                (Some(result), None) => Ok(Reply::Value(result)),
                (None, None) => Err(RpcError {
                    code: -32603,
                    message: "response with neither result nor error".to_owned(),
                    data: None,
                }),
            };
            Some(Incoming::Response { id, outcome })
        }
        (None, None) => {
            tracing::warn!(server, "a message with neither method nor id; skipped");
            None
        }
    }
}

/// What the first bytes of a line over the limit say of it: its top-level `id` when it comes
/// early (a number or a short string), and whether it has a top-level `method` (a request or a
/// notification, which no call waits for).
fn head_identity(head: &[u8]) -> (Option<Value>, bool) {
    let mut id = None;
    let mut is_request = false;
    let mut depth = 0usize;
    let mut i = 0;
    while i < head.len() {
        match head[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let end = mcpl_classify::json_string_end(head, i);
                let text = &head[i..end];
                let after = head[end..].trim_ascii_start();
                if depth == 1 && after.first() == Some(&b':') {
                    let value = after[1..].trim_ascii_start();
                    match text {
                        b"\"method\"" => is_request = true,
                        b"\"id\"" => {
                            let token_end = match value.first() {
                                Some(b'"') => mcpl_classify::json_string_end(value, 0),
                                _ => value
                                    .iter()
                                    .position(|b| matches!(b, b',' | b'}' | b' '))
                                    .unwrap_or(value.len()),
                            };
                            id = serde_json::from_slice(&value[..token_end]).ok();
                        }
                        _ => {}
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    (id, is_request)
}

fn spawn_stderr_logger(
    name: &str,
    stderr: impl Read + Send + 'static,
    log: Arc<StderrLog>,
) -> std::io::Result<()> {
    let server = name.to_owned();
    std::thread::Builder::new()
        .name(format!("mcpl-{name}-stderr"))
        .spawn(move || read_stderr(&server, BufReader::new(stderr), &log))
        .map(drop)
}

/// Sends each stderr line to `tracing` and keeps the last ones in `log`, until the stream ends.
/// Lines need not be UTF-8, and a line longer than [`STDERR_LINE_BYTES`] keeps only its start.
fn read_stderr(server: &str, mut reader: impl BufRead, log: &StderrLog) {
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_capped_line(&mut reader, &mut line, STDERR_LINE_BYTES) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        tracing::info!(target: "mcpl::server", server = %server, "{text}");
        log.push(text);
    }
    log.end();
}

/// Reads one line, its ending included, keeping at most `cap` bytes of it in `line`. Returns
/// how many bytes were read: 0 at the end of the stream.
fn read_capped_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<usize> {
    let mut read = 0;
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if buffer.is_empty() {
            return Ok(read);
        }
        let (chunk, done) = match buffer.iter().position(|&b| b == b'\n') {
            Some(at) => (&buffer[..=at], true),
            None => (buffer, false),
        };
        let room = cap.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = chunk.len();
        reader.consume(used);
        read += used;
        if done {
            return Ok(read);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_credential_over_plain_http_to_a_remote_host_is_warned_of() {
        use crate::{BearerToken, Dial, cleartext_credential_warning};
        let dial = |url: &str, header: bool, token: bool| {
            let url = url::Url::parse(url).unwrap();
            Dial {
                authorizer: token.then(|| {
                    std::sync::Arc::new(BearerToken::new(&url, "t".to_owned()))
                        as std::sync::Arc<dyn crate::Authorizer>
                }),
                headers: if header {
                    vec![("Authorization".to_owned(), "Bearer t".to_owned())]
                } else {
                    Vec::new()
                },
                url,
            }
        };
        assert_eq!(
            cleartext_credential_warning("remote", &dial("http://mcp.example/mcp", false, true))
                .as_deref(),
            Some(
                "server remote: a token or Authorization header goes to mcp.example over plain \
                 http; anyone on the path can read it"
            )
        );
        assert!(
            cleartext_credential_warning("r", &dial("ws://10.0.0.5:80/", true, false))
                .is_some_and(|w| w.ends_with("over plain ws; anyone on the path can read it"))
        );
        for (url, header, token) in [
            ("https://mcp.example/mcp", true, true),
            ("wss://mcp.example/mcp", true, false),
            ("http://127.0.0.1:8000/mcp", true, true),
            ("ws://[::1]:8000/mcp", false, true),
            ("http://localhost/mcp", true, false),
            ("http://mcp.example/mcp", false, false),
        ] {
            assert_eq!(
                cleartext_credential_warning("r", &dial(url, header, token)),
                None,
                "{url}"
            );
        }
    }

    use super::*;

    #[test]
    fn the_stderr_tail_keeps_the_last_lines_within_its_bounds() {
        let log = StderrLog::default();
        assert_eq!(
            log.tail(Duration::ZERO).to_string(),
            "",
            "nothing written shows nothing"
        );
        log.push("starting");
        log.push("Error: no such file");
        assert_eq!(
            log.tail(Duration::ZERO).to_string(),
            "; its last stderr lines: starting | Error: no such file"
        );
        for n in 0..1000 {
            log.push(&format!("line {n}"));
        }
        let tail = log.tail(Duration::ZERO);
        let expected: Vec<String> = (990..1000).map(|n| format!("line {n}")).collect();
        assert_eq!(tail.lines, expected);
        assert!(tail.cut);
        assert!(
            tail.to_string()
                .starts_with("; its last stderr lines: … line 990 | ")
        );
        // One long line fills the byte bound alone, its end kept.
        log.push(&format!("{}THE END", "é".repeat(3000)));
        let tail = log.tail(Duration::ZERO);
        assert_eq!(tail.lines.len(), 1);
        assert!(tail.lines[0].starts_with('…') && tail.lines[0].ends_with("éTHE END"));
        assert!(tail.lines[0].len() <= STDERR_TAIL_BYTES);
    }

    #[test]
    fn stderr_is_read_line_by_line_whatever_its_bytes() {
        let log = StderrLog::default();
        read_stderr(
            "s",
            &b"first\r\nnot utf-8: \xff\nlast without an ending"[..],
            &log,
        );
        let tail = log.tail(Duration::ZERO);
        assert_eq!(
            tail.lines,
            ["first", "not utf-8: \u{FFFD}", "last without an ending"]
        );
        assert!(!tail.cut);
        assert!(
            log.state.lock().unwrap().ended,
            "the end of the stream is recorded"
        );
        // A line far longer than is read into memory still ends where its newline is.
        let log = StderrLog::default();
        let mut input = vec![b'x'; STDERR_LINE_BYTES * 3];
        input.extend(b"\nafter");
        read_stderr("s", &input[..], &log);
        let tail = log.tail(Duration::ZERO);
        assert_eq!(
            tail.lines,
            ["after"],
            "the long line filled the bound alone"
        );
        assert!(tail.cut);
    }

    #[test]
    fn a_long_line_is_read_whole_but_kept_capped() {
        let mut reader = std::io::BufReader::with_capacity(4, &b"abcdefghij\nk"[..]);
        let mut line = Vec::new();
        assert_eq!(read_capped_line(&mut reader, &mut line, 3).unwrap(), 11);
        assert_eq!(line, b"abc");
        line.clear();
        assert_eq!(read_capped_line(&mut reader, &mut line, 3).unwrap(), 1);
        assert_eq!(line, b"k");
        line.clear();
        assert_eq!(read_capped_line(&mut reader, &mut line, 3).unwrap(), 0);
    }

    fn parse(line: &[u8]) -> Option<Incoming> {
        parse_line("s", line)
    }

    #[test]
    fn lines_are_told_apart() {
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#),
            Some(Incoming::Response { outcome: Ok(_), .. })
        ));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":"p1","method":"push/event","params":{}}"#),
            Some(Incoming::Request { .. })
        ));
        let Some(Incoming::Response { outcome, .. }) =
            parse(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}"#)
        else {
            panic!("not a response")
        };
        assert_eq!(outcome.unwrap_err().code, -32602);
    }

    #[test]
    fn a_changed_tool_list_is_told_whatever_its_params() {
        for line in [
            &br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#[..],
            br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"id":1}}}"#,
        ] {
            assert!(matches!(parse(line), Some(Incoming::ToolsChanged)));
        }
        // Another notification naming it in its params is not it.
        let other = br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"notifications/tools/list_changed"}}"#;
        assert!(parse(other).is_none());
    }

    #[test]
    fn what_no_call_waits_for_is_skipped() {
        for line in [
            &br#"{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}"#[..],
            br#"{"jsonrpc":"2.0","result":{}}"#,
            br#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            b"Starting server... {",
            b"[1,2]",
            b"",
        ] {
            assert!(parse(line).is_none(), "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn a_strict_response_keeps_its_result_as_the_servers_text() {
        let result = r#"{ "content" : [{"type":"text","text":"a\nb"}], "isError":false }"#;
        let line = format!(r#"{{"jsonrpc":"2.0","id":4,"result":{result}}}"#);
        let Some(Incoming::Response { outcome, .. }) = parse(line.as_bytes()) else {
            panic!("not a response")
        };
        assert_eq!(outcome.unwrap().json_bytes(), Some(result.as_bytes()));
        // A reader that owns the line keeps the result in it.
        let Some(Ok(reply)) = response_of(format!(" {line}\r").into_bytes()) else {
            panic!("not a response")
        };
        assert_eq!(reply.json_bytes(), Some(result.as_bytes()));
    }

    #[test]
    fn every_response_reads_as_the_whole_line_parsed_leniently() {
        // Strict lines keep their text; the others (a `null` error, a repeated field, a
        // repair) are read into a value. Either way the result is the line's `result` field
        // as the lenient reader reads the whole line, or its error wins.
        for line in [
            &br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"a":[1,2.5e3]}}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"result":{"a":1},"error":null}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"a":1},"result":{"b":2}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"a":"\u00e9\ud83d\ude00","n":1e400}}"#,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":\"\xFF\"}}",
            br#"{"jsonrpc":"2.0","id":1,"result":null}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":[1,{"x":"y"}]}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"a":"b\ud800"}}"#,
        ]
        .into_iter()
        .map(<[u8]>::to_vec)
        // Nesting is counted from the result, as the session's reader counts it: a result
        // of 127 levels reads whole (decision 0139); up to 126 both readers agree.
        .chain((120..127).map(|depth| {
            let result = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#).into_bytes()
        })) {
            let line = line.as_slice();
            let (whole, _) = mcpl_classify::parse_json_repaired(line).expect("JSON after repair");
            let Some(Incoming::Response { outcome, .. }) = parse(line) else {
                panic!("not a response: {}", String::from_utf8_lossy(line))
            };
            assert_eq!(
                response_of(line.to_vec()).map(|taken| taken.map(Reply::into_value)),
                Some(outcome.clone().map(Reply::into_value)),
                "{}",
                String::from_utf8_lossy(line)
            );
            match outcome {
                Ok(reply) => assert_eq!(reply.into_value(), whole["result"]),
                Err(error) => assert!(whole.get("error").is_some(), "{error:?}"),
            }
        }
    }

    /// A response line drawn from pieces that strict JSON takes and pieces only the lenient
    /// reader takes: repeated and escaped keys, `null` errors, methods, lone surrogates, bytes
    /// that are not UTF-8, numbers out of range, white space around the line.
    fn drawn_line(seed: u64) -> Vec<u8> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut pick = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let values: [&[u8]; 12] = [
            br#""text""#,
            br#""a\"b\\c\n""#,
            br#""\u00e9\ud83d\ude00""#,
            br#""lone \ud800""#,
            b"\"bad \xFF byte\"",
            b"1e400",
            b"-0.5",
            b"null",
            b"true",
            br#"[{"type":"text","text":"x"}]"#,
            br#"{"task":{"taskId":"t1","status":"working"}}"#,
            br#"{"resultType":"input_required","inputRequests":{}}"#,
        ];
        let keys: [&[u8]; 8] = [
            b"\"content\"",
            b"\"structuredContent\"",
            b"\"isError\"",
            b"\"c\\u006fntent\"",
            b"\"task\"",
            b"\"resultType\"",
            b"\"_meta\"",
            b"\"content\"",
        ];
        let mut result = b"{".to_vec();
        for n in 0..pick(4) {
            if n > 0 {
                result.push(b',');
            }
            result.extend_from_slice(keys[pick(keys.len())]);
            result.push(b':');
            result.extend_from_slice(values[pick(values.len())]);
        }
        result.push(b'}');
        if pick(6) == 0 {
            result = values[pick(values.len())].to_vec();
        }
        let mut line = Vec::new();
        line.extend_from_slice([&b""[..], b"  ", b"\t"][pick(3)]);
        line.extend_from_slice(br#"{"jsonrpc":"2.0","#);
        let fields: [&[u8]; 7] = [
            br#""id":3,"#,
            br#""id":"s-1","#,
            br#""id":null,"#,
            br#""error":null,"#,
            br#""error":{"code":-1,"message":"m"},"#,
            br#""method":"x","#,
            br#""\u0069d":4,"#,
        ];
        for _ in 0..pick(3) {
            line.extend_from_slice(fields[pick(fields.len())]);
        }
        line.extend_from_slice(br#""id":9,"result":"#);
        line.extend_from_slice(&result);
        if pick(5) == 0 {
            line.extend_from_slice(br#","result":{"again":1}"#);
        }
        line.push(b'}');
        line.extend_from_slice([&b""[..], b" ", b"\r"][pick(3)]);
        line
    }

    #[test]
    fn a_drawn_line_reads_alike_taken_or_borrowed_and_as_the_lenient_reader_reads_it() {
        let mut strict = 0;
        for seed in 0..5_000 {
            let line = drawn_line(seed);
            let shown = String::from_utf8_lossy(&line).into_owned();
            let borrowed = parse_line("s", line.trim_ascii());
            let taken = parse_line_taking("s", &mut line.clone());
            if let Some(Incoming::Response {
                outcome: Ok(Reply::Json(_)),
                ..
            }) = &taken
            {
                strict += 1;
            }
            let outcome = |incoming: Option<Incoming>| match incoming {
                Some(Incoming::Response { id, outcome }) => {
                    Some((id, outcome.map(Reply::into_value)))
                }
                _ => None,
            };
            let (borrowed, taken) = (outcome(borrowed), outcome(taken));
            assert_eq!(taken, borrowed, "seed {seed}: {shown}");
            // The oracle: the whole line read leniently into a `Value`, as before.
            let Ok((Value::Object(whole), _)) = mcpl_classify::parse_json_repaired(&line) else {
                continue;
            };
            let Some((id, outcome)) = borrowed else {
                continue;
            };
            assert_eq!(whole.get("id"), Some(&id), "seed {seed}: {shown}");
            match (outcome, whole.get("error")) {
                (Err(error), Some(wanted)) => {
                    assert_eq!(error, RpcError::from_json(wanted), "seed {seed}: {shown}");
                }
                (Ok(result), None) => {
                    assert_eq!(Some(&result), whole.get("result"), "seed {seed}: {shown}");
                }
                (outcome, error) => panic!("seed {seed}: {shown}: {outcome:?} beside {error:?}"),
            }
        }
        // Both readers were met often: the drawn lines are not all of one kind.
        assert!((1_000..4_000).contains(&strict), "{strict} of 5,000 strict");
    }

    #[test]
    fn lone_surrogates_do_not_lose_a_result() {
        let Some(Incoming::Response { outcome, .. }) = parse(
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\ud800b"}]}}"#,
        ) else {
            panic!("not a response")
        };
        assert_eq!(
            outcome.unwrap().into_value()["content"][0]["text"],
            "a\u{FFFD}b"
        );
    }

    #[test]
    fn invalid_utf8_does_not_lose_a_result() {
        let Some(Incoming::Response { outcome, .. }) =
            parse(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"text\":\"a\xFFb\"}}")
        else {
            panic!("not a response")
        };
        assert_eq!(outcome.unwrap().into_value()["text"], "a\u{FFFD}b");
    }

    /// Reads `input` through the line reader and returns what it sent.
    fn read_all(input: &[u8], limit: usize) -> Vec<Incoming> {
        let (sender, receiver) = sync_channel(1024);
        read_lines("s", BufReader::with_capacity(7, input), limit, &sender);
        drop(sender);
        receiver.into_iter().collect()
    }

    #[test]
    fn a_line_over_the_limit_is_reported_once_and_the_next_line_read() {
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"text":"{}"}}}}"#,
            "x".repeat(100)
        );
        let input = format!("{long}\n{{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{{}}}}\n");
        let read = read_all(input.as_bytes(), 64);
        assert!(
            matches!(&read[0], Incoming::TooLong { id: Some(id), is_request: false } if id == &json!(7))
        );
        assert!(matches!(&read[1], Incoming::Response { id, .. } if id == &json!(8)));
        assert!(matches!(read[2], Incoming::Closed));
        assert_eq!(read.len(), 3);
        // Exactly at the limit is within it.
        let exact = r#"{"jsonrpc":"2.0","id":9,"result":{}}"#;
        let read = read_all(format!("{exact}\n").as_bytes(), exact.len());
        assert!(matches!(&read[0], Incoming::Response { .. }));
    }

    #[test]
    fn a_line_without_end_is_reported_and_dropped() {
        let mut input = br#"{"jsonrpc":"2.0","method":"push/event","id":"p","params":{"#.to_vec();
        input.extend(std::iter::repeat_n(b'x', 10_000));
        let read = read_all(&input, 100);
        assert!(matches!(
            read[0],
            Incoming::TooLong {
                id: Some(_),
                is_request: true
            }
        ));
        assert!(matches!(read[1], Incoming::Closed));
    }

    #[test]
    fn the_head_of_a_long_line_tells_whose_it_is() {
        assert_eq!(
            head_identity(br#"{"jsonrpc":"2.0","result":{"id":3,"method":"x"},"id":"a\"b","#),
            (Some(json!("a\"b")), false)
        );
        assert_eq!(
            head_identity(br#"{"id": 12 , "result": {"#),
            (Some(json!(12)), false)
        );
        assert_eq!(
            head_identity(br#"{"result": {"content": [{"#),
            (None, false)
        );
    }

    #[test]
    fn errors_never_quote_the_server() {
        let error = CallError::Rpc {
            server: "s".to_owned(),
            method: "tools/call".to_owned(),
            error: Box::new(RpcError {
                code: -32602,
                message: "bad https://x.example/?token=secret".to_owned(),
                data: None,
            }),
        };
        assert_eq!(
            error.to_string(),
            "server s answered tools/call with JSON-RPC error -32602 (invalid params)"
        );
        assert_eq!(shown_version(Some(&json!("1999-01-01"))), "1999-01-01");
        assert_eq!(
            shown_version(Some(&json!("https://x/?t=secret"))),
            "(not a revision date)"
        );
        assert_eq!(shown_version(None), "(none)");
        let version = CallError::Version {
            server: "s".to_owned(),
            answered: "1999-01-01".to_owned(),
        };
        assert_eq!(
            version.to_string(),
            "server s answered initialize with protocol version 1999-01-01; mcpl speaks 2025-11-25 (and accepts 2025-06-18, 2025-03-26, 2024-11-05)"
        );
    }
}
