//! The uris of a result, over values and classify's byte views, and the `never` marks read on
//! the way.

use mcpl_classify::{BlockView, ObjectView, Slot, SourceBytes, classify, raw_members, raw_str};
use serde_json::Value;
use serde_json::value::RawValue;

/// The block types that make an object at any depth of a result a content block.
pub const CONTENT_BLOCK_TYPES: &[&str] = &["text", "image", "audio", "resource", "resource_link"];

/// Whether a value is a content block: an object whose `type` is one of
/// [`CONTENT_BLOCK_TYPES`]. Other objects in a result's data are data.
pub fn is_content_block(value: &Value) -> bool {
    value
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| CONTENT_BLOCK_TYPES.contains(&t))
}

/// Whether a member of an object read as raw JSON, its `key` and its `value`, makes the object
/// a content block, as [`is_content_block`] reads the same object parsed: `type` naming one of
/// [`CONTENT_BLOCK_TYPES`].
pub fn names_a_block(key: &str, value: &RawValue) -> bool {
    key == "type" && raw_str(value).is_some_and(|t| CONTENT_BLOCK_TYPES.contains(&&*t))
}

/// What a result's uris are read from: values, and the elements of a content array read from
/// bytes (each as the element of an array, where a `never` counts).
#[derive(Debug)]
pub struct Scope<'v> {
    /// Values a result is read from (whole results, blocks or messages).
    pub values: Vec<&'v Value>,
    /// Content-array elements read from bytes.
    pub views: &'v [BlockView<'v>],
    /// Data kept as raw JSON (structured content read from bytes).
    pub raw: Vec<&'v RawValue>,
    /// The bytes the views were read from, when they were (empty otherwise): a result's uris
    /// spelled in them are borrowed rather than copied (decision 0164).
    pub source: SourceBytes<'v>,
}

/// [`walk`] on an object read from bytes: the same uris and `never` marks, from the fields it
/// kept (a string in any other field holds no block).
pub(crate) fn walk_view<'v, F: Found<'v> + ?Sized>(
    object: &'v ObjectView<'v>,
    claims_count: bool,
    found: &mut F,
) {
    let kind = object.kind().and_then(Slot::as_str);
    let block = kind.is_some_and(|t| CONTENT_BLOCK_TYPES.contains(&t));
    let inner = object.resource_object();
    if block {
        let inner_uri = inner.and_then(ObjectView::uri).and_then(Slot::as_str);
        let inner_disposition = inner.is_some_and(|inner| inner.disposition().is_some());
        if claims_count
            && (object.disposition().is_some() || inner_disposition)
            && let Some(never_uri) = object.classify().never_uri()
        {
            found.never(never_uri);
        }
        for uri in [object.uri().and_then(Slot::as_str), inner_uri]
            .into_iter()
            .flatten()
        {
            found.uri(uri);
        }
    }
    let inner_claims = claims_count && !block;
    for value in object.json_values() {
        walk(value, inner_claims, found);
    }
    if let Some(inner) = inner {
        walk_view(inner, inner_claims, found);
    }
}

/// Every uri a content block in `value` carries, at any depth: a reference's, an embedded
/// resource's, or one beside inline data. These are the uris no lane shows by default.
pub fn block_uris(value: &Value) -> Vec<String> {
    let mut found = Listed::default();
    walk(value, true, &mut found);
    found.uris.into_iter().map(str::to_owned).collect()
}

/// What a walk finds, each as it meets it: the uri a block claiming a disposition marks
/// `never`, and every block's uri.
pub(crate) trait Found<'v> {
    /// A uri a block marks `never`.
    fn never(&mut self, uri: &'v str);
    /// A block's uri.
    fn uri(&mut self, uri: &'v str);
}

/// Both, listed in the order met.
#[derive(Debug, Default)]
pub(crate) struct Listed<'v> {
    pub(crate) never: Vec<&'v str>,
    pub(crate) uris: Vec<&'v str>,
}

impl<'v> Found<'v> for Listed<'v> {
    fn never(&mut self, uri: &'v str) {
        self.never.push(uri);
    }

    fn uri(&mut self, uri: &'v str) {
        self.uris.push(uri);
    }
}

/// The `never` marks alone, listed in the order met.
#[derive(Debug, Default)]
pub(crate) struct NeverMarks<'v>(pub(crate) Vec<&'v str>);

impl<'v> Found<'v> for NeverMarks<'v> {
    fn never(&mut self, uri: &'v str) {
        self.0.push(uri);
    }

    fn uri(&mut self, _: &'v str) {}
}

/// Each block's uri alone, given to a function as it is met.
pub(crate) struct EachUri<G>(pub(crate) G);

impl<'v, G: FnMut(&'v str)> Found<'v> for EachUri<G> {
    fn never(&mut self, _: &'v str) {}

    fn uri(&mut self, uri: &'v str) {
        (self.0)(uri);
    }
}

/// [`walk`] on each element of a content array read from bytes (a plain text block holds no
/// uri and no claim).
pub(crate) fn walk_views<'v, F: Found<'v> + ?Sized>(views: &'v [BlockView<'v>], found: &mut F) {
    for view in views {
        match view {
            BlockView::Text(_) => {}
            BlockView::Object(object) => walk_view(object, true, found),
            BlockView::Other(value) => walk(value, true, found),
        }
    }
}

/// [`walk`] on a whole scope, in the order its uris are read: its values, then raw data's
/// `never` marks and uris (walked before, into `raw`), then its blocks.
pub(crate) fn walk_scope<'v, F: Found<'v> + ?Sized>(
    scope: &Scope<'v>,
    raw: &'v RawFound,
    found: &mut F,
) {
    for value in &scope.values {
        walk(value, true, found);
    }
    raw.never.iter().for_each(|uri| found.never(uri));
    raw.uris.iter().for_each(|uri| found.uri(uri));
    walk_views(scope.views, found);
}

/// What [`walk_raw`] finds in a scope's raw data, owned.
#[derive(Debug, Default)]
pub(crate) struct RawFound {
    pub(crate) never: Vec<String>,
    pub(crate) uris: Vec<String>,
}

pub(crate) fn walk<'v, F: Found<'v> + ?Sized>(value: &'v Value, claims_count: bool, found: &mut F) {
    match value {
        Value::Object(object) => {
            // One pass over the fields: lookups by key hash each key, and this runs on every
            // object of every result.
            let (mut kind, mut disposition, mut uri, mut resource) = (None, false, None, None);
            for (key, field) in object {
                match key.as_str() {
                    "type" => kind = field.as_str(),
                    "disposition" => disposition = true,
                    "uri" => uri = field.as_str(),
                    "resource" => resource = field.as_object(),
                    _ => {}
                }
            }
            let block = kind.is_some_and(|t| CONTENT_BLOCK_TYPES.contains(&t));
            if block {
                let (mut inner_uri, mut inner_disposition) = (None, false);
                for (key, field) in resource.into_iter().flatten() {
                    match key.as_str() {
                        "uri" => inner_uri = field.as_str(),
                        "disposition" => inner_disposition = true,
                        _ => {}
                    }
                }
                // Only a block that claims a disposition can mark a uri `never`; classify just
                // those.
                if claims_count
                    && (disposition || inner_disposition)
                    && let Some(never_uri) = classify(value).never_uri()
                {
                    found.never(never_uri);
                }
                for uri in [uri, inner_uri].into_iter().flatten() {
                    found.uri(uri);
                }
            }
            // Inside a block, claims no longer count; uris are still collected.
            let inner_claims = claims_count && !block;
            object.values().for_each(|v| walk(v, inner_claims, found));
        }
        Value::Array(items) => items.iter().for_each(|v| walk(v, claims_count, found)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

/// [`walk`] on raw JSON, one member at a time: the same uris and `never` marks, owned. An object
/// with a member `type` that names a block type is parsed and walked as a `Value`, so a block is
/// read exactly as [`walk`] reads it; other objects and arrays are never held whole.
pub(crate) fn walk_raw(
    raw: &RawValue,
    claims_count: bool,
    never: &mut Vec<String>,
    uris: &mut Vec<String>,
) {
    let (never_before, uris_before) = (never.len(), uris.len());
    let mut block = false;
    // Checked when read, so the walk cannot fail; a failure walks the parsed value below.
    let walked = raw_members(raw, &mut |key, value| {
        if block {
            return;
        }
        block = key.is_some_and(|key| names_a_block(&key, value));
        if !block {
            walk_raw(value, claims_count, never, uris);
        }
    });
    if block || walked.is_err() {
        never.truncate(never_before);
        uris.truncate(uris_before);
        let Ok(value) = serde_json::from_str::<Value>(raw.get()) else {
            return;
        };
        let mut found = Listed::default();
        walk(&value, claims_count, &mut found);
        never.extend(found.never.into_iter().map(str::to_owned));
        uris.extend(found.uris.into_iter().map(str::to_owned));
    }
}
