//! The kinds a content block can be, and the one function that tells them apart.

use std::fmt;

use serde_json::{Map, Value};

use crate::media::{ClaimedType, Media};
use crate::reference::{Disposition, Reference, ReferenceError, ReferenceForm, read_reference};

/// What a content block is. Every lane matches on this exhaustively.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block<'a> {
    /// `type: "text"` with a string `text`.
    Text(&'a str),
    /// `type: "image"` with a string `data`.
    InlineImage(Media<'a>),
    /// `type: "audio"` with a string `data`.
    InlineAudio(Media<'a>),
    /// Inline data that also claims a bulk disposition or carries a uri (RFC-005 vector 2), or an
    /// embedded resource that claims a disposition. Its data is withheld.
    InlineContradiction(Contradiction<'a>),
    /// A reference to a payload by uri.
    Reference(Reference<'a>),
    /// An embedded resource whose contents are text.
    EmbeddedText(EmbeddedText<'a>),
    /// An embedded resource whose contents are a base64 blob.
    EmbeddedBlob(EmbeddedBlob<'a>),
    /// An embedded resource whose contents are both text and a blob, or neither.
    EmbeddedUnreadable(EmbeddedUnreadable<'a>),
    /// Anything else.
    Invalid(Invalid<'a>),
}

/// Which kind of block withheld its inline data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContradictionSource {
    /// An inline image.
    Image,
    /// An inline audio block.
    Audio,
    /// An embedded resource.
    Embedded,
}

/// Inline data withheld because the block also claims what only a reference may.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contradiction<'a> {
    /// What kind of block it was.
    pub source: ContradictionSource,
    /// The uri this block marks `never`, if it claims `never` and names one.
    pub never_uri: Option<&'a str>,
}

/// An embedded resource with text contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedText<'a> {
    /// The resource's uri (may be empty). Never shown to a model.
    pub uri: &'a str,
    /// The text.
    pub text: &'a str,
    /// The resource's claimed media type, if it sent one as a string.
    pub claimed: Option<ClaimedType<'a>>,
}

/// An embedded resource with a base64 blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedBlob<'a> {
    /// The resource's uri (may be empty). Never shown to a model.
    pub uri: &'a str,
    /// The blob, inspected as any inline payload is.
    pub media: Media<'a>,
}

/// Why an embedded resource's contents cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// Both `text` and `blob` are strings.
    Both,
    /// Neither is.
    Neither,
}

/// An embedded resource whose contents cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedUnreadable<'a> {
    /// The resource's uri (may be empty). Never shown to a model.
    pub uri: &'a str,
    /// What was wrong with the contents.
    pub contents: Unreadable,
}

/// A block that is none of the other kinds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid<'a> {
    /// Why.
    pub reason: InvalidReason<'a>,
    /// The uri a `never` claim in the block marks: such a claim holds however malformed the
    /// block is.
    pub never_uri: Option<&'a str>,
}

/// Why a block is invalid. Displays as the short reason the spec names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvalidReason<'a> {
    /// Not a JSON object, or no string `type`.
    NotAContentBlock,
    /// `type: "text"` whose `text` is not a string.
    TextWithoutString,
    /// An image or audio block with neither string `data` nor string `uri`.
    NeitherDataNorUri {
        /// `"image"` or `"audio"`.
        block_type: &'a str,
    },
    /// A `resource` or `resource_link` with no usable uri anywhere.
    ReferenceWithoutUri {
        /// `"resource"` or `"resource_link"`.
        block_type: &'a str,
    },
    /// A reference whose uri is longer than the schema allows.
    UriTooLong,
    /// A `type` this classifier does not know.
    UnknownType(&'a str),
}

impl fmt::Display for InvalidReason<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidReason::NotAContentBlock => f.write_str("not a content block"),
            InvalidReason::TextWithoutString => f.write_str("text block without string text"),
            InvalidReason::NeitherDataNorUri { block_type } => {
                write!(f, "{block_type} block with neither data nor uri")
            }
            InvalidReason::ReferenceWithoutUri { .. } => {
                f.write_str("reference without string uri")
            }
            InvalidReason::UriTooLong => f.write_str("uri exceeds schema maximum"),
            InvalidReason::UnknownType(block_type) => write!(f, "unknown block type: {block_type}"),
        }
    }
}

impl<'a> Block<'a> {
    /// The short name of the kind, as `mcpl classify` prints it.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Block::Text(_) => "text",
            Block::InlineImage(_) => "inline-image",
            Block::InlineAudio(_) => "inline-audio",
            Block::InlineContradiction(_) => "inline-contradiction",
            Block::Reference(_) => "reference",
            Block::EmbeddedText(_) => "embedded-text",
            Block::EmbeddedBlob(_) => "embedded-blob",
            Block::EmbeddedUnreadable(_) => "embedded-unreadable",
            Block::Invalid(_) => "invalid",
        }
    }

    /// The uri this block marks `never` for the whole result, if any. Only a `never` counts.
    pub fn never_uri(&self) -> Option<&'a str> {
        match self {
            Block::Reference(reference) => {
                (reference.disposition == Some(Disposition::Never)).then_some(reference.uri)
            }
            Block::InlineContradiction(contradiction) => contradiction.never_uri,
            Block::Invalid(invalid) => invalid.never_uri,
            Block::Text(_)
            | Block::InlineImage(_)
            | Block::InlineAudio(_)
            | Block::EmbeddedText(_)
            | Block::EmbeddedBlob(_)
            | Block::EmbeddedUnreadable(_) => None,
        }
    }

    /// The media of a data-bearing block (inline image or audio, embedded blob).
    pub fn media(&self) -> Option<&Media<'a>> {
        match self {
            Block::InlineImage(media) | Block::InlineAudio(media) => Some(media),
            Block::EmbeddedBlob(blob) => Some(&blob.media),
            Block::Text(_)
            | Block::InlineContradiction(_)
            | Block::Reference(_)
            | Block::EmbeddedText(_)
            | Block::EmbeddedUnreadable(_)
            | Block::Invalid(_) => None,
        }
    }
}

/// Says what one content block is. Never fails and never panics: an odd block is a kind.
///
/// Reads only the first bytes of any payload, so a 5 MiB image costs about what a 5 KiB one does.
pub fn classify(block: &Value) -> Block<'_> {
    let Some(object) = block.as_object() else {
        return invalid(InvalidReason::NotAContentBlock);
    };
    let fields = Fields::of(object);
    let Some(Value::String(block_type)) = fields.kind else {
        return invalid(InvalidReason::NotAContentBlock);
    };
    match block_type.as_str() {
        "text" => match fields.text {
            Some(Value::String(text)) => Block::Text(text),
            _ => invalid(InvalidReason::TextWithoutString),
        },
        "image" => inline_or_reference(&fields, block_type, false),
        "audio" => inline_or_reference(&fields, block_type, true),
        "resource" => resource(&fields, block_type),
        "resource_link" => reference(&fields, block_type, ReferenceForm::ResourceLink),
        other => invalid(InvalidReason::UnknownType(other)),
    }
}

/// The fields of an object that classification reads, found in one pass over its keys: a
/// lookup by key hashes the key, and classification runs on every block of every result.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Fields<'a> {
    pub(crate) kind: Option<&'a Value>,
    pub(crate) text: Option<&'a Value>,
    pub(crate) data: Option<&'a Value>,
    pub(crate) blob: Option<&'a Value>,
    pub(crate) uri: Option<&'a Value>,
    pub(crate) resource: Option<&'a Value>,
    pub(crate) disposition: Option<&'a Value>,
    pub(crate) mime_type: Option<&'a Value>,
    pub(crate) name: Option<&'a Value>,
    pub(crate) expires_at: Option<&'a Value>,
    pub(crate) size: Option<&'a Value>,
    pub(crate) size_bytes: Option<&'a Value>,
    pub(crate) digest: Option<&'a Value>,
}

impl<'a> Fields<'a> {
    pub(crate) fn of(object: &'a Map<String, Value>) -> Fields<'a> {
        let mut fields = Fields::default();
        for (key, value) in object {
            let field = match key.as_str() {
                "type" => &mut fields.kind,
                "text" => &mut fields.text,
                "data" => &mut fields.data,
                "blob" => &mut fields.blob,
                "uri" => &mut fields.uri,
                "resource" => &mut fields.resource,
                "disposition" => &mut fields.disposition,
                "mimeType" => &mut fields.mime_type,
                "name" => &mut fields.name,
                "expiresAt" => &mut fields.expires_at,
                "size" => &mut fields.size,
                "sizeBytes" => &mut fields.size_bytes,
                "digest" => &mut fields.digest,
                _ => continue,
            };
            *field = Some(value);
        }
        fields
    }
}

impl<'a> From<&'a Map<String, Value>> for Fields<'a> {
    fn from(object: &'a Map<String, Value>) -> Fields<'a> {
        Fields::of(object)
    }
}

fn invalid(reason: InvalidReason<'_>) -> Block<'_> {
    Block::Invalid(Invalid {
        reason,
        never_uri: None,
    })
}

fn string(field: Option<&Value>) -> Option<&str> {
    field.and_then(Value::as_str)
}

fn claims_never(fields: &Fields<'_>) -> bool {
    string(fields.disposition).is_some_and(crate::reference::says_never)
}

fn inline_or_reference<'a>(fields: &Fields<'a>, block_type: &'a str, audio: bool) -> Block<'a> {
    let uri = string(fields.uri);
    match string(fields.data) {
        Some(_) if fields.disposition.is_some() || uri.is_some() => {
            Block::InlineContradiction(Contradiction {
                source: if audio {
                    ContradictionSource::Audio
                } else {
                    ContradictionSource::Image
                },
                never_uri: uri.filter(|uri| !uri.is_empty() && claims_never(fields)),
            })
        }
        Some(data) => {
            let media = Media::inspect(data, string(fields.mime_type));
            if audio {
                Block::InlineAudio(media)
            } else {
                Block::InlineImage(media)
            }
        }
        None if uri.is_some() => {
            let form = if audio {
                ReferenceForm::Audio
            } else {
                ReferenceForm::Image
            };
            reference(fields, block_type, form)
        }
        None => invalid(InvalidReason::NeitherDataNorUri { block_type }),
    }
}

fn reference<'a>(fields: &Fields<'a>, block_type: &'a str, form: ReferenceForm) -> Block<'a> {
    match read_reference(*fields, form) {
        Ok(reference) => Block::Reference(reference),
        Err((error, never_uri)) => Block::Invalid(Invalid {
            reason: match error {
                ReferenceError::NoUri => InvalidReason::ReferenceWithoutUri { block_type },
                ReferenceError::UriTooLong => InvalidReason::UriTooLong,
            },
            never_uri,
        }),
    }
}

/// A `resource` block is MCP's embedded resource when it has no uri of its own (absent, null or
/// empty) and its `resource` is an object with a string `uri`; otherwise it is MCPL's reference.
fn resource<'a>(fields: &Fields<'a>, block_type: &'a str) -> Block<'a> {
    let own_uri_absent = match fields.uri {
        None | Some(Value::Null) => true,
        Some(Value::String(uri)) => uri.is_empty(),
        Some(_) => false,
    };
    let embedded = fields
        .resource
        .and_then(Value::as_object)
        .map(Fields::of)
        .filter(|inner| matches!(inner.uri, Some(Value::String(_))));
    match embedded {
        Some(inner) if own_uri_absent => embedded_resource(fields, &inner),
        _ => reference(fields, block_type, ReferenceForm::Resource),
    }
}

fn embedded_resource<'a>(fields: &Fields<'a>, inner: &Fields<'a>) -> Block<'a> {
    let uri = string(inner.uri).unwrap_or_default();
    // A disposition on the block or on its resource withholds it; only `never` marks the uri.
    if fields.disposition.is_some() || inner.disposition.is_some() {
        let never = claims_never(fields) || claims_never(inner);
        return Block::InlineContradiction(Contradiction {
            source: ContradictionSource::Embedded,
            never_uri: (never && !uri.is_empty()).then_some(uri),
        });
    }
    let claimed = string(inner.mime_type);
    match (string(inner.text), string(inner.blob)) {
        (Some(text), None) => Block::EmbeddedText(EmbeddedText {
            uri,
            text,
            claimed: claimed.map(ClaimedType::parse),
        }),
        (None, Some(blob)) => Block::EmbeddedBlob(EmbeddedBlob {
            uri,
            media: Media::inspect(blob, claimed),
        }),
        (Some(_), Some(_)) => Block::EmbeddedUnreadable(EmbeddedUnreadable {
            uri,
            contents: Unreadable::Both,
        }),
        (None, None) => Block::EmbeddedUnreadable(EmbeddedUnreadable {
            uri,
            contents: Unreadable::Neither,
        }),
    }
}
