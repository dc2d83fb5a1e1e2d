//! `Bound` (the budget's price) and the heuristic (the notices' quick figure) against the exact
//! o200k counter on a mixed corpus, and the counters' throughput:
//! `cargo bench -p mcpl-budget --bench estimate` (`cargo xtask bench estimate` prints it too).
//!
//! Each corpus part is cut into pieces of about 1,000 characters at line ends; the error is the
//! mean over pieces of |heuristic - exact| / exact, and the bias is the signed mean (positive
//! means the heuristic counts more). Then the ratio heuristic / o200k of every class, the
//! generated ones (`corpus/classes.rs`) among them. The targets: mean absolute error within 15%
//! on every part, and every class's ratio between 1.0 and 1.25 (the test
//! `estimate::the_heuristic_is_between_one_and_one_and_a_quarter_of_o200k_on_every_class` holds
//! it).

#[path = "corpus/classes.rs"]
mod classes;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcpl_budget::{Bound, Heuristic, O200k, TokenEstimator};

const PARTS: &[(&str, &str)] = &[
    ("english prose", include_str!("corpus/english-gpl3.txt")),
    ("rust code", include_str!("corpus/rust-block.rs.txt")),
    ("json", include_str!("corpus/json-peer-responses.json")),
    ("chinese", include_str!("corpus/chinese.txt")),
    ("japanese", include_str!("corpus/japanese.txt")),
    ("mixed", include_str!("corpus/mixed.txt")),
];

fn pieces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = 0;
    for (i, c) in text.char_indices() {
        chars += 1;
        if c == '\n' && chars >= 1000 {
            out.push(&text[start..=i]);
            start = i + 1;
            chars = 0;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

fn report_error() {
    println!("\nheuristic against o200k, per corpus part (pieces of ~1,000 characters):");
    println!(
        "{:<14} {:>6} {:>9} {:>9} {:>8} {:>8}",
        "part", "pieces", "exact", "heuristic", "MAE", "bias"
    );
    for (name, text) in PARTS {
        let pieces = pieces(text);
        let (mut abs, mut signed, mut exact_sum, mut heuristic_sum) = (0.0, 0.0, 0, 0);
        for piece in &pieces {
            let exact = O200k.count(piece);
            let guess = Heuristic.count(piece);
            exact_sum += exact;
            heuristic_sum += guess;
            let error = (guess as f64 - exact as f64) / exact.max(1) as f64;
            abs += error.abs();
            signed += error;
        }
        let n = pieces.len() as f64;
        println!(
            "{name:<14} {:>6} {exact_sum:>9} {heuristic_sum:>9} {:>7.1}% {:>+7.1}%",
            pieces.len(),
            100.0 * abs / n,
            100.0 * signed / n
        );
    }
}

fn report_ratios() {
    println!("\nbound / o200k and heuristic / o200k, per class:");
    println!(
        "{:<26} {:>7} {:>7} {:>6} {:>9} {:>6}",
        "class", "o200k", "bound", "ratio", "heuristic", "ratio"
    );
    let generated = classes::classes();
    let all = PARTS
        .iter()
        .map(|(name, text)| (*name, *text))
        .chain(generated.iter().map(|(name, text)| (*name, text.as_str())));
    for (name, text) in all {
        let (exact, bound, guess) = (O200k.count(text), Bound.count(text), Heuristic.count(text));
        println!(
            "{name:<26} {exact:>7} {bound:>7} {:>6.3} {guess:>9} {:>6.3}",
            bound as f64 / exact as f64,
            guess as f64 / exact as f64
        );
    }
}

fn bench_counters(c: &mut Criterion) {
    report_error();
    report_ratios();
    let all: String = PARTS.iter().map(|(_, t)| *t).collect();
    let mut group = c.benchmark_group("count_corpus");
    group.throughput(Throughput::Bytes(all.len() as u64));
    group.bench_function("heuristic", |b| {
        b.iter(|| Heuristic.count(std::hint::black_box(&all)))
    });
    group.bench_function("bound", |b| {
        b.iter(|| Bound.count(std::hint::black_box(&all)))
    });
    group.bench_function("o200k", |b| {
        b.iter(|| O200k.count(std::hint::black_box(&all)))
    });
    group.finish();
}

criterion_group!(benches, bench_counters);
criterion_main!(benches);
