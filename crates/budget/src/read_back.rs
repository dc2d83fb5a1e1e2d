//! Reading a spill back: the next part of a spill's text within a token budget, each attachment
//! the part reaches as a content block of its own, for the host's `read_result` tool.
//!
//! The part is returned as MCP content blocks (the spill text in order, an image block after
//! its attachment line, a footer saying where the next part starts), so the host passes it
//! through the lanes and the fitting every tool result goes through.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_classify::Media;
use serde_json::{Value, json};

use crate::route::Pricer;
use crate::spill::{Manifest, ManifestAttachment, SpillError, SpillId, SpillStore, is_spill_name};

/// The most bytes of a spill text, or of one attachment, read back.
pub const READ_BACK_LIMIT: u64 = 256 * 1024 * 1024;
/// The most bytes of a manifest read back.
const MANIFEST_LIMIT: u64 = 4 * 1024 * 1024;
/// How many bytes one token may stand for at most, to bound the search for a part's end.
const MAX_BYTES_PER_TOKEN: u64 = 64;

/// Why a spill could not be read back, in the words the model reads.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadBackError {
    /// The id does not have a spill id's shape.
    #[error("read_result: {0:?} is not a spill id (an id is spill_ and 28 letters)")]
    BadId(String),
    /// No spill has the id in this store.
    #[error("read_result: there is no spill {0} (it was never written, or it has expired)")]
    NotFound(SpillId),
    /// The spill was made in another conversation.
    #[error("read_result: spill {0} was made in another conversation; it cannot be read here")]
    OtherConversation(SpillId),
    /// The offset is past the spill text's end.
    #[error("read_result: offset {offset} is past the end of spill {id} ({total} bytes)")]
    PastEnd {
        /// The spill.
        id: SpillId,
        /// The offset asked for.
        offset: u64,
        /// The spill text's length in bytes.
        total: u64,
    },
    /// The store failed.
    #[error("read_result: spill {id} could not be read: {error}")]
    Store {
        /// The spill.
        id: SpillId,
        /// What the store said.
        error: SpillError,
    },
    /// The spill's files do not agree with its manifest.
    #[error("read_result: spill {id} is damaged: {why}")]
    Damaged {
        /// The spill.
        id: SpillId,
        /// What does not agree.
        why: String,
    },
}

/// One part of a spill, read back.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReadBack {
    /// The part as MCP content blocks: text, image blocks after their attachment lines, and the
    /// footer last.
    pub content: Vec<Value>,
    /// The part of the spill text, exactly as it is in the spill.
    pub text: String,
    /// Where the part starts in the spill text, in bytes.
    pub start: u64,
    /// Where it ends: the next part's offset.
    pub end: u64,
    /// The spill text's length in bytes.
    pub total: u64,
}

/// The footer closing a part: where the next one starts, or that this was the last.
pub fn read_back_footer(id: &SpillId, start: u64, end: u64, total: u64) -> String {
    if end < total {
        format!(
            "[read_result: bytes {start}–{end} of {total}; continue with read_result(\"{id}\", offset={end})]"
        )
    } else {
        format!("[read_result: bytes {start}–{end} of {total}; that is the end of {id}]")
    }
}

/// Reads the part of spill `id` starting at byte `offset` (moved back to a character
/// boundary) that fits `max_tokens` with its footer. The spill must have been made in the
/// store's conversation. An image attachment the part reaches is read and sent as an image
/// block after its line when the route can price it and the budget holds it; otherwise its line
/// alone stands for it.
pub fn read_back(
    store: &mut dyn SpillStore,
    id: &str,
    offset: u64,
    max_tokens: u64,
    pricer: Pricer<'_>,
) -> Result<ReadBack, ReadBackError> {
    let id = SpillId::parse(id).ok_or_else(|| ReadBackError::BadId(id.to_owned()))?;
    let store_error = |error: SpillError| {
        if error.is_not_found() {
            ReadBackError::NotFound(id.clone())
        } else {
            ReadBackError::Store {
                id: id.clone(),
                error,
            }
        }
    };
    let damaged = |why: String| ReadBackError::Damaged {
        id: id.clone(),
        why,
    };
    let manifest = store
        .get(&id.manifest_name(), MANIFEST_LIMIT)
        .map_err(store_error)?;
    let manifest: Manifest =
        serde_json::from_slice(&manifest).map_err(|e| damaged(format!("its manifest: {e}")))?;
    if manifest.conversation != store.conversation() {
        return Err(ReadBackError::OtherConversation(id));
    }
    if !is_spill_name(&manifest.text) {
        return Err(damaged(format!("its text is named {:?}", manifest.text)));
    }
    let text = store
        .get(&manifest.text, READ_BACK_LIMIT)
        .map_err(store_error)?;
    let text = String::from_utf8(text).map_err(|_| damaged("its text is not UTF-8".to_owned()))?;
    let total = text.len() as u64;
    if total != manifest.bytes {
        return Err(damaged(format!(
            "its text is {total} bytes, its manifest says {}",
            manifest.bytes
        )));
    }
    if offset > total {
        return Err(ReadBackError::PastEnd { id, offset, total });
    }
    let start = text.floor_char_boundary(offset as usize);
    let lines = attachment_lines(&text, &manifest.attachments);
    let reserve = pricer
        .text
        .count(&read_back_footer(&id, total, total, total + 1))
        + pricer.text.count("\n");
    let mut left = max_tokens.saturating_sub(reserve);
    let mut content = Vec::new();
    let mut piece = String::new();
    let mut cursor = start;
    while cursor < text.len() {
        let next = lines.iter().find(|(at, _)| *at >= cursor);
        let segment_end = next.map_or(text.len(), |(at, _)| *at);
        if cursor < segment_end {
            let end = longest_within(&text, cursor, segment_end, left, pricer);
            if end == cursor {
                break;
            }
            left = left.saturating_sub(pricer.text.count(&text[cursor..end]));
            piece.push_str(&text[cursor..end]);
            cursor = end;
            if end < segment_end {
                break;
            }
            continue;
        }
        let Some((at, attachment)) = next else {
            break;
        };
        let line_end = at + attachment.line.len();
        let line_price = pricer.text.count(&attachment.line);
        let image = image_block(store, attachment, pricer);
        let image_price = image.as_ref().map_or(0, |(_, price)| *price);
        if line_price + image_price <= left {
            left -= line_price + image_price;
            piece.push_str(&attachment.line);
            if let Some((block, _)) = image {
                content.push(json!({"type": "text", "text": std::mem::take(&mut piece)}));
                content.push(block);
            }
        } else if cursor == start {
            // A part always moves on: a line over the budget goes alone, without its image.
            left = left.saturating_sub(line_price);
            piece.push_str(&attachment.line);
        } else {
            break;
        }
        cursor = line_end;
    }
    if !piece.is_empty() {
        content.push(json!({"type": "text", "text": piece}));
    }
    let (start, end) = (start as u64, cursor as u64);
    content.push(json!({"type": "text", "text": read_back_footer(&id, start, end, total)}));
    Ok(ReadBack {
        content,
        text: text[start as usize..end as usize].to_owned(),
        start,
        end,
        total,
    })
}

/// Where each attachment's line is in the text, in order; a line not found is left out.
fn attachment_lines<'m>(
    text: &str,
    attachments: &'m [ManifestAttachment],
) -> Vec<(usize, &'m ManifestAttachment)> {
    let mut found = Vec::with_capacity(attachments.len());
    let mut from = 0;
    for attachment in attachments {
        if attachment.line.is_empty() {
            continue;
        }
        if let Some(at) = text[from..].find(&attachment.line) {
            found.push((from + at, attachment));
            from += at + attachment.line.len();
        }
    }
    found
}

/// An attachment as an image block and its price, when it is an image the route can price.
fn image_block(
    store: &mut dyn SpillStore,
    attachment: &ManifestAttachment,
    pricer: Pricer<'_>,
) -> Option<(Value, u64)> {
    let media_type = attachment.media_type.as_deref()?;
    if !media_type.starts_with("image/") || !is_spill_name(&attachment.name) {
        return None;
    }
    let bytes = store.get(&attachment.name, READ_BACK_LIMIT).ok()?;
    let data = STANDARD.encode(bytes);
    let dimensions = Media::inspect(&data, Some(media_type)).dimensions?;
    let price = pricer.image(dimensions).ok()?;
    Some((
        json!({"type": "image", "data": data, "mimeType": media_type}),
        price,
    ))
}

/// The furthest character boundary `end` in `(from, limit]` such that the text from `from` to
/// `end` costs at most `tokens`; `from` when not even one character fits.
fn longest_within(text: &str, from: usize, limit: usize, tokens: u64, pricer: Pricer<'_>) -> usize {
    let reach = usize::try_from(tokens.saturating_mul(MAX_BYTES_PER_TOKEN)).unwrap_or(usize::MAX);
    let limit = text.floor_char_boundary(limit.min(from.saturating_add(reach)));
    from + pricer.text.prefix_within(&text[from..limit], tokens)
}
