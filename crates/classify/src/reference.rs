//! References: blocks that point at a payload by uri, with their fields read by RFC-005 §8's rules.

use serde_json::Value;

use crate::block::{Field, Fields};

/// The longest uri a reference may carry, in code points. A longer one makes the block invalid.
pub const URI_MAX_CHARS: usize = 4096;
/// The longest `mimeType` or `name`, in code points.
pub const LABEL_MAX_CHARS: usize = 255;
/// The longest `expiresAt`, in code points.
pub const EXPIRES_AT_MAX_CHARS: usize = 64;
/// The largest `sizeBytes`: 2^53 - 1, the largest integer every JSON peer reads exactly.
pub const SIZE_BYTES_MAX: u64 = (1 << 53) - 1;

/// Which wire shape a reference arrived in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReferenceForm {
    /// MCPL's flat `{"type": "resource", "uri": ...}`.
    Resource,
    /// An `image` block with a `uri` and no `data`.
    Image,
    /// An `audio` block with a `uri` and no `data`.
    Audio,
    /// MCP's `resource_link`, read field for field per RFC-005 §8.1 (`size` as `sizeBytes`, no
    /// disposition).
    ResourceLink,
}

/// What a server asks a host to do with a referenced payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// The uri must never be shown to a model, anywhere in the result.
    Never,
    /// The payload may be fetched and shown by reference.
    Ref,
}

/// An optional field that broke its rule and was dropped, the block staying valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DroppedField {
    /// The field's name as it appears on the wire.
    pub field: &'static str,
    /// Which rule it broke.
    pub rule: FieldRule,
}

/// The rule an optional reference field broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldRule {
    /// The value had the wrong JSON type.
    WrongType,
    /// The string was longer than its maximum, counted in code points.
    TooLong,
    /// The number was not an integer in `0..=2^53-1`.
    OutOfRange,
    /// The string did not match its pattern or allowed values.
    Malformed,
}

impl FieldRule {
    /// The rule in a few words.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldRule::WrongType => "wrong type",
            FieldRule::TooLong => "too long",
            FieldRule::OutOfRange => "out of range",
            FieldRule::Malformed => "malformed",
        }
    }
}

/// A reference's testimony: every field is a claim by the server, never a fact.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reference<'a> {
    /// The wire shape it came in.
    pub form: ReferenceForm,
    /// The uri, at most [`URI_MAX_CHARS`] code points. Never shown to a model by default.
    pub uri: &'a str,
    /// The claimed media type, as sent.
    pub mime_type: Option<&'a str>,
    /// The claimed name: a display label only.
    pub name: Option<&'a str>,
    /// The claimed expiry, as sent.
    pub expires_at: Option<&'a str>,
    /// The claimed size in bytes.
    pub size_bytes: Option<u64>,
    /// The claimed digest, `sha256:` and 43 base64url characters.
    pub digest: Option<&'a str>,
    /// The claimed disposition.
    pub disposition: Option<Disposition>,
    /// Fields that broke their rule and were dropped.
    pub dropped: Vec<DroppedField>,
}

/// Why a reference could not be read at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReferenceError {
    /// No uri, or one that is not a non-empty string.
    NoUri,
    /// A uri longer than [`URI_MAX_CHARS`].
    UriTooLong,
}

/// Reads a reference's fields from a block. On failure, also returns the uri a `never` claim in
/// the block marks, since that claim holds however malformed the block is.
pub(crate) fn read_reference<'a>(
    block: impl Into<Fields<'a>>,
    form: ReferenceForm,
) -> Result<Reference<'a>, (ReferenceError, Option<&'a str>)> {
    let block: Fields<'a> = block.into();
    let uri = match block.uri {
        Some(Field::Str(uri)) if !uri.is_empty() => uri,
        _ => return Err((ReferenceError::NoUri, None)),
    };
    let mut dropped = Vec::new();
    let disposition = match form {
        ReferenceForm::ResourceLink => None,
        ReferenceForm::Resource | ReferenceForm::Image | ReferenceForm::Audio => {
            read_disposition(block.disposition, &mut dropped)
        }
    };
    if uri.chars().count() > URI_MAX_CHARS {
        let never = (disposition == Some(Disposition::Never)).then_some(uri);
        return Err((ReferenceError::UriTooLong, never));
    }
    let (size_field, size) = match form {
        ReferenceForm::ResourceLink => ("size", block.size),
        ReferenceForm::Resource | ReferenceForm::Image | ReferenceForm::Audio => {
            ("sizeBytes", block.size_bytes)
        }
    };
    Ok(Reference {
        form,
        uri,
        mime_type: read_string(block.mime_type, "mimeType", LABEL_MAX_CHARS, &mut dropped),
        name: read_string(block.name, "name", LABEL_MAX_CHARS, &mut dropped),
        expires_at: match form {
            ReferenceForm::ResourceLink => None,
            _ => read_string(
                block.expires_at,
                "expiresAt",
                EXPIRES_AT_MAX_CHARS,
                &mut dropped,
            ),
        },
        size_bytes: read_size(size, size_field, &mut dropped),
        digest: match form {
            ReferenceForm::ResourceLink => None,
            _ => read_digest(block.digest, &mut dropped),
        },
        disposition,
        dropped,
    })
}

/// Whether a disposition says `never`, in any case and whatever white space, control or format
/// characters surround or split it: a uri a server meant to hide is hidden however it spelled
/// the word.
pub(crate) fn says_never(disposition: &str) -> bool {
    let mut letters = disposition.chars().filter(|&c| {
        !(c.is_whitespace()
            || c.is_control()
            || matches!(c, '\u{AD}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}'))
    });
    "never".chars().all(|expected| {
        letters
            .next()
            .is_some_and(|c| c.eq_ignore_ascii_case(&expected))
    }) && letters.next().is_none()
}

/// Reads `disposition`: `"never"` (in any case, see [`says_never`]) or exactly `"ref"`, else
/// dropped.
fn read_disposition(
    value: Option<Field<'_>>,
    dropped: &mut Vec<DroppedField>,
) -> Option<Disposition> {
    let rule = match value? {
        Field::Str(s) if says_never(s) => return Some(Disposition::Never),
        Field::Str("ref") => return Some(Disposition::Ref),
        Field::Str(_) => FieldRule::Malformed,
        _ => FieldRule::WrongType,
    };
    dropped.push(DroppedField {
        field: "disposition",
        rule,
    });
    None
}

fn read_string<'a>(
    value: Option<Field<'a>>,
    field: &'static str,
    max_chars: usize,
    dropped: &mut Vec<DroppedField>,
) -> Option<&'a str> {
    let rule = match value? {
        Field::Str(s) if s.chars().count() <= max_chars => return Some(s),
        Field::Str(_) => FieldRule::TooLong,
        _ => FieldRule::WrongType,
    };
    dropped.push(DroppedField { field, rule });
    None
}

fn read_size(
    value: Option<Field<'_>>,
    field: &'static str,
    dropped: &mut Vec<DroppedField>,
) -> Option<u64> {
    let rule = match value? {
        Field::Json(Value::Number(n)) => {
            let whole = n.as_u64().or_else(|| {
                // JSON Schema's `integer` admits 3.0; it does not admit 3.5 or -1.
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= SIZE_BYTES_MAX as f64)
                    .map(|f| f as u64)
            });
            match whole {
                Some(size) if size <= SIZE_BYTES_MAX => return Some(size),
                _ => FieldRule::OutOfRange,
            }
        }
        _ => FieldRule::WrongType,
    };
    dropped.push(DroppedField { field, rule });
    None
}

fn read_digest<'a>(value: Option<Field<'a>>, dropped: &mut Vec<DroppedField>) -> Option<&'a str> {
    let rule = match value? {
        Field::Str(s) if is_sha256_digest(s) => return Some(s),
        Field::Str(_) => FieldRule::Malformed,
        _ => FieldRule::WrongType,
    };
    dropped.push(DroppedField {
        field: "digest",
        rule,
    });
    None
}

/// `^sha256:[A-Za-z0-9_-]{43}$`: a SHA-256 in unpadded base64url.
fn is_sha256_digest(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|hash| {
        hash.len() == 43
            && hash
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(block: Value) -> Reference<'static> {
        let block = Box::leak(Box::new(block));
        read_reference(block.as_object().unwrap(), ReferenceForm::Resource).unwrap()
    }

    #[test]
    fn lengths_are_code_points() {
        let feathers = "🪶".repeat(255);
        let kept = read(json!({"uri": "https://a/b", "name": feathers}));
        assert_eq!(kept.name.map(|n| n.chars().count()), Some(255));
        let dropped = read(json!({"uri": "https://a/b", "name": format!("{feathers}x")}));
        assert_eq!(dropped.name, None);
        assert_eq!(
            dropped.dropped,
            vec![DroppedField {
                field: "name",
                rule: FieldRule::TooLong
            }]
        );
    }

    #[rstest::rstest]
    #[case(json!(0), Some(0))]
    #[case(json!(3.0), Some(3))]
    #[case(json!(SIZE_BYTES_MAX), Some(SIZE_BYTES_MAX))]
    #[case(json!(SIZE_BYTES_MAX + 1), None)]
    #[case(json!(-1), None)]
    #[case(json!(3.5), None)]
    #[case(json!("12"), None)]
    fn sizes_are_whole_and_in_range(#[case] size: Value, #[case] kept: Option<u64>) {
        let r = read(json!({"uri": "u:x", "sizeBytes": size}));
        assert_eq!(r.size_bytes, kept, "{size}");
    }

    #[test]
    fn digests_and_dispositions_follow_their_patterns() {
        let good = format!("sha256:{}", "A".repeat(43));
        let r = read(json!({"uri": "u:x", "digest": good, "disposition": "inline-ok"}));
        assert_eq!(r.digest, Some(good.as_str()));
        assert_eq!(r.disposition, None);
        for never in ["NEVER", " Never\n", "ne\u{200b}ver"] {
            let r = read(json!({"uri": "u:x", "disposition": never}));
            assert_eq!(r.disposition, Some(Disposition::Never), "{never:?}");
        }
        let r = read(json!({"uri": "u:x", "disposition": "nevermore"}));
        assert_eq!(r.disposition, None);
        let r = read(json!({"uri": "u:x", "digest": "sha256:abc", "disposition": "never"}));
        assert_eq!(r.digest, None);
        assert_eq!(r.disposition, Some(Disposition::Never));
    }
}
