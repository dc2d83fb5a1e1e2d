//! A minimal MCP client over the binary's standard input and output.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// How long any one line may take to arrive before the test fails instead of hanging.
const LINE_TIMEOUT: Duration = Duration::from_secs(60);

/// The server binary, running.
pub(crate) struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Server {
    /// Starts the binary with `args`, logs discarded.
    pub(crate) fn start_with(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcpl-demo-server"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the demo server starts");
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if sender.send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let stdin = child.stdin.take();
        Server {
            child,
            stdin,
            lines,
            next_id: 0,
        }
    }

    /// Starts the binary and initializes the session.
    pub(crate) fn start() -> Server {
        let mut server = Server::start_with(&[]);
        let init = server.request("initialize", json!({"protocolVersion": "2025-06-18"}));
        assert!(init.get("result").is_some(), "{init}");
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    /// Writes one line.
    pub(crate) fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Writes one message.
    pub(crate) fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string());
    }

    /// Sends a request with the next numeric id, and returns that id.
    pub(crate) fn send_request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The next line the server writes, without its newline.
    pub(crate) fn next_line(&mut self) -> String {
        match self.lines.recv_timeout(LINE_TIMEOUT) {
            Ok(line) => line.trim_end_matches('\n').to_owned(),
            Err(RecvTimeoutError::Timeout) => panic!("no line from the server in {LINE_TIMEOUT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed its output"),
        }
    }

    /// The next message the server writes.
    pub(crate) fn next(&mut self) -> Value {
        let line = self.next_line();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:.200}"))
    }

    /// Sends a request and returns the server's whole answer, checking its id.
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        let answer = self.next();
        assert_eq!(answer["jsonrpc"], "2.0");
        assert_eq!(answer["id"], id, "{answer:.300}");
        answer
    }

    /// Calls a tool and returns its `CallToolResult`.
    pub(crate) fn call(&mut self, name: &str, arguments: Value) -> Value {
        let answer = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        answer
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{name} gave no result: {answer:.300}"))
    }

    /// Whether the server's output has closed, waiting up to `LINE_TIMEOUT` for it.
    pub(crate) fn output_closes(&mut self) -> bool {
        match self.lines.recv_timeout(LINE_TIMEOUT) {
            Err(RecvTimeoutError::Disconnected) => true,
            Ok(line) => panic!("expected the output to close, got {line:.200}"),
            Err(RecvTimeoutError::Timeout) => false,
        }
    }

    /// Closes the server's input and waits for it to exit.
    pub(crate) fn close(&mut self) -> ExitStatus {
        self.stdin = None;
        self.wait()
    }

    /// Waits for the server to exit, input still open.
    pub(crate) fn wait(&mut self) -> ExitStatus {
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A base64 field decoded, requiring the standard padded alphabet.
pub(crate) fn decode(value: &Value) -> Vec<u8> {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value:.100}"));
    STANDARD.decode(text).expect("standard padded base64")
}

/// The `type` of each block of a result's content.
pub(crate) fn kinds(result: &Value) -> Vec<&str> {
    result["content"]
        .as_array()
        .expect("content is an array")
        .iter()
        .map(|block| block["type"].as_str().expect("every block has a type"))
        .collect()
}
