//! MCP's Streamable HTTP transport: each message POSTed to the server's url, its answer read as
//! JSON or as a stream of Server-Sent Events (on which the server may also send its own requests
//! and notifications), a GET stream for what the server sends on its own initiative (at
//! 2026-07-28, the `subscriptions/listen` request's stream instead), a broken
//! stream resumed with `Last-Event-ID` after the server's `retry`, the session kept
//! (`Mcp-Session-Id`, a 404 answered by initialising again) and ended with `DELETE`.
//!
//! The transport feeds the same bounded queue the stdio reader feeds, with the same
//! [`Incoming`] messages, so [`crate::Connection`] does not know which it speaks. One writer
//! thread sends the host's messages in order; a request's answer is read on a thread of its own,
//! so a long call's stream never holds up an answer to the server's request made on it.

use std::io::{BufRead, BufReader, Read};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::auth::{Authorizer, Heard};
use crate::sse::{Event, StreamEnd, read_events};
use crate::{Incoming, Outgoing, head_identity, parse_line};

/// How long to wait before resuming a stream whose server named no `retry`, and the least wait
/// of every reopening after the first in a row, whatever `retry` says.
pub const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// The longest wait between reopenings: a server cannot park a call for longer.
const MAX_RETRY: Duration = Duration::from_secs(30);
/// How many times one answer's stream is resumed before its call fails.
const MAX_RESUMES: usize = 5;
/// How many times in a row the GET stream is opened again without bringing a message.
const MAX_IDLE_LISTENS: usize = 5;
/// How long a call's reader reads past the call's deadline: the connection times the call out
/// first, so the caller sees a timeout rather than a broken stream.
const READ_GRACE: Duration = Duration::from_millis(100);
/// How long closing waits for the session's `DELETE`.
const CLOSE_WAIT: Duration = Duration::from_secs(2);
const SESSION_HEADER: &str = "Mcp-Session-Id";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// A server dialed over the network: its url, the headers the config adds to each request, and
/// who gives its requests their `Authorization`.
#[derive(Clone)]
#[non_exhaustive]
pub struct Dial {
    /// Where the server is.
    pub url: url::Url,
    /// Headers sent with every request (the config's `headers`, `${ENV}` already expanded).
    pub headers: Vec<(String, String)>,
    /// Gives each request its `Authorization` header and hears 401 and 403 answers.
    pub authorizer: Option<Arc<dyn Authorizer>>,
}

/// The warning for a credential that would travel in the clear: an `Authorization` header (or
/// an authorizer that gives one) on a plain `http` or `ws` url to a host that is not loopback.
/// `None` when nothing would: https and wss, loopback, or no credential.
pub fn cleartext_credential_warning(server: &str, dial: &Dial) -> Option<String> {
    let plain = matches!(dial.url.scheme(), "http" | "ws");
    let loopback = match dial.url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    let credential = dial.authorizer.is_some()
        || dial
            .headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
    (plain && !loopback && credential).then(|| {
        format!(
            "server {server}: a token or Authorization header goes to {} over plain {}; \
             anyone on the path can read it",
            dial.url.host_str().unwrap_or_default(),
            dial.url.scheme()
        )
    })
}

impl Dial {
    /// A server at `url`, with no added headers and no authorizer.
    pub fn new(url: url::Url) -> Dial {
        Dial {
            url,
            headers: Vec::new(),
            authorizer: None,
        }
    }

    /// The same dial, sending `headers` with every request.
    pub fn with_headers(self, headers: Vec<(String, String)>) -> Dial {
        Dial { headers, ..self }
    }

    /// The same dial, its requests' `Authorization` given by `authorizer`.
    pub fn with_authorizer(self, authorizer: Option<Arc<dyn Authorizer>>) -> Dial {
        Dial { authorizer, ..self }
    }
}

/// Shows the url and the header names only: values may hold credentials.
impl std::fmt::Debug for Dial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("Dial")
            .field("url", &self.url.as_str())
            .field("headers", &names)
            .field("authorizer", &self.authorizer.is_some())
            .finish()
    }
}

/// Two dials are the same when their url and headers are; authorizers are not compared.
impl PartialEq for Dial {
    fn eq(&self, other: &Dial) -> bool {
        self.url == other.url && self.headers == other.headers
    }
}

/// The host's end of a Streamable HTTP connection.
#[derive(Debug)]
pub(crate) struct HttpPeer {
    /// Ends when the writer has sent what was queued and the session's `DELETE`.
    done: Receiver<()>,
    shared: Arc<Shared>,
}

impl HttpPeer {
    /// Waits (a while) for the writer to end the session once the connection's sender is gone.
    pub(crate) fn close(&self) {
        self.shared.closed.store(true, Ordering::Relaxed);
        match self.done.recv_timeout(CLOSE_WAIT) {
            Ok(()) | Err(RecvTimeoutError::Disconnected | RecvTimeoutError::Timeout) => {}
        }
    }
}

struct Shared {
    server: String,
    dial: Dial,
    agent: ureq::Agent,
    limit: usize,
    /// The server's timeout: what a request without a call's deadline, and one event of the
    /// GET stream, may take.
    timeout: Duration,
    incoming: SyncSender<Incoming>,
    session: Mutex<Option<String>>,
    /// The `initialize` request and `notifications/initialized` as first sent, to initialise
    /// again when the server forgets the session.
    handshake: Mutex<(Option<Outgoing>, Option<Outgoing>)>,
    listening: AtomicBool,
    closed: AtomicBool,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// Starts the writer thread for `dial`: it sends what arrives on `lines` and feeds `incoming`.
pub(crate) fn start(
    server: &str,
    dial: &Dial,
    limit: usize,
    timeout: Duration,
    incoming: SyncSender<Incoming>,
    lines: Receiver<Outgoing>,
) -> std::io::Result<HttpPeer> {
    let config = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .proxy(None)
        .timeout_connect(Some(timeout))
        .timeout_recv_response(Some(timeout))
        // Everything a server controls has a deadline: a request without a call's own (a
        // notification, an answer to the server) gets the server's timeout, body included.
        .timeout_global(Some(timeout))
        .user_agent(concat!("mcpl/", env!("CARGO_PKG_VERSION")));
    #[cfg(feature = "tls")]
    let config = config.tls_config(mcpl_tls::trust().ureq_config());
    let agent = config.build().new_agent();
    let shared = Arc::new(Shared {
        server: server.to_owned(),
        dial: dial.clone(),
        agent,
        limit,
        timeout,
        incoming,
        session: Mutex::new(None),
        handshake: Mutex::new((None, None)),
        listening: AtomicBool::new(false),
        closed: AtomicBool::new(false),
    });
    let (done_sender, done) = sync_channel(1);
    let writer = Arc::clone(&shared);
    std::thread::Builder::new()
        .name(format!("mcpl-{server}-http"))
        .spawn(move || {
            for out in lines {
                write(&writer, out);
            }
            writer.end_session();
            let _ = done_sender.send(());
        })?;
    Ok(HttpPeer { done, shared })
}

/// Sends one message: a request's answer is read on a thread of its own, anything else here.
fn write(shared: &Arc<Shared>, out: Outgoing) {
    match out.method.as_deref() {
        Some("initialize") => lock(&shared.handshake).0 = Some(out.clone()),
        Some("notifications/initialized") => lock(&shared.handshake).1 = Some(out.clone()),
        _ => {}
    }
    if out.method.as_deref() == Some("subscriptions/listen") {
        let subscriber = Arc::clone(shared);
        let spawned = std::thread::Builder::new()
            .name(format!("mcpl-{}-subscribe", shared.server))
            .spawn(move || subscribe(&subscriber, &out));
        if let Err(error) = spawned {
            tracing::warn!(server = %shared.server, %error, "no thread for subscriptions/listen");
        }
        return;
    }
    if out.id.is_some() && out.method.is_some() {
        let poster = Arc::clone(shared);
        let spawned = std::thread::Builder::new()
            .name(format!("mcpl-{}-post", shared.server))
            .spawn(move || post(&poster, &out));
        if let Err(error) = spawned {
            tracing::warn!(server = %shared.server, %error, "no thread for a request");
        }
        return;
    }
    post(shared, &out);
    if out.method.as_deref() == Some("notifications/initialized")
        && !shared.listening.swap(true, Ordering::Relaxed)
    {
        let listener = Arc::clone(shared);
        let spawned = std::thread::Builder::new()
            .name(format!("mcpl-{}-listen", shared.server))
            .spawn(move || listen(&listener));
        if let Err(error) = spawned {
            tracing::warn!(server = %shared.server, %error, "no thread for the GET stream");
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

type Response = ureq::http::Response<ureq::Body>;

impl Shared {
    fn session(&self) -> Option<String> {
        lock(&self.session).clone()
    }

    fn keep_session(&self, response: &Response) {
        if let Some(id) = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
        {
            *lock(&self.session) = Some(id.to_owned());
        }
    }

    /// The headers every request carries: the config's, the session, the authorization.
    fn common_headers(&self, method: &str, session: Option<&str>) -> Vec<(String, String)> {
        let mut headers = self.dial.headers.clone();
        if let Some(session) = session {
            headers.push((SESSION_HEADER.to_owned(), session.to_owned()));
        }
        if let Some(authorizer) = &self.dial.authorizer {
            headers.extend(authorizer.request_headers(method, &self.dial.url));
        }
        headers
    }

    /// POSTs `out`; an `open_ended` request (`subscriptions/listen`) has no deadline once its
    /// headers came, its stream bounded as the GET stream's is.
    fn send_post(
        &self,
        out: &Outgoing,
        session: Option<&str>,
        open_ended: bool,
    ) -> Result<Response, ureq::Error> {
        let mut request = self
            .agent
            .post(self.dial.url.as_str())
            .header("Content-Type", "application/json")
            .header("Accept", ACCEPT_BOTH);
        for (name, value) in self
            .common_headers("POST", session)
            .iter()
            .chain(&out.headers)
        {
            request = request.header(name, value);
        }
        if open_ended {
            return request
                .config()
                .timeout_global(None)
                .build()
                .send(&out.body[..]);
        }
        match out.deadline {
            // The call's deadline reaches the thread that reads its answer: at the deadline the
            // read fails, the connection closes, and the thread and its buffers go.
            Some(deadline) => request
                .config()
                .timeout_global(Some(left(deadline)))
                .build()
                .send(&out.body[..]),
            None => request.send(&out.body[..]),
        }
    }

    /// GETs the event stream: resuming a call's answer until `deadline`, or (with none) the
    /// long-lived stream of what the server sends on its own, whose headers still come within
    /// the server's timeout.
    fn send_get(
        &self,
        last_event_id: Option<&str>,
        deadline: Option<Instant>,
    ) -> Result<Response, ureq::Error> {
        let session = self.session();
        let mut request = self
            .agent
            .get(self.dial.url.as_str())
            .header("Accept", "text/event-stream");
        for (name, value) in self.common_headers("GET", session.as_deref()) {
            request = request.header(name, value);
        }
        if let Some(version) = lock(&self.handshake)
            .1
            .as_ref()
            .and_then(|out| out.protocol_version.clone())
        {
            request = request.header("MCP-Protocol-Version", version);
        }
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id);
        }
        request
            .config()
            .timeout_global(deadline.map(left))
            .build()
            .call()
    }

    /// Whether the authorizer has a new header for a request answered 401 or 403.
    fn challenged(&self, response: &Response, heard: &mut Heard) -> bool {
        let Some(authorizer) = &self.dial.authorizer else {
            return false;
        };
        let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok());
        heard.retry(
            authorizer.as_ref(),
            &self.server,
            &self.dial.url,
            response.status().as_u16(),
            header("www-authenticate"),
            header("dpop-nonce"),
        )
    }

    /// Fails the request `out` (if it is one) with `detail`.
    fn fail(&self, out: &Outgoing, detail: String) {
        tracing::debug!(server = %self.server, %detail, "an HTTP request failed");
        if let Some(id) = &out.id {
            let _ = self.incoming.send(Incoming::Failed {
                id: id.clone(),
                detail,
            });
        }
    }

    /// Forwards one message from a body or an event; returns the id of a response it was.
    fn forward(&self, bytes: &[u8]) -> (Option<Value>, bool) {
        let Some(incoming) = parse_line(&self.server, bytes.trim_ascii()) else {
            return (None, true);
        };
        let id = match &incoming {
            Incoming::Response { id, .. } => Some(id.clone()),
            _ => None,
        };
        (id, self.incoming.send(incoming).is_ok())
    }

    fn forward_too_long(&self, head: &[u8]) -> (Option<Value>, bool) {
        let (id, is_request) = head_identity(head);
        tracing::warn!(server = %self.server, limit = self.limit, "a message over the limit; the rest of it is dropped");
        let answered = if is_request { None } else { id.clone() };
        let sent = self
            .incoming
            .send(Incoming::TooLong { id, is_request })
            .is_ok();
        (answered, sent)
    }

    /// Initialises again after the server forgot the session; whether it worked.
    fn initialize_again(&self) -> bool {
        let (initialize, initialized) = lock(&self.handshake).clone();
        let Some(initialize) = initialize else {
            return false;
        };
        *lock(&self.session) = None;
        tracing::info!(server = %self.server, "the session expired; initialising again");
        let Ok(response) = self.send_post(&initialize, None, false) else {
            return false;
        };
        if !response.status().is_success() {
            return false;
        }
        self.keep_session(&response);
        // The answer is read and dropped: the connection already knows the server.
        let _ = std::io::copy(
            &mut response.into_body().into_reader().take(self.limit as u64),
            &mut std::io::sink(),
        );
        if let Some(initialized) = initialized {
            let session = self.session();
            let _ = self.send_post(&initialized, session.as_deref(), false);
        }
        true
    }

    /// Sends `DELETE` for the session, if there is one.
    fn end_session(&self) {
        let Some(session) = self.session() else {
            return;
        };
        let mut request = self.agent.delete(self.dial.url.as_str());
        for (name, value) in self.common_headers("DELETE", Some(&session)) {
            request = request.header(name, value);
        }
        let _ = request
            .config()
            .timeout_global(Some(CLOSE_WAIT))
            .build()
            .call();
    }
}

/// POSTs one message and handles its answer: a JSON body, an event stream (resumed while its
/// request is unanswered), a challenge, an expired session, or a failure.
fn post(shared: &Shared, out: &Outgoing) {
    let mut heard = Heard::default();
    let mut initialised_again = false;
    loop {
        let session = shared.session();
        let response = match shared.send_post(out, session.as_deref(), false) {
            Ok(response) => response,
            Err(error) => return shared.fail(out, crate::explained(error.to_string())),
        };
        let status = response.status().as_u16();
        match status {
            401 | 403 => {
                if shared.challenged(&response, &mut heard) {
                    continue;
                }
                return shared.fail(out, format!("HTTP status {status}"));
            }
            404 if session.is_some()
                && !initialised_again
                && out.method.as_deref() != Some("initialize") =>
            {
                initialised_again = true;
                if shared.initialize_again() {
                    continue;
                }
                return shared.fail(out, format!("HTTP status {status}"));
            }
            _ => {}
        }
        if response.status().is_success() {
            shared.keep_session(&response);
        }
        if status == 202 || status == 204 {
            return;
        }
        let streams = content_type(&response).as_deref() == Some("text/event-stream");
        if response.status().is_success() && streams {
            let reader: Box<dyn BufRead + Send> =
                Box::new(BufReader::new(response.into_body().into_reader()));
            return read_answer(shared, out, reader);
        }
        // A JSON body, also on an error status (a JSON-RPC error the server explains).
        let success = response.status().is_success();
        let mut body = Vec::new();
        let read = response
            .into_body()
            .into_reader()
            .take(shared.limit as u64 + 1)
            .read_to_end(&mut body);
        if read.is_err() {
            return shared.fail(out, format!("HTTP status {status}, body unreadable"));
        }
        if body.len() > shared.limit {
            let head = &body[..body.len().min(1024)];
            shared.forward_too_long(head);
            return;
        }
        let (answered, _) = if body.trim_ascii().is_empty() {
            (None, true)
        } else {
            shared.forward(&body)
        };
        if out.id.is_some() && answered.as_ref() != out.id.as_ref() {
            let detail = if success {
                "the answer held no response".to_owned()
            } else {
                format!("HTTP status {status}")
            };
            shared.fail(out, detail);
        }
        return;
    }
}

/// What is left until `deadline` and a short grace, so the call is timed out by its connection
/// (a `Timeout`, in words) before its reader gives up; never zero, which ureq would read as no
/// time at all.
fn left(deadline: Instant) -> Duration {
    (deadline + READ_GRACE)
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1))
}

/// The wait before reopening a stream for the `attempt`th time in a row (from 0). The first
/// reopening waits the server's `retry`, as SEP-1699 requires of a client; every later one in a
/// row waits at least [`DEFAULT_RETRY`], doubling each time, so a server that says `retry: 0`
/// cannot make mcpl spin (decision 0124). Never more than [`MAX_RETRY`].
fn backoff(retry: Option<Duration>, attempt: u32) -> Duration {
    let asked = retry.unwrap_or(DEFAULT_RETRY);
    if attempt == 0 {
        return asked.min(MAX_RETRY);
    }
    let base = asked.max(DEFAULT_RETRY);
    base.saturating_mul(1 << (attempt - 1).min(16))
        .min(MAX_RETRY)
}

fn content_type(response: &Response) -> Option<String> {
    let value = response.headers().get("content-type")?.to_str().ok()?;
    Some(
        value
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase(),
    )
}

/// Reads a request's event stream until its response arrives, resuming the stream with
/// `Last-Event-ID` after the server's `retry` when it ends first.
fn read_answer(shared: &Shared, out: &Outgoing, mut reader: Box<dyn BufRead + Send>) {
    let mut end = StreamEnd::default();
    let mut resumes = 0;
    loop {
        let mut answered = false;
        let mut gone = false;
        end.stopped = false;
        read_events(&mut reader, shared.limit, &mut end, |event| {
            let (id, sent) = match event {
                Event::Data(data) => shared.forward(&data),
                Event::TooLong(head) => shared.forward_too_long(&head),
            };
            answered |= id.is_some() && id.as_ref() == out.id.as_ref();
            gone |= !sent;
            if answered || gone {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        if answered || gone || out.id.is_none() {
            return;
        }
        let Some(last) = end.last_event_id.clone() else {
            return shared.fail(
                out,
                "the answer's stream ended before the answer".to_owned(),
            );
        };
        resumes += 1;
        if resumes > MAX_RESUMES || shared.closed.load(Ordering::Relaxed) {
            return shared.fail(
                out,
                "the answer's stream kept ending before the answer".to_owned(),
            );
        }
        let wait = backoff(end.retry, resumes as u32 - 1);
        if out
            .deadline
            .is_some_and(|deadline| Instant::now() + wait >= deadline)
        {
            // The call gives up before the stream could be resumed: nothing more to read.
            return;
        }
        std::thread::sleep(wait);
        let response = match shared.send_get(Some(&last), out.deadline) {
            Ok(response) => response,
            Err(error) => return shared.fail(out, crate::explained(error.to_string())),
        };
        let status = response.status().as_u16();
        if !response.status().is_success()
            || content_type(&response).as_deref() != Some("text/event-stream")
        {
            return shared.fail(
                out,
                format!("resuming the answer's stream: HTTP status {status}"),
            );
        }
        reader = Box::new(BufReader::new(response.into_body().into_reader()));
    }
}

/// The GET stream: what the server sends on its own initiative, until the server refuses it,
/// the connection closes, or it keeps ending without bringing anything.
fn listen(shared: &Shared) {
    // An event on this long-lived stream must still end within the server's timeout.
    let mut end = StreamEnd {
        event_time: Some(shared.timeout),
        ..StreamEnd::default()
    };
    let mut idle = 0;
    let mut reopened = 0;
    while !shared.closed.load(Ordering::Relaxed) && idle < MAX_IDLE_LISTENS {
        let opened = Instant::now();
        let response = match shared.send_get(end.last_event_id.as_deref(), None) {
            Ok(response) => response,
            Err(_) => return,
        };
        if !response.status().is_success()
            || content_type(&response).as_deref() != Some("text/event-stream")
        {
            tracing::debug!(server = %shared.server, status = response.status().as_u16(), "no GET stream");
            return;
        }
        let reader = BufReader::new(response.into_body().into_reader());
        let mut brought = false;
        let mut gone = false;
        end.stopped = false;
        read_events(reader, shared.limit, &mut end, |event| {
            let (_, sent) = match event {
                Event::Data(data) => {
                    brought |= !data.trim_ascii().is_empty();
                    shared.forward(&data)
                }
                Event::TooLong(head) => shared.forward_too_long(&head),
            };
            gone |= !sent;
            if gone {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        if gone {
            return;
        }
        idle = if brought { 0 } else { idle + 1 };
        // A stream that stayed open a while starts the waits again from the least.
        if opened.elapsed() > MAX_RETRY {
            reopened = 0;
        }
        std::thread::sleep(backoff(end.retry, reopened));
        reopened += 1;
    }
}

/// The stateless revision's `subscriptions/listen` stream: what the server sends on it reaches
/// the connection as the GET stream's does, under the same bounds (the message limit, each
/// event within the server's timeout once begun, no deadline for a quiet stream). A stream that
/// ends is opened again after the server's `retry` and the same backoff, since missed
/// notifications are not replayed, each reopening tells the connection the tools may have
/// changed. It stops when the server refuses it (an HTTP error, a JSON-RPC error, no event
/// stream), the connection closes, or it keeps ending at once without bringing anything.
fn subscribe(shared: &Shared, out: &Outgoing) {
    let mut end = StreamEnd {
        event_time: Some(shared.timeout),
        ..StreamEnd::default()
    };
    let mut heard = Heard::default();
    let mut idle = 0;
    let mut reopened = 0;
    let mut opens = 0;
    while !shared.closed.load(Ordering::Relaxed) && idle < MAX_IDLE_LISTENS {
        let opened = Instant::now();
        let session = shared.session();
        let response = match shared.send_post(out, session.as_deref(), true) {
            Ok(response) => response,
            Err(error) => {
                tracing::debug!(server = %shared.server, %error, "subscriptions/listen failed");
                return;
            }
        };
        let status = response.status().as_u16();
        if matches!(status, 401 | 403) && shared.challenged(&response, &mut heard) {
            continue;
        }
        if !response.status().is_success()
            || content_type(&response).as_deref() != Some("text/event-stream")
        {
            tracing::debug!(server = %shared.server, status, "no subscriptions/listen stream");
            return;
        }
        opens += 1;
        if opens > 1 && shared.incoming.send(Incoming::ToolsChanged).is_err() {
            return;
        }
        let reader = BufReader::new(response.into_body().into_reader());
        let mut brought = false;
        let mut gone = false;
        let mut refused = false;
        end.stopped = false;
        read_events(reader, shared.limit, &mut end, |event| {
            let (id, sent) = match event {
                Event::Data(data) => {
                    let (id, sent) = shared.forward(&data);
                    if id.is_some() && id.as_ref() == out.id.as_ref() {
                        // The server ended the subscription: with an error, for good.
                        refused = serde_json::from_slice::<Value>(&data)
                            .is_ok_and(|answer| answer.get("error").is_some());
                    } else {
                        brought |= !data.trim_ascii().is_empty() && !is_acknowledgement(&data);
                    }
                    (id, sent)
                }
                Event::TooLong(head) => shared.forward_too_long(&head),
            };
            gone |= !sent;
            if gone || (id.is_some() && id.as_ref() == out.id.as_ref()) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        if gone || refused {
            return;
        }
        // A stream that stayed open a while was not refused: the waits start again.
        let lasted = opened.elapsed() > MAX_RETRY;
        idle = if brought || lasted { 0 } else { idle + 1 };
        if lasted {
            reopened = 0;
        }
        std::thread::sleep(backoff(end.retry, reopened));
        reopened += 1;
    }
}

/// Whether an event is the subscription's `notifications/subscriptions/acknowledged`.
fn is_acknowledgement(data: &[u8]) -> bool {
    memchr::memmem::find(data, b"notifications/subscriptions/acknowledged").is_some()
}
