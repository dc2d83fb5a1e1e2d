//! The rmcp adapter (issue 30) against the demo server, spoken to through rmcp's own client
//! over its `(reader, writer)` transport: a result with a flat MCPL reference and a resource
//! holding text and a blob come through `call_tool_raw` whole, where rmcp's typed call fails
//! or drops the blob; the session reads them inside tokio runtimes of both flavours, with its
//! spill store local or on S3 (moto's, found through `MCPL_S3_ENDPOINT`, as the S3 store's
//! tests find it).

use std::io::{BufReader, Read, Write};
use std::sync::mpsc;

use mcpl_budget::{LocalSpillStore, S3Location, SpillNotice, SpillStore};
use mcpl_session::rmcp::{Tap, call_tool_raw};
use mcpl_session::{READ_RESULT, RouteId, ServerPolicy, Session, Shown};
use mcpl_spill_s3::S3SpillStore;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ServiceError, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};

/// The demo server's flat reference: a `resource` block with `disposition: "ref"` at the top of
/// the content, its uri carrying a token.
const REFERENCE_TOOL: &str = "reference-ref";
const REFERENCE_TOKEN: &str = "demo-secret-123";
/// The demo server's embedded resource with both `text` and `blob`.
const TEXT_AND_BLOB_TOOL: &str = "text-and-blob";
/// The demo server's result of about 300 KB of log lines.
const OVER_BUDGET_TOOL: &str = "over-budget";
/// The server's name in the session.
const SERVER: &str = "demo";

/// The demo server (`mcpl_demo_server::serve` on a thread of its own) at the far end of a
/// pipe, as a child process would be: its stdout to read, its stdin to write.
fn demo_server() -> (ReadHalf<DuplexStream>, WriteHalf<DuplexStream>) {
    let (host, server) = tokio::io::duplex(64 * 1024);
    let (mut from_host, mut to_host) = tokio::io::split(server);
    let (to_server, input) = mpsc::channel::<Vec<u8>>();
    let (output, mut from_server) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(async move {
        let mut buffer = vec![0; 64 * 1024];
        while let Ok(n @ 1..) = from_host.read(&mut buffer).await {
            if to_server.send(buffer[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    tokio::spawn(async move {
        while let Some(bytes) = from_server.recv().await {
            if to_host.write_all(&bytes).await.is_err() {
                break;
            }
        }
    });
    std::thread::spawn(move || {
        let input = BufReader::new(Received {
            input,
            pending: Vec::new(),
        });
        let options = mcpl_demo_server::Options::default();
        let _ = mcpl_demo_server::serve(input, Sent(output), options);
    });
    tokio::io::split(host)
}

/// The bytes the host wrote, as the server's input.
struct Received {
    input: mpsc::Receiver<Vec<u8>>,
    pending: Vec<u8>,
}

impl Read for Received {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pending.is_empty() {
            match self.input.recv() {
                Ok(bytes) => self.pending = bytes,
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        Ok(n)
    }
}

/// The server's output, to the host.
struct Sent(tokio::sync::mpsc::UnboundedSender<Vec<u8>>);

impl Write for Sent {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .send(buf.to_vec())
            .map_err(|_| std::io::ErrorKind::BrokenPipe)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// rmcp's client, initialized with the demo server, reading through `tap`.
async fn client(tap: &Tap) -> RunningService<RoleClient, ()> {
    let (stdout, stdin) = demo_server();
    ().serve((tap.reader(stdout), stdin))
        .await
        .expect("rmcp initializes with the demo server")
}

/// rmcp's typed call.
async fn typed(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
) -> Result<rmcp::model::CallToolResult, ServiceError> {
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()))
        .await
}

/// The model's text of a shown result, every block's text joined.
fn text_of(shown: &Shown) -> String {
    shown
        .content
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

async fn flat_reference() {
    let tap = Tap::new();
    let client = client(&tap).await;

    let error = typed(&client, REFERENCE_TOOL).await.unwrap_err();
    assert!(
        matches!(error, ServiceError::UnexpectedResponse),
        "rmcp's typed call fails on a flat reference: {error}"
    );
    assert_eq!(error.to_string(), "Unexpected response type");

    let raw = call_tool_raw(&client, &tap, REFERENCE_TOOL, json!({}))
        .await
        .unwrap();
    assert_eq!(raw.fallback, None);
    let reference = &raw.result["content"][1];
    assert_eq!(reference["type"], "resource");
    assert_eq!(reference["disposition"], "ref");
    assert!(reference["uri"].as_str().unwrap().contains(REFERENCE_TOKEN));
    assert_eq!(
        tap.held(),
        0,
        "the tap holds nothing once the answer is taken"
    );

    let mut session = Session::new(RouteId::Anthropic);
    let shown = session.raw_tool_result(SERVER, &raw);
    let text = text_of(&shown);
    assert!(
        text.contains("q3-report.pdf"),
        "the reference's stub: {text}"
    );
    assert!(
        text.contains("ref_"),
        "the stub names the reference's id: {text}"
    );
    let everything = shown.content.to_string();
    assert!(!everything.contains(REFERENCE_TOKEN), "{everything}");
    assert!(!everything.contains("files.demo.example"), "{everything}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn a_flat_reference_comes_through_the_raw_path_whole_in_a_current_thread_runtime() {
    flat_reference().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flat_reference_comes_through_the_raw_path_whole_in_a_multi_thread_runtime() {
    flat_reference().await;
}

async fn text_and_blob() {
    let tap = Tap::new();
    let client = client(&tap).await;

    let typed = typed(&client, TEXT_AND_BLOB_TOOL).await.unwrap();
    let typed = serde_json::to_value(&typed).unwrap();
    let resource = &typed["content"][0]["resource"];
    assert!(resource["text"].is_string(), "{typed}");
    assert_eq!(
        resource.get("blob"),
        None,
        "rmcp's typed result drops the blob"
    );

    let raw = call_tool_raw(&client, &tap, TEXT_AND_BLOB_TOOL, Value::Null)
        .await
        .unwrap();
    assert_eq!(raw.fallback, None);
    let resource = &raw.result["content"][0]["resource"];
    assert!(resource["text"].is_string(), "{}", raw.result);
    assert!(
        resource["blob"].is_string(),
        "the raw result keeps the blob"
    );

    // The session reads both: the typed result and the raw one differ where the blob was.
    let mut session = Session::new(RouteId::Anthropic);
    let from_raw = session.raw_tool_result(SERVER, &raw);
    let typed: rmcp::model::CallToolResult = serde_json::from_value(typed).unwrap();
    let from_typed = session.rmcp_tool_result(SERVER, &typed);
    assert!(from_raw.diagnostics.iter().all(|d| !d.contains("tap")));
    assert_ne!(from_raw.content, from_typed.content);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn text_and_blob_keep_the_blob_raw_but_not_typed_in_a_current_thread_runtime() {
    text_and_blob().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_and_blob_keep_the_blob_raw_but_not_typed_in_a_multi_thread_runtime() {
    text_and_blob().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_tap_the_typed_result_comes_back_and_says_so() {
    let tap = Tap::new();
    let (stdout, stdin) = demo_server();
    // The reader is not the tap's: it sees nothing.
    let client = ().serve((stdout, stdin)).await.unwrap();
    let raw = call_tool_raw(&client, &tap, TEXT_AND_BLOB_TOOL, json!({}))
        .await
        .unwrap();
    let why = raw.fallback.clone().expect("the fallback says why");
    assert!(why.contains("did not see the answer"), "{why}");
    assert_eq!(raw.result["content"][0]["resource"].get("blob"), None);
    let shown = Session::new(RouteId::Anthropic).raw_tool_result(SERVER, &raw);
    assert_eq!(shown.diagnostics.first(), Some(&why));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn an_answer_over_the_taps_limit_falls_back_and_says_so() {
    let tap = Tap::with_limits(64 * 1024, 1024 * 1024);
    let client = client(&tap).await;
    // About 300 KB of log lines.
    let raw = call_tool_raw(&client, &tap, OVER_BUDGET_TOOL, json!({}))
        .await
        .unwrap();
    let why = raw.fallback.expect("the fallback says why");
    assert!(why.contains("over the tap's limit of 65536 bytes"), "{why}");
    assert!(raw.result["content"][0]["text"].is_string());
    // A small answer still comes whole.
    let raw = call_tool_raw(&client, &tap, TEXT_AND_BLOB_TOOL, json!({}))
        .await
        .unwrap();
    assert_eq!(raw.fallback, None);
    assert!(raw.result["content"][0]["resource"]["blob"].is_string());
    assert_eq!(tap.held(), 0);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_in_parallel_each_get_their_own_answer() {
    let tap = Tap::new();
    let client = client(&tap).await;
    let tools = [
        REFERENCE_TOOL,
        TEXT_AND_BLOB_TOOL,
        "text",
        "png",
        "resource-link",
    ];
    let call = |tool| call_tool_raw(&client, &tap, tool, json!({}));
    let (a, b, c, d, e) = tokio::join!(
        call(tools[0]),
        call(tools[1]),
        call(tools[2]),
        call(tools[3]),
        call(tools[4])
    );
    let results = [a, b, c, d, e].map(Result::unwrap);
    for (tool, raw) in tools.iter().zip(&results) {
        assert_eq!(raw.fallback, None, "{tool}");
    }
    assert_eq!(results[0].result["content"][1]["disposition"], "ref");
    assert!(results[1].result["content"][0]["resource"]["blob"].is_string());
    assert_eq!(results[3].result["content"][1]["type"], "image");
    assert_eq!(results[4].result["content"][1]["type"], "resource_link");
    assert_eq!(tap.held(), 0);
    client.cancel().await.unwrap();
}

/// A result over a small budget is cut and spilled through `store`, and read back with
/// `read_result`, all inside the caller's runtime.
async fn spill_and_read_back(store: impl SpillStore + Send + 'static) {
    let tap = Tap::new();
    let client = client(&tap).await;
    let raw = call_tool_raw(&client, &tap, OVER_BUDGET_TOOL, json!({}))
        .await
        .unwrap();
    assert_eq!(raw.fallback, None);
    let mut session = Session::new(RouteId::Anthropic)
        .with_server(SERVER, ServerPolicy::default().with_budget(2_000))
        .with_spill_store(store);
    let shown = session.raw_tool_result(SERVER, &raw);
    assert!(shown.tokens <= 2_000, "{}", shown.tokens);
    assert_eq!(shown.unsaved, None, "{:?}", shown.diagnostics);
    let spill = shown.spill.clone().expect("the result is cut and spilled");
    let text = text_of(&shown);
    assert!(
        text.contains(spill.id.as_str()),
        "the notice names the spill: {text}"
    );

    let part = session
        .call_host_tool(
            READ_RESULT,
            &json!({"id": spill.id.as_str(), "offset": 0}),
            &mut mcpl_fetch::NoResources,
        )
        .expect("read_result is a host tool");
    assert!(!part.is_error(), "{}", part.content);
    let read = text_of(&part);
    assert!(
        read.contains("00001 2025-01-01T00:00:01Z INFO worker-1"),
        "{read}"
    );
    client.cancel().await.unwrap();
}

fn local_store(dir: &tempfile::TempDir) -> LocalSpillStore {
    LocalSpillStore::new(dir.path().join("spill"))
        .unwrap()
        .with_notice(SpillNotice::ReadResult)
}

#[tokio::test(flavor = "current_thread")]
async fn a_cut_result_spills_locally_and_reads_back_in_a_current_thread_runtime() {
    let dir = tempfile::tempdir().unwrap();
    spill_and_read_back(local_store(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_result_spills_locally_and_reads_back_in_a_multi_thread_runtime() {
    let dir = tempfile::tempdir().unwrap();
    spill_and_read_back(local_store(&dir)).await;
}

/// A store in a fresh bucket on the S3-compatible server; `None` (said) when there is none.
fn s3_store(name: &str) -> Option<S3SpillStore> {
    let endpoint = mcpl_testkit::s3_endpoint()?;
    let bucket = format!("mcpl-session-{name}-{}", std::process::id());
    mcpl_testkit::create_bucket(&endpoint, &bucket);
    let location = S3Location::new(bucket)
        .with_prefix("spills/")
        .with_endpoint(endpoint)
        .with_region("us-east-1");
    let store = S3SpillStore::with_credentials(&location, "testing", "testing")
        .unwrap()
        .with_notice(SpillNotice::ReadResult);
    Some(store)
}

#[tokio::test(flavor = "current_thread")]
async fn a_cut_result_spills_to_s3_and_reads_back_in_a_current_thread_runtime() {
    if let Some(store) = s3_store("current") {
        spill_and_read_back(store).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_result_spills_to_s3_and_reads_back_in_a_multi_thread_runtime() {
    if let Some(store) = s3_store("multi") {
        spill_and_read_back(store).await;
    }
}
