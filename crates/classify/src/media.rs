//! Data-bearing blocks: claimed and sniffed media types, decoded size, dimensions, limits.

use std::borrow::Cow;

use crate::payload::{Base64Finding, Payload};
use crate::sniff::{SNIFF_LEN, Sniffed, sniff};

/// How many decoded bytes may be read to find an image's dimensions. A JPEG's frame header may
/// sit after large ICC or EXIF segments; those are skipped by seeking, so only segment headers
/// count against this.
pub const DIMENSION_READ_LIMIT: u64 = 64 * 1024;

/// The limits a host applies to what it shows inline. A route may lower or raise them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The largest decoded image, in bytes, sent to a model as a native image.
    pub native_image_bytes: u64,
    /// The largest opaque payload, in bytes, shown inline as text (an SVG's source, say).
    pub opaque_bytes: u64,
}

impl Limits {
    /// 5 MiB per native image (the lowest per-image limit among major vision APIs), 64 KiB opaque.
    pub const DEFAULT: Limits = Limits {
        native_image_bytes: 5 * 1024 * 1024,
        opaque_bytes: 64 * 1024,
    };

    /// These limits with another per-image limit.
    pub const fn with_native_image_bytes(self, bytes: u64) -> Limits {
        Limits {
            native_image_bytes: bytes,
            ..self
        }
    }

    /// These limits with another opaque limit.
    pub const fn with_opaque_bytes(self, bytes: u64) -> Limits {
        Limits {
            opaque_bytes: bytes,
            ..self
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// A media type as a server labelled it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClaimedType<'a> {
    /// The label exactly as sent.
    pub raw: &'a str,
    /// The essence lowercased with parameters dropped (`Image/PNG; q=1` is `image/png`), or
    /// `None` when the label is not a `type/subtype` pair. Borrowed from the label when it is
    /// already lower case.
    pub essence: Option<Cow<'a, str>>,
}

impl<'a> ClaimedType<'a> {
    /// Normalises a label.
    pub fn parse(raw: &'a str) -> ClaimedType<'a> {
        // `;` is ASCII: the text before it is whole characters.
        let essence = match memchr::memchr(b';', raw.as_bytes()) {
            Some(at) => raw.get(..at).unwrap_or_default(),
            None => raw,
        }
        .trim();
        let valid = essence
            .split_once('/')
            .is_some_and(|(kind, subtype)| is_token(kind) && is_token(subtype));
        let essence = valid.then(|| match essence.bytes().any(|b| b.is_ascii_uppercase()) {
            true => Cow::Owned(essence.to_ascii_lowercase()),
            false => Cow::Borrowed(essence),
        });
        ClaimedType { raw, essence }
    }

    /// Whether the label names a type under `top` (`image`, `audio`) with a subtype.
    pub fn is_under(&self, top: &str) -> bool {
        self.essence
            .as_deref()
            .and_then(|essence| essence.split_once('/'))
            .is_some_and(|(kind, _)| kind == top)
    }
}

/// An RFC 9110 token: what a media type's type and subtype are made of.
fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| TOKEN[usize::from(c)])
}

/// `TOKEN[byte]`: whether the byte may be in an RFC 9110 token.
const TOKEN: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    table
};

/// An image's size in pixels, as its header records it (before any EXIF rotation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dimensions {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// Why bytes that open as PNG, JPEG, GIF or WebP still cannot be sent as an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ImageDefect {
    /// The header does not give the image's dimensions (it is cut short or corrupt).
    NoDimensions,
    /// The file ends before its format says it does: a PNG without its closing `IEND` chunk, or a
    /// WebP shorter than its RIFF header declares.
    Truncated,
}

impl ImageDefect {
    /// The defect in a few words.
    pub fn as_str(self) -> &'static str {
        match self {
            ImageDefect::NoDimensions => "no dimensions in its header",
            ImageDefect::Truncated => "truncated",
        }
    }
}

/// A PNG's last twelve bytes: the empty `IEND` chunk with its CRC.
const PNG_END: &[u8] = b"\0\0\0\0IEND\xAE\x42\x60\x82";

/// What classification learnt about a base64 payload and its label.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Media<'a> {
    /// The base64 text exactly as sent. Borrowed: classification never copies a payload.
    pub data: &'a str,
    /// The server's label, if it sent one as a string.
    pub claimed: Option<ClaimedType<'a>>,
    /// What the leading bytes say, when they say anything.
    pub sniffed: Option<Sniffed>,
    /// The exact decoded size in bytes, when the base64 has a valid shape.
    pub decoded_bytes: Option<u64>,
    /// Pixel dimensions for PNG, JPEG, GIF and WebP, when the header gives them.
    pub dimensions: Option<Dimensions>,
    /// Why the base64 is not usable, when it is not.
    pub base64: Option<Base64Finding>,
    /// Why bytes of a renderable format still cannot be sent as an image, when they cannot.
    pub defect: Option<ImageDefect>,
}

impl<'a> Media<'a> {
    /// Reads a payload's label, type, size and dimensions from its first bytes only.
    pub fn inspect(data: &'a str, claimed: Option<&'a str>) -> Media<'a> {
        let claimed = claimed.map(ClaimedType::parse);
        let mut media = Media {
            data,
            claimed,
            sniffed: None,
            decoded_bytes: None,
            dimensions: None,
            base64: None,
            defect: None,
        };
        let payload = match Payload::new(data) {
            Ok(payload) => payload,
            Err(finding) => {
                media.base64 = Some(finding);
                return media;
            }
        };
        media.decoded_bytes = Some(payload.decoded_len());
        match payload.decode_prefix(SNIFF_LEN) {
            Ok(prefix) => media.sniffed = sniff(&prefix),
            Err(finding) => {
                media.base64 = Some(finding);
                return media;
            }
        }
        if media.sniffed.is_some_and(Sniffed::is_renderable_image) {
            let mut reader = payload.reader(DIMENSION_READ_LIMIT);
            media.dimensions = imagesize::reader_size(&mut reader).ok().and_then(|size| {
                Some(Dimensions {
                    width: u32::try_from(size.width).ok()?,
                    height: u32::try_from(size.height).ok()?,
                })
            });
            media.base64 = reader.finding().cloned();
            media.defect = match media.dimensions {
                None => Some(ImageDefect::NoDimensions),
                Some(_) => truncation(&payload, media.sniffed),
            };
        }
        media
    }

    /// Whether the data is empty (`""`): a block that arrived with nothing to show.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Whether the bytes are PNG, JPEG, GIF or WebP and the base64 carrying them is sound.
    /// The label plays no part.
    pub fn renderable(&self) -> bool {
        self.base64.is_none()
            && self.defect.is_none()
            && self.sniffed.is_some_and(Sniffed::is_renderable_image)
    }

    /// The type to name when describing the payload: the bytes' type when they say one, else the
    /// normalised label.
    pub fn best_type(&self) -> Option<&str> {
        self.sniffed
            .map(Sniffed::mime)
            .or_else(|| self.claimed.as_ref().and_then(|c| c.essence.as_deref()))
    }

    /// Whether the decoded payload is within `limit` bytes. A payload whose size is unknown is not.
    pub fn within(&self, limit: u64) -> bool {
        self.decoded_bytes.is_some_and(|n| n <= limit)
    }
}

/// Checks the end of a PNG or the declared length of a WebP, reading a few bytes at most.
///
/// JPEG and GIF are not checked: phones append whole videos after a JPEG's end marker, and
/// decoders show such files, so a missing or misplaced end marker proves nothing.
fn truncation(payload: &Payload<'_>, sniffed: Option<Sniffed>) -> Option<ImageDefect> {
    let len = payload.decoded_len();
    let truncated = match sniffed {
        Some(Sniffed::Png) => {
            let tail_start = len.saturating_sub(PNG_END.len() as u64);
            payload
                .decode_range(tail_start, PNG_END.len())
                .map_or(true, |tail| tail != PNG_END)
        }
        Some(Sniffed::Webp) => payload.decode_range(4, 4).map_or(true, |size| {
            let declared = u32::from_le_bytes([size[0], size[1], size[2], size[3]]);
            u64::from(declared) + 8 > len
        }),
        _ => false,
    };
    truncated.then_some(ImageDefect::Truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_rfc_9110s_tchar_and_a_type_is_parsed_by_it() {
        for byte in 0..=255u8 {
            let tchar = byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte);
            assert_eq!(TOKEN[usize::from(byte)], tchar, "{byte:#04x}");
        }
        let essence = |raw| ClaimedType::parse(raw).essence.map(Cow::into_owned);
        assert_eq!(essence(" Image/PNG ; q=1"), Some("image/png".to_owned()));
        assert_eq!(essence("text/csv;"), Some("text/csv".to_owned()));
        assert!(matches!(
            ClaimedType::parse("text/csv").essence,
            Some(Cow::Borrowed("text/csv"))
        ));
        for odd in [
            "text",
            "/csv",
            "text/",
            "te xt/csv",
            "text/c\u{e9}sv",
            ";text/csv",
            "",
        ] {
            assert_eq!(essence(odd), None, "{odd}");
        }
    }

    #[test]
    fn labels_are_normalised() {
        let claimed = ClaimedType::parse("Image/PNG; charset=x");
        assert_eq!(claimed.essence.as_deref(), Some("image/png"));
        assert!(claimed.is_under("image"));
    }

    #[rstest::rstest]
    fn labels_that_are_no_type_have_no_essence(
        #[values("image", "image/", "/png", "", "image/png/x", "im age/png")] unparsable: &str,
    ) {
        assert_eq!(ClaimedType::parse(unparsable).essence, None);
    }
}
