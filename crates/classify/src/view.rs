//! Tool results read straight from JSON bytes, in one pass, without a `Value` tree for the
//! blocks.
//!
//! A content block keeps only the fields classification reads, each a [`Slot`]: a string is
//! borrowed from the input when it holds no escape, so a block's text and its payload are never
//! copied. Whatever else may hold a uri (a field holding an object or an array) is kept as a
//! `Value` for the lanes' uri walk; scalars in other fields are skipped. Data that a lane shows as
//! JSON (structured content, content that is not an array, an element that is not an object) is
//! read into a `Value`, keys in the server's order. A block is three machine words: a plain text
//! block is its text alone, any other block one box (decision 0088), so a result of a million
//! tiny blocks holds less in its views than in its bytes.
//!
//! Reading a result this way and classifying its blocks gives exactly what [`classify`] gives on
//! the same result parsed into a `Value` (a test checks it on every case and on arbitrary JSON).
//!
//! [`classify`]: crate::classify

use std::borrow::Cow;
use std::fmt;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

use crate::block::{Block, Fields, classify_fields};

/// The visitor methods for scalars, each making a `Value` and handing it to `$make`.
macro_rules! scalars_as {
    ($make:expr) => {
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok(($make)(Value::Bool(v)))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(($make)(Value::Number(v.into())))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(($make)(Value::Number(v.into())))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok(($make)(
                Number::from_f64(v).map_or(Value::Null, Value::Number),
            ))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(($make)(Value::String(v.to_owned())))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(($make)(Value::String(v)))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(($make)(Value::Null))
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(($make)(Value::Null))
        }
    };
}

/// The block types that make an object a content block (MCP's five).
const BLOCK_TYPES: &[&str] = &["text", "image", "audio", "resource", "resource_link"];

/// A field's value as read: a string, borrowed when it held no escape, or any other JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Slot<'de> {
    /// A string.
    Str(Cow<'de, str>),
    /// Anything else: a number, a boolean, null, an object or an array (boxed, so a slot
    /// costs what a string does).
    Json(Box<Value>),
}

impl Slot<'_> {
    /// The string, if the value is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Slot::Str(s) => Some(s),
            Slot::Json(_) => None,
        }
    }
}

/// An embedded resource's `resource` field: an object read as a block is, or any other value.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceSlot<'de> {
    /// An object.
    Object(Box<ObjectView<'de>>),
    /// Anything else.
    Other(Slot<'de>),
}

/// An object read from bytes: the fields classification reads, and the values of the others
/// that are objects or arrays (a uri may sit in them). The fields most blocks have are inline;
/// the rest sit in one box made only for a block that has one, so a block costs little more
/// than its fields' strings, which are borrowed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ObjectView<'de> {
    /// `type`.
    pub kind: Option<Slot<'de>>,
    /// `text`.
    pub text: Option<Slot<'de>>,
    /// `data`.
    pub data: Option<Slot<'de>>,
    /// `uri`.
    pub uri: Option<Slot<'de>>,
    /// `mimeType`.
    pub mime_type: Option<Slot<'de>>,
    /// `name`.
    pub name: Option<Slot<'de>>,
    /// `resource`: inline, so an embedded resource costs two boxes (its block's and its
    /// resource's), not three.
    pub resource: Option<ResourceSlot<'de>>,
    /// The other fields, when the object has any of them.
    pub more: Option<Box<MoreFields<'de>>>,
}

/// The fields of an [`ObjectView`] that fewer blocks have.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MoreFields<'de> {
    /// `blob`.
    pub blob: Option<Slot<'de>>,
    /// `disposition`.
    pub disposition: Option<Slot<'de>>,
    /// `expiresAt`.
    pub expires_at: Option<Slot<'de>>,
    /// `size`.
    pub size: Option<Slot<'de>>,
    /// `sizeBytes`.
    pub size_bytes: Option<Slot<'de>>,
    /// `digest`.
    pub digest: Option<Slot<'de>>,
    /// Every other field whose value is an object or an array, by name, in order.
    pub nested: Vec<(Cow<'de, str>, Value)>,
}

/// No more fields.
static NO_MORE: MoreFields<'static> = MoreFields {
    blob: None,
    disposition: None,
    expires_at: None,
    size: None,
    size_bytes: None,
    digest: None,
    nested: Vec::new(),
};

impl<'de> ObjectView<'de> {
    /// What the object is, as [`classify`](crate::classify) says of the same object as a `Value`.
    pub fn classify(&self) -> Block<'_> {
        classify_fields(&Fields::of_view(self))
    }

    /// The known fields' values that are JSON other than strings (a uri may sit in them), and
    /// every other field's object or array.
    pub fn json_values(&self) -> impl Iterator<Item = &Value> {
        let more = self.more_fields();
        let resource = match &self.resource {
            Some(ResourceSlot::Other(slot)) => Some(slot),
            Some(ResourceSlot::Object(_)) | None => None,
        };
        [
            &self.kind,
            &self.text,
            &self.data,
            &more.blob,
            &self.uri,
            &more.disposition,
            &self.mime_type,
            &self.name,
            &more.expires_at,
            &more.size,
            &more.size_bytes,
            &more.digest,
        ]
        .into_iter()
        .filter_map(Option::as_ref)
        .chain(resource)
        .filter_map(|slot| match slot {
            Slot::Json(value) => Some(&**value),
            Slot::Str(_) => None,
        })
        .chain(more.nested.iter().map(|(_, value)| value))
    }

    /// The fields fewer blocks have (all absent when the object has none).
    pub fn more_fields(&self) -> &MoreFields<'de> {
        self.more.as_deref().unwrap_or(&NO_MORE)
    }

    /// The nested object of an embedded resource's `resource` field, when it is one.
    pub fn resource_object(&self) -> Option<&ObjectView<'de>> {
        match &self.resource {
            Some(ResourceSlot::Object(inner)) => Some(inner),
            Some(ResourceSlot::Other(_)) | None => None,
        }
    }
}

/// One element of a content array read from bytes, in three machine words: a result of a
/// million tiny blocks holds about 24 bytes a block besides its input (decision 0088).
#[derive(Debug, Clone, PartialEq)]
pub enum BlockView<'de> {
    /// A text block with nothing else a lane reads: an object whose `type` is `"text"`, whose
    /// `text` is a string, and whose other fields are none the view keeps (any field it skips
    /// may be there). It reads exactly as the same object in an [`ObjectView`] would.
    Text(Cow<'de, str>),
    /// Any other object.
    Object(Box<ObjectView<'de>>),
    /// Anything else, which is no content block.
    Other(Box<Value>),
}

impl<'de> BlockView<'de> {
    /// What the element is, as [`classify`](crate::classify) says of the same element as a
    /// `Value`.
    pub fn classify(&self) -> Block<'_> {
        match self {
            BlockView::Text(text) => Block::Text(text),
            BlockView::Object(object) => object.classify(),
            BlockView::Other(value) => crate::classify(value),
        }
    }

    /// An object as read: a plain text block becomes [`BlockView::Text`], any other object is
    /// boxed.
    pub fn of_object(object: ObjectView<'de>) -> BlockView<'de> {
        match object {
            ObjectView {
                kind: Some(Slot::Str(kind)),
                text: Some(Slot::Str(text)),
                data: None,
                uri: None,
                mime_type: None,
                name: None,
                resource: None,
                more: None,
            } if kind == "text" => BlockView::Text(text),
            object => BlockView::Object(Box::new(object)),
        }
    }

    /// The values a lane's uri walk reads in the element's fields, as
    /// [`ObjectView::json_values`] gives them; none for a plain text block or an element that
    /// is no object.
    pub fn json_values(&self) -> impl Iterator<Item = &Value> {
        let object = match self {
            BlockView::Object(object) => Some(&**object),
            BlockView::Text(_) | BlockView::Other(_) => None,
        };
        object.into_iter().flat_map(ObjectView::json_values)
    }
}

/// A tool result's `content` as read from bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentView<'de> {
    /// An array: its elements.
    Blocks(Vec<BlockView<'de>>),
    /// Anything else, which a lane shows as data.
    Data(Value),
}

/// A `CallToolResult` read from bytes in one pass: what a lane needs of it, as it would read the
/// same result parsed into a `Value`. A bare array is the content; a single content block, or any
/// other value that is not an object, is content that is not an array.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultView<'de> {
    /// `content`, when present.
    pub content: Option<ContentView<'de>>,
    /// `structuredContent`, when the key is present (`null` included).
    pub structured: Option<Value>,
    /// `isError: true`.
    pub is_error: bool,
}

impl<'de> ResultView<'de> {
    /// Reads a result. Fails where `serde_json::from_slice::<Value>` fails on the same bytes.
    pub fn parse(bytes: &'de [u8]) -> Result<ResultView<'de>, serde_json::Error> {
        let mut deserializer = serde_json::Deserializer::from_slice(bytes);
        let read = deserializer.deserialize_any(ResultVisitor)?;
        deserializer.end()?;
        match read {
            Some(view) => Ok(view),
            // A single content block: the whole object is the content, read as data.
            None => Ok(ResultView {
                content: Some(ContentView::Data(serde_json::from_slice(bytes)?)),
                structured: None,
                is_error: false,
            }),
        }
    }
}

/// Input as a lenient reader takes it: every lone UTF-16 surrogate escape rewritten to U+FFFD
/// (see [`replace_lone_surrogates`](crate::replace_lone_surrogates)), with how many there were.
/// The bytes are copied only when they hold a surrogate escape.
pub fn mend_lone_surrogates(bytes: &[u8]) -> (Cow<'_, [u8]>, usize) {
    let surrogate = memchr::memmem::find_iter(bytes, b"\\u").any(|at| {
        matches!(bytes.get(at + 2), Some(b'd' | b'D'))
            && matches!(
                bytes.get(at + 3),
                Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
            )
    });
    if !surrogate {
        return (Cow::Borrowed(bytes), 0);
    }
    match crate::replace_lone_surrogates(bytes) {
        (_, 0) => (Cow::Borrowed(bytes), 0),
        (mended, replaced) => (Cow::Owned(mended), replaced),
    }
}

/// Reads a result as [`ResultView::parse`] does, leniently: when the bytes as sent do not read
/// and hold lone surrogate escapes, they are mended into `mended` (see
/// [`mend_lone_surrogates`]) and read from there. Returns the view and how many escapes were
/// mended: the same count [`mend_lone_surrogates`] gives, without a pass over bytes that read
/// as they are. That holds because the view reads every string it meets, kept or skipped, as a
/// string, and a lone surrogate escape fails any string.
pub fn parse_view_mending<'b>(
    bytes: &'b [u8],
    mended: &'b mut Vec<u8>,
) -> Result<(ResultView<'b>, usize), serde_json::Error> {
    let error = match ResultView::parse(bytes) {
        Ok(view) => return Ok((view, 0)),
        Err(error) => error,
    };
    let (fixed, replaced) = crate::replace_lone_surrogates(bytes);
    if replaced == 0 {
        return Err(error);
    }
    *mended = fixed;
    let mended: &'b Vec<u8> = mended;
    ResultView::parse(mended).map(|view| (view, replaced))
}

/// `Some` for a result, `None` for an object that is itself a content block.
struct ResultVisitor;

impl<'de> Visitor<'de> for ResultVisitor {
    type Value = Option<ResultView<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tool result")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut view = ResultView {
            content: None,
            structured: None,
            is_error: false,
        };
        let mut block = false;
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match key.name() {
                "content" => view.content = Some(map.next_value::<ContentView<'de>>()?),
                "structuredContent" => view.structured = Some(map.next_value::<Value>()?),
                "isError" => view.is_error = map.next_value::<Value>()? == Value::Bool(true),
                "type" => {
                    let kind = map.next_value::<Slot<'de>>()?;
                    block = kind.as_str().is_some_and(|t| BLOCK_TYPES.contains(&t));
                }
                _ => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok((!block).then_some(view))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        let blocks = BlocksVisitor.visit_seq(seq)?;
        Ok(Some(ResultView {
            content: Some(ContentView::Blocks(blocks)),
            structured: None,
            is_error: false,
        }))
    }

    scalars_as!(data_result);
}

/// A scalar document or `content`: data.
fn data_result<'de>(value: Value) -> Option<ResultView<'de>> {
    Some(ResultView {
        content: Some(ContentView::Data(value)),
        structured: None,
        is_error: false,
    })
}

/// A key: borrowed when it held no escape.
struct Key<'de>(Cow<'de, str>);

impl Key<'_> {
    fn name(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Reads any value as a `Value` through serde_json's own visitor, from a map or a sequence
/// already opened.
fn map_value<'de, A: MapAccess<'de>>(map: A) -> Result<Value, A::Error> {
    Value::deserialize(MapAccessDeserializer::new(map))
}

fn seq_value<'de, A: SeqAccess<'de>>(seq: A) -> Result<Value, A::Error> {
    Value::deserialize(SeqAccessDeserializer::new(seq))
}

impl<'de> Deserialize<'de> for Slot<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SlotVisitor)
    }
}

struct SlotVisitor;

impl<'de> Visitor<'de> for SlotVisitor {
    type Value = Slot<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Slot<'de>, E> {
        Ok(Slot::Str(Cow::Borrowed(v)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Slot<'de>, A::Error> {
        map_value(map).map(|value| Slot::Json(Box::new(value)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Slot<'de>, A::Error> {
        seq_value(seq).map(|value| Slot::Json(Box::new(value)))
    }

    scalars_as!(slot_of);
}

/// A scalar as a slot: a string stays a string.
fn slot_of<'de>(value: Value) -> Slot<'de> {
    match value {
        Value::String(s) => Slot::Str(Cow::Owned(s)),
        other => Slot::Json(Box::new(other)),
    }
}

impl<'de> Deserialize<'de> for ResourceSlot<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ResourceVisitor;
        impl<'de> Visitor<'de> for ResourceVisitor {
            type Value = ResourceSlot<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(ResourceSlot::Other(Slot::Str(Cow::Borrowed(v))))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                ObjectVisitor
                    .visit_map(map)
                    .map(|view| ResourceSlot::Object(Box::new(view)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                seq_value(seq).map(|value| ResourceSlot::Other(Slot::Json(Box::new(value))))
            }
            scalars_as!(|value| ResourceSlot::Other(slot_of(value)));
        }
        deserializer.deserialize_any(ResourceVisitor)
    }
}

/// Reads an object's fields; the last of a repeated key wins, as in a `Value`.
struct ObjectVisitor;

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = ObjectView<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ObjectView<'de>, A::Error> {
        let mut view = ObjectView::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let slot = match key.as_ref() {
                "type" => &mut view.kind,
                "text" => &mut view.text,
                "data" => &mut view.data,
                "uri" => &mut view.uri,
                "mimeType" => &mut view.mime_type,
                "name" => &mut view.name,
                "resource" => {
                    view.resource = Some(map.next_value::<ResourceSlot<'de>>()?);
                    continue;
                }
                "blob" | "disposition" | "expiresAt" | "size" | "sizeBytes" | "digest" => {
                    let more = view.more.get_or_insert_with(Box::default);
                    match key.as_ref() {
                        "blob" => &mut more.blob,
                        "disposition" => &mut more.disposition,
                        "expiresAt" => &mut more.expires_at,
                        "size" => &mut more.size,
                        "sizeBytes" => &mut more.size_bytes,
                        _ => &mut more.digest,
                    }
                }
                _ => {
                    // The other fields' box is made only for a value kept: most blocks' other
                    // fields (annotations' scalars, say) are skipped.
                    let nested = map.next_value::<Nested>()?.0;
                    // A repeated key keeps only its last value, as a `Value` does.
                    if let Some(more) = &mut view.more {
                        more.nested.retain(|(name, _)| *name != key);
                    }
                    if let Some(value) = nested {
                        let more = view.more.get_or_insert_with(Box::default);
                        more.nested.push((key, value));
                    }
                    continue;
                }
            };
            *slot = Some(map.next_value::<Slot<'de>>()?);
        }
        Ok(view)
    }
}

/// A value read and dropped. Unlike serde's `IgnoredAny` it reads every string as a string, so
/// bytes that are not UTF-8 fail here as they fail a `Value` (serde_json skips ignored strings
/// without checking them).
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SkipVisitor;
        impl<'de> Visitor<'de> for SkipVisitor {
            type Value = Skip;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<Skip, E> {
                Ok(Skip)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
                while map.next_entry::<Skip, Skip>()?.is_some() {}
                Ok(Skip)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
                while seq.next_element::<Skip>()?.is_some() {}
                Ok(Skip)
            }
            scalars_as!(|_| Skip);
        }
        deserializer.deserialize_any(SkipVisitor)
    }
}

/// Another field's value: kept when it is an object or an array, skipped otherwise.
struct Nested(Option<Value>);

impl<'de> Deserialize<'de> for Nested {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NestedVisitor;
        impl<'de> Visitor<'de> for NestedVisitor {
            type Value = Nested;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Nested, A::Error> {
                map_value(map).map(|value| Nested(Some(value)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Nested, A::Error> {
                seq_value(seq).map(|value| Nested(Some(value)))
            }
            fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<Nested, E> {
                Ok(Nested(None))
            }
            scalars_as!(|_| Nested(None));
        }
        deserializer.deserialize_any(NestedVisitor)
    }
}

impl<'de> Deserialize<'de> for BlockView<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BlockVisitor;
        impl<'de> Visitor<'de> for BlockVisitor {
            type Value = BlockView<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                ObjectVisitor.visit_map(map).map(BlockView::of_object)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                seq_value(seq).map(|value| BlockView::Other(Box::new(value)))
            }
            scalars_as!(|value| BlockView::Other(Box::new(value)));
        }
        deserializer.deserialize_any(BlockVisitor)
    }
}

/// A content array's elements.
struct BlocksVisitor;

impl<'de> Visitor<'de> for BlocksVisitor {
    type Value = Vec<BlockView<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(block) = seq.next_element::<BlockView<'de>>()? {
            blocks.push(block);
        }
        // The array grew by doubling; what it holds is kept while the result is projected.
        blocks.shrink_to_fit();
        Ok(blocks)
    }
}

impl<'de> Deserialize<'de> for ContentView<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = ContentView<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                BlocksVisitor.visit_seq(seq).map(ContentView::Blocks)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                map_value(map).map(ContentView::Data)
            }
            scalars_as!(ContentView::Data);
        }
        deserializer.deserialize_any(ContentVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_without_escapes_are_borrowed_from_the_input() {
        let bytes =
            br#"{"content":[{"type":"text","t\u0065xt":"a\nb"},{"type":"image","data":"AAAA"}]}"#;
        let view = ResultView::parse(bytes).unwrap();
        let Some(ContentView::Blocks(blocks)) = &view.content else {
            panic!("a content array")
        };
        let [BlockView::Text(text), BlockView::Object(image)] = &blocks[..] else {
            panic!("a text and an object")
        };
        // An escaped key is still the key; an escaped string is copied, decoded.
        assert_eq!(text, &Cow::<str>::Owned("a\nb".to_owned()));
        assert!(matches!(image.data, Some(Slot::Str(Cow::Borrowed("AAAA")))));
        assert_eq!(blocks[0].classify(), Block::Text("a\nb"));
        let view = ResultView::parse(br#"[{"type":"text","text":"ab"}]"#).unwrap();
        assert!(matches!(
            view.content,
            Some(ContentView::Blocks(blocks)) if blocks == [BlockView::Text(Cow::Borrowed("ab"))]
        ));
    }

    #[test]
    fn a_block_costs_three_machine_words_besides_its_borrowed_strings() {
        // A plain text block is its borrowed text; every other kind is one box.
        assert!(std::mem::size_of::<Slot<'_>>() <= 24);
        assert!(std::mem::size_of::<BlockView<'_>>() <= 24);
    }

    #[rstest::rstest]
    #[case::plain(r#"{"type":"text","text":"t"}"#, true)]
    #[case::skipped_scalars(r#"{"type":"text","annotations":7,"text":"t","x":"y"}"#, true)]
    #[case::escaped(r#"{"type":"text","text":"\u0074"}"#, true)]
    #[case::a_uri(r#"{"type":"text","text":"t","uri":"u"}"#, false)]
    #[case::a_name(r#"{"type":"text","text":"t","name":"n"}"#, false)]
    #[case::nested(r#"{"type":"text","text":"t","_meta":{"a":1}}"#, false)]
    #[case::a_disposition(r#"{"type":"text","text":"t","disposition":"never"}"#, false)]
    #[case::text_not_a_string(r#"{"type":"text","text":1}"#, false)]
    #[case::another_type(r#"{"type":"image","text":"t"}"#, false)]
    fn only_a_text_block_with_nothing_else_kept_is_a_plain_text(
        #[case] block: &str,
        #[case] plain: bool,
    ) {
        let bytes = format!("[{block}]");
        let view = ResultView::parse(bytes.as_bytes()).unwrap();
        let Some(ContentView::Blocks(blocks)) = &view.content else {
            panic!("a content array")
        };
        assert_eq!(matches!(blocks[..], [BlockView::Text(_)]), plain, "{block}");
        let value: Value = serde_json::from_str(block).unwrap();
        assert_eq!(blocks[0].classify(), crate::classify(&value));
    }

    #[test]
    fn another_fields_box_is_made_only_for_a_value_kept() {
        let bytes = br#"[{"type":"image","data":"AAAA","annotations":{"a":1},"annotations":2},
            {"type":"image","data":"AAAA","_meta":3}]"#;
        let view = ResultView::parse(bytes).unwrap();
        let Some(ContentView::Blocks(blocks)) = &view.content else {
            panic!("a content array")
        };
        let [BlockView::Object(repeated), BlockView::Object(scalar)] = &blocks[..] else {
            panic!("two objects")
        };
        // The repeated key's last value, a scalar, is not kept.
        assert!(repeated.more_fields().nested.is_empty());
        assert!(scalar.more.is_none());
        // An embedded resource's `resource` is inline.
        let bytes = br#"[{"type":"resource","resource":{"uri":"u","text":"t"}}]"#;
        let view = ResultView::parse(bytes).unwrap();
        let Some(ContentView::Blocks(blocks)) = &view.content else {
            panic!("a content array")
        };
        let [BlockView::Object(embedded)] = &blocks[..] else {
            panic!("an object")
        };
        assert!(embedded.more.is_none());
        assert!(
            embedded
                .resource_object()
                .is_some_and(|inner| inner.more.is_none())
        );
    }

    #[test]
    fn lone_surrogates_are_mended_only_where_there_are_some() {
        let plain = br#"["\u00e9\ud83d\ude00"]"#;
        assert!(matches!(mend_lone_surrogates(plain), (Cow::Borrowed(_), 0)));
        let (mended, replaced) = mend_lone_surrogates(br#"["a\ud800b"]"#);
        assert_eq!((&mended[..], replaced), (&br#"["a\ufffdb"]"#[..], 1));
    }

    #[rstest::rstest]
    #[case::none(r#"{"content":[{"type":"text","text":"\u00e9\ud83d\ude00"}]}"#)]
    #[case::in_a_text(r#"{"content":[{"type":"text","text":"a\ud800"}]}"#)]
    #[case::in_a_field_skipped_at_the_top(r#"{"content":[],"x":"\udc00","y":["\ud800"]}"#)]
    #[case::in_a_field_a_block_skips(r#"{"content":[{"type":"text","text":"t","z":"\ud800"}]}"#)]
    #[case::in_meta(r#"{"content":[{"type":"text","text":"t","_meta":{"k":["\udfff"]}}]}"#)]
    #[case::in_a_key(r#"{"content":[{"type":"text","text":"t","\ud800":1}]}"#)]
    #[case::in_structured(r#"{"content":[],"structuredContent":{"a":"\ud800\ud800"}}"#)]
    #[case::in_data(r#"{"content":{"a":"\ud800"}}"#)]
    #[case::in_an_element_that_is_no_object(r#"{"content":["\ud800",1]}"#)]
    #[case::in_a_resource(
        r#"{"content":[{"type":"resource","resource":{"uri":"u","q":"\ud800"}}]}"#
    )]
    #[case::not_json_either(r#"{"content":["\ud800",}"#)]
    fn mending_only_when_the_bytes_do_not_read_counts_what_mending_first_counts(
        #[case] input: &str,
    ) {
        let (mended_first, expected) = mend_lone_surrogates(input.as_bytes());
        let first = ResultView::parse(&mended_first);
        let mut buffer = Vec::new();
        let read = parse_view_mending(input.as_bytes(), &mut buffer);
        match (first, read) {
            (Ok(first), Ok((view, replaced))) => {
                assert_eq!(replaced, expected);
                assert_eq!(format!("{view:?}"), format!("{first:?}"));
            }
            (Err(_), Err(_)) => {}
            (first, read) => panic!("{first:?} against {read:?}"),
        }
    }
}
