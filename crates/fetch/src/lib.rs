//! The reference fetcher: the only code that dereferences a reference, origin-bound, budgeted
//! and failing closed.
//!
//! [`Fetcher`] owns a folder and what it knows of each server ([`FetchOptions`]: the origin
//! its connection was dialed to, its token, its per-fetch ceiling, its cumulative budget and its
//! eager limit). [`Fetcher::fetch`] takes a reference id from the [`Registry`] and either saves
//! the payload as `<ref id>.<ext>` in the folder and marks the record fetched, answering
//! [`Saved`], or refuses with a [`Refusal`] whose words are the predecessor host's, checked in
//! its order:
//!
//! 1. already fetched: the saved outcome again;
//! 2. of the servers that delivered the uri, the first one that may fetch it is chosen (an
//!    http(s) uri on the origin its connection was dialed to, or any other scheme but `file:`
//!    on a server that offers `resources/read`); when none may, the first server's refusal;
//! 3. an expired or unparsable `expiresAt`; a claimed size over the ceiling; a spent budget;
//! 4. the dial: the token only as `Authorization: Bearer` to that origin, no redirect followed,
//!    the stream cut the moment its decoded bytes pass the ceiling or the remaining budget;
//! 5. a claimed digest must match; the saved type is what the bytes say, then the header, then
//!    the claim.
//!
//! [`Fetcher::eager`] fetches the small references of a result the agent asked for, in
//! parallel, and only logs what it could not fetch.
//!
//! Around them: [`Origin`] is where a reference points and where a server was dialed, compared
//! scheme, host and port; a [`ResourceReader`] is how the host reads a non-http reference over
//! the server's own connection ([`NoResources`] for none), so this crate knows nothing of
//! processes or the loop; [`Limit`] names the ceiling or budget a refusal hit, and
//! [`DigestCheck`] what became of a claimed digest.
//!
//! ```
//! use mcpl_fetch::FetchOptions;
//! use mcpl_fetch::{Fetcher, NoResources};
//! use mcpl_loopback::{Answer, Loopback};
//! use mcpl_lanes::{Registry, ServerName};
//! use serde_json::json;
//!
//! let server = Loopback::start(|_request| Answer::bytes("text/plain", b"hello".to_vec()))?;
//! let folder = std::env::temp_dir().join(format!("mcpl-fetch-doc-{}", std::process::id()));
//! let mut fetcher = Fetcher::new(&folder)?;
//! let options = FetchOptions::default()
//!     .with_origin(server.origin())
//!     .with_token("secret");
//! fetcher.add_server("files", &options);
//!
//! let mut registry = Registry::new();
//! let block = json!({"type": "resource", "uri": format!("{}/a", server.origin()), "sizeBytes": 5});
//! let mcpl_classify::Block::Reference(reference) = mcpl_classify::classify(&block) else { panic!() };
//! let id = registry.register(&reference, &ServerName::new("files")).id.clone();
//!
//! let saved = fetcher.fetch(&mut registry, id.as_str(), None, &mut NoResources).unwrap();
//! assert_eq!(saved.bytes, 5);
//! assert_eq!(saved.mime_type, "text/plain");
//! assert!(saved.path.ends_with(&format!("{id}.txt")));
//! assert_eq!(server.requests()[0].header("authorization"), Some("Bearer secret"));
//! # std::fs::remove_dir_all(&folder)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod expiry;
mod origin;
mod store;

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use mcpl_classify::{SNIFF_LEN, Sniffed, sniff};
use mcpl_lanes::{Claims, Fetched, Record, RefId, Registry, ServerName, markers};
use serde::{Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest, Sha256};
use ureq::http::Uri;

pub use origin::Origin;
use origin::Target;
use store::Partial;

/// The most one fetch may save (256 MiB).
pub const DEFAULT_FETCH_MAX_BYTES: u64 = 256 * 1024 * 1024;
/// The most a server's fetches may save over the life of the process (1 GiB).
pub const DEFAULT_FETCH_BUDGET_BYTES: u64 = 1024 * 1024 * 1024;
/// The largest claimed size fetched eagerly (256 KiB).
pub const DEFAULT_EAGER_MAX_BYTES: u64 = 256 * 1024;

/// The fetcher's options for one server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FetchOptions {
    /// The origin the server's connection is dialed to; references elsewhere are refused.
    pub origin: Option<String>,
    /// The bearer token sent to that origin only.
    pub token: Option<String>,
    /// The most one fetch may save.
    pub max_bytes: u64,
    /// The most this server's fetches may save in all.
    pub budget_bytes: u64,
    /// The largest claimed size fetched eagerly.
    pub eager_max_bytes: u64,
}

impl FetchOptions {
    /// The same options, references held to `origin` (the server's dialed origin).
    pub fn with_origin(self, origin: impl Into<String>) -> FetchOptions {
        FetchOptions {
            origin: Some(origin.into()),
            ..self
        }
    }

    /// The same options, `token` sent to the origin.
    pub fn with_token(self, token: impl Into<String>) -> FetchOptions {
        FetchOptions {
            token: Some(token.into()),
            ..self
        }
    }

    /// The same options, one fetch saving at most `max_bytes`.
    pub fn with_max_bytes(self, max_bytes: u64) -> FetchOptions {
        FetchOptions { max_bytes, ..self }
    }

    /// The same options, the server's fetches saving at most `budget_bytes` in all.
    pub fn with_budget_bytes(self, budget_bytes: u64) -> FetchOptions {
        FetchOptions {
            budget_bytes,
            ..self
        }
    }

    /// The same options, references claiming at most `eager_max_bytes` fetched eagerly.
    pub fn with_eager_max_bytes(self, eager_max_bytes: u64) -> FetchOptions {
        FetchOptions {
            eager_max_bytes,
            ..self
        }
    }
}

impl Default for FetchOptions {
    fn default() -> FetchOptions {
        FetchOptions {
            origin: None,
            token: None,
            max_bytes: DEFAULT_FETCH_MAX_BYTES,
            budget_bytes: DEFAULT_FETCH_BUDGET_BYTES,
            eager_max_bytes: DEFAULT_EAGER_MAX_BYTES,
        }
    }
}

/// How long a fetch the model asked for may take, from dial to the last byte.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(60);
/// How long an eager fetch may take.
pub const EAGER_TIMEOUT: Duration = Duration::from_secs(10);
/// The most references one result has fetched eagerly.
pub const EAGER_PER_RESULT: usize = 8;
/// The type a payload is saved as when neither its bytes, the header nor the claim name one.
pub const OCTET_STREAM: &str = "application/octet-stream";
/// What `digest_verified` says when the reference claimed no digest.
pub const NO_DIGEST_CLAIMED: &str = "no digest claimed";

/// Why a reference was not fetched, in the words the model reads (the predecessor host's).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The id was never issued, or its record was evicted.
    #[error("{}", markers::unknown_reference(.0))]
    UnknownReference(String),
    /// The record names no server.
    #[error("reference has no server binding")]
    NoServerBinding,
    /// The server is not one this fetcher knows, or it has no dialed address.
    #[error("unknown server: {0}")]
    UnknownServer(String),
    /// The reference's uri does not parse.
    #[error("reference uri does not parse")]
    UriDoesNotParse,
    /// The server's dialed address does not parse.
    #[error("server url does not parse")]
    ServerUrlDoesNotParse,
    /// A scheme the host never reads, or a non-http(s) uri with no server offering resources.
    /// The scheme is shown with its colon (`file:`).
    #[error("scheme not allowed: {0}")]
    SchemeNotAllowed(String),
    /// The uri is on another origin than the server's connection.
    #[error("third-party origin ({reference} != dialed {dialed}); not fetched by this host")]
    ThirdPartyOrigin {
        /// The reference's origin.
        reference: Origin,
        /// The server's dialed origin.
        dialed: Origin,
    },
    /// `expiresAt` has passed or does not parse.
    #[error("reference expired (or unparseable expiry — fail closed)")]
    Expired,
    /// The claimed size is over the ceiling.
    #[error("claimed {claimed} bytes exceeds fetch ceiling {ceiling}")]
    ClaimOverCeiling {
        /// The claimed size.
        claimed: u64,
        /// The ceiling.
        ceiling: u64,
    },
    /// The server's budget is spent.
    #[error("per-server fetch budget exhausted ({used}/{budget} bytes)")]
    BudgetExhausted {
        /// Bytes its fetches have saved.
        used: u64,
        /// Its budget.
        budget: u64,
    },
    /// The server answered with a redirect, which is never followed.
    #[error("redirect refused (HTTP {0}) — no redirect traversal")]
    Redirect(u16),
    /// Any other status that is not a success.
    #[error("HTTP {0}")]
    Status(u16),
    /// The decoded bytes passed a limit; the stream was cut there.
    #[error("aborted: actual bytes exceeded {limit} at {at}")]
    Aborted {
        /// Which limit.
        limit: Limit,
        /// How many decoded bytes had arrived when the stream was cut.
        at: u64,
    },
    /// The bytes do not have the claimed digest.
    #[error("digest mismatch (claimed {}…, got {}…)", first_20(.claimed), first_20(.got))]
    DigestMismatch {
        /// The claimed digest.
        claimed: String,
        /// The digest of the bytes received.
        got: String,
    },
    /// The fetch ran out of time.
    #[error("fetch timed out or aborted")]
    TimedOut,
    /// The connection failed.
    #[error("fetch failed: {0}")]
    Network(String),
    /// `resources/read` failed or answered nothing usable.
    #[error("resources/read failed: {0}")]
    ResourceRead(String),
    /// The payload could not be written to the fetcher's folder.
    #[error("could not store the payload: {0}")]
    Store(String),
}

fn first_20(text: &str) -> String {
    text.chars().take(20).collect()
}

/// The limit a stream passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limit {
    /// The per-fetch ceiling.
    Ceiling,
    /// What remained of the server's budget.
    Budget,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limit::Ceiling => "ceiling",
            Limit::Budget => "per-server budget",
        })
    }
}

/// A fetched payload: `fetch_reference`'s output,
/// `{"path", "bytes", "mime_type", "digest_verified"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Saved {
    /// Where the host saved it.
    pub path: String,
    /// Its size, decoded.
    pub bytes: u64,
    /// Its type: what the bytes said, else the header, else the claim.
    pub mime_type: String,
    /// Whether a claimed digest matched.
    pub digest_verified: DigestCheck,
}

impl Saved {
    fn of(fetched: &Fetched) -> Saved {
        Saved {
            path: fetched.path.clone(),
            bytes: fetched.bytes,
            mime_type: fetched.mime_type.clone(),
            digest_verified: if fetched.digest_verified {
                DigestCheck::Verified
            } else {
                DigestCheck::NotClaimed
            },
        }
    }
}

/// What became of a claimed digest. A mismatch is a [`Refusal`], so it never appears here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DigestCheck {
    /// The digest was claimed and matched: serialises as `true`.
    Verified,
    /// No digest was claimed: serialises as `"no digest claimed"`.
    NotClaimed,
}

impl Serialize for DigestCheck {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            DigestCheck::Verified => serializer.serialize_bool(true),
            DigestCheck::NotClaimed => serializer.serialize_str(NO_DIGEST_CLAIMED),
        }
    }
}

/// Reads MCP resources for the fetcher: the host's connections, or a test double.
pub trait ResourceReader {
    /// Whether the server offers `resources/read`.
    fn offers_resources(&self, server: &str) -> bool;
    /// The result of `resources/read` for `uri` on `server` (`{"contents": [...]}`), or why
    /// there is none.
    fn read_resource(&mut self, server: &str, uri: &str) -> Result<Value, ReadError>;
}

/// Why `resources/read` gave no result. Its words go into [`Refusal::ResourceRead`],
/// sanitised, since a server's error text is untrusted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The host reads no resources at all.
    #[error("this host reads no resources")]
    NoResources,
    /// No server of that name is connected.
    #[error("unknown server: {0}")]
    UnknownServer(String),
    /// The server is configured but has no live connection.
    #[error("server {0} is not available")]
    Unavailable(String),
    /// The request failed: the connection's own error, which a caller may downcast.
    #[error(transparent)]
    Request(Box<dyn std::error::Error + Send + Sync>),
}

/// A host without resources: every non-http(s) reference is refused.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoResources;

impl ResourceReader for NoResources {
    fn offers_resources(&self, _server: &str) -> bool {
        false
    }

    fn read_resource(&mut self, _server: &str, _uri: &str) -> Result<Value, ReadError> {
        Err(ReadError::NoResources)
    }
}

/// The fetcher's folder could not be made.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
#[non_exhaustive]
pub struct FolderError {
    /// The folder.
    pub path: String,
    /// Why.
    pub source: std::io::Error,
}

/// What the fetcher knows of one server.
struct ServerState {
    name: ServerName,
    dialed: Dialed,
    token: Option<String>,
    max_bytes: u64,
    budget_bytes: u64,
    eager_max_bytes: u64,
    used: u64,
}

enum Dialed {
    /// No address: a stdio server with no `fetch.origin`.
    Nowhere,
    Unparsable,
    At(Origin),
}

impl fmt::Debug for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The token is never printed, not even in a debug dump.
        f.debug_struct("ServerState")
            .field("name", &self.name)
            .field(
                "dialed",
                &match &self.dialed {
                    Dialed::Nowhere => "(none)".to_owned(),
                    Dialed::Unparsable => "(does not parse)".to_owned(),
                    Dialed::At(origin) => origin.to_string(),
                },
            )
            .field("token", &self.token.as_ref().map(|_| "(set)"))
            .field("max_bytes", &self.max_bytes)
            .field("budget_bytes", &self.budget_bytes)
            .field("eager_max_bytes", &self.eager_max_bytes)
            .field("used", &self.used)
            .finish()
    }
}

/// The host-mediated fetcher: one per process, owning its folder and every server's budget.
#[derive(Debug)]
pub struct Fetcher {
    folder: PathBuf,
    agent: ureq::Agent,
    servers: Vec<ServerState>,
    fetch_timeout: Duration,
    eager_timeout: Duration,
}

/// The server chosen for a reference and how it is read.
struct Dial {
    server: usize,
    how: How,
}

enum How {
    Http(Uri),
    Resource,
}

/// How many decoded bytes a fetch may take before it is cut.
#[derive(Debug, Clone, Copy)]
struct Limits {
    ceiling: u64,
    budget_left: u64,
}

impl Limits {
    fn check(self, received: u64) -> Result<(), Refusal> {
        let limit = if received > self.ceiling {
            Limit::Ceiling
        } else if received > self.budget_left {
            Limit::Budget
        } else {
            return Ok(());
        };
        Err(Refusal::Aborted {
            limit,
            at: received,
        })
    }
}

/// Bytes received and written under a temporary name, not yet checked against the claims.
struct Payload {
    partial: Partial,
    bytes: u64,
    /// The bytes' digest, when a claimed one is to be checked (no one reads an unclaimed one, so
    /// a fetch without a claim does not pay for hashing).
    digest: Option<String>,
    head: Vec<u8>,
    header_type: Option<String>,
}

/// One eager fetch, decided before any is dialed.
struct EagerPlan {
    id: RefId,
    server: usize,
    uri: Uri,
    token: Option<String>,
    limits: Limits,
    hash: bool,
}

impl Fetcher {
    /// A fetcher saving into `folder`, made owner-only (0700) if missing; it knows no server yet.
    pub fn new(folder: impl Into<PathBuf>) -> Result<Fetcher, FolderError> {
        let folder = folder.into();
        store::create_private_dir(&folder).map_err(|source| FolderError {
            path: folder.display().to_string(),
            source,
        })?;
        Ok(Fetcher {
            folder,
            agent: agent(),
            servers: Vec::new(),
            fetch_timeout: FETCH_TIMEOUT,
            eager_timeout: EAGER_TIMEOUT,
        })
    }

    /// Adds a server, or replaces what the fetcher knows of it (its budget use is kept, since
    /// budgets never renew).
    pub fn add_server(&mut self, name: &str, options: &FetchOptions) {
        let dialed = match &options.origin {
            None => Dialed::Nowhere,
            Some(url) => Origin::of_dialed(url).map_or(Dialed::Unparsable, Dialed::At),
        };
        let state = ServerState {
            name: ServerName::new(name),
            dialed,
            token: options.token.clone(),
            max_bytes: options.max_bytes,
            budget_bytes: options.budget_bytes,
            eager_max_bytes: options.eager_max_bytes,
            used: 0,
        };
        match self.servers.iter_mut().find(|s| s.name.as_str() == name) {
            Some(existing) => {
                let used = existing.used;
                *existing = ServerState { used, ..state };
            }
            None => self.servers.push(state),
        }
    }

    /// Sets how long a fetch and an eager fetch may take (60 s and 10 s by default).
    pub fn set_timeouts(&mut self, fetch: Duration, eager: Duration) {
        self.fetch_timeout = fetch;
        self.eager_timeout = eager;
    }

    /// The folder payloads are saved in.
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// How many bytes a server's fetches have saved, or `None` for a server it does not know.
    pub fn used_bytes(&self, server: &str) -> Option<u64> {
        self.servers
            .iter()
            .find(|s| s.name.as_str() == server)
            .map(|s| s.used)
    }

    /// Fetches the reference `ref_id` names, at most `max_bytes` (clamped to the dialed
    /// server's ceiling), into `<ref id>.<ext>` in the folder, and marks its record fetched.
    /// A reference already fetched answers its saved outcome again without dialing.
    pub fn fetch(
        &mut self,
        registry: &mut Registry,
        ref_id: &str,
        max_bytes: Option<u64>,
        resources: &mut dyn ResourceReader,
    ) -> Result<Saved, Refusal> {
        let record = registry
            .lookup(ref_id)
            .map_err(|unknown| Refusal::UnknownReference(unknown.0))?;
        if let Some(fetched) = &record.fetched {
            return Ok(Saved::of(fetched));
        }
        let dial = self.choose(record, &*resources)?;
        let (id, claims) = (record.id.clone(), record.claims.clone());
        if claims
            .expires_at
            .as_deref()
            .is_some_and(|at| expiry::has_passed(at, SystemTime::now()))
        {
            return Err(Refusal::Expired);
        }
        let server = &self.servers[dial.server];
        let ceiling = max_bytes.map_or(server.max_bytes, |m| m.min(server.max_bytes));
        if let Some(claimed) = claims.size_bytes
            && claimed > ceiling
        {
            return Err(Refusal::ClaimOverCeiling { claimed, ceiling });
        }
        if server.used >= server.budget_bytes {
            return Err(Refusal::BudgetExhausted {
                used: server.used,
                budget: server.budget_bytes,
            });
        }
        let limits = Limits {
            ceiling,
            budget_left: server.budget_bytes - server.used,
        };
        let payload = match dial.how {
            How::Http(uri) => download(
                &self.agent,
                &Download {
                    uri: &uri,
                    token: server.token.as_deref(),
                    limits,
                    hash: claims.digest.is_some(),
                },
                self.fetch_timeout,
                &self.folder,
                id.as_str(),
            )?,
            How::Resource => {
                let result = resources
                    .read_resource(server.name.as_str(), &claims.uri)
                    .map_err(|error| {
                        Refusal::ResourceRead(markers::sanitize(&error.to_string()))
                    })?;
                resource_payload(&result, &claims.uri, limits, &self.folder, id.as_str())?
            }
        };
        self.finish(registry, &id, &claims, dial.server, payload)
    }

    /// Fetches, in parallel, the first [`EAGER_PER_RESULT`] of `ids` that are eager-eligible:
    /// unfetched, chosen an http(s) server on their origin, claiming a size no larger than that
    /// server's eager limit (and ceiling), and not expired. Each is cut at its claimed size and
    /// reserves that much of the server's budget. Failures are logged and leave the reference
    /// unfetched, so its stub still offers `fetch_reference`. Answers what became of each
    /// reference it tried.
    pub fn eager(
        &mut self,
        registry: &mut Registry,
        ids: &[RefId],
    ) -> Vec<(RefId, Result<Saved, Refusal>)> {
        let plans = self.eager_plans(registry, ids);
        let (agent, folder, timeout) = (&self.agent, self.folder.as_path(), self.eager_timeout);
        let payloads: Vec<Result<Payload, Refusal>> = std::thread::scope(|scope| {
            let running: Vec<_> = plans
                .iter()
                .map(|plan| {
                    scope.spawn(move || {
                        download(
                            agent,
                            &Download {
                                uri: &plan.uri,
                                token: plan.token.as_deref(),
                                limits: plan.limits,
                                hash: plan.hash,
                            },
                            timeout,
                            folder,
                            plan.id.as_str(),
                        )
                    })
                })
                .collect();
            running
                .into_iter()
                .map(|thread| {
                    thread.join().unwrap_or_else(|_| {
                        Err(Refusal::Network("the fetch thread panicked".to_owned()))
                    })
                })
                .collect()
        });
        let mut outcomes = Vec::with_capacity(plans.len());
        for (plan, payload) in plans.into_iter().zip(payloads) {
            let outcome = payload.and_then(|payload| {
                let claims = registry
                    .lookup(plan.id.as_str())
                    .map_err(|unknown| Refusal::UnknownReference(unknown.0))?
                    .claims
                    .clone();
                self.finish(registry, &plan.id, &claims, plan.server, payload)
            });
            if let Err(refusal) = &outcome {
                tracing::warn!(reference = %plan.id, "eager fetch failed: {refusal}");
            }
            outcomes.push((plan.id, outcome));
        }
        outcomes
    }

    /// Whether [`Fetcher::eager`] would fetch this reference, budget permitting.
    pub fn is_eager_eligible(&self, registry: &Registry, id: &RefId) -> bool {
        registry
            .lookup(id.as_str())
            .is_ok_and(|record| self.eager_server(record).is_some())
    }

    fn eager_plans(&self, registry: &Registry, ids: &[RefId]) -> Vec<EagerPlan> {
        let mut plans: Vec<EagerPlan> = Vec::new();
        // Parallel fetches from one server share what is left of its budget: each reserves its
        // claimed size and is cut there, so together they can never spend more than the budget.
        let mut reserved = vec![0u64; self.servers.len()];
        for id in ids {
            if plans.len() == EAGER_PER_RESULT {
                break;
            }
            if plans.iter().any(|plan| &plan.id == id) {
                continue;
            }
            let Ok(record) = registry.lookup(id.as_str()) else {
                continue;
            };
            let Some((index, uri, claimed)) = self.eager_server(record) else {
                tracing::debug!(reference = %id, "not eager-eligible");
                continue;
            };
            let server = &self.servers[index];
            let left = server
                .budget_bytes
                .saturating_sub(server.used + reserved[index]);
            if left < claimed || left == 0 {
                tracing::warn!(reference = %id, server = %server.name, "eager fetch skipped: not enough budget left");
                continue;
            }
            reserved[index] += claimed;
            plans.push(EagerPlan {
                id: id.clone(),
                server: index,
                uri,
                token: server.token.clone(),
                limits: Limits {
                    ceiling: claimed,
                    budget_left: claimed,
                },
                hash: record.claims.digest.is_some(),
            });
        }
        plans
    }

    /// The server an eager fetch of this record would dial, the uri and the claimed size, if
    /// it is eligible.
    fn eager_server(&self, record: &Record) -> Option<(usize, Uri, u64)> {
        if record.fetched.is_some() {
            return None;
        }
        let Dial {
            server,
            how: How::Http(uri),
        } = self.choose(record, &NoResources).ok()?
        else {
            return None;
        };
        let state = &self.servers[server];
        let claimed = record.claims.size_bytes?;
        let expired = record
            .claims
            .expires_at
            .as_deref()
            .is_some_and(|at| expiry::has_passed(at, SystemTime::now()));
        (claimed <= state.eager_max_bytes && claimed <= state.max_bytes && !expired)
            .then_some((server, uri, claimed))
    }

    /// The one place a reference's server is chosen, for the fetch and the eager check alike:
    /// of the servers that delivered the uri, in order, the first that may fetch it; when none
    /// may, the first server's refusal.
    fn choose(&self, record: &Record, resources: &dyn ResourceReader) -> Result<Dial, Refusal> {
        let target = origin::target(&record.claims.uri);
        let mut first_refusal = None;
        for name in &record.servers {
            let answer = self.may_dial(name, target.as_ref(), resources);
            match answer {
                Ok(dial) => return Ok(dial),
                Err(refusal) => {
                    first_refusal.get_or_insert(refusal);
                }
            }
        }
        Err(first_refusal.unwrap_or(Refusal::NoServerBinding))
    }

    fn may_dial(
        &self,
        name: &ServerName,
        target: Option<&Target>,
        resources: &dyn ResourceReader,
    ) -> Result<Dial, Refusal> {
        let Some(index) = self.servers.iter().position(|s| &s.name == name) else {
            return Err(Refusal::UnknownServer(name.to_string()));
        };
        let server = &self.servers[index];
        match target {
            None => Err(Refusal::UriDoesNotParse),
            Some(Target::Http { uri, origin }) => match &server.dialed {
                // A server the host holds no address for cannot be dialed.
                Dialed::Nowhere => Err(Refusal::UnknownServer(name.to_string())),
                Dialed::Unparsable => Err(Refusal::ServerUrlDoesNotParse),
                Dialed::At(dialed) if dialed == origin => Ok(Dial {
                    server: index,
                    how: How::Http(uri.clone()),
                }),
                Dialed::At(dialed) => Err(Refusal::ThirdPartyOrigin {
                    reference: origin.clone(),
                    dialed: dialed.clone(),
                }),
            },
            Some(Target::Never { scheme }) => Err(Refusal::SchemeNotAllowed(scheme.clone())),
            Some(Target::Resource { scheme }) => {
                if resources.offers_resources(name.as_str()) {
                    Ok(Dial {
                        server: index,
                        how: How::Resource,
                    })
                } else {
                    Err(Refusal::SchemeNotAllowed(scheme.clone()))
                }
            }
        }
    }

    /// Checks the digest, names the type, renames the payload into place, charges the dialed
    /// server and marks the record fetched.
    fn finish(
        &mut self,
        registry: &mut Registry,
        id: &RefId,
        claims: &Claims,
        server: usize,
        payload: Payload,
    ) -> Result<Saved, Refusal> {
        let digest_verified = match (&claims.digest, payload.digest) {
            (Some(claimed), Some(got)) if *claimed != got => {
                return Err(Refusal::DigestMismatch {
                    claimed: claimed.clone(),
                    got,
                });
            }
            (Some(_), Some(_)) => DigestCheck::Verified,
            // The claim changed while the bytes were on their way; a digest that was not
            // computed is never reported as matching.
            (Some(claimed), None) => {
                return Err(Refusal::DigestMismatch {
                    claimed: claimed.clone(),
                    got: "(not computed)".to_owned(),
                });
            }
            (None, _) => DigestCheck::NotClaimed,
        };
        let sniffed = sniff(&payload.head);
        let mime_type = sniffed
            .map(|s| s.mime().to_owned())
            .or(payload.header_type)
            .or_else(|| claims.mime_type.as_deref().and_then(essence))
            .unwrap_or_else(|| OCTET_STREAM.to_owned());
        let path = self.folder.join(format!(
            "{}.{}",
            id.as_str(),
            extension(sniffed, &mime_type)
        ));
        payload
            .partial
            .persist(&path)
            .map_err(|error| Refusal::Store(error.to_string()))?;
        let path = path.display().to_string();
        self.servers[server].used += payload.bytes;
        let fetched = Fetched {
            path,
            bytes: payload.bytes,
            mime_type,
            digest_verified: digest_verified == DigestCheck::Verified,
        };
        let saved = Saved::of(&fetched);
        registry
            .mark_fetched(id, fetched)
            .map_err(|unknown| Refusal::UnknownReference(unknown.0))?;
        Ok(saved)
    }
}

/// The one HTTP agent: redirects never followed, statuses answered rather than turned into
/// errors, no proxy (the token must reach the origin and nothing in between).
fn agent() -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .proxy(None)
        .user_agent(concat!("mcpl/", env!("CARGO_PKG_VERSION")));
    #[cfg(feature = "tls")]
    let config = config.tls_config(mcpl_tls::trust().ureq_config());
    config.build().new_agent()
}

/// Dials `uri` and streams its decoded body into a temporary file, cutting it at the limits.
/// One download's request and what to check on its way.
struct Download<'d> {
    uri: &'d Uri,
    token: Option<&'d str>,
    limits: Limits,
    /// Whether to hash the bytes: only when a digest was claimed.
    hash: bool,
}

fn download(
    agent: &ureq::Agent,
    download: &Download<'_>,
    timeout: Duration,
    folder: &Path,
    stem: &str,
) -> Result<Payload, Refusal> {
    let Download {
        uri,
        token,
        limits,
        hash,
    } = *download;
    let mut request = agent.get(uri);
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    let response = request
        .config()
        .timeout_global(Some(timeout))
        .build()
        .call()
        .map_err(|error| network_refusal(error, uri))?;
    let status = response.status().as_u16();
    if (300..400).contains(&status) {
        return Err(Refusal::Redirect(status));
    }
    if !response.status().is_success() {
        return Err(Refusal::Status(status));
    }
    let header_type = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .and_then(essence);
    let mut reader = response.into_body().into_reader();
    let mut partial = Partial::create(folder, stem).map_err(store_refusal)?;
    let mut hasher = if hash { Some(Hasher::start()) } else { None };
    let mut head = Vec::with_capacity(SNIFF_LEN);
    let mut buffer = vec![0u8; 64 * 1024];
    let mut received: u64 = 0;
    loop {
        let read = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(network_refusal(ureq::Error::from(error), uri)),
        };
        received += read as u64;
        // Dropping the reader on this return closes the connection: the stream is cut here.
        limits.check(received)?;
        let chunk = &buffer[..read];
        if head.len() < SNIFF_LEN {
            let take = (SNIFF_LEN - head.len()).min(read);
            head.extend_from_slice(&chunk[..take]);
        }
        if let Some(hasher) = &mut hasher {
            hasher.update(chunk);
        }
        partial.write(chunk).map_err(store_refusal)?;
    }
    Ok(Payload {
        partial,
        bytes: received,
        digest: hasher.map(Hasher::finish),
        head,
        header_type,
    })
}

/// Saves a `resources/read` result's contents for `uri`: its text as UTF-8, or its blob
/// decoded, under the same limits as a download.
fn resource_payload(
    result: &Value,
    uri: &str,
    limits: Limits,
    folder: &Path,
    stem: &str,
) -> Result<Payload, Refusal> {
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .filter(|contents| !contents.is_empty())
        .ok_or_else(|| Refusal::ResourceRead("the answer has no contents".to_owned()))?;
    let entry = contents
        .iter()
        .find(|entry| entry.get("uri").and_then(Value::as_str) == Some(uri))
        .unwrap_or(&contents[0]);
    let decoded;
    let bytes: &[u8] = match (
        entry.get("text").and_then(Value::as_str),
        entry.get("blob").and_then(Value::as_str),
    ) {
        (Some(text), None) => text.as_bytes(),
        (None, Some(blob)) => {
            let length = mcpl_classify::Payload::new(blob)
                .map_err(|_| Refusal::ResourceRead("its blob is not base64".to_owned()))?
                .decoded_len();
            // Refuse an oversized blob before decoding any of it.
            limits.check(length)?;
            decoded = STANDARD
                .decode(blob)
                .map_err(|_| Refusal::ResourceRead("its blob is not base64".to_owned()))?;
            &decoded
        }
        _ => {
            return Err(Refusal::ResourceRead(
                "its contents hold neither text nor a blob, or both".to_owned(),
            ));
        }
    };
    limits.check(bytes.len() as u64)?;
    let mut partial = Partial::create(folder, stem).map_err(store_refusal)?;
    partial.write(bytes).map_err(store_refusal)?;
    let mut hasher = Sha256::new();
    hasher.update(bytes);
    Ok(Payload {
        partial,
        bytes: bytes.len() as u64,
        digest: Some(digest_text(hasher)),
        head: bytes[..bytes.len().min(SNIFF_LEN)].to_vec(),
        header_type: entry
            .get("mimeType")
            .and_then(Value::as_str)
            .and_then(essence),
    })
}

/// A sha256 computed on a thread of its own while the download goes on, so a claimed digest
/// costs little more than the download (on a machine with a core to spare).
struct Hasher {
    chunks: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    thread: Option<std::thread::JoinHandle<String>>,
}

impl Hasher {
    /// How many chunks may wait for the hashing thread before the download waits for it.
    const QUEUE: usize = 16;

    fn start() -> Hasher {
        let (chunks, queue) = std::sync::mpsc::sync_channel::<Vec<u8>>(Hasher::QUEUE);
        let thread = std::thread::Builder::new()
            .name("mcpl-fetch-sha256".to_owned())
            .spawn(move || {
                let mut hasher = Sha256::new();
                for chunk in queue {
                    hasher.update(&chunk);
                }
                digest_text(hasher)
            });
        match thread {
            Ok(thread) => Hasher {
                chunks: Some(chunks),
                thread: Some(thread),
            },
            // No thread to be had: nothing is hashed, and the digest `finish` gives matches no
            // claim, so the fetch fails closed.
            Err(_) => Hasher {
                chunks: None,
                thread: None,
            },
        }
    }

    fn update(&mut self, chunk: &[u8]) {
        if let Some(chunks) = &self.chunks
            && chunks.send(chunk.to_vec()).is_err()
        {
            self.chunks = None;
        }
    }

    /// The digest of every chunk sent, `sha256:<base64url>`; a hashing thread that failed
    /// gives a digest no claim can match.
    fn finish(mut self) -> String {
        drop(self.chunks.take());
        self.thread
            .take()
            .and_then(|thread| thread.join().ok())
            .unwrap_or_else(|| "sha256:(the hashing thread failed)".to_owned())
    }
}

/// `sha256:<base64url, no padding>`, as RFC-005 claims write it.
fn digest_text(hasher: Sha256) -> String {
    format!("sha256:{}", URL_SAFE_NO_PAD.encode(hasher.finalize()))
}

fn network_refusal(error: ureq::Error, uri: &Uri) -> Refusal {
    match error {
        ureq::Error::Timeout(_) => Refusal::TimedOut,
        ureq::Error::Io(error) if error.kind() == std::io::ErrorKind::TimedOut => Refusal::TimedOut,
        ureq::Error::BadUri(_) => Refusal::UriDoesNotParse,
        // The uri can be a credential (a signed url); it never goes into a refusal.
        other => Refusal::Network(
            other
                .to_string()
                .replace(&uri.to_string(), "(the reference uri)"),
        ),
    }
}

fn store_refusal(error: std::io::Error) -> Refusal {
    Refusal::Store(error.to_string())
}

/// A media type's essence, lowercased (`Text/Plain; charset=utf-8` is `text/plain`), or `None`
/// when it is not `type/subtype` in token characters.
fn essence(value: &str) -> Option<String> {
    let essence = value.split(';').next()?.trim().to_ascii_lowercase();
    let (kind, subtype) = essence.split_once('/')?;
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c))
    };
    (token(kind) && token(subtype) && essence.len() <= 255).then_some(essence)
}

/// The file extension for a saved payload: from its bytes when they name a format, else from
/// its type through a fixed table, else `bin`. Never from anything a server wrote.
pub fn extension(sniffed: Option<Sniffed>, mime_type: &str) -> &'static str {
    match mcpl_budget::extension_for(sniffed) {
        "bin" => match mime_type {
            "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
            "audio/mpeg" => "mp3",
            "audio/mp4" => "m4a",
            "audio/flac" => "flac",
            "audio/midi" => "mid",
            "audio/ogg" => "ogg",
            "image/png" => "png",
            "image/jpeg" => "jpg",
            "image/gif" => "gif",
            "image/webp" => "webp",
            "image/svg+xml" => "svg",
            "video/mp4" => "mp4",
            "application/json" => "json",
            "application/pdf" => "pdf",
            "application/zip" => "zip",
            "application/gzip" => "gz",
            "application/xml" | "text/xml" => "xml",
            "text/plain" => "txt",
            "text/markdown" => "md",
            "text/html" => "html",
            "text/csv" => "csv",
            _ => "bin",
        },
        named => named,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(url: &str) -> Origin {
        Origin::of_dialed(url).unwrap()
    }

    #[rstest::rstest]
    #[case(
        Refusal::ThirdPartyOrigin {
            reference: origin("https://cdn.example"),
            dialed: origin("wss://files.example:443"),
        },
        "third-party origin (https://cdn.example != dialed https://files.example); not fetched by this host"
    )]
    #[case(Refusal::SchemeNotAllowed("file:".to_owned()), "scheme not allowed: file:")]
    #[case(
        Refusal::Expired,
        "reference expired (or unparseable expiry — fail closed)"
    )]
    #[case(
        Refusal::ClaimOverCeiling {
            claimed: 129,
            ceiling: 128,
        },
        "claimed 129 bytes exceeds fetch ceiling 128"
    )]
    #[case(
        Refusal::BudgetExhausted { used: 5, budget: 5 },
        "per-server fetch budget exhausted (5/5 bytes)"
    )]
    #[case(
        Refusal::Redirect(302),
        "redirect refused (HTTP 302) — no redirect traversal"
    )]
    #[case(
        Refusal::Aborted {
            limit: Limit::Budget,
            at: 96,
        },
        "aborted: actual bytes exceeded per-server budget at 96"
    )]
    #[case(
        Refusal::DigestMismatch {
            claimed: "sha256:2SmKENGwc1g33EvYXaxkGw887yekfl1TpU8vP1svz_o".to_owned(),
            got: "sha256:uM7OLD5sO8G3SeWw3LirIreZM71523d9_qXxkn8ewpM".to_owned(),
        },
        "digest mismatch (claimed sha256:2SmKENGwc1g33…, got sha256:uM7OLD5sO8G3S…)"
    )]
    #[case(Refusal::UnknownServer("x".to_owned()), "unknown server: x")]
    #[case(Refusal::TimedOut, "fetch timed out or aborted")]
    fn refusals_read_exactly(#[case] refusal: Refusal, #[case] words: &str) {
        assert_eq!(refusal.to_string(), words);
    }

    #[rstest::rstest]
    #[case(ReadError::NoResources, "this host reads no resources")]
    #[case(ReadError::UnknownServer("demo".to_owned()), "unknown server: demo")]
    #[case(
        ReadError::Unavailable("demo".to_owned()),
        "server demo is not available"
    )]
    #[case(
        ReadError::Request("server demo answered resources/read with an error: gone".into()),
        "server demo answered resources/read with an error: gone"
    )]
    fn read_errors_read_as_the_host_wrote_them(#[case] error: ReadError, #[case] words: &str) {
        assert_eq!(error.to_string(), words);
    }

    #[test]
    fn saved_serialises_as_the_tool_output() {
        let saved = Saved {
            path: "/f/ref_1_aaaa.wav".to_owned(),
            bytes: 19,
            mime_type: "audio/wav".to_owned(),
            digest_verified: DigestCheck::NotClaimed,
        };
        assert_eq!(
            serde_json::to_string(&saved).unwrap(),
            r#"{"path":"/f/ref_1_aaaa.wav","bytes":19,"mime_type":"audio/wav","digest_verified":"no digest claimed"}"#
        );
        let verified = Saved {
            digest_verified: DigestCheck::Verified,
            ..saved
        };
        assert_eq!(
            serde_json::to_value(&verified).unwrap()["digest_verified"],
            true
        );
    }

    #[test]
    fn types_and_extensions_come_from_a_fixed_table() {
        assert_eq!(
            essence("Text/Plain; charset=utf-8").as_deref(),
            Some("text/plain")
        );
        assert_eq!(essence("../../etc"), None);
        assert_eq!(essence("a/b/c"), None);
        assert_eq!(extension(Some(Sniffed::Wav), "image/png"), "wav");
        assert_eq!(extension(None, "text/plain"), "txt");
        assert_eq!(extension(None, "application/x-evil"), "bin");
    }

    #[test]
    fn limits_name_the_one_passed() {
        let limits = Limits {
            ceiling: 64,
            budget_left: 100,
        };
        assert!(limits.check(64).is_ok());
        assert_eq!(
            limits.check(65),
            Err(Refusal::Aborted {
                limit: Limit::Ceiling,
                at: 65
            })
        );
        let tight = Limits {
            ceiling: 64,
            budget_left: 10,
        };
        assert_eq!(
            tight.check(11),
            Err(Refusal::Aborted {
                limit: Limit::Budget,
                at: 11
            })
        );
    }
}
