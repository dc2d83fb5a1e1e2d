//! MCPL over a WebSocket: one JSON-RPC message per text frame, both ways, on a synchronous
//! `tungstenite` socket (TLS for `wss://` with the `tls` feature).
//!
//! One thread owns the socket: it reads with a short timeout, handing each message to the
//! connection's bounded queue, and between reads sends what the host queued. A message over the
//! limit is refused by the socket itself (its `max_message_size`), reported once, and ends the
//! connection, as the rest of the frame cannot be skipped.

use std::net::{TcpStream, ToSocketAddrs};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError, sync_channel};
use std::time::{Duration, Instant};

use tungstenite::client::IntoClientRequest;
use tungstenite::protocol::WebSocketConfig;
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

use crate::auth::Heard;
use crate::http::Dial;
use crate::{Incoming, Outgoing, parse_line};

/// How long one read waits before the thread looks at what the host queued.
const POLL: Duration = Duration::from_millis(10);
/// How long closing waits for the socket's close.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// The host's end of a WebSocket connection.
#[derive(Debug)]
pub(crate) struct WsPeer {
    done: Receiver<()>,
}

impl WsPeer {
    /// Waits (a while) for the socket thread to close once the connection's sender is gone.
    pub(crate) fn close(&self) {
        match self.done.recv_timeout(CLOSE_WAIT) {
            Ok(()) | Err(RecvTimeoutError::Disconnected | RecvTimeoutError::Timeout) => {}
        }
    }
}

/// Dials `dial`, completes the WebSocket handshake, and starts the socket's thread.
pub(crate) fn start(
    server: &str,
    dial: &Dial,
    limit: usize,
    timeout: Duration,
    incoming: SyncSender<Incoming>,
    lines: Receiver<Outgoing>,
) -> Result<WsPeer, String> {
    let url = &dial.url;
    let mut heard = Heard::default();
    let mut socket = loop {
        match upgrade(dial, limit, timeout) {
            Ok(socket) => break socket,
            // A 401 or 403 to the upgrade is heard by the authorizer, as over HTTP.
            Err(Upgrade::Refused(response)) => {
                let status = response.status().as_u16();
                let header =
                    |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok());
                let retry = dial.authorizer.as_ref().is_some_and(|authorizer| {
                    heard.retry(
                        authorizer.as_ref(),
                        server,
                        url,
                        status,
                        header("www-authenticate"),
                        header("dpop-nonce"),
                    )
                });
                if !retry {
                    return Err(format!("HTTP error: {}", response.status()));
                }
            }
            Err(Upgrade::Failed(error)) => return Err(error),
        }
    };
    if let Some(stream) = tcp(&mut socket) {
        stream
            .set_read_timeout(Some(POLL))
            .map_err(|e| format!("{e}"))?;
    }
    let (done_sender, done) = sync_channel(1);
    let name = server.to_owned();
    std::thread::Builder::new()
        .name(format!("mcpl-{server}-ws"))
        .spawn(move || {
            run(&name, &mut socket, &incoming, &lines);
            let _ = done_sender.send(());
        })
        .map_err(|e| format!("ws thread: {e}"))?;
    Ok(WsPeer { done })
}

type Socket = WebSocket<MaybeTlsStream<TcpStream>>;

/// Shuts a socket at a deadline unless disarmed first, so no read or write on it can outlast
/// the deadline however the server spaces its bytes.
struct Watchdog {
    disarm: SyncSender<()>,
    fired: Receiver<bool>,
}

impl Watchdog {
    fn arm(stream: &TcpStream, deadline: Instant) -> Watchdog {
        let (disarm, disarmed) = sync_channel(1);
        let (fire, fired) = sync_channel(1);
        let socket = stream.try_clone();
        let spawned = std::thread::Builder::new()
            .name("mcpl-ws-deadline".to_owned())
            .spawn(move || {
                let left = deadline.saturating_duration_since(Instant::now());
                let shut = matches!(disarmed.recv_timeout(left), Err(RecvTimeoutError::Timeout));
                if shut && let Ok(socket) = &socket {
                    let _ = socket.shutdown(std::net::Shutdown::Both);
                }
                let _ = fire.send(shut);
            });
        if spawned.is_err() {
            // No thread: the per-read timeouts still bound each read.
            tracing::warn!("no thread for the WebSocket handshake's deadline");
        }
        Watchdog { disarm, fired }
    }

    /// Stops the watchdog; whether the handshake finished before the deadline.
    fn disarm(self) -> bool {
        let _ = self.disarm.try_send(());
        !self.fired.recv().unwrap_or(false)
    }
}

/// Why an upgrade did not happen.
enum Upgrade {
    /// The server answered the upgrade with this status (a 401 or 403 among them).
    Refused(Box<tungstenite::http::Response<Option<Vec<u8>>>>),
    /// Anything else, in words.
    Failed(String),
}

/// One dial and upgrade request, with the config's headers and the authorizer's.
fn upgrade(dial: &Dial, limit: usize, timeout: Duration) -> Result<Socket, Upgrade> {
    let failed = |e: &dyn std::fmt::Display| Upgrade::Failed(format!("{e}"));
    let url = &dial.url;
    let mut request = url.as_str().into_client_request().map_err(|e| failed(&e))?;
    let authorization = dial
        .authorizer
        .as_ref()
        .map(|a| a.request_headers("GET", url))
        .unwrap_or_default();
    for (name, value) in dial.headers.iter().cloned().chain(authorization) {
        let name = tungstenite::http::HeaderName::try_from(name.as_str())
            .map_err(|_| Upgrade::Failed(format!("header {name} is not a header name")))?;
        let value = tungstenite::http::HeaderValue::try_from(value.as_str())
            .map_err(|_| Upgrade::Failed(format!("header {name}'s value cannot be sent")))?;
        request.headers_mut().insert(name, value);
    }
    let host = url
        .host_str()
        .ok_or(Upgrade::Failed("the url has no host".to_owned()))?;
    let port = url
        .port_or_known_default()
        .ok_or(Upgrade::Failed("the url has no port".to_owned()))?;
    let address = (host, port)
        .to_socket_addrs()
        .map_err(|e| Upgrade::Failed(format!("{host}: {e}")))?
        .next()
        .ok_or_else(|| Upgrade::Failed(format!("{host}: no address")))?;
    let stream = TcpStream::connect_timeout(&address, timeout).map_err(|e| failed(&e))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| failed(&e))?;
    let config = WebSocketConfig::default()
        .max_message_size(Some(limit))
        .max_frame_size(Some(limit));
    // Per-read timeouts alone let a server drip its TLS or upgrade answer a byte at a time for
    // ever: the whole handshake has one deadline, and past it the socket is shut.
    let watchdog = Watchdog::arm(&stream, Instant::now() + timeout);
    let shaken = handshake(request, stream, config);
    if !watchdog.disarm() {
        return Err(Upgrade::Failed(format!(
            "the WebSocket handshake took longer than {} ms",
            timeout.as_millis()
        )));
    }
    match shaken {
        Ok((socket, _)) => Ok(socket),
        Err(tungstenite::Error::Http(response)) => Err(Upgrade::Refused(response)),
        Err(error) => Err(Upgrade::Failed(crate::explained(error.to_string()))),
    }
}

#[cfg(feature = "tls")]
fn handshake(
    request: tungstenite::handshake::client::Request,
    stream: TcpStream,
    config: WebSocketConfig,
) -> Result<(Socket, tungstenite::handshake::client::Response), tungstenite::Error> {
    let connector = tungstenite::Connector::Rustls(
        tls_config().map_err(|e| tungstenite::Error::Io(std::io::Error::other(e)))?,
    );
    tungstenite::client_tls_with_config(request, stream, Some(config), Some(connector)).map_err(
        |e| match e {
            tungstenite::HandshakeError::Failure(error) => error,
            tungstenite::HandshakeError::Interrupted(_) => {
                tungstenite::Error::Io(std::io::ErrorKind::WouldBlock.into())
            }
        },
    )
}

/// The TLS client configuration for `wss://`: mcpl-tls's one stack (the ring provider, named
/// rather than left to rustls to pick, and the trusted roots).
#[cfg(feature = "tls")]
fn tls_config() -> Result<std::sync::Arc<rustls::ClientConfig>, String> {
    mcpl_tls::trust().client_config().map_err(|e| e.to_string())
}

#[cfg(not(feature = "tls"))]
fn handshake(
    request: tungstenite::handshake::client::Request,
    stream: TcpStream,
    config: WebSocketConfig,
) -> Result<(Socket, tungstenite::handshake::client::Response), tungstenite::Error> {
    if request.uri().scheme_str() == Some("wss") {
        return Err(tungstenite::Error::Io(std::io::Error::other(
            "wss:// needs mcpl built with TLS (the `tls` feature)",
        )));
    }
    tungstenite::client::client_with_config(request, MaybeTlsStream::Plain(stream), Some(config))
        .map_err(|e| match e {
            tungstenite::HandshakeError::Failure(error) => error,
            tungstenite::HandshakeError::Interrupted(_) => {
                tungstenite::Error::Io(std::io::ErrorKind::WouldBlock.into())
            }
        })
}

/// The TCP stream under the socket, to set its read timeout.
fn tcp(socket: &mut Socket) -> Option<&mut TcpStream> {
    match socket.get_mut() {
        MaybeTlsStream::Plain(stream) => Some(stream),
        #[cfg(feature = "tls")]
        MaybeTlsStream::Rustls(stream) => Some(stream.get_mut()),
        _ => None,
    }
}

/// Reads and writes until the server closes or the connection drops its sender.
fn run(
    server: &str,
    socket: &mut Socket,
    incoming: &SyncSender<Incoming>,
    lines: &Receiver<Outgoing>,
) {
    loop {
        match socket.read() {
            Ok(Message::Text(text)) => {
                if let Some(message) = parse_line(server, text.as_bytes().trim_ascii())
                    && incoming.send(message).is_err()
                {
                    return;
                }
            }
            Ok(Message::Binary(bytes)) => {
                if let Some(message) = parse_line(server, bytes.trim_ascii())
                    && incoming.send(message).is_err()
                {
                    return;
                }
            }
            Ok(Message::Close(_)) => {
                let _ = incoming.send(Incoming::Closed);
                return;
            }
            Ok(_) => {}
            Err(tungstenite::Error::Io(error))
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(tungstenite::Error::Capacity(_)) => {
                tracing::warn!(server, "a message over the limit; the connection is closed");
                let _ = incoming.send(Incoming::TooLong {
                    id: None,
                    is_request: false,
                });
                let _ = incoming.send(Incoming::Closed);
                return;
            }
            Err(error) => {
                tracing::debug!(server, %error, "the WebSocket ended");
                let _ = incoming.send(Incoming::Closed);
                return;
            }
        }
        loop {
            match lines.try_recv() {
                Ok(out) => {
                    let text = String::from_utf8_lossy(&out.body).into_owned();
                    if let Err(error) = socket.send(Message::text(text))
                        && !would_block(&error)
                    {
                        let _ = incoming.send(Incoming::Closed);
                        return;
                    }
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    let _ = socket.close(None);
                    let _ = socket.flush();
                    return;
                }
            }
        }
        if let Err(error) = socket.flush()
            && !would_block(&error)
        {
            let _ = incoming.send(Incoming::Closed);
            return;
        }
    }
}

fn would_block(error: &tungstenite::Error) -> bool {
    matches!(error, tungstenite::Error::Io(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut))
}
