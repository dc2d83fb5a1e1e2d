//! A host holding a `Session`: each lane fitted, scaled and encoded, the host tools answered
//! through the lanes, and the session used and dropped inside tokio runtimes.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_budget::LocalSpillStore;
use mcpl_fetch::{FetchOptions, Fetcher, NoResources};
use mcpl_loopback::{Answer, Loopback};
use mcpl_session::{READ_RESULT, RouteId, ServerPolicy, Session};
use serde_json::{Value, json};

/// A folder of its own for one test, removed when the test ends.
struct Scratch(tempfile::TempDir);

impl Scratch {
    fn new() -> Scratch {
        Scratch(tempfile::tempdir().unwrap())
    }

    fn spills(&self) -> LocalSpillStore {
        LocalSpillStore::new(self.0.path().join("spills")).unwrap()
    }

    fn fetcher(&self, server: &str, origin: &Loopback) -> Fetcher {
        let mut fetcher = Fetcher::new(self.0.path().join("refs")).unwrap();
        let options = FetchOptions::default().with_origin(origin.origin());
        fetcher.add_server(server, &options);
        fetcher
    }
}

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

/// Words enough to be thousands of tokens.
fn long_text(words: usize) -> String {
    (0..words).map(|n| format!("word{n} ")).collect()
}

#[test]
fn a_png_over_the_routes_limit_is_scaled_not_dropped() {
    // 6 MB: over Anthropic's 5 MiB per image.
    let png = STANDARD.encode(mcpl_testkit::grown_png("image.png", 6 * 1024 * 1024));
    let result = json!({"content": [{"type": "image", "mimeType": "image/png", "data": png}]});
    let shown = Session::new(RouteId::Anthropic).tool_result("charts", &result);
    let content = shown.content.as_array().unwrap();
    assert_eq!(content[0]["type"], "image", "{:?}", shown.diagnostics);
    assert!(content[0]["source"]["data"].as_str().unwrap().len() < 5 * 1024 * 1024);
}

#[test]
fn on_chat_completions_a_results_image_goes_in_the_follow_up_message() {
    let png = STANDARD.encode(mcpl_testkit::fixture("image.png"));
    let result = json!({"content": [
        {"type": "text", "text": "The chart:"},
        {"type": "image", "mimeType": "image/png", "data": png},
    ]});
    let mut session = Session::new(RouteId::OpenAiChat);
    let shown = session.tool_result("charts", &result);
    // The tool message is text: the image's pointer, not its bytes.
    assert!(shown.content.is_string(), "{}", shown.content);
    assert!(!shown.content.to_string().contains(&png));
    let follow_up = session
        .encoder()
        .follow_up(&[shown.answering("call_1", "charts__chart")]);
    assert!(follow_up.to_string().contains(&png), "{follow_up}");
    // Gemini's function response names the call's function.
    let mut gemini = Session::new(RouteId::Gemini);
    let shown = gemini.tool_result("charts", &result);
    let parts = gemini
        .encoder()
        .tool_result(&shown.answering("call_1", "charts__chart"));
    assert_eq!(
        parts[0]["functionResponse"]["name"], "charts__chart",
        "{parts}"
    );
}

#[test]
fn a_result_over_its_budget_is_cut_spilled_and_read_back() {
    let scratch = Scratch::new();
    let mut session = Session::new(RouteId::Anthropic)
        .with_spill_store(scratch.spills())
        .with_server("big", ServerPolicy::default().with_budget(300));
    let whole = long_text(3_000);
    let shown = session.tool_result("big", &text_result(&whole));
    assert!(shown.tokens <= 300, "{}", shown.tokens);
    let spill = shown.spill.expect("spilled");
    let arguments = json!({"id": spill.id.as_str()});
    let part = session
        .call_host_tool(READ_RESULT, &arguments, &mut NoResources)
        .unwrap();
    assert!(!part.is_error(), "{}", part.output.stored);
    // The part is the spill's first words, no more than the server's budget.
    assert!(
        part.output.stored.starts_with("word0 word1 "),
        "{}",
        part.output.stored
    );
    assert!(part.tokens <= 300, "{}", part.tokens);
}

#[test]
fn without_a_store_a_cut_result_says_its_whole_was_not_kept() {
    let mut session = Session::new(RouteId::Anthropic)
        .with_default_policy(ServerPolicy::default().with_budget(200));
    let shown = session.tool_result("big", &text_result(&long_text(3_000)));
    assert!(shown.tokens <= 200);
    assert!(shown.spill.is_none());
    assert!(shown.unsaved.is_some());
    let read = session
        .call_host_tool(READ_RESULT, &json!({"id": "spill_x"}), &mut NoResources)
        .unwrap();
    assert!(read.is_error());
}

#[test]
fn fetch_reference_shows_the_payload_through_the_lanes_and_keeps_the_path_from_the_model() {
    let png = mcpl_testkit::fixture("image.png");
    let origin = Loopback::start(move |_| Answer::bytes("image/png", png.clone())).unwrap();
    let scratch = Scratch::new();
    let mut session = Session::new(RouteId::Anthropic)
        .with_fetcher(scratch.fetcher("files", &origin))
        .with_spill_store(scratch.spills());
    assert_eq!(session.host_tools().len(), 2);
    // Over the eager limit as claimed, so the model fetches it.
    let uri = format!("{}/chart.png", origin.origin());
    let result = json!({"content": [{"type": "resource", "uri": uri, "name": "chart.png",
        "mimeType": "image/png", "sizeBytes": 300_000}]});
    let stub = session.tool_result("files", &result);
    let stored = &stub.output.stored;
    let id = stored[stored.find("[ref_").unwrap() + 1..]
        .split(']')
        .next()
        .unwrap()
        .to_owned();
    let shown = session
        .call_host_tool("fetch_reference", &json!({"ref_id": id}), &mut NoResources)
        .unwrap();
    assert!(!shown.is_error(), "{}", shown.output.stored);
    let content = shown.content.as_array().unwrap();
    let header: Value = serde_json::from_str(content[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(header["mime_type"], "image/png");
    assert!(header.get("path").is_none(), "{header}");
    assert_eq!(content[1]["type"], "image", "{content:?}");
    let saved = shown.saved.expect("the host learns where it was saved");
    assert!(!shown.content.to_string().contains(&saved.path));
    assert!(std::path::Path::new(&saved.path).exists());
}

#[test]
fn a_fetched_text_over_the_budget_is_cut_and_spilled() {
    let body = long_text(5_000).into_bytes();
    let origin = Loopback::start(move |_| Answer::bytes("text/plain", body.clone())).unwrap();
    let scratch = Scratch::new();
    let mut session = Session::new(RouteId::Anthropic)
        .with_fetcher(scratch.fetcher("files", &origin))
        .with_spill_store(scratch.spills())
        .with_server("files", ServerPolicy::default().with_budget(400));
    let uri = format!("{}/log.txt", origin.origin());
    let result = json!({"content": [{"type": "resource", "uri": uri, "name": "log.txt",
        "mimeType": "text/plain", "sizeBytes": 300_000}]});
    let stub = session.tool_result("files", &result);
    let stored = &stub.output.stored;
    let id = &stored[stored.find("[ref_").unwrap() + 1..stored.find(']').unwrap()];
    let shown = session.fetch_reference(&json!({"ref_id": id}), &mut NoResources, u64::MAX);
    assert!(shown.tokens <= 400, "{}", shown.tokens);
    assert!(shown.spill.is_some(), "{:?}", shown.diagnostics);
    assert!(shown.output.stored.contains("word0 "));
}

#[test]
fn a_fetch_refused_is_an_error_the_model_reads() {
    let scratch = Scratch::new();
    let origin = Loopback::start(|_| Answer::bytes("text/plain", b"x".to_vec())).unwrap();
    let mut session = Session::new(RouteId::Anthropic).with_fetcher(scratch.fetcher("s", &origin));
    let shown = session
        .call_host_tool(
            "fetch_reference",
            &json!({"ref_id": "ref_0_zzzz"}),
            &mut NoResources,
        )
        .unwrap();
    assert!(shown.is_error());
    assert!(
        shown.output.stored.contains("unknown reference"),
        "{}",
        shown.output.stored
    );
    // No fetcher, no tool.
    let mut plain = Session::new(RouteId::Anthropic);
    assert_eq!(plain.host_tools().len(), 1);
    assert!(
        plain
            .call_host_tool("fetch_reference", &json!({"ref_id": "x"}), &mut NoResources)
            .is_none()
    );
}

#[test]
fn a_push_over_the_message_budget_is_held_to_it() {
    let scratch = Scratch::new();
    let mut session = Session::new(RouteId::OpenAiChat)
        .with_spill_store(scratch.spills())
        .with_server("feed", ServerPolicy::default().with_message_budget(200));
    let content = json!([{"type": "text", "text": long_text(2_000)}]);
    let shown = session.push_event("feed", &content).unwrap();
    assert!(shown.stored.len() < 2_000, "{}", shown.stored.len());
    assert!(
        shown
            .diagnostics
            .iter()
            .any(|line| line.contains("spilled as spill_"))
    );
    // OpenAI's user content parts.
    assert_eq!(shown.content[0]["type"], "text");
    assert!(session.push_event("feed", &json!([])).is_err());
    assert!(
        session
            .channel_message("feed", &json!([{"type": "text", "text": " "}]))
            .is_err()
    );
}

#[test]
fn secrets_and_hidden_uris_never_reach_the_model_on_any_lane() {
    let mut session = Session::new(RouteId::Anthropic);
    let leak = "see https://files.example/r.pdf?X-Amz-Signature=abcdef0123456789abcdef";
    let result = json!({"content": [{"type": "text", "text": leak}]});
    let shown = session.tool_result("s", &result);
    assert!(
        !shown.content.to_string().contains("abcdef0123456789"),
        "{}",
        shown.content
    );
    let message = session.injection("s", &json!([{"type": "text", "text": leak}]));
    assert!(!message.content.to_string().contains("abcdef0123456789"));
    let system = session.system_injection("s", &json!([{"type": "text", "text": leak}]));
    assert!(!system.contains("abcdef0123456789"), "{system}");
}

/// The session, its local store and its fetcher used and dropped on a runtime's thread.
fn use_and_drop_inside_a_runtime() {
    let scratch = Scratch::new();
    let mut session = Session::new(RouteId::Gemini)
        .with_spill_store(scratch.spills())
        .with_default_policy(ServerPolicy::default().with_budget(200));
    let shown = session.tool_result("s", &text_result(&long_text(2_000)));
    assert!(shown.spill.is_some());
    drop(session);
}

#[tokio::test(flavor = "current_thread")]
async fn a_session_is_safe_inside_a_current_thread_runtime() {
    use_and_drop_inside_a_runtime();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_safe_inside_a_multi_thread_runtime() {
    use_and_drop_inside_a_runtime();
    tokio::task::spawn_blocking(use_and_drop_inside_a_runtime)
        .await
        .unwrap();
}
