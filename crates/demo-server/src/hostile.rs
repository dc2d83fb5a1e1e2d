//! A hostile MCP server for the host's tests: one [`Misbehaviour`] per way a buggy or malicious
//! server has hurt a host (endless pagination, a server that never reads, lines without end,
//! floods, unmatched answers, banners, a foreign protocol version, bytes no JSON parser likes).
//!
//! It offers one tool, `act`, and misbehaves as its mode says, on `initialize`, on `tools/list`
//! or when `act` is called. Everything it sends that a model must never see carries
//! [`HOSTILE_URI`], so a test can look for it in every request.

use std::io::{self, BufRead, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};

/// The signed uri every hostile output carries; no request to a model may hold it.
pub const HOSTILE_URI: &str = "https://hostile.example/leak.bin?sig=hostile-secret";
/// The protocol version [`Misbehaviour::OldVersion`] answers.
pub const FOREIGN_PROTOCOL_VERSION: &str = "1999-01-01";
/// The text `act` answers with when its mode lets it answer.
pub const ACT_ANSWER: &str = "the hostile server answered";
/// How many `ping` requests [`Misbehaviour::PingFlood`] sends.
pub const PINGS: u64 = 20_000;
/// How deep [`Misbehaviour::DeepNesting`] nests its structured content.
pub const NESTING: usize = 200;

/// One way to misbehave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misbehaviour {
    /// `tools/list` always answers with the same `nextCursor`.
    SameCursor,
    /// `tools/list` always answers with a new `nextCursor`, and the given number of new tools
    /// besides `act` on its first page.
    EndlessCursors,
    /// `act` sends 20,000 `ping` requests, then the server never reads its input again.
    PingFlood,
    /// `act` starts its answer and writes bytes without a newline, then stops.
    EndlessLine,
    /// `act` answers with one valid JSON line of the given size.
    BigLine,
    /// After `notifications/initialized`, `push/event` requests without end; with a size, each
    /// event's text holds that many more bytes.
    PushStream,
    /// `act` sends notifications (the given count) before its answer.
    NotifyFlood,
    /// `act` sends a response without an id and one with an unknown id before its answer, and
    /// its answer twice.
    UnmatchedResponse,
    /// A line that is not JSON before every answer, `initialize`'s too.
    Banner,
    /// `initialize` answers protocol version 1999-01-01.
    OldVersion,
    /// `act`'s answer holds a 0xFF byte in a string.
    InvalidUtf8,
    /// `act`'s answer nests its structured content 200 deep.
    DeepNesting,
    /// `act`'s answer holds the number `1e400`.
    HugeNumber,
    /// Not hostile: `act` calls are held until the given number (default 2) have arrived, then
    /// each is answered with [`gathered`]. With `MCPL_GATHER_DIR` and `MCPL_GATHER_SERVERS`
    /// set, the server first leaves a file in that folder and waits (up to 10 s) until that many
    /// servers have. A host that makes calls one after another never gets an answer.
    Gather,
    /// Offers `context/beforeInference` and answers it with one `afterUser` injection of the
    /// given number (default 300) of tiny PNGs, more than a request may carry.
    ImageInjections,
}

/// What [`Misbehaviour::Gather`] answers each call with.
pub fn gathered(calls: u64, servers: u64) -> String {
    format!("gathered {calls} calls on {servers} servers")
}

impl Misbehaviour {
    /// Every mode.
    pub const ALL: [Misbehaviour; 15] = [
        Misbehaviour::SameCursor,
        Misbehaviour::EndlessCursors,
        Misbehaviour::PingFlood,
        Misbehaviour::EndlessLine,
        Misbehaviour::BigLine,
        Misbehaviour::PushStream,
        Misbehaviour::NotifyFlood,
        Misbehaviour::UnmatchedResponse,
        Misbehaviour::Banner,
        Misbehaviour::OldVersion,
        Misbehaviour::InvalidUtf8,
        Misbehaviour::DeepNesting,
        Misbehaviour::HugeNumber,
        Misbehaviour::Gather,
        Misbehaviour::ImageInjections,
    ];

    /// The mode's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Misbehaviour::SameCursor => "same-cursor",
            Misbehaviour::EndlessCursors => "endless-cursors",
            Misbehaviour::PingFlood => "ping-flood",
            Misbehaviour::EndlessLine => "endless-line",
            Misbehaviour::BigLine => "big-line",
            Misbehaviour::PushStream => "push-stream",
            Misbehaviour::NotifyFlood => "notify-flood",
            Misbehaviour::UnmatchedResponse => "unmatched-response",
            Misbehaviour::Banner => "banner",
            Misbehaviour::OldVersion => "old-version",
            Misbehaviour::InvalidUtf8 => "invalid-utf8",
            Misbehaviour::DeepNesting => "deep-nesting",
            Misbehaviour::HugeNumber => "huge-number",
            Misbehaviour::Gather => "gather",
            Misbehaviour::ImageInjections => "image-injections",
        }
    }

    /// The mode with this name.
    pub fn named(name: &str) -> Option<Misbehaviour> {
        Misbehaviour::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The size the mode uses when it is not told one: bytes for the long lines, a count of
    /// notifications for the flood.
    pub fn default_size(self) -> u64 {
        match self {
            Misbehaviour::EndlessLine => 4 << 30,
            Misbehaviour::BigLine => 500 << 20,
            Misbehaviour::NotifyFlood => 1_000_000,
            Misbehaviour::Gather => 2,
            Misbehaviour::ImageInjections => 300,
            _ => 0,
        }
    }
}

/// Serves one hostile session until the input closes (or forever, for the modes that stop
/// reading). `size` overrides [`Misbehaviour::default_size`].
pub fn serve_hostile<R, W>(
    mode: Misbehaviour,
    size: Option<u64>,
    input: R,
    output: W,
) -> io::Result<()>
where
    R: BufRead,
    W: Write + Send + 'static,
{
    let server = Hostile {
        mode,
        size: size.unwrap_or_else(|| mode.default_size()),
        output: Arc::new(Mutex::new(output)),
        pages: std::sync::atomic::AtomicU64::new(0),
        gathered: Mutex::new(Vec::new()),
    };
    server.run(input)
}

struct Hostile<W> {
    mode: Misbehaviour,
    size: u64,
    output: Arc<Mutex<W>>,
    /// `tools/list` pages answered so far.
    pages: std::sync::atomic::AtomicU64,
    /// The ids of `act` calls held by [`Misbehaviour::Gather`].
    gathered: Mutex<Vec<Value>>,
}

impl<W: Write + Send + 'static> Hostile<W> {
    fn run(&self, input: impl BufRead) -> io::Result<()> {
        for line in input.split(b'\n') {
            let line = line?;
            let Ok(message) = serde_json::from_slice::<Value>(&line) else {
                continue;
            };
            let id = message.get("id").cloned();
            let method = message.get("method").and_then(Value::as_str);
            match (method, id) {
                (Some("notifications/initialized"), None)
                    if self.mode == Misbehaviour::PushStream =>
                {
                    self.start_push_stream()?;
                }
                (Some(method), Some(id)) => self.request(method, id)?,
                _ => {}
            }
        }
        Ok(())
    }

    fn request(&self, method: &str, id: Value) -> io::Result<()> {
        if self.mode == Misbehaviour::Banner {
            self.raw(format!("Starting hostile server… see {HOSTILE_URI}\n").as_bytes())?;
        }
        match method {
            "initialize" => {
                let version = if self.mode == Misbehaviour::OldVersion {
                    FOREIGN_PROTOCOL_VERSION
                } else {
                    "2025-11-25"
                };
                let mut capabilities = json!({"tools": {}});
                if self.mode == Misbehaviour::ImageInjections {
                    capabilities["experimental"] =
                        json!({"mcpl": {"contextHooks": {"beforeInference": {}}}});
                }
                self.answer(
                    &id,
                    json!({
                        "protocolVersion": version,
                        "serverInfo": {"name": "mcpl-hostile", "version": "0"},
                        "capabilities": capabilities,
                    }),
                )
            }
            "context/beforeInference" if self.mode == Misbehaviour::ImageInjections => {
                let png = json!({"type": "image", "mimeType": "image/png",
                                 "data": crate::media::base64(crate::media::PNG)});
                let content: Vec<Value> =
                    std::iter::once(json!({"type": "text", "text": "Screens:"}))
                        .chain((0..self.size).map(|_| png.clone()))
                        .collect();
                self.answer(
                    &id,
                    json!({"contextInjections": [{"position": "afterUser", "content": content}]}),
                )
            }
            "tools/list" if self.mode == Misbehaviour::EndlessCursors => {
                let page = self
                    .pages
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let mut tools: Vec<Value> = (0..self.size)
                    .map(|n| json!({"name": format!("t{page}_{n}"), "inputSchema": {"type": "object"}}))
                    .collect();
                if page == 0 {
                    tools.insert(0, json!({"name": "act", "inputSchema": {"type": "object"}}));
                }
                self.answer(
                    &id,
                    json!({"tools": tools, "nextCursor": format!("page-{}", page + 1)}),
                )
            }
            "tools/list" => {
                let mut listing = json!({"tools": [{
                    "name": "act",
                    "description": format!("Misbehaves: {}", self.mode.name()),
                    "inputSchema": {"type": "object"},
                }]});
                if self.mode == Misbehaviour::SameCursor {
                    listing["nextCursor"] = json!("again");
                }
                // The gatherer's calls only read, it says, unless told it writes.
                if self.mode == Misbehaviour::Gather
                    && std::env::var_os("MCPL_GATHER_WRITES").is_none()
                {
                    listing["tools"][0]["annotations"] = json!({"readOnlyHint": true});
                }
                self.answer(&id, listing)
            }
            "tools/call" => self.act(&id),
            "ping" => self.answer(&id, json!({})),
            _ => self.send(&json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": format!("no {method} at {HOSTILE_URI}")}})),
        }
    }

    fn act(&self, id: &Value) -> io::Result<()> {
        let leak = json!({"type": "resource_link", "uri": HOSTILE_URI, "name": "leak.bin"});
        match self.mode {
            Misbehaviour::PingFlood => {
                for n in 0..PINGS {
                    self.send(
                        &json!({"jsonrpc": "2.0", "id": format!("ping-{n}"), "method": "ping"}),
                    )?;
                }
                // Never read again: the host's answers fill the pipe.
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
            Misbehaviour::EndlessLine => {
                let head = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{HOSTILE_URI} "#
                );
                self.raw(head.as_bytes())?;
                self.filler(self.size)?;
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
            Misbehaviour::BigLine => {
                let head = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{leak},{{"type":"text","text":"{HOSTILE_URI} "#
                );
                self.raw(head.as_bytes())?;
                self.filler(self.size)?;
                self.raw(b"\"}]}}\n")
            }
            Misbehaviour::NotifyFlood => {
                let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": format!("see {HOSTILE_URI}")}});
                let mut line = serde_json::to_vec(&note)?;
                line.push(b'\n');
                let mut output = self.output.lock().unwrap_or_else(PoisonError::into_inner);
                let mut buffered = io::BufWriter::with_capacity(1 << 20, &mut *output);
                for _ in 0..self.size {
                    buffered.write_all(&line)?;
                }
                buffered.flush()?;
                drop(buffered);
                drop(output);
                self.answer_text(id)
            }
            Misbehaviour::UnmatchedResponse => {
                self.send(&json!({"jsonrpc": "2.0", "result": {"content": [leak]}}))?;
                self.send(
                    &json!({"jsonrpc": "2.0", "id": "nobody", "result": {"content": [leak]}}),
                )?;
                self.answer_text(id)?;
                self.send(&json!({"jsonrpc": "2.0", "id": id, "result": {"content": [leak]}}))
            }
            Misbehaviour::InvalidUtf8 => {
                let line = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{ACT_ANSWER}: bad @ byte"}},{leak}]}}}}"#
                );
                let bytes: Vec<u8> = line
                    .bytes()
                    .map(|b| if b == b'@' { 0xFF } else { b })
                    .collect();
                self.raw(&bytes)?;
                self.raw(b"\n")
            }
            Misbehaviour::DeepNesting => {
                let deep = format!("{}{}", "[".repeat(NESTING), "]".repeat(NESTING));
                let line = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{ACT_ANSWER}"}},{leak}],"structuredContent":{{"deep":{deep}}}}}}}"#
                );
                self.raw(line.as_bytes())?;
                self.raw(b"\n")
            }
            Misbehaviour::HugeNumber => {
                let line = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{ACT_ANSWER}"}},{leak}],"structuredContent":{{"n":1e400}}}}}}"#
                );
                self.raw(line.as_bytes())?;
                self.raw(b"\n")
            }
            Misbehaviour::Gather => self.gather(id),
            Misbehaviour::SameCursor
            | Misbehaviour::EndlessCursors
            | Misbehaviour::PushStream
            | Misbehaviour::Banner
            | Misbehaviour::OldVersion
            | Misbehaviour::ImageInjections => self.answer_text(id),
        }
    }

    fn gather(&self, id: &Value) -> io::Result<()> {
        let mut held = self.gathered.lock().unwrap_or_else(PoisonError::into_inner);
        held.push(id.clone());
        if (held.len() as u64) < self.size {
            return Ok(());
        }
        let ids = std::mem::take(&mut *held);
        drop(held);
        let mut servers = 1;
        if let (Ok(dir), Some(wanted)) = (
            std::env::var("MCPL_GATHER_DIR"),
            std::env::var("MCPL_GATHER_SERVERS")
                .ok()
                .and_then(|n| n.parse::<u64>().ok()),
        ) {
            let dir = std::path::PathBuf::from(dir);
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join(std::process::id().to_string()), b"")?;
            for _ in 0..1000 {
                servers = std::fs::read_dir(&dir)?.count() as u64;
                if servers >= wanted {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let text = gathered(ids.len() as u64, servers);
        for id in &ids {
            self.answer(id, json!({"content": [{"type": "text", "text": text}]}))?;
        }
        Ok(())
    }

    /// Writes `push/event` requests from a thread of their own until writing fails.
    fn start_push_stream(&self) -> io::Result<()> {
        let output = Arc::clone(&self.output);
        // With a size, each event's text is that many bytes: a server whose every push would
        // fill the window.
        let filler = "x".repeat(usize::try_from(self.size).unwrap_or(0));
        std::thread::Builder::new()
            .name("hostile-push".to_owned())
            .spawn(move || {
                for n in 0u64.. {
                    let event = json!({"jsonrpc": "2.0", "id": format!("push-{n}"),
                    "method": "push/event", "params": {
                        "eventId": format!("e{n}"),
                        "payload": {"content": [
                            {"type": "text", "text": format!("event {n} {filler}")},
                            {"type": "resource_link", "uri": HOSTILE_URI, "name": "leak.bin"},
                        ]},
                    }});
                    let mut output = output.lock().unwrap_or_else(PoisonError::into_inner);
                    let written = serde_json::to_writer(&mut *output, &event)
                        .map_err(io::Error::from)
                        .and_then(|()| output.write_all(b"\n"))
                        .and_then(|()| output.flush());
                    if written.is_err() {
                        return;
                    }
                }
            })
            .map(drop)
    }

    fn filler(&self, bytes: u64) -> io::Result<()> {
        let chunk = vec![b'x'; 1 << 20];
        let mut left = bytes;
        while left > 0 {
            let take = usize::try_from(left.min(chunk.len() as u64)).unwrap_or(chunk.len());
            self.raw(&chunk[..take])?;
            left -= take as u64;
        }
        Ok(())
    }

    fn answer_text(&self, id: &Value) -> io::Result<()> {
        self.answer(
            id,
            json!({"content": [{"type": "text", "text": ACT_ANSWER}]}),
        )
    }

    fn answer(&self, id: &Value, result: Value) -> io::Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }

    fn send(&self, message: &Value) -> io::Result<()> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        self.raw(&line)
    }

    fn raw(&self, bytes: &[u8]) -> io::Result<()> {
        let mut output = self.output.lock().unwrap_or_else(PoisonError::into_inner);
        output.write_all(bytes)?;
        output.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_is_named_once_and_found_by_its_name() {
        for mode in Misbehaviour::ALL {
            assert_eq!(Misbehaviour::named(mode.name()), Some(mode));
        }
        assert_eq!(Misbehaviour::named("polite"), None);
    }

    #[test]
    fn invalid_utf8_writes_one_ff_byte() {
        let input = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}\n";
        let output = Arc::new(Mutex::new(Vec::new()));
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
                self.0.lock().unwrap().write(bytes)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        serve_hostile(
            Misbehaviour::InvalidUtf8,
            None,
            input.as_bytes(),
            Shared(Arc::clone(&output)),
        )
        .unwrap();
        let written = output.lock().unwrap().clone();
        assert_eq!(written.iter().filter(|&&b| b == 0xFF).count(), 1);
        assert!(serde_json::from_slice::<Value>(&written).is_err());
    }
}
