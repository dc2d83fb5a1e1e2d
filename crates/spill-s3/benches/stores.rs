//! Spills to the object store against spills to the local folder, in one run: the same result
//! (64 KB of text around one PNG, three files with the manifest) written whole through each
//! store, so criterion's time per spill is the latency and its bytes per second the throughput.
//! The object store is the S3-compatible server `MCPL_S3_ENDPOINT` names (`.ci/run` starts
//! moto's); without one only the local store is measured.

use std::path::PathBuf;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcpl_budget::{LocalSpillStore, S3Location, SpillStore, write_spill};
use mcpl_lanes::{ImageLedger, Projector, Registry, Route, ServerName, ToolResult, UriPolicy};
use mcpl_spill_s3::S3SpillStore;
use serde_json::{Value, json};

/// A folder removed, with everything in it, when dropped.
struct Folder(PathBuf);

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn spill_once(result: &Value, store: &mut dyn SpillStore) {
    let (mut registry, mut ledger) = (Registry::with_seed(1), ImageLedger::with_seed(2));
    let route = Route::ANTHROPIC;
    let server = ServerName::new("bench");
    let mut projector = Projector::new(
        &mut registry,
        &mut ledger,
        &route,
        &server,
        UriPolicy::Hidden,
    );
    let read = mcpl_lanes::ResultView::of_value(result);
    write_spill(&mut projector, &ToolResult::from_view(&read), store).expect("a spill");
}

fn bench_stores(c: &mut Criterion) {
    let png = STANDARD.encode(mcpl_testkit::fixture("image.png"));
    let text =
        "00001 2025-01-01T00:00:01Z INFO worker-1 processed batch 1: 128 records\n".repeat(900);
    let result = json!({"content": [
        {"type": "text", "text": text},
        {"type": "image", "data": png, "mimeType": "image/png"},
        {"type": "text", "text": "the end"},
    ]});
    let mut group = c.benchmark_group("spill_store");
    group.throughput(Throughput::Bytes(text.len() as u64 + 167));
    let folder =
        Folder(std::env::temp_dir().join(format!("mcpl-bench-stores-{}", std::process::id())));
    let mut local = LocalSpillStore::new(&folder.0).expect("a spill folder");
    group.bench_function("local", |b| b.iter(|| spill_once(&result, &mut local)));
    match std::env::var("MCPL_S3_ENDPOINT") {
        Ok(endpoint) => {
            let bucket = format!("mcpl-bench-{}", std::process::id());
            mcpl_testkit::create_bucket(&endpoint, &bucket);
            let location = S3Location::new(bucket)
                .with_prefix("bench/")
                .with_endpoint(endpoint)
                .with_region("us-east-1");
            let mut s3 = S3SpillStore::with_credentials(&location, "testing", "testing")
                .expect("an object store");
            group.bench_function("s3", |b| b.iter(|| spill_once(&result, &mut s3)));
        }
        Err(_) => {
            eprintln!("skipped: MCPL_S3_ENDPOINT is not set; only the local store is measured")
        }
    }
    group.finish();
}

criterion_group!(benches, bench_stores);
criterion_main!(benches);
