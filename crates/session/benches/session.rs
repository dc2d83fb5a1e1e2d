//! The paths a host's tool result takes through a session, beside the parse a Rust host built
//! on rmcp pays first, on the three standard workloads `mcpl_testkit::workloads` makes in
//! memory (`w1-mixed-10mb`, `w2-100k-blocks`, `w3-one-big-image`). Each path ends with the
//! encoded `tool_result` content written out as the request body's bytes.
//!
//! The loop's paths spill as `mcpl run` does: to a local spill folder (a temporary one, emptied
//! before each iteration, outside the time measured), so a result over its budget is written
//! whole and cut. The other paths set no spill store: a result over its budget is cut, and its
//! notice says its whole could not be kept.
//!
//! - `rmcp_parse`: the result's bytes into rmcp's typed `CallToolResult`.
//! - `rmcp_parse_message`: the whole JSON-RPC response into rmcp's typed
//!   `JsonRpcResponse<CallToolResult>`.
//! - `loop_path`: the response's bytes as `mcpl run`'s client reads each line it owns
//!   (`mcpl_client::response_of`: a strict line keeps its result as JSON text in the line), then
//!   `Session::declared_result_bytes` with the default budget, as the loop calls it
//!   (decision 0139).
//! - `value_path`: the loop's path before: the line read leniently into a `Value`
//!   (`parse_json_repaired`), then `Session::declared_result`.
//! - `bytes_path`: the result's bytes straight to `Session::tool_result_bytes_within`, the one
//!   reader's path without a `Value` (decision 0128).
//! - `tool_result`: a `Value` a library host holds, read leniently from the bytes, through
//!   `Session::tool_result`; `tool_result_unscaled` the same without scaling.
//! - `rmcp_adapter` (with the `rmcp` feature): rmcp's typed parse, then
//!   `Session::rmcp_tool_result`, the path of a host that holds rmcp's types.

use std::path::Path;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcpl_session::{DEFAULT_BUDGET, LocalSpillStore, RouteId, Session};
use serde_json::Value;

/// A session as `mcpl run` makes one: spilling to a local folder, emptied first.
fn spilling_session(folder: &Path) -> Session {
    let _ = std::fs::remove_dir_all(folder);
    let store = LocalSpillStore::new(folder).expect("a temporary spill folder");
    Session::new(RouteId::Anthropic).with_spill_store(store)
}

/// The request body's bytes for a shown result's content, written as the model client writes
/// a body.
fn written(content: &Value) -> usize {
    mcpl_encode::body_bytes(content).len()
}

/// The JSON-RPC response that carries `result`, as a server writes it on one line.
fn message(result: &[u8]) -> Vec<u8> {
    let mut line = br#"{"jsonrpc":"2.0","id":7,"result":"#.to_vec();
    line.extend_from_slice(result);
    line.push(b'}');
    line
}

fn bench_session(c: &mut Criterion) {
    for mcpl_testkit::Workload { name, bytes } in mcpl_testkit::workloads() {
        // A baseline that failed would time an early error, not a parse.
        let peer = serde_json::from_slice::<rmcp::model::CallToolResult>(&bytes);
        assert!(peer.is_ok(), "rmcp reads {name}: {peer:?}");
        let line = message(&bytes);
        let scratch = tempfile::tempdir().expect("a temporary folder");
        let folder = scratch.path().join("spill");
        let mut group = c.benchmark_group(format!("session/{name}"));
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.sample_size(20);
        group.bench_with_input(
            BenchmarkId::from_parameter("rmcp_parse"),
            &bytes,
            |b, bytes| {
                b.iter(|| {
                    serde_json::from_slice::<rmcp::model::CallToolResult>(bytes)
                        .map_or(0, |result| result.content.len())
                })
            },
        );
        group.bench_with_input(
            BenchmarkId::from_parameter("rmcp_parse_message"),
            &line,
            |b, line| {
                b.iter(|| {
                    serde_json::from_slice::<
                        rmcp::model::JsonRpcResponse<rmcp::model::CallToolResult>,
                    >(line)
                    .map_or(0, |response| response.result.content.len())
                })
            },
        );
        group.bench_with_input(
            BenchmarkId::from_parameter("loop_path"),
            &line,
            |b, line| {
                b.iter_batched(
                    || (spilling_session(&folder), line.clone()),
                    |(mut session, line)| {
                        // The client's reader owns each line it reads, as this one does.
                        let reply = mcpl_client::response_of(line)
                            .and_then(Result::ok)
                            .expect("a workload is a response");
                        let text = reply.json_bytes().expect("a workload is strict JSON");
                        let shown = session
                            .declared_result_bytes("bench", "tool", text, DEFAULT_BUDGET)
                            .expect("a workload parses");
                        written(&shown.content)
                    },
                    BatchSize::PerIteration,
                )
            },
        );
        group.bench_with_input(
            BenchmarkId::from_parameter("value_path"),
            &line,
            |b, line| {
                b.iter_batched(
                    || spilling_session(&folder),
                    |mut session| {
                        let (mut message, _) =
                            mcpl_classify::parse_json_repaired(line).expect("a workload parses");
                        let result = message["result"].take();
                        let shown =
                            session.declared_result("bench", "tool", &result, DEFAULT_BUDGET);
                        written(&shown.content)
                    },
                    BatchSize::PerIteration,
                )
            },
        );
        group.bench_with_input(
            BenchmarkId::from_parameter("bytes_path"),
            &bytes,
            |b, bytes| {
                b.iter(|| {
                    let shown = Session::new(RouteId::Anthropic)
                        .tool_result_bytes_within("bench", bytes, DEFAULT_BUDGET)
                        .expect("a workload parses");
                    written(&shown.content)
                })
            },
        );
        group.bench_with_input(
            BenchmarkId::from_parameter("tool_result"),
            &bytes,
            |b, bytes| {
                b.iter(|| {
                    let (value, _) =
                        mcpl_classify::parse_json_lenient(bytes).expect("a workload parses");
                    let shown = Session::new(RouteId::Anthropic).tool_result("bench", &value);
                    written(&shown.content)
                })
            },
        );
        group.bench_with_input(
            BenchmarkId::from_parameter("tool_result_unscaled"),
            &bytes,
            |b, bytes| {
                b.iter(|| {
                    let (value, _) =
                        mcpl_classify::parse_json_lenient(bytes).expect("a workload parses");
                    let shown = Session::new(RouteId::Anthropic)
                        .with_scaling(None)
                        .tool_result("bench", &value);
                    written(&shown.content)
                })
            },
        );
        #[cfg(feature = "rmcp")]
        group.bench_with_input(
            BenchmarkId::from_parameter("rmcp_adapter"),
            &bytes,
            |b, bytes| {
                b.iter(|| {
                    let typed = serde_json::from_slice::<rmcp::model::CallToolResult>(bytes)
                        .expect("rmcp reads the workload");
                    let shown = Session::new(RouteId::Anthropic).rmcp_tool_result("bench", &typed);
                    written(&shown.content)
                })
            },
        );
        group.finish();
    }
}

criterion_group!(benches, bench_session);
criterion_main!(benches);
