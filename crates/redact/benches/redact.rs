//! Redacting server strings: 1 MB of prose, 1 MB of JSON-like text (ids, digests, urls with no
//! credential) and 10,000 short log lines, through both passes, beside one plain pass over the
//! same bytes (`plain`: lower-casing them), with no secret held, 10 host secrets, and a session
//! that hid 1,000 uris (their parts searched for too). Then runs whose every piece has
//! something to withhold (`withheld_everywhere`): 20,000 short texts, each with a signed url the
//! result hides, and one 1 MB text of 15,000 such lines with a credential parameter each, so
//! that the cost of many pieces against many findings shows.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcpl_redact::{HiddenSet, HiddenUris, UriPolicy};
use serde_json::json;

fn prose(bytes: usize) -> String {
    let line = "The quick brown fox jumps over the lazy dog; see the report for 2026.\n";
    line.repeat(bytes / line.len())
}

fn json_like(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 256);
    let mut n = 0u64;
    while out.len() < bytes {
        n += 1;
        out.push_str(&format!(
            "{{\"id\": \"{:016x}\", \"digest\": \"sha256:{:064x}\", \"url\": \"https://docs.example.com/a/{n}?page={n}\", \"ok\": true}}\n",
            n.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            u128::from(n) * 0x1234_5678_9abc_def1
        ));
    }
    out
}

fn log_lines(count: usize) -> Vec<String> {
    (0..count)
        .map(|n| {
            format!(
                "2026-12-02T05:{:02}:{:02}Z info request {n} served in {}ms",
                n % 60,
                n % 59,
                n % 97
            )
        })
        .collect()
}

/// A session holding nothing, 10 host secrets, or 1,000 hidden uris.
fn sessions() -> Vec<(&'static str, HiddenSet)> {
    let mut secrets = HiddenSet::new();
    for n in 0..10 {
        secrets.insert_secret(&format!("sk-test-{n:04}-Q7f2k9XbT4mZ8pL1"));
    }
    let mut uris = HiddenSet::new();
    let links: Vec<_> = (0..1000)
        .map(|n| json!({"type": "resource_link", "uri": format!("https://files.example.com/s/{n:06}x7q1k2/r.pdf?sig=Zm9v{n:06}YmFy"), "name": "r"}))
        .collect();
    let result = json!({"content": links});
    HiddenUris::in_session(&[&result], UriPolicy::Hidden, &mut uris, true);
    vec![
        ("no_secrets", HiddenSet::new()),
        ("host_secrets_10", secrets),
        ("hidden_uris_1000", uris),
    ]
}

fn bench_redact(c: &mut Criterion) {
    let texts = [
        ("prose_1MB", vec![prose(1_000_000)]),
        ("json_1MB", vec![json_like(1_000_000)]),
        ("log_10000_lines", log_lines(10_000)),
    ];
    for (name, pieces) in &texts {
        let bytes: usize = pieces.iter().map(String::len).sum();
        let mut group = c.benchmark_group(format!("redact/{name}"));
        group.throughput(Throughput::Bytes(bytes as u64));
        group.sample_size(10);
        group.bench_function("plain", |b| {
            b.iter(|| pieces.iter().map(|p| p.to_lowercase().len()).sum::<usize>())
        });
        for (session_name, mut session) in sessions() {
            let hidden = HiddenUris::in_session(&[], UriPolicy::Hidden, &mut session, true);
            group.bench_with_input(
                BenchmarkId::from_parameter(session_name),
                pieces,
                |b, pieces| b.iter(|| pieces.iter().map(|p| hidden.redact(p).len()).sum::<usize>()),
            );
        }
        group.finish();
    }
}

/// `count` lines, each a signed url of the result (hidden) and, when `with_key`, an api key.
fn withheld_lines(count: usize, with_key: bool) -> (Vec<String>, HiddenUris<'static>) {
    let lines: Vec<String> = (0..count)
        .map(|n| match with_key {
            true => format!("line {n} https://h.example/p/{n}?sig=s{n}zz api_key=k{n}q7 done\n"),
            false => format!("see https://h.example/r/{n}?sig=s{n} the quick brown fox"),
        })
        .collect();
    let texts: Vec<_> = lines
        .iter()
        .map(|line| json!({"type": "text", "text": line}))
        .collect();
    let result = json!({"content": texts});
    let hidden = HiddenUris::in_session(&[&result], UriPolicy::Hidden, &mut HiddenSet::new(), true);
    (lines, hidden)
}

fn bench_withheld_everywhere(c: &mut Criterion) {
    let mut group = c.benchmark_group("redact/withheld_everywhere");
    group.sample_size(10);
    let (blocks, hidden) = withheld_lines(20_000, false);
    let pieces: Vec<&str> = blocks.iter().map(String::as_str).collect();
    group.throughput(Throughput::Bytes(
        blocks.iter().map(String::len).sum::<usize>() as u64,
    ));
    group.bench_function("run_of_20000_texts", |b| {
        b.iter(|| hidden.redact_run(&pieces).len())
    });
    let (lines, hidden) = withheld_lines(15_000, true);
    let text = lines.concat();
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("one_text_of_15000_lines", |b| {
        b.iter(|| hidden.redact(&text).len())
    });
    group.finish();
}

criterion_group!(benches, bench_redact, bench_withheld_everywhere);
criterion_main!(benches);
