//! MCP's stdio transport: newline-delimited JSON-RPC 2.0 with a child process.
//!
//! A [`Connection`] owns one server process. A reader thread turns each stdout line into an
//! `Incoming` (a response, a request the server makes of the host, a notification, a line that
//! is not JSON, or the end of the stream); a second thread sends stderr to `tracing` and keeps
//! its last lines ([`StderrTail`]), so a server that exits before answering `initialize` says
//! why in the error itself rather than only in the logs. A call
//! ([`Connection::request`]) writes its request and then reads incoming messages until its own
//! response arrives, answering the server's requests through the caller's [`ServerRequests`] on
//! the way, so push events and channel messages sent mid-call are handled, not mistaken for the
//! answer. A call fails alone, with a clear [`CallError`], when the server exits, passes the
//! timeout, or writes a line that is not JSON; the connection and the host's other servers go
//! on.
//!
//! A [`Launch`] says how to start a server (program, arguments, environment, timeout); a server's
//! JSON-RPC error answer is an [`RpcError`], and [`RefuseAll`] is the [`ServerRequests`] of a
//! host that answers no server request.
//!
//! Results are kept as raw JSON (`serde_json::Value`) so classification can take them block by
//! block: one odd block never loses the others (decision 0009).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The protocol version the host asks for.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// How much of a line that is not JSON an error quotes.
const QUOTED_LINE_CHARS: usize = 120;
/// How many of a server's last stderr lines a start error quotes.
pub const STDERR_TAIL_LINES: usize = 10;
/// How many bytes of a server's last stderr lines a start error quotes, at most.
pub const STDERR_TAIL_BYTES: usize = 2048;
/// How long a start error waits for a server's stderr to end after its output closed.
const STDERR_CLOSE_WAIT: Duration = Duration::from_millis(500);
/// How much of one stderr line is read into memory; the rest of a longer line is skipped.
const STDERR_LINE_BYTES: usize = 64 * 1024;

/// How to start one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The server's name in the host's configuration.
    pub name: String,
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables set for it, on top of the host's.
    pub env: BTreeMap<String, String>,
    /// Its working directory; the host's when absent.
    pub cwd: Option<PathBuf>,
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
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (JSON-RPC error {})", self.message, self.code)
    }
}

/// Why one call failed. The connection may still serve later calls, except after
/// [`CallError::Exited`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
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
    /// No answer within the timeout.
    #[error("server {server} did not answer {method} within {} ms", .after.as_millis())]
    Timeout {
        /// The server.
        server: String,
        /// The method called.
        method: String,
        /// The timeout.
        after: Duration,
    },
    /// The server wrote a line that is not JSON while the call waited.
    #[error("server {server} wrote a line that is not JSON while answering {method}: {line}")]
    NotJson {
        /// The server.
        server: String,
        /// The method called.
        method: String,
        /// The start of the line.
        line: String,
    },
    /// The server answered with a JSON-RPC error.
    #[error("server {server} answered {method} with an error: {error}")]
    Rpc {
        /// The server.
        server: String,
        /// The method called.
        method: String,
        /// The error.
        error: Box<RpcError>,
    },
}

/// The last lines a server wrote on stderr: at most [`STDERR_TAIL_LINES`] lines and
/// [`STDERR_TAIL_BYTES`] bytes, the newest kept. It displays as nothing when empty, and otherwise
/// as `; its last stderr lines: <line> | <line>` (`…` first when older lines were dropped).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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

/// One message from the server, as the reader thread saw it.
#[derive(Debug)]
enum Incoming {
    Response {
        id: Value,
        outcome: Result<Value, RpcError>,
    },
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
    },
    NotJson(String),
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

/// A running server and the host's end of its stdio.
#[derive(Debug)]
pub struct Connection {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    incoming: Receiver<Incoming>,
    next_id: u64,
    exited: Option<String>,
    stderr: Arc<StderrLog>,
    /// The server's `initialize` result.
    pub initialized: Value,
}

impl Connection {
    /// Starts the server and completes `initialize` within `timeout`.
    pub fn start(
        launch: &Launch,
        timeout: Duration,
        host: &mut dyn ServerRequests,
    ) -> Result<Connection, CallError> {
        let mut command = Command::new(&launch.command);
        command
            .args(&launch.args)
            .envs(&launch.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(cwd) = &launch.cwd {
            command.current_dir(cwd);
        }
        let spawn_error = |detail: String| CallError::Spawn {
            server: launch.name.clone(),
            detail,
        };
        let mut child = command
            .spawn()
            .map_err(|e| spawn_error(format!("{}: {e}", launch.command)))?;
        let (stdout, stderr) = match (child.stdout.take(), child.stderr.take()) {
            (Some(stdout), Some(stderr)) => (stdout, stderr),
            _ => return Err(spawn_error("no pipes to the process".to_owned())),
        };
        let (sender, incoming) = channel();
        spawn_reader(&launch.name, stdout, sender)
            .map_err(|e| spawn_error(format!("reader thread: {e}")))?;
        let stderr_log = Arc::new(StderrLog::default());
        spawn_stderr_logger(&launch.name, stderr, Arc::clone(&stderr_log))
            .map_err(|e| spawn_error(format!("stderr thread: {e}")))?;
        let mut connection = Connection {
            name: launch.name.clone(),
            stdin: child.stdin.take(),
            child,
            incoming,
            next_id: 0,
            exited: None,
            stderr: stderr_log,
            initialized: Value::Null,
        };
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {
                "experimental": {"mcpl": {
                    "pushEvents": {},
                    "channels": {},
                    "contextHooks": {"beforeInference": {
                        "inject": ["system", "beforeUser", "afterUser"],
                    }},
                }},
            },
            "clientInfo": {"name": "mcpl", "version": env!("CARGO_PKG_VERSION")},
        });
        connection.initialized = connection
            .request("initialize", params, timeout, host)
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
        connection.notify("notifications/initialized", json!({}));
        Ok(connection)
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The capabilities the server declared.
    pub fn capabilities(&self) -> &Value {
        self.initialized.get("capabilities").unwrap_or(&Value::Null)
    }

    /// Whether the server offers `resources/read`.
    pub fn offers_resources(&self) -> bool {
        self.capabilities().get("resources").is_some()
    }

    /// Whether the server offers MCPL's `context/beforeInference` hook.
    pub fn offers_context_hook(&self) -> bool {
        self.capabilities()
            .pointer("/experimental/mcpl/contextHooks/beforeInference")
            .is_some_and(|hook| !hook.is_null() && hook != &Value::Bool(false))
    }

    /// Whether the server process has gone.
    pub fn has_exited(&self) -> bool {
        self.exited.is_some()
    }

    /// Sends a notification; a server that has gone is not an error here.
    pub fn notify(&mut self, method: &str, params: Value) {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let _ = self.write(&message);
    }

    /// Calls `method` and waits up to `timeout` for its response, answering the server's own
    /// requests through `host` while it waits.
    pub fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
        host: &mut dyn ServerRequests,
    ) -> Result<Value, CallError> {
        if let Some(detail) = &self.exited {
            return Err(self.exited_error(method, detail.clone()));
        }
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Err(error) = self.write(&message) {
            let detail = self.exit_detail(format!("writing the request failed: {error}"));
            return Err(self.exited_error(method, detail));
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let incoming = match self.incoming.recv_timeout(left) {
                Ok(incoming) => incoming,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(CallError::Timeout {
                        server: self.name.clone(),
                        method: method.to_owned(),
                        after: timeout,
                    });
                }
                Err(RecvTimeoutError::Disconnected) => Incoming::Closed,
            };
            match incoming {
                Incoming::Response { id: got, outcome } if got == json!(id) => {
                    return outcome.map_err(|error| CallError::Rpc {
                        server: self.name.clone(),
                        method: method.to_owned(),
                        error: Box::new(error),
                    });
                }
                Incoming::NotJson(line) => {
                    return Err(CallError::NotJson {
                        server: self.name.clone(),
                        method: method.to_owned(),
                        line,
                    });
                }
                Incoming::Closed => {
                    let detail = self.exit_detail("it closed its output".to_owned());
                    return Err(self.exited_error(method, detail));
                }
                other => self.handle(other, host),
            }
        }
    }

    /// Handles everything the server has sent so far without waiting: answers its requests
    /// through `host`. Returns how many requests it answered.
    pub fn pump(&mut self, host: &mut dyn ServerRequests) -> usize {
        let mut answered = 0;
        if self.exited.is_some() {
            return answered;
        }
        loop {
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
        }
    }

    fn handle(&mut self, incoming: Incoming, host: &mut dyn ServerRequests) {
        match incoming {
            Incoming::Request { id, method, params } => {
                let answer = host.answer(&self.name, &method, &params);
                let message = match answer {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()}),
                };
                let _ = self.write(&message);
            }
            Incoming::Notification { method } => {
                tracing::debug!(server = %self.name, %method, "notification");
            }
            Incoming::Response { id, .. } => {
                tracing::debug!(server = %self.name, %id, "response to a call that gave up waiting");
            }
            Incoming::NotJson(line) => {
                tracing::warn!(server = %self.name, %line, "a line that is not JSON, between calls");
            }
            Incoming::Closed => {
                self.exit_detail("it closed its output".to_owned());
            }
        }
    }

    fn write(&mut self, message: &Value) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::other("stdin closed"))?;
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        stdin.write_all(&line)?;
        stdin.flush()
    }

    /// Records that the server has gone and says how: its exit status when it has one.
    fn exit_detail(&mut self, fallback: String) -> String {
        if let Some(detail) = &self.exited {
            return detail.clone();
        }
        // The process may take a moment to be reaped after closing its output.
        let deadline = Instant::now() + Duration::from_millis(500);
        let detail = loop {
            match self.child.try_wait() {
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
    /// Closes the server's stdin, gives it a moment to exit, then kills it.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_reader(
    name: &str,
    stdout: impl Read + Send + 'static,
    sender: Sender<Incoming>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(format!("mcpl-{name}-stdout"))
        .spawn(move || read_lines(BufReader::new(stdout), &sender))
        .map(drop)
}

/// Reads lines until the stream ends, sending each as an [`Incoming`]. Lines may be long (a
/// filesystem server sends an 11 MB line for a 4 MB image, twice over); they are read whole.
fn read_lines(mut reader: impl BufRead, sender: &Sender<Incoming>) {
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() {
            continue;
        }
        if sender.send(parse_line(trimmed)).is_err() {
            return;
        }
    }
    let _ = sender.send(Incoming::Closed);
}

fn parse_line(line: &[u8]) -> Incoming {
    let value = match mcpl_classify::parse_json_lenient(line) {
        Ok((value, replaced)) => {
            if replaced > 0 {
                tracing::debug!(replaced, "lone surrogate escapes became U+FFFD");
            }
            value
        }
        Err(_) => return Incoming::NotJson(quote_line(line)),
    };
    let Value::Object(mut object) = value else {
        return Incoming::NotJson(quote_line(line));
    };
    let method = object
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let id = object.remove("id");
    match (method, id) {
        (Some(method), Some(id)) => Incoming::Request {
            id,
            method,
            params: object.remove("params").unwrap_or(Value::Null),
        },
        (Some(method), None) => Incoming::Notification { method },
        (None, Some(id)) => {
            let outcome = match (object.remove("result"), object.get("error")) {
                (_, Some(error)) => Err(RpcError::from_json(error)),
                (Some(result), None) => Ok(result),
                (None, None) => Err(RpcError {
                    code: -32603,
                    message: "response with neither result nor error".to_owned(),
                    data: None,
                }),
            };
            Incoming::Response { id, outcome }
        }
        (None, None) => Incoming::NotJson(quote_line(line)),
    }
}

fn quote_line(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let mut quoted: String = text.chars().take(QUOTED_LINE_CHARS).collect();
    if text.chars().count() > QUOTED_LINE_CHARS {
        quoted.push('…');
    }
    quoted
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
    use super::*;

    #[test]
    fn lines_are_told_apart() {
        assert!(matches!(
            parse_line(br#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#),
            Incoming::Response { outcome: Ok(_), .. }
        ));
        assert!(matches!(
            parse_line(br#"{"jsonrpc":"2.0","id":"p1","method":"push/event","params":{}}"#),
            Incoming::Request { .. }
        ));
        assert!(matches!(
            parse_line(br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#),
            Incoming::Notification { .. }
        ));
        let Incoming::Response { outcome, .. } =
            parse_line(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}"#)
        else {
            panic!("not a response")
        };
        assert_eq!(outcome.unwrap_err().code, -32602);
        let Incoming::NotJson(line) = parse_line(b"Starting server... {") else {
            panic!("garbage parsed")
        };
        assert_eq!(line, "Starting server... {");
        assert!(matches!(parse_line(b"[1,2]"), Incoming::NotJson(_)));
    }

    #[test]
    fn lone_surrogates_do_not_lose_a_result() {
        let Incoming::Response { outcome, .. } = parse_line(
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\ud800b"}]}}"#,
        ) else {
            panic!("not a response")
        };
        assert_eq!(outcome.unwrap()["content"][0]["text"], "a\u{FFFD}b");
    }

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

    #[test]
    fn long_lines_are_quoted_short() {
        let line = vec![b'x'; 500];
        let Incoming::NotJson(quoted) = parse_line(&line) else {
            panic!("garbage parsed")
        };
        assert_eq!(quoted.chars().count(), QUOTED_LINE_CHARS + 1);
    }
}
