//! Reading the one JSON document a command is given, and finding the content blocks in it.

use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

use serde_json::Value;

/// Why an input cannot be used. Each displays as one line saying what and where.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file or standard input could not be read.
    #[error("{source_name}: cannot read: {error}")]
    Read {
        /// Where the input came from.
        source_name: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// Nothing but white space.
    #[error("{source_name}: empty input: expected one JSON document")]
    Empty {
        /// Where the input came from.
        source_name: String,
    },
    /// Nested deeper than the parser allows.
    #[error("{source_name}: JSON nested too deeply: {error}")]
    TooDeep {
        /// Where the input came from.
        source_name: String,
        /// The parser's message, with line and column.
        error: serde_json::Error,
    },
    /// Not JSON, or truncated JSON.
    #[error("{source_name}: not JSON: {error}")]
    NotJson {
        /// Where the input came from.
        source_name: String,
        /// The parser's message, with line and column.
        error: serde_json::Error,
    },
    /// JSON, but no shape this command knows.
    #[error("{source_name}: no content blocks found: {found}")]
    UnknownShape {
        /// Where the input came from.
        source_name: String,
        /// What the document was instead.
        found: String,
    },
}

impl InputError {
    /// Whether the failure is in the input itself (exit 2) rather than in reading it (exit 1).
    pub fn is_unusable_input(&self) -> bool {
        match self {
            InputError::Read { .. } => false,
            InputError::Empty { .. }
            | InputError::TooDeep { .. }
            | InputError::NotJson { .. }
            | InputError::UnknownShape { .. } => true,
        }
    }
}

/// One JSON document as read, with how many lone surrogate escapes had to be replaced.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The parsed document.
    pub value: Value,
    /// Lone UTF-16 surrogate escapes replaced with U+FFFD while reading.
    pub lone_surrogates_replaced: usize,
    /// A fingerprint of the input bytes, for output that must repeat for the same input.
    pub fingerprint: u64,
    /// Where it came from: a path, or `stdin`.
    pub source_name: String,
}

/// Reads a whole file, or standard input for `None` or `-`, and parses it as one JSON document.
pub fn read_document(file: Option<&Path>) -> Result<Document, InputError> {
    let (source_name, bytes) = read_input(file)?;
    parse_document(&source_name, &bytes)
}

/// Reads a whole file, or standard input for `None` or `-`: where it came from, and its bytes.
pub fn read_input(file: Option<&Path>) -> Result<(String, Vec<u8>), InputError> {
    let (source_name, bytes) = match file.filter(|path| path.as_os_str() != "-") {
        Some(path) => {
            let source_name = path.display().to_string();
            match std::fs::read(path) {
                Ok(bytes) => (source_name, bytes),
                Err(error) => return Err(InputError::Read { source_name, error }),
            }
        }
        None => {
            let mut bytes = Vec::new();
            if let Err(error) = std::io::stdin().lock().read_to_end(&mut bytes) {
                return Err(InputError::Read {
                    source_name: "stdin".to_owned(),
                    error,
                });
            }
            ("stdin".to_owned(), bytes)
        }
    };
    Ok((source_name, bytes))
}

/// Parses one JSON document, telling empty, too deep and malformed input apart. Lone UTF-16
/// surrogate escapes, which strict parsers refuse, become U+FFFD and the rest is kept.
pub fn parse_document(source_name: &str, bytes: &[u8]) -> Result<Document, InputError> {
    let source_name = source_name.to_owned();
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(InputError::Empty { source_name });
    }
    match mcpl_classify::parse_json_lenient(bytes) {
        Ok((value, lone_surrogates_replaced)) => Ok(Document {
            value,
            lone_surrogates_replaced,
            fingerprint: fingerprint(bytes),
            source_name,
        }),
        Err(error) if error.to_string().starts_with("recursion limit exceeded") => {
            Err(InputError::TooDeep { source_name, error })
        }
        Err(error) => Err(InputError::NotJson { source_name, error }),
    }
}

/// FNV-1a over the input: stable across runs and platforms, unlike the standard hasher.
pub fn fingerprint(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Finds the content blocks in a document: a content array; an object with `content` (a tool
/// result, a channel message, an injection); a push event's `payload.content`; a JSON-RPC
/// message whose `result` or `params` holds one of those; or a single block.
///
/// An injection's content may be a plain string, which counts as one text block.
pub fn content_blocks(document: &Value) -> Option<Vec<Cow<'_, Value>>> {
    fn borrowed(blocks: &[Value]) -> Vec<Cow<'_, Value>> {
        blocks.iter().map(Cow::Borrowed).collect()
    }
    match document {
        Value::Array(blocks) => Some(borrowed(blocks)),
        Value::Object(object) => {
            if let Some(content) = object.get("content") {
                return match content {
                    Value::Array(blocks) => Some(borrowed(blocks)),
                    Value::String(text) => Some(vec![Cow::Owned(
                        serde_json::json!({"type": "text", "text": text}),
                    )]),
                    _ => None,
                };
            }
            if let Some(payload) = object.get("payload") {
                return content_blocks(payload);
            }
            if object.contains_key("jsonrpc") {
                return object
                    .get("result")
                    .or_else(|| object.get("params"))
                    .and_then(content_blocks);
            }
            if object.get("type").is_some_and(Value::is_string) {
                return Some(vec![Cow::Borrowed(document)]);
            }
            None
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => None,
    }
}

/// Says in a few words what a document is, for an error about its shape.
pub fn describe_shape(document: &Value) -> String {
    match document {
        Value::Null => "the document is null".to_owned(),
        Value::Bool(_) => "the document is a boolean".to_owned(),
        Value::Number(_) => "the document is a number".to_owned(),
        Value::String(_) => "the document is a string".to_owned(),
        Value::Array(_) => "the document is an array".to_owned(),
        Value::Object(object) => {
            let mut keys: Vec<&str> = object.keys().map(String::as_str).take(5).collect();
            if keys.is_empty() {
                "the document is an empty object".to_owned()
            } else {
                keys.sort_unstable();
                format!(
                    "an object with keys {} but no `content`, `payload`, `result`, `params` or `type`",
                    keys.join(", ")
                )
            }
        }
    }
}
