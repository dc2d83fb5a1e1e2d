//! The kinds a content block can be, and the one function that tells them apart.

use std::fmt;

use serde_json::{Map, Value};

use crate::media::{ClaimedType, Media};
use crate::reference::{Disposition, Reference, ReferenceError, ReferenceForm, read_reference};
use crate::view::{Known, ObjectView, Slot};

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
#[non_exhaustive]
pub struct Contradiction<'a> {
    /// What kind of block it was.
    pub source: ContradictionSource,
    /// The uri this block marks `never`, if it claims `never` and names one.
    pub never_uri: Option<&'a str>,
}

/// An embedded resource with text contents.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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
#[non_exhaustive]
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
#[non_exhaustive]
pub struct EmbeddedUnreadable<'a> {
    /// The resource's uri (may be empty). Never shown to a model.
    pub uri: &'a str,
    /// What was wrong with the contents.
    pub contents: Unreadable,
}

/// A block that is none of the other kinds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Invalid<'a> {
    /// Why.
    pub reason: InvalidReason<'a>,
    /// The uri a `never` claim in the block marks: such a claim holds however malformed the
    /// block is.
    pub never_uri: Option<&'a str>,
}

/// Why a block is invalid. Displays as the short reason the spec names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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
    match block.as_object() {
        Some(object) => classify_fields(&Fields::of(object)),
        None => invalid(InvalidReason::NotAContentBlock),
    }
}

/// [`classify`] on the fields of an object, however they were read.
pub(crate) fn classify_fields<'a>(fields: &Fields<'a>) -> Block<'a> {
    let Some(block_type) = string(fields.kind) else {
        return invalid(InvalidReason::NotAContentBlock);
    };
    match block_type {
        "text" => match string(fields.text) {
            Some(text) => Block::Text(text),
            None => invalid(InvalidReason::TextWithoutString),
        },
        "image" => inline_or_reference(fields, block_type, false),
        "audio" => inline_or_reference(fields, block_type, true),
        "resource" => resource(fields, block_type),
        "resource_link" => reference(fields, block_type, ReferenceForm::ResourceLink),
        other => invalid(InvalidReason::UnknownType(other)),
    }
}

/// One field's value as classification reads it, from a `Value` tree or from a block read
/// straight from bytes ([`ObjectView`]): a string, an object whose fields can be read, or any
/// other JSON.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Field<'a> {
    /// A string.
    Str(&'a str),
    /// Any JSON that is not a string.
    Json(&'a Value),
    /// An object read from bytes.
    View(&'a ObjectView<'a>),
}

impl<'a> Field<'a> {
    pub(crate) fn of_value(value: &'a Value) -> Field<'a> {
        match value {
            Value::String(s) => Field::Str(s),
            other => Field::Json(other),
        }
    }

    pub(crate) fn of_slot(slot: &'a Slot<'_>) -> Field<'a> {
        match slot {
            Slot::Str(s) => Field::Str(s),
            Slot::Json(value) => Field::of_value(value),
        }
    }

    pub(crate) fn as_str(self) -> Option<&'a str> {
        match self {
            Field::Str(s) => Some(s),
            Field::Json(_) | Field::View(_) => None,
        }
    }

    fn is_null(self) -> bool {
        matches!(self, Field::Json(Value::Null))
    }

    /// The fields of an object.
    fn fields(self) -> Option<Fields<'a>> {
        match self {
            Field::Json(Value::Object(object)) => Some(Fields::of(object)),
            Field::View(view) => Some(Fields::of_view(view)),
            Field::Str(_) | Field::Json(_) => None,
        }
    }
}

/// The fields of an object that classification reads, found in one pass over its keys: a
/// lookup by key hashes the key, and classification runs on every block of every result.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Fields<'a> {
    pub(crate) kind: Option<Field<'a>>,
    pub(crate) text: Option<Field<'a>>,
    pub(crate) data: Option<Field<'a>>,
    pub(crate) blob: Option<Field<'a>>,
    pub(crate) uri: Option<Field<'a>>,
    pub(crate) resource: Option<Field<'a>>,
    pub(crate) disposition: Option<Field<'a>>,
    pub(crate) mime_type: Option<Field<'a>>,
    pub(crate) name: Option<Field<'a>>,
    pub(crate) expires_at: Option<Field<'a>>,
    pub(crate) size: Option<Field<'a>>,
    pub(crate) size_bytes: Option<Field<'a>>,
    pub(crate) digest: Option<Field<'a>>,
}

impl<'a> Fields<'a> {
    pub(crate) fn of(object: &'a Map<String, Value>) -> Fields<'a> {
        let mut fields = Fields::default();
        for (key, value) in object {
            if let Some(field) = crate::view::field_at(key).and_then(|at| fields.at_mut(at)) {
                *field = Some(Field::of_value(value));
            }
        }
        fields
    }

    /// The same fields of an object read from bytes, which kept just these.
    pub(crate) fn of_view(view: &'a ObjectView<'_>) -> Fields<'a> {
        let mut fields = Fields::default();
        for (at, value) in view.known() {
            if let Some(field) = fields.at_mut(at) {
                *field = Some(match value {
                    Known::Slot(slot) => Field::of_slot(slot),
                    Known::Object(object) => Field::View(object),
                });
            }
        }
        fields
    }

    /// The field at a place of [`crate::view::FIELDS`].
    fn at_mut(&mut self, at: usize) -> Option<&mut Option<Field<'a>>> {
        use crate::view::{
            BLOB, DATA, DIGEST, DISPOSITION, EXPIRES_AT, KIND, MIME_TYPE, NAME, RESOURCE, SIZE,
            SIZE_BYTES, TEXT, URI,
        };
        Some(match at {
            KIND => &mut self.kind,
            TEXT => &mut self.text,
            DATA => &mut self.data,
            BLOB => &mut self.blob,
            URI => &mut self.uri,
            DISPOSITION => &mut self.disposition,
            MIME_TYPE => &mut self.mime_type,
            NAME => &mut self.name,
            EXPIRES_AT => &mut self.expires_at,
            SIZE => &mut self.size,
            SIZE_BYTES => &mut self.size_bytes,
            DIGEST => &mut self.digest,
            RESOURCE => &mut self.resource,
            _ => return None,
        })
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

fn string(field: Option<Field<'_>>) -> Option<&str> {
    field.and_then(Field::as_str)
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
        None => true,
        Some(Field::Str(uri)) => uri.is_empty(),
        Some(field) => field.is_null(),
    };
    let embedded = fields
        .resource
        .and_then(Field::fields)
        .filter(|inner| matches!(inner.uri, Some(Field::Str(_))));
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
