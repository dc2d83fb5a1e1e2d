//! A response's `result` as the server wrote it.
//!
//! A response line that is strict JSON keeps its `result` as the server's JSON text: a tool
//! result is then read once, from those bytes, by the session's one reader, and no `Value` tree
//! is built for it (issue 31). Any other line (one a repair makes JSON: bytes that are not
//! UTF-8, say; or one with an `error` or a `method` field, or a repeated field) is read
//! leniently into a `Value`, as before.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

/// The top-level fields of a result that hold its content: [`Reply::head`] leaves their values
/// out.
const BULK_FIELDS: [&str; 2] = ["content", "structuredContent"];

/// A response's `result`.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Strict JSON, as the server wrote it.
    Json(ResultText),
    /// A result read leniently into a value (see the module's documentation).
    Value(Value),
}

/// A result's JSON text as the server wrote it, kept in the message it came in, so a long
/// result is not copied out of its line.
#[derive(Clone)]
pub struct ResultText {
    message: Vec<u8>,
    start: usize,
    end: usize,
}

/// Two results are equal when their JSON texts are, whatever lines they came in.
impl PartialEq for ResultText {
    fn eq(&self, other: &ResultText) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for ResultText {}

impl fmt::Debug for ResultText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResultText")
            .field("bytes", &self.bytes().len())
            .finish_non_exhaustive()
    }
}

impl ResultText {
    /// The result at `start..end` of `message`, which the caller read there as one JSON
    /// value: the message is kept, not copied. `None` when the range is not in the message.
    pub(crate) fn new(message: Vec<u8>, start: usize, end: usize) -> Option<ResultText> {
        (start <= end && end <= message.len()).then_some(ResultText {
            message,
            start,
            end,
        })
    }

    /// The result's JSON text: valid JSON in UTF-8 (a lone surrogate escape may be in it).
    pub fn bytes(&self) -> &[u8] {
        self.message.get(self.start..self.end).unwrap_or_default()
    }
}

impl Reply {
    /// The result as a value. Strict JSON is read leniently all the same, so a lone surrogate
    /// escape (which a strict reader lets through unread) reads as U+FFFD.
    pub fn into_value(self) -> Value {
        match self {
            Reply::Value(value) => value,
            // The bytes were read as JSON once, so this read finds JSON; `Null` is never met.
            Reply::Json(text) => mcpl_classify::parse_json_repaired(text.bytes())
                .map_or(Value::Null, |(value, _)| value),
        }
    }

    /// The result's JSON text, when it was kept as the server wrote it.
    pub fn json_bytes(&self) -> Option<&[u8]> {
        match self {
            Reply::Json(text) => Some(text.bytes()),
            Reply::Value(_) => None,
        }
    }

    /// What a call's state is read from (a task, a request for input): a result read into a
    /// value is itself; strict JSON gives its top-level fields, with `content` and
    /// `structuredContent` standing as `null` when present, so the content is neither built
    /// nor copied. A result that is no object is itself.
    pub fn head(&self) -> Cow<'_, Value> {
        match self {
            Reply::Value(value) => Cow::Borrowed(value),
            Reply::Json(text) => {
                let mut deserializer = serde_json::Deserializer::from_slice(text.bytes());
                Cow::Owned(match Head::deserialize(&mut deserializer) {
                    Ok(Head(Value::Null)) | Err(_) => self.clone().into_value(),
                    Ok(Head(head)) => head,
                })
            }
        }
    }
}

/// An object's fields but the bulk ones' values; `Null` for anything that is no object.
struct Head(Value);

impl<'de> Deserialize<'de> for Head {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Head, D::Error> {
        deserializer.deserialize_any(HeadVisitor)
    }
}

struct HeadVisitor;

impl<'de> Visitor<'de> for HeadVisitor {
    type Value = Head;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a result")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Head, A::Error> {
        let mut fields = Map::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let value = if BULK_FIELDS.contains(&key.as_ref()) {
                map.next_value::<IgnoredAny>()?;
                Value::Null
            } else {
                map.next_value::<Value>()?
            };
            // A repeated key keeps its last value, as a `Value` does.
            fields.insert(key.into_owned(), value);
        }
        Ok(Head(Value::Object(fields)))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Head, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Head(Value::Null))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Head, E> {
        Ok(Head(Value::Null))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Head, E> {
        Ok(Head(Value::Null))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Head, E> {
        Ok(Head(Value::Null))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Head, E> {
        Ok(Head(Value::Null))
    }
    fn visit_str<E>(self, _: &str) -> Result<Head, E> {
        Ok(Head(Value::Null))
    }
    fn visit_unit<E>(self) -> Result<Head, E> {
        Ok(Head(Value::Null))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use serde_json::value::RawValue;

    fn json(text: &str) -> Reply {
        let message = format!(r#"{{"result":{text}}}"#).into_bytes();
        let raw = serde_json::from_slice::<Wrapped<'_>>(&message)
            .expect("JSON")
            .result;
        assert_eq!(raw.get(), text);
        let start = message.len() - 1 - text.len();
        let end = message.len() - 1;
        Reply::Json(ResultText::new(message.clone(), start, end).expect("in the message"))
    }

    #[derive(serde::Deserialize)]
    struct Wrapped<'a> {
        #[serde(borrow)]
        result: &'a RawValue,
    }

    #[test]
    fn the_head_keeps_every_field_but_the_bulk_ones_values() {
        let reply = json(
            r#"{"content":[{"type":"text","text":"x"}],"task":{"taskId":"t"},"isError":true}"#,
        );
        assert_eq!(
            reply.head().into_owned(),
            json!({"content": null, "task": {"taskId": "t"}, "isError": true})
        );
        assert_eq!(
            reply.into_value(),
            json!({"content": [{"type": "text", "text": "x"}], "task": {"taskId": "t"}, "isError": true})
        );
    }

    #[test]
    fn results_are_equal_by_their_text_whatever_line_they_came_in() {
        let line = br#"{"id":1,"result":[1]}"#.to_vec();
        let alone = ResultText::new(b"[1]".to_vec(), 0, 3);
        assert_eq!(ResultText::new(line, 17, 20), alone);
        assert_ne!(ResultText::new(b"[2]".to_vec(), 0, 3), alone);
    }

    #[test]
    fn a_result_that_is_no_object_is_its_own_head() {
        assert_eq!(json("[1,2]").head().into_owned(), json!([1, 2]));
        assert_eq!(json("7").head().into_owned(), json!(7));
    }

    #[test]
    fn a_lone_surrogate_reads_as_a_replacement_character() {
        assert_eq!(json(r#""a\ud800b""#).into_value(), json!("a\u{FFFD}b"));
    }
}
