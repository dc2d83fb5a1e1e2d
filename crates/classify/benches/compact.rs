//! A request body written out and measured: `compact_json` and `compact_json_len` beside
//! `serde_json::to_vec` and the count through `Value`'s `Display` they replace, on the three
//! standard workloads read as a `Value` (megabytes of base64 in w1 and w3, 100,000 small
//! blocks in w2).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcpl_classify::{compact_json, compact_json_len};
use serde_json::Value;

/// What `Value`'s `Display` writes, counted and kept nowhere: how a body was measured before.
fn display_len(value: &Value) -> u64 {
    struct Counter(u64);
    impl std::fmt::Write for Counter {
        fn write_str(&mut self, text: &str) -> std::fmt::Result {
            self.0 += text.len() as u64;
            Ok(())
        }
    }
    let mut counter = Counter(0);
    std::fmt::Write::write_fmt(&mut counter, format_args!("{value}")).map_or(0, |()| counter.0)
}

fn bench_compact(c: &mut Criterion) {
    for mcpl_testkit::Workload { name, bytes } in mcpl_testkit::workloads() {
        let value: Value = serde_json::from_slice(&bytes).expect("a workload is JSON");
        assert_eq!(compact_json(&value), serde_json::to_vec(&value).unwrap());
        let mut group = c.benchmark_group(format!("compact/{name}"));
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.sample_size(30);
        group.bench_with_input(
            BenchmarkId::from_parameter("serde_json_to_vec"),
            &value,
            |b, v| b.iter(|| serde_json::to_vec(v).map_or(0, |body| body.len())),
        );
        group.bench_with_input(
            BenchmarkId::from_parameter("compact_json"),
            &value,
            |b, v| b.iter(|| compact_json(v).len()),
        );
        group.bench_with_input(
            BenchmarkId::from_parameter("display_len"),
            &value,
            |b, v| b.iter(|| display_len(v)),
        );
        group.bench_with_input(
            BenchmarkId::from_parameter("compact_json_len"),
            &value,
            |b, v| b.iter(|| compact_json_len(v)),
        );
        group.finish();
    }
}

criterion_group!(benches, bench_compact);
criterion_main!(benches);
