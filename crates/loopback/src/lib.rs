//! A small real HTTP/1.1 server on 127.0.0.1, for the conformance runner, tests and benches:
//! it answers every request with what a closure decides, and records what it saw.
//!
//! [`Loopback::start`] takes the closure, which reads each [`Request`] and gives an [`Answer`]:
//! a status, headers (a `Content-Length` among them replaces the true one, for a server that
//! lies) and a [`Body`] of bytes or of chunks sent at an interval, with constructors for plain,
//! gzip ([`gzip`]), chunked and redirect answers. [`Loopback::requests`] is what the server saw
//! and [`Loopback::streams`] a [`StreamReport`] per chunked answer.
//!
//! Each connection carries one request and is closed after its answer. Every request is logged
//! with its headers (so a test can see where a token went), and every chunked answer reports
//! how many chunks went out and whether the client closed the connection before the end (so a
//! test can see a stream was cut rather than buffered).
//!
//! ```
//! use mcpl_loopback::{Answer, Loopback};
//!
//! let server = Loopback::start(|request| {
//!     Answer::bytes("text/plain", format!("you asked for {}", request.target).into_bytes())
//! })?;
//! assert!(server.origin().starts_with("http://127.0.0.1:"));
//! assert!(server.requests().is_empty());
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use flate2::Compression;
use flate2::write::GzEncoder;

/// The longest request head the server reads.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The largest request body the server reads (by its `Content-Length`).
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// One request the server received, body included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The method (`GET`).
    pub method: String,
    /// The request target (`/payload?x=1`).
    pub target: String,
    /// The headers, names lowercased, in the order sent.
    pub headers: Vec<(String, String)>,
    /// The body, as its `Content-Length` delimits it (empty without one).
    pub body: Vec<u8>,
}

impl Request {
    /// The first header of that name (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server answers.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// Headers besides `Transfer-Encoding` and `Connection`. A `Content-Length` here replaces
    /// the true one, for a server that lies about its length.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Body,
}

/// An answer's body.
#[derive(Debug, Clone)]
pub enum Body {
    /// These bytes, with a `Content-Length`.
    Bytes(Arc<[u8]>),
    /// The same chunk `count` times, chunked, `interval` apart (`u64::MAX` times: endless).
    Chunks {
        /// One chunk.
        chunk: Arc<[u8]>,
        /// How many.
        count: u64,
        /// The wait before each chunk after the first.
        interval: Duration,
    },
}

impl Answer {
    /// 200 with these bytes and this `Content-Type`.
    pub fn bytes(content_type: &str, body: impl Into<Arc<[u8]>>) -> Answer {
        Answer {
            status: 200,
            headers: vec![("Content-Type".to_owned(), content_type.to_owned())],
            body: Body::Bytes(body.into()),
        }
    }

    /// 200 with these bytes gzip-compressed and `Content-Encoding: gzip`.
    pub fn gzip(content_type: &str, body: &[u8]) -> Answer {
        let mut answer = Answer::bytes(content_type, gzip(body));
        answer
            .headers
            .push(("Content-Encoding".to_owned(), "gzip".to_owned()));
        answer
    }

    /// 200 with `count` chunks of `chunk`, `interval` apart.
    pub fn chunks(
        content_type: &str,
        chunk: impl Into<Arc<[u8]>>,
        count: u64,
        interval: Duration,
    ) -> Answer {
        Answer {
            status: 200,
            headers: vec![("Content-Type".to_owned(), content_type.to_owned())],
            body: Body::Chunks {
                chunk: chunk.into(),
                count,
                interval,
            },
        }
    }

    /// 302 to `location`.
    pub fn redirect(location: &str) -> Answer {
        Answer {
            status: 302,
            headers: vec![("Location".to_owned(), location.to_owned())],
            body: Body::Bytes(Arc::from(&b""[..])),
        }
    }

    /// This answer with one more header.
    pub fn with_header(mut self, name: &str, value: &str) -> Answer {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// One gzip member holding `bytes`. Several members one after another are one valid gzip
/// stream, which is how a test builds a gzip bomb of any size from a small member.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

/// What became of one chunked answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamReport {
    /// Chunks written before the end or the client's close.
    pub sent: u64,
    /// Chunks the answer had.
    pub total: u64,
    /// Whether a write failed because the client had closed the connection.
    pub client_closed: bool,
}

type Answerer = dyn Fn(&Request) -> Answer + Send + Sync;

struct Shared {
    answer: Box<Answerer>,
    requests: Mutex<Vec<Request>>,
    streams: Mutex<Vec<StreamReport>>,
    active: AtomicUsize,
    stop: AtomicBool,
}

/// A running loopback server; it stops when dropped.
pub struct Loopback {
    origin: String,
    address: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Loopback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loopback")
            .field("origin", &self.origin)
            .finish()
    }
}

impl Loopback {
    /// Starts a server on a free port of 127.0.0.1, answering each request with `answer`.
    pub fn start(
        answer: impl Fn(&Request) -> Answer + Send + Sync + 'static,
    ) -> io::Result<Loopback> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let address = listener.local_addr()?;
        let shared = Arc::new(Shared {
            answer: Box::new(answer),
            requests: Mutex::new(Vec::new()),
            streams: Mutex::new(Vec::new()),
            active: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("mcpl-loopback".to_owned())
            .spawn(move || accept_loop(&listener, &accepting))?;
        Ok(Loopback {
            origin: format!("http://{address}"),
            address,
            shared,
            accept: Some(accept),
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        lock(&self.shared.requests).clone()
    }

    /// Every chunked answer that has ended, in the order they ended.
    pub fn streams(&self) -> Vec<StreamReport> {
        lock(&self.shared.streams).clone()
    }

    /// Waits until no connection is being served (or `timeout` passes), so that what a
    /// client's close did to a stream has been seen; answers whether the server went idle.
    pub fn settle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.shared.active.load(Ordering::SeqCst) == 0 {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.address, Duration::from_secs(1));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let active = Active::new(Arc::clone(shared));
        // A thread that cannot start drops its closure, and the count with it; a panicking
        // answerer drops it while unwinding.
        let _ = std::thread::Builder::new()
            .name("mcpl-loopback-conn".to_owned())
            .spawn(move || {
                let _ = serve(stream, &active.0);
            });
    }
}

/// One connection being served, counted for [`Loopback::settle`] until dropped.
struct Active(Arc<Shared>);

impl Active {
    fn new(shared: Arc<Shared>) -> Active {
        shared.active.fetch_add(1, Ordering::SeqCst);
        Active(shared)
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

fn serve(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let Some(request) = read_head(&stream)? else {
        return Ok(());
    };
    lock(&shared.requests).push(request.clone());
    let answer = (shared.answer)(&request);
    let mut out = io::BufWriter::with_capacity(256 * 1024, &stream);
    write!(
        out,
        "HTTP/1.1 {} {}\r\n",
        answer.status,
        reason(answer.status)
    )?;
    for (name, value) in &answer.headers {
        write!(out, "{name}: {value}\r\n")?;
    }
    out.write_all(b"Connection: close\r\n")?;
    match &answer.body {
        Body::Bytes(bytes) => {
            let lies = answer
                .headers
                .iter()
                .any(|(name, _)| name.eq_ignore_ascii_case("content-length"));
            if !lies {
                write!(out, "Content-Length: {}\r\n", bytes.len())?;
            }
            out.write_all(b"\r\n")?;
            out.write_all(bytes)?;
            out.flush()?;
        }
        Body::Chunks {
            chunk,
            count,
            interval,
        } => {
            out.write_all(b"Transfer-Encoding: chunked\r\n\r\n")?;
            let report = stream_chunks(&mut out, chunk, *count, *interval, &shared.stop);
            lock(&shared.streams).push(report);
        }
    }
    drop(out);
    let _ = stream.shutdown(Shutdown::Write);
    Ok(())
}

fn stream_chunks(
    out: &mut impl Write,
    chunk: &[u8],
    count: u64,
    interval: Duration,
    stop: &AtomicBool,
) -> StreamReport {
    let mut report = StreamReport {
        sent: 0,
        total: count,
        client_closed: false,
    };
    while report.sent < count && !stop.load(Ordering::SeqCst) {
        if report.sent > 0 && !interval.is_zero() {
            std::thread::sleep(interval);
        }
        let written = write!(out, "{:x}\r\n", chunk.len())
            .and_then(|()| out.write_all(chunk))
            .and_then(|()| out.write_all(b"\r\n"))
            .and_then(|()| out.flush());
        if written.is_err() {
            report.client_closed = true;
            return report;
        }
        report.sent += 1;
    }
    if out
        .write_all(b"0\r\n\r\n")
        .and_then(|()| out.flush())
        .is_err()
    {
        report.client_closed = true;
    }
    report
}

/// Reads a request line and headers; `None` for a connection that sent nothing (the wake-up
/// connection, or a client that gave up).
fn read_head(stream: &TcpStream) -> io::Result<Option<Request>> {
    let mut reader = BufReader::new(stream);
    let mut lines = Vec::new();
    let mut read = 0;
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line)?;
        read += n;
        if n == 0 || read > MAX_HEAD_BYTES {
            return Ok(None);
        }
        let line = line.trim_end_matches(['\r', '\n']).to_owned();
        if line.is_empty() {
            break;
        }
        lines.push(line);
    }
    let mut request_line = lines.first().map(|l| l.split(' ')).into_iter().flatten();
    let method = request_line.next().unwrap_or_default().to_owned();
    let target = request_line.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .iter()
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse::<usize>().ok())
        .unwrap_or(0);
    if length > MAX_BODY_BYTES {
        return Ok(None);
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Some(Request {
        method,
        target,
        headers,
        body,
    }))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        307 => "Temporary Redirect",
        404 => "Not Found",
        500 => "Internal Server Error",
        _ => "Status",
    }
}
