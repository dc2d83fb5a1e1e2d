//! `Remote`: the demo server over Streamable HTTP and a WebSocket on one loopback origin, which
//! also serves the demo's brief.

use std::io::{Read, Write};
use std::net::TcpStream;

use mcpl_demo_server::{BRIEF_PATH, MCP_PATH, Options, Remote};
use serde_json::{Value, json};

/// One HTTP/1.1 exchange: the status, the headers (names lowercased) and the body, de-chunked.
fn exchange(
    remote: &Remote,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let address = remote.origin().trim_start_matches("http://").to_owned();
    let mut stream = TcpStream::connect(&address).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(answer[..split].to_vec()).unwrap();
    let mut body = answer[split + 4..].to_vec();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    if headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v == "chunked")
    {
        let mut plain = Vec::new();
        let mut rest = body.as_slice();
        loop {
            let end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[..end]).unwrap(), 16).unwrap();
            if size == 0 {
                break;
            }
            plain.extend_from_slice(&rest[end + 2..end + 2 + size]);
            rest = &rest[end + 2 + size + 2..];
        }
        body = plain;
    }
    (status, headers, body)
}

fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// The messages of an SSE body.
fn events(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

const SSE: (&str, &str) = ("Accept", "application/json, text/event-stream");

#[test]
fn a_session_over_streamable_http() {
    let remote = Remote::start(Options::default()).unwrap();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                            "params": {"protocolVersion": "2025-11-25"}});
    let (status, headers, body) =
        exchange(&remote, "POST", MCP_PATH, &[SSE], &initialize.to_string());
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-type"), Some("text/event-stream"));
    let session = header(&headers, "mcp-session-id").unwrap().to_owned();
    let answers = events(&body);
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0]["id"], 1);
    assert_eq!(answers[0]["result"]["serverInfo"]["name"], "mcpl-demo");

    // A notification is accepted with 202 and no body.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let with_session = [SSE, ("Mcp-Session-Id", session.as_str())];
    let (status, _, body) = exchange(&remote, "POST", MCP_PATH, &with_session, &note);
    assert_eq!((status, body.len()), (202, 0));

    // The server's own requests come on the stream of the call that sends them, before its answer.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "push-events", "arguments": {}}});
    let (status, _, body) = exchange(&remote, "POST", MCP_PATH, &with_session, &call.to_string());
    assert_eq!(status, 200);
    let messages = events(&body);
    let methods: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["method"].as_str())
        .collect();
    assert_eq!(
        methods,
        [
            "push/event",
            "push/event",
            "push/event",
            "channels/incoming"
        ]
    );
    assert_eq!(messages.last().unwrap()["id"], 2);

    // A session it does not know is 404, none at all 400; DELETE ends one.
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).to_string();
    let unknown = [SSE, ("Mcp-Session-Id", "nope")];
    assert_eq!(exchange(&remote, "POST", MCP_PATH, &unknown, &list).0, 404);
    assert_eq!(exchange(&remote, "POST", MCP_PATH, &[SSE], &list).0, 400);
    assert_eq!(
        exchange(&remote, "DELETE", MCP_PATH, &with_session, "").0,
        200
    );
    assert_eq!(
        exchange(&remote, "POST", MCP_PATH, &with_session, &list).0,
        404
    );
    assert_eq!(exchange(&remote, "GET", MCP_PATH, &[SSE], "").0, 405);
}

#[test]
fn the_origin_serves_the_brief_the_server_links_to() {
    let remote = Remote::start(Options::default()).unwrap();
    let (status, headers, body) = exchange(&remote, "GET", BRIEF_PATH, &[], "");
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-type"), Some("application/pdf"));
    assert!(body.starts_with(b"%PDF-"));
    assert_eq!(exchange(&remote, "GET", "/files/other.pdf", &[], "").0, 404);

    // The server's injection links to that path on this origin.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
    let (_, headers, _) = exchange(&remote, "POST", MCP_PATH, &[SSE], &initialize.to_string());
    let session = header(&headers, "mcp-session-id").unwrap().to_owned();
    let hook =
        json!({"jsonrpc": "2.0", "id": 2, "method": "context/beforeInference", "params": {}});
    let (_, _, body) = exchange(
        &remote,
        "POST",
        MCP_PATH,
        &[SSE, ("Mcp-Session-Id", &session)],
        &hook.to_string(),
    );
    let answer = events(&body).pop().unwrap();
    assert_eq!(
        answer["result"]["contextInjections"][2]["content"][1]["uri"],
        format!("{}{BRIEF_PATH}?token=demo-secret", remote.origin())
    );
}

#[test]
fn a_session_over_a_websocket() {
    let remote = Remote::start(Options::default()).unwrap();
    let (mut socket, _) = tungstenite::connect(remote.ws_url()).unwrap();
    let send = |socket: &mut tungstenite::WebSocket<_>, message: Value| {
        socket
            .send(tungstenite::Message::text(message.to_string()))
            .unwrap();
    };
    let next = |socket: &mut tungstenite::WebSocket<
        tungstenite::stream::MaybeTlsStream<TcpStream>,
    >| loop {
        if let tungstenite::Message::Text(text) = socket.read().unwrap() {
            return serde_json::from_str::<Value>(text.as_str()).unwrap();
        }
    };
    send(
        &mut socket,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                             "params": {"protocolVersion": "2024-11-05"}}),
    );
    let answer = next(&mut socket);
    assert_eq!(answer["result"]["protocolVersion"], "2024-11-05");
    assert!(answer["result"]["capabilities"]["experimental"]["mcpl"]["pushEvents"].is_object());
    send(
        &mut socket,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                             "params": {"name": "push-events", "arguments": {}}}),
    );
    // MCPL's push events arrive as the server's own requests; answering one reaches the server.
    let push = next(&mut socket);
    assert_eq!(push["method"], "push/event");
    send(
        &mut socket,
        json!({"jsonrpc": "2.0", "id": push["id"], "result": {"accepted": true}}),
    );
    loop {
        if next(&mut socket)["id"] == 2 {
            break;
        }
    }
    send(
        &mut socket,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                             "params": {"name": "host-answers", "arguments": {}}}),
    );
    let answers = next(&mut socket);
    assert!(
        answers["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"accepted\":true"),
        "{answers}"
    );
}
