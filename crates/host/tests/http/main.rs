//! The HTTP backends against a real HTTP/1.1 server on loopback that records each request and
//! answers a canned provider answer: the path, the headers, the body exactly as the encoder made
//! it, the turn read from the answer, and error statuses. Built with the `http` feature only:
//! `cargo test -p mcpl-host --features http --test http`.
#![cfg(feature = "http")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::thread;

use mcpl_encode::Encoder;
use mcpl_encode::conversation::{Content, Message, ModelRequest, ToolCall, ToolOutput, ToolSpec};
use mcpl_host::http::{AnthropicHttp, OpenAiChatHttp};
use mcpl_host::model::{Model, ModelError};
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
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (sender, receiver) = mpsc::channel();
    let answer = answer.to_owned();
    thread::spawn(move || {
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
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
            answer.len()
        )
        .unwrap();
        stream.flush().unwrap();
        sender
            .send(Recorded {
                request_line: request_line.trim_end().to_owned(),
                headers,
                body,
            })
            .unwrap();
    });
    (base, receiver)
}

/// A round with parallel tool calls and a result carrying an image, as the loop sends it.
fn conversation() -> (Vec<Message>, Vec<ToolSpec>) {
    use base64::Engine as _;
    let png = base64::engine::general_purpose::STANDARD.encode(mcpl_testkit::fixture("image.png"));
    let messages = vec![
        Message::User(vec![Content::Text("Chart for May?".to_owned())]),
        Message::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: "call_1".to_owned(),
                name: "demo__chart".to_owned(),
                arguments: json!({"month": "May"}),
            }],
        },
        Message::ToolResults(vec![ToolOutput {
            call_id: "call_1".to_owned(),
            name: "demo__chart".to_owned(),
            stored: "May:\n[image: image/png, 167B, ref img_1_1]".to_owned(),
            live: Some(vec![
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
            is_error: false,
        }]),
    ];
    let tools = vec![ToolSpec {
        name: "demo__chart".to_owned(),
        description: "A month's chart.".to_owned(),
        input_schema: json!({"type": "object"}),
    }];
    (messages, tools)
}

fn body(encoder: Encoder, model: &str) -> Value {
    let (messages, tools) = conversation();
    encoder.request(&ModelRequest {
        model,
        system: "Be brief.",
        messages: &messages,
        tools: &tools,
        max_tokens: 512,
    })
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
            .complete(&json!({}))
            .unwrap_err(),
    );
    assert_eq!(message, "HTTP 502: upstream down");
}

#[test]
fn unusable_answers_and_unreachable_servers_are_errors() {
    let (base, _recorded) = serve_once(
        200,
        r#"{"choices": [{"message": {"tool_calls": [{"id": "c", "type": "function",
            "function": {"name": "f", "arguments": "{not json"}}]}}]}"#,
    );
    let (_, message) = provider_error(
        OpenAiChatHttp::new(&base, KEY, "gpt-test")
            .complete(&json!({}))
            .unwrap_err(),
    );
    assert!(
        message.contains("tool_calls[0] (f): its arguments are not JSON"),
        "{message}"
    );

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
