//! The three standard performance workloads, made in memory from fixed seeds, so figures from
//! different machines and runs compare (the same seed gives the same bytes everywhere):
//!
//! - `w1-mixed-10mb`: one CallToolResult of about 1 MB of text, then 20 PNG images of noise
//!   (360x300, about 430 KB of base64 each) with about 2 KB of text after each; about 9.8 MB.
//! - `w2-100k-blocks`: one CallToolResult of 100,000 small blocks, cycling through a text, an
//!   embedded text resource with a signed uri, a resource link and another text; about 11 MB.
//! - `w3-one-big-image`: one CallToolResult holding a single 1400x1300 PNG of noise; about
//!   7.3 MB.
//!
//! The PNGs are real: a valid header, a zlib stream of stored (uncompressed) deflate blocks, as
//! noise does not compress, and correct checksums, so a decoder reads them.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// One workload: its name and its JSON bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// `w1-mixed-10mb`, `w2-100k-blocks` or `w3-one-big-image`.
    pub name: &'static str,
    /// One CallToolResult as JSON.
    pub bytes: Vec<u8>,
}

/// The three workloads, in order.
pub fn workloads() -> [Workload; 3] {
    [
        Workload {
            name: "w1-mixed-10mb",
            bytes: w1_mixed_10mb(),
        },
        Workload {
            name: "w2-100k-blocks",
            bytes: w2_100k_blocks(),
        },
        Workload {
            name: "w3-one-big-image",
            bytes: w3_one_big_image(),
        },
    ]
}

/// About 1 MB of text, then 20 PNG images with about 2 KB of text after each.
pub fn w1_mixed_10mb() -> Vec<u8> {
    let mut random = SplitMix64(11);
    let mut content = vec![json!({"type": "text", "text": random.text(1_000_000)})];
    let image = STANDARD.encode(random.png(360, 300));
    for _ in 0..20 {
        content.push(json!({"type": "image", "data": image, "mimeType": "image/png"}));
        content.push(json!({"type": "text", "text": random.text(2_000)}));
    }
    to_json(&json!({ "content": content }))
}

/// 100,000 small blocks: texts, embedded text resources with signed uris, resource links.
pub fn w2_100k_blocks() -> Vec<u8> {
    let mut random = SplitMix64(12);
    let content: Vec<Value> = (0..100_000)
        .map(|i| match i % 4 {
            0 => json!({"type": "text", "text": format!("row {i}: {}", random.text(60))}),
            1 => json!({"type": "resource", "resource": {
                "uri": format!("https://h.example/r/{i}?sig=s{i}"),
                "mimeType": "text/plain",
                "text": random.text(40),
            }}),
            2 => json!({
                "type": "resource_link",
                "uri": format!("https://h.example/l/{i}"),
                "name": format!("file{i}.csv"),
                "mimeType": "text/csv",
            }),
            _ => json!({"type": "text", "text": random.text(30)}),
        })
        .collect();
    to_json(&json!({ "content": content }))
}

/// A single 1400x1300 PNG of noise.
pub fn w3_one_big_image() -> Vec<u8> {
    let mut random = SplitMix64(13);
    let image = STANDARD.encode(random.png(1400, 1300));
    to_json(&json!({"content": [{"type": "image", "data": image, "mimeType": "image/png"}]}))
}

fn to_json(value: &Value) -> Vec<u8> {
    // Serialising a `Value` built here cannot fail: every key is a string.
    serde_json::to_vec(value).unwrap_or_default()
}

const WORDS: [&str; 16] = [
    "the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "and", "keeps",
    "running", "through", "fields", "of", "data",
];

/// SplitMix64: small, fast and the same on every platform; no statistical claims needed here.
/// Generative tests draw from it too, so a failing case comes back from its seed.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next number.
    pub fn draw(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// About `chars` characters of words: `chars / 5` words joined by spaces.
    fn text(&mut self, chars: usize) -> String {
        let words: Vec<&str> = (0..chars / 5)
            .map(|_| WORDS[(self.draw() % WORDS.len() as u64) as usize])
            .collect();
        words.join(" ")
    }

    fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let bytes = self.draw().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }

    /// An 8-bit RGB PNG of noise: each row is filter byte 0 and random samples.
    pub fn png(&mut self, width: u32, height: u32) -> Vec<u8> {
        let row = 1 + 3 * width as usize;
        let mut raw = vec![0; row * height as usize];
        for line in raw.chunks_mut(row) {
            self.fill(&mut line[1..]);
        }
        let mut header = Vec::with_capacity(13);
        header.extend_from_slice(&width.to_be_bytes());
        header.extend_from_slice(&height.to_be_bytes());
        header.extend_from_slice(&[8, 2, 0, 0, 0]);
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png_chunk(&mut png, b"IHDR", &header);
        png_chunk(&mut png, b"IDAT", &zlib_stored(&raw));
        png_chunk(&mut png, b"IEND", &[]);
        png
    }
}

fn png_chunk(png: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    png.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = png.len();
    png.extend_from_slice(kind);
    png.extend_from_slice(data);
    let crc = crc32(&png[start..]);
    png.extend_from_slice(&crc.to_be_bytes());
}

/// A zlib stream (RFC 1950) of stored deflate blocks (RFC 1951 §3.2.4).
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    const MAX_BLOCK: usize = 0xFFFF;
    let mut out = Vec::with_capacity(data.len() + data.len() / MAX_BLOCK * 5 + 11);
    out.extend_from_slice(&[0x78, 0x01]);
    let blocks: Vec<&[u8]> = data.chunks(MAX_BLOCK).collect();
    if blocks.is_empty() {
        out.extend_from_slice(&[1, 0, 0, 0xFF, 0xFF]);
    }
    for (i, block) in blocks.iter().enumerate() {
        out.push(u8::from(i + 1 == blocks.len()));
        let len = block.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
    out.extend_from_slice(&adler32(data).to_be_bytes());
    out
}

fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65_521;
    let (mut a, mut b) = (1u32, 0u32);
    // 5552 bytes is the most that can be summed before `b` could overflow a u32.
    for chunk in data.chunks(5552) {
        for &byte in chunk {
            a += u32::from(byte);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

/// PNG's CRC-32 (ISO 3309, reflected, polynomial 0xEDB88320), a byte at a time from a table.
fn crc32(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut n = 0;
        while n < 256 {
            let mut c = n as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 == 1 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[n] = c;
            n += 1;
        }
        table
    };
    let crc = data.iter().fold(!0u32, |crc, &byte| {
        TABLE[((crc ^ u32::from(byte)) & 0xFF) as usize] ^ (crc >> 8)
    });
    !crc
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;

    fn content(bytes: &[u8]) -> Vec<Value> {
        let value: Value = serde_json::from_slice(bytes).unwrap();
        value["content"].as_array().unwrap().clone()
    }

    /// Checks a PNG as a decoder would: signature, chunk checksums, the header's size, and an
    /// image stream that inflates to exactly one filter byte and three samples per pixel.
    fn check_png(base64: &str, width: u32, height: u32) {
        let png = STANDARD.decode(base64).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let mut at = 8;
        let mut kinds = Vec::new();
        let mut idat = Vec::new();
        while at < png.len() {
            let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
            let kind = &png[at + 4..at + 8];
            let data = &png[at + 8..at + 8 + len];
            let crc = u32::from_be_bytes(png[at + 8 + len..at + 12 + len].try_into().unwrap());
            assert_eq!(crc32(&png[at + 4..at + 8 + len]), crc, "chunk checksum");
            if kind == b"IHDR" {
                assert_eq!(u32::from_be_bytes(data[..4].try_into().unwrap()), width);
                assert_eq!(u32::from_be_bytes(data[4..8].try_into().unwrap()), height);
                assert_eq!(&data[8..], &[8, 2, 0, 0, 0]);
            }
            if kind == b"IDAT" {
                idat.extend_from_slice(data);
            }
            kinds.push(String::from_utf8(kind.to_vec()).unwrap());
            at += 12 + len;
        }
        assert_eq!(kinds, ["IHDR", "IDAT", "IEND"]);
        let mut raw = Vec::new();
        flate2::read::ZlibDecoder::new(idat.as_slice())
            .read_to_end(&mut raw)
            .unwrap();
        assert_eq!(raw.len(), (1 + 3 * width as usize) * height as usize);
        let row = 1 + 3 * width as usize;
        assert!(raw.chunks(row).all(|line| line[0] == 0), "filter type none");
        assert_ne!(
            raw[1..row],
            raw[row + 1..2 * row],
            "noise, not a repeated row"
        );
    }

    #[test]
    fn checksums_match_their_standard_check_values() {
        // The check values in the CRC catalogue and RFC 1950's definition.
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        let long = vec![0xFF; 100_000];
        let mut inflated = Vec::new();
        flate2::read::ZlibDecoder::new(zlib_stored(&long).as_slice())
            .read_to_end(&mut inflated)
            .unwrap();
        assert_eq!(inflated, long);
    }

    #[test]
    fn w1_is_a_megabyte_of_text_and_twenty_images_with_text_after_each() {
        let bytes = w1_mixed_10mb();
        assert!(
            (9_000_000..10_500_000).contains(&bytes.len()),
            "{}",
            bytes.len()
        );
        let content = content(&bytes);
        assert_eq!(content.len(), 41);
        let first = content[0]["text"].as_str().unwrap().len();
        assert!((900_000..1_200_000).contains(&first), "{first}");
        for pair in content[1..].chunks(2) {
            assert_eq!(pair[0]["type"], "image");
            assert_eq!(pair[0]["mimeType"], "image/png");
            let text = pair[1]["text"].as_str().unwrap().len();
            assert!((1_500..2_500).contains(&text), "{text}");
        }
        check_png(content[1]["data"].as_str().unwrap(), 360, 300);
    }

    #[test]
    fn w2_is_100k_small_blocks_of_four_shapes() {
        let bytes = w2_100k_blocks();
        assert!(
            (9_000_000..13_000_000).contains(&bytes.len()),
            "{}",
            bytes.len()
        );
        let content = content(&bytes);
        assert_eq!(content.len(), 100_000);
        assert!(content[0]["text"].as_str().unwrap().starts_with("row 0: "));
        assert_eq!(
            content[1]["resource"]["uri"],
            "https://h.example/r/1?sig=s1"
        );
        assert_eq!(content[1]["resource"]["mimeType"], "text/plain");
        assert_eq!(content[2]["type"], "resource_link");
        assert_eq!(content[2]["name"], "file2.csv");
        assert_eq!(content[99_999]["type"], "text");
        assert_eq!(content[99_998]["uri"], "https://h.example/l/99998");
    }

    #[test]
    fn w3_is_one_big_png() {
        let bytes = w3_one_big_image();
        assert!(
            (7_000_000..7_600_000).contains(&bytes.len()),
            "{}",
            bytes.len()
        );
        let content = content(&bytes);
        assert_eq!(content.len(), 1);
        check_png(content[0]["data"].as_str().unwrap(), 1400, 1300);
    }

    #[test]
    fn the_same_seed_gives_the_same_bytes_and_each_workload_its_own() {
        let [w1, w2, w3] = workloads();
        assert_eq!(w1.bytes, w1_mixed_10mb());
        assert_eq!(w3.bytes, w3_one_big_image());
        assert_eq!(
            [w1.name, w2.name, w3.name],
            ["w1-mixed-10mb", "w2-100k-blocks", "w3-one-big-image"]
        );
    }
}
