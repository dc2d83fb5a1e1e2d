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
//! tiny blocks holds less in its views than in its bytes. That box holds just the fields the
//! object has: their presence bits, then their values (decision 0096).
//!
//! Reading a result this way and classifying its blocks gives exactly what [`classify`] gives on
//! the same result parsed into a `Value` (a test checks it on every case and on arbitrary JSON).
//!
//! [`classify`]: crate::classify

use std::borrow::Cow;
use std::fmt;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
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

/// The fields an [`ObjectView`] keeps by name, in the order it holds their values; after them,
/// at [`NESTED`], the other fields that hold an object or an array.
pub(crate) const FIELDS: [&str; 13] = [
    "type",
    "text",
    "data",
    "blob",
    "uri",
    "disposition",
    "mimeType",
    "name",
    "expiresAt",
    "size",
    "sizeBytes",
    "digest",
    "resource",
];
// Each field's place: its index in `FIELDS` and its bit in an object's presence bits.
pub(crate) const KIND: usize = 0;
pub(crate) const TEXT: usize = 1;
pub(crate) const DATA: usize = 2;
pub(crate) const BLOB: usize = 3;
pub(crate) const URI: usize = 4;
pub(crate) const DISPOSITION: usize = 5;
pub(crate) const MIME_TYPE: usize = 6;
pub(crate) const NAME: usize = 7;
pub(crate) const EXPIRES_AT: usize = 8;
pub(crate) const SIZE: usize = 9;
pub(crate) const SIZE_BYTES: usize = 10;
pub(crate) const DIGEST: usize = 11;
pub(crate) const RESOURCE: usize = 12;
pub(crate) const NESTED: usize = 13;
/// Not a field but a flag, a presence bit with no value: the object's `annotations` name the
/// user alone as its audience ([`for_the_user_alone`]; decision 0155).
pub(crate) const USER_ALONE: usize = 14;

/// A known field's place by its name: its index in [`FIELDS`].
pub(crate) fn field_at(name: &str) -> Option<usize> {
    Some(match name {
        "type" => KIND,
        "text" => TEXT,
        "data" => DATA,
        "blob" => BLOB,
        "uri" => URI,
        "disposition" => DISPOSITION,
        "mimeType" => MIME_TYPE,
        "name" => NAME,
        "expiresAt" => EXPIRES_AT,
        "size" => SIZE,
        "sizeBytes" => SIZE_BYTES,
        "digest" => DIGEST,
        "resource" => RESOURCE,
        _ => return None,
    })
}

/// One value an [`ObjectView`] holds: a known field's, or the other fields' objects and arrays.
/// Three machine words, as a [`Slot`] is.
#[derive(Debug, Clone, PartialEq)]
enum Entry<'de> {
    /// A known field's value (`resource` too, when it is no object).
    Slot(Slot<'de>),
    /// `resource` holding an object, read as a block is.
    Object(ObjectView<'de>),
    /// Every other field whose value is an object or an array, by name, in order.
    Nested(Box<[(Cow<'de, str>, Value)]>),
}

/// An object's values, in one allocation: which fields are present (bit `i` for the field at
/// `i`), then their values in the fields' order. A `type` that is one of MCP's five block types
/// is not among them: `kind` says which it is (its place in [`BLOCK_TYPES`], from 1), so a small
/// block's allocation is three machine words smaller. `kind` is 0 for any other `type`, which is
/// held as any field is.
#[derive(Debug, PartialEq)]
struct Held<E: ?Sized> {
    present: u16,
    kind: u8,
    entries: E,
}

/// The `type` of an object whose [`Held::kind`] is not 0: `KINDS[kind - 1]`, as
/// [`known_kind`] gives it.
static KINDS: [Entry<'static>; 5] = {
    const fn kind(at: usize) -> Entry<'static> {
        Entry::Slot(Slot::Str(Cow::Borrowed(BLOCK_TYPES[at])))
    }
    [kind(0), kind(1), kind(2), kind(3), kind(4)]
};

/// The `type` a [`Held::kind`] says, or `None` for 0 (a `type` held as any field is).
fn known_kind(kind: u8) -> Option<&'static Entry<'static>> {
    usize::from(kind)
        .checked_sub(1)
        .and_then(|at| KINDS.get(at))
}

/// The presence bits of the values in an allocation: all of `present` but a `type` that `kind`
/// says.
fn stored_bits(present: u16, kind: u8) -> u16 {
    present & !(u16::from(kind != 0) << KIND) & !(1 << USER_ALONE)
}

/// [`Held::kind`] for a `type` read as `value`: its place in [`BLOCK_TYPES`] from 1, or 0.
fn kind_of(value: Option<&Entry<'_>>) -> u8 {
    let Some(Entry::Slot(Slot::Str(kind))) = value else {
        return 0;
    };
    BLOCK_TYPES
        .iter()
        .position(|known| known == kind)
        .map_or(0, |at| at as u8 + 1)
}

/// An object read from bytes: the fields classification reads, and the values of the others
/// that are objects or arrays (a uri may sit in them); scalars in other fields are skipped. It
/// holds just the fields present, in one allocation: a word of presence bits, then three machine
/// words a field, so a resource link of four fields costs four slots and a word, not a slot for
/// every field a block might have (decision 0096).
#[derive(PartialEq)]
pub struct ObjectView<'de>(Box<Held<[Entry<'de>]>>);

/// An embedded resource's `resource` field, as an [`ObjectView`] gives it: an object read as a
/// block is, or any other value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ResourceField<'a, 'de> {
    /// An object.
    Object(&'a ObjectView<'de>),
    /// Anything else.
    Other(&'a Slot<'de>),
}

impl<'de> ObjectView<'de> {
    /// What the object is, as [`classify`](crate::classify) says of the same object as a `Value`.
    pub fn classify(&self) -> Block<'_> {
        classify_fields(&Fields::of_view(self))
    }

    /// The value held for the field at `at`, when the object has that field.
    fn entry(&self, at: usize) -> Option<&Entry<'de>> {
        if at == KIND
            && let Some(kind) = known_kind(self.0.kind)
        {
            return Some(kind);
        }
        let bit = 1u16 << at;
        let stored = self.stored();
        if stored & bit == 0 {
            return None;
        }
        self.0
            .entries
            .get((stored & (bit - 1)).count_ones() as usize)
    }

    /// The bits of the fields whose values are in the allocation: all but a `type` that
    /// [`Held::kind`] says.
    fn stored(&self) -> u16 {
        stored_bits(self.0.present, self.0.kind)
    }

    /// A known field's value, when it has one.
    fn slot(&self, at: usize) -> Option<&Slot<'de>> {
        match self.entry(at)? {
            Entry::Slot(slot) => Some(slot),
            Entry::Object(_) | Entry::Nested(_) => None,
        }
    }

    /// `type`.
    pub fn kind(&self) -> Option<&Slot<'de>> {
        self.slot(KIND)
    }

    /// `text`.
    pub fn text(&self) -> Option<&Slot<'de>> {
        self.slot(TEXT)
    }

    /// `data`.
    pub fn data(&self) -> Option<&Slot<'de>> {
        self.slot(DATA)
    }

    /// `blob`.
    pub fn blob(&self) -> Option<&Slot<'de>> {
        self.slot(BLOB)
    }

    /// `uri`.
    pub fn uri(&self) -> Option<&Slot<'de>> {
        self.slot(URI)
    }

    /// `disposition`.
    pub fn disposition(&self) -> Option<&Slot<'de>> {
        self.slot(DISPOSITION)
    }

    /// `mimeType`.
    pub fn mime_type(&self) -> Option<&Slot<'de>> {
        self.slot(MIME_TYPE)
    }

    /// `name`.
    pub fn name(&self) -> Option<&Slot<'de>> {
        self.slot(NAME)
    }

    /// `expiresAt`.
    pub fn expires_at(&self) -> Option<&Slot<'de>> {
        self.slot(EXPIRES_AT)
    }

    /// `size`.
    pub fn size(&self) -> Option<&Slot<'de>> {
        self.slot(SIZE)
    }

    /// `sizeBytes`.
    pub fn size_bytes(&self) -> Option<&Slot<'de>> {
        self.slot(SIZE_BYTES)
    }

    /// `digest`.
    pub fn digest(&self) -> Option<&Slot<'de>> {
        self.slot(DIGEST)
    }

    /// `resource`.
    pub fn resource(&self) -> Option<ResourceField<'_, 'de>> {
        match self.entry(RESOURCE)? {
            Entry::Slot(slot) => Some(ResourceField::Other(slot)),
            Entry::Object(object) => Some(ResourceField::Object(object)),
            Entry::Nested(_) => None,
        }
    }

    /// The nested object of an embedded resource's `resource` field, when it is one.
    pub fn resource_object(&self) -> Option<&ObjectView<'de>> {
        match self.resource()? {
            ResourceField::Object(object) => Some(object),
            ResourceField::Other(_) => None,
        }
    }

    /// Every other field whose value is an object or an array that holds the string `type` (a
    /// key or a value, at any depth), where a content block may sit, by name, in order. Any
    /// other is dropped as it is read (decisions 0152 and 0155).
    pub fn nested(&self) -> &[(Cow<'de, str>, Value)] {
        match self.entry(NESTED) {
            Some(Entry::Nested(nested)) => nested,
            Some(Entry::Slot(_) | Entry::Object(_)) | None => &[],
        }
    }

    /// Whether the object's `annotations` (the last, where the key repeats, as in a `Value`)
    /// name the user alone as its audience: an `audience` of one role or more, each `"user"`.
    /// A block for the user alone is shown to the user, not the model; the view keeps this
    /// answer, not the annotations (decision 0155).
    pub fn for_the_user_alone(&self) -> bool {
        self.0.present & (1 << USER_ALONE) != 0
    }

    /// The known fields' values that are JSON other than strings (a uri may sit in them), and
    /// every other field's object or array a reader may use ([`ObjectView::nested`]), in the
    /// fields' order.
    pub fn json_values(&self) -> impl Iterator<Item = &Value> {
        self.0.entries.iter().flat_map(|entry| {
            let (one, many): (Option<&Value>, &[(Cow<'de, str>, Value)]) = match entry {
                Entry::Slot(Slot::Json(value)) => (Some(&**value), &[]),
                Entry::Slot(Slot::Str(_)) | Entry::Object(_) => (None, &[]),
                Entry::Nested(nested) => (None, nested),
            };
            one.into_iter().chain(many.iter().map(|(_, value)| value))
        })
    }

    /// The object holding the values read: `present` marks the fields that have one in
    /// `values`. They are taken out, straight into one allocation of their number.
    fn hold(present: u16, values: &mut Values<'de>) -> ObjectView<'de> {
        /// `N` values and the presence bits in one box, unsized to a slice.
        fn sized<'de, const N: usize>(
            present: u16,
            kind: u8,
            values: &mut Values<'de>,
        ) -> Box<Held<[Entry<'de>]>> {
            let mut bits = stored_bits(present, kind);
            // Each of `present`'s bits marks a value, so the empty string is never used: it
            // only spares a panic.
            let entries: [Entry<'de>; N] = std::array::from_fn(|_| {
                let at = bits.trailing_zeros() as usize;
                bits &= bits.wrapping_sub(1);
                values
                    .get_mut(at)
                    .and_then(Option::take)
                    .unwrap_or(Entry::Slot(Slot::Str(Cow::Borrowed(""))))
            });
            Box::new(Held {
                present,
                kind,
                entries,
            })
        }
        let kind = match present & 1 << KIND {
            0 => 0,
            _ => kind_of(values[KIND].as_ref()),
        };
        // Fourteen bits at most (`NESTED` is the last).
        ObjectView(match stored_bits(present, kind).count_ones() {
            0 => sized::<0>(present, kind, values),
            1 => sized::<1>(present, kind, values),
            2 => sized::<2>(present, kind, values),
            3 => sized::<3>(present, kind, values),
            4 => sized::<4>(present, kind, values),
            5 => sized::<5>(present, kind, values),
            6 => sized::<6>(present, kind, values),
            7 => sized::<7>(present, kind, values),
            8 => sized::<8>(present, kind, values),
            9 => sized::<9>(present, kind, values),
            10 => sized::<10>(present, kind, values),
            11 => sized::<11>(present, kind, values),
            12 => sized::<12>(present, kind, values),
            13 => sized::<13>(present, kind, values),
            _ => sized::<14>(present, kind, values),
        })
    }

    /// Each value held, with the place of its field: a `type` [`Held::kind`] says first (it is
    /// the first field), then those in the allocation.
    fn held(&self) -> impl Iterator<Item = (usize, &Entry<'de>)> {
        let kind = known_kind(self.0.kind).map(|entry| (KIND, entry));
        let mut bits = self.stored();
        kind.into_iter()
            .chain(self.0.entries.iter().map(move |entry| {
                let at = bits.trailing_zeros() as usize;
                bits &= bits.wrapping_sub(1);
                (at, entry)
            }))
    }

    /// The known fields' values, each with its field's place ([`Fields::of_view`] reads them
    /// in one pass).
    pub(crate) fn known(&self) -> impl Iterator<Item = (usize, Known<'_, 'de>)> {
        self.held().filter_map(|(at, entry)| match entry {
            Entry::Slot(slot) => Some((at, Known::Slot(slot))),
            Entry::Object(object) => Some((at, Known::Object(object))),
            Entry::Nested(_) => None,
        })
    }
}

/// A known field's value as [`ObjectView::known`] gives it.
pub(crate) enum Known<'a, 'de> {
    /// A value read as a slot.
    Slot(&'a Slot<'de>),
    /// `resource` holding an object.
    Object(&'a ObjectView<'de>),
}

/// The values of an object being read, at their fields' places.
type Values<'de> = [Option<Entry<'de>>; NESTED + 1];

impl Clone for ObjectView<'_> {
    fn clone(&self) -> Self {
        let mut values: Values<'_> = [const { None }; NESTED + 1];
        for (at, entry) in self.held() {
            if let Some(value) = values.get_mut(at) {
                *value = Some(entry.clone());
            }
        }
        ObjectView::hold(self.0.present, &mut values)
    }
}

impl fmt::Debug for ObjectView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (at, name) in FIELDS.iter().enumerate() {
            match self.entry(at) {
                Some(Entry::Slot(slot)) => map.entry(name, slot),
                Some(Entry::Object(object)) => map.entry(name, object),
                Some(Entry::Nested(_)) | None => &mut map,
            };
        }
        for (name, value) in self.nested() {
            map.entry(name, value);
        }
        map.finish()
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
    Object(ObjectView<'de>),
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

    /// An object as read (`present` marks the fields that have a value in `values`): a plain
    /// text block becomes [`BlockView::Text`], any other object is held.
    fn of_object(present: u16, values: &mut Values<'de>) -> BlockView<'de> {
        if present == 1 << KIND | 1 << TEXT
            && matches!(&values[KIND], Some(Entry::Slot(Slot::Str(kind))) if kind == "text")
        {
            match values[TEXT].take() {
                Some(Entry::Slot(Slot::Str(text))) => return BlockView::Text(text),
                text => values[TEXT] = text,
            }
        }
        BlockView::Object(ObjectView::hold(present, values))
    }

    /// Whether [`BlockView::classify`] may say an inline image or inline audio: `false` for a
    /// plain text block and for an object with no `data` field, which no inline block lacks.
    /// A caller looking for inline media skips the others without classifying them.
    pub fn may_be_inline_media(&self) -> bool {
        match self {
            BlockView::Text(_) => false,
            BlockView::Object(object) => object.0.present & (1 << DATA) != 0,
            BlockView::Other(_) => true,
        }
    }

    /// The values a lane's uri walk reads in the element's fields, as
    /// [`ObjectView::json_values`] gives them; none for a plain text block or an element that
    /// is no object.
    pub fn json_values(&self) -> impl Iterator<Item = &Value> {
        let object = match self {
            BlockView::Object(object) => Some(object),
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
    /// Anything else, which a lane shows as data: read from bytes, or borrowed from the
    /// `Value` the result was read from ([`ResultView::of_value`]).
    Data(Cow<'de, Value>),
}

/// JSON a lane shows as data: its raw text as read from bytes, or a `Value`.
///
/// Structured content stays raw: a `Value` holds several times the bytes of its JSON, so a
/// large one would break the memory bound (decision 0142). A lane walks the raw text one member
/// at a time ([`raw_members`]).
#[derive(Debug, Clone)]
pub enum DataView<'de> {
    /// Raw JSON, checked as a `Value` parse checks it ([`DataView::checked`]).
    Raw(Cow<'de, RawValue>),
    /// Parsed, or borrowed from the `Value` the result was read from.
    Value(Cow<'de, Value>),
}

impl<'de> DataView<'de> {
    /// Raw JSON that a `Value` parse of the same text accepts: its numbers in range, its
    /// strings' escapes well formed and their surrogates paired. The nesting limit is checked
    /// over the whole input by [`ResultView::parse`], from the mark left here.
    pub fn checked(raw: &'de RawValue) -> Result<DataView<'de>, serde_json::Error> {
        let mut deserializer = serde_json::Deserializer::from_str(raw.get());
        de::DeserializeSeed::deserialize(Check, &mut deserializer)?;
        mark_a_container(raw.get());
        Ok(DataView::Raw(Cow::Borrowed(raw)))
    }

    /// The data as a `Value`: borrowed, or parsed from the raw text.
    pub fn to_value(&self) -> Cow<'_, Value> {
        match self {
            // Checked when read, so the parse cannot fail; `Null` would only stand for a bug.
            DataView::Raw(raw) => Cow::Owned(serde_json::from_str(raw.get()).unwrap_or_default()),
            DataView::Value(value) => Cow::Borrowed(value),
        }
    }

    /// The same data, borrowed from this one.
    pub fn borrowed(&self) -> DataView<'_> {
        match self {
            DataView::Raw(raw) => DataView::Raw(Cow::Borrowed(raw)),
            DataView::Value(value) => DataView::Value(Cow::Borrowed(value)),
        }
    }

    /// The same data, holding its text.
    pub fn into_owned(self) -> DataView<'static> {
        match self {
            DataView::Raw(raw) => DataView::Raw(Cow::Owned(raw.into_owned())),
            DataView::Value(value) => DataView::Value(owned_value(value)),
        }
    }
}

impl PartialEq for DataView<'_> {
    /// The same JSON value, however it is held.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (DataView::Raw(a), DataView::Raw(b)) => a.get() == b.get(),
            _ => self.to_value() == other.to_value(),
        }
    }
}

/// Calls `each` on every member of a raw object, with its key, or every element of a raw array,
/// without one, in the order of the text, as each is read: nothing of the container is held
/// beside its text. A key borrows the text unless it holds an escape. Nothing is called for a
/// value that is neither.
pub fn raw_members<'a>(
    raw: &'a RawValue,
    each: &mut dyn FnMut(Option<Cow<'a, str>>, &'a RawValue),
) -> Result<(), serde_json::Error> {
    if !raw.get().starts_with(['[', '{']) {
        return Ok(());
    }
    let mut deserializer = serde_json::Deserializer::from_str(raw.get());
    deserializer.deserialize_any(MembersVisitor { each })
}

/// A raw JSON string's text: borrowed unless it holds an escape. `None` for any other value.
pub fn raw_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    if !raw.get().starts_with('"') {
        return None;
    }
    let mut deserializer = serde_json::Deserializer::from_str(raw.get());
    deserializer.deserialize_str(CowStr).ok()
}

struct MembersVisitor<'e, 'a> {
    each: &'e mut dyn FnMut(Option<Cow<'a, str>>, &'a RawValue),
}

impl<'a> Visitor<'a> for MembersVisitor<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object or an array")
    }

    fn visit_map<A: MapAccess<'a>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key_seed(CowStr)? {
            let value = map.next_value::<&'a RawValue>()?;
            (self.each)(Some(key), value);
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'a>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(value) = seq.next_element::<&'a RawValue>()? {
            (self.each)(None, value);
        }
        Ok(())
    }
}

/// Reads any JSON as a `Value` parse reads it, holding nothing: `IgnoredAny` would skip strings
/// unread, lone surrogates and all.
#[derive(Clone, Copy)]
struct Check;

impl<'a> de::DeserializeSeed<'a> for Check {
    type Value = ();

    fn deserialize<D: Deserializer<'a>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'a> Visitor<'a> for Check {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'a>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'a>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(self)?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
}

/// A string that borrows the input where it can.
struct CowStr;

impl<'a> de::DeserializeSeed<'a> for CowStr {
    type Value = Cow<'a, str>;

    fn deserialize<D: Deserializer<'a>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'a> Visitor<'a> for CowStr {
    type Value = Cow<'a, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'a str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(text))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(text.to_owned()))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(text))
    }
}

/// A `CallToolResult` read from bytes in one pass: what a lane needs of it, as it would read the
/// same result parsed into a `Value`. A bare array is the content; a single content block, or any
/// other value that is not an object, is content that is not an array.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResultView<'de> {
    /// `content`, when present.
    pub content: Option<ContentView<'de>>,
    /// `structuredContent`, when the key is present (`null` included): its raw JSON when read
    /// from bytes, or borrowed from the `Value` the result was read from.
    pub structured: Option<DataView<'de>>,
    /// `isError: true`.
    pub is_error: bool,
    /// The bytes the view was read from, when it was read from bytes (empty otherwise): what
    /// its strings borrow, and what a set of its uris may borrow too.
    pub source: SourceBytes<'de>,
}

/// The bytes a view was read from (empty when it was read from a `Value`). Where a view was
/// read from is not what it reads: any two are equal, so two views are equal when what they
/// read is, and a debug form gives only their length, not megabytes of JSON.
#[derive(Clone, Copy, Default)]
pub struct SourceBytes<'de>(pub &'de [u8]);

impl PartialEq for SourceBytes<'_> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl fmt::Debug for SourceBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SourceBytes({} bytes)", self.0.len())
    }
}

impl<'de> ResultView<'de> {
    /// Reads a result. Fails where `serde_json::from_slice::<Value>` fails on the same bytes.
    pub fn parse(bytes: &'de [u8]) -> Result<ResultView<'de>, serde_json::Error> {
        // serde_json reads an object whose first key is its raw value token as a raw value, and
        // fails where it is none; only a `Value`'s parse says where.
        static RAW_VALUE_TOKEN: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| {
                memchr::memmem::Finder::new(b"$serde_json::private::RawValue")
            });
        if RAW_VALUE_TOKEN.find(bytes).is_some() {
            serde_json::from_slice::<Value>(bytes)?;
        }
        if bytes.len() >= SPLIT_BYTES
            && two_cores()
            && let Some(view) = split_read(bytes, bytes.len() / 2)
        {
            return Ok(view);
        }
        RAW_CONTAINER_READ.with(|read| read.set(false));
        let mut deserializer = serde_json::Deserializer::from_slice(bytes);
        let read = deserializer.deserialize_any(ResultVisitor)?;
        deserializer.end()?;
        // A container read from a slot's raw JSON was parsed as if at the top, so the limit a
        // `Value` parse meets at its depth is checked here, over the whole input.
        if RAW_CONTAINER_READ.with(|read| read.replace(false)) && nests_too_deep(bytes) {
            return Err(de::Error::custom("recursion limit exceeded"));
        }
        match read {
            Some(view) => Ok(ResultView {
                source: SourceBytes(bytes),
                ..view
            }),
            // A single content block: the whole object is the content, read as data.
            None => Ok(ResultView {
                content: Some(ContentView::Data(Cow::Owned(serde_json::from_slice(
                    bytes,
                )?))),
                structured: None,
                is_error: false,
                source: SourceBytes::default(),
            }),
        }
    }
}

impl<'de> ResultView<'de> {
    /// Reads a result already parsed into a `Value`, as [`ResultView::parse`] reads its bytes:
    /// the same view, its strings and data borrowed from the `Value` (decision 0128). Only the
    /// values a block keeps as JSON other than a string (an annotation's object, say, or an
    /// element that is no object) are copied.
    pub fn of_value(value: &'de Value) -> ResultView<'de> {
        let data = |value| ResultView {
            content: Some(ContentView::Data(Cow::Borrowed(value))),
            structured: None,
            is_error: false,
            source: SourceBytes::default(),
        };
        match value {
            Value::Object(_) => {
                let Some(object) = result_fields(value) else {
                    return data(value);
                };
                ResultView {
                    content: object.get("content").map(ContentView::of_value),
                    structured: object
                        .get("structuredContent")
                        .map(|data| DataView::Value(Cow::Borrowed(data))),
                    is_error: object.get("isError") == Some(&Value::Bool(true)),
                    source: SourceBytes::default(),
                }
            }
            Value::Array(_) => ResultView {
                content: Some(ContentView::of_value(value)),
                structured: None,
                is_error: false,
                source: SourceBytes::default(),
            },
            other => data(other),
        }
    }
}

/// The fields of a tool result held as a `Value`, as the one reader reads them: an object's own,
/// unless its `type` is one of MCP's block types. Such an object is content, read as data whole,
/// and has no `content`, `structuredContent` or `isError` of its own; nor has a value that is no
/// object. Whatever reads a result's fields from a `Value` reads them here.
pub fn result_fields(value: &Value) -> Option<&serde_json::Map<String, Value>> {
    let object = value.as_object()?;
    let block = object
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| BLOCK_TYPES.contains(&t));
    (!block).then_some(object)
}

/// What copying a string that borrows the input takes: its bytes and an allocation's overhead.
// The `Cow` itself is read (only a borrowed string is copied), not the string in it.
#[allow(clippy::ptr_arg)]
fn borrowed(text: &Cow<'_, str>) -> usize {
    match text {
        Cow::Borrowed(text) => text.len() + COPY_OVERHEAD,
        Cow::Owned(_) => 0,
    }
}

/// About what a heap allocation costs beside its bytes.
const COPY_OVERHEAD: usize = 32;

/// A string that borrows nothing.
fn owned(text: Cow<'_, str>) -> Cow<'static, str> {
    Cow::Owned(text.into_owned())
}

/// A value that borrows nothing.
fn owned_value(value: Cow<'_, Value>) -> Cow<'static, Value> {
    Cow::Owned(value.into_owned())
}

impl ResultView<'_> {
    /// About how many bytes [`ResultView::into_owned`] would copy: each string borrowed from
    /// the input, and an allocation's overhead for it. A data value borrowed from a `Value`
    /// counts as nothing.
    pub fn borrowed_bytes(&self) -> usize {
        match &self.content {
            Some(ContentView::Blocks(blocks)) => blocks.iter().map(BlockView::borrowed_bytes).sum(),
            Some(ContentView::Data(_)) | None => 0,
        }
    }

    /// The same view holding its strings, so the input it was read from can be freed: the
    /// strings it borrows are copied, those it owns are moved.
    pub fn into_owned(self) -> ResultView<'static> {
        ResultView {
            content: self.content.map(|content| match content {
                ContentView::Blocks(blocks) => {
                    ContentView::Blocks(blocks.into_iter().map(BlockView::into_owned).collect())
                }
                ContentView::Data(data) => ContentView::Data(owned_value(data)),
            }),
            structured: self.structured.map(DataView::into_owned),
            is_error: self.is_error,
            source: SourceBytes::default(),
        }
    }
}

impl BlockView<'_> {
    fn borrowed_bytes(&self) -> usize {
        match self {
            BlockView::Text(text) => borrowed(text),
            BlockView::Object(object) => object.borrowed_bytes(),
            BlockView::Other(_) => 0,
        }
    }

    fn into_owned(self) -> BlockView<'static> {
        match self {
            BlockView::Text(text) => BlockView::Text(owned(text)),
            BlockView::Object(object) => BlockView::Object(object.into_owned()),
            BlockView::Other(value) => BlockView::Other(value),
        }
    }
}

impl<'de> ObjectView<'de> {
    /// The same object with `data` and `mimeType` set to these strings.
    fn with_image(self, data: String, mime: &str) -> ObjectView<'de> {
        let (present, mut values) = self.into_values();
        values[DATA] = Some(Entry::Slot(Slot::Str(Cow::Owned(data))));
        values[MIME_TYPE] = Some(Entry::Slot(Slot::Str(Cow::Owned(mime.to_owned()))));
        ObjectView::hold(present | 1 << DATA | 1 << MIME_TYPE, &mut values)
    }

    /// The object's presence bits, and its values moved out of its allocation, each in its
    /// field's place, as [`ObjectView::hold`] takes them.
    fn into_values(self) -> (u16, Values<'de>) {
        let present = self.0.present;
        let mut values: Values<'de> = [const { None }; NESTED + 1];
        values[KIND] = known_kind(self.0.kind).cloned();
        let mut bits = self.stored();
        let mut held = self.0;
        for entry in held.entries.iter_mut() {
            let entry = std::mem::replace(entry, Entry::Slot(Slot::Str(Cow::Borrowed(""))));
            let at = bits.trailing_zeros() as usize;
            bits &= bits.wrapping_sub(1);
            if let Some(value) = values.get_mut(at) {
                *value = Some(entry);
            }
        }
        (present, values)
    }
}

impl ObjectView<'_> {
    fn borrowed_bytes(&self) -> usize {
        self.0
            .entries
            .iter()
            .map(|entry| match entry {
                Entry::Slot(Slot::Str(text)) => borrowed(text),
                Entry::Slot(Slot::Json(_)) => 0,
                Entry::Object(object) => object.borrowed_bytes(),
                Entry::Nested(nested) => nested.iter().map(|(name, _)| borrowed(name)).sum(),
            })
            .sum()
    }

    fn into_owned(self) -> ObjectView<'static> {
        let (present, values) = self.into_values();
        let mut values: Values<'static> = values.map(|value| {
            value.map(|entry| match entry {
                Entry::Slot(Slot::Str(text)) => Entry::Slot(Slot::Str(owned(text))),
                Entry::Slot(Slot::Json(value)) => Entry::Slot(Slot::Json(value)),
                Entry::Object(object) => Entry::Object(object.into_owned()),
                Entry::Nested(nested) => Entry::Nested(
                    nested
                        .into_vec()
                        .into_iter()
                        .map(|(name, value)| (owned(name), value))
                        .collect(),
                ),
            })
        });
        ObjectView::hold(present, &mut values)
    }
}

impl<'de> ContentView<'de> {
    /// `content` as read from a `Value`: an array's elements, anything else data.
    fn of_value(value: &'de Value) -> ContentView<'de> {
        match value {
            Value::Array(items) => {
                ContentView::Blocks(items.iter().map(BlockView::of_value).collect())
            }
            other => ContentView::Data(Cow::Borrowed(other)),
        }
    }
}

impl<'de> BlockView<'de> {
    /// The same block with its `data` and `mimeType` set to these strings, what a scaled
    /// image's block holds: what [`BlockView::of_value`] gives for the block's object with those
    /// two fields replaced (or added) and the others as they were. An element that is no object
    /// holds no image and is given back as it was.
    pub fn with_image(self, data: String, mime: &str) -> BlockView<'de> {
        match self {
            BlockView::Object(object) => BlockView::Object(object.with_image(data, mime)),
            other => other,
        }
    }

    /// An element of a content array as read from a `Value`: what the bytes of the same
    /// element give.
    pub fn of_value(value: &'de Value) -> BlockView<'de> {
        match value {
            Value::Object(object) => {
                let mut values: Values<'de> = [const { None }; NESTED + 1];
                let present = fields_of_value(object, &mut values);
                BlockView::of_object(present, &mut values)
            }
            other => BlockView::Other(Box::new(other.clone())),
        }
    }
}

/// [`read_fields`] on an object of a `Value`: its strings borrowed.
fn fields_of_value<'de>(
    object: &'de serde_json::Map<String, Value>,
    values: &mut Values<'de>,
) -> u16 {
    let mut present = 0u16;
    let mut nested: Vec<(Cow<'de, str>, Value)> = Vec::new();
    for (key, value) in object {
        let Some(at) = field_at(key) else {
            if key == "annotations" && for_the_user_alone(value) {
                present |= 1 << USER_ALONE;
            }
            if may_be_read(value) {
                nested.push((Cow::Borrowed(key.as_str()), value.clone()));
            }
            continue;
        };
        let entry = match value {
            Value::String(s) => Entry::Slot(Slot::Str(Cow::Borrowed(s.as_str()))),
            Value::Object(inner) if at == RESOURCE => {
                let mut inner_values: Values<'de> = [const { None }; NESTED + 1];
                let inner_present = fields_of_value(inner, &mut inner_values);
                Entry::Object(ObjectView::hold(inner_present, &mut inner_values))
            }
            other => Entry::Slot(Slot::Json(Box::new(other.clone()))),
        };
        if let Some(place) = values.get_mut(at) {
            *place = Some(entry);
            present |= 1 << at;
        }
    }
    if !nested.is_empty() {
        values[NESTED] = Some(Entry::Nested(nested.into_boxed_slice()));
        present |= 1 << NESTED;
    }
    present
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

/// The first byte of a JSON document that is not whitespace: `{` for an object, `[` for an
/// array. The session and `mcpl project` read from it whether a result read from bytes is an
/// object, whose `content` alone is scaled and whose references are fetched.
#[must_use]
pub fn first_json_byte(bytes: &[u8]) -> Option<u8> {
    bytes.trim_ascii_start().first().copied()
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
            source: SourceBytes::default(),
        };
        let mut block = false;
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match key.name() {
                "content" => view.content = Some(map.next_value::<ContentView<'de>>()?),
                "structuredContent" => {
                    let raw = map.next_value::<&'de RawValue>()?;
                    view.structured = Some(DataView::checked(raw).map_err(de::Error::custom)?);
                }
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
            source: SourceBytes::default(),
        }))
    }

    scalars_as!(data_result);
}

/// A scalar document or `content`: data.
fn data_result<'de>(value: Value) -> Option<ResultView<'de>> {
    Some(ResultView {
        content: Some(ContentView::Data(Cow::Owned(value))),
        structured: None,
        is_error: false,
        source: SourceBytes::default(),
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

/// A slot's value is read as the raw JSON it is in the input, so that a string with escapes is
/// decoded once, straight into a `String` of its final size: serde_json would decode it into
/// its scratch buffer, which grows by doubling, and a visitor could only copy it from there, so
/// a 200 MB text would cost two or three times its size while it is read (decision 0091).
impl<'de> Deserialize<'de> for Slot<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = <&'de RawValue>::deserialize(deserializer)?;
        slot_of_raw(raw.get()).map_err(de::Error::custom)
    }
}

/// A slot from its raw JSON, which serde_json has checked as it checks any value it skips:
/// the syntax, UTF-8, no control character in a string, every escape well formed. What it does
/// not check of a skipped value, the parse of a `Value` does: surrogate escapes paired (here, in
/// [`unescape`]) and nesting within the recursion limit (in [`ResultView::parse`], from the
/// mark [`RAW_CONTAINER_READ`] leaves).
fn slot_of_raw(raw: &str) -> Result<Slot<'_>, String> {
    if let Some(body) = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        return Ok(Slot::Str(match memchr::memchr(b'\\', body.as_bytes()) {
            None => Cow::Borrowed(body),
            Some(_) => Cow::Owned(unescape(body)?),
        }));
    }
    mark_a_container(raw);
    let value: Value = serde_json::from_str(raw).map_err(|error| error.to_string())?;
    Ok(slot_of(value))
}

/// Leaves the mark [`RAW_CONTAINER_READ`] when raw JSON read as if at the top is an object or
/// an array.
fn mark_a_container(raw: &str) {
    if raw.starts_with(['[', '{']) {
        RAW_CONTAINER_READ.with(|read| read.set(true));
    }
}

thread_local! {
    /// Set when a slot held an object or an array, read from its raw JSON: that parse started
    /// at depth zero, so [`ResultView::parse`] checks the whole input's nesting after it.
    static RAW_CONTAINER_READ: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The depth at which serde_json refuses to nest further: its 128th open container.
const RECURSION_LIMIT: usize = 128;

/// Whether JSON text opens containers [`RECURSION_LIMIT`] deep anywhere (strings skipped).
fn nests_too_deep(bytes: &[u8]) -> bool {
    nests_as_deep_as(bytes, RECURSION_LIMIT)
}

/// Whether JSON text opens containers `limit` deep anywhere (strings skipped).
fn nests_as_deep_as(bytes: &[u8], limit: usize) -> bool {
    let mut depth = 0usize;
    let mut at = 0;
    while let Some(offset) = bytes.get(at..).and_then(|rest| {
        rest.iter()
            .position(|b| matches!(b, b'"' | b'[' | b'{' | b']' | b'}'))
    }) {
        at += offset;
        match bytes[at] {
            b'"' => {
                // Past the closing quote: the next quote or backslash, an escape skipped whole.
                at += 1;
                loop {
                    match bytes
                        .get(at..)
                        .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
                    {
                        Some(k) if bytes[at + k] == b'\\' => at += k + 2,
                        Some(k) => {
                            at += k + 1;
                            break;
                        }
                        None => return false,
                    }
                }
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth >= limit {
                    return true;
                }
            }
            _ => depth = depth.saturating_sub(1),
        }
        at += 1;
    }
    false
}

/// A JSON string's body (between its quotes, escapes well formed) decoded into a `String` of
/// exactly its final size: one pass measures it, a second writes it. Fails as serde_json fails
/// on the same string read into a `String`: on a surrogate escape that is not one of a pair.
fn unescape(body: &str) -> Result<String, String> {
    let len = decode_escapes(body, |piece| match piece {
        Piece::Text(text) => text.len(),
        Piece::Char(c) => c.len_utf8(),
    })?;
    let mut out = String::with_capacity(len);
    decode_escapes(body, |piece| {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Char(c) => out.push(c),
        }
        0
    })?;
    Ok(out)
}

/// A stretch of a string's body between escapes, or what one escape stands for.
enum Piece<'s> {
    Text(&'s str),
    Char(char),
}

/// Walks a string's body piece by piece, handing each to `each`; returns the sum of what it
/// returned.
fn decode_escapes(body: &str, mut each: impl FnMut(Piece<'_>) -> usize) -> Result<usize, String> {
    let bytes = body.as_bytes();
    let mut total = 0;
    let mut at = 0;
    while let Some(offset) = memchr::memchr(b'\\', &bytes[at..]) {
        let escape = at + offset;
        // A backslash is ASCII, so the text before it ends on a character boundary.
        total += each(Piece::Text(body.get(at..escape).unwrap_or_default()));
        let (c, len) = escape_at(bytes, escape)?;
        total += each(Piece::Char(c));
        at = escape + len;
    }
    total += each(Piece::Text(body.get(at..).unwrap_or_default()));
    Ok(total)
}

/// The character the escape at `at` stands for, and the escape's length in bytes.
fn escape_at(bytes: &[u8], at: usize) -> Result<(char, usize), String> {
    let simple = match bytes.get(at + 1) {
        Some(b'"') => '"',
        Some(b'\\') => '\\',
        Some(b'/') => '/',
        Some(b'b') => '\u{8}',
        Some(b'f') => '\u{c}',
        Some(b'n') => '\n',
        Some(b'r') => '\r',
        Some(b't') => '\t',
        Some(b'u') => return unicode_escape_at(bytes, at),
        _ => return Err("invalid escape".to_owned()),
    };
    Ok((simple, 2))
}

/// `\uXXXX`, or a pair of them for a character past the BMP.
fn unicode_escape_at(bytes: &[u8], at: usize) -> Result<(char, usize), String> {
    let unit = |from: usize| {
        bytes
            .get(from..from + 4)
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u32::from_str_radix(hex, 16).ok())
            .ok_or_else(|| "invalid escape".to_owned())
    };
    let lone = || Err("lone surrogate in hex escape".to_owned());
    let first = unit(at + 2)?;
    if (0xDC00..0xE000).contains(&first) {
        return lone();
    }
    if !(0xD800..0xDC00).contains(&first) {
        return char::from_u32(first).map(|c| (c, 6)).map_or_else(lone, Ok);
    }
    if bytes.get(at + 6..at + 8) != Some(b"\\u") {
        return lone();
    }
    let second = unit(at + 8)?;
    if !(0xDC00..0xE000).contains(&second) {
        return lone();
    }
    let c = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
    char::from_u32(c).map(|c| (c, 12)).map_or_else(lone, Ok)
}

/// A scalar as a slot: a string stays a string.
fn slot_of<'de>(value: Value) -> Slot<'de> {
    match value {
        Value::String(s) => Slot::Str(Cow::Owned(s)),
        other => Slot::Json(Box::new(other)),
    }
}

/// An object's `resource` field as held: an object read as a block is, or any other value.
struct ResourceEntry<'de>(Entry<'de>);

impl<'de> Deserialize<'de> for ResourceEntry<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ResourceVisitor;
        impl<'de> Visitor<'de> for ResourceVisitor {
            type Value = ResourceEntry<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(ResourceEntry(Entry::Slot(Slot::Str(Cow::Borrowed(v)))))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let mut values: Values<'_> = [const { None }; NESTED + 1];
                let present = read_fields(map, &mut values)?;
                Ok(ResourceEntry(Entry::Object(ObjectView::hold(
                    present,
                    &mut values,
                ))))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                seq_value(seq).map(|value| ResourceEntry(Entry::Slot(Slot::Json(Box::new(value)))))
            }
            scalars_as!(|value| ResourceEntry(Entry::Slot(slot_of(value))));
        }
        deserializer.deserialize_any(ResourceVisitor)
    }
}

/// Reads an object's fields into `values`, each at its field's place (the other fields' objects
/// and arrays at [`NESTED`]), and returns which have one. The last of a repeated key wins, as in
/// a `Value`.
fn read_fields<'de, A: MapAccess<'de>>(map: A, values: &mut Values<'de>) -> Result<u16, A::Error> {
    read_fields_from(map, None, values, 0)
}

/// [`read_fields`] on an object whose fields `present` marks are already in `values`, and
/// whose key `pending` has been read but not its value.
fn read_fields_from<'de, A: MapAccess<'de>>(
    mut map: A,
    mut pending: Option<Cow<'de, str>>,
    values: &mut Values<'de>,
    mut present: u16,
) -> Result<u16, A::Error> {
    // Most blocks' other fields (annotations' scalars, say) are skipped: the list grows only
    // for a value kept.
    let mut nested: Vec<(Cow<'de, str>, Value)> = Vec::new();
    loop {
        let key = match pending.take() {
            Some(key) => key,
            None => match map.next_key::<Key<'de>>()? {
                Some(Key(key)) => key,
                None => break,
            },
        };
        let Some(at) = field_at(&key) else {
            let raw = map.next_value::<&'de RawValue>()?;
            let (value, user_alone) = nested_of_raw(&key, raw.get()).map_err(de::Error::custom)?;
            // A repeated key keeps only its last value, as a `Value` does.
            if key == "annotations" {
                present = (present & !(1 << USER_ALONE)) | u16::from(user_alone) << USER_ALONE;
            }
            nested.retain(|(name, _)| *name != key);
            nested.extend(value.map(|value| (key, value)));
            continue;
        };
        let value = if at == RESOURCE {
            map.next_value::<ResourceEntry<'de>>()?.0
        } else {
            Entry::Slot(map.next_value::<Slot<'de>>()?)
        };
        if let Some(place) = values.get_mut(at) {
            *place = Some(value);
            present |= 1 << at;
        }
    }
    if !nested.is_empty() {
        values[NESTED] = Some(Entry::Nested(nested.into_boxed_slice()));
        present |= 1 << NESTED;
    }
    Ok(present)
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

/// Another field's value, from its raw JSON: kept when a reader may use it ([`may_be_read`]),
/// else checked as a `Value`'s parse checks it and dropped; and, for `annotations`, whether
/// they name the user alone ([`for_the_user_alone`]), which the view keeps as a flag. A
/// million tiny blocks that each carry `annotations` or `_meta` cost no `Value` each
/// (decisions 0152 and 0155).
fn nested_of_raw(key: &str, raw: &str) -> Result<(Option<Value>, bool), String> {
    let escaped = memchr::memchr(b'\\', raw.as_bytes()).is_some();
    if raw.starts_with('"') && !escaped {
        // A plain string: serde_json has checked all a `Value` would.
        return Ok((None, false));
    }
    mark_a_container(raw);
    // Without an escape, each string is spelt in the raw JSON as it is: one that a reader looks
    // for, quoted, is in the text whenever it is in the value.
    let named = |quoted: &[u8]| escaped || memchr::memmem::find(raw.as_bytes(), quoted).is_some();
    let annotations = key == "annotations" && raw.starts_with('{');
    if annotations && named(b"\"user\"") && !named(b"\"type\"") {
        // Only the audience is read: a small struct, not a `Value`, checked as a `Value` is.
        let audience: Audience = serde_json::from_str(raw).map_err(|error| error.to_string())?;
        return Ok((None, audience.is_user_alone()));
    }
    let container = raw.starts_with(['[', '{']);
    if container && named(b"\"type\"") {
        let value: Value = serde_json::from_str(raw).map_err(|error| error.to_string())?;
        let user_alone = key == "annotations" && for_the_user_alone(&value);
        return Ok((may_be_read(&value).then_some(value), user_alone));
    }
    // Numbers in range and escapes that pair, as a `Value` would have them.
    serde_json::from_str::<Skip>(raw).map_err(|error| error.to_string())?;
    Ok((None, false))
}

/// An `annotations` object as [`for_the_user_alone`] reads it: its last `audience`, and every
/// other field read and dropped as [`Skip`] reads it (as a `Value`'s parse would check it).
struct Audience(Option<Value>);

impl Audience {
    fn is_user_alone(&self) -> bool {
        names_the_user_alone(self.0.as_ref())
    }
}

impl<'de> Deserialize<'de> for Audience {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct AudienceVisitor;
        impl<'de> Visitor<'de> for AudienceVisitor {
            type Value = Audience;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Audience, A::Error> {
                let mut audience = None;
                while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                    if key == "audience" {
                        audience = Some(map.next_value::<Value>()?);
                    } else {
                        map.next_value::<Skip>()?;
                    }
                }
                Ok(Audience(audience))
            }
        }
        deserializer.deserialize_map(AudienceVisitor)
    }
}

/// Whether a reader may use another field's value: an object or an array that holds the
/// string `type` (a key or a value, at any depth), where a content block may sit for the uri
/// walk.
fn may_be_read(value: &Value) -> bool {
    (value.is_object() || value.is_array()) && holds_string(value, "type")
}

/// Whether a block's `annotations` name the user alone as its audience: an `audience` of one
/// role or more, each `"user"`.
fn for_the_user_alone(annotations: &Value) -> bool {
    names_the_user_alone(annotations.get("audience"))
}

/// Whether an `audience` names the user alone: a list of one role or more, each `"user"`.
fn names_the_user_alone(audience: Option<&Value>) -> bool {
    audience
        .and_then(Value::as_array)
        .is_some_and(|roles| !roles.is_empty() && roles.iter().all(|role| role == "user"))
}

/// Whether `word` is a key or a string anywhere in `value`.
fn holds_string(value: &Value, word: &str) -> bool {
    match value {
        Value::String(s) => s == word,
        Value::Array(items) => items.iter().any(|item| holds_string(item, word)),
        Value::Object(object) => object
            .iter()
            .any(|(key, item)| key == word || holds_string(item, word)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
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
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                // A plain text block, `type` and `text` once each and nothing else, is read
                // without the table of every field; at the first other key (or a repeated one)
                // the table takes over with what was read so far.
                let (mut kind, mut text) = (None, None);
                let pending = loop {
                    let Some(Key(key)) = map.next_key::<Key<'de>>()? else {
                        break None;
                    };
                    match key.as_ref() {
                        "type" if kind.is_none() => kind = Some(map.next_value::<Slot<'de>>()?),
                        "text" if text.is_none() => text = Some(map.next_value::<Slot<'de>>()?),
                        _ => break Some(key),
                    }
                };
                if pending.is_none()
                    && let (Some(Slot::Str(kind)), Some(Slot::Str(_))) = (&kind, &text)
                    && kind == "text"
                    && let Some(Slot::Str(text)) = text
                {
                    return Ok(BlockView::Text(text));
                }
                let mut values: Values<'_> = [const { None }; NESTED + 1];
                let mut present = 0;
                for (at, slot) in [(KIND, kind), (TEXT, text)] {
                    if let Some(slot) = slot {
                        values[at] = Some(Entry::Slot(slot));
                        present |= 1 << at;
                    }
                }
                let present = read_fields_from(map, pending, &mut values, present)?;
                Ok(BlockView::of_object(present, &mut values))
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
                map_value(map).map(|value| ContentView::Data(Cow::Owned(value)))
            }
            scalars_as!(|value| ContentView::Data(Cow::Owned(value)));
        }
        deserializer.deserialize_any(ContentVisitor)
    }
}

/// A result of at least this many bytes may have its content array read in two halves on
/// two threads (decision 0169).
const SPLIT_BYTES: usize = 1 << 20;

/// [`ResultView::parse`]'s read of a large result in two halves, cut at the first `},{` from
/// byte `near` on, on any input: the view it gives, or `None` where the whole parse must read
/// it. The fuzz target checks it against the whole parse.
pub(crate) fn split_read(bytes: &[u8], near: usize) -> Option<ResultView<'_>> {
    RAW_CONTAINER_READ.with(|read| read.set(false));
    let read = split::parse(bytes, near);
    RAW_CONTAINER_READ.with(|read| read.set(false));
    read
}

/// Whether this machine runs two threads at once, so a second thread may help; asked once.
/// The lanes ask it too.
pub fn two_cores() -> bool {
    static TWO: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TWO.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2))
}

/// A large result's content array read in two halves on two threads (decision 0169).
///
/// Only a result written `{"content": [ ... ]}`, or with `"isError": true` or `false` after the
/// array, is read so. A second thread reads the array's elements from a guessed place between
/// two elements (a `},{` past the middle) to the array's end, while this thread reads them
/// from the start. Each element is read by the same `Deserialize` as the whole parse reads it.
/// The guess holds when this thread, reading from the start, meets an element's end exactly at
/// the guessed comma: JSON read from a given place reads one way, so the second thread's
/// elements are then the ones the whole parse would read. Anything else (the guess missed, an
/// error, another key, an element that nests deep enough that its depth in the whole document
/// could matter) gives `None`, and the whole parse reads the bytes as before: its result and
/// its errors are unchanged.
mod split {
    use super::{BlockView, ContentView, RAW_CONTAINER_READ, ResultView, SourceBytes};

    /// An element nesting this deep alone is that deep plus two in the whole document (the
    /// result's object and its content array), where serde_json refuses to go on at 128.
    const ELEMENT_DEPTH_LIMIT: usize = super::RECURSION_LIMIT - 2;

    /// The view of `bytes`, its array cut at the first `},{` from byte `near` on, or `None`.
    pub(super) fn parse(bytes: &[u8], near: usize) -> Option<ResultView<'_>> {
        let start = array_start(bytes)?;
        let from = near.max(start);
        let cut = from + memchr::memmem::find(bytes.get(from..)?, b"},{")? + 1;
        let (head, tail, tail_raw) = std::thread::scope(|scope| {
            let helper = std::thread::Builder::new()
                .spawn_scoped(scope, || {
                    RAW_CONTAINER_READ.with(|read| read.set(false));
                    let tail = elements(bytes, cut + 1, None);
                    (tail, RAW_CONTAINER_READ.with(|read| read.replace(false)))
                })
                .ok()?;
            let head = elements(bytes, start, Some(cut));
            let (tail, tail_raw) = helper.join().ok()?;
            Some((head?, tail?, tail_raw))
        })?;
        let is_error = after_array(bytes, tail.end)?;
        // A container read from a slot's raw JSON was read as if at the top, as in the whole
        // parse, which then checks the whole input's nesting.
        let head_raw = RAW_CONTAINER_READ.with(|read| read.replace(false));
        if (head_raw || tail_raw) && super::nests_too_deep(bytes) {
            return None;
        }
        Some(ResultView {
            content: Some(ContentView::Blocks(head.joined(tail))),
            structured: None,
            is_error,
            source: SourceBytes(bytes),
        })
    }

    /// Elements read, in lists of at most [`CHUNK`], and where reading stopped: at the cut's
    /// comma, or the array's `]`.
    struct Elements<'de> {
        chunks: Vec<Vec<BlockView<'de>>>,
        end: usize,
    }

    /// How many elements one list holds: the second thread's lists are moved into the first
    /// thread's one at a time, each freed as it goes, so the two are never held whole twice.
    const CHUNK: usize = 1 << 14;

    impl<'de> Elements<'de> {
        fn len(&self) -> usize {
            self.chunks.iter().map(Vec::len).sum()
        }

        /// Every element, in order, in one list of exactly their number.
        fn joined(self, tail: Elements<'de>) -> Vec<BlockView<'de>> {
            let mut blocks = Vec::with_capacity(self.len() + tail.len());
            for chunk in self.chunks.into_iter().chain(tail.chunks) {
                blocks.extend(chunk);
            }
            blocks
        }
    }

    /// The elements from byte `at` on, a value first: up to the comma at `stop`, which must
    /// follow an element, or, with no `stop`, up to the array's end.
    fn elements(bytes: &[u8], mut at: usize, stop: Option<usize>) -> Option<Elements<'_>> {
        let mut chunks = Vec::new();
        let mut blocks = Vec::new();
        loop {
            let rest = bytes.get(at..)?;
            let mut stream = serde_json::Deserializer::from_slice(rest).into_iter::<BlockView>();
            let block = stream.next()?.ok()?;
            let end = at + stream.byte_offset();
            let element = bytes.get(at..end)?;
            // Depth needs as many brackets opened and closed; only an element long enough to
            // hold them, and holding that many opened, is read for its depth.
            if element.len() >= 2 * ELEMENT_DEPTH_LIMIT
                && memchr::memchr2_iter(b'{', b'[', element)
                    .nth(ELEMENT_DEPTH_LIMIT - 1)
                    .is_some()
                && super::nests_as_deep_as(element, ELEMENT_DEPTH_LIMIT)
            {
                return None;
            }
            if blocks.len() == CHUNK {
                chunks.push(std::mem::replace(&mut blocks, Vec::with_capacity(CHUNK)));
            }
            blocks.push(block);
            at = skip_white(bytes, end);
            let done = match (bytes.get(at)?, stop) {
                (b',', Some(stop)) if at == stop => true,
                (b',', Some(stop)) if at > stop => return None,
                (b',', _) => false,
                (b']', None) => true,
                _ => return None,
            };
            if done {
                chunks.push(blocks);
                return Some(Elements { chunks, end: at });
            }
            at += 1;
        }
    }

    /// Past JSON white space from `at`.
    fn skip_white(bytes: &[u8], mut at: usize) -> usize {
        while bytes
            .get(at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            at += 1;
        }
        at
    }

    /// Past `token` at `at`, white space before it skipped, or `None` where it is not.
    fn past(bytes: &[u8], at: usize, token: &[u8]) -> Option<usize> {
        let at = skip_white(bytes, at);
        bytes
            .get(at..)?
            .starts_with(token)
            .then_some(at + token.len())
    }

    /// Where the content array's first element may begin: past `{"content":[`, white space
    /// allowed between the tokens.
    fn array_start(bytes: &[u8]) -> Option<usize> {
        let at = past(bytes, 0, b"{")?;
        let at = past(bytes, at, b"\"content\"")?;
        let at = past(bytes, at, b":")?;
        past(bytes, at, b"[")
    }

    /// What follows the array's `]` at `end`: the object's end, or `"isError"` with `true` or
    /// `false` and then the end, and nothing after. Gives `isError`.
    fn after_array(bytes: &[u8], end: usize) -> Option<bool> {
        let mut at = end + 1;
        let mut is_error = false;
        if let Some(key) = past(bytes, at, b",") {
            let value = past(bytes, past(bytes, key, b"\"isError\"")?, b":")?;
            (is_error, at) = match (past(bytes, value, b"true"), past(bytes, value, b"false")) {
                (Some(at), _) => (true, at),
                (_, Some(at)) => (false, at),
                _ => return None,
            };
        }
        let at = past(bytes, at, b"}")?;
        (skip_white(bytes, at) == bytes.len()).then_some(is_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_holding_its_strings_reads_as_the_borrowing_one() {
        let bytes = br#"{"content": [{"type": "text", "text": "a\nb"}, {"type": "text", "text": "plain"},
            {"type": "resource", "resource": {"uri": "file:///x", "text": "t"}, "_meta": {"k": [1]}},
            {"type": "image", "data": "aGk=", "mimeType": "image/png"}, 3], "isError": true}"#;
        let view = ResultView::parse(bytes).unwrap();
        assert!(view.borrowed_bytes() > 0);
        let owned = view.clone().into_owned();
        assert_eq!(owned.borrowed_bytes(), 0);
        assert_eq!(owned, view);
    }

    /// Where a view was read from is not what it reads: its bytes are not compared, and its
    /// debug form gives their length, not the bytes.
    #[test]
    fn a_views_bytes_are_neither_compared_nor_printed() {
        let bytes = br#"{"content": [{"type": "text", "text": "kept"}], "_meta": {"n": "unread"}}"#;
        let view = ResultView::parse(bytes).unwrap();
        let value: Value = serde_json::from_slice(bytes).unwrap();
        let of_value = ResultView::of_value(&value);
        assert_eq!(view.source.0, bytes);
        assert!(of_value.source.0.is_empty());
        assert_eq!(view, of_value);
        let debug = format!("{view:?}");
        let length = format!("SourceBytes({} bytes)", bytes.len());
        assert!(debug.contains(&length), "{debug}");
        assert!(!debug.contains("unread"), "{debug}");
    }

    #[test]
    fn each_known_field_is_found_at_its_place_by_its_name() {
        for (at, name) in FIELDS.iter().enumerate() {
            assert_eq!(field_at(name), Some(at), "{name}");
        }
        for other in ["Type", "mime_type", "annotations", "_meta", ""] {
            assert_eq!(field_at(other), None, "{other}");
        }
    }

    /// A text block is read without the table of every field only when it is plain: `type`
    /// `text` and `text` a string, once each, and any other field skipped; whatever else is read
    /// as an object, and every one classifies as its `Value` does.
    #[rstest::rstest]
    #[case::plain(r#"{"type":"text","text":"a"}"#, true)]
    #[case::text_first(r#"{"text":"a","type":"text"}"#, true)]
    #[case::a_scalar_skipped(r#"{"type":"text","x":1,"text":"a"}"#, true)]
    #[case::type_repeated(r#"{"type":"image","text":"a","type":"text"}"#, true)]
    #[case::text_repeated(r#"{"type":"text","text":1,"text":"b"}"#, true)]
    #[case::type_repeated_last_not_text(r#"{"type":"text","text":"a","type":"image"}"#, false)]
    #[case::nested_unread(r#"{"type":"text","text":"a","annotations":{"x":1}}"#, true)]
    #[case::nested_kept(
        r#"{"type":"text","text":"a","annotations":{"audience":["user"]}}"#,
        false
    )]
    #[case::nested_unread_audience(
        r#"{"type":"text","text":"a","annotations":{"audience":["assistant"]}}"#,
        true
    )]
    #[case::text_not_a_string(r#"{"type":"text","text":["a"]}"#, false)]
    #[case::not_a_text(r#"{"type":"image","text":"a"}"#, false)]
    #[case::no_text(r#"{"type":"text"}"#, false)]
    #[case::a_known_field_besides(r#"{"type":"text","text":"a","uri":"x://y"}"#, false)]
    #[case::empty(r#"{}"#, false)]
    fn a_plain_text_block_is_read_as_its_text(#[case] block: &str, #[case] plain: bool) {
        let bytes = format!(r#"{{"content":[{block}]}}"#);
        let view = ResultView::parse(bytes.as_bytes()).unwrap();
        let Some(ContentView::Blocks(blocks)) = &view.content else {
            panic!("a content array")
        };
        assert_eq!(matches!(blocks[0], BlockView::Text(_)), plain, "{block}");
        let value: Value = serde_json::from_str(block).unwrap();
        assert_eq!(blocks[0].classify(), crate::classify(&value), "{block}");
    }

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
        assert!(matches!(
            image.data(),
            Some(Slot::Str(Cow::Borrowed("AAAA")))
        ));
        assert_eq!(blocks[0].classify(), Block::Text("a\nb"));
        let view = ResultView::parse(br#"[{"type":"text","text":"ab"}]"#).unwrap();
        assert!(matches!(
            view.content,
            Some(ContentView::Blocks(blocks)) if blocks == [BlockView::Text(Cow::Borrowed("ab"))]
        ));
    }

    /// The text slot of `{"content":[{"type":"text","text":<json>}]}`, a borrowed string made
    /// owned (so the answer outlives the bytes), an owned one as it was read.
    fn text_slot(json: &str) -> Result<Option<Slot<'static>>, serde_json::Error> {
        let bytes = format!(r#"{{"content":[{{"type":"text","text":{json}}}]}}"#);
        let view = ResultView::parse(bytes.as_bytes())?;
        let Some(ContentView::Blocks(blocks)) = view.content else {
            panic!("a content array")
        };
        let slot = blocks.into_iter().next().and_then(|block| match block {
            BlockView::Text(text) => Some(Slot::Str(text)),
            BlockView::Object(object) => object.text().cloned(),
            BlockView::Other(_) => None,
        });
        Ok(slot.map(|slot| match slot {
            Slot::Str(text) => Slot::Str(Cow::Owned(text.into_owned())),
            Slot::Json(value) => Slot::Json(value),
        }))
    }

    #[test]
    fn an_escaped_string_is_decoded_into_a_string_of_exactly_its_size() {
        let json = r#""a\nb\t\"q\"\\ \/ \b\f\r \u00e9 \ud83d\ude00 end""#;
        let Ok(Some(Slot::Str(Cow::Owned(text)))) = text_slot(json) else {
            panic!("an owned string")
        };
        let expected: String = serde_json::from_str(json).unwrap();
        assert_eq!(text, expected);
        assert_eq!(text.capacity(), text.len());
    }

    #[rstest::rstest]
    #[case::lone_leading(r#""a\ud800""#)]
    #[case::lone_trailing(r#""\udc00""#)]
    #[case::leading_then_other_escape(r#""\ud800\n""#)]
    #[case::leading_then_leading(r#""\ud800\ud800""#)]
    #[case::leading_then_bmp(r#""\ud800\u0041""#)]
    #[case::invalid_escape(r#""\x41""#)]
    #[case::short_hex(r#""\u12""#)]
    #[case::control_character("\"a\u{1}b\"")]
    fn a_string_a_value_refuses_the_view_refuses(#[case] json: &str) {
        assert!(serde_json::from_str::<Value>(json).is_err());
        assert!(text_slot(json).is_err(), "{json}");
    }

    #[test]
    fn a_container_in_a_slot_counts_against_the_whole_inputs_nesting_limit() {
        // The text slot sits in three containers: the result, the content array, the block.
        for depth in [120, 124, 125, 126, 130] {
            let json = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let bytes = format!(r#"{{"content":[{{"type":"text","text":{json}}}]}}"#);
            let value = serde_json::from_slice::<Value>(bytes.as_bytes());
            let view = ResultView::parse(bytes.as_bytes());
            assert_eq!(view.is_ok(), value.is_ok(), "{depth}");
        }
        assert!(nests_too_deep(&[b'['; RECURSION_LIMIT]));
        assert!(!nests_too_deep(&[b'['; RECURSION_LIMIT - 1]));
        assert!(!nests_too_deep(
            format!("[\"{}\\\"\"]", "[".repeat(200)).as_bytes()
        ));
    }

    proptest::proptest! {
        /// Any string, as JSON writes it or with every character escaped, reads as a `Value`
        /// reads it.
        #[test]
        fn a_string_slot_reads_as_a_value_reads_it(text in "\\PC{0,40}|[\\\\\"\n\t\u{1}\u{e9}\u{1f600}a]{0,40}") {
            let escaped: String = text
                .encode_utf16()
                .map(|unit| format!("\\u{unit:04x}"))
                .collect();
            for json in [serde_json::to_string(&text).unwrap(), format!("\"{escaped}\"")] {
                let slot = text_slot(&json).unwrap();
                proptest::prop_assert_eq!(slot, Some(Slot::Str(Cow::Owned(text.clone()))));
            }
        }
    }

    proptest::proptest! {
        /// A block [`BlockView::may_be_inline_media`] rules out is never classified as inline
        /// media: blocks of each type, with or without data, a uri, a type, a resource.
        #[test]
        fn a_block_ruled_out_is_no_inline_media(
            fields in proptest::collection::vec(
                (
                    proptest::sample::select(vec![
                        "type", "data", "uri", "mimeType", "text", "resource", "name",
                        "disposition", "annotations", "blob",
                    ]),
                    proptest::sample::select(vec![
                        r#""image""#, r#""audio""#, r#""text""#, r#""resource_link""#,
                        r#""resource""#, r#""aGk=""#, r#""image/png""#, "1", "null",
                        r#"{"uri":"u","blob":"aGk=","mimeType":"image/png"}"#, r#""never""#,
                        r#"{"audience":["user"]}"#,
                    ]),
                ),
                0..6,
            ),
        ) {
            let body: Vec<String> = fields
                .iter()
                .map(|(name, value)| format!("\"{name}\":{value}"))
                .collect();
            let bytes = format!("[{{{}}}]", body.join(","));
            let blocks = blocks(bytes.as_bytes());
            let inline = matches!(
                blocks[0].classify(),
                crate::Block::InlineImage(_) | crate::Block::InlineAudio(_)
            );
            proptest::prop_assert!(!inline || blocks[0].may_be_inline_media(), "{}", bytes);
        }
    }

    #[test]
    fn a_block_costs_three_machine_words_besides_its_borrowed_strings() {
        // A plain text block is its borrowed text; every other kind is one box.
        assert!(std::mem::size_of::<Slot<'_>>() <= 24);
        assert!(std::mem::size_of::<BlockView<'_>>() <= 24);
        // An object's box holds three words a field and its presence bits.
        assert!(std::mem::size_of::<Entry<'_>>() <= 24);
        assert!(std::mem::size_of::<Held<[Entry<'_>; 0]>>() <= 8);
    }

    #[rstest::rstest]
    #[case::plain(r#"{"type":"text","text":"t"}"#, true)]
    #[case::skipped_scalars(r#"{"type":"text","annotations":7,"text":"t","x":"y"}"#, true)]
    #[case::escaped(r#"{"type":"text","text":"\u0074"}"#, true)]
    #[case::a_uri(r#"{"type":"text","text":"t","uri":"u"}"#, false)]
    #[case::a_name(r#"{"type":"text","text":"t","name":"n"}"#, false)]
    #[case::nested_unread(r#"{"type":"text","text":"t","_meta":{"a":1}}"#, true)]
    #[case::annotations_unread(r#"{"type":"text","text":"t","annotations":{"priority":1}}"#, true)]
    #[case::nested_block(r#"{"type":"text","text":"t","_meta":[{"type":"text"}]}"#, false)]
    #[case::for_the_user(
        r#"{"type":"text","text":"t","annotations":{"audience":["user"]}}"#,
        false
    )]
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

    /// The blocks of a content array.
    fn blocks(bytes: &[u8]) -> Vec<BlockView<'_>> {
        match ResultView::parse(bytes).unwrap().content {
            Some(ContentView::Blocks(blocks)) => blocks,
            other => panic!("a content array, not {other:?}"),
        }
    }

    /// The names of the fields an object holds values for, in the order it holds them.
    fn held(object: &ObjectView<'_>) -> Vec<&'static str> {
        (0..=NESTED)
            .filter(|at| object.0.present & (1 << at) != 0)
            .map(|at| FIELDS.get(at).copied().unwrap_or("(nested)"))
            .collect()
    }

    #[test]
    fn an_object_holds_just_the_fields_it_has() {
        let bytes = br#"[{"type":"resource_link","uri":"u","name":"n","mimeType":"text/csv"},
            {"type":"resource","resource":{"uri":"u","mimeType":"text/plain","text":"t"}},
            {"type":"image","data":"AAAA","annotations":{"a":1},"annotations":2},
            {"type":"image","data":"AAAA","_meta":3,"x":[{"type":1}],"y":[1]},
            {"type":"resource","resource":"r","disposition":"never","digest":{}}]"#;
        let blocks = blocks(bytes);
        let [
            BlockView::Object(link),
            BlockView::Object(embedded),
            BlockView::Object(repeated),
            BlockView::Object(scalar),
            BlockView::Object(other),
        ] = &blocks[..]
        else {
            panic!("five objects")
        };
        assert_eq!(held(link), ["type", "uri", "mimeType", "name"]);
        // Its `type`, one of the five, is told by a byte beside the presence bits.
        assert_eq!(link.0.entries.len(), 3);
        assert_eq!(link.kind().and_then(Slot::as_str), Some("resource_link"));
        assert_eq!(link.name().and_then(Slot::as_str), Some("n"));
        assert_eq!(link.text(), None);
        // An embedded resource: its block's two fields, its resource's three.
        assert_eq!(held(embedded), ["type", "resource"]);
        let inner = embedded.resource_object().unwrap();
        assert_eq!(held(inner), ["text", "uri", "mimeType"]);
        assert_eq!(inner.0.entries.len(), 3);
        assert_eq!(inner.text().and_then(Slot::as_str), Some("t"));
        // The repeated key's last value, a scalar, is not kept; an array that holds `type` is,
        // and one no reader looks in is not.
        assert_eq!(held(repeated), ["type", "data"]);
        assert!(repeated.nested().is_empty());
        assert_eq!(held(scalar), ["type", "data", "(nested)"]);
        assert_eq!(
            scalar.nested(),
            [(Cow::Borrowed("x"), serde_json::json!([{"type": 1}]))]
        );
        assert_eq!(
            scalar.json_values().collect::<Vec<_>>(),
            [&serde_json::json!([{"type": 1}])]
        );
        // A resource that is no object is a value like any other.
        assert_eq!(held(other), ["type", "disposition", "digest", "resource"]);
        assert!(matches!(other.resource(), Some(ResourceField::Other(Slot::Str(r))) if r == "r"));
        assert_eq!(other.resource_object(), None);
        assert_eq!(
            other.digest(),
            Some(&Slot::Json(Box::new(serde_json::json!({}))))
        );
        assert_eq!(
            other.json_values().collect::<Vec<_>>(),
            [&serde_json::json!({})]
        );
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value() {
        let bytes = br#"[{"type":"image","uri":"a","_meta":{"type":1},"uri":"b","_meta":["type"],
            "resource":{"uri":"c"},"resource":{"name":"d"}}]"#;
        let blocks = blocks(bytes);
        let [BlockView::Object(object)] = &blocks[..] else {
            panic!("an object")
        };
        assert_eq!(object.uri().and_then(Slot::as_str), Some("b"));
        assert_eq!(
            object.nested(),
            [(Cow::Borrowed("_meta"), serde_json::json!(["type"]))]
        );
        // A last value no reader looks in drops the one before it, as a `Value` keeps the last.
        let bytes = br#"[{"type":"image","_meta":{"type":1},"_meta":{"a":1}}]"#;
        let Some(ContentView::Blocks(again)) = ResultView::parse(bytes).unwrap().content else {
            panic!("a content array")
        };
        let [BlockView::Object(dropped)] = &again[..] else {
            panic!("an object")
        };
        assert!(dropped.nested().is_empty());
        let inner = object.resource_object().unwrap();
        assert_eq!(held(inner), ["name"]);
        // A clone holds what the object holds.
        assert_eq!(&object.clone(), object);
        assert_eq!(format!("{object:?}"), format!("{:?}", object.clone()));
    }

    /// Another field's value is kept exactly when a reader may use it, read from bytes as from
    /// a `Value`, however its strings are spelt; one dropped still fails where a `Value` fails.
    /// Annotations for the user alone are kept as a flag, not a value (decision 0155).
    #[rstest::rstest]
    #[case::priority(r#"{"priority":0.5}"#, "annotations", false, false)]
    #[case::audience(r#"{"audience":["user"],"priority":0.5}"#, "annotations", false, true)]
    #[case::audience_both(r#"{"audience":["user","assistant"]}"#, "annotations", false, false)]
    #[case::audience_none(r#"{"audience":[]}"#, "annotations", false, false)]
    #[case::audience_twice(
        r#"{"audience":["user"],"audience":["assistant"]}"#,
        "annotations",
        false,
        false
    )]
    #[case::audience_twice_user_last(
        r#"{"audience":["assistant"],"audience":["user"]}"#,
        "annotations",
        false,
        true
    )]
    #[case::audience_not_a_list(r#"{"audience":"user"}"#, "annotations", false, false)]
    #[case::audience_other_role(r#"{"audience":["user",1]}"#, "annotations", false, false)]
    #[case::audience_elsewhere(r#"{"audience":["user"]}"#, "_meta", false, false)]
    #[case::audience_escaped(r#"{"audi\u0065nce":["\u0075ser"]}"#, "annotations", false, true)]
    #[case::audience_and_a_block(
        r#"{"audience":["user"],"x":[{"type":"resource_link","uri":"u"}]}"#,
        "annotations",
        true,
        true
    )]
    #[case::a_block(r#"[{"type":"resource_link","uri":"u"}]"#, "_meta", true, false)]
    #[case::type_escaped(r#"{"k":{"typ\u0065":1}}"#, "_meta", true, false)]
    #[case::type_as_a_value(r#"["type"]"#, "x", true, false)]
    #[case::other_escapes(r#"{"k":"a\nb"}"#, "x", false, false)]
    #[case::typed_but_longer(r#"{"types":"typed"}"#, "x", false, false)]
    #[case::overridden(r#"{"a":"type","a":1}"#, "x", false, false)]
    fn another_fields_value_is_kept_when_a_reader_may_use_it(
        #[case] value: &str,
        #[case] key: &str,
        #[case] kept: bool,
        #[case] user_alone: bool,
    ) {
        let block = format!(r#"{{"type":"image","data":"AAAA","{key}":{value}}}"#);
        let bytes = format!("[{block}]");
        let from_bytes = blocks(bytes.as_bytes());
        let whole: Value = serde_json::from_str(&block).unwrap();
        let from_value = BlockView::of_value(&whole);
        for view in [&from_bytes[0], &from_value] {
            let BlockView::Object(object) = view else {
                panic!("an object")
            };
            assert_eq!(object.nested().len(), usize::from(kept), "{block}");
            if kept {
                assert_eq!(object.nested()[0].1, whole[key], "{block}");
            }
            assert_eq!(object.for_the_user_alone(), user_alone, "{block}");
        }
        assert_eq!(from_bytes[0], from_value, "{block}");
    }

    /// A block's repeated `annotations` key keeps its last value, as a `Value` does: the flag
    /// for the user alone is the last one's, and a text block flagged is no plain text.
    #[rstest::rstest]
    #[case::user_last(r#"{"priority":1},"annotations":{"audience":["user"]}"#, true)]
    #[case::user_first(r#"{"audience":["user"]},"annotations":{"priority":1}"#, false)]
    fn repeated_annotations_keep_the_last_ones_flag(#[case] both: &str, #[case] user: bool) {
        let bytes = format!(r#"[{{"type":"text","text":"t","annotations":{both}}}]"#);
        match &blocks(bytes.as_bytes())[0] {
            BlockView::Object(object) => {
                assert!(user);
                assert!(object.for_the_user_alone());
            }
            BlockView::Text(_) => assert!(!user),
            BlockView::Other(_) => panic!("an object or a text"),
        }
    }

    #[rstest::rstest]
    #[case::out_of_range(r#"[{"type":"text","text":"t","annotations":{"priority":1e999}}]"#)]
    #[case::lone_surrogate(r#"[{"type":"text","text":"t","_meta":{"k":"\udfff"}}]"#)]
    #[case::lone_surrogate_in_a_string(r#"[{"type":"text","text":"t","x":"\ud800"}]"#)]
    #[case::big_number(r#"[{"type":"text","text":"t","x":-1e400}]"#)]
    fn a_value_dropped_unread_still_fails_where_a_value_fails(#[case] bytes: &str) {
        assert!(serde_json::from_str::<Value>(bytes).is_err());
        assert!(ResultView::parse(bytes.as_bytes()).is_err(), "{bytes}");
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

    /// An element of a content array as JSON text, from a draw: texts with escapes and with
    /// `},{` inside, resources, links, images, scalars, arrays, and objects nesting deep.
    fn element(kind: u8, n: usize) -> String {
        match kind % 10 {
            0 => format!(r#"{{"type":"text","text":"row {n} \" }},{{ \u00e9"}}"#),
            1 => format!(
                r#"{{"type": "resource", "resource": {{"uri": "https://h.example/r/{n}?sig=s{n}", "text": "t{n}"}}}}"#
            ),
            2 => format!(
                r#"{{"type":"resource_link","uri":"https://h.example/l/{n}","name":"f{n}.csv","annotations":{{"audience":["user"]}}}}"#
            ),
            3 => r#"{"type":"image","data":"aGk=","mimeType":"image/png"}"#.to_owned(),
            4 => n.to_string(),
            5 => format!("[{n}, {{\"a\": [1, 2]}}]"),
            6 => format!(r#""a string {n} }},{{""#),
            7 => {
                let depth = 120 + n % 10;
                format!("{}{}", "[".repeat(depth), "]".repeat(depth))
            }
            8 => format!(r#"{{"type":"text","text":"{n}","_meta":{{"k":{{"j":[{{}},{{}}]}}}}}}"#),
            _ => format!(r#"{{"type" : "text" , "text" : "x{n}"}}"#),
        }
    }

    /// The view a split read gives, when it gives one, is the whole parse's; where the whole
    /// parse fails, the split read gives none.
    fn assert_split_reads_as_whole(bytes: &[u8]) -> usize {
        let whole = ResultView::parse(bytes);
        let mut taken = 0;
        for near in (0..64).map(|k| bytes.len() * k / 64) {
            let read = split_read(bytes, near);
            if let Some(read) = &read {
                taken += 1;
                match &whole {
                    Ok(whole) => assert!(
                        read == whole,
                        "near {near}: {}",
                        String::from_utf8_lossy(bytes)
                    ),
                    Err(error) => panic!("near {near}: read where the whole fails ({error})"),
                }
            }
        }
        taken
    }

    #[test]
    fn a_split_read_reads_a_content_array_as_the_whole_parse() {
        let elements: Vec<String> = (0..400)
            .map(|n| element([0, 1, 2, 3, 9][n % 5], n))
            .collect();
        for (open, close) in [
            ("{\"content\":[", "]}"),
            (" { \"content\" : [ ", " ] , \"isError\" : true } \n"),
            ("{\"content\":[", "],\"isError\":false}"),
        ] {
            let bytes = format!("{open}{}{close}", elements.join(","));
            assert!(
                assert_split_reads_as_whole(bytes.as_bytes()) >= 32,
                "{open}"
            );
        }
        // The split read is the one `ResultView::parse` takes for a large result.
        let many: Vec<String> = (0..40_000).map(|n| element(n as u8 % 3, n)).collect();
        let bytes = format!("{{\"content\":[{}]}}", many.join(","));
        assert!(bytes.len() >= SPLIT_BYTES);
        assert!(split::parse(bytes.as_bytes(), bytes.len() / 2).is_some());
        let view = ResultView::parse(bytes.as_bytes()).expect("it reads");
        let mut whole = serde_json::Deserializer::from_slice(bytes.as_bytes());
        let read = whole.deserialize_any(ResultVisitor).expect("it reads");
        assert!(read.map(|r| r.content) == Some(view.content));
    }

    #[test]
    fn a_split_read_gives_way_where_the_whole_parse_reads_otherwise() {
        let ok = element(0, 1);
        for bytes in [
            // Another key, a duplicate content, a block's own type, trailing bytes.
            format!(r#"{{"content":[{ok},{ok},{ok}],"structuredContent":{{}}}}"#),
            format!(r#"{{"content":[{ok},{ok},{ok}],"content":[]}}"#),
            format!(r#"{{"content":[{ok},{ok},{ok}],"type":"text"}}"#),
            format!(r#"{{"content":[{ok},{ok},{ok}]}} x"#),
            format!(r#"{{"content":[{ok},{ok},{ok}],"isError":tru}}"#),
            // A trailing comma, an element that does not read, nesting too deep.
            format!(r#"{{"content":[{ok},{ok},{ok},]}}"#),
            format!(r#"{{"content":[{ok},{ok},{{"type":"text","text":"\ud800"}},{ok}]}}"#),
            format!(r#"{{"content":[{ok},{ok},{},{ok}]}}"#, element(7, 6)),
            format!(r#"{{"content":[{ok},{ok},{},{ok}]}}"#, element(7, 5)),
            format!(r#"{{"content":[{ok},{ok},{},{ok}]}}"#, element(7, 8)),
        ] {
            let taken = assert_split_reads_as_whole(bytes.as_bytes());
            assert!(
                taken == 0 || ResultView::parse(bytes.as_bytes()).is_ok(),
                "{bytes}"
            );
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn a_split_read_is_the_whole_parse(
            kinds in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..60),
            spaces in proptest::collection::vec(0..3usize, 4),
            error in 0..4u8,
        ) {
            let white = |at: usize| [" ", "", "\n\t "][spaces[at]];
            let items: Vec<String> = kinds.iter().enumerate().map(|(n, &k)| element(k, n)).collect();
            let tail = match error {
                0 => String::new(),
                1 => format!(",{}\"isError\":{}true", white(2), white(3)),
                2 => ",\"isError\":false".to_owned(),
                _ => ",\"isError\":1".to_owned(),
            };
            let bytes = format!(
                "{}{{\"content\":{}[{}]{tail}}}{}",
                white(0),
                white(1),
                items.join(&format!(",{}", white(2))),
                white(3),
            );
            assert_split_reads_as_whole(bytes.as_bytes());
        }
    }
}
