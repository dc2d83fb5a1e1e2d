//! Spilling: the whole of a result with 100,000 small attachments written through the default
//! store, durably (written under temporary names, one sync, renamed into place, the folder
//! synced), into a fresh folder on every run.

use std::path::PathBuf;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use mcpl_budget::{LocalSpillStore, write_spill};
use mcpl_lanes::{ImageLedger, Projector, Registry, Route, ServerName, ToolResult, UriPolicy};
use serde_json::{Value, json};

const ATTACHMENTS: usize = 100_000;

/// A folder removed, with everything in it, when dropped (outside the timing).
struct Folder(PathBuf);

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn bench_spill(c: &mut Criterion) {
    let png = STANDARD.encode(mcpl_testkit::fixture("image.png"));
    let blocks: Vec<Value> = (0..ATTACHMENTS)
        .map(|_| json!({"type": "image", "mimeType": "image/png", "data": png}))
        .collect();
    let result = json!({ "content": blocks });
    let route = Route::ANTHROPIC;
    let server = ServerName::new("bench");
    let root = std::env::temp_dir().join(format!("mcpl-bench-spill-{}", std::process::id()));
    let mut runs = 0u64;
    let mut group = c.benchmark_group("spill");
    group.throughput(Throughput::Elements(ATTACHMENTS as u64));
    group.sample_size(10);
    group.bench_function("100000_attachments", |b| {
        b.iter_batched(
            || {
                runs += 1;
                Folder(root.join(runs.to_string()))
            },
            |folder| {
                let (mut registry, mut ledger) =
                    (Registry::with_seed(1), ImageLedger::with_seed(2));
                let mut projector = Projector {
                    registry: &mut registry,
                    ledger: &mut ledger,
                    route: &route,
                    server: &server,
                    uri_policy: UriPolicy::Hidden,
                };
                let mut store = LocalSpillStore::new(&folder.0).expect("a spill folder");
                let spill =
                    write_spill(&mut projector, &ToolResult::from_value(&result), &mut store)
                        .expect("the spill is written");
                assert_eq!(spill.attachments.len(), ATTACHMENTS);
                folder
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&root);
}

criterion_group!(benches, bench_spill);
criterion_main!(benches);
