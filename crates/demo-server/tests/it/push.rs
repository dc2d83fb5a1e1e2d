//! `push-events` sends the host requests of the server's own; `host-answers` reports the replies.

use serde_json::{Value, json};

use crate::client::{Server, decode, kinds};

/// Reads the four requests `push-events` sends before its answer, and the answer.
fn push_burst(server: &mut Server) -> (Vec<Value>, Value) {
    let id = server.send_request(
        "tools/call",
        json!({"name": "push-events", "arguments": {}}),
    );
    let requests: Vec<Value> = (0..4).map(|_| server.next()).collect();
    let answer = server.next();
    assert_eq!(answer["id"], id);
    (requests, answer)
}

fn is_rfc3339_utc(timestamp: &Value) -> bool {
    let t = timestamp.as_str().unwrap().as_bytes();
    t.len() == 20
        && t[4] == b'-'
        && t[10] == b'T'
        && t[19] == b'Z'
        && t.iter()
            .enumerate()
            .all(|(i, c)| c.is_ascii_digit() || [4, 7, 10, 13, 16, 19].contains(&i))
}

#[test]
fn push_events_sends_its_requests_before_answering() {
    let mut server = Server::start();
    let (requests, answer) = push_burst(&mut server);

    let ids: Vec<&str> = requests.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["push-1", "push-2", "push-3", "channel-1"]);
    let methods: Vec<&str> = requests
        .iter()
        .map(|r| r["method"].as_str().unwrap())
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
    assert!(requests.iter().all(|r| r["jsonrpc"] == "2.0"));

    let event = &requests[0]["params"];
    assert_eq!(event["featureSet"], "demo");
    assert_eq!(event["eventId"], "evt-1");
    assert!(
        is_rfc3339_utc(&event["timestamp"]),
        "{}",
        event["timestamp"]
    );
    assert_eq!(kinds(&event["payload"]), ["text", "image", "resource"]);
    let image = &event["payload"]["content"][1];
    assert_eq!(image["mimeType"], "image/png");
    assert!(decode(&image["data"]).starts_with(b"\x89PNG"));
    let reference = &event["payload"]["content"][2];
    assert_eq!(reference["disposition"], "ref");
    assert!(reference["uri"].as_str().unwrap().starts_with("https://"));

    // The duplicate is the same event again.
    assert_eq!(requests[1]["params"], requests[0]["params"]);

    let empty = &requests[2]["params"];
    assert_eq!(empty["eventId"], "evt-empty");
    assert_eq!(
        empty["payload"]["content"],
        json!([{"type": "text", "text": "   "}])
    );

    let messages = requests[3]["params"]["messages"].as_array().unwrap();
    let message_ids: Vec<&str> = messages
        .iter()
        .map(|m| m["messageId"].as_str().unwrap())
        .collect();
    assert_eq!(message_ids, ["m1", "m2", "m3"]);
    for message in messages {
        assert_eq!(message["channelId"], "demo-channel");
        assert_eq!(message["author"], json!({"id": "u1", "name": "Ada"}));
        assert!(is_rfc3339_utc(&message["timestamp"]));
    }
    assert_eq!(kinds(&messages[0]), ["text"]);
    assert_eq!(
        messages[1]["content"],
        json!([{"type": "text", "text": ""}])
    );
    assert_eq!(kinds(&messages[2]), ["text", "image"]);

    assert_eq!(kinds(&answer["result"]), ["text"]);
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("Sent 4 requests"), "{text}");
    for id in ids {
        assert!(text.contains(id), "{text}");
    }
}

#[test]
fn a_second_burst_takes_new_ids() {
    let mut server = Server::start();
    push_burst(&mut server);
    let (requests, _) = push_burst(&mut server);
    let ids: Vec<&str> = requests.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["push-4", "push-5", "push-6", "channel-2"]);
}

#[test]
fn host_answers_echoes_every_response_in_order() {
    let mut server = Server::start();
    let empty = server.call("host-answers", json!({}));
    assert_eq!(empty["content"][0]["text"], "[]");

    push_burst(&mut server);
    let replies = [
        json!({"id": "push-1", "result": {}}),
        json!({"id": "push-2", "result": {"duplicate": true}}),
        json!({"id": "push-3", "error": {
            "code": -32602, "message": "visibly empty content", "data": {"field": "payload.content"},
        }}),
        json!({"id": "channel-1", "result": {"results": [
            {"messageId": "m1", "accepted": true},
            {"messageId": "m2", "accepted": false, "reason": "empty_content"},
            {"messageId": "m3", "accepted": true},
        ]}}),
    ];
    for reply in &replies {
        let mut message = reply.clone();
        message["jsonrpc"] = "2.0".into();
        server.send(&message);
    }
    let result = server.call("host-answers", json!({}));
    assert_eq!(kinds(&result), ["text"]);
    let echoed: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(echoed, Value::Array(replies.to_vec()));
}
