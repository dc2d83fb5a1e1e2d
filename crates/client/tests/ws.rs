//! MCPL over a WebSocket against a real WebSocket server on loopback: the legacy handshake with
//! MCPL's capabilities, the server's own requests mid-call, the bearer token, the limit.

use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpl_client::{
    BearerToken, CallError, Connection, Dial, Launch, Limits, Protocol, RpcError, ServerRequests,
    Transport,
};
use serde_json::{Value, json};
use tungstenite::Message;

const TIMEOUT: Duration = Duration::from_secs(10);

/// What the test server saw: the handshake's Authorization header and each message.
#[derive(Default)]
struct Seen {
    authorization: Option<String>,
    messages: Vec<Value>,
}

/// Serves one WebSocket connection: answers `initialize` and `tools/list`; on `tools/call`
/// first sends a `push/event` request and waits for its answer, then answers the call with
/// `big` bytes of text.
fn serve(big: usize) -> (String, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/mcpl", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Seen::default()));
    let record = Arc::clone(&seen);
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut socket =
            tungstenite::accept_hdr(stream, KeepAuthorization(Arc::clone(&record))).unwrap();
        let send = |socket: &mut tungstenite::WebSocket<_>, value: Value| {
            socket.send(Message::text(value.to_string())).unwrap();
        };
        let mut pending_call = None;
        while let Ok(message) = socket.read() {
            let Message::Text(text) = message else {
                continue;
            };
            let message: Value = serde_json::from_str(text.as_str()).unwrap();
            record.lock().unwrap().messages.push(message.clone());
            let id = message["id"].clone();
            match message["method"].as_str() {
                Some("initialize") => send(
                    &mut socket,
                    json!({"jsonrpc": "2.0", "id": id,
                    "result": {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}}}}),
                ),
                Some("tools/list") => send(
                    &mut socket,
                    json!({"jsonrpc": "2.0", "id": id,
                    "result": {"tools": [{"name": "t"}]}}),
                ),
                Some("tools/call") => {
                    pending_call = Some(id);
                    send(
                        &mut socket,
                        json!({"jsonrpc": "2.0", "id": "push-1",
                        "method": "push/event", "params": {"eventId": "e1",
                        "payload": {"content": [{"type": "text", "text": "hello"}]}}}),
                    );
                }
                None if id == "push-1" => {
                    let call = pending_call.take().unwrap();
                    send(
                        &mut socket,
                        json!({"jsonrpc": "2.0", "id": call,
                        "result": {"content": [{"type": "text", "text": "x".repeat(big)}]}}),
                    );
                }
                _ => {}
            }
        }
    });
    (url, seen)
}

/// Keeps the upgrade request's `Authorization` header.
struct KeepAuthorization(Arc<Mutex<Seen>>);

impl tungstenite::handshake::server::Callback for KeepAuthorization {
    fn on_request(
        self,
        request: &tungstenite::handshake::server::Request,
        response: tungstenite::handshake::server::Response,
    ) -> Result<
        tungstenite::handshake::server::Response,
        tungstenite::handshake::server::ErrorResponse,
    > {
        self.0.lock().unwrap().authorization = request
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        Ok(response)
    }
}

/// A host that accepts push events and records them.
#[derive(Default)]
struct Pushes(Vec<Value>);

impl ServerRequests for Pushes {
    fn answer(&mut self, _: &str, method: &str, params: &Value) -> Result<Value, RpcError> {
        if method != "push/event" {
            return Err(RpcError::method_not_found(method));
        }
        self.0.push(params.clone());
        Ok(json!({"accepted": true}))
    }
}

fn launch(url: &str, token: Option<&str>) -> Launch {
    let url = url::Url::parse(url).unwrap();
    let authorizer =
        token.map(|t| Arc::new(BearerToken::new(&url, t)) as Arc<dyn mcpl_client::Authorizer>);
    let dial = Dial::new(url).with_authorizer(authorizer);
    Launch::new("mcpl", Transport::Ws(dial)).with_protocol(Protocol::Legacy)
}

#[test]
fn mcpl_runs_over_a_websocket_as_over_stdio() {
    let (url, seen) = serve(10);
    let mut host = Pushes::default();
    let mut connection = Connection::start(
        &launch(&url, Some("s3cret")),
        Limits::with_timeout(TIMEOUT),
        &mut host,
    )
    .unwrap();
    assert_eq!(connection.protocol_version(), "2024-11-05");
    let tools = connection
        .request("tools/list", json!({}), TIMEOUT, &mut host)
        .unwrap();
    assert_eq!(tools["tools"][0]["name"], "t");
    let result = connection
        .request("tools/call", json!({"name": "t"}), TIMEOUT, &mut host)
        .unwrap();
    assert_eq!(result["content"][0]["text"], "x".repeat(10));
    assert_eq!(
        host.0.len(),
        1,
        "the push event arrived mid-call and was answered"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.authorization.as_deref(), Some("Bearer s3cret"));
    let initialize = &seen.messages[0];
    assert!(
        initialize["params"]["capabilities"]["experimental"]["mcpl"]["pushEvents"].is_object(),
        "ws is the legacy family, with MCPL: {initialize}"
    );
    assert_eq!(seen.messages[1]["method"], "notifications/initialized");
}

#[test]
fn a_message_over_the_limit_fails_the_call_and_ends_the_socket() {
    let (url, _) = serve(100_000);
    let mut host = Pushes::default();
    let limits = Limits::with_timeout(TIMEOUT).with_max_message_bytes(4096);
    let mut connection = Connection::start(&launch(&url, None), limits, &mut host).unwrap();
    let error = connection
        .request("tools/call", json!({"name": "t"}), TIMEOUT, &mut host)
        .unwrap_err();
    assert!(
        matches!(error, CallError::TooLong { limit: 4096, .. }),
        "{error}"
    );
}

/// A `wss://` server on loopback with a self-signed certificate, for one connection: it
/// completes the TLS handshake if the client does, then the WebSocket upgrade. Returns its url.
#[cfg(feature = "tls")]
fn serve_tls() -> String {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = vec![
        CertificateDer::from_pem_slice(include_bytes!("fixtures/self-signed.cert.pem")).unwrap(),
    ];
    let key =
        PrivateKeyDer::from_pem_slice(include_bytes!("fixtures/self-signed.key.pem")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("wss://{}/mcpl", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let connection = rustls::ServerConnection::new(config).unwrap();
        let tls = rustls::StreamOwned::new(connection, stream);
        // The client refuses the certificate, so this fails; the test reads the client's error.
        let _ = tungstenite::accept(tls);
    });
    url
}

#[cfg(feature = "tls")]
#[test]
fn wss_dials_with_its_own_tls_provider_and_refuses_an_unknown_certificate() {
    // rustls is built with two crypto providers in this tree; a connector that left the choice
    // to rustls panicked on every wss:// dial. The certificate is self-signed: refused, in words.
    let url = serve_tls();
    let mut host = Pushes::default();
    let error = match Connection::start(
        &launch(&url, None),
        Limits::with_timeout(TIMEOUT),
        &mut host,
    ) {
        Ok(_) => panic!("a self-signed certificate was trusted"),
        Err(error) => error.to_string(),
    };
    assert!(error.contains("certificate"), "{error}");
}

#[test]
fn a_server_that_drips_its_upgrade_answer_fails_the_start_at_the_timeout() {
    // Before, each read had the timeout but the handshake did not: one byte a second held the
    // start for as long as the server liked.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/mcpl", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let mut request = [0; 4096];
        let _ = std::io::Read::read(&mut stream, &mut request);
        for byte in b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
            .iter()
            .cycle()
        {
            if std::io::Write::write_all(&mut stream, &[*byte]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let started = std::time::Instant::now();
    let error = Connection::start(
        &launch(&url, None),
        Limits::with_timeout(Duration::from_millis(800)),
        &mut mcpl_client::RefuseAll,
    )
    .unwrap_err();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "the start took {took:?}");
    assert!(
        error.to_string().contains("handshake took longer"),
        "{error}"
    );
}

/// Refuses an upgrade without `Authorization: Bearer <token>` with a 401 and a challenge, as
/// an OAuth-protected server does.
struct DemandBearer {
    token: &'static str,
    seen: Arc<Mutex<Vec<Option<String>>>>,
}

impl tungstenite::handshake::server::Callback for DemandBearer {
    fn on_request(
        self,
        request: &tungstenite::handshake::server::Request,
        response: tungstenite::handshake::server::Response,
    ) -> Result<
        tungstenite::handshake::server::Response,
        tungstenite::handshake::server::ErrorResponse,
    > {
        let authorization = request
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        self.seen.lock().unwrap().push(authorization.clone());
        if authorization.as_deref() == Some(&format!("Bearer {}", self.token)) {
            return Ok(response);
        }
        let refused = tungstenite::http::Response::builder()
            .status(401)
            .header(
                "www-authenticate",
                r#"Bearer resource_metadata="http://127.0.0.1:9/prm""#,
            )
            .body(Some("unauthorized".to_owned()))
            .unwrap();
        Err(refused)
    }
}

/// A WebSocket server on loopback demanding `token`: each connection's upgrade is checked, an
/// accepted one answers `initialize`. Returns its url and each upgrade's Authorization header.
fn serve_demanding(token: &'static str) -> (String, Arc<Mutex<Vec<Option<String>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/mcpl", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let callback = DemandBearer {
                token,
                seen: Arc::clone(&record),
            };
            let Ok(mut socket) = tungstenite::accept_hdr(stream, callback) else {
                continue;
            };
            std::thread::spawn(move || {
                while let Ok(message) = socket.read() {
                    let Message::Text(text) = message else {
                        continue;
                    };
                    let message: Value = serde_json::from_str(text.as_str()).unwrap();
                    if message["method"] == "initialize" {
                        let answer = json!({"jsonrpc": "2.0", "id": message["id"],
                            "result": {"protocolVersion": "2024-11-05", "capabilities": {}}});
                        socket.send(Message::text(answer.to_string())).unwrap();
                    }
                }
            });
        }
    });
    (url, seen)
}

/// An authorizer with no token until challenged; then `granted`, when it has one. Counts the
/// challenges it heard.
struct Granting {
    granted: Option<&'static str>,
    token: Mutex<Option<&'static str>>,
    challenges: Mutex<Vec<(u16, Option<String>)>>,
}

impl mcpl_client::Authorizer for Granting {
    fn authorization(&self, _: &url::Url) -> Option<String> {
        self.token.lock().unwrap().map(|t| format!("Bearer {t}"))
    }

    fn on_challenge(
        &self,
        _: &url::Url,
        status: u16,
        www_authenticate: Option<&str>,
    ) -> Result<bool, Box<dyn std::error::Error + Send + Sync>> {
        self.challenges
            .lock()
            .unwrap()
            .push((status, www_authenticate.map(str::to_owned)));
        *self.token.lock().unwrap() = self.granted;
        Ok(self.granted.is_some())
    }
}

fn launch_with(url: &str, authorizer: Arc<Granting>) -> Launch {
    let dial = Dial::new(url::Url::parse(url).unwrap())
        .with_authorizer(Some(authorizer as Arc<dyn mcpl_client::Authorizer>));
    Launch::new("mcpl", Transport::Ws(dial)).with_protocol(Protocol::Legacy)
}

#[test]
fn a_401_to_the_upgrade_is_heard_by_the_authorizer_and_the_upgrade_retried() {
    let (url, seen) = serve_demanding("fresh-token");
    let authorizer = Arc::new(Granting {
        granted: Some("fresh-token"),
        token: Mutex::new(None),
        challenges: Mutex::new(Vec::new()),
    });
    let mut host = Pushes::default();
    let connection = Connection::start(
        &launch_with(&url, Arc::clone(&authorizer)),
        Limits::with_timeout(TIMEOUT),
        &mut host,
    )
    .unwrap();
    assert_eq!(connection.protocol_version(), "2024-11-05");
    let challenges = authorizer.challenges.lock().unwrap();
    assert_eq!(challenges.len(), 1);
    assert_eq!(challenges[0].0, 401);
    assert!(
        challenges[0]
            .1
            .as_deref()
            .unwrap()
            .contains("resource_metadata"),
        "the challenge reached the authorizer: {challenges:?}"
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [None, Some("Bearer fresh-token".to_owned())]
    );
}

#[test]
fn an_upgrade_the_authorizer_cannot_help_fails_after_one_challenge() {
    let (url, seen) = serve_demanding("fresh-token");
    let authorizer = Arc::new(Granting {
        granted: None,
        token: Mutex::new(None),
        challenges: Mutex::new(Vec::new()),
    });
    let mut host = Pushes::default();
    let error = match Connection::start(
        &launch_with(&url, Arc::clone(&authorizer)),
        Limits::with_timeout(TIMEOUT),
        &mut host,
    ) {
        Ok(_) => panic!("connected without a token"),
        Err(error) => error.to_string(),
    };
    assert!(error.contains("401"), "{error}");
    assert_eq!(authorizer.challenges.lock().unwrap().len(), 1);
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "no retry without a new token"
    );
}
