//! The person's step: the loopback redirect on 127.0.0.1 that receives the authorization
//! response, and the headless way that follows the authorization request's redirect itself.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use url::Url;

use crate::error::AuthError;
use crate::http::Http;

/// The longest request head the loopback redirect reads.
const MAX_HEAD_BYTES: usize = 16 * 1024;

/// The path of the loopback redirect uri.
pub(crate) const CALLBACK_PATH: &str = "/callback";

/// The redirect uri registered in headless mode, where nothing listens: the authorization
/// server's redirect is read, never followed.
pub(crate) const HEADLESS_REDIRECT: &str = "http://127.0.0.1/callback";

/// What the browser shows once the response has arrived.
const DONE_PAGE: &str = "<!doctype html><title>mcpl</title><p>mcpl received the authorization. You may close this tab.</p>";

/// A listener on a free port of 127.0.0.1 waiting for the authorization response.
#[derive(Debug)]
pub(crate) struct LoopbackRedirect {
    listener: TcpListener,
    uri: Url,
}

impl LoopbackRedirect {
    pub(crate) fn bind() -> Result<LoopbackRedirect, AuthError> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(|error| AuthError::Redirect(error.to_string()))?;
        let port = listener
            .local_addr()
            .map_err(|error| AuthError::Redirect(error.to_string()))?
            .port();
        let uri = Url::parse(&format!("http://127.0.0.1:{port}{CALLBACK_PATH}"))
            .map_err(|error| AuthError::Redirect(error.to_string()))?;
        Ok(LoopbackRedirect { listener, uri })
    }

    /// `http://127.0.0.1:<port>/callback`.
    pub(crate) fn uri(&self) -> &Url {
        &self.uri
    }

    /// Waits for a request to the callback path that carries `code` or `error`, and gives its
    /// whole url; any other request (a favicon) gets a 404 and the wait goes on.
    pub(crate) fn receive(&self, timeout: Duration) -> Result<Url, AuthError> {
        let deadline = Instant::now() + timeout;
        self.listener
            .set_nonblocking(true)
            .map_err(|error| AuthError::Redirect(error.to_string()))?;
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    if let Some(url) = self.answer(stream) {
                        return Ok(url);
                    }
                }
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        return Err(AuthError::Timeout {
                            seconds: timeout.as_secs(),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(error) => return Err(AuthError::Redirect(error.to_string())),
            }
        }
    }

    /// Reads one request head; the callback url when it is the response.
    fn answer(&self, mut stream: TcpStream) -> Option<Url> {
        stream.set_nonblocking(false).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        let mut head = Vec::new();
        let mut buffer = [0u8; 2048];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD_BYTES {
            match stream.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(read) => head.extend_from_slice(&buffer[..read]),
            }
        }
        let line = head.split(|&b| b == b'\r' || b == b'\n').next()?;
        let line = std::str::from_utf8(line).ok()?;
        let mut parts = line.split(' ');
        let (method, target) = (parts.next()?, parts.next()?);
        let url = self.uri.join(target).ok();
        let response = url.filter(|url| {
            method == "GET"
                && url.path() == CALLBACK_PATH
                && url
                    .query_pairs()
                    .any(|(name, _)| name == "code" || name == "error")
        });
        let (status, body) = if response.is_some() {
            ("200 OK", DONE_PAGE)
        } else {
            ("404 Not Found", "not found")
        };
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        response
    }
}

/// Headless: GETs the authorization url without following the redirect and gives the url the
/// authorization server redirects to, as a browser would have reached it.
pub(crate) fn follow(http: &Http, authorization: &Url) -> Result<Url, AuthError> {
    let (status, location) = http.get_location(authorization, "the authorization request")?;
    let location = location.filter(|_| (300..400).contains(&status)).ok_or_else(|| {
        AuthError::AuthorizationResponse {
            reason: format!("the authorization endpoint answered {status} without a redirect; a person must authorize (use the loopback redirect)"),
        }
    })?;
    authorization
        .join(&location)
        .map_err(|_| AuthError::AuthorizationResponse {
            reason: "the redirect's location is not a url".to_owned(),
        })
}
