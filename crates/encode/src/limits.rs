//! The one request-level check: what a whole request carries, held to the route's
//! [`RequestLimits`] as the encoder assembles it.
//!
//! Every image that would go natively is listed in priority order: the latest message's first,
//! and within a message in call order. Images are admitted in that order; one that would pass a
//! limit becomes its stored placeholder (the `[image: ..., ref img_...]` line of the result's
//! stored copy, or a description where it has none) with a notice naming the limit it hit.

use std::borrow::Cow;
use std::fmt;

use mcpl_classify::{Dimensions, Payload, Sniffed};
use mcpl_lanes::{RequestLimits, RouteId, markers};
use mcpl_scale::{Fit, Scaler};

use crate::conversation::{Content, Message, ToolOutput};
use crate::{
    decoded_len, takes_audio, takes_document, takes_image, takes_tool_audio, takes_tool_image,
};

/// Which request limit an image hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitHit {
    /// The image has no pixels.
    NoPixels,
    /// A side is over the route's per-side cap.
    Side(u32),
    /// A side is over the cap for requests of many images: (images, pixels).
    ManyImagesSide(usize, u32),
    /// The image's base64 is over the per-image cap.
    ImageBase64(u64),
    /// The image is an animated GIF, which the route does not take.
    AnimatedGif,
    /// The request already carries the most images it may.
    Images(usize),
    /// The request's images together would pass this many decoded bytes.
    ImageBytes(u64),
    /// The request's inline data together would pass this many base64 characters.
    InlineBase64(u64),
    /// The request body would pass this many bytes.
    Body(u64),
    /// The document has more pages than the route takes in one.
    DocumentPages(u32),
    /// The document is over the route's bytes per document.
    DocumentBytes(u64),
    /// The request's documents together would pass this many pages.
    RequestPages(u32),
}

impl fmt::Display for LimitHit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitHit::NoPixels => f.write_str("it has no pixels"),
            LimitHit::Side(px) => write!(f, "a side is over {px} px"),
            LimitHit::ManyImagesSide(images, px) => write!(
                f,
                "a side is over {px} px in a request of more than {images} images"
            ),
            LimitHit::ImageBase64(chars) => {
                write!(f, "its base64 is over {chars} characters per image")
            }
            LimitHit::AnimatedGif => f.write_str("this route takes no animated GIF"),
            LimitHit::Images(max) => write!(f, "the request already carries {max} images"),
            LimitHit::ImageBytes(max) => {
                write!(f, "the request's images would pass {max} bytes")
            }
            LimitHit::InlineBase64(max) => {
                write!(f, "the request's inline data would pass {max} bytes")
            }
            LimitHit::Body(max) => write!(f, "the request body would pass {max} bytes"),
            LimitHit::DocumentPages(max) => write!(f, "it has more than {max} pages"),
            LimitHit::DocumentBytes(max) => write!(f, "it is over {max} bytes per document"),
            LimitHit::RequestPages(max) => {
                write!(f, "the request's documents would pass {max} pages")
            }
        }
    }
}

/// `[image not sent in this request: <limit>]`: the notice after a placeholder.
pub fn request_limit_notice(hit: LimitHit) -> String {
    format!("[image not sent in this request: {hit}]")
}

/// `[audio not sent in this request: <limit>]`: the notice after inline audio left out.
pub fn audio_limit_notice(hit: LimitHit) -> String {
    format!("[audio not sent in this request: {hit}]")
}

/// `[document not sent in this request: <limit>]`: the notice after a document left out.
pub fn document_limit_notice(hit: LimitHit) -> String {
    format!("[document not sent in this request: {hit}]")
}

/// The texts the request's limits may write for a part of a user message, at their longest:
/// what may take its place (its description and a limit's notice) and what may follow it (the
/// notice after an image scaled to fit). Every limit is spelled with the largest numbers it can
/// hold, so none of these texts is shorter than the one a request writes. A text part has none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LimitTexts {
    /// Each text that may replace the part, one per limit.
    pub replacements: Vec<String>,
    /// The notice that may follow the part when it is scaled to fit.
    pub after: Option<String>,
}

impl LimitTexts {
    /// The texts for `part`.
    pub fn of(part: &Content) -> LimitTexts {
        if matches!(part, Content::Text(_)) {
            return LimitTexts::default();
        }
        let (n, px, bytes) = (usize::MAX, u32::MAX, u64::MAX);
        let hits = [
            LimitHit::NoPixels,
            LimitHit::Side(px),
            LimitHit::ManyImagesSide(n, px),
            LimitHit::ImageBase64(bytes),
            LimitHit::AnimatedGif,
            LimitHit::Images(n),
            LimitHit::ImageBytes(bytes),
            LimitHit::InlineBase64(bytes),
            LimitHit::Body(bytes),
            LimitHit::DocumentPages(px),
            LimitHit::DocumentBytes(bytes),
            LimitHit::RequestPages(px),
        ];
        let replacements = hits
            .iter()
            .map(|hit| placeholder(part, None, *hit))
            .collect();
        let after = matches!(part, Content::Image { .. }).then(|| {
            let size = markers::size_label(bytes);
            let why = hits
                .iter()
                .map(ToString::to_string)
                .max_by_key(String::len)
                .unwrap_or_default();
            let scaled = format!(
                "[image above scaled from {px}×{px} px, {size} to {px}×{px} px, {size}: {why}]"
            );
            let first_frame = mcpl_scale::first_frame_notice(&why);
            if scaled.len() >= first_frame.len() {
                scaled
            } else {
                first_frame
            }
        });
        LimitTexts {
            replacements,
            after,
        }
    }

    /// The most an image, document or audio clip of a message can cost once the request's
    /// limits have had their say: its own price and the dearest text a limit may write for it.
    /// `None` when it cannot be priced on the route.
    pub fn ceiling(pricer: mcpl_budget::Pricer<'_>, part: &Content) -> Option<u64> {
        let own = pricer.part(&part.as_part()).ok()?;
        let texts = LimitTexts::of(part);
        let replaced = texts
            .replacements
            .iter()
            .map(|text| pricer.text.count(text))
            .max()
            .unwrap_or(0);
        let after = texts
            .after
            .as_deref()
            .map_or(0, |text| pricer.text.count(text));
        Some(own + replaced.max(after))
    }
}

/// Where an image sits in the messages: message, tool output (none in a user message), part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct At {
    message: usize,
    output: Option<usize>,
    part: usize,
}

/// What a candidate is, which decides the limits it is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An image: every per-image limit, the count, the many-images side and the totals.
    Image,
    /// Audio carried inline: it counts toward the inline total and the body only.
    Audio,
    /// A PDF, with its pages as counted: the document limits, the pages per request, the inline
    /// total and the body.
    Document {
        /// Its pages.
        pages: u32,
    },
}

/// One image, inline audio or document that would go natively, with what the limits read of
/// it.
struct Candidate<'m> {
    at: At,
    kind: Kind,
    sniffed: Sniffed,
    width: u32,
    height: u32,
    /// The base64 as it will go: the message's own, or the image scaled to fit.
    data: Cow<'m, str>,
    /// The notice after an image that was scaled to fit.
    notice: Option<String>,
}

impl Candidate<'_> {
    /// The image scaled to fit `fit`, or why not; what it hit names the notice.
    fn scale(&mut self, fit: Fit, hit: LimitHit) -> bool {
        let from = Dimensions {
            width: self.width,
            height: self.height,
        };
        let Ok(scaled) = Scaler::default().scale(&self.data, self.sniffed, from, fit) else {
            return false;
        };
        let why = hit.to_string();
        self.notice = Some(
            if scaled.dimensions == from && hit == LimitHit::AnimatedGif {
                mcpl_scale::first_frame_notice(&why)
            } else {
                mcpl_scale::scaled_notice(&scaled, &why)
            },
        );
        (self.sniffed, self.width, self.height) = (
            scaled.sniffed,
            scaled.dimensions.width,
            scaled.dimensions.height,
        );
        self.data = Cow::Owned(scaled.data);
        true
    }
}

/// The images of a request that would go natively on `route`, in priority order.
fn candidates(messages: &[Message], route: RouteId) -> Vec<Candidate<'_>> {
    let mut out = Vec::new();
    for (message, body) in messages.iter().enumerate().rev() {
        match body {
            Message::User(content) => push_images(&mut out, route, message, None, content),
            Message::ToolResults(outputs) => {
                for (index, output) in outputs.iter().enumerate() {
                    if let Some(parts) = &output.live {
                        push_images(&mut out, route, message, Some(index), parts);
                    }
                }
            }
            Message::Assistant { .. } => {}
        }
    }
    out
}

/// Lists the images of one message's content (or one tool output's live copy) the route sends
/// natively there.
fn push_images<'m>(
    out: &mut Vec<Candidate<'m>>,
    route: RouteId,
    message: usize,
    output: Option<usize>,
    parts: &'m [Content],
) {
    let priced = crate::Encoder::new(route).route();
    for (part, content) in parts.iter().enumerate() {
        let at = At {
            message,
            output,
            part,
        };
        match content {
            Content::Image {
                sniffed,
                dimensions,
                data,
            } => {
                let native = match output {
                    Some(_) => takes_tool_image(priced, *sniffed),
                    None => takes_image(priced, *sniffed),
                };
                if native {
                    out.push(Candidate {
                        at,
                        kind: Kind::Image,
                        sniffed: *sniffed,
                        width: dimensions.width,
                        height: dimensions.height,
                        data: Cow::Borrowed(data),
                        notice: None,
                    });
                }
            }
            // Audio counts only where a route limits inline data.
            Content::Audio { sniffed, data }
                if match output {
                    Some(_) => takes_tool_audio(priced, *sniffed),
                    None => takes_audio(priced, *sniffed),
                } =>
            {
                out.push(Candidate {
                    at,
                    kind: Kind::Audio,
                    sniffed: *sniffed,
                    width: 0,
                    height: 0,
                    data: Cow::Borrowed(data),
                    notice: None,
                });
            }
            Content::Document { pages, data } if output.is_some() && takes_document(priced) => {
                out.push(Candidate {
                    at,
                    kind: Kind::Document { pages: *pages },
                    sniffed: Sniffed::Pdf,
                    width: 0,
                    height: 0,
                    data: Cow::Borrowed(data),
                    notice: None,
                });
            }
            Content::Audio { .. } | Content::Document { .. } | Content::Text(_) => {}
        }
    }
}

/// What the check decided: the images that stay, in priority order, those that go scaled, and
/// those that do not go.
pub(crate) struct Decision {
    /// The admitted images with their base64 length, lowest priority last.
    kept: Vec<(At, u64)>,
    /// Admitted images scaled to fit: the image that goes and the notice after it.
    scaled: Vec<(At, Content, String)>,
    dropped: Vec<(At, LimitHit)>,
}

/// Decides which of the request's native images stay within every limit but the body's. With
/// `scaling`, an image over the per-side cap, the per-image base64 or the many-images side, or an
/// animated GIF where the route takes none, is scaled to fit (its first frame) before it would
/// be left out.
pub(crate) fn decide(
    messages: &[Message],
    route: RouteId,
    limits: &RequestLimits,
    scaling: bool,
) -> Decision {
    let candidates = candidates(messages, route);
    let mut dropped = Vec::new();
    let fit = Fit::new(limits.max_side, limits.image_base64.unwrap_or(u64::MAX));
    // Per image: pixels, sides, base64, animation.
    let mut admitted: Vec<Candidate<'_>> = Vec::new();
    let mut audio: Vec<Candidate<'_>> = Vec::new();
    for mut image in candidates {
        match image.kind {
            Kind::Image => {}
            Kind::Audio => {
                audio.push(image);
                continue;
            }
            Kind::Document { pages } => {
                let hit = if let Some(max) = limits.document_pages
                    && pages > max
                {
                    Some(LimitHit::DocumentPages(max))
                } else if let Some(max) = limits.document_bytes
                    && decoded_len(&image.data) > max
                {
                    Some(LimitHit::DocumentBytes(max))
                } else {
                    None
                };
                match hit {
                    Some(hit) => dropped.push((image.at, hit)),
                    // Documents join the totals with the audio, by priority.
                    None => audio.push(image),
                }
                continue;
            }
        }
        let hit = if image.width == 0 || image.height == 0 {
            Some(LimitHit::NoPixels)
        } else if image.width.max(image.height) > limits.max_side {
            Some(LimitHit::Side(limits.max_side))
        } else if let Some(max) = limits.image_base64
            && image.data.len() as u64 > max
        {
            Some(LimitHit::ImageBase64(max))
        } else if !limits.animated_gif && image.sniffed == Sniffed::Gif && is_animated(&image.data)
        {
            Some(LimitHit::AnimatedGif)
        } else {
            None
        };
        match hit {
            Some(LimitHit::NoPixels) | None => {}
            Some(hit) if scaling && image.scale(fit, hit) => {
                admitted.push(image);
                continue;
            }
            Some(_) => {}
        }
        match hit {
            Some(hit) => dropped.push((image.at, hit)),
            None => admitted.push(image),
        }
    }
    // The count: the highest-priority images stay.
    if let Some(max) = limits.max_images
        && admitted.len() > max
    {
        for image in admitted.split_off(max) {
            dropped.push((image.at, LimitHit::Images(max)));
        }
    }
    // Many images. With scaling, every large image is scaled to the smaller side, so all of
    // them go; one that cannot be is left out. Without, the small ones always fit, and a large
    // one stays, in priority order, only while the request stays at the threshold.
    if let Some(threshold) = limits.many_images
        && admitted.len() > threshold
    {
        let side = limits.many_images_side;
        let large = |image: &Candidate<'_>| image.width.max(image.height) > side;
        let small = admitted.iter().filter(|image| !large(image)).count();
        let mut room = threshold.saturating_sub(small);
        let hit = LimitHit::ManyImagesSide(threshold, side);
        let many = Fit::new(side, fit.max_base64);
        admitted.retain_mut(|image| {
            if !large(image) {
                return true;
            }
            if scaling {
                if image.scale(many, hit) {
                    return true;
                }
            } else if room > 0 {
                room -= 1;
                return true;
            }
            dropped.push((image.at, hit));
            false
        });
        // Should scaling have failed for enough of them, the request may be back at the
        // threshold with room for large images; it is simpler to hold the rule in any case.
    }
    // Totals: an image that would pass one is left out; a later, smaller one may still fit.
    // Inline audio takes its place among the images by priority.
    if !audio.is_empty() {
        admitted.extend(audio);
        admitted.sort_by_key(|image| {
            (
                std::cmp::Reverse(image.at.message),
                image.at.output,
                image.at.part,
            )
        });
    }
    let mut bytes = 0u64;
    let mut inline = 0u64;
    let mut pages = 0u32;
    admitted.retain(|image| {
        let (size, doc_pages) = match image.kind {
            Kind::Image => (decoded_len(&image.data), 0),
            Kind::Audio => (0, 0),
            Kind::Document { pages } => (0, pages),
        };
        let chars = image.data.len() as u64;
        if let Some(max) = limits.request_pages
            && matches!(image.kind, Kind::Document { .. })
            && pages + doc_pages > max
        {
            dropped.push((image.at, LimitHit::RequestPages(max)));
            return false;
        }
        if let Some(max) = limits.image_bytes
            && bytes + size > max
        {
            dropped.push((image.at, LimitHit::ImageBytes(max)));
            return false;
        }
        if let Some(max) = limits.inline_base64
            && inline + chars > max
        {
            dropped.push((image.at, LimitHit::InlineBase64(max)));
            return false;
        }
        bytes += size;
        inline += chars;
        pages += doc_pages;
        true
    });
    let kept = admitted
        .iter()
        .map(|image| (image.at, image.data.len() as u64))
        .collect();
    let scaled = admitted
        .into_iter()
        .filter_map(|image| {
            let notice = image.notice?;
            let content = Content::Image {
                sniffed: image.sniffed,
                dimensions: Dimensions {
                    width: image.width,
                    height: image.height,
                },
                data: image.data.into_owned(),
            };
            Some((image.at, content, notice))
        })
        .collect();
    Decision {
        kept,
        scaled,
        dropped,
    }
}

impl Decision {
    /// Drops the lowest-priority kept images until their base64 adds up to `excess` bytes,
    /// for the body limit; whether any was left to drop.
    pub(crate) fn shed(&mut self, excess: u64, max: u64) -> bool {
        let mut freed = 0u64;
        let mut any = false;
        while freed < excess {
            let Some((at, chars)) = self.kept.pop() else {
                break;
            };
            freed += chars;
            any = true;
            self.dropped.push((at, LimitHit::Body(max)));
        }
        any
    }

    /// The messages with every dropped image replaced by its placeholder and notice; borrowed
    /// when nothing was dropped.
    pub(crate) fn apply<'m>(&self, messages: &'m [Message]) -> Cow<'m, [Message]> {
        if self.dropped.is_empty() && self.scaled.is_empty() {
            return Cow::Borrowed(messages);
        }
        let mut out = messages.to_vec();
        for &(at, hit) in &self.dropped {
            let Some(message) = out.get_mut(at.message) else {
                continue;
            };
            match (message, at.output) {
                (Message::User(content), None) => {
                    if let Some(part) = content.get_mut(at.part) {
                        *part = Content::Text(placeholder(part, None, hit));
                    }
                }
                (Message::ToolResults(outputs), Some(index)) => {
                    let Some(output) = outputs.get_mut(index) else {
                        continue;
                    };
                    let stored = stored_placeholder(output, at.part);
                    if let Some(part) = output.live.as_mut().and_then(|p| p.get_mut(at.part)) {
                        *part = Content::Text(placeholder(part, stored, hit));
                    }
                }
                _ => {}
            }
        }
        // Scaled images that stayed: the scaled image in its place, its notice after it, from
        // the last place to the first so the places before stay where they are.
        let mut scaled: Vec<&(At, Content, String)> = self
            .scaled
            .iter()
            .filter(|(at, _, _)| !self.dropped.iter().any(|(gone, _)| gone == at))
            .collect();
        scaled.sort_by_key(|(at, _, _)| std::cmp::Reverse(*at));
        for (at, image, notice) in scaled {
            let parts = match (out.get_mut(at.message), at.output) {
                (Some(Message::User(content)), None) => Some(content),
                (Some(Message::ToolResults(outputs)), Some(index)) => {
                    outputs.get_mut(index).and_then(|o| o.live.as_mut())
                }
                _ => None,
            };
            if let Some(parts) = parts
                && at.part < parts.len()
            {
                parts[at.part] = image.clone();
                parts.insert(at.part + 1, Content::Text(notice.clone()));
            }
        }
        Cow::Owned(out)
    }
}

/// The text an image left out becomes: its stored placeholder, or a description, and the
/// notice.
fn placeholder(part: &Content, stored: Option<String>, hit: LimitHit) -> String {
    match part {
        Content::Audio { sniffed, data } => format!(
            "{} {}",
            markers::audio_line(sniffed.mime(), decoded_len(data)),
            audio_limit_notice(hit)
        ),
        Content::Image { sniffed, data, .. } => {
            let line = stored.unwrap_or_else(|| {
                format!(
                    "[image: {}, {}]",
                    sniffed.mime(),
                    markers::size_label(decoded_len(data))
                )
            });
            format!("{line} {}", request_limit_notice(hit))
        }
        Content::Document { data, .. } => {
            let line = stored.unwrap_or_else(|| {
                format!(
                    "[document: application/pdf, {}]",
                    markers::size_label(decoded_len(data))
                )
            });
            format!("{line} {}", document_limit_notice(hit))
        }
        Content::Text(text) => text.clone(),
    }
}

/// The line of a tool result's stored copy that stands for its live part `index`: the stored
/// copy is the live parts' texts and the images' one-line placeholders, joined by `\n`.
fn stored_placeholder(output: &ToolOutput, index: usize) -> Option<String> {
    let parts = output.live.as_ref()?;
    let mut rest = output.stored.as_str();
    for (n, part) in parts.iter().enumerate() {
        let piece = match part {
            Content::Text(text) => {
                let after = rest.strip_prefix(text.as_str())?;
                (&rest[..text.len()], after)
            }
            Content::Image { .. } | Content::Audio { .. } | Content::Document { .. } => {
                let end = rest.find('\n').unwrap_or(rest.len());
                (&rest[..end], &rest[end..])
            }
        };
        if n == index {
            let prefix = match part {
                Content::Image { .. } => "[image: ",
                Content::Document { .. } => "[document: ",
                Content::Audio { .. } => "[audio: ",
                Content::Text(_) => return None,
            };
            return Some(piece.0.to_owned()).filter(|line| line.starts_with(prefix));
        }
        rest = piece.1.strip_prefix('\n').unwrap_or(piece.1);
    }
    None
}

/// Whether a GIF holds more than one frame: more than one image descriptor, or more than one
/// graphic control extension, read from its block structure without decoding pixels. A GIF
/// whose blocks cannot be read counts as animated, so it is never sent on a route that takes
/// still GIFs only.
pub fn is_animated(data: &str) -> bool {
    let Ok(payload) = Payload::new(data) else {
        return true;
    };
    let Ok(bytes) = payload.decode_prefix(usize::try_from(payload.decoded_len()).unwrap_or(0))
    else {
        return true;
    };
    gif_frames(&bytes).is_none_or(|frames| frames > 1)
}

/// The larger of a GIF's image descriptors and graphic control extensions, or `None` when its
/// blocks cannot be read.
fn gif_frames(bytes: &[u8]) -> Option<usize> {
    if !(bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a")) {
        return None;
    }
    let flags = *bytes.get(10)?;
    let mut at = 13 + color_table(flags);
    let (mut images, mut controls) = (0usize, 0usize);
    loop {
        match *bytes.get(at)? {
            0x3B => return Some(images.max(controls)),
            0x21 => {
                if *bytes.get(at + 1)? == 0xF9 {
                    controls += 1;
                }
                at = skip_sub_blocks(bytes, at + 2)?;
            }
            0x2C => {
                images += 1;
                if images > 1 {
                    return Some(images);
                }
                let flags = *bytes.get(at + 9)?;
                // Descriptor, local color table, LZW minimum code size, then data sub-blocks.
                at = skip_sub_blocks(bytes, at + 10 + color_table(flags) + 1)?;
            }
            _ => return None,
        }
    }
}

/// The bytes of the color table a packed-fields byte declares.
fn color_table(flags: u8) -> usize {
    if flags & 0x80 == 0 {
        0
    } else {
        3 << ((flags & 0x07) + 1)
    }
}

/// The offset after a chain of sub-blocks ending in a zero-length block.
fn skip_sub_blocks(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = usize::from(*bytes.get(at)?);
        at += 1;
        if len == 0 {
            return Some(at);
        }
        at += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GIF89a of `frames` 1×1 frames, each after a graphic control extension.
    fn gif(frames: usize) -> Vec<u8> {
        let mut bytes = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff".to_vec();
        for _ in 0..frames {
            bytes.extend_from_slice(b"\x21\xf9\x04\x00\x0a\x00\x00\x00");
            bytes
                .extend_from_slice(b"\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02\x44\x01\x00");
        }
        bytes.push(0x3B);
        bytes
    }

    #[test]
    fn frames_are_counted_from_the_blocks() {
        assert_eq!(gif_frames(&gif(1)), Some(1));
        assert_eq!(gif_frames(&gif(2)), Some(2));
        assert_eq!(gif_frames(&gif(0)), Some(0));
        assert_eq!(gif_frames(&gif(1)[..20]), None);
        assert_eq!(gif_frames(b"\x89PNG"), None);
    }

    use mcpl_budget::{Bound, TokenEstimator};
    use proptest::prelude::*;

    fn hit() -> impl Strategy<Value = LimitHit> {
        let px = any::<u32>();
        let n = any::<usize>();
        let bytes = any::<u64>();
        prop_oneof![
            Just(LimitHit::NoPixels),
            px.prop_map(LimitHit::Side),
            (n, px).prop_map(|(n, px)| LimitHit::ManyImagesSide(n, px)),
            bytes.prop_map(LimitHit::ImageBase64),
            Just(LimitHit::AnimatedGif),
            n.prop_map(LimitHit::Images),
            bytes.prop_map(LimitHit::ImageBytes),
            bytes.prop_map(LimitHit::InlineBase64),
            bytes.prop_map(LimitHit::Body),
            px.prop_map(LimitHit::DocumentPages),
            bytes.prop_map(LimitHit::DocumentBytes),
            px.prop_map(LimitHit::RequestPages),
        ]
    }

    /// A part of each kind, `len` base64 characters long.
    fn part(kind: u8, len: usize) -> Content {
        let data = "A".repeat(len);
        match kind % 3 {
            0 => Content::Image {
                sniffed: Sniffed::Png,
                dimensions: Dimensions {
                    width: 1,
                    height: 1,
                },
                data,
            },
            1 => Content::Audio {
                sniffed: Sniffed::Wav,
                data,
            },
            _ => Content::Document { data, pages: 1 },
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// No text a limit writes for a part costs more than the dearest of its `LimitTexts`.
        #[test]
        fn limit_texts_are_the_dearest_a_limit_writes(
            kind in any::<u8>(),
            len in 0usize..5000,
            hit in hit(),
            from in (any::<u32>(), any::<u32>()),
            to in (any::<u32>(), any::<u32>()),
            from_bytes in any::<u64>(),
            scaled_len in 0usize..5000,
        ) {
            let part = part(kind, len);
            let texts = LimitTexts::of(&part);
            let dearest = texts.replacements.iter().map(|t| Bound.count(t)).max().unwrap_or(0);
            let written = placeholder(&part, None, hit);
            prop_assert!(Bound.count(&written) <= dearest, "{written}");
            if let Content::Image { .. } = part {
                let after = Bound.count(texts.after.as_deref().unwrap_or(""));
                let scaled = mcpl_scale::Scaled {
                    data: "A".repeat(scaled_len),
                    sniffed: Sniffed::Png,
                    dimensions: Dimensions { width: to.0, height: to.1 },
                    from: Dimensions { width: from.0, height: from.1 },
                    from_bytes,
                };
                let why = hit.to_string();
                for notice in [
                    mcpl_scale::scaled_notice(&scaled, &why),
                    mcpl_scale::first_frame_notice(&why),
                ] {
                    prop_assert!(Bound.count(&notice) <= after, "{notice}");
                }
            }
        }
    }
}
