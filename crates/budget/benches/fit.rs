//! Fitting and the whole library pipeline.
//!
//! `fit`: pricing a tool result's live copy, and pricing plus cutting it to the default budget,
//! for a 1 MB text result, a 10 MB result with 20 images, and 100,000 small blocks. Cutting
//! reads image dimensions from headers and never decodes an image.
//!
//! `pipeline`: bytes in, parse, classify, the tool-result lanes, fit to the default budget on the
//! anthropic route (the cut, no spill writes), the result read straight from the bytes
//! (`mcpl_pipeline`, `ResultView`) and, for comparison, parsed into a `Value` first
//! (`mcpl_pipeline_from_value`), beside two baselines of the same bytes: a plain
//! `serde_json::from_slice` into a `Value`, and the parse a Rust host built on rmcp pays first,
//! into rmcp's typed `CallToolResult` (`rmcp_parse`), on the three standard workloads `mcpl_testkit::workloads` makes in memory
//! (`w1-mixed-10mb`, `w2-100k-blocks`, `w3-one-big-image`), the same bytes on every run.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcpl_budget::{Bound, DEFAULT_BUDGET, PricedRoute, Pricer, cut};
use mcpl_lanes::{ImageLedger, Projector, Registry, ServerName, ToolResult, UriPolicy};
use serde_json::{Value, json};

const SPILL_PATH: &str = "/tmp/mcpl-bench/spill.txt";

/// Projects and fits one result as a host would, without writing a spill.
fn pipeline_fit(result: &ToolResult<'_>, route: &PricedRoute) -> usize {
    let (mut registry, mut ledger) = (Registry::with_seed(1), ImageLedger::with_seed(2));
    let server = ServerName::new("bench");
    let mut projector = Projector::new(
        &mut registry,
        &mut ledger,
        &route.lanes,
        &server,
        UriPolicy::Hidden,
    );
    let pricer = Pricer::new(&Bound, route);
    let copies = projector.tool_result(result);
    match cut(&copies, pricer, DEFAULT_BUDGET, SPILL_PATH) {
        Ok(Some((fitted, _))) => fitted.stored.len(),
        _ => copies.stored.len(),
    }
}

fn png_noise(width: u32, height: u32) -> Vec<u8> {
    // A real PNG header for the given size; the rest is filler, as dimensions come from the
    // header and fitting never decodes.
    let mut png = mcpl_testkit::fixture("image.png");
    png[16..20].copy_from_slice(&width.to_be_bytes());
    png[20..24].copy_from_slice(&height.to_be_bytes());
    let body = png.split_off(png.len() - 12);
    png.extend((0..440_000usize).map(|i| (i * 131 % 251) as u8));
    png.extend(body);
    png
}

fn fit_inputs() -> Vec<(&'static str, Value, Throughput)> {
    let line = "The quick brown fox jumps over the lazy dog; 0123456789.\n";
    let text_1mb =
        json!({"content": [{"type": "text", "text": line.repeat(1_000_000 / line.len())}]});
    let image = STANDARD.encode(png_noise(1400, 1300));
    let mut mixed = vec![json!({"type": "text", "text": line.repeat(1_000_000 / line.len())})];
    for _ in 0..20 {
        mixed.push(json!({"type": "image", "mimeType": "image/png", "data": image}));
        mixed.push(json!({"type": "text", "text": line.repeat(2_000 / line.len())}));
    }
    let mixed = json!({ "content": mixed });
    let blocks: Vec<Value> = (0..100_000)
        .map(|i| json!({"type": "text", "text": format!("row {i}: the quick brown fox")}))
        .collect();
    let blocks = json!({ "content": blocks });
    let size = |v: &Value| Throughput::Bytes(serde_json::to_vec(v).map_or(0, |b| b.len()) as u64);
    vec![
        ("text_1MB", text_1mb.clone(), size(&text_1mb)),
        ("mixed_10MB_20_images", mixed.clone(), size(&mixed)),
        ("blocks_100000", blocks, Throughput::Elements(100_000)),
    ]
}

fn bench_fit(c: &mut Criterion) {
    let route = PricedRoute::ANTHROPIC;
    let pricer = Pricer::new(&Bound, &route);
    for (name, result, throughput) in fit_inputs() {
        let (mut registry, mut ledger) = (Registry::with_seed(1), ImageLedger::with_seed(2));
        let server = ServerName::new("bench");
        let mut projector = Projector::new(
            &mut registry,
            &mut ledger,
            &route.lanes,
            &server,
            UriPolicy::Hidden,
        );
        let read = mcpl_lanes::ResultView::of_value(&result);
        let copies = projector.tool_result(&ToolResult::from_view(&read));
        let mut group = c.benchmark_group(format!("fit/{name}"));
        group.throughput(throughput);
        group.bench_function("price", |b| {
            b.iter(|| pricer.live(&copies.live, &copies.stored).unwrap_or(0))
        });
        group.bench_function("price_and_cut", |b| {
            b.iter(|| match cut(&copies, pricer, DEFAULT_BUDGET, SPILL_PATH) {
                Ok(Some((_, price))) => price,
                _ => 0,
            })
        });
        group.finish();
    }
}

fn bench_pipeline(c: &mut Criterion) {
    let route = PricedRoute::ANTHROPIC;
    for mcpl_testkit::Workload { name, bytes } in mcpl_testkit::workloads() {
        // A baseline that failed would time an early error, not a parse.
        let peer = serde_json::from_slice::<rmcp::model::CallToolResult>(&bytes);
        assert!(peer.is_ok(), "rmcp reads {name}: {peer:?}");
        let mut group = c.benchmark_group(format!("pipeline/{name}"));
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.sample_size(20);
        group.bench_with_input(
            BenchmarkId::from_parameter("serde_json_parse"),
            &bytes,
            |b, bytes| {
                b.iter(|| {
                    serde_json::from_slice::<Value>(bytes).map_or(0, |v| v.is_object() as usize)
                })
            },
        );
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
            BenchmarkId::from_parameter("mcpl_pipeline"),
            &bytes,
            |b, bytes| {
                b.iter(|| {
                    let mut mended = Vec::new();
                    let (view, _) = mcpl_classify::parse_view_mending(bytes, &mut mended)
                        .expect("a workload parses");
                    pipeline_fit(&ToolResult::from_view(&view), &route)
                })
            },
        );
        group.bench_with_input(
            BenchmarkId::from_parameter("mcpl_pipeline_from_value"),
            &bytes,
            |b, bytes| {
                b.iter(|| {
                    let (value, _) =
                        mcpl_classify::parse_json_lenient(bytes).expect("a workload parses");
                    let read = mcpl_lanes::ResultView::of_value(&value);
                    pipeline_fit(&ToolResult::from_view(&read), &route)
                })
            },
        );
        group.finish();
    }
}

criterion_group!(benches, bench_fit, bench_pipeline);
criterion_main!(benches);
