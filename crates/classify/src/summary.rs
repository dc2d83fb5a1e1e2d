//! A flat, serialisable account of a classified block: what `mcpl classify` prints.

use std::borrow::Cow;

use serde::Serialize;

use crate::block::{Block, ContradictionSource, Unreadable};
use crate::media::{Limits, Media};
use crate::reference::{Disposition, ReferenceForm};

/// One block's classification as plain data. Uris are never included, only whether one is
/// marked `never`; a classification report is as safe to log as a model's view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Summary {
    /// The kind's short name (`text`, `inline-image`, ...).
    pub kind: &'static str,
    /// The claimed media type, normalised; `null` when absent or unparsable.
    pub claimed_type: Option<String>,
    /// The media type the bytes say; `null` when they say nothing known or there are none.
    pub sniffed_type: Option<&'static str>,
    /// Whether the bytes are PNG, JPEG, GIF or WebP in sound base64.
    pub renderable: bool,
    /// The exact decoded size of the payload, when there is one with a valid shape.
    pub decoded_bytes: Option<u64>,
    /// Image width in pixels, for PNG, JPEG, GIF and WebP.
    pub width: Option<u32>,
    /// Image height in pixels.
    pub height: Option<u32>,
    /// Why the block is invalid, for `invalid`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The label as sent, when it could not be parsed as a media type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed_type_unparsable: Option<String>,
    /// Whether the decoded payload is within the native image limit (images and blobs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub within_native_limit: Option<bool>,
    /// Whether the decoded payload is within the opaque inline limit (data-bearing blocks only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub within_opaque_limit: Option<bool>,
    /// Why the base64 is unusable, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base64_error: Option<String>,
    /// Why bytes of a renderable format cannot be shown, when they cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_defect: Option<&'static str>,
    /// Which wire shape a reference or a withheld block came in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub form: Option<&'static str>,
    /// A reference's claimed name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A reference's claimed size in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// A reference's claimed expiry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// A reference's claimed digest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// A reference's claimed disposition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disposition: Option<&'static str>,
    /// Optional fields dropped for breaking their rule, as `field: rule`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dropped_fields: Vec<String>,
    /// Whether the block marks a uri `never` for the whole result.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub marks_never: bool,
    /// For `embedded-unreadable`: `both` or `neither`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contents: Option<&'static str>,
}

impl Summary {
    /// Summarises a classified block against the given limits.
    pub fn of(block: &Block<'_>, limits: &Limits) -> Summary {
        let mut summary = Summary {
            kind: block.kind_name(),
            claimed_type: None,
            sniffed_type: None,
            renderable: false,
            decoded_bytes: None,
            width: None,
            height: None,
            reason: None,
            claimed_type_unparsable: None,
            within_native_limit: None,
            within_opaque_limit: None,
            base64_error: None,
            image_defect: None,
            form: None,
            name: None,
            size_bytes: None,
            expires_at: None,
            digest: None,
            disposition: None,
            dropped_fields: Vec::new(),
            marks_never: block.never_uri().is_some(),
            contents: None,
        };
        match block {
            Block::Text(_) => {}
            Block::InlineImage(media) | Block::InlineAudio(media) => {
                summary.describe_media(media, limits);
            }
            Block::EmbeddedBlob(blob) => summary.describe_media(&blob.media, limits),
            Block::EmbeddedText(text) => {
                summary.claimed_type = text
                    .claimed
                    .as_ref()
                    .and_then(|c| c.essence.as_deref().map(str::to_owned));
            }
            Block::EmbeddedUnreadable(unreadable) => {
                summary.contents = Some(match unreadable.contents {
                    Unreadable::Both => "both",
                    Unreadable::Neither => "neither",
                });
            }
            Block::InlineContradiction(contradiction) => {
                summary.form = Some(match contradiction.source {
                    ContradictionSource::Image => "image",
                    ContradictionSource::Audio => "audio",
                    ContradictionSource::Embedded => "embedded-resource",
                });
            }
            Block::Reference(reference) => {
                summary.form = Some(match reference.form {
                    ReferenceForm::Resource => "resource",
                    ReferenceForm::Image => "image",
                    ReferenceForm::Audio => "audio",
                    ReferenceForm::ResourceLink => "resource_link",
                });
                summary.claimed_type = reference
                    .mime_type
                    .and_then(|m| crate::ClaimedType::parse(m).essence.map(Cow::into_owned));
                summary.name = reference.name.map(str::to_owned);
                summary.size_bytes = reference.size_bytes;
                summary.expires_at = reference.expires_at.map(str::to_owned);
                summary.digest = reference.digest.map(str::to_owned);
                summary.disposition = reference.disposition.map(|d| match d {
                    Disposition::Never => "never",
                    Disposition::Ref => "ref",
                });
                summary.dropped_fields = reference
                    .dropped
                    .iter()
                    .map(|d| format!("{}: {}", d.field, d.rule.as_str()))
                    .collect();
            }
            Block::Invalid(invalid) => summary.reason = Some(invalid.reason.to_string()),
        }
        summary
    }

    fn describe_media(&mut self, media: &Media<'_>, limits: &Limits) {
        if let Some(claimed) = &media.claimed {
            self.claimed_type = claimed.essence.as_deref().map(str::to_owned);
            if claimed.essence.is_none() {
                self.claimed_type_unparsable = Some(claimed.raw.to_owned());
            }
        }
        self.sniffed_type = media.sniffed.map(|s| s.mime());
        self.renderable = media.renderable();
        self.decoded_bytes = media.decoded_bytes;
        self.width = media.dimensions.map(|d| d.width);
        self.height = media.dimensions.map(|d| d.height);
        self.base64_error = media.base64.as_ref().map(ToString::to_string);
        self.image_defect = media.defect.map(|d| d.as_str());
        if media.decoded_bytes.is_some() {
            self.within_native_limit = Some(media.within(limits.native_image_bytes));
            self.within_opaque_limit = Some(media.within(limits.opaque_bytes));
        }
    }
}
