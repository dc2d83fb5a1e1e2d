//! Spilling: the whole of a result with 100,000 small attachments, each a different PNG (the
//! fixture with the image's number after its end, so no two payloads are the same bytes),
//! written through the default store durably (decision 0080: the attachments into a hidden
//! folder of the spill's own, one sync, the folder renamed into place once, the store folder
//! synced), into a fresh folder on every run. Every run's folder is kept until the last run has
//! been timed, then all are removed: on a file system mounted with `discard` (as this project's
//! machines are) the blocks of 100,000 removed files are trimmed for tens of seconds after the
//! removal returns, and a spill timed in that while measured the trimming of the bench's own
//! cleanup, not the spill (decision 0080's figures swung between 10 s and 55 s for that reason).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use mcpl_budget::{LocalSpillStore, write_spill};
use mcpl_lanes::{ImageLedger, Projector, Registry, Route, ServerName, ToolResult, UriPolicy};
use serde_json::{Value, json};

const ATTACHMENTS: usize = 100_000;

/// The bench's folder, removed with every run's files in it when dropped (after the timing).
struct Folder(PathBuf);

impl Drop for Folder {
    fn drop(&mut self) {
        remove_files_in_parallel(&self.0);
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Removes the files in `root`, in its folders and in theirs, from several threads: on a file system
/// mounted with `discard` each removal waits for the disk, and 100,000 of them one at a time
/// made every sample take minutes.
fn remove_files_in_parallel(root: &Path) {
    const THREADS: usize = 16;
    let mut files = Vec::new();
    let mut folders = vec![(root.to_path_buf(), 0)];
    while let Some((folder, depth)) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                if depth < 2 {
                    folders.push((entry.path(), depth + 1));
                }
            } else {
                files.push(entry.path());
            }
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
    let root =
        Folder(std::env::temp_dir().join(format!("mcpl-bench-spill-{}", std::process::id())));
    let mut runs = 0u64;
    let mut group = c.benchmark_group("spill");
    group.throughput(Throughput::Elements(ATTACHMENTS as u64));
    // One spill a sample, ten samples and one warm-up spill: 1.1 million files on disk at the end.
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_millis(1));
    group.bench_function("100000_attachments", |b| {
        b.iter_custom(|spills| {
            let mut taken = Duration::ZERO;
            for _ in 0..spills {
                runs += 1;
                let folder = root.0.join(runs.to_string());
                let (mut registry, mut ledger) =
                    (Registry::with_seed(1), ImageLedger::with_seed(2));
                let started = Instant::now();
                let mut projector = Projector::new(
                    &mut registry,
                    &mut ledger,
                    &route,
                    &server,
                    UriPolicy::Hidden,
                );
                let mut store = LocalSpillStore::new(&folder).expect("a spill folder");
                let read = mcpl_lanes::ResultView::of_value(&result);
                let spill = write_spill(&mut projector, &ToolResult::from_view(&read), &mut store)
                    .expect("the spill is written");
                taken += started.elapsed();
                assert_eq!(spill.attachments.len(), ATTACHMENTS);
            }
            taken
        })
    });
    group.finish();
}

/// A usual spill (200 KB of text and an image) alone, then beside a writer that keeps the file
/// system's dirty pages full: a spill syncs its own files only (decision 0121), so the writer's
/// data is not its wait. With one `syncfs` per spill, the second took 132 to 588 ms.
fn bench_small_spill(c: &mut Criterion) {
    use std::io::Write as _;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let png = STANDARD.encode(mcpl_testkit::fixture("image.png"));
    let text =
        "00001 2025-01-01T00:00:01Z INFO worker-1 processed batch 1: 128 records\n".repeat(2800);
    let result = json!({"content": [
        {"type": "text", "text": text},
        {"type": "image", "mimeType": "image/png", "data": png},
    ]});
    let read = mcpl_lanes::ResultView::of_value(&result);
    let parsed = ToolResult::from_view(&read);
    let route = Route::ANTHROPIC;
    let server = ServerName::new("bench");
    let root =
        Folder(std::env::temp_dir().join(format!("mcpl-bench-small-{}", std::process::id())));
    let mut store = LocalSpillStore::new(root.0.join("spills")).expect("a spill folder");
    let mut spill_once = || {
        let (mut registry, mut ledger) = (Registry::with_seed(1), ImageLedger::with_seed(2));
        let mut projector = Projector::new(
            &mut registry,
            &mut ledger,
            &route,
            &server,
            UriPolicy::Hidden,
        );
        write_spill(&mut projector, &parsed, &mut store).expect("the spill is written")
    };
    let mut group = c.benchmark_group("small_spill");
    group.throughput(Throughput::Bytes(result.to_string().len() as u64));
    group.bench_function("alone", |b| b.iter(&mut spill_once));
    // The other writer: 4 MiB at a time into one file, never synced, rewound every 256 MiB.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, path) = (Arc::clone(&stop), root.0.join("other-writer.bin"));
        std::thread::spawn(move || {
            let mut file = std::fs::File::create(path).expect("the writer's file");
            let chunk = vec![7u8; 4 << 20];
            let mut written = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if file.write_all(&chunk).is_err() {
                    return;
                }
                written += chunk.len() as u64;
                if written >= 256 << 20 {
                    let _ = file.set_len(0);
                    let _ = std::io::Seek::rewind(&mut file);
                    written = 0;
                }
            }
        })
    };
    group.bench_function("beside_a_writer", |b| b.iter(&mut spill_once));
    stop.store(true, Ordering::Relaxed);
    let _ = writer.join();
    group.finish();
}

criterion_group!(benches, bench_spill, bench_small_spill);
criterion_main!(benches);
