//! The few pieces of HTTP/1.1 the demo's dialed servers speak, shared by the well-behaved one
//! (`remote.rs`) and the hostile one (`hostile_remote.rs`): a request head read within a bound,
//! a POSTed JSON body read within a bound, and a whole answer written at once.

use std::io::{self, BufRead, Read, Write};

use serde_json::Value;

/// The longest request head read.
pub(crate) const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The longest request body read.
pub(crate) const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// A request's head.
pub(crate) struct Head {
    pub(crate) method: String,
    /// The request target, query included.
    pub(crate) target: String,
    pub(crate) headers: Vec<(String, String)>,
    /// The head as it was read, for a WebSocket upgrade to replay.
    pub(crate) bytes: Vec<u8>,
}

impl Head {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The target without its query.
    pub(crate) fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }
}

/// Reads a request head, bounded.
pub(crate) fn read_head(reader: &mut impl BufRead) -> io::Result<Head> {
    let mut bytes = Vec::new();
    let mut lines = Vec::new();
    loop {
        let mut line = Vec::new();
        let limit = (MAX_HEAD_BYTES - bytes.len().min(MAX_HEAD_BYTES)) as u64;
        reader.take(limit).read_until(b'\n', &mut line)?;
        if !line.ends_with(b"\n") {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too long or cut",
            ));
        }
        bytes.extend_from_slice(&line);
        let text = String::from_utf8_lossy(&line).trim_end().to_owned();
        if text.is_empty() {
            break;
        }
        lines.push(text);
    }
    let mut first = lines.first().map(|l| l.split(' ')).into_iter().flatten();
    let method = first.next().unwrap_or_default().to_owned();
    let target = first.next().unwrap_or_default().to_owned();
    let headers = lines
        .iter()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Ok(Head {
        method,
        target,
        headers,
        bytes,
    })
}

/// Reads a POSTed JSON message: `Ok(None)` once the request was refused (413 for a body over
/// [`MAX_BODY_BYTES`], 400 for one that is not JSON).
pub(crate) fn read_message(
    head: &Head,
    reader: &mut impl Read,
    writer: &mut impl Write,
) -> io::Result<Option<Value>> {
    let length: usize = head
        .header("content-length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    if length > MAX_BODY_BYTES {
        respond(writer, "413 Payload Too Large", &[], b"")?;
        return Ok(None);
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    match serde_json::from_slice::<Value>(&body) {
        Ok(message) => Ok(Some(message)),
        Err(_) => respond(writer, "400 Bad Request", &[], b"not json").map(|()| None),
    }
}

/// Writes a whole answer and closes the exchange (`Connection: close`).
pub(crate) fn respond(
    writer: &mut impl Write,
    status: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> io::Result<()> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    writer.write_all(out.as_bytes())?;
    writer.write_all(body)?;
    writer.flush()
}
