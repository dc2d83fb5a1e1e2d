//! The stdio transport's cancellation: a call that times out is cancelled at its server with
//! `notifications/cancelled`, as over Streamable HTTP and WebSocket (issue 29).

#![cfg(unix)]

use std::time::Duration;

use mcpl_client::{CallError, Connection, Launch, Limits, RefuseAll};
use serde_json::{Value, json};

#[test]
fn a_timed_out_call_is_cancelled_at_its_stdio_server() {
    let dir = std::env::temp_dir().join(format!("mcpl-client-stdio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("input.jsonl");
    // Answers `initialize` (id 1), then writes down everything else it is sent, and never
    // answers again.
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}}, "serverInfo": {"name": "quiet", "version": "1"}}});
    let script = format!("read -r line; echo '{answer}'; cat > \"$0\"");
    let launch = Launch::stdio(
        "quiet",
        "sh",
        vec!["-c".to_owned(), script, log.display().to_string()],
    );
    let mut connection = Connection::start(
        &launch,
        Limits::with_timeout(Duration::from_secs(5)),
        &mut RefuseAll,
    )
    .unwrap();
    let error = connection
        .request(
            "tools/call",
            json!({"name": "slow"}),
            Duration::from_millis(200),
            &mut RefuseAll,
        )
        .unwrap_err();
    assert!(matches!(error, CallError::Timeout { .. }), "{error}");
    drop(connection);
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let call = lines.iter().find(|m| m["method"] == "tools/call").unwrap();
    let cancelled = lines
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .unwrap();
    assert_eq!(cancelled["params"]["requestId"], call["id"]);
    assert_eq!(cancelled["params"]["reason"], "timed out after 200 ms");
    let _ = std::fs::remove_dir_all(&dir);
}
