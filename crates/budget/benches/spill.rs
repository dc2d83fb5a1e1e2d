//! Spilling: the whole of a result with 100,000 small attachments, each a different PNG (the
//! fixture with the image's number after its end, so no two payloads are the same bytes),
//! written through the default store durably (decision 0080: the attachments into a hidden
//! folder of the spill's own, one sync, the folder renamed into place once, the store folder
//! synced), into a fresh folder on every run, removed outside the timing.

use std::path::{Path, PathBuf};

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
        remove_files_in_parallel(&self.0);
        let _ = std::fs::remove_dir_all(&self.0);
        settle(self.0.parent().unwrap_or(&self.0));
    }
}

/// Waits until the file system has written out the removals: freeing 100,000 files' blocks
/// (and discarding them, where it is mounted so) would otherwise go on during the next timed
/// spill and be counted in it.
#[cfg(target_os = "linux")]
fn settle(dir: &Path) {
    if let Ok(folder) = std::fs::File::open(dir) {
        let _ = rustix::fs::syncfs(&folder);
    }
}

#[cfg(not(target_os = "linux"))]
fn settle(_dir: &Path) {}

/// Removes the files in `root` and in its folders from several threads: on a file system
/// mounted with `discard` each removal waits for the disk, and 100,000 of them one at a time
/// made every sample take minutes.
fn remove_files_in_parallel(root: &Path) {
    const THREADS: usize = 16;
    let mut files = Vec::new();
    for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            let inner = std::fs::read_dir(entry.path())
                .into_iter()
                .flatten()
                .flatten();
            files.extend(inner.map(|inner| inner.path()));
        } else {
            files.push(entry.path());
        }
    }
    let share = files.len().div_ceil(THREADS).max(1);
    std::thread::scope(|scope| {
        for chunk in files.chunks(share) {
            scope.spawn(move || {
                for file in chunk {
                    let _ = std::fs::remove_file(file);
                }
            });
        }
    });
}

fn bench_spill(c: &mut Criterion) {
    let png = mcpl_testkit::fixture("image.png");
    let blocks: Vec<Value> = (0..ATTACHMENTS)
        .map(|n| {
            // Bytes after a PNG's end are ignored by its readers but make each payload unique.
            let mut bytes = png.clone();
            bytes.extend_from_slice(&(n as u32).to_be_bytes());
            json!({"type": "image", "mimeType": "image/png", "data": STANDARD.encode(bytes)})
        })
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
