//! The path a host's tool result takes through a session: bytes as the client reads them,
//! read leniently into a `Value`, then `Session::tool_result` (scaling, the tool-result lanes,
//! the fit to the default budget, the encoding for the anthropic route; no spill store, so no
//! spill writes), beside the parse a Rust host built on rmcp pays first, into rmcp's typed
//! `CallToolResult` (`rmcp_parse`), on the three standard workloads `mcpl_testkit::workloads`
//! makes in memory (`w1-mixed-10mb`, `w2-100k-blocks`, `w3-one-big-image`).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcpl_session::{RouteId, Session};

fn bench_session(c: &mut Criterion) {
    for mcpl_testkit::Workload { name, bytes } in mcpl_testkit::workloads() {
        // A baseline that failed would time an early error, not a parse.
        let peer = serde_json::from_slice::<rmcp::model::CallToolResult>(&bytes);
        assert!(peer.is_ok(), "rmcp reads {name}: {peer:?}");
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
            BenchmarkId::from_parameter("tool_result"),
            &bytes,
            |b, bytes| {
                b.iter(|| {
                    let (value, _) =
                        mcpl_classify::parse_json_lenient(bytes).expect("a workload parses");
                    let shown = Session::new(RouteId::Anthropic).tool_result("bench", &value);
                    shown.tokens
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
                    shown.tokens
                })
            },
        );
        group.finish();
    }
}

criterion_group!(benches, bench_session);
criterion_main!(benches);
