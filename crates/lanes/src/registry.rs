//! The reference registry: one record per uri, bound to every server that delivered it.

use std::collections::VecDeque;
use std::fmt;
use std::hash::BuildHasher as _;

use mcpl_classify::{Disposition, Reference};

use crate::markers;
use mcpl_redact::{HiddenSet, ServerName};

/// How many records the registry keeps before evicting the oldest.
pub const REGISTRY_CAPACITY: usize = 2000;

/// A reference's id, `ref_<base36 counter>_<4 random base36>`; never reused in a process.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RefId(String);

impl RefId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RefId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a server said about a referenced payload: testimony, never fact.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Claims {
    /// The uri. Host-private: no lane shows it by default.
    pub uri: String,
    /// The claimed media type, as sent.
    pub mime_type: Option<String>,
    /// The claimed name, a display label only.
    pub name: Option<String>,
    /// The claimed expiry, as sent.
    pub expires_at: Option<String>,
    /// The claimed size in bytes.
    pub size_bytes: Option<u64>,
    /// The claimed digest.
    pub digest: Option<String>,
    /// The claimed disposition.
    pub disposition: Option<Disposition>,
}

impl Claims {
    fn of(reference: &Reference<'_>) -> Claims {
        Claims {
            uri: reference.uri.to_owned(),
            mime_type: reference.mime_type.map(str::to_owned),
            name: reference.name.map(str::to_owned),
            expires_at: reference.expires_at.map(str::to_owned),
            size_bytes: reference.size_bytes,
            digest: reference.digest.map(str::to_owned),
            disposition: reference.disposition,
        }
    }

    /// Makes these claims `reference`'s, as [`Claims::of`] would, in the strings they hold.
    fn refill(&mut self, reference: &Reference<'_>) {
        refill(&mut self.uri, reference.uri);
        refill_option(&mut self.mime_type, reference.mime_type);
        refill_option(&mut self.name, reference.name);
        refill_option(&mut self.expires_at, reference.expires_at);
        self.size_bytes = reference.size_bytes;
        refill_option(&mut self.digest, reference.digest);
        self.disposition = reference.disposition;
    }
}

/// Makes `held` a copy of `value`, in its own buffer unless that is far larger than `value`
/// needs (a long string once held is not kept alive by the short ones after it).
fn refill(held: &mut String, value: &str) {
    if held.capacity() > 2 * value.len() + 64 {
        *held = value.to_owned();
    } else {
        held.clear();
        held.push_str(value);
    }
}

/// [`refill`] for a claim that may be absent.
fn refill_option(held: &mut Option<String>, value: Option<&str>) {
    match (held.as_mut(), value) {
        (Some(held), Some(value)) => refill(held, value),
        (_, value) => *held = value.map(str::to_owned),
    }
}

/// What the host verified when it fetched a reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// Where the host saved the payload (a path it chose).
    pub path: String,
    /// The payload's size as received and decoded.
    pub bytes: u64,
    /// The saved type: what the bytes said, else the header, else the claim.
    pub mime_type: String,
    /// Whether a claimed digest was checked and matched.
    pub digest_verified: bool,
}

/// One reference the host has seen.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Record {
    /// Its id.
    pub id: RefId,
    /// The latest claims any server gave while it was unfetched; frozen once fetched.
    pub claims: Claims,
    /// Every server that delivered the uri, each once, in the order they did.
    pub servers: Vec<ServerName>,
    /// What the host verified, once fetched.
    pub fetched: Option<Fetched>,
}

/// The answer for an id the registry does not hold: never issued, or evicted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnknownReference(pub String);

impl fmt::Display for UnknownReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&markers::unknown_reference(&self.0))
    }
}

impl std::error::Error for UnknownReference {}

/// The registry: one record per uri, at most [`REGISTRY_CAPACITY`], oldest evicted first.
#[derive(Debug)]
pub struct Registry {
    /// The records held, in the order their ids were issued: the `n`th id issued is at index
    /// `n - 1` less the number evicted, and its counter says `n`, so an id needs no map.
    records: VecDeque<Record>,
    /// The counter of each held record's id, found by the hash of its uri (the uri itself is
    /// read from the record, so a registration copies it once, not twice).
    by_uri: hashbrown::HashTable<u64>,
    hasher: foldhash::fast::RandomState,
    issued: u64,
    capacity: usize,
    random: SplitMix64,
    /// The uris this session has hidden: the registry lives as long as the host and every lane
    /// holds it, so what one lane hides stays hidden in all of them.
    hidden: HiddenSet,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl Registry {
    /// An empty registry whose ids carry random suffixes.
    pub fn new() -> Registry {
        Registry::with_seed(random_seed())
    }

    /// An empty registry whose id suffixes come from `seed`, so that a one-shot command gives
    /// the same ids for the same input. Ids are still never reused within the registry.
    pub fn with_seed(seed: u64) -> Registry {
        Registry {
            records: VecDeque::new(),
            by_uri: hashbrown::HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
            issued: 0,
            capacity: REGISTRY_CAPACITY,
            random: SplitMix64(seed),
            hidden: HiddenSet::new(),
        }
    }

    /// The uris this session has hidden, and which servers' credential-shaped urls are withheld.
    pub fn hidden(&self) -> &HiddenSet {
        &self.hidden
    }

    /// The same, to change: the host turns a server's credential scan off here.
    pub fn hidden_mut(&mut self) -> &mut HiddenSet {
        &mut self.hidden
    }

    /// Registers a reference delivered by `server` and returns its record. A uri already held
    /// keeps its id, gains the server if it is new to it, and, while unfetched, takes the new
    /// claims.
    pub fn register(&mut self, reference: &Reference<'_>, server: &ServerName) -> &Record {
        let (counter, new) = match self.counter_of(reference.uri) {
            Some(counter) => (counter, false),
            None => (self.insert(reference, server), true),
        };
        let index = self.index_of(counter).expect("every uri held has a record");
        let record = &mut self.records[index];
        if !record.servers.contains(server) {
            record.servers.push(server.clone());
        }
        // A new record already holds these claims.
        if record.fetched.is_none() && !new {
            record.claims.refill(reference);
        }
        record
    }

    /// Issues an id for a uri not held, and returns its counter. A full registry evicts its
    /// oldest record first, and the new record is written into the old one's strings: a long
    /// run of new references costs no allocation each.
    fn insert(&mut self, reference: &Reference<'_>, server: &ServerName) -> u64 {
        let mut recycled = None;
        while self.records.len() >= self.capacity.max(1) {
            recycled = self.evict_oldest();
        }
        self.issued += 1;
        let suffix = self.random.next() % 36u64.pow(4);
        let record = match recycled {
            Some(mut record) => {
                record.id.0.clear();
                record.claims.refill(reference);
                // The delivering server is added by the caller, unless it is the one kept.
                let keep = usize::from(record.servers.first() == Some(server));
                record.servers.truncate(keep);
                record.fetched = None;
                record
            }
            None => Record {
                id: RefId(String::with_capacity(20)),
                claims: Claims::of(reference),
                servers: Vec::new(),
                fetched: None,
            },
        };
        self.records.push_back(record);
        let Registry {
            records,
            by_uri,
            hasher,
            issued,
            ..
        } = self;
        if let Some(record) = records.back_mut() {
            // `ref_<counter>_<suffix>`, the suffix padded to four digits.
            let id = &mut record.id.0;
            id.push_str("ref_");
            push_base36(id, *issued, 1);
            id.push('_');
            push_base36(id, suffix, 4);
        }
        let evicted = *issued - records.len() as u64;
        let uri_of = |counter: u64| -> &str {
            counter
                .checked_sub(evicted + 1)
                .and_then(|index| usize::try_from(index).ok())
                .and_then(|index| records.get(index))
                .map_or("", |record| record.claims.uri.as_str())
        };
        by_uri.insert_unique(hasher.hash_one(reference.uri), *issued, |&counter| {
            hasher.hash_one(uri_of(counter))
        });
        self.issued
    }

    /// Takes the oldest record out, and its uri out of the index.
    fn evict_oldest(&mut self) -> Option<Record> {
        let oldest_counter = self.issued - self.records.len() as u64 + 1;
        let oldest = self.records.pop_front()?;
        if let Ok(held) = self.by_uri.find_entry(
            self.hasher.hash_one(oldest.claims.uri.as_str()),
            |&counter| counter == oldest_counter,
        ) {
            held.remove();
        }
        Some(oldest)
    }

    /// The counter of the record that holds `uri`, if one does.
    fn counter_of(&self, uri: &str) -> Option<u64> {
        self.by_uri
            .find(self.hasher.hash_one(uri), |&counter| {
                self.index_of(counter)
                    .is_some_and(|index| self.records[index].claims.uri == uri)
            })
            .copied()
    }

    /// Where the record whose id has this counter is, if it is held.
    fn index_of(&self, counter: u64) -> Option<usize> {
        let evicted = self.issued - self.records.len() as u64;
        let index = usize::try_from(counter.checked_sub(evicted + 1)?).ok()?;
        (index < self.records.len()).then_some(index)
    }

    /// Where the record with this id is, if it is held: found by the id's counter, then
    /// compared whole.
    fn index_of_id(&self, id: &str) -> Option<usize> {
        let (counter, _) = id.strip_prefix("ref_")?.split_once('_')?;
        let index = self.index_of(u64::from_str_radix(counter, 36).ok()?)?;
        (self.records[index].id.as_str() == id).then_some(index)
    }

    /// The record for an id, or the defined miss for one never issued or evicted.
    pub fn lookup(&self, id: &str) -> Result<&Record, UnknownReference> {
        self.index_of_id(id)
            .map(|index| &self.records[index])
            .ok_or_else(|| UnknownReference(id.to_owned()))
    }

    /// The record for a uri, if the registry holds one; registers nothing.
    pub fn find_uri(&self, uri: &str) -> Option<&Record> {
        let index = self.index_of(self.counter_of(uri)?)?;
        Some(&self.records[index])
    }

    /// Records a successful fetch; the record's claims are frozen from now on.
    pub fn mark_fetched(&mut self, id: &RefId, fetched: Fetched) -> Result<(), UnknownReference> {
        let index = self
            .index_of_id(id.as_str())
            .ok_or_else(|| UnknownReference(id.0.clone()))?;
        self.records[index].fetched = Some(fetched);
        Ok(())
    }

    /// How many records the registry holds.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

/// Appends `n` in base 36, with zeros in front up to `width` digits.
fn push_base36(out: &mut String, mut n: u64, width: usize) {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    // u64::MAX has 13 base-36 digits.
    let mut digits = [b'0'; 13];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = DIGITS[(n % 36) as usize];
        n /= 36;
        if n == 0 {
            break;
        }
    }
    for _ in digits.len() - start..width {
        out.push('0');
    }
    out.extend(digits[start..].iter().map(|&d| char::from(d)));
}

/// A seed that differs from process to process, from the standard library's own randomness.
pub(crate) fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0x6d63_706c);
    hasher.finish()
}

/// A small, well-known generator for id suffixes and nonces; they need to be unpredictable to a
/// server, not cryptographic.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `len` random base36 characters.
    pub(crate) fn base36(&mut self, len: u32) -> String {
        let mut out = String::with_capacity(len as usize);
        push_base36(&mut out, self.next() % 36u64.pow(len), len as usize);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpl_classify::{Block, classify};
    use serde_json::json;

    fn with_reference<T>(block: serde_json::Value, f: impl FnOnce(&Reference<'_>) -> T) -> T {
        match classify(&block) {
            Block::Reference(reference) => f(&reference),
            other => panic!("not a reference: {other:?}"),
        }
    }

    #[test]
    fn ids_have_the_documented_shape() {
        let mut registry = Registry::with_seed(7);
        let server = ServerName::new("s");
        let id = with_reference(json!({"type": "resource", "uri": "u:1"}), |r| {
            registry.register(r, &server).id.clone()
        });
        let parts: Vec<&str> = id.as_str().split('_').collect();
        assert_eq!(parts[0], "ref");
        assert_eq!(parts[1], "1");
        assert_eq!(parts[2].len(), 4);
        assert!(
            parts[2]
                .bytes()
                .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
        );
    }

    #[test]
    fn every_server_is_kept_once_in_order_and_claims_refresh_until_fetched() {
        let mut registry = Registry::with_seed(1);
        let (a, b) = (ServerName::new("a"), ServerName::new("b"));
        let first = json!({"type": "resource", "uri": "u:x", "sizeBytes": 1});
        let second = json!({"type": "resource", "uri": "u:x", "sizeBytes": 2});
        let id = with_reference(first.clone(), |r| registry.register(r, &b).id.clone());
        with_reference(second.clone(), |r| registry.register(r, &a));
        with_reference(first.clone(), |r| registry.register(r, &b));
        let record = registry.lookup(id.as_str()).unwrap();
        assert_eq!(record.servers, vec![b.clone(), a.clone()]);
        assert_eq!(record.claims.size_bytes, Some(1));
        registry
            .mark_fetched(
                &id,
                Fetched {
                    path: "refs/x.bin".into(),
                    bytes: 1,
                    mime_type: "application/octet-stream".into(),
                    digest_verified: false,
                },
            )
            .unwrap();
        with_reference(second, |r| registry.register(r, &a));
        assert_eq!(
            registry.lookup(id.as_str()).unwrap().claims.size_bytes,
            Some(1)
        );
    }

    #[test]
    fn a_record_written_over_an_evicted_one_holds_only_its_own_claims_and_server() {
        let mut registry = Registry::with_seed(5);
        let (a, b) = (ServerName::new("a"), ServerName::new("b"));
        // Full of records with every claim, two servers each, fetched.
        for n in 0..REGISTRY_CAPACITY {
            let block = json!({"type": "resource", "uri": format!("u:{n}"), "name": "old name",
                "mimeType": "text/csv", "sizeBytes": 9, "expiresAt": "2030-01-01T00:00:00Z",
                "digest": "sha256:00", "disposition": "never"});
            let id = with_reference(block.clone(), |r| registry.register(r, &a).id.clone());
            with_reference(block, |r| registry.register(r, &b));
            let fetched = Fetched {
                path: "refs/x.bin".into(),
                bytes: 1,
                mime_type: "text/csv".into(),
                digest_verified: true,
            };
            registry.mark_fetched(&id, fetched).unwrap();
        }
        // Each new one takes an evicted record's place: by a kept server, by another, with
        // fewer claims, with as many.
        let fresh = [
            (json!({"type": "resource", "uri": "v:0"}), &a),
            (json!({"type": "resource", "uri": "v:1", "name": "n"}), &b),
            (
                json!({"type": "resource", "uri": format!("v:{}", "x".repeat(500)),
                "mimeType": "text/plain", "sizeBytes": 3}),
                &a,
            ),
            (
                json!({"type": "resource", "uri": "v:3", "name": "old name", "mimeType": "text/csv",
                "digest": "sha256:11", "disposition": "never"}),
                &b,
            ),
        ];
        for (n, (block, server)) in fresh.iter().enumerate() {
            let (claims, record) = with_reference(block.clone(), |r| {
                (Claims::of(r), registry.register(r, server).clone())
            });
            assert_eq!(record.claims, claims, "{n}");
            assert_eq!(record.servers, [(*server).clone()], "{n}");
            assert_eq!(record.fetched, None, "{n}");
            // `ref_<counter>_<four digits>`, the counter going on from the evicted ones.
            let mut prefix = String::from("ref_");
            push_base36(&mut prefix, (REGISTRY_CAPACITY + n + 1) as u64, 1);
            prefix.push('_');
            let id = record.id.as_str();
            assert!(
                id.starts_with(&prefix) && id.len() == prefix.len() + 4,
                "{id}"
            );
            assert_eq!(
                registry.find_uri(&claims.uri).map(|r| &r.id),
                Some(&record.id)
            );
            assert!(registry.find_uri(&format!("u:{n}")).is_none(), "{n}");
        }
        assert_eq!(registry.len(), REGISTRY_CAPACITY);
    }

    #[test]
    fn the_oldest_records_are_evicted_and_ids_never_come_back() {
        let mut registry = Registry::with_seed(3);
        let server = ServerName::new("s");
        let mut ids = Vec::new();
        for n in 0..2100 {
            let block = json!({"type": "resource", "uri": format!("u:{n}")});
            ids.push(with_reference(block, |r| {
                registry.register(r, &server).id.clone()
            }));
        }
        assert_eq!(registry.len(), REGISTRY_CAPACITY);
        let evicted = registry.lookup(ids[0].as_str()).unwrap_err();
        assert!(evicted.to_string().starts_with("unknown reference: ref_1_"));
        // Each uri is found by its record while held, and not once evicted.
        assert!(registry.find_uri("u:99").is_none());
        for n in [100, 1234, 2099] {
            let uri = format!("u:{n}");
            let record = registry.find_uri(&uri).map(|record| &record.id);
            assert_eq!(record, Some(&ids[n]), "{uri}");
        }
        let again = with_reference(json!({"type": "resource", "uri": "u:0"}), |r| {
            registry.register(r, &server).id.clone()
        });
        assert!(!ids.contains(&again));
        let live = with_reference(json!({"type": "resource", "uri": "u:2099"}), |r| {
            registry.register(r, &server).id.clone()
        });
        assert_eq!(live, ids[2099]);
    }
}
