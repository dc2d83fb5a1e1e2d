//! Projecting a 1 MB text result, and a result of 10,000 small mixed blocks, on the tool-result
//! lanes (both copies are made by one call) for the anthropic and text-only routes.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcpl_lanes::{ImageLedger, Projector, Registry, Route, ServerName, ToolResult, UriPolicy};
use serde_json::{Value, json};

fn text_result(bytes: usize) -> Value {
    let line = "The quick brown fox jumps over the lazy dog; 0123456789.\n";
    json!({"content": [{"type": "text", "text": line.repeat(bytes / line.len())}]})
}

/// Text, small images, audio, references, embedded texts and blobs, and odd blocks, in turn.
fn mixed_result(blocks: usize) -> Value {
    let png = STANDARD.encode(include_bytes!("../../classify/tests/fixtures/image.png"));
    let wav = STANDARD.encode(&include_bytes!("../../classify/tests/fixtures/tone.wav")[..256]);
    let content: Vec<Value> = (0..blocks)
        .map(|n| match n % 8 {
            0 => json!({"type": "text", "text": format!("line {n} of the log")}),
            1 => json!({"type": "image", "mimeType": "image/png", "data": png}),
            2 => json!({"type": "audio", "mimeType": "audio/wav", "data": wav}),
            3 => json!({"type": "resource", "uri": format!("https://files.example.com/r/{n}?sig=x"),
                        "name": format!("file-{n}.csv"), "mimeType": "text/csv", "sizeBytes": n}),
            4 => json!({"type": "resource_link", "uri": format!("demo://resource/{n}"), "name": "link"}),
            5 => json!({"type": "resource", "resource": {"uri": format!("file:///n/{n}.md"), "text": "embedded"}}),
            6 => json!({"type": "resource", "resource": {"uri": "file:///d.pdf", "mimeType": "application/pdf", "blob": "JVBERi0xLjQK"}}),
            _ => json!({"type": "video", "data": "AAAA"}),
        })
        .collect();
    json!({ "content": content })
}

fn bench_tool_result(c: &mut Criterion) {
    let server = ServerName::new("bench");
    let inputs = [
        (
            "text_1MB",
            text_result(1_000_000),
            Throughput::Bytes(1_000_000),
        ),
        (
            "mixed_10000_blocks",
            mixed_result(10_000),
            Throughput::Elements(10_000),
        ),
    ];
    for (name, input, throughput) in &inputs {
        let mut group = c.benchmark_group(format!("tool_result/{name}"));
        group.throughput(throughput.clone());
        for route in [&Route::ANTHROPIC, &Route::TEXT_ONLY] {
            let (mut registry, mut ledger) = (Registry::with_seed(1), ImageLedger::with_seed(2));
            group.bench_with_input(
                BenchmarkId::from_parameter(route.name()),
                input,
                |b, input| {
                    b.iter(|| {
                        let mut lanes = Projector::new(
                            &mut registry,
                            &mut ledger,
                            route,
                            &server,
                            UriPolicy::Hidden,
                        );
                        let read = mcpl_lanes::ResultView::of_value(std::hint::black_box(input));
                        let copies = lanes.tool_result(&ToolResult::from_view(&read));
                        copies.stored.len()
                    })
                },
            );
        }
        group.finish();
    }
}

criterion_group!(benches, bench_tool_result);
criterion_main!(benches);
