//! What the bytes say a payload is, from magic numbers in its first few hundred bytes.

/// How many leading bytes the sniffer reads. Sniffing any longer prefix, or the whole payload,
/// gives the same answer, because nothing past this point is looked at.
pub const SNIFF_LEN: usize = 512;

/// A media type recognised from a payload's leading bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Sniffed {
    /// PNG, APNG included (an APNG is a valid PNG to any reader that ignores its animation).
    Png,
    /// JPEG in any of its flavours.
    Jpeg,
    /// GIF87a or GIF89a.
    Gif,
    /// WebP: lossy, lossless or extended.
    Webp,
    /// PDF.
    Pdf,
    /// A ZIP archive (and the formats built on it).
    Zip,
    /// gzip.
    Gzip,
    /// WAV audio (RIFF WAVE).
    Wav,
    /// MP3, with an ID3 tag or starting at an MPEG audio frame.
    Mp3,
    /// AAC in ADTS frames.
    Aac,
    /// An Ogg container.
    Ogg,
    /// FLAC.
    Flac,
    /// TIFF, either byte order.
    Tiff,
    /// Windows bitmap.
    Bmp,
    /// AVIF (an ISO-BMFF `ftyp` with an AV1 image brand).
    Avif,
    /// HEIC or HEIF (an ISO-BMFF `ftyp` with an HEVC image brand).
    Heic,
    /// SVG or other XML opening with `<?xml`.
    Svg,
    /// A type the `infer` crate recognises that mcpl has no special rule for.
    Other(&'static str),
}

impl Sniffed {
    /// The media type, as a provider or a user would write it.
    pub fn mime(self) -> &'static str {
        match self {
            Sniffed::Png => "image/png",
            Sniffed::Jpeg => "image/jpeg",
            Sniffed::Gif => "image/gif",
            Sniffed::Webp => "image/webp",
            Sniffed::Pdf => "application/pdf",
            Sniffed::Zip => "application/zip",
            Sniffed::Gzip => "application/gzip",
            Sniffed::Wav => "audio/wav",
            Sniffed::Mp3 => "audio/mpeg",
            Sniffed::Aac => "audio/aac",
            Sniffed::Ogg => "audio/ogg",
            Sniffed::Flac => "audio/flac",
            Sniffed::Tiff => "image/tiff",
            Sniffed::Bmp => "image/bmp",
            Sniffed::Avif => "image/avif",
            Sniffed::Heic => "image/heic",
            Sniffed::Svg => "image/svg+xml",
            Sniffed::Other(mime) => mime,
        }
    }

    /// Whether the vision APIs mcpl targets all take this type as a native image.
    pub fn is_renderable_image(self) -> bool {
        match self {
            Sniffed::Png | Sniffed::Jpeg | Sniffed::Gif | Sniffed::Webp => true,
            Sniffed::Pdf
            | Sniffed::Zip
            | Sniffed::Gzip
            | Sniffed::Wav
            | Sniffed::Mp3
            | Sniffed::Aac
            | Sniffed::Ogg
            | Sniffed::Flac
            | Sniffed::Tiff
            | Sniffed::Bmp
            | Sniffed::Avif
            | Sniffed::Heic
            | Sniffed::Svg
            | Sniffed::Other(_) => false,
        }
    }
}

/// Names the type of a payload from its leading bytes; reads at most [`SNIFF_LEN`] of them.
pub fn sniff(bytes: &[u8]) -> Option<Sniffed> {
    let head = &bytes[..bytes.len().min(SNIFF_LEN)];
    sniff_named(head).or_else(|| {
        infer::get(head)
            .map(|kind| kind.mime_type())
            // Formats with a rule above were already ruled out by that rule, which is stricter
            // than `infer`'s (which takes any "BM" for a bitmap, for one).
            .filter(|mime| !OWNED_BY_NAMED_RULES.contains(mime))
            .map(Sniffed::Other)
    })
}

/// The names `infer` gives to formats that [`sniff_named`] decides on by its own rules.
const OWNED_BY_NAMED_RULES: &[&str] = &[
    "image/png",
    "image/apng",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "application/pdf",
    "application/zip",
    "application/gzip",
    "audio/x-wav",
    "audio/mpeg",
    "audio/aac",
    "audio/ogg",
    "audio/x-flac",
    "image/tiff",
    "image/bmp",
    "image/avif",
    "image/heif",
];

fn sniff_named(b: &[u8]) -> Option<Sniffed> {
    let at = |offset: usize, magic: &[u8]| b.get(offset..offset + magic.len()) == Some(magic);
    if at(0, b"\x89PNG\r\n\x1a\n") {
        Some(Sniffed::Png)
    } else if at(0, b"\xFF\xD8\xFF") {
        Some(Sniffed::Jpeg)
    } else if at(0, b"GIF87a") || at(0, b"GIF89a") {
        Some(Sniffed::Gif)
    } else if at(0, b"RIFF") && at(8, b"WEBP") {
        Some(Sniffed::Webp)
    } else if at(0, b"RIFF") && at(8, b"WAVE") {
        Some(Sniffed::Wav)
    } else if at(0, b"%PDF-") {
        Some(Sniffed::Pdf)
    } else if at(0, b"PK\x03\x04") || at(0, b"PK\x05\x06") || at(0, b"PK\x07\x08") {
        Some(Sniffed::Zip)
    } else if at(0, b"\x1F\x8B\x08") {
        Some(Sniffed::Gzip)
    } else if at(0, b"OggS") {
        Some(Sniffed::Ogg)
    } else if at(0, b"fLaC") {
        Some(Sniffed::Flac)
    } else if at(0, b"II*\0") || at(0, b"MM\0*") {
        Some(Sniffed::Tiff)
    } else if at(0, b"ID3") {
        Some(Sniffed::Mp3)
    } else if at(4, b"ftyp") {
        iso_bmff_image(b)
    } else if is_bmp(b) {
        Some(Sniffed::Bmp)
    } else if let Some(frame) = mpeg_audio_frame(b) {
        Some(frame)
    } else if is_svg(b) {
        Some(Sniffed::Svg)
    } else {
        None
    }
}

/// AVIF or HEIC from an ISO-BMFF `ftyp` box's major and compatible brands.
fn iso_bmff_image(b: &[u8]) -> Option<Sniffed> {
    let size = u32::from_be_bytes(b.get(0..4)?.try_into().ok()?) as usize;
    // The box's declared size bounds the brands, but never past the bytes at hand.
    let end = size.max(16).min(b.len());
    let brands = b.get(8..end)?;
    // Brands are four bytes each: the major brand, a minor version, then compatible brands.
    let brand_list = brands
        .chunks_exact(4)
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, brand)| brand);
    let mut heic = false;
    for brand in brand_list {
        match brand {
            b"avif" | b"avis" => return Some(Sniffed::Avif),
            b"heic" | b"heix" | b"heim" | b"heis" | b"hevc" | b"hevx" => heic = true,
            _ => {}
        }
    }
    if heic {
        Some(Sniffed::Heic)
    } else {
        // Leave MP4, QuickTime and the rest to `infer`.
        None
    }
}

/// A bitmap file header followed by one of the known DIB header sizes, so that text which
/// happens to start with "BM" is not taken for an image.
fn is_bmp(b: &[u8]) -> bool {
    b.starts_with(b"BM")
        && b.get(14..18)
            .map(|size| u32::from_le_bytes([size[0], size[1], size[2], size[3]]))
            .is_some_and(|size| matches!(size, 12 | 16 | 40 | 52 | 56 | 64 | 108 | 124))
}

/// An MPEG audio frame header: MP3 (layers I-III) or AAC in ADTS.
fn mpeg_audio_frame(b: &[u8]) -> Option<Sniffed> {
    let [sync, flags, rate, ..] = *b else {
        return None;
    };
    if sync != 0xFF || flags & 0xE0 != 0xE0 {
        return None;
    }
    let version = (flags >> 3) & 0b11;
    let layer = (flags >> 1) & 0b11;
    if layer == 0b00 {
        // ADTS: layer is always zero and the sampling index must be a defined one.
        let sampling = (rate >> 2) & 0b1111;
        return (sampling < 13).then_some(Sniffed::Aac);
    }
    let bitrate = rate >> 4;
    let sampling = (rate >> 2) & 0b11;
    (version != 0b01 && bitrate != 0b1111 && sampling != 0b11).then_some(Sniffed::Mp3)
}

/// Text that opens, after an optional UTF-8 byte order mark and white space, with `<?xml` or
/// `<svg`.
fn is_svg(b: &[u8]) -> bool {
    let text = b.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(b);
    let start = text
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(text.len());
    let text = &text[start..];
    text.starts_with(b"<?xml") || text.starts_with(b"<svg")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_rendered_formats() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n0000"), Some(Sniffed::Png));
        assert_eq!(sniff(b"\xFF\xD8\xFF\xE0"), Some(Sniffed::Jpeg));
        assert_eq!(sniff(b"GIF89a.."), Some(Sniffed::Gif));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some(Sniffed::Webp));
    }

    #[test]
    fn svg_may_follow_a_bom_and_white_space() {
        assert_eq!(sniff(b"\xEF\xBB\xBF \n<svg xmlns"), Some(Sniffed::Svg));
        assert_eq!(sniff(b"<?xml version=\"1.0\"?>"), Some(Sniffed::Svg));
        assert_eq!(sniff(b"hello <svg>"), None);
    }

    #[test]
    fn weak_magic_needs_its_header() {
        assert_eq!(sniff(b"BM is how this sentence starts"), None);
        assert_eq!(sniff(b"\xFF\xFF\xFF"), None);
    }

    #[test]
    fn a_short_ftyp_box_is_not_a_panic() {
        // Found by the `payload` fuzz target: fewer bytes than the smallest box.
        assert_eq!(sniff(b"\0\0\0\x1cftypavif"), Some(Sniffed::Avif));
        assert_eq!(sniff(b"\0\0\0\x1cftyp"), None);
        assert_eq!(sniff(b"\0\0\0\0ftypheic"), Some(Sniffed::Heic));
    }

    #[test]
    fn mpeg_frames_are_told_apart() {
        assert_eq!(sniff(&[0xFF, 0xFB, 0x90, 0x64]), Some(Sniffed::Mp3));
        assert_eq!(sniff(&[0xFF, 0xF1, 0x50, 0x80]), Some(Sniffed::Aac));
    }
}
