//! A demo MCP server with MCPL's extensions, over MCP's stdio transport: newline-delimited
//! JSON-RPC 2.0 in, the same out, logs on standard error.
//!
//! [`serve`] is the whole server. Each of its tools emits one kind of content, built from real
//! encoder files (PNG, JPEG, GIF, WebP, SVG, WAV, PDF, ZIP): text, inline images and audio,
//! mislabelled and oversized images, embedded resources of every shape, a resource link, MCPL
//! references (`ref` and `never`), a result far over budget, structured content, an error
//! result. `push-events` sends the host `push/event` and `channels/incoming` requests of its
//! own, `host-answers` reports what the host answered them, `context/beforeInference` answers
//! with an injection at each position, and `crash`, `hang`, `garbage` and `slow` misbehave so
//! a host's failure handling can be tested. `change-tools` adds `added-tool` to the list and
//! says so with `notifications/tools/list_changed`; `text` and `look` are annotated
//! `readOnlyHint`. `tools/list` describes every tool.
//!
//! [`Remote`] serves it dialed rather than spawned: over Streamable HTTP and over MCPL's
//! WebSocket on one loopback origin, which also serves the demo's reference files.
//!
//! [`serve_hostile`] is another server, for tests only: it misbehaves in one of the ways a
//! [`Misbehaviour`] names. [`HostileRemote`] is its dialed kin: a loopback server that
//! misbehaves over Streamable HTTP or a WebSocket in one of the ways a [`RemoteMisbehaviour`]
//! names.
//!
//! ```
//! use std::io::Cursor;
//!
//! let input = concat!(
//!     r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#,
//!     "\n",
//!     r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"text","arguments":{}}}"#,
//!     "\n",
//! );
//! let mut output = Vec::new();
//! let ending = mcpl_demo_server::serve(Cursor::new(input), &mut output, Default::default())?;
//! assert_eq!(ending.status(), 0);
//! let lines: Vec<serde_json::Value> = output
//!     .split(|&b| b == b'\n')
//!     .filter(|line| !line.is_empty())
//!     .map(|line| serde_json::from_slice(line).unwrap())
//!     .collect();
//! assert_eq!(lines[0]["result"]["serverInfo"]["name"], "mcpl-demo");
//! assert_eq!(lines[1]["result"]["content"][0]["type"], "text");
//! # Ok::<(), std::io::Error>(())
//! ```

mod declared;
mod hostile;
mod hostile_remote;
mod long;
mod media;
mod push;
mod remote;
mod resources;
mod skills;
mod tools;
mod toolset;
mod wire;

use std::io::{self, BufRead, BufWriter, ErrorKind, Write};

use serde_json::{Map, Value, json};

pub use crate::hostile::{
    ACT_ANSWER, FOREIGN_PROTOCOL_VERSION, HOSTILE_URI, Misbehaviour, NESTING, PINGS, gathered,
    serve_hostile,
};
pub use crate::hostile_remote::{
    FOLLOWED, HostileRemote, MAX_CONNECTIONS, RemoteMisbehaviour, SLOW_ANSWER, STOLEN_PATH,
};
use crate::push::Outgoing;
pub use crate::remote::{BRIEF_PATH, MCP_PATH, Remote};
use crate::tools::{Effect, Tool};
pub use crate::toolset::{ADDED_TOOL, CHANGE_TOOLS, LOOK, LOOK_ANSWER};

/// The protocol version answered to a client that names none.
const DEFAULT_PROTOCOL_VERSION: &str = "2025-06-18";
/// What the `garbage` tool writes instead of its answer.
const GARBAGE_LINE: &str = "this is not json {";
/// The exit status `crash` asks for.
const CRASH_STATUS: u8 = 3;

/// JSON-RPC's error codes, and MCP's for a resource it does not have.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const RESOURCE_NOT_FOUND: i64 = -32002;

/// How the server is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The name in `serverInfo` and at the start of every log line.
    pub name: String,
    /// The origin serving the demo's reference files (`http://127.0.0.1:PORT`, see
    /// [`Remote`]); without one the brief links to `files.demo.example`, which no one serves.
    pub files_origin: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            name: "mcpl-demo".to_owned(),
            files_origin: None,
        }
    }
}

/// Why [`serve`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The input closed: the host is done.
    InputClosed,
    /// The output closed: the host went away.
    OutputClosed,
    /// The `crash` tool was called; the process should exit with [`Ending::status`] (3) at once.
    Crashed,
}

impl Ending {
    /// The exit status the process should end with: 0, or 3 after `crash`.
    pub fn status(self) -> u8 {
        match self {
            Ending::InputClosed | Ending::OutputClosed => 0,
            Ending::Crashed => CRASH_STATUS,
        }
    }
}

/// Serves one MCP session: reads JSON-RPC lines from `input` until it closes and writes each
/// answer, and each request of the server's own, as one line on `output`, flushed at once.
///
/// It is single-threaded: `slow` holds up the lines after it, and `hang` answers nothing but
/// goes on reading. It fails only when reading `input` fails, or writing `output` fails other
/// than by the reader going away.
pub fn serve(input: impl BufRead, output: impl Write, options: Options) -> io::Result<Ending> {
    let mut server = Server {
        output: BufWriter::with_capacity(64 * 1024, output),
        options,
        host_answers: Vec::new(),
        pushes: 0,
        channel_batches: 0,
        long: long::Long::default(),
        tool_list: toolset::ToolList::default(),
    };
    match server.run(input) {
        Err(error) if error.kind() == ErrorKind::BrokenPipe => Ok(Ending::OutputClosed),
        other => other,
    }
}

/// One session's state.
struct Server<W: Write> {
    output: BufWriter<W>,
    options: Options,
    /// Every response the host sent to the server's own requests, in arrival order.
    host_answers: Vec<Value>,
    /// `push/event` requests sent so far; their ids are `push-<n>`.
    pushes: u64,
    /// `channels/incoming` requests sent so far; their ids are `channel-<n>`.
    channel_batches: u64,
    /// The long tools' tasks.
    long: long::Long,
    /// What `change-tools` did to the tool list.
    tool_list: toolset::ToolList,
}

impl<W: Write> Server<W> {
    fn run(&mut self, mut input: impl BufRead) -> io::Result<Ending> {
        self.log("ready");
        let mut line = Vec::new();
        loop {
            line.clear();
            if input.read_until(b'\n', &mut line)? == 0 {
                self.log("input closed");
                return Ok(Ending::InputClosed);
            }
            if line.trim_ascii().is_empty() {
                continue;
            }
            match serde_json::from_slice::<Value>(&line) {
                Ok(message) => {
                    if let Some(ending) = self.handle(message)? {
                        return Ok(ending);
                    }
                }
                Err(error) => {
                    self.log(&format!("a line that is not JSON: {error}"));
                    self.error(
                        Value::Null,
                        PARSE_ERROR,
                        "parse error: the line is not JSON",
                        None,
                    )?;
                }
            }
        }
    }

    /// Handles one message; `Some` when the session must end.
    fn handle(&mut self, message: Value) -> io::Result<Option<Ending>> {
        let Value::Object(message) = message else {
            self.error(
                Value::Null,
                INVALID_REQUEST,
                "invalid request: not a JSON object",
                None,
            )?;
            return Ok(None);
        };
        let id = message.get("id").cloned();
        match (message.get("method"), id) {
            (Some(Value::String(method)), Some(id)) => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                return self.request(id, method, &params);
            }
            // A notification (`notifications/initialized`, `notifications/cancelled`, ...).
            (Some(Value::String(method)), None) => self.log(&format!("notification {method}")),
            (None, Some(id)) if message.contains_key("result") || message.contains_key("error") => {
                self.log(&format!("the host answered {id}"));
                let mut answer = Map::new();
                answer.insert("id".into(), id);
                for field in ["result", "error"] {
                    if let Some(value) = message.get(field) {
                        answer.insert(field.into(), value.clone());
                    }
                }
                self.host_answers.push(Value::Object(answer));
            }
            (_, id) => {
                let id = id.unwrap_or(Value::Null);
                self.error(
                    id,
                    INVALID_REQUEST,
                    "invalid request: no method, result or error",
                    None,
                )?;
            }
        }
        Ok(None)
    }

    fn request(&mut self, id: Value, method: &str, params: &Value) -> io::Result<Option<Ending>> {
        let result = match method {
            "initialize" => {
                self.long.note_client(params);
                self.initialize(params)
            }
            "ping" => json!({}),
            "tools/list" => {
                let mut tools = Tool::ALL.map(Tool::listing).to_vec();
                tools.extend(declared::listing());
                tools.extend(long::listing());
                tools.extend(self.tool_list.listing());
                json!({"tools": tools})
            }
            "tasks/get" | "tasks/cancel" | "tasks/update" | "tasks/result" => {
                self.task_request(id, method, params)?;
                return Ok(None);
            }
            "tools/call" => return self.call_tool(id, params),
            "resources/list" => {
                let listing: Vec<Value> = resources::all().iter().map(|r| r.listing()).collect();
                json!({"resources": listing})
            }
            "resources/read" => {
                let Some(uri) = params.get("uri").and_then(Value::as_str) else {
                    self.error(
                        id,
                        INVALID_PARAMS,
                        "resources/read needs a string uri",
                        None,
                    )?;
                    return Ok(None);
                };
                match resources::find(uri) {
                    Some(resource) => json!({"contents": [resource.contents()]}),
                    None if let Some(file) = skills::read(uri) => json!({"contents": [file]}),
                    None => {
                        let message = format!("resource not found: {uri}");
                        self.error(id, RESOURCE_NOT_FOUND, &message, Some(json!({"uri": uri})))?;
                        return Ok(None);
                    }
                }
            }
            "skills/list" => skills::list(),
            "context/beforeInference" => before_inference(self.options.files_origin.as_deref()),
            _ => {
                self.log(&format!("unknown method {method}"));
                let message = format!("method not found: {method}");
                self.error(
                    id,
                    METHOD_NOT_FOUND,
                    &message,
                    Some(json!({"method": method})),
                )?;
                return Ok(None);
            }
        };
        self.answer(id, result)?;
        Ok(None)
    }

    fn initialize(&self, params: &Value) -> Value {
        let version = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_PROTOCOL_VERSION);
        json!({
            "protocolVersion": version,
            "serverInfo": {"name": self.options.name, "version": env!("CARGO_PKG_VERSION")},
            "instructions": declared::INSTRUCTIONS,
            "capabilities": {
                "tools": {},
                "resources": {},
                "extensions": {"io.modelcontextprotocol/skills": {}, "io.modelcontextprotocol/tasks": {}},
                "experimental": {"mcpl": {
                    "pushEvents": {},
                    "channels": {},
                    "contextHooks": {"beforeInference": {}},
                }},
            },
        })
    }

    fn call_tool(&mut self, id: Value, params: &Value) -> io::Result<Option<Ending>> {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Some(result) = declared::call(name) {
            self.log(&format!("tools/call {name}"));
            self.answer(id, result)?;
            return Ok(None);
        }
        if let Some(tool) = long::LongTool::named(name) {
            self.log(&format!("tools/call {name}"));
            self.long_call(id, tool, params)?;
            return Ok(None);
        }
        let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
        if let Some((lines, result)) = self.tool_list.call(name, &arguments) {
            for line in lines {
                self.output.write_all(line.as_bytes())?;
                self.output.write_all(b"\n")?;
            }
            return self.answer(id, result).map(|()| None);
        }
        let Some(tool) = Tool::named(name) else {
            let message = format!("unknown tool: {name}");
            self.error(id, INVALID_PARAMS, &message, Some(json!({"name": name})))?;
            return Ok(None);
        };
        self.log(&format!("tools/call {name}"));
        match tool.call(&arguments, self.options.files_origin.as_deref()) {
            Effect::Answer(result) => self.answer(id, result)?,
            Effect::Push => {
                let sent = self.push_burst()?;
                let text = sent_summary(&sent);
                self.answer(id, json!({"content": [tools::text(&text)]}))?;
            }
            Effect::HostAnswers => {
                let text = Value::Array(self.host_answers.clone()).to_string();
                self.answer(id, json!({"content": [tools::text(&text)]}))?;
            }
            Effect::Crash => {
                self.log("crashing on purpose, with status 3");
                return Ok(Some(Ending::Crashed));
            }
            Effect::Hang => self.log("hanging on purpose: this call gets no answer"),
            Effect::Garbage => {
                self.log("writing garbage on purpose");
                self.line(GARBAGE_LINE.as_bytes())?;
            }
            Effect::Slow(wait) => {
                std::thread::sleep(wait);
                self.answer(id, tools::slow_answer(wait))?;
            }
        }
        Ok(None)
    }

    /// Sends `push-events`' requests; returns `<method> <id>` for each, in order.
    fn push_burst(&mut self) -> io::Result<Vec<String>> {
        let mut sent = Vec::new();
        for request in push::burst(&push::now_rfc3339()) {
            let (method, id, params) = match request {
                Outgoing::PushEvent(params) => {
                    self.pushes += 1;
                    ("push/event", format!("push-{}", self.pushes), params)
                }
                Outgoing::ChannelIncoming(params) => {
                    self.channel_batches += 1;
                    (
                        "channels/incoming",
                        format!("channel-{}", self.channel_batches),
                        params,
                    )
                }
            };
            let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            self.write(&message)?;
            sent.push(format!("{method} {id}"));
        }
        Ok(sent)
    }

    fn answer(&mut self, id: Value, result: Value) -> io::Result<()> {
        self.write(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }

    fn error(
        &mut self,
        id: Value,
        code: i64,
        message: &str,
        data: Option<Value>,
    ) -> io::Result<()> {
        let mut error = json!({"code": code, "message": message});
        if let Some(data) = data {
            error["data"] = data;
        }
        self.write(&json!({"jsonrpc": "2.0", "id": id, "error": error}))
    }

    fn write(&mut self, message: &Value) -> io::Result<()> {
        serde_json::to_writer(&mut self.output, message)?;
        self.output.write_all(b"\n")?;
        self.output.flush()
    }

    fn line(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.output.write_all(bytes)?;
        self.output.write_all(b"\n")?;
        self.output.flush()
    }

    fn log(&self, message: &str) {
        eprintln!("{}: {message}", self.options.name);
    }
}

/// `push-events`' answer: `Sent 4 requests to the host: push/event push-1, ...`, with
/// `request` in the singular when one was sent.
fn sent_summary(sent: &[String]) -> String {
    let noun = if sent.len() == 1 {
        "request"
    } else {
        "requests"
    };
    format!(
        "Sent {} {noun} to the host: {}.",
        sent.len(),
        sent.join(", ")
    )
}

/// The answer to `context/beforeInference`: an injection at each position.
fn before_inference(files_origin: Option<&str>) -> Value {
    let brief = match files_origin {
        Some(origin) => format!("{origin}{BRIEF_PATH}?token=demo-secret"),
        None => "https://files.demo.example/brief.pdf?token=demo-secret".to_owned(),
    };
    json!({"contextInjections": [
        {
            "position": "system",
            "content": "The mcpl demo server is connected: each of its tools returns one kind of content.",
        },
        {
            "position": "beforeUser",
            "content": [tools::text("Context from the demo server: the user's project is called Lighthouse.")],
        },
        {
            "position": "afterUser",
            "content": [
                tools::text("The project brief is attached as a reference."),
                {
                    "type": "resource",
                    "uri": brief,
                    "name": "brief.pdf",
                    "mimeType": "application/pdf",
                    "sizeBytes": 20480,
                    "disposition": "ref",
                },
            ],
        },
    ]})
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    /// Runs `serve` on these lines and returns how it ended and each line it wrote.
    fn session(lines: &[Value]) -> (Ending, Vec<String>) {
        let input: String = lines.iter().map(|line| format!("{line}\n")).collect();
        let mut output = Vec::new();
        let ending = serve(Cursor::new(input), &mut output, Options::default()).unwrap();
        let text = String::from_utf8(output).unwrap();
        (ending, text.lines().map(str::to_owned).collect())
    }

    #[test]
    fn the_push_summary_counts_in_the_singular_and_the_plural() {
        let one = ["push/event push-1".to_owned()];
        assert_eq!(
            sent_summary(&one),
            "Sent 1 request to the host: push/event push-1."
        );
        let two = [one[0].clone(), "channels/incoming channel-1".to_owned()];
        assert_eq!(
            sent_summary(&two),
            "Sent 2 requests to the host: push/event push-1, channels/incoming channel-1."
        );
    }

    fn call(id: u64, name: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name}})
    }

    #[test]
    fn a_whole_session_in_process() {
        let (ending, lines) = session(&[
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            call(2, "push-events"),
            json!({"jsonrpc": "2.0", "id": "push-3", "error": {"code": -32602, "message": "empty"}}),
            call(3, "host-answers"),
            call(4, "garbage"),
            call(5, "crash"),
            call(6, "text"),
        ]);
        assert_eq!(ending, Ending::Crashed);
        assert_eq!(ending.status(), 3);
        let messages: Vec<Value> = lines
            .iter()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect();
        let ids: Vec<&Value> = messages.iter().map(|m| &m["id"]).collect();
        assert_eq!(
            ids,
            [
                &json!(1),
                &json!("push-1"),
                &json!("push-2"),
                &json!("push-3"),
                &json!("channel-1"),
                &json!(2),
                &json!(3)
            ]
        );
        assert_eq!(
            messages[0]["result"]["protocolVersion"],
            DEFAULT_PROTOCOL_VERSION
        );
        let answers: Value = serde_json::from_str(
            messages[6]["result"]["content"][0]["text"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            answers,
            json!([{"id": "push-3", "error": {"code": -32602, "message": "empty"}}])
        );
        // The garbage line is last: the crash wrote nothing, and nothing after it was served.
        assert_eq!(lines.last().unwrap(), GARBAGE_LINE);
    }

    #[test]
    fn closed_input_ends_cleanly_and_blank_lines_are_skipped() {
        let input = "\n  \r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
        let mut output = Vec::new();
        let ending = serve(Cursor::new(input), &mut output, Options::default()).unwrap();
        assert_eq!(ending, Ending::InputClosed);
        assert_eq!(ending.status(), 0);
        assert_eq!(
            String::from_utf8(output).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n"
        );
    }

    #[test]
    fn a_closed_output_ends_cleanly() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Err(ErrorKind::BrokenPipe.into())
            }
        }
        let input = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
        let ending = serve(Cursor::new(input), Closed, Options::default()).unwrap();
        assert_eq!(ending, Ending::OutputClosed);
    }

    #[test]
    fn every_tool_is_named_once_and_found_by_its_name() {
        for tool in Tool::ALL {
            assert_eq!(Tool::named(tool.name()), Some(tool));
        }
        let mut names = Tool::ALL.map(Tool::name);
        names.sort_unstable();
        assert!(names.windows(2).all(|pair| pair[0] != pair[1]));
    }
}
