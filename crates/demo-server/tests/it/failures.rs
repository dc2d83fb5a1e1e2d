//! The tools that misbehave, for a host's failure tests.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::client::Server;

#[test]
fn crash_exits_with_status_3_without_answering() {
    let mut server = Server::start();
    server.send_request("tools/call", json!({"name": "crash", "arguments": {}}));
    assert!(server.output_closes());
    assert_eq!(server.wait().code(), Some(3));
}

#[test]
fn hang_never_answers_but_later_calls_are_served() {
    let mut server = Server::start();
    server.send_request("tools/call", json!({"name": "hang", "arguments": {}}));
    let result = server.call("text", json!({}));
    assert_eq!(result["content"][0]["type"], "text");
    // The hung call's answer never comes: the server ends cleanly with nothing more written.
    assert_eq!(server.close().code(), Some(0));
    assert!(server.output_closes());
}

#[test]
fn garbage_writes_a_line_that_is_not_json_then_goes_on() {
    let mut server = Server::start();
    server.send_request("tools/call", json!({"name": "garbage", "arguments": {}}));
    let line = server.next_line();
    assert_eq!(line, "this is not json {");
    assert!(serde_json::from_str::<serde_json::Value>(&line).is_err());
    assert_eq!(server.call("text", json!({}))["content"][0]["type"], "text");
}

#[test]
fn slow_waits_at_least_as_long_as_asked() {
    let mut server = Server::start();
    let start = Instant::now();
    let result = server.call("slow", json!({"ms": 200}));
    assert!(start.elapsed() >= Duration::from_millis(200));
    assert_eq!(result["content"][0]["text"], "Waited 200 ms.");
}
