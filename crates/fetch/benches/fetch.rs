//! The fetcher's throughput on loopback: a 64 MiB payload through [`Fetcher::fetch`] (dial,
//! stream, count, sha256, write under a temporary name, sniff, rename, mark the record) against
//! a plain ureq download of the same bytes into a file, with the same agent settings. The
//! target: the fetcher within 1.5x of the plain download.
//!
//! `cargo bench -p mcpl-fetch --bench fetch`

use std::io::{BufWriter, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use mcpl_classify::{Block, classify};
use mcpl_fetch::FetchOptions;
use mcpl_fetch::{Fetcher, NoResources};
use mcpl_lanes::{Registry, ServerName};
use mcpl_loopback::{Answer, Loopback};
use serde_json::json;

const PAYLOAD_BYTES: usize = 64 * 1024 * 1024;
const TOKEN: &str = "bench-token";

/// A payload no sniffer names and no compressor would shrink: a xorshift stream.
fn payload() -> Arc<[u8]> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut bytes = Vec::with_capacity(PAYLOAD_BYTES);
    while bytes.len() < PAYLOAD_BYTES {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        bytes.extend_from_slice(&state.to_le_bytes());
    }
    bytes.truncate(PAYLOAD_BYTES);
    bytes.into()
}

/// The fetcher's agent settings, for the plain download.
fn plain_agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .proxy(None)
        .build()
        .new_agent()
}

/// Downloads `uri` into `path` the plain way: the same request, the same buffer sizes, no
/// checks.
fn plain_download(agent: &ureq::Agent, uri: &str, path: &Path) -> u64 {
    let response = agent
        .get(uri)
        .header("Authorization", format!("Bearer {TOKEN}"))
        .config()
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .call()
        .unwrap();
    let mut reader = response.into_body().into_reader();
    let mut file = BufWriter::with_capacity(256 * 1024, std::fs::File::create(path).unwrap());
    let mut buffer = vec![0u8; 64 * 1024];
    let mut total = 0;
    loop {
        let read = reader.read(&mut buffer).unwrap();
        if read == 0 {
            break;
        }
        total += read as u64;
        file.write_all(&buffer[..read]).unwrap();
    }
    file.flush().unwrap();
    total
}

/// A file removed when the sample that made it is done with.
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn fetch_throughput(c: &mut Criterion) {
    let bytes = payload();
    let server =
        Loopback::start(move |_| Answer::bytes("application/octet-stream", Arc::clone(&bytes)))
            .expect("a loopback server");
    let folder = std::env::temp_dir().join(format!("mcpl-fetch-bench-{}", std::process::id()));
    let mut fetcher = Fetcher::new(folder.join("refs")).expect("the fetch folder");
    fetcher.add_server(
        "bench",
        &FetchOptions::default()
            .with_origin(server.origin())
            .with_token(TOKEN)
            .with_budget_bytes(u64::MAX),
    );
    // The setup registers and the routine fetches, each borrowing the registry in turn.
    let registry = std::cell::RefCell::new(Registry::new());
    let server_name = ServerName::new("bench");
    let mut next = 0u64;

    let mut group = c.benchmark_group("fetch 64 MiB on loopback");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(PAYLOAD_BYTES as u64));
    // A reference that claims no digest (nothing to hash), and one that claims the payload's.
    let digest = {
        use base64::Engine as _;
        use sha2::Digest as _;
        let hash = sha2::Sha256::digest(&payload()[..]);
        format!(
            "sha256:{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(hash)
        )
    };
    for (name, claimed) in [
        ("Fetcher::fetch", None),
        ("Fetcher::fetch, digest claimed", Some(digest)),
    ] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    // A fresh reference each time: a fetched one answers without dialing.
                    next += 1;
                    let mut block = json!({"type": "resource",
                    "uri": format!("{}/payload/{next}", server.origin()),
                    "sizeBytes": PAYLOAD_BYTES});
                    if let Some(digest) = &claimed {
                        block["digest"] = json!(digest);
                    }
                    let Block::Reference(reference) = classify(&block) else {
                        unreachable!("a resource block is a reference")
                    };
                    registry
                        .borrow_mut()
                        .register(&reference, &server_name)
                        .id
                        .clone()
                },
                |id| {
                    let saved = fetcher
                        .fetch(
                            &mut registry.borrow_mut(),
                            id.as_str(),
                            None,
                            &mut NoResources,
                        )
                        .expect("the fetch");
                    assert_eq!(saved.bytes, PAYLOAD_BYTES as u64);
                    Removed(PathBuf::from(saved.path))
                },
                BatchSize::PerIteration,
            );
        });
    }
    let agent = plain_agent();
    let plain_path = folder.join("plain.bin");
    let uri = format!("{}/payload/plain", server.origin());
    group.bench_function("plain ureq download", |b| {
        b.iter_batched(
            || (),
            |()| {
                assert_eq!(
                    plain_download(&agent, &uri, &plain_path),
                    PAYLOAD_BYTES as u64
                );
                Removed(plain_path.clone())
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&folder);
}

criterion_group!(benches, fetch_throughput);
criterion_main!(benches);
