//! The HTTP backends against a real HTTP/1.1 server on loopback that records each request and
//! answers a canned provider answer: the path, the headers, the body exactly as the encoder made
//! it, the turn read from the answer, and error statuses. Built with the `http` feature only:
//! `cargo test -p mcpl-host --features http --test http`.
#![cfg(feature = "http")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use mcpl_encode::Encoder;
use mcpl_encode::conversation::{Content, Message, ModelRequest, ToolCall, ToolOutput, ToolSpec};
use mcpl_host::http::{AnthropicHttp, GeminiHttp, OpenAiChatHttp, OpenAiResponsesHttp, Retry};
use mcpl_host::model::{Model, ModelError, Usage};
use mcpl_lanes::RouteId;
use serde_json::{Value, json};

const KEY: &str = "sk-test-0123456789abcdef";

/// One request as the server read it.
#[derive(Debug)]
struct Recorded {
    request_line: String,
    /// Header names lowercased, in the order sent.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Recorded {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the body is JSON")
    }
}

/// A server on 127.0.0.1 that answers one request with `status` and `answer`; returns its base
/// URL and where the recorded request arrives.
fn serve_once(status: u16, answer: &str) -> (String, mpsc::Receiver<Recorded>) {
    serve(vec![(status, Vec::new(), answer.to_owned())])
}

/// One canned answer: status, extra headers, body.
type Canned = (u16, Vec<(&'static str, String)>, String);

/// A server on 127.0.0.1 that answers one request per `(status, headers, body)`, in order, one
/// connection each; returns its base URL and where the recorded requests arrive.
fn serve(answers: Vec<Canned>) -> (String, mpsc::Receiver<Recorded>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        for (status, extra, answer) in answers {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let mut headers = Vec::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                let (name, value) = line.split_once(':').unwrap();
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
            }
            let length: usize = headers
                .iter()
                .find(|(n, _)| n == "content-length")
                .expect("the body has a content-length")
                .1
                .parse()
                .unwrap();
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let reason = if status == 200 { "OK" } else { "Error" };
            let extra: String = extra
                .iter()
                .map(|(name, value)| format!("{name}: {value}\r\n"))
                .collect();
            let mut stream = stream;
            write!(
                stream,
                "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            )
            .unwrap();
            stream.flush().unwrap();
            let sent = sender.send(Recorded {
                request_line: request_line.trim_end().to_owned(),
                headers,
                body,
            });
            if sent.is_err() {
                break;
            }
        }
    });
    (base, receiver)
}

/// How many requests the server recorded (waiting a little for the last to be written down).
fn received(recorded: &mpsc::Receiver<Recorded>) -> usize {
    std::iter::from_fn(|| recorded.recv_timeout(Duration::from_millis(300)).ok()).count()
}

/// No retries: an error status is the answer.
const NO_RETRY: Retry = Retry::new(0, Duration::ZERO, Duration::ZERO);

/// A round with parallel tool calls and a result carrying an image, as the loop sends it.
fn conversation() -> (Vec<Message>, Vec<ToolSpec>) {
    use base64::Engine as _;
    let png = base64::engine::general_purpose::STANDARD.encode(mcpl_testkit::fixture("image.png"));
    let messages = vec![
        Message::User(vec![Content::Text("Chart for May?".to_owned())]),
        Message::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall::new(
                "call_1",
                "demo__chart",
                json!({"month": "May"}),
            )],
        },
        Message::ToolResults(vec![
            ToolOutput::new(
                "call_1",
                "demo__chart",
                "May:\n[image: image/png, 167B, ref img_1_1]",
            )
            .with_live(vec![
                Content::Text("May:".to_owned()),
                Content::Image {
                    sniffed: mcpl_classify::Sniffed::Png,
                    dimensions: mcpl_classify::Dimensions {
                        width: 16,
                        height: 12,
                    },
                    data: png,
                },
            ]),
        ]),
    ];
    let tools = vec![ToolSpec::new(
        "demo__chart",
        "A month's chart.",
        json!({"type": "object"}),
    )];
    (messages, tools)
}

fn body(encoder: Encoder, model: &str) -> Value {
    let (messages, tools) = conversation();
    encoder.request(&ModelRequest::new(
        model,
        "Be brief.",
        &messages,
        &tools,
        512,
    ))
}

#[test]
fn anthropic_posts_the_messages_body_and_reads_text_and_tool_use() {
    let (base, recorded) = serve_once(
        200,
        r#"{"id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "tool_use",
            "content": [{"type": "text", "text": "Checking June too."},
                        {"type": "tool_use", "id": "toolu_9", "name": "demo__chart", "input": {"month": "June"}}]}"#,
    );
    let mut model = AnthropicHttp::new(&base, KEY, "claude-test");
    assert_eq!(model.route(), Some(RouteId::Anthropic));
    let sent = body(Encoder::new(RouteId::Anthropic), "claude-test");
    let turn = model.complete(&sent).unwrap();
    let request = recorded.recv().unwrap();
    assert_eq!(request.request_line, "POST /v1/messages HTTP/1.1");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.json(), sent);
    assert_eq!(turn.text, "Checking June too.");
    assert_eq!(turn.tool_calls.len(), 1);
    assert_eq!(turn.tool_calls[0].id, "toolu_9");
    assert_eq!(turn.tool_calls[0].name, "demo__chart");
    assert_eq!(turn.tool_calls[0].arguments, json!({"month": "June"}));
}

#[test]
fn openai_chat_posts_the_chat_body_and_parses_arguments() {
    let (base, recorded) = serve_once(
        200,
        r#"{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0,
            "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_7", "type": "function",
                "function": {"name": "demo__chart", "arguments": "{\"month\":\"June\"}"}}]}}]}"#,
    );
    // OpenAI's clients write the base URL with `/v1`; the path is the same.
    let mut model = OpenAiChatHttp::new(&format!("{base}/v1"), KEY, "gpt-test");
    assert_eq!(model.route(), Some(RouteId::OpenAiChat));
    let sent = body(Encoder::new(RouteId::OpenAiChat), "gpt-test");
    let turn = model.complete(&sent).unwrap();
    let request = recorded.recv().unwrap();
    assert_eq!(request.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("x-api-key"), None);
    assert_eq!(request.json(), sent);
    // The image went after the tool message, in a user message.
    assert_eq!(request.json()["messages"][4]["role"], "user");
    assert_eq!(turn.text, "");
    assert_eq!(turn.tool_calls[0].id, "call_7");
    assert_eq!(turn.tool_calls[0].arguments, json!({"month": "June"}));
}

#[test]
fn openai_chat_text_answer_ends_the_loop() {
    let (base, _recorded) = serve_once(
        200,
        r#"{"choices": [{"message": {"role": "assistant", "content": "It rose."}}]}"#,
    );
    let turn = OpenAiChatHttp::new(&base, KEY, "gpt-test")
        .complete(&body(Encoder::new(RouteId::OpenAiChat), "gpt-test"))
        .unwrap();
    assert_eq!(turn.text, "It rose.");
    assert!(turn.tool_calls.is_empty());
}

/// The backend's model is the one sent, whatever the body said.
#[test]
fn the_backends_model_is_sent() {
    let (base, recorded) = serve_once(200, r#"{"content": []}"#);
    AnthropicHttp::new(&base, KEY, "claude-real")
        .complete(&body(Encoder::new(RouteId::Anthropic), "mcpl-scripted"))
        .unwrap();
    assert_eq!(recorded.recv().unwrap().json()["model"], "claude-real");
}

fn provider_error(error: ModelError) -> (&'static str, String) {
    match error {
        ModelError::Provider { provider, message } => (provider, message),
        other => panic!("not a provider error: {other}"),
    }
}

#[test]
fn error_statuses_carry_the_providers_message_and_never_the_key() {
    let (base, _recorded) = serve_once(
        401,
        r#"{"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}"#,
    );
    let error = AnthropicHttp::new(&base, KEY, "claude-test")
        .complete(&body(Encoder::new(RouteId::Anthropic), "claude-test"))
        .unwrap_err();
    let (provider, message) = provider_error(error);
    assert_eq!(provider, "anthropic");
    assert_eq!(message, "HTTP 401: invalid x-api-key");

    // A provider that echoes the key gets it blanked.
    let echo = format!(
        r#"{{"error": {{"message": "Incorrect API key provided: {KEY}", "type": "invalid_request_error"}}}}"#
    );
    let (base, _recorded) = serve_once(429, &echo);
    let error = OpenAiChatHttp::new(&base, KEY, "gpt-test")
        .with_retry(NO_RETRY)
        .complete(&body(Encoder::new(RouteId::OpenAiChat), "gpt-test"))
        .unwrap_err();
    let (provider, message) = provider_error(error);
    assert_eq!(provider, "openai-chat");
    assert_eq!(message, "HTTP 429: Incorrect API key provided: [api key]");
    assert!(!message.contains(KEY));

    // A body that is not the provider's error shape is quoted.
    let (base, _recorded) = serve_once(502, "upstream down");
    let (_, message) = provider_error(
        OpenAiChatHttp::new(&base, KEY, "gpt-test")
            .with_retry(NO_RETRY)
            .complete(&json!({}))
            .unwrap_err(),
    );
    assert_eq!(message, "HTTP 502: upstream down");
}

#[test]
fn unusable_answers_and_unreachable_servers_are_errors() {
    // Arguments that are not JSON are the model's mistake, not the answer's: the call is kept
    // with the string it wrote, and the host answers it with an error result.
    let (base, _recorded) = serve_once(
        200,
        r#"{"choices": [{"message": {"tool_calls": [{"id": "c", "type": "function",
            "function": {"name": "f", "arguments": "{not json"}}]}}]}"#,
    );
    let turn = OpenAiChatHttp::new(&base, KEY, "gpt-test")
        .complete(&json!({}))
        .unwrap();
    assert_eq!(turn.tool_calls[0].arguments, json!("{not json"));

    // A port nothing listens on.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (_, message) = provider_error(
        AnthropicHttp::new(&base, KEY, "claude-test")
            .complete(&json!({}))
            .unwrap_err(),
    );
    assert!(
        message.starts_with(&format!("cannot reach {base}/v1/messages")),
        "{message}"
    );
    assert!(!message.contains(KEY));
}

#[test]
fn usage_is_read_from_anthropic_and_chat_answers() {
    let (base, _recorded) = serve_once(
        200,
        r#"{"content": [{"type": "text", "text": "ok"}],
            "usage": {"input_tokens": 812, "output_tokens": 9,
                "cache_creation_input_tokens": 2048, "cache_read_input_tokens": 4096}}"#,
    );
    let turn = AnthropicHttp::new(&base, KEY, "claude-test")
        .complete(&json!({}))
        .unwrap();
    assert_eq!(turn.usage, Some(Usage::new(812, 9).with_cache(4096, 2048)));
    let (base, _recorded) = serve_once(
        200,
        r#"{"choices": [{"message": {"role": "assistant", "content": "ok"}}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 3, "total_tokens": 43,
                "prompt_tokens_details": {"cached_tokens": 32}}}"#,
    );
    let turn = OpenAiChatHttp::new(&base, KEY, "gpt-test")
        .complete(&json!({}))
        .unwrap();
    assert_eq!(turn.usage, Some(Usage::new(40, 3).with_cache(32, 0)));
}

#[test]
fn openai_responses_posts_the_responses_body_and_reads_items() {
    let (base, recorded) = serve_once(
        200,
        r#"{"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-test",
            "output": [
              {"type": "reasoning", "id": "rs_1", "summary": []},
              {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": "Checking June too.", "annotations": []}]},
              {"type": "function_call", "id": "fc_1", "call_id": "call_8", "name": "demo__chart",
               "arguments": "{\"month\":\"June\"}", "status": "completed"}],
            "usage": {"input_tokens": 120, "output_tokens": 17, "total_tokens": 137,
                "input_tokens_details": {"cached_tokens": 64}}}"#,
    );
    let mut model = OpenAiResponsesHttp::new(&format!("{base}/v1"), KEY, "gpt-test");
    assert_eq!(model.route(), Some(RouteId::OpenAiResponses));
    let sent = body(Encoder::new(RouteId::OpenAiResponses), "gpt-test");
    let turn = model.complete(&sent).unwrap();
    let request = recorded.recv().unwrap();
    assert_eq!(request.request_line, "POST /v1/responses HTTP/1.1");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.json(), sent);
    assert_eq!(request.json()["input"][2]["type"], "function_call_output");
    assert_eq!(turn.text, "Checking June too.");
    assert_eq!(turn.tool_calls.len(), 1);
    assert_eq!(turn.tool_calls[0].id, "call_8");
    assert_eq!(turn.tool_calls[0].name, "demo__chart");
    assert_eq!(turn.tool_calls[0].arguments, json!({"month": "June"}));
    assert_eq!(turn.usage, Some(Usage::new(120, 17).with_cache(64, 0)));
}

#[test]
fn gemini_keeps_the_thought_signature_and_sends_it_back_with_the_call_id() {
    const SIGNATURE: &str = "CiQB0e2Kb+/x8Zq1aVt3Qm9TaWduYXR1cmU=";
    let first = json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"text": "thinking out loud", "thought": true},
            {"functionCall": {"id": "fc-7", "name": "demo__chart", "args": {"month": "June"}},
             "thoughtSignature": SIGNATURE}]},
          "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 300, "candidatesTokenCount": 12,
            "cachedContentTokenCount": 256,
                          "thoughtsTokenCount": 30, "totalTokenCount": 342},
        "modelVersion": "gemini-test"
    });
    let second = json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": "June is up."}]},
          "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 360, "candidatesTokenCount": 4}
    });
    let (base, recorded) = serve(vec![
        (200, Vec::new(), first.to_string()),
        (200, Vec::new(), second.to_string()),
    ]);
    let mut model = GeminiHttp::new(&base, KEY, "gemini-test");
    assert_eq!(model.route(), Some(RouteId::Gemini));
    let encoder = Encoder::new(RouteId::Gemini);
    let (mut messages, tools) = conversation();
    let request = |messages: &[Message]| {
        encoder.request(&ModelRequest::new(
            "gemini-test",
            "Be brief.",
            messages,
            &tools,
            512,
        ))
    };
    let sent = request(&messages);
    let turn = model.complete(&sent).unwrap();
    let seen = recorded.recv().unwrap();
    assert_eq!(
        seen.request_line,
        "POST /v1beta/models/gemini-test:generateContent HTTP/1.1"
    );
    assert_eq!(seen.header("x-goog-api-key"), Some(KEY));
    assert_eq!(seen.header("authorization"), None);
    assert_eq!(seen.header("content-type"), Some("application/json"));
    // The model is in the URL; the body is the encoder's, untouched.
    assert_eq!(seen.json(), sent);
    assert_eq!(seen.json().get("model"), None);
    // The first round's call went with its id, and its response with the same id.
    assert_eq!(
        seen.json()["contents"][1]["parts"][0]["functionCall"]["id"],
        "call_1"
    );
    assert_eq!(
        seen.json()["contents"][2]["parts"][0]["functionResponse"]["id"],
        "call_1"
    );
    // The thought summary is not the turn's text.
    assert_eq!(turn.text, "");
    assert_eq!(turn.tool_calls[0].id, "fc-7");
    assert_eq!(turn.tool_calls[0].signature.as_deref(), Some(SIGNATURE));
    assert_eq!(turn.usage, Some(Usage::new(300, 42).with_cache(256, 0)));

    // The next request carries the call back with its signature, byte for byte, and the
    // response matched to it by id.
    messages.push(Message::Assistant {
        text: turn.text.clone(),
        tool_calls: turn.tool_calls.clone(),
    });
    messages.push(Message::ToolResults(vec![ToolOutput::new(
        "fc-7",
        "demo__chart",
        "June: up",
    )]));
    let turn = model.complete(&request(&messages)).unwrap();
    let seen = recorded.recv().unwrap();
    let text = String::from_utf8(seen.body.clone()).unwrap();
    let body = seen.json();
    let call = &body["contents"][3]["parts"][0];
    assert_eq!(call["thoughtSignature"], SIGNATURE);
    assert_eq!(call["functionCall"]["id"], "fc-7");
    assert_eq!(call["functionCall"]["args"], json!({"month": "June"}));
    assert_eq!(
        body["contents"][4]["parts"][0]["functionResponse"]["id"],
        "fc-7"
    );
    assert!(
        text.contains(&format!(r#""thoughtSignature":"{SIGNATURE}""#)),
        "{text}"
    );
    assert_eq!(turn.text, "June is up.");
    assert!(turn.tool_calls.is_empty());
}

#[test]
fn gemini_calls_without_ids_get_distinct_ones() {
    let answer = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "a", "args": {}}},
        {"functionCall": {"name": "b"}}]}}]});
    let (base, _recorded) = serve(vec![
        (200, Vec::new(), answer.to_string()),
        (200, Vec::new(), answer.to_string()),
    ]);
    let mut model = GeminiHttp::new(&base, KEY, "gemini-test");
    let first = model.complete(&json!({})).unwrap();
    let second = model.complete(&json!({})).unwrap();
    let ids: Vec<&str> = first
        .tool_calls
        .iter()
        .chain(&second.tool_calls)
        .map(|call| call.id.as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "gemini_call_1",
            "gemini_call_2",
            "gemini_call_3",
            "gemini_call_4"
        ]
    );
    assert_eq!(first.tool_calls[1].arguments, json!({}));
    assert_eq!(first.tool_calls[0].signature, None);
    assert_eq!(first.usage, None);
}

#[test]
fn a_429_is_retried_after_the_retry_after_it_names() {
    let ok = r#"{"content": [{"type": "text", "text": "ok"}]}"#;
    let (base, recorded) = serve(vec![
        (
            429,
            vec![("retry-after", "0.3".to_owned())],
            r#"{"error": {"message": "slow down"}}"#.to_owned(),
        ),
        (503, Vec::new(), "overloaded".to_owned()),
        (200, Vec::new(), ok.to_owned()),
    ]);
    let started = Instant::now();
    let turn = AnthropicHttp::new(&base, KEY, "claude-test")
        .with_retry(Retry::new(
            3,
            Duration::from_millis(50),
            Duration::from_secs(5),
        ))
        .complete(&json!({}))
        .unwrap();
    let took = started.elapsed();
    assert_eq!(turn.text, "ok");
    // The retry-after (300ms) and then the second backoff (100ms) were waited.
    assert!(took >= Duration::from_millis(400), "{took:?}");
    let bodies: Vec<Value> =
        std::iter::from_fn(|| recorded.recv_timeout(Duration::from_millis(300)).ok())
            .map(|r| r.json())
            .collect();
    assert_eq!(bodies.len(), 3);
    assert!(bodies.iter().all(|b| *b == bodies[0]));
}

#[test]
fn a_retry_after_http_date_is_the_wait_until_then() {
    let quota = |date: std::time::SystemTime| {
        (
            429,
            vec![("retry-after", httpdate::fmt_http_date(date))],
            r#"{"error": {"message": "quota"}}"#.to_owned(),
        )
    };
    let ok = r#"{"content": [{"type": "text", "text": "ok"}]}"#;
    let retry = Retry::new(1, Duration::from_millis(10), Duration::from_secs(5));
    // An hour from now is beyond the total wait: not retried, where the backoff would be.
    let later = std::time::SystemTime::now() + Duration::from_secs(3600);
    let (base, recorded) = serve(vec![quota(later), (200, Vec::new(), ok.to_owned())]);
    let (_, message) = provider_error(
        AnthropicHttp::new(&base, KEY, "claude-test")
            .with_retry(retry)
            .complete(&json!({}))
            .unwrap_err(),
    );
    assert_eq!(message, "HTTP 429: quota");
    assert_eq!(received(&recorded), 1);
    // A date that has passed is no wait: retried at once.
    let earlier = std::time::SystemTime::now() - Duration::from_secs(60);
    let (base, recorded) = serve(vec![quota(earlier), (200, Vec::new(), ok.to_owned())]);
    let turn = AnthropicHttp::new(&base, KEY, "claude-test")
        .with_retry(retry)
        .complete(&json!({}))
        .unwrap();
    assert_eq!(turn.text, "ok");
    assert_eq!(received(&recorded), 2);
}

#[test]
fn retries_are_bounded_in_count_and_in_total_wait() {
    let busy = || {
        (
            500,
            Vec::new(),
            r#"{"error": {"message": "busy"}}"#.to_owned(),
        )
    };
    let (base, recorded) = serve(vec![busy(), busy(), busy(), busy(), busy()]);
    let (_, message) = provider_error(
        OpenAiResponsesHttp::new(&base, KEY, "gpt-test")
            .with_retry(Retry::new(
                2,
                Duration::from_millis(10),
                Duration::from_secs(5),
            ))
            .complete(&json!({}))
            .unwrap_err(),
    );
    assert_eq!(message, "HTTP 500 (after 3 attempts): busy");
    assert_eq!(received(&recorded), 3);

    // A retry-after beyond the total wait left is not waited for.
    let (base, recorded) = serve(vec![(
        429,
        vec![("retry-after", "120".to_owned())],
        r#"{"error": {"message": "quota"}}"#.to_owned(),
    )]);
    let started = Instant::now();
    let (_, message) = provider_error(
        GeminiHttp::new(&base, KEY, "gemini-test")
            .complete(&json!({}))
            .unwrap_err(),
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(message, "HTTP 429: quota");
    assert_eq!(received(&recorded), 1);

    // A 400 is not retried.
    let (base, recorded) = serve(vec![busy(), busy()]);
    let (base, recorded) = {
        drop((base, recorded));
        serve(vec![
            (
                400,
                Vec::new(),
                r#"{"error": {"message": "bad"}}"#.to_owned(),
            ),
            busy(),
        ])
    };
    let (_, message) = provider_error(
        OpenAiChatHttp::new(&base, KEY, "gpt-test")
            .complete(&json!({}))
            .unwrap_err(),
    );
    assert_eq!(message, "HTTP 400: bad");
    assert_eq!(received(&recorded), 1);
}

/// Plays a conversation with no servers against a loopback Anthropic that asks for one
/// `fetch_reference` and then answers, reporting `input_tokens` with each answer; returns the
/// host after the run.
fn session_reporting(input_tokens: u64) -> mcpl_host::host_loop::Host {
    use mcpl_host::config::Config;
    use mcpl_host::host_loop::{Host, HostOptions};
    let first = json!({"id": "msg_1", "type": "message", "role": "assistant",
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "fetch_reference",
                     "input": {"ref_id": "ref_nothing_0000"}}],
        "usage": {"input_tokens": input_tokens, "output_tokens": 5}});
    let second = json!({"id": "msg_2", "type": "message", "role": "assistant",
        "stop_reason": "end_turn", "content": [{"type": "text", "text": "done"}],
        "usage": {"input_tokens": input_tokens, "output_tokens": 1}});
    let (base, _recorded) = serve(vec![
        (200, Vec::new(), first.to_string()),
        (200, Vec::new(), second.to_string()),
    ]);
    let dir = std::env::temp_dir().join(format!(
        "mcpl-http-correction-{}-{input_tokens}",
        std::process::id()
    ));
    let mut config = Config::default();
    config.spill_dir = Some(dir.join("spill"));
    config.fetch_dir = Some(dir.join("refs"));
    let options = HostOptions::new(&mcpl_budget::PricedRoute::ANTHROPIC, &config);
    let mut host = Host::start(&config, options);
    let mut model = AnthropicHttp::new(&base, KEY, "claude-test").with_retry(NO_RETRY);
    let outcome = host.run(&mut model, "Fetch it.", None).unwrap();
    assert_eq!(outcome.answer, "done");
    let _ = std::fs::remove_dir_all(dir);
    host
}

#[test]
fn reported_usage_corrects_later_projections_within_one_to_two() {
    // A provider that counts far more than the estimate: the correction stops at 2.0.
    let high = session_reporting(1_000_000);
    assert_eq!(high.correction(), mcpl_budget::Correction::MAX);
    // One that counts fewer: never below 1.0, so the window is never loosened.
    let low = session_reporting(1);
    assert_eq!(low.correction(), mcpl_budget::Correction::NONE);
    // The same conversation; its second request is projected at twice the estimate.
    let answer = 4096;
    let (high2, low2) = (
        high.rounds[1].projected_tokens,
        low.rounds[1].projected_tokens,
    );
    assert_eq!(high2 - answer, 2 * (low2 - answer), "{high2} {low2}");
    assert_eq!(
        high.rounds[0].projected_tokens,
        low.rounds[0].projected_tokens
    );
}
