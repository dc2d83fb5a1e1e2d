//! The host's configuration, in the shape users already know:
//!
//! ```json
//! {"mcpServers": {"files": {"command": "node", "args": ["server.js"], "env": {"K": "v"},
//!                           "mcpl": {"budget": 8000, "uris": "credential-free",
//!                                    "timeoutMs": 30000, "maxMessageBytes": 67108864,
//!                                    "maxConcurrentCalls": 4, "withholdCredentialUrls": true,
//!                                    "fetch": {"origin": "https://files.example",
//!                                              "token": "...", "maxBytes": 1048576}}}},
//!  "mcpl": {"spillDir": "/var/tmp/mcpl/spill", "fetchDir": "/var/tmp/mcpl/refs",
//!           "contextWindow": 200000, "spillNotice": "read_result", "spillTtlHours": 24,
//!           "spillStore": {"type": "s3", "bucket": "b", "prefix": "mcpl/", "endpoint": "..."}}}
//! ```
//!
//! `spillStore` is `{"type": "local"}` (the default, in `spillDir`) or an S3-compatible bucket,
//! whose credentials come from the usual AWS environment variables or profile: a credential
//! key in the file is an error (`docs/spill-stores.md`).
//!
//! `withholdCredentialUrls` (default `true`) withholds credential-shaped urls no block claims
//! from the server's strings (`docs/redaction.md`); set it `false` only for a server whose text
//! is trusted to hold no secret. Everything under `mcpl` is mcpl's own and optional. Unknown keys are errors, and every error
//! names the key it is about (`mcpServers.files.mcpl.budget: invalid type: string "8k",
//! expected u64`), so a typo never silently turns an option off.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpl_budget::{DEFAULT_BUDGET, SpillNotice};
pub use mcpl_budget::{S3Location, SpillStoreConfig};
use mcpl_lanes::UriPolicy;
use serde::Deserialize;
use serde_json::Value;

use mcpl_client::{DEFAULT_MAX_MESSAGE_BYTES, Launch, Limits};
pub use mcpl_fetch::{
    DEFAULT_EAGER_MAX_BYTES, DEFAULT_FETCH_BUDGET_BYTES, DEFAULT_FETCH_MAX_BYTES, FetchOptions,
};

/// How long a call waits for its answer unless a server's options say otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// How many of one model turn's calls may be outstanding at once on one server unless its
/// options say otherwise.
pub const DEFAULT_MAX_CONCURRENT_CALLS: usize = 4;
/// The context window the loop checks each round against unless the config says otherwise.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 200_000;

/// The whole configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The servers, in the file's order (the order references' servers are tried in).
    pub servers: Vec<ServerConfig>,
    /// Where spill files go; a folder under the system's temporary folder when absent.
    pub spill_dir: Option<PathBuf>,
    /// Where fetched references go; a folder under the system's temporary folder when absent.
    pub fetch_dir: Option<PathBuf>,
    /// The model's context window, in estimated tokens.
    pub context_window: u64,
    /// Where spills go: the local folder, or an S3-compatible bucket.
    pub spill_store: SpillStoreConfig,
    /// How an omission notice names a spill (`spillNotice`: `read_result` or `path`).
    pub spill_notice: SpillNotice,
    /// How long spills are kept, in hours, for `cargo xtask spill-gc` (`spillTtlHours`).
    pub spill_ttl_hours: Option<u64>,
}

/// One server and mcpl's options for it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// How to start it.
    pub launch: Launch,
    /// mcpl's options for it.
    pub options: ServerOptions,
}

/// mcpl's per-server options.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerOptions {
    /// The tool-result budget in estimated tokens.
    pub budget: u64,
    /// Which uris may be shown.
    pub uri_policy: UriPolicy,
    /// Whether credential-shaped urls no block claims are withheld from this server's strings
    /// (`mcpl.withholdCredentialUrls`, on by default; see `docs/redaction.md`).
    pub withhold_credential_urls: bool,
    /// How long one call waits.
    pub timeout: Duration,
    /// The longest message the server may send, in bytes: a longer one fails the call it
    /// answers, and is never held past this.
    pub max_message_bytes: usize,
    /// How many of one model turn's calls may be outstanding at once on this server (calls to
    /// different servers always run at once).
    pub max_concurrent_calls: usize,
    /// The reference fetcher's options for references this server delivers.
    pub fetch: FetchOptions,
}

impl ServerOptions {
    /// The bounds the server's connection keeps.
    pub fn limits(&self) -> Limits {
        Limits {
            timeout: self.timeout,
            max_message_bytes: self.max_message_bytes,
        }
    }
}

impl Default for ServerOptions {
    fn default() -> ServerOptions {
        ServerOptions {
            budget: DEFAULT_BUDGET,
            uri_policy: UriPolicy::Hidden,
            withhold_credential_urls: true,
            timeout: DEFAULT_TIMEOUT,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_concurrent_calls: DEFAULT_MAX_CONCURRENT_CALLS,
            fetch: FetchOptions::default(),
        }
    }
}

/// Why a configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A key is missing, unknown or of the wrong type.
    #[error("{path}: {key}: {message}")]
    Key {
        /// The file.
        path: String,
        /// The key, as a path from the top (`mcpServers.files.args[1]`).
        key: String,
        /// What is wrong.
        message: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawConfig {
    mcp_servers: serde_json::Map<String, Value>,
    #[serde(default)]
    mcpl: RawHost,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawHost {
    spill_dir: Option<PathBuf>,
    fetch_dir: Option<PathBuf>,
    context_window: Option<u64>,
    spill_store: Option<serde_json::Map<String, Value>>,
    spill_notice: Option<RawNotice>,
    spill_ttl_hours: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum RawNotice {
    ReadResult,
    Path,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawServer {
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    /// Other hosts write `"type": "stdio"`; it is the only transport mcpl speaks.
    #[serde(rename = "type")]
    transport: Option<Transport>,
    #[serde(default)]
    mcpl: RawOptions,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Transport {
    Stdio,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawOptions {
    budget: Option<u64>,
    uris: Option<RawUris>,
    withhold_credential_urls: Option<bool>,
    timeout_ms: Option<u64>,
    max_message_bytes: Option<usize>,
    max_concurrent_calls: Option<usize>,
    #[serde(default)]
    fetch: RawFetch,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum RawUris {
    Hidden,
    CredentialFree,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawFetch {
    origin: Option<String>,
    token: Option<String>,
    max_bytes: Option<u64>,
    budget_bytes: Option<u64>,
    eager_max_bytes: Option<u64>,
}

impl Config {
    /// Reads a configuration file.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let bytes = std::fs::read(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Config::from_slice(&path.display().to_string(), &bytes)
    }

    /// Reads a configuration from JSON bytes; `path` names it in errors.
    pub fn from_slice(path: &str, bytes: &[u8]) -> Result<Config, ConfigError> {
        let key_error = |key: String, message: String| ConfigError::Key {
            path: path.to_owned(),
            key,
            message,
        };
        let raw: RawConfig =
            deserialize(bytes).map_err(|(key, message)| key_error(key, message))?;
        let mut servers = Vec::with_capacity(raw.mcp_servers.len());
        for (name, value) in &raw.mcp_servers {
            let server: RawServer = serde_path_to_error::deserialize(value).map_err(|e| {
                key_error(
                    join_key(&format!("mcpServers.{name}"), &e.path().to_string()),
                    e.inner().to_string(),
                )
            })?;
            if server.command.trim().is_empty() {
                return Err(key_error(
                    format!("mcpServers.{name}.command"),
                    "is empty".to_owned(),
                ));
            }
            if let Some(origin) = &server.mcpl.fetch.origin {
                let scheme = origin.split("://").next().unwrap_or_default();
                if !origin.contains("://") || !["http", "https", "ws", "wss"].contains(&scheme) {
                    return Err(key_error(
                        format!("mcpServers.{name}.mcpl.fetch.origin"),
                        format!("{origin:?} is not an http(s) or ws(s) origin"),
                    ));
                }
            }
            if server.mcpl.max_concurrent_calls == Some(0) {
                return Err(key_error(
                    format!("mcpServers.{name}.mcpl.maxConcurrentCalls"),
                    "must be at least 1".to_owned(),
                ));
            }
            if server.mcpl.max_message_bytes == Some(0) {
                return Err(key_error(
                    format!("mcpServers.{name}.mcpl.maxMessageBytes"),
                    "must be at least 1".to_owned(),
                ));
            }
            let _ = server.transport.map(|Transport::Stdio| ());
            let fetch = FetchOptions::default();
            servers.push(ServerConfig {
                launch: Launch {
                    name: name.clone(),
                    command: server.command,
                    args: server.args,
                    env: server.env,
                    cwd: server.cwd,
                },
                options: ServerOptions {
                    budget: server.mcpl.budget.unwrap_or(DEFAULT_BUDGET),
                    uri_policy: match server.mcpl.uris {
                        Some(RawUris::CredentialFree) => UriPolicy::CredentialFree,
                        Some(RawUris::Hidden) | None => UriPolicy::Hidden,
                    },
                    withhold_credential_urls: server.mcpl.withhold_credential_urls.unwrap_or(true),
                    timeout: server
                        .mcpl
                        .timeout_ms
                        .map_or(DEFAULT_TIMEOUT, Duration::from_millis),
                    max_message_bytes: server
                        .mcpl
                        .max_message_bytes
                        .unwrap_or(DEFAULT_MAX_MESSAGE_BYTES),
                    max_concurrent_calls: server
                        .mcpl
                        .max_concurrent_calls
                        .unwrap_or(DEFAULT_MAX_CONCURRENT_CALLS),
                    fetch: FetchOptions {
                        origin: server.mcpl.fetch.origin,
                        token: server.mcpl.fetch.token,
                        max_bytes: server.mcpl.fetch.max_bytes.unwrap_or(fetch.max_bytes),
                        budget_bytes: server.mcpl.fetch.budget_bytes.unwrap_or(fetch.budget_bytes),
                        eager_max_bytes: server
                            .mcpl
                            .fetch
                            .eager_max_bytes
                            .unwrap_or(fetch.eager_max_bytes),
                    },
                },
            });
        }
        Ok(Config {
            servers,
            spill_dir: raw.mcpl.spill_dir,
            fetch_dir: raw.mcpl.fetch_dir,
            context_window: raw.mcpl.context_window.unwrap_or(DEFAULT_CONTEXT_WINDOW),
            spill_store: SpillStoreConfig::from_json(raw.mcpl.spill_store)
                .map_err(|(key, message)| key_error(join_key("mcpl.spillStore", &key), message))?,
            spill_notice: match raw.mcpl.spill_notice {
                Some(RawNotice::Path) => SpillNotice::Path,
                Some(RawNotice::ReadResult) | None => SpillNotice::ReadResult,
            },
            spill_ttl_hours: raw.mcpl.spill_ttl_hours,
        })
    }
}

fn deserialize<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, (String, String)> {
    let deserializer = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let key = e.path().to_string();
        let key = if key == "." || key == "?" {
            "(top)".to_owned()
        } else {
            key
        };
        (key, e.inner().to_string())
    })
}

fn join_key(prefix: &str, rest: &str) -> String {
    match rest {
        "." => prefix.to_owned(),
        rest if rest.starts_with('[') => format!("{prefix}{rest}"),
        rest => format!("{prefix}.{rest}"),
    }
}
