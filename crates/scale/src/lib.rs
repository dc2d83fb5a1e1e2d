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
//! let fit = Fit::new(1, 1_000);
//! assert!(!fit.needs(Dimensions { width: 1, height: 1 }, png.len()));
//! // Over it, the image is scaled: here to fit 100 base64 characters, which it cannot.
//! let tight = Fit::new(1, 10);
//! assert!(Scaler::default().scale(png, Sniffed::Png, Dimensions { width: 1, height: 1 }, tight).is_err());
//! ```

use std::borrow::Cow;
use std::io::Cursor;

use image::{DynamicImage, ImageFormat, ImageReader};
use mcpl_classify::{
    Block, BlockView, ContentView, Dimensions, Media, Payload, ResultView, Sniffed, classify,
};
use mcpl_lanes::markers::size_label;
use mcpl_lanes::{RequestLimits, Route};
use serde_json::Value;

mod deflate_len;
mod png_encode;
mod thumbnail;

/// What one image must fit to go natively.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Fit {
    /// The longest side, in pixels.
    pub max_side: u32,
    /// The most base64 characters.
    pub max_base64: u64,
}

impl Fit {
    /// A fit of at most `max_side` pixels a side and `max_base64` base64 characters.
    pub const fn new(max_side: u32, max_base64: u64) -> Fit {
        Fit {
            max_side,
            max_base64,
        }
    }

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
#[non_exhaustive]
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
#[non_exhaustive]
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
#[non_exhaustive]
pub struct Scaler {
    /// The most bytes decoding one image may allocate.
    pub max_alloc: u64,
    /// The widest and tallest image decoded, in pixels.
    pub max_decoded_side: u32,
}

impl Scaler {
    /// The same limits, allocating at most `max_alloc` bytes to decode one image.
    pub const fn with_max_alloc(self, max_alloc: u64) -> Scaler {
        Scaler { max_alloc, ..self }
    }

    /// The same limits, decoding no image wider or taller than `max_decoded_side` pixels.
    pub const fn with_max_decoded_side(self, max_decoded_side: u32) -> Scaler {
        Scaler {
            max_decoded_side,
            ..self
        }
    }
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
    /// then smaller until its base64 fits, at most eight times. A GIF's first frame is
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
        let bytes = payload.decode_prefix(len).map_err(|_| ScaleError::Base64)?;
        let image = self.decode(bytes, format)?;
        let (width, height) = (image.width(), image.height());
        let out_format = if sniffed == Sniffed::Jpeg {
            ImageFormat::Jpeg
        } else {
            ImageFormat::Png
        };
        let scaled = |data, dimensions| Scaled {
            data,
            sniffed: if out_format == ImageFormat::Jpeg {
                Sniffed::Jpeg
            } else {
                Sniffed::Png
            },
            dimensions,
            from,
            from_bytes: len as u64,
        };
        let side = width.max(height).max(1);
        let mut scale = (f64::from(fit.max_side) / f64::from(side)).min(1.0);
        for _ in 0..=ATTEMPTS {
            let to = Dimensions {
                width: ((f64::from(width) * scale).round() as u32).clamp(1, fit.max_side),
                height: ((f64::from(height) * scale).round() as u32).clamp(1, fit.max_side),
            };
            // Resizing to the same size gives the same pixels: no copy is made for it.
            let resized = (to.width != width || to.height != height)
                .then(|| thumbnail::exact(&image, to.width, to.height));
            // A PNG is counted before it is built, so one too large is never built (decision
            // 0090); a JPEG is encoded to learn its length.
            let counted = if out_format == ImageFormat::Png {
                png_encode::count(resized.as_ref().unwrap_or(&image))
            } else {
                None
            };
            let chars = match counted {
                Some(counted) if base64_chars(counted.len) > fit.max_base64 => {
                    base64_chars(counted.len)
                }
                Some(counted) => {
                    // It fits: the decoded image is let go before the resized one is built.
                    let data = match resized {
                        Some(resized) => {
                            drop(image);
                            png_encode::write_base64(&resized, counted)
                        }
                        None => png_encode::write_base64(&image, counted),
                    }
                    .map_err(|error| ScaleError::Decode(error.to_string()))?;
                    return Ok(scaled(data, to));
                }
                None => {
                    let encoded = encode(resized.as_ref().unwrap_or(&image), out_format)?;
                    let chars = base64_chars(encoded.len() as u64);
                    if chars <= fit.max_base64 {
                        use base64::Engine as _;
                        let data = base64::engine::general_purpose::STANDARD.encode(&encoded);
                        return Ok(scaled(data, to));
                    }
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
        // A result shaped as a block has no blocks of its own, as the view reads it.
        let blocks = mcpl_classify::result_fields(result)?
            .get("content")?
            .as_array()?;
        let out = self.scale_blocks(blocks, route, Place::ToolResult, fit, diagnostics)?;
        // The result's other fields are copied; its content, the old images in it, is not.
        let mut content = Some(Value::Array(out));
        let fields = result.as_object()?.iter().map(|(key, value)| {
            let value = match key.as_str() {
                "content" => content.take().unwrap_or(Value::Null),
                _ => value.clone(),
            };
            (key.clone(), value)
        });
        Some(Value::Object(fields.collect()))
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
            match self.scale_block(&classify(block), index, route, place, fit, diagnostics) {
                Some((scaled, notice)) => {
                    let out = out.get_or_insert_with(|| blocks[..index].to_vec());
                    out.push(with_image(block, scaled.data, scaled.sniffed.mime()));
                    out.push(notice_block(notice));
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

    /// [`Scaler::scale_result`] in place, for a caller that gives up the result as the server
    /// sent it: each scaled image's base64 replaces the old one, which is freed there and then,
    /// and nothing else is copied. Whether an image was scaled.
    pub fn scale_result_in_place(
        &self,
        result: &mut Value,
        route: &Route,
        fit: Fit,
        diagnostics: &mut Vec<String>,
    ) -> bool {
        if mcpl_classify::result_fields(result).is_none() {
            return false;
        }
        let Some(Value::Array(blocks)) = result.get_mut("content") else {
            return false;
        };
        let mut scaled_any = false;
        let mut out = Vec::with_capacity(blocks.len());
        for (index, mut block) in std::mem::take(blocks).into_iter().enumerate() {
            let scaled = self.scale_block(
                &classify(&block),
                index,
                route,
                Place::ToolResult,
                fit,
                diagnostics,
            );
            match (scaled, block.as_object_mut()) {
                (Some((scaled, notice)), Some(fields)) => {
                    fields.insert("data".to_owned(), Value::String(scaled.data));
                    fields.insert(
                        "mimeType".to_owned(),
                        Value::String(scaled.sniffed.mime().to_owned()),
                    );
                    out.push(block);
                    out.push(notice_block(notice));
                    scaled_any = true;
                }
                _ => out.push(block),
            }
        }
        *blocks = out;
        scaled_any
    }

    /// [`Scaler::scale_result`] for a result read from bytes into a view, its blocks moved, not
    /// copied: each image over `fit` is scaled where it stands and followed by its notice.
    /// `is_object` says whether the bytes were an object: `scale_result` scales only an
    /// object's `content`, so an array's blocks are left as they are. Whether an image was
    /// scaled.
    pub fn scale_result_view(
        &self,
        view: &mut ResultView<'_>,
        is_object: bool,
        route: &Route,
        fit: Fit,
        diagnostics: &mut Vec<String>,
    ) -> bool {
        let Some(ContentView::Blocks(blocks)) = &mut view.content else {
            return false;
        };
        if !is_object
            || !blocks.iter().any(|block| {
                block.may_be_inline_media() && would_scale(&block.classify(), route, fit)
            })
        {
            return false;
        }
        let mut scaled_any = false;
        let mut out = Vec::with_capacity(blocks.len() + 1);
        for (index, block) in std::mem::take(blocks).into_iter().enumerate() {
            let scaled = self.scale_block(
                &block.classify(),
                index,
                route,
                Place::ToolResult,
                fit,
                diagnostics,
            );
            match scaled {
                Some((scaled, notice)) => {
                    out.push(block.with_image(scaled.data, scaled.sniffed.mime()));
                    out.push(BlockView::Text(Cow::Owned(notice)));
                    scaled_any = true;
                }
                None => out.push(block),
            }
        }
        *blocks = out;
        scaled_any
    }

    /// One block, as classified, scaled with its notice when it is an image over `fit` that the
    /// route takes at `place`; an image that could not be scaled is said in the diagnostics.
    fn scale_block(
        &self,
        block: &Block<'_>,
        index: usize,
        route: &Route,
        place: Place,
        fit: Fit,
        diagnostics: &mut Vec<String>,
    ) -> Option<(Scaled, String)> {
        let Block::InlineImage(media) = block else {
            return None;
        };
        if !media.renderable() {
            return None;
        }
        let (sniffed, dimensions) = over_fit(media, route, place, fit)?;
        let why = why_scaled(fit, dimensions);
        match self.scale(media.data, sniffed, dimensions, fit) {
            Ok(scaled) => {
                let notice = scaled_notice(&scaled, &why);
                Some((scaled, notice))
            }
            Err(error) => {
                diagnostics.push(format!("image {} not scaled: {error}", index + 1));
                None
            }
        }
    }
}

/// The text block a notice goes in.
fn notice_block(notice: String) -> Value {
    serde_json::json!({"type": "text", "text": notice})
}

/// An image block with its `data` and `mimeType` replaced, in their places; its other fields
/// copied, its old base64 not.
fn with_image(block: &Value, data: String, mime: &str) -> Value {
    let mut data = Some(data);
    let mut fields: serde_json::Map<String, Value> = match block.as_object() {
        Some(object) => object
            .iter()
            .map(|(key, value)| {
                let value = match key.as_str() {
                    "data" => Value::String(data.take().unwrap_or_default()),
                    "mimeType" => Value::String(mime.to_owned()),
                    _ => value.clone(),
                };
                (key.clone(), value)
            })
            .collect(),
        None => serde_json::Map::new(),
    };
    if let Some(data) = data {
        fields.insert("data".to_owned(), Value::String(data));
    }
    if !fields.contains_key("mimeType") {
        fields.insert("mimeType".to_owned(), Value::String(mime.to_owned()));
    }
    Value::Object(fields)
}

/// The base64 characters `bytes` bytes take.
fn base64_chars(bytes: u64) -> u64 {
    bytes.div_ceil(3) * 4
}

/// The image encoded as `format`.
fn encode(image: &DynamicImage, format: ImageFormat) -> Result<Vec<u8>, ScaleError> {
    let mut out = Cursor::new(Vec::new());
    let written = if format == ImageFormat::Jpeg {
        let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY);
        DynamicImage::ImageRgb8(image.to_rgb8()).write_with_encoder(encoder)
    } else {
        image.write_to(&mut out, ImageFormat::Png)
    };
    written.map_err(|error| ScaleError::Decode(error.to_string()))?;
    Ok(out.into_inner())
}
