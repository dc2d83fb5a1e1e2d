//! The Streamable HTTP transport against a real HTTP server on loopback: JSON and event-stream
//! answers, the session, the headers, resumption, an expired session, challenges, failures,
//! and revision 2026-07-28's discovery, `_meta` and input rounds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpl_client::{
    Authorizer, CallError, Connection, Dial, Launch, Limits, Protocol, RefuseAll, Transport,
    start_all,
};
use mcpl_loopback::{Answer, Loopback, Request};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(10);

fn body(request: &Request) -> Value {
    serde_json::from_slice(&request.body).unwrap_or(Value::Null)
}

fn json_answer(value: Value) -> Answer {
    Answer::bytes("application/json", value.to_string().into_bytes())
}

fn result(request: &Value, result: Value) -> Answer {
    json_answer(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}))
}

fn accepted() -> Answer {
    Answer {
        status: 202,
        headers: Vec::new(),
        body: mcpl_loopback::Body::Bytes(Arc::from(&b""[..])),
    }
}

fn status(code: u16) -> Answer {
    Answer {
        status: code,
        headers: Vec::new(),
        body: mcpl_loopback::Body::Bytes(Arc::from(&b""[..])),
    }
}

fn sse(events: &str) -> Answer {
    Answer::bytes("text/event-stream", events.as_bytes().to_vec())
}

/// A 2025-11-25 server: `server/discover` unknown, `initialize` opening session `s1`.
fn legacy(request: &Request, message: &Value) -> Option<Answer> {
    match message["method"].as_str() {
        Some("server/discover") => Some(json_answer(json!({"jsonrpc": "2.0", "id": message["id"],
            "error": {"code": -32601, "message": "Method not found"}}))),
        Some("initialize") => Some(
            result(
                message,
                json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "t", "version": "1"}}),
            )
            .with_header("Mcp-Session-Id", "s1"),
        ),
        Some("notifications/initialized") => Some(accepted()),
        _ if request.method == "GET" => Some(status(405)),
        _ if request.method == "DELETE" => Some(status(200)),
        _ => None,
    }
}

fn launch(url: &str, authorizer: Option<Arc<dyn Authorizer>>) -> Launch {
    let dial = Dial::new(url::Url::parse(url).unwrap())
        .with_headers(vec![("X-Team".to_owned(), "blue".to_owned())])
        .with_authorizer(authorizer);
    Launch::new("remote", Transport::Http(dial)).with_protocol(Protocol::Modern)
}

fn limits() -> Limits {
    Limits::with_timeout(TIMEOUT)
}

#[test]
fn a_legacy_server_gets_the_session_headers_and_a_delete() {
    let server = Loopback::start(|request| {
        let message = body(request);
        legacy(request, &message).unwrap_or_else(|| result(&message, json!({"tools": []})))
    })
    .unwrap();
    let url = format!("{}/mcp", server.origin());
    let mut connection = Connection::start(&launch(&url, None), limits(), &mut RefuseAll).unwrap();
    assert_eq!(connection.protocol_version(), "2025-11-25");
    assert!(!connection.is_stateless());
    let tools = connection
        .request("tools/list", json!({}), TIMEOUT, &mut RefuseAll)
        .unwrap();
    assert_eq!(tools, json!({"tools": []}));
    drop(connection);
    let requests = server.requests();
    let posts: Vec<&Request> = requests.iter().filter(|r| r.method == "POST").collect();
    let methods: Vec<String> = posts
        .iter()
        .map(|r| body(r)["method"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        methods,
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list"
        ]
    );
    for post in &posts {
        assert_eq!(
            post.header("accept"),
            Some("application/json, text/event-stream")
        );
        assert_eq!(post.header("content-type"), Some("application/json"));
        assert_eq!(post.header("x-team"), Some("blue"));
        let method = body(post)["method"].as_str().unwrap().to_owned();
        assert_eq!(post.header("mcp-method"), Some(method.as_str()));
    }
    // The initialize answer opened the session; everything after carries it and the revision.
    assert_eq!(posts[1].header("mcp-session-id"), None);
    for post in &posts[2..] {
        assert_eq!(post.header("mcp-session-id"), Some("s1"));
        assert_eq!(post.header("mcp-protocol-version"), Some("2025-11-25"));
    }
    let delete = requests
        .iter()
        .find(|r| r.method == "DELETE")
        .expect("a DELETE on close");
    assert_eq!(delete.header("mcp-session-id"), Some("s1"));
}

#[test]
fn a_streamed_answer_carries_the_servers_own_requests_and_they_are_answered() {
    let server = Loopback::start(|request| {
        let message = body(request);
        if let Some(answer) = legacy(request, &message) {
            return answer;
        }
        if message["method"] == "tools/call" {
            let id = &message["id"];
            return sse(&format!(
                "id: 1\ndata: {}\n\ndata: {}\n\ndata: {}\n\n",
                json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}),
                json!({"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create",
                    "params": {"message": "m", "requestedSchema": {"type": "object",
                        "properties": {"name": {"type": "string", "default": "Ada"}}}}}),
                json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}}),
            ));
        }
        accepted()
    })
    .unwrap();
    let mut connection =
        Connection::start(&launch(server.origin(), None), limits(), &mut RefuseAll).unwrap();
    let answer = connection
        .request(
            "tools/call",
            json!({"name": "ask", "arguments": {}}),
            TIMEOUT,
            &mut RefuseAll,
        )
        .unwrap();
    assert_eq!(answer, json!({"content": []}));
    // The answer to the elicitation went back as a POST of its own.
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        let answered = server.requests().iter().any(|r| {
            body(r)["id"] == "srv-1"
                && body(r)["result"] == json!({"action": "accept", "content": {"name": "Ada"}})
        });
        if answered {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the elicitation was not answered"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let call = server
        .requests()
        .into_iter()
        .find(|r| body(r)["method"] == "tools/call")
        .unwrap();
    assert_eq!(call.header("mcp-name"), Some("ask"));
}

#[test]
fn a_broken_stream_is_resumed_after_its_retry_with_the_last_event_id() {
    let pending: Arc<Mutex<Option<Value>>> = Arc::default();
    let in_server = Arc::clone(&pending);
    let server = Loopback::start(move |request| {
        let message = body(request);
        if request.method == "GET" {
            // The GET stream opened after the handshake gets nothing; the resumption, the answer.
            if request.header("last-event-id") != Some("e-7") {
                return status(405);
            }
            return match in_server.lock().unwrap().take() {
                Some(id) => sse(&format!(
                    "id: e-8\ndata: {}\n\n",
                    json!({"jsonrpc": "2.0", "id": id, "result": {"content": ["resumed"]}})
                )),
                _ => status(405),
            };
        }
        if let Some(answer) = legacy(request, &message) {
            return answer;
        }
        *in_server.lock().unwrap() = Some(message["id"].clone());
        sse("id: e-7\nretry: 100\ndata: \n\n")
    })
    .unwrap();
    let mut connection =
        Connection::start(&launch(server.origin(), None), limits(), &mut RefuseAll).unwrap();
    let answer = connection
        .request(
            "tools/call",
            json!({"name": "slow"}),
            TIMEOUT,
            &mut RefuseAll,
        )
        .unwrap();
    assert_eq!(answer, json!({"content": ["resumed"]}));
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.method == "GET" && r.header("last-event-id") == Some("e-7"))
    );
}

#[test]
fn an_expired_session_is_initialised_again() {
    let initializations = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&initializations);
    let server = Loopback::start(move |request| {
        let message = body(request);
        if message["method"] == "initialize" {
            let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
            return result(
                &message,
                json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
            )
            .with_header("Mcp-Session-Id", &format!("s{n}"));
        }
        if let Some(answer) = legacy(request, &message) {
            return answer;
        }
        // Session s1 is forgotten; s2 works.
        match request.header("mcp-session-id") {
            Some("s2") => result(&message, json!({"tools": [{"name": "t"}]})),
            _ => status(404),
        }
    })
    .unwrap();
    let mut connection =
        Connection::start(&launch(server.origin(), None), limits(), &mut RefuseAll).unwrap();
    let tools = connection
        .request("tools/list", json!({}), TIMEOUT, &mut RefuseAll)
        .unwrap();
    assert_eq!(tools["tools"][0]["name"], "t");
    assert_eq!(initializations.load(Ordering::SeqCst), 2);
}

/// An authorizer that has a token only after the first challenge.
#[derive(Default)]
struct Renewing {
    challenges: Mutex<Vec<(u16, Option<String>)>>,
}

impl Authorizer for Renewing {
    fn authorization(&self, _: &url::Url) -> Option<String> {
        (!self.challenges.lock().unwrap().is_empty()).then(|| "Bearer fresh".to_owned())
    }

    fn on_challenge(
        &self,
        _: &url::Url,
        status: u16,
        www_authenticate: Option<&str>,
    ) -> Result<bool, Box<dyn std::error::Error + Send + Sync>> {
        let mut challenges = self.challenges.lock().unwrap();
        challenges.push((status, www_authenticate.map(str::to_owned)));
        Ok(challenges.len() == 1)
    }
}

#[test]
fn a_challenge_goes_to_the_authorizer_and_the_request_is_sent_once_more() {
    let server = Loopback::start(|request| {
        if request.header("authorization") != Some("Bearer fresh") {
            return status(401).with_header("WWW-Authenticate", "Bearer realm=\"mcp\"");
        }
        let message = body(request);
        legacy(request, &message).unwrap_or_else(|| result(&message, json!({})))
    })
    .unwrap();
    let authorizer = Arc::new(Renewing::default());
    let connection = Connection::start(
        &launch(server.origin(), Some(authorizer.clone())),
        limits(),
        &mut RefuseAll,
    )
    .unwrap();
    assert_eq!(connection.protocol_version(), "2025-11-25");
    assert_eq!(
        authorizer.challenges.lock().unwrap().as_slice(),
        [(401, Some("Bearer realm=\"mcp\"".to_owned()))],
        "one challenge, then the new header was used"
    );
}

#[test]
fn a_refused_challenge_and_a_server_error_fail_the_call_with_the_status() {
    let server = Loopback::start(|request| {
        let message = body(request);
        if let Some(answer) = legacy(request, &message) {
            return answer;
        }
        match message["method"].as_str() {
            Some("tools/list") => status(403),
            _ => status(500),
        }
    })
    .unwrap();
    let mut connection =
        Connection::start(&launch(server.origin(), None), limits(), &mut RefuseAll).unwrap();
    let error = connection
        .request("tools/list", json!({}), TIMEOUT, &mut RefuseAll)
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "server remote failed tools/list over HTTP: HTTP status 403"
    );
    let error = connection
        .request("tools/call", json!({"name": "x"}), TIMEOUT, &mut RefuseAll)
        .unwrap_err();
    assert!(matches!(error, CallError::Http { .. }), "{error}");
}

#[test]
fn an_answer_over_the_message_limit_fails_its_call() {
    let server = Loopback::start(|request| {
        let message = body(request);
        legacy(request, &message)
            .unwrap_or_else(|| result(&message, json!({"text": "x".repeat(10_000)})))
    })
    .unwrap();
    let limits = Limits::with_timeout(TIMEOUT).with_max_message_bytes(2048);
    let mut connection =
        Connection::start(&launch(server.origin(), None), limits, &mut RefuseAll).unwrap();
    let error = connection
        .request("tools/list", json!({}), TIMEOUT, &mut RefuseAll)
        .unwrap_err();
    assert!(
        matches!(error, CallError::TooLong { limit: 2048, .. }),
        "{error}"
    );
}

#[test]
fn a_stateless_server_gets_meta_on_every_request_and_input_rounds_are_answered() {
    let server = Loopback::start(|request| {
        let message = body(request);
        let meta = &message["params"]["_meta"];
        if meta["io.modelcontextprotocol/protocolVersion"] != "2026-07-28"
            || request.header("mcp-protocol-version") != Some("2026-07-28")
        {
            return json_answer(json!({"jsonrpc": "2.0", "id": message["id"],
                "error": {"code": -32022, "message": "unsupported",
                          "data": {"supported": ["2026-07-28"]}}}));
        }
        match message["method"].as_str() {
            Some("server/discover") => result(
                &message,
                json!({
                "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "s", "version": "1"}, "resultType": "complete"}),
            ),
            Some("tools/call") if message["params"].get("inputResponses").is_none() => result(
                &message,
                json!({"resultType": "input_required",
                    "inputRequests": {"ok": {"method": "elicitation/create", "params": {
                        "message": "sure?", "requestedSchema": {"type": "object",
                        "properties": {"sure": {"type": "boolean", "default": true}},
                        "required": ["sure"]}}}},
                    "requestState": "opaque-1"}),
            ),
            Some("tools/call") => result(
                &message,
                json!({"resultType": "complete",
                "content": [], "echo": message["params"]}),
            ),
            _ => result(&message, json!({})),
        }
    })
    .unwrap();
    let mut connection =
        Connection::start(&launch(server.origin(), None), limits(), &mut RefuseAll).unwrap();
    assert!(connection.is_stateless());
    assert_eq!(connection.protocol_version(), "2026-07-28");
    let answer = connection
        .request(
            "tools/call",
            json!({"name": "t", "arguments": {}}),
            TIMEOUT,
            &mut RefuseAll,
        )
        .unwrap();
    assert_eq!(
        answer["echo"]["inputResponses"],
        json!({"ok": {"action": "accept", "content": {"sure": true}}})
    );
    assert_eq!(answer["echo"]["requestState"], "opaque-1");
    let calls: Vec<Value> = server
        .requests()
        .iter()
        .map(body)
        .filter(|m| m["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 2);
    assert_ne!(calls[0]["id"], calls[1]["id"], "the retry is a new request");
    let meta = &calls[0]["params"]["_meta"];
    assert_eq!(meta["io.modelcontextprotocol/clientInfo"]["name"], "mcpl");
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/skills": {}, "io.modelcontextprotocol/tasks": {}}}),
        "no roots capability without roots; the skills and tasks extensions declared"
    );
    assert!(
        server
            .requests()
            .iter()
            .all(|r| body(r)["method"] != "initialize"),
        "no handshake in the stateless revision"
    );
}

#[test]
fn a_timed_out_call_closes_its_connection_at_its_deadline() {
    // Before, a call that timed out kept its thread reading the answer for as long as the
    // server sent it: threads, sockets and buffers piled up with each timed-out call.
    let server = Loopback::start(move |request| {
        let message = body(request);
        if let Some(answer) = legacy(request, &message) {
            return answer;
        }
        if message.get("id").is_none() {
            return accepted();
        }
        // An answer that never ends: a comment line every 10 ms.
        Answer::chunks(
            "text/event-stream",
            &b": still working\n"[..],
            u64::MAX,
            Duration::from_millis(10),
        )
    })
    .unwrap();
    let mut connection =
        Connection::start(&launch(server.origin(), None), limits(), &mut RefuseAll).unwrap();
    for _ in 0..4 {
        let error = connection
            .request(
                "tools/call",
                json!({"name": "endless"}),
                Duration::from_millis(300),
                &mut RefuseAll,
            )
            .unwrap_err();
        assert!(matches!(error, CallError::Timeout { .. }), "{error}");
    }
    // Each stream is closed by the client shortly after its call's deadline.
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while server.streams().len() < 4 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let streams = server.streams();
    assert_eq!(streams.len(), 4, "{streams:?}");
    assert!(streams.iter().all(|s| s.client_closed), "{streams:?}");
    // And the server was told each call is cancelled, with the call's id (the last notice may
    // still be on its way).
    let sent = |method: &str| {
        let requests = server.requests();
        requests
            .iter()
            .filter(|r| body(r)["method"] == method)
            .count()
    };
    while sent("notifications/cancelled") < 4 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let calls: Vec<Value> = server.requests().iter().map(body).collect();
    let called: Vec<&Value> = calls
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .map(|m| &m["id"])
        .collect();
    let cancelled: Vec<&Value> = calls
        .iter()
        .filter(|m| m["method"] == "notifications/cancelled")
        .map(|m| &m["params"]["requestId"])
        .collect();
    assert_eq!(called, cancelled);
    assert!(
        calls
            .iter()
            .any(|m| m["params"]["reason"] == "timed out after 300 ms")
    );
}

#[test]
fn a_get_stream_that_says_retry_zero_is_reopened_with_growing_waits() {
    let server = Loopback::start(move |request| {
        let message = body(request);
        if request.method == "GET" {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                              "params": {"level": "info", "data": "tick"}});
            return sse(&format!("retry: 0\ndata: {note}\n\n"));
        }
        legacy(request, &message).unwrap_or_else(|| status(500))
    })
    .unwrap();
    let mut connection =
        Connection::start(&launch(server.origin(), None), limits(), &mut RefuseAll).unwrap();
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_millis(3500) {
        connection.pump(&mut RefuseAll);
        std::thread::sleep(Duration::from_millis(20));
    }
    // Opened at once, again at once (the first reopening honours `retry: 0`), then after 1 s
    // and 2 s more: four GETs in 3.5 s, never thousands.
    let gets = server
        .requests()
        .iter()
        .filter(|r| r.method == "GET")
        .count();
    assert!((3..=5).contains(&gets), "{gets} GETs in 3.5 s");
}

#[test]
fn a_server_that_keeps_asking_for_input_fails_the_call_in_words() {
    // Before, after the last round the unfinished result was taken for the answer: the model
    // got an empty successful result.
    let server = Loopback::start(|request| {
        let message = body(request);
        match message["method"].as_str() {
            Some("server/discover") => result(
                &message,
                json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                       "serverInfo": {"name": "s", "version": "1"}, "resultType": "complete"}),
            ),
            Some("tools/call") => result(
                &message,
                json!({"resultType": "input_required",
                    "inputRequests": {"ok": {"method": "elicitation/create", "params": {
                        "message": "again?", "requestedSchema": {"type": "object",
                        "properties": {"again": {"type": "boolean", "default": true}}}}}}}),
            ),
            _ => result(&message, json!({})),
        }
    })
    .unwrap();
    let mut connection =
        Connection::start(&launch(server.origin(), None), limits(), &mut RefuseAll).unwrap();
    let error = connection
        .request(
            "tools/call",
            json!({"name": "t", "arguments": {}}),
            TIMEOUT,
            &mut RefuseAll,
        )
        .unwrap_err();
    assert!(matches!(error, CallError::InputRounds { .. }), "{error}");
    assert_eq!(
        error.to_string(),
        "server remote still asked for input after 8 rounds of tools/call; the call was given up"
    );
    let calls = server
        .requests()
        .iter()
        .filter(|r| body(r)["method"] == "tools/call")
        .count();
    assert_eq!(calls, 1 + mcpl_client::MAX_INPUT_ROUNDS);
}

/// A stateless server declaring `capabilities`, whose `skills/list` pages are `skill-1`,
/// `skill-2`, then `skill-1` again (a repeated cursor).
fn skills_server(capabilities: Value) -> Loopback {
    Loopback::start(move |request| {
        let message = body(request);
        match message["method"].as_str() {
            Some("server/discover") => result(
                &message,
                json!({"supportedVersions": ["2026-07-28"], "capabilities": capabilities,
                       "serverInfo": {"name": "s", "version": "1"}, "resultType": "complete"}),
            ),
            Some("tools/list") => result(&message, json!({"tools": []})),
            Some("skills/list") => {
                let page = message["params"]["cursor"].as_str().unwrap_or("skill-0");
                let next = if page == "skill-0" {
                    "skill-1"
                } else {
                    "skill-2"
                };
                let next = if page == "skill-2" { "skill-1" } else { next };
                result(
                    &message,
                    json!({"skills": [{"uri": format!("skill://{page}/SKILL.md")}],
                           "nextCursor": next}),
                )
            }
            _ => result(&message, json!({})),
        }
    })
    .unwrap()
}

#[test]
fn a_server_that_declares_skills_has_them_listed_page_by_page_at_start() {
    let skills = json!({"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}});
    let server = skills_server(skills);
    let launches = [(launch(&format!("{}/mcp", server.origin()), None), limits())];
    let started = start_all(&launches, &Mutex::new(RefuseAll));
    let started = started.into_iter().next().unwrap().unwrap();
    assert!(started.connection.offers_skills());
    let uris: Vec<&str> = started
        .skills
        .iter()
        .map(|s| s["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            "skill://skill-0/SKILL.md",
            "skill://skill-1/SKILL.md",
            "skill://skill-2/SKILL.md"
        ],
        "the listing stops where a cursor repeats"
    );

    // Without the extension, or without resources to read the files with, no listing.
    for capabilities in [
        json!({"resources": {}}),
        json!({"extensions": {"io.modelcontextprotocol/skills": {}}}),
        json!({"resources": {}, "extensions": {"io.modelcontextprotocol/skills": false}}),
    ] {
        let server = skills_server(capabilities.clone());
        let launches = [(launch(&format!("{}/mcp", server.origin()), None), limits())];
        let started = start_all(&launches, &Mutex::new(RefuseAll));
        let started = started.into_iter().next().unwrap().unwrap();
        assert!(started.skills.is_empty(), "{capabilities}");
        assert!(
            !server
                .requests()
                .iter()
                .any(|r| body(r)["method"] == "skills/list"),
            "{capabilities}"
        );
    }
}

/// A stateless server declaring `tools: {listChanged}` (or not), whose `subscriptions/listen`
/// stream acknowledges and then says the tools changed.
fn listening_server(list_changed: bool) -> Loopback {
    Loopback::start(move |request| {
        let message = body(request);
        match message["method"].as_str() {
            Some("server/discover") => result(
                &message,
                json!({"supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {"listChanged": list_changed}},
                    "serverInfo": {"name": "s", "version": "1"}, "resultType": "complete"}),
            ),
            Some("subscriptions/listen") => {
                let meta = json!({"io.modelcontextprotocol/subscriptionId": message["id"]});
                let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                    "params": {"_meta": meta, "notifications": {"toolsListChanged": true}}});
                let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                    "params": {"_meta": meta}});
                // A long `retry`: the test is over before the stream is opened again.
                sse(&format!("retry: 30000\n\ndata: {ack}\n\ndata: {changed}\n\n"))
            }
            Some(_) if message.get("id").is_some() => {
                result(&message, json!({"tools": [], "resultType": "complete"}))
            }
            _ => accepted(),
        }
    })
    .unwrap()
}

#[test]
fn a_stateless_server_with_list_changed_gets_one_listen_whose_stream_flags_the_tools() {
    let server = listening_server(true);
    let mut connection =
        Connection::start(&launch(server.origin(), None), limits(), &mut RefuseAll).unwrap();
    assert!(connection.is_stateless());
    let deadline = std::time::Instant::now() + TIMEOUT;
    let mut changed = false;
    while !changed && std::time::Instant::now() < deadline {
        connection.pump(&mut RefuseAll);
        changed = connection.take_tools_changed();
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        changed,
        "the list_changed on the listen stream set the flag"
    );
    assert!(!connection.take_tools_changed(), "the flag was taken");
    let listens: Vec<(Option<String>, Value)> = server
        .requests()
        .iter()
        .filter(|r| body(r)["method"] == "subscriptions/listen")
        .map(|r| (r.header("mcp-protocol-version").map(str::to_owned), body(r)))
        .collect();
    assert_eq!(listens.len(), 1, "one subscription");
    let (version, listen) = &listens[0];
    assert_eq!(version.as_deref(), Some("2026-07-28"));
    assert_eq!(
        listen["params"]["notifications"],
        json!({"toolsListChanged": true}),
        "the filter asks for the tools' list_changed alone"
    );
    assert_eq!(
        listen["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        listen["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"],
        "mcpl"
    );
    let id = listen["id"].clone();
    drop(connection);
    server.settle(Duration::from_secs(5));
    let cancelled: Vec<Value> = server
        .requests()
        .iter()
        .map(body)
        .filter(|m| m["method"] == "notifications/cancelled")
        .collect();
    assert_eq!(cancelled.len(), 1, "closing cancels the subscription");
    assert_eq!(cancelled[0]["params"]["requestId"], id);
}

#[test]
fn a_stateless_server_without_list_changed_gets_no_listen() {
    let server = listening_server(false);
    let mut connection =
        Connection::start(&launch(server.origin(), None), limits(), &mut RefuseAll).unwrap();
    assert!(connection.is_stateless());
    connection
        .request("tools/list", json!({}), TIMEOUT, &mut RefuseAll)
        .unwrap();
    drop(connection);
    server.settle(Duration::from_secs(5));
    let methods: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| body(r)["method"].clone())
        .collect();
    assert!(
        !methods.contains(&json!("subscriptions/listen")),
        "{methods:?}"
    );
    assert!(
        !methods.contains(&json!("notifications/cancelled")),
        "{methods:?}"
    );
}

#[test]
fn a_listen_stream_quiet_for_longer_than_the_server_timeout_is_kept() {
    // The server's timeout bounds the listen request's headers and each event, not the stream:
    // two list_changed events 1.2 s apart with a 0.5 s timeout both arrive on one stream.
    let server = Loopback::start(|request| {
        let message = body(request);
        match message["method"].as_str() {
            Some("server/discover") => result(
                &message,
                json!({"supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "s", "version": "1"}, "resultType": "complete"}),
            ),
            Some("subscriptions/listen") => {
                let changed =
                    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
                let chunk = format!("retry: 30000\ndata: {changed}\n\n");
                Answer::chunks(
                    "text/event-stream",
                    chunk.into_bytes(),
                    2,
                    Duration::from_millis(1200),
                )
            }
            _ => accepted(),
        }
    })
    .unwrap();
    let mut connection = Connection::start(
        &launch(server.origin(), None),
        Limits::with_timeout(Duration::from_millis(500)),
        &mut RefuseAll,
    )
    .unwrap();
    let deadline = std::time::Instant::now() + TIMEOUT;
    while server.streams().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let streams = server.streams();
    assert_eq!(streams.len(), 1, "{streams:?}");
    assert_eq!((streams[0].sent, streams[0].total), (2, 2), "{streams:?}");
    assert!(!streams[0].client_closed, "{streams:?}");
    connection.pump(&mut RefuseAll);
    assert!(connection.take_tools_changed());
    let listens = server
        .requests()
        .iter()
        .filter(|r| body(r)["method"] == "subscriptions/listen")
        .count();
    assert_eq!(listens, 1, "the stream was not cut and opened again");
}
