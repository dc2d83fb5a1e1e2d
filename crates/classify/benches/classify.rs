//! Classifying an image block of 5 KiB and of 5 MiB, from already parsed JSON.
//!
//! The spec's target: the 5 MiB block costs no more than twice the 5 KiB one, because only the
//! payload's first bytes are decoded and nothing is copied.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mcpl_classify::classify;
use serde_json::{Value, json};

/// A PNG of `size` bytes: a real signature and IHDR, one chunk of filler, and the IEND chunk.
fn png_of_size(size: usize) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend_from_slice(&13u32.to_be_bytes());
    png.extend_from_slice(b"IHDR");
    png.extend_from_slice(&640u32.to_be_bytes());
    png.extend_from_slice(&480u32.to_be_bytes());
    png.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    let filler = size.saturating_sub(png.len() + 12 + 12);
    png.extend_from_slice(&(filler as u32).to_be_bytes());
    png.extend_from_slice(b"IDAT");
    png.extend((0..filler).map(|i| (i * 131 % 251) as u8));
    png.extend_from_slice(&[0, 0, 0, 0]);
    png.extend_from_slice(b"\0\0\0\0IEND\xAE\x42\x60\x82");
    png
}

fn image_block(size: usize) -> Value {
    json!({"type": "image", "mimeType": "image/png", "data": STANDARD.encode(png_of_size(size))})
}

fn bench_classify(c: &mut Criterion) {
    let mut group = c.benchmark_group("classify_image_block");
    for (label, size) in [("5KiB", 5 * 1024), ("5MiB", 5 * 1024 * 1024)] {
        let block = image_block(size);
        group.bench_with_input(BenchmarkId::from_parameter(label), &block, |b, block| {
            b.iter(|| classify(std::hint::black_box(block)).kind_name())
        });
    }
    group.finish();
}

criterion_group!(benches, bench_classify);
criterion_main!(benches);
