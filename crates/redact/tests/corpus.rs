//! False positives on ordinary text: mcpl's Rust source and docs, and a generated server log.

use std::path::Path;
use std::time::Instant;

/// Findings per MB the corpus may show; it showed 3.6 when this was set (2026-12-02).
const MAX_PER_MB: f64 = 8.0;
/// Findings per 10,000 lines the corpus may show; it showed 2.1 when this was set.
const MAX_PER_10K_LINES: f64 = 4.0;

/// The corpus files, by name, with their text.
fn corpus() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt" || x == "md"))
        // The folder's README describes the findings, so it quotes one.
        .filter(|p| !p.ends_with("README.md"))
        .collect();
    files.sort();
    files
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            Some((p.file_name()?.to_string_lossy().into_owned(), text))
        })
        .collect()
}

#[test]
fn ordinary_text_has_few_false_positives() {
    let files = corpus();
    assert!(files.len() >= 3, "corpus missing");
    let (mut bytes, mut lines, mut findings, mut withheld) = (0usize, 0usize, 0usize, 0usize);
    for (name, text) in &files {
        bytes += text.len();
        lines += text.lines().count();
        for f in mcpl_redact::formats::credentials_in(text) {
            findings += 1;
            withheld += f.end - f.start;
            let line = text[..f.start].matches('\n').count() + 1;
            let shown: String = text[f.start..f.end].chars().take(60).collect();
            println!(
                "{name}:{line}: {} ({} bytes) {shown:?}",
                f.rule,
                f.end - f.start
            );
        }
    }
    let mb = bytes as f64 / 1e6;
    let per_mb = findings as f64 / mb;
    let per_10k = findings as f64 * 1e4 / lines as f64;
    println!(
        "corpus: {bytes} bytes, {lines} lines, {findings} findings, {withheld} bytes withheld; \
         {per_mb:.2} per MB, {per_10k:.2} per 10,000 lines"
    );
    assert!(per_mb <= MAX_PER_MB, "{per_mb:.2} findings per MB");
    assert!(
        per_10k <= MAX_PER_10K_LINES,
        "{per_10k:.2} findings per 10,000 lines"
    );
}

/// For information only: `cargo test --release -- --ignored --nocapture one_mb`.
#[test]
#[ignore = "prints a timing, for information; run by hand"]
fn one_mb_timing() {
    let all: String = corpus().into_iter().map(|(_, t)| t).collect();
    let mut cut = all.len().min(1_000_000);
    while !all.is_char_boundary(cut) {
        cut -= 1;
    }
    let text = &all[..cut];
    let first = Instant::now();
    let found = mcpl_redact::formats::credentials_in(text).len();
    let first = first.elapsed();
    let mut warm: Vec<_> = (0..5)
        .map(|_| {
            let t = Instant::now();
            let _ = mcpl_redact::formats::credentials_in(text);
            t.elapsed()
        })
        .collect();
    warm.sort();
    println!(
        "{} bytes, {found} findings: first call {first:?}, warm median {:?}",
        text.len(),
        warm[2]
    );
}

/// The whole second pass (credential parameters, token formats and vendor prefixes), as every
/// server string takes it, on the same corpus: its findings per MB, printed and bounded.
#[test]
fn the_whole_second_pass_has_few_false_positives() {
    let hidden = mcpl_redact::HiddenUris::of(&[], mcpl_redact::UriPolicy::Hidden);
    let (mut bytes, mut findings) = (0usize, 0usize);
    for (name, text) in corpus() {
        bytes += text.len();
        for (n, line) in text.lines().enumerate() {
            let shown = hidden.redact(line);
            let count = shown.matches(mcpl_redact::WITHHELD_SECRET).count();
            if count > 0 {
                println!("{name}:{}: {shown:.160}", n + 1);
            }
            findings += count;
        }
    }
    let per_mb = findings as f64 / (bytes as f64 / 1e6);
    println!("second pass: {bytes} bytes, {findings} findings, {per_mb:.2} per MB");
    assert!(per_mb <= MAX_PER_MB, "{per_mb:.2} findings per MB");
}
