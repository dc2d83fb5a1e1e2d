//! The image ledger: the bytes behind a stored copy's `ref img_<nonce>_<n>` placeholder.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crate::registry::{SplitMix64, random_seed};

/// How many images the ledger keeps at most.
pub const LEDGER_MAX_IMAGES: usize = 64;
/// How many characters of base64 the ledger keeps at most.
pub const LEDGER_MAX_BASE64: usize = 96 * 1024 * 1024;
/// How many refs the ledger remembers having issued, so that an evicted one answers "evicted"
/// rather than "unknown".
pub const LEDGER_REMEMBERED_REFS: usize = 256;

/// What a lookup of an image ref finds. Never other bytes: a ref from another ledger (another
/// process) carries another nonce and is unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageLookup {
    /// The ledger still holds the image.
    Retained {
        /// The media type its bytes say.
        media_type: &'static str,
        /// The base64 data, as the server sent it.
        data: Arc<str>,
    },
    /// The ledger issued the ref but has since dropped the bytes.
    Evicted,
    /// The ledger never issued the ref.
    Unknown,
}

#[derive(Debug)]
struct Entry {
    number: u64,
    media_type: &'static str,
    data: Arc<str>,
    fingerprint: u64,
}

/// A bounded store of recent images, keyed by the refs their placeholders show. The same bytes
/// get the same ref while retained, so a stored copy made twice reads the same.
#[derive(Debug)]
pub struct ImageLedger {
    nonce: String,
    issued: u64,
    entries: VecDeque<Entry>,
    base64_held: usize,
    by_fingerprint: HashMap<u64, Vec<u64>>,
    remembered: VecDeque<u64>,
}

impl Default for ImageLedger {
    fn default() -> Self {
        ImageLedger::new()
    }
}

impl ImageLedger {
    /// An empty ledger with a random nonce.
    pub fn new() -> ImageLedger {
        ImageLedger::with_seed(random_seed())
    }

    /// An empty ledger whose nonce comes from `seed`, for output that must repeat exactly.
    pub fn with_seed(seed: u64) -> ImageLedger {
        ImageLedger {
            nonce: SplitMix64(seed).base36(6),
            issued: 0,
            entries: VecDeque::new(),
            base64_held: 0,
            by_fingerprint: HashMap::new(),
            remembered: VecDeque::new(),
        }
    }

    /// Keeps an image's bytes and returns its ref; bytes already held keep their ref.
    pub fn retain(&mut self, data: &str, media_type: &'static str) -> String {
        let fingerprint = fingerprint(data);
        if let Some(numbers) = self.by_fingerprint.get(&fingerprint) {
            for number in numbers {
                if let Some(entry) = self.entries.iter().find(|e| e.number == *number)
                    && *entry.data == *data
                {
                    return self.image_ref(entry.number);
                }
            }
        }
        self.issued += 1;
        let number = self.issued;
        self.entries.push_back(Entry {
            number,
            media_type,
            data: Arc::from(data),
            fingerprint,
        });
        self.base64_held += data.len();
        self.by_fingerprint
            .entry(fingerprint)
            .or_default()
            .push(number);
        self.remembered.push_back(number);
        while self.remembered.len() > LEDGER_REMEMBERED_REFS.max(4 * LEDGER_MAX_IMAGES) {
            self.remembered.pop_front();
        }
        // Evict the oldest until within bounds, but never the image just retained.
        while self.entries.len() > 1
            && (self.entries.len() > LEDGER_MAX_IMAGES || self.base64_held > LEDGER_MAX_BASE64)
        {
            if let Some(old) = self.entries.pop_front() {
                self.base64_held -= old.data.len();
                if let Some(numbers) = self.by_fingerprint.get_mut(&old.fingerprint) {
                    numbers.retain(|n| *n != old.number);
                    if numbers.is_empty() {
                        self.by_fingerprint.remove(&old.fingerprint);
                    }
                }
            }
        }
        self.image_ref(number)
    }

    /// Keeps a document's bytes and returns its ref, `doc_<nonce>_<n>`: the same store, and
    /// the same bounds, as images.
    pub fn retain_document(&mut self, data: &str, media_type: &'static str) -> String {
        let image_ref = self.retain(data, media_type);
        format!(
            "doc_{}",
            image_ref.strip_prefix("img_").unwrap_or(&image_ref)
        )
    }

    /// What the ledger knows of a ref (`img_...` or `doc_...`).
    pub fn lookup(&self, image_ref: &str) -> ImageLookup {
        let Some(number) = image_ref
            .strip_prefix("img_")
            .or_else(|| image_ref.strip_prefix("doc_"))
            .and_then(|rest| rest.strip_prefix(self.nonce.as_str()))
            .and_then(|rest| rest.strip_prefix('_'))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            return ImageLookup::Unknown;
        };
        if let Some(entry) = self.entries.iter().find(|e| e.number == number) {
            ImageLookup::Retained {
                media_type: entry.media_type,
                data: Arc::clone(&entry.data),
            }
        } else if self.remembered.contains(&number) {
            ImageLookup::Evicted
        } else {
            ImageLookup::Unknown
        }
    }

    fn image_ref(&self, number: u64) -> String {
        format!("img_{}_{number}", self.nonce)
    }
}

/// A cheap fingerprint of a payload: its length and characters sampled every 4 KiB plus both
/// ends. Equal fingerprints are confirmed by comparing the whole payload.
fn fingerprint(data: &str) -> u64 {
    use std::hash::Hasher;
    let bytes = data.as_bytes();
    // The samples are gathered first and hashed in one call: a call per sample costs more than
    // hashing the samples themselves.
    let mut samples = Vec::with_capacity(8 + 512 + 16 * bytes.len().div_ceil(4096));
    samples.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    samples.extend_from_slice(&bytes[..bytes.len().min(256)]);
    samples.extend_from_slice(&bytes[bytes.len().saturating_sub(256)..]);
    for chunk in bytes.chunks(4096) {
        samples.extend_from_slice(&chunk[..chunk.len().min(16)]);
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    hasher.write(&samples);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_bytes_keep_their_ref_and_others_get_a_new_one() {
        let mut ledger = ImageLedger::with_seed(1);
        let a = ledger.retain("AAAA", "image/png");
        assert_eq!(ledger.retain("AAAA", "image/png"), a);
        let b = ledger.retain("BBBB", "image/png");
        assert_ne!(a, b);
        assert!(a.starts_with("img_") && a.ends_with("_1"));
        assert_eq!(
            ledger.lookup(&a),
            ImageLookup::Retained {
                media_type: "image/png",
                data: Arc::from("AAAA")
            }
        );
    }

    #[test]
    fn a_document_ref_names_the_same_store() {
        let mut ledger = ImageLedger::with_seed(4);
        let doc = ledger.retain_document("JVBERi0x", "application/pdf");
        assert!(doc.starts_with("doc_") && doc.ends_with("_1"), "{doc}");
        assert_eq!(
            ledger.lookup(&doc),
            ImageLookup::Retained {
                media_type: "application/pdf",
                data: Arc::from("JVBERi0x")
            }
        );
        assert_eq!(ledger.lookup("doc_x"), ImageLookup::Unknown);
    }

    #[test]
    fn lookups_answer_retained_evicted_or_unknown() {
        let mut ledger = ImageLedger::with_seed(2);
        let first = ledger.retain("first", "image/png");
        for n in 0..LEDGER_MAX_IMAGES {
            ledger.retain(&format!("image {n}"), "image/gif");
        }
        assert_eq!(ledger.lookup(&first), ImageLookup::Evicted);
        let other = ImageLedger::with_seed(3).retain("first", "image/png");
        assert_eq!(ledger.lookup(&other), ImageLookup::Unknown);
        assert_eq!(ledger.lookup("img_x"), ImageLookup::Unknown);
        let last = ledger.retain(&format!("image {}", LEDGER_MAX_IMAGES - 1), "image/gif");
        assert!(matches!(ledger.lookup(&last), ImageLookup::Retained { .. }));
    }
}
