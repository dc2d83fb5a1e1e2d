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

/// What a callback whose `state` is not the one sent is shown: it is ignored.
const FORGED_PAGE: &str = "<!doctype html><title>mcpl</title><p>This response does not belong to mcpl's authorization request; it was ignored.</p>";

/// What one request head may take to arrive, at most.
const HEAD_WAIT: Duration = Duration::from_secs(5);

/// What one request to the loopback redirect was.
enum Callback {
    /// The authorization response: the callback path with `code` or `error` and the state sent.
    Response(Url),
    /// A callback with `code` or `error` whose `state` is not the one sent: forged, or stale.
    Forged,
    /// Anything else (a favicon).
    Other,
}

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

    /// Waits for a request to the callback path that carries `code` or `error` and `state`,
    /// and gives its whole url. A callback with another `state` (forged by a page the person
    /// visited, or left from an earlier attempt) gets a 400 and is ignored; any other request (a
    /// favicon) gets a 404. The wait goes on until `timeout`.
    pub(crate) fn receive(&self, timeout: Duration, state: &str) -> Result<Url, AuthError> {
        let deadline = Instant::now() + timeout;
        self.listener
            .set_nonblocking(true)
            .map_err(|error| AuthError::Redirect(error.to_string()))?;
        let mut forged = 0u32;
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => match self.answer(stream, state, deadline) {
                    Callback::Response(url) => return Ok(url),
                    Callback::Forged => {
                        forged = forged.saturating_add(1);
                        tracing::warn!(
                            "the loopback redirect ignored a callback whose state is not the one sent"
                        );
                    }
                    Callback::Other => {}
                },
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(error) => return Err(AuthError::Redirect(error.to_string())),
            }
            if Instant::now() >= deadline {
                return Err(match forged {
                    0 => AuthError::Timeout {
                        seconds: timeout.as_secs(),
                    },
                    ignored => AuthError::ForgedCallbacks {
                        seconds: timeout.as_secs(),
                        ignored,
                    },
                });
            }
        }
    }

    /// Reads one request head (until `deadline`, and [`HEAD_WAIT`] at most) and answers it.
    fn answer(&self, mut stream: TcpStream, state: &str, deadline: Instant) -> Callback {
        let wait = deadline
            .saturating_duration_since(Instant::now())
            .clamp(Duration::from_millis(10), HEAD_WAIT);
        if stream.set_nonblocking(false).is_err() || stream.set_read_timeout(Some(wait)).is_err() {
            return Callback::Other;
        }
        let mut head = Vec::new();
        let mut buffer = [0u8; 2048];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD_BYTES {
            match stream.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(read) => head.extend_from_slice(&buffer[..read]),
            }
        }
        let callback = self.classify(&head, state);
        let (status, body) = match callback {
            Callback::Response(_) => ("200 OK", DONE_PAGE),
            Callback::Forged => ("400 Bad Request", FORGED_PAGE),
            Callback::Other => ("404 Not Found", "not found"),
        };
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        callback
    }

    /// What a request head is: the response (its `state` the one sent), a forged callback, or
    /// another request.
    fn classify(&self, head: &[u8], state: &str) -> Callback {
        let Some(line) = head.split(|&b| b == b'\r' || b == b'\n').next() else {
            return Callback::Other;
        };
        let Ok(line) = std::str::from_utf8(line) else {
            return Callback::Other;
        };
        let mut parts = line.split(' ');
        let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
            return Callback::Other;
        };
        let Ok(url) = self.uri.join(target) else {
            return Callback::Other;
        };
        let callback = method == "GET"
            && url.path() == CALLBACK_PATH
            && url
                .query_pairs()
                .any(|(name, _)| name == "code" || name == "error");
        if !callback {
            return Callback::Other;
        }
        // Only the first `state` counts, as the response check reads it.
        let sent = url
            .query_pairs()
            .find(|(name, _)| name == "state")
            .is_some_and(|(_, value)| constant_time_eq(value.as_bytes(), state.as_bytes()));
        if sent {
            Callback::Response(url)
        } else {
            Callback::Forged
        }
    }
}

/// Whether two byte strings are equal, in a time that does not tell how much of them is.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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

#[cfg(test)]
mod tests {
    use super::*;

    /// GETs `target` on the redirect's port and gives the status line.
    fn get(redirect: &Url, target: &str) -> String {
        let port = redirect.port().expect("a port");
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connects");
        write!(stream, "GET {target} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n").expect("sends");
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer.lines().next().unwrap_or_default().to_owned()
    }

    #[test]
    fn a_forged_callback_is_ignored_and_the_real_one_is_used() {
        let redirect = LoopbackRedirect::bind().expect("binds");
        let uri = redirect.uri().clone();
        let person = std::thread::spawn(move || {
            let forged = [
                get(&uri, "/callback?code=attacker&state=guessed"),
                get(&uri, "/callback?code=attacker"),
                get(&uri, "/callback?error=access_denied&state=guessed"),
                get(&uri, "/favicon.ico"),
            ];
            let real = get(&uri, "/callback?code=the-code&state=sent-state");
            (forged, real)
        });
        let url = redirect
            .receive(Duration::from_secs(10), "sent-state")
            .expect("the real response arrives");
        let (forged, real) = person.join().expect("the person's thread");
        assert_eq!(
            url.query_pairs()
                .find(|(k, _)| k == "code")
                .map(|(_, v)| v.into_owned()),
            Some("the-code".to_owned())
        );
        assert!(
            forged[..3].iter().all(|line| line.contains(" 400 ")),
            "{forged:?}"
        );
        assert!(forged[3].contains(" 404 "), "{forged:?}");
        assert!(real.contains(" 200 "), "{real}");
    }

    #[test]
    fn only_forged_callbacks_time_out_with_a_clear_error() {
        let redirect = LoopbackRedirect::bind().expect("binds");
        let uri = redirect.uri().clone();
        let attacker = std::thread::spawn(move || {
            get(&uri, "/callback?code=attacker&state=guessed");
            get(&uri, "/callback?code=attacker&state=sent-statX");
        });
        let error = redirect
            .receive(Duration::from_secs(2), "sent-state")
            .expect_err("no real response");
        attacker.join().expect("the attacker's thread");
        assert!(
            matches!(error, AuthError::ForgedCallbacks { ignored: 2, .. }),
            "{error}"
        );
        let text = error.to_string();
        assert!(text.contains("state"), "{text}");
        assert!(
            !text.contains("attacker") && !text.contains("sent-state"),
            "{text}"
        );
    }
}
