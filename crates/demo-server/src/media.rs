//! The bytes the tools send: real encoder files from the classifier's fixtures, and one PNG
//! grown past 5 MiB.

use std::sync::OnceLock;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// A 16 x 12 PNG written by Pillow.
pub(crate) const PNG: &[u8] = include_bytes!("../../classify/tests/fixtures/image.png");
/// A 16 x 12 baseline JPEG written by Pillow.
pub(crate) const JPEG: &[u8] = include_bytes!("../../classify/tests/fixtures/baseline.jpg");
/// A 16 x 12 GIF written by Pillow.
pub(crate) const GIF: &[u8] = include_bytes!("../../classify/tests/fixtures/static.gif");
/// A 16 x 12 lossy WebP written by Pillow.
pub(crate) const WEBP: &[u8] = include_bytes!("../../classify/tests/fixtures/lossy.webp");
/// A 16 x 12 SVG.
pub(crate) const SVG: &[u8] = include_bytes!("../../classify/tests/fixtures/plain.svg");
/// A ZIP archive written by Python's zipfile.
pub(crate) const ZIP: &[u8] = include_bytes!("../../classify/tests/fixtures/archive.zip");
/// A short tone written by Python's wave module.
pub(crate) const WAV: &[u8] = include_bytes!("../../classify/tests/fixtures/tone.wav");
/// A one-page PDF written by Pillow.
pub(crate) const PDF: &[u8] = include_bytes!("../../classify/tests/fixtures/document.pdf");
/// A line of plain text.
pub(crate) const NOTE: &[u8] = include_bytes!("../../classify/tests/fixtures/note.txt");

/// The size the huge PNG is grown to: 6 MiB, over the 5 MiB many providers take per image.
pub(crate) const HUGE_PNG_BYTES: usize = 6 * 1024 * 1024;

/// Standard, padded base64, the only alphabet MCP uses.
pub(crate) fn base64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// The huge PNG's base64, built the first time a tool asks for it.
pub(crate) fn huge_png_base64() -> &'static str {
    static HUGE: OnceLock<String> = OnceLock::new();
    HUGE.get_or_init(|| base64(&grown_png(PNG, HUGE_PNG_BYTES)))
}

/// `png` grown to exactly `size` bytes by a `tEXt` chunk (keyword `Comment`) before `IEND`, with
/// its CRC, so the result is still a valid PNG showing the same picture.
pub(crate) fn grown_png(png: &[u8], size: usize) -> Vec<u8> {
    const KEYWORD: &[u8] = b"Comment\0";
    // Length, type and CRC: the twelve bytes around every chunk's data.
    let (body, iend) = png.split_at(png.len() - 12);
    let data_len = size - png.len() - 12;
    let mut chunk = Vec::with_capacity(data_len + 4);
    chunk.extend_from_slice(b"tEXt");
    chunk.extend_from_slice(KEYWORD);
    let filler = b"mcpl demo filler. ";
    while chunk.len() < 4 + data_len {
        let room = 4 + data_len - chunk.len();
        chunk.extend_from_slice(&filler[..room.min(filler.len())]);
    }
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(body);
    out.extend_from_slice(&(data_len as u32).to_be_bytes());
    out.extend_from_slice(&chunk);
    out.extend_from_slice(&crc32(&chunk).to_be_bytes());
    out.extend_from_slice(iend);
    out
}

/// CRC-32 (ISO-HDLC, the one PNG and ZIP use), table-driven.
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    static TABLE: OnceLock<[u32; 256]> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut table = [0; 256];
        for (n, entry) in table.iter_mut().enumerate() {
            let mut c = n as u32;
            for _ in 0..8 {
                c = if c & 1 == 1 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *entry = c;
        }
        table
    });
    !bytes.iter().fold(!0u32, |c, &b| {
        table[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_check_value_and_the_fixture_chunks() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        // IEND's CRC, as Pillow wrote it.
        assert_eq!(crc32(b"IEND").to_be_bytes(), PNG[PNG.len() - 4..]);
    }

    #[test]
    fn the_grown_png_has_its_size_and_a_valid_new_chunk() {
        let grown = grown_png(PNG, 4096);
        assert_eq!(grown.len(), 4096);
        assert_eq!(grown[..8], PNG[..8]);
        assert_eq!(grown[grown.len() - 12..], PNG[PNG.len() - 12..]);
        let start = PNG.len() - 12;
        let len = u32::from_be_bytes(grown[start..start + 4].try_into().unwrap()) as usize;
        let chunk = &grown[start + 4..start + 8 + len];
        assert!(chunk.starts_with(b"tEXtComment\0"));
        let crc = &grown[start + 8 + len..start + 12 + len];
        assert_eq!(crc, crc32(chunk).to_be_bytes());
    }
}
