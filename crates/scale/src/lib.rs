//! Images scaled down to fit a route: an image over the route's per-side cap, its per-image
//! base64 or decoded bytes, or the side allowed in a request of many images, is decoded,
//! downscaled and re-encoded so it goes natively instead of as a marker.
//!
//! [`Scaler`] holds the decoding limits (a decompression bomb cannot allocate past
//! [`Scaler::max_alloc`]); [`Fit`] is what one image must fit; [`Scaler::scale`] turns one base64
//! image into a [`Scaled`] one, and [`Scaler::scale_result`] does it for the image blocks of a
//! tool result as a server sent it ([`Scaler::scale_message`] for a push event's or a channel
//! message's content), with a [`scaled_notice`] after each, so both the live and the stored copy
//! say it was scaled and from what size. Nothing is decoded unless an image is over
//! its fit ([`Fit::needs`]); an image that cannot be decoded or re-encoded is left as it was.
//!
//! ```
//! use mcpl_classify::{Dimensions, Sniffed};
//! use mcpl_scale::{Fit, Scaler};
//!
//! // A 1×1 grey PNG, asked to fit a side of 1 px: it fits already, so nothing is decoded.
//! let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==";
//! let fit = Fit { max_side: 1, max_base64: 1_000 };
//! assert!(!fit.needs(Dimensions { width: 1, height: 1 }, png.len()));
//! // Over it, the image is scaled: here to fit 100 base64 characters, which it cannot.
//! let tight = Fit { max_side: 1, max_base64: 10 };
//! assert!(Scaler::default().scale(png, Sniffed::Png, Dimensions { width: 1, height: 1 }, tight).is_err());
//! ```

use std::io::Cursor;

mod png_len;

use image::{DynamicImage, ImageFormat, ImageReader};
use mcpl_classify::{Block, Dimensions, Media, Payload, Sniffed, classify};
use mcpl_lanes::markers::size_label;
use mcpl_lanes::{RequestLimits, Route};
use serde_json::Value;

/// What one image must fit to go natively.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    /// The longest side, in pixels.
    pub max_side: u32,
    /// The most base64 characters.
    pub max_base64: u64,
}

impl Fit {
    /// What an image in a tool result must fit on `route` held to `limits`: the per-side cap, and
    /// the smaller of the per-image base64 cap and the route's decoded bytes per image (as the
    /// base64 characters that decode to at most that many bytes).
    pub fn for_route(route: &Route, limits: &RequestLimits) -> Fit {
        let decoded = route.limits.native_image_bytes / 3 * 4;
        Fit {
            max_side: limits.max_side,
            max_base64: limits
                .image_base64
                .map_or(decoded, |chars| chars.min(decoded)),
        }
    }

    /// Whether an image of these dimensions and this much base64 is over the fit. An image with
    /// no pixels is never scaled: there is nothing to scale.
    pub fn needs(&self, dimensions: Dimensions, base64_chars: usize) -> bool {
        let side = dimensions.width.max(dimensions.height);
        side > 0
            && dimensions.width.min(dimensions.height) > 0
            && (side > self.max_side || base64_chars as u64 > self.max_base64)
    }
}

/// Where an image goes, which decides whether the route takes it natively there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In a tool result (directly, or moved by the encoder after it).
    ToolResult,
    /// In a user message: a push event's or a channel message's content.
    Message,
}

/// The type and dimensions of an image that `route` would take natively at `place` but that is
/// over `fit`: the image [`Scaler::scale_result`] and [`Scaler::scale_message`] scale.
fn over_fit(
    media: &Media<'_>,
    route: &Route,
    place: Place,
    fit: Fit,
) -> Option<(Sniffed, Dimensions)> {
    let native_there = match place {
        Place::ToolResult => route.images_in_tool_results,
        Place::Message => route.images_in_messages,
    };
    media
        .sniffed
        .zip(media.dimensions)
        .filter(|&(sniffed, dimensions)| {
            native_there
                && route.takes_image_type(Some(sniffed))
                && fit.needs(dimensions, media.data.len())
        })
}

/// Whether [`Scaler::scale_result`] would scale this block of a tool result on `route`: for a
/// caller that reads results without a `Value` and takes the scaling path only when needed.
pub fn would_scale(block: &Block<'_>, route: &Route, fit: Fit) -> bool {
    match block {
        Block::InlineImage(media) if media.renderable() => {
            over_fit(media, route, Place::ToolResult, fit).is_some()
        }
        _ => false,
    }
}

/// An image scaled to fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scaled {
    /// The new base64.
    pub data: String,
    /// What the new bytes are: JPEG stays JPEG; PNG, GIF (its first frame) and WebP become PNG.
    pub sniffed: Sniffed,
    /// The new size.
    pub dimensions: Dimensions,
    /// The size it was scaled from.
    pub from: Dimensions,
    /// The decoded bytes it was scaled from.
    pub from_bytes: u64,
}

/// Why an image was not scaled; the caller keeps it as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScaleError {
    /// The base64 is not valid.
    #[error("the image's base64 could not be decoded")]
    Base64,
    /// Decoding would pass the decoding limits.
    #[error("decoding the image would pass the decoding limits")]
    Limits,
    /// The bytes are not an image the decoder reads.
    #[error("the image could not be decoded: {0}")]
    Decode(String),
    /// The type is not one mcpl scales.
    #[error("{0} images are not scaled")]
    Unsupported(&'static str),
    /// No size tried fits the per-image base64.
    #[error("no size of the image fits {0} base64 characters")]
    NoFit(u64),
}

/// The decoder's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scaler {
    /// The most bytes decoding one image may allocate.
    pub max_alloc: u64,
    /// The widest and tallest image decoded, in pixels.
    pub max_decoded_side: u32,
}

impl Default for Scaler {
    /// 256 MiB (an 8000×8000 RGBA image) and 32,768 px per side.
    fn default() -> Scaler {
        Scaler {
            max_alloc: 256 * 1024 * 1024,
            max_decoded_side: 32_768,
        }
    }
}

/// How many smaller sizes are tried after the first before giving up on the base64 cap.
const ATTEMPTS: usize = 8;
/// The quality of a re-encoded JPEG.
const JPEG_QUALITY: u8 = 85;

/// `[image above scaled from W×H px, <size> to w×h px, <size>: <why>]`: the line after a
/// scaled image, in the live copy and the stored copy alike.
pub fn scaled_notice(scaled: &Scaled, why: &str) -> String {
    let (from, to) = (scaled.from, scaled.dimensions);
    format!(
        "[image above scaled from {}×{} px, {} to {}×{} px, {}: {why}]",
        from.width,
        from.height,
        size_label(scaled.from_bytes),
        to.width,
        to.height,
        size_label(decoded_len(&scaled.data)),
    )
}

/// The decoded bytes of a base64 text.
fn decoded_len(data: &str) -> u64 {
    Payload::new(data).map_or(data.len() as u64 / 4 * 3, |p| p.decoded_len())
}

/// `[image above is the first frame of an animated GIF: <why>]`: the line after an animated GIF
/// sent as its first frame at its own size.
pub fn first_frame_notice(why: &str) -> String {
    format!("[image above is the first frame of an animated GIF: {why}]")
}

/// Why a tool result's image was scaled, for its notice.
pub fn why_scaled(fit: Fit, dimensions: Dimensions) -> String {
    if dimensions.width.max(dimensions.height) > fit.max_side {
        format!("a side was over {} px", fit.max_side)
    } else {
        format!("its base64 was over {} characters", fit.max_base64)
    }
}

impl Scaler {
    /// The image scaled down, keeping its aspect ratio, to fit `fit`: first to the per-side cap,
    /// then smaller until its base64 fits, at most [`ATTEMPTS`] times. A GIF's first frame is
    /// taken.
    pub fn scale(
        &self,
        data: &str,
        sniffed: Sniffed,
        from: Dimensions,
        fit: Fit,
    ) -> Result<Scaled, ScaleError> {
        let format = match sniffed {
            Sniffed::Png => ImageFormat::Png,
            Sniffed::Jpeg => ImageFormat::Jpeg,
            Sniffed::Gif => ImageFormat::Gif,
            Sniffed::Webp => ImageFormat::WebP,
            other => return Err(ScaleError::Unsupported(other.mime())),
        };
        // The header is checked before anything is decoded: the decoder's own limits hold too.
        if from.width > self.max_decoded_side || from.height > self.max_decoded_side {
            return Err(ScaleError::Limits);
        }
        let payload = Payload::new(data).map_err(|_| ScaleError::Base64)?;
        let len = usize::try_from(payload.decoded_len()).map_err(|_| ScaleError::Limits)?;
        // The decoded bytes are dropped once the decoder has read them.
        let decode = || {
            let bytes = payload.decode_prefix(len).map_err(|_| ScaleError::Base64)?;
            self.decode(bytes, format)
        };
        let mut source = Some(decode()?);
        let (width, height) = source
            .as_ref()
            .map_or((0, 0), |image| (image.width(), image.height()));
        let out_format = if sniffed == Sniffed::Jpeg {
            ImageFormat::Jpeg
        } else {
            ImageFormat::Png
        };
        let side = width.max(height).max(1);
        let mut scale = (f64::from(fit.max_side) / f64::from(side)).min(1.0);
        for _ in 0..=ATTEMPTS {
            let to = Dimensions {
                width: ((f64::from(width) * scale).round() as u32).clamp(1, fit.max_side),
                height: ((f64::from(height) * scale).round() as u32).clamp(1, fit.max_side),
            };
            // The decoded image, decoded again only if a try below let it go and did not fit.
            let image = match source.take() {
                Some(image) => image,
                None => decode()?,
            };
            // Resizing to the same size gives the same pixels: no copy is made for it.
            let resized = (to.width != width || to.height != height)
                .then(|| image.thumbnail_exact(to.width, to.height));
            // A PNG's length is counted before it is built, so one too large is never built.
            let predicted = if out_format == ImageFormat::Png {
                png_len::encoded_len(resized.as_ref().unwrap_or(&image))
            } else {
                None
            };
            let chars = match predicted {
                Some(bytes) if base64_chars(bytes) > fit.max_base64 => {
                    source = Some(image);
                    base64_chars(bytes)
                }
                _ => {
                    // Expected to fit: the decoded image is let go before the resized one is
                    // encoded, unless it is the one encoded or a JPEG whose length is unknown.
                    let (encoded, kept) = match resized {
                        Some(resized) if predicted.is_some() => {
                            drop(image);
                            (encode(&resized, out_format, predicted)?, None)
                        }
                        Some(resized) => (encode(&resized, out_format, predicted)?, Some(image)),
                        None => (encode(&image, out_format, predicted)?, Some(image)),
                    };
                    let chars = base64_chars(encoded.len() as u64);
                    if chars <= fit.max_base64 {
                        drop(kept);
                        use base64::Engine as _;
                        return Ok(Scaled {
                            data: base64::engine::general_purpose::STANDARD.encode(&encoded),
                            sniffed: if out_format == ImageFormat::Jpeg {
                                Sniffed::Jpeg
                            } else {
                                Sniffed::Png
                            },
                            dimensions: to,
                            from,
                            from_bytes: len as u64,
                        });
                    }
                    source = kept;
                    chars
                }
            };
            // Bytes grow roughly with the area: shrink the sides by the square root of the
            // excess, and a little more so the next try is likely to fit.
            scale *= (fit.max_base64 as f64 / chars as f64).sqrt() * 0.9;
            if to.width == 1 && to.height == 1 {
                break;
            }
        }
        Err(ScaleError::NoFit(fit.max_base64))
    }

    /// Decodes under the limits: the first frame of a GIF.
    fn decode(&self, bytes: Vec<u8>, format: ImageFormat) -> Result<DynamicImage, ScaleError> {
        let mut limits = image::Limits::default();
        limits.max_alloc = Some(self.max_alloc);
        limits.max_image_width = Some(self.max_decoded_side);
        limits.max_image_height = Some(self.max_decoded_side);
        let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
        reader.limits(limits);
        reader.decode().map_err(|error| match error {
            image::ImageError::Limits(_) => ScaleError::Limits,
            other => ScaleError::Decode(other.to_string()),
        })
    }

    /// A tool result (as the server sent it) with every image block that `fit` says is too
    /// large, on a route that takes its type in tool results, replaced by its scaled image and
    /// followed by a text block with its [`scaled_notice`]; `None` when no image was scaled.
    /// What could not be scaled is left as it was and said in the diagnostics.
    pub fn scale_result(
        &self,
        result: &Value,
        route: &Route,
        fit: Fit,
        diagnostics: &mut Vec<String>,
    ) -> Option<Value> {
        let blocks = result.get("content")?.as_array()?;
        let out = self.scale_blocks(blocks, route, Place::ToolResult, fit, diagnostics)?;
        let mut result = result.clone();
        result["content"] = Value::Array(out);
        Some(result)
    }

    /// A push event's, a channel message's or a user-position injection's content (an array of
    /// blocks, as the server sent it) with its images scaled as [`Scaler::scale_result`] scales
    /// a tool result's, for a route that takes them natively in a user message; `None` when no
    /// image was scaled.
    pub fn scale_message(
        &self,
        content: &Value,
        route: &Route,
        fit: Fit,
        diagnostics: &mut Vec<String>,
    ) -> Option<Value> {
        let blocks = content.as_array()?;
        self.scale_blocks(blocks, route, Place::Message, fit, diagnostics)
            .map(Value::Array)
    }

    /// The blocks with each image over `fit` that the route takes at `place` scaled and followed
    /// by its notice; `None` when none was.
    fn scale_blocks(
        &self,
        blocks: &[Value],
        route: &Route,
        place: Place,
        fit: Fit,
        diagnostics: &mut Vec<String>,
    ) -> Option<Vec<Value>> {
        let mut out: Option<Vec<Value>> = None;
        for (index, block) in blocks.iter().enumerate() {
            let scaled = match classify(block) {
                Block::InlineImage(media) if media.renderable() => {
                    over_fit(&media, route, place, fit).map(|(sniffed, dimensions)| {
                        let why = why_scaled(fit, dimensions);
                        (self.scale(media.data, sniffed, dimensions, fit), why)
                    })
                }
                _ => None,
            };
            match scaled {
                Some((Ok(scaled), why)) => {
                    let out = out.get_or_insert_with(|| blocks[..index].to_vec());
                    let notice = scaled_notice(&scaled, &why);
                    let mut block = block.clone();
                    block["data"] = Value::String(scaled.data);
                    block["mimeType"] = Value::String(scaled.sniffed.mime().to_owned());
                    out.push(block);
                    out.push(serde_json::json!({"type": "text", "text": notice}));
                }
                Some((Err(error), _)) => {
                    diagnostics.push(format!("image {} not scaled: {error}", index + 1));
                    if let Some(out) = &mut out {
                        out.push(block.clone());
                    }
                }
                None => {
                    if let Some(out) = &mut out {
                        out.push(block.clone());
                    }
                }
            }
        }
        out
    }
}

/// The base64 characters `bytes` bytes take.
fn base64_chars(bytes: u64) -> u64 {
    bytes.div_ceil(3) * 4
}

/// The image encoded as `format`, into a buffer of `expected` bytes when its length is known.
fn encode(
    image: &DynamicImage,
    format: ImageFormat,
    expected: Option<u64>,
) -> Result<Vec<u8>, ScaleError> {
    let capacity = expected.and_then(|bytes| usize::try_from(bytes).ok());
    let mut out = Cursor::new(Vec::with_capacity(capacity.unwrap_or(0)));
    let written = if format == ImageFormat::Jpeg {
        let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY);
        DynamicImage::ImageRgb8(image.to_rgb8()).write_with_encoder(encoder)
    } else {
        image.write_to(&mut out, ImageFormat::Png)
    };
    written.map_err(|error| ScaleError::Decode(error.to_string()))?;
    Ok(out.into_inner())
}
