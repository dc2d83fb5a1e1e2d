//! The demo server dialed rather than spawned: [`Remote`] serves it over Streamable HTTP and over
//! MCPL's WebSocket on one loopback origin, which also serves the demo's reference files
//! (decision 0075), so a reference the demo links to is on the origin the host dialed.
//!
//! Each session is [`serve`] itself on a thread, its lines carried by bounded channels: the
//! transports only move lines, so the server says the same over every transport. Over HTTP a
//! POSTed request is answered by an SSE stream of what the server writes until its answer to
//! that request (its own requests on the way included); a POSTed notification or answer gets
//! 202. `Mcp-Session-Id` is given at `initialize` and asked for after; `DELETE` ends a session.
//! A WebSocket (an `Upgrade` on the same path) is one session for as long as it is open.

use std::collections::HashMap;
use std::io::{self, BufReader, Cursor, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;
use tungstenite::Message;

use crate::wire::{Head, read_head, read_message, respond};
use crate::{Options, media, serve};

/// The path of the MCP endpoint, for Streamable HTTP and WebSocket alike.
pub const MCP_PATH: &str = "/mcp";
/// The path the demo's brief is served at.
pub const BRIEF_PATH: &str = "/files/brief.pdf";

/// How many lines wait in either direction of a session before the writer waits.
const QUEUE: usize = 1024;
/// How long a POST's stream waits for the server's next line.
const ANSWER_WAIT: Duration = Duration::from_secs(60);
/// How long a WebSocket read waits before the server's lines are sent.
const POLL: Duration = Duration::from_millis(10);

/// The demo server on a loopback origin (`http://127.0.0.1:PORT`), stopped when dropped.
#[derive(Debug)]
pub struct Remote {
    address: SocketAddr,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    options: Options,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    next: AtomicU64,
}

/// One running [`serve`]: lines in, lines out.
#[derive(Debug)]
struct Session {
    input: SyncSender<Vec<u8>>,
    output: Mutex<Receiver<Vec<u8>>>,
}

impl Remote {
    /// Binds a free port on 127.0.0.1 and serves there until dropped; `options.files_origin`
    /// becomes the origin bound.
    pub fn start(mut options: Options) -> io::Result<Remote> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let address = listener.local_addr()?;
        options.files_origin = Some(format!("http://{address}"));
        let shared = Arc::new(Shared {
            options,
            sessions: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let accept = {
            let (shared, stop) = (Arc::clone(&shared), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("demo-remote".to_owned())
                .spawn(move || {
                    for stream in listener.incoming() {
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        let Ok(stream) = stream else { continue };
                        let shared = Arc::clone(&shared);
                        // A connection that cannot get a thread is dropped, as a busy server would.
                        let _ = std::thread::Builder::new()
                            .name("demo-remote-connection".to_owned())
                            .spawn(move || {
                                if let Err(error) = connection(stream, &shared) {
                                    eprintln!("{}: connection: {error}", shared.options.name);
                                }
                            });
                    }
                })?
        };
        Ok(Remote {
            address,
            shared,
            stop,
            accept: Some(accept),
        })
    }

    /// The origin: `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The Streamable HTTP endpoint: `http://127.0.0.1:PORT/mcp`.
    pub fn http_url(&self) -> String {
        format!("http://{}{MCP_PATH}", self.address)
    }

    /// The WebSocket endpoint: `ws://127.0.0.1:PORT/mcp`.
    pub fn ws_url(&self) -> String {
        format!("ws://{}{MCP_PATH}", self.address)
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // The accept loop sees the flag at its next connection: this one.
        let _ = TcpStream::connect(self.address);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        // Dropping the sessions closes their input, and each server ends.
        self.shared
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

/// Starts a session: [`serve`] on a thread, between two bounded channels.
fn session(options: &Options) -> io::Result<Session> {
    let (input, lines_in) = mpsc::sync_channel(QUEUE);
    let (lines_out, output) = mpsc::sync_channel(QUEUE);
    let options = options.clone();
    std::thread::Builder::new()
        .name("demo-session".to_owned())
        .spawn(move || {
            let reader = LinesIn {
                lines: lines_in,
                current: Cursor::new(Vec::new()),
            };
            let writer = LinesOut {
                lines: lines_out,
                line: Vec::new(),
            };
            let _ = serve(BufReader::new(reader), writer, options);
        })?;
    Ok(Session {
        input,
        output: Mutex::new(output),
    })
}

/// The server's input: each line received, newline-terminated; the end when the sender is gone.
struct LinesIn {
    lines: Receiver<Vec<u8>>,
    current: Cursor<Vec<u8>>,
}

impl Read for LinesIn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let read = self.current.read(buf)?;
            if read > 0 || buf.is_empty() {
                return Ok(read);
            }
            match self.lines.recv() {
                Ok(mut line) => {
                    line.push(b'\n');
                    self.current = Cursor::new(line);
                }
                Err(_) => return Ok(0),
            }
        }
    }
}

/// The server's output: each line sent whole, without its newline.
struct LinesOut {
    lines: SyncSender<Vec<u8>>,
    line: Vec<u8>,
}

impl Write for LinesOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for &byte in buf {
            if byte != b'\n' {
                self.line.push(byte);
                continue;
            }
            let line = std::mem::take(&mut self.line);
            if !line.is_empty() {
                self.lines
                    .send(line)
                    .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn connection(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let head = read_head(&mut reader)?;
    if head.path() == BRIEF_PATH && head.method == "GET" {
        return respond(
            &mut writer,
            "200 OK",
            &[("Content-Type", "application/pdf")],
            media::PDF,
        );
    }
    if head.path() != MCP_PATH {
        return respond(&mut writer, "404 Not Found", &[], b"");
    }
    let upgrade = head
        .header("upgrade")
        .is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    match head.method.as_str() {
        "GET" if upgrade => websocket(head, reader, writer, shared),
        "POST" => post(&head, reader, writer, shared),
        "DELETE" => {
            let removed = head
                .header("mcp-session-id")
                .and_then(|id| sessions(shared).remove(id));
            let status = if removed.is_some() {
                "200 OK"
            } else {
                "404 Not Found"
            };
            respond(&mut writer, status, &[], b"")
        }
        _ => respond(
            &mut writer,
            "405 Method Not Allowed",
            &[("Allow", "POST, DELETE")],
            b"",
        ),
    }
}

fn sessions(shared: &Shared) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
    shared
        .sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// One POSTed message: a request answered by an SSE stream, anything else by 202.
fn post(
    head: &Head,
    mut reader: BufReader<TcpStream>,
    mut writer: TcpStream,
    shared: &Shared,
) -> io::Result<()> {
    let Some(message) = read_message(head, &mut reader, &mut writer)? else {
        return Ok(());
    };
    let (id, session) = if message.get("method").and_then(Value::as_str) == Some("initialize") {
        let id = format!("demo-{}", shared.next.fetch_add(1, Ordering::SeqCst));
        let session = Arc::new(session(&shared.options)?);
        sessions(shared).insert(id.clone(), Arc::clone(&session));
        (id, session)
    } else {
        let Some(id) = head.header("mcp-session-id") else {
            return respond(&mut writer, "400 Bad Request", &[], b"no Mcp-Session-Id");
        };
        let Some(session) = sessions(shared).get(id).cloned() else {
            return respond(&mut writer, "404 Not Found", &[], b"no such session");
        };
        (id.to_owned(), session)
    };
    let line = serde_json::to_vec(&message).map_err(io::Error::other)?;
    if session.input.send(line).is_err() {
        sessions(shared).remove(&id);
        return respond(&mut writer, "404 Not Found", &[], b"the session ended");
    }
    let request_id = match (message.get("method"), message.get("id")) {
        (Some(_), Some(request_id)) => request_id.clone(),
        _ => return respond(&mut writer, "202 Accepted", &[("Mcp-Session-Id", &id)], b""),
    };
    writer.write_all(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
             Mcp-Session-Id: {id}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )?;
    let output = session
        .output
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    while let Ok(line) = output.recv_timeout(ANSWER_WAIT) {
        let answer = serde_json::from_slice::<Value>(&line).ok();
        let done = answer
            .as_ref()
            .is_some_and(|a| a.get("method").is_none() && a.get("id") == Some(&request_id));
        let mut event = b"event: message\ndata: ".to_vec();
        event.extend_from_slice(&line);
        event.extend_from_slice(b"\n\n");
        writer.write_all(format!("{:x}\r\n", event.len()).as_bytes())?;
        writer.write_all(&event)?;
        writer.write_all(b"\r\n")?;
        writer.flush()?;
        if done {
            break;
        }
    }
    writer.write_all(b"0\r\n\r\n")?;
    writer.flush()
}

/// The request head replayed before the rest of the stream, for the WebSocket handshake.
struct Replayed {
    head: Cursor<Vec<u8>>,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Read for Replayed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.head.read(buf)? {
            0 => self.reader.read(buf),
            read => Ok(read),
        }
    }
}

impl Write for Replayed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }
}

/// One WebSocket, one session: each text message a line in, each line out a text message.
fn websocket(
    head: Head,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    shared: &Shared,
) -> io::Result<()> {
    let control = writer.try_clone()?;
    let stream = Replayed {
        head: Cursor::new(head.bytes),
        reader,
        writer,
    };
    let mut socket = tungstenite::accept(stream).map_err(|e| io::Error::other(e.to_string()))?;
    control.set_read_timeout(Some(POLL))?;
    let session = session(&shared.options)?;
    let output = session
        .output
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    loop {
        match socket.read() {
            Ok(Message::Text(text)) => {
                if session.input.send(text.as_bytes().to_vec()).is_err() {
                    break;
                }
            }
            Ok(Message::Close(_)) => break,
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
        loop {
            match output.try_recv() {
                Ok(line) => {
                    let text = String::from_utf8_lossy(&line).into_owned();
                    if socket.send(Message::text(text)).is_err() {
                        return Ok(());
                    }
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    let _ = socket.close(None);
                    let _ = socket.flush();
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}
