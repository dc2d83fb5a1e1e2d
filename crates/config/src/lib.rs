//! The host's configuration, in the shape users already know:
//!
//! ```json
//! {"mcpServers": {"remote": {"type": "http", "url": "https://mcp.example/mcp",
//!                            "headers": {"X-Team": "${TEAM}"}, "mcpl": {"tokenEnv": "MCP_TOKEN"}},
//!                 "files": {"command": "node", "args": ["server.js"], "env": {"K": "v"},
//!                           "mcpl": {"budget": 8000, "messageBudget": 2000, "uris": "credential-free",
//!                                    "timeoutMs": 30000, "maxMessageBytes": 67108864,
//!                                    "maxConcurrentCalls": 4, "withholdCredentialUrls": true,
//!                                    "toolBudgets": {"read_log": 30000}, "instructionsBytes": 2048,
//!                                    "fetch": {"origin": "https://files.example",
//!                                              "token": "...", "maxBytes": 1048576}}}},
//!  "mcpl": {"spillDir": "/var/tmp/mcpl/spill", "fetchDir": "/var/tmp/mcpl/refs",
//!           "contextWindow": 200000, "scaleImages": true, "imageBase64": 10485760,
//!           "maxImages": 600, "maxBodyBytes": 32000000, "spillNotice": "read_result",
//!           "spillTtlHours": 24, "models": {"my-model": {"images": true, "contextWindow": 32000}},
//!           "tlsRoots": ["/etc/mcpl/private-ca.pem"], "maxToolBudget": 50000,
//!           "deferToolsAbovePercent": 10,
//!           "spillStore": {"type": "s3", "bucket": "b", "prefix": "mcpl/", "endpoint": "..."}}}
//! ```
//!
//! `spillStore` is `{"type": "local"}` (the default, in `spillDir`) or an S3-compatible bucket,
//! whose credentials come from the usual AWS environment variables or profile: a credential
//! key in the file is an error (`docs/spill-stores.md`).
//!
//! A stdio server inherits only the variables [`DEFAULT_INHERITED_ENV`] names from mcpl's
//! environment, then what its `env` sets; `"inheritEnv": ["NAME", ...]` adds those variables,
//! and `"inheritEnv": true` gives it all of mcpl's (decision 0101).
//!
//! `withholdCredentialUrls` (default `true`) withholds credential-shaped urls no block claims
//! from the server's strings (`docs/redaction.md`); set it `false` only for a server whose text
//! is trusted to hold no secret. Everything under `mcpl` is mcpl's own and optional. Unknown keys are errors, and every error
//! names the key it is about (`mcpServers.files.mcpl.budget: invalid type: string "8k",
//! expected u64`), so a typo never silently turns an option off.

pub mod models;
pub mod secrets;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpl_budget::{DEFAULT_BUDGET, DEFAULT_TOOL_BUDGET_CEILING, SpillNotice};
pub use mcpl_budget::{S3Location, SpillStoreConfig};
use mcpl_lanes::UriPolicy;
use serde::Deserialize;
use serde_json::Value;

use std::sync::Arc;

use mcpl_client::{BearerToken, DEFAULT_MAX_MESSAGE_BYTES, Launch, Limits};
pub use mcpl_client::{DEFAULT_INHERITED_ENV, Dial, InheritEnv, Protocol, Root, Transport};
pub use mcpl_fetch::{
    DEFAULT_EAGER_MAX_BYTES, DEFAULT_FETCH_BUDGET_BYTES, DEFAULT_FETCH_MAX_BYTES, FetchOptions,
};

/// How long a call waits for its answer unless a server's options say otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a call may take in all, progress and task polls included, unless a server's
/// options say otherwise: ten minutes.
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(600);
/// How many of one model turn's calls may be outstanding at once on one server unless its
/// options say otherwise.
pub const DEFAULT_MAX_CONCURRENT_CALLS: usize = 4;
pub use mcpl_budget::DEFAULT_MESSAGE_BUDGET;
/// The context window the loop checks each round against unless the config says otherwise.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 200_000;
/// The most bytes of a server's `instructions` the model reads unless the server's config says
/// otherwise (`mcpl.instructionsBytes`): 2 KB, as Claude Code keeps (decision 0134).
pub const DEFAULT_INSTRUCTIONS_BYTES: usize = 2048;
/// The share of the context window, in percent, the servers' tool definitions may take before
/// they are deferred behind `search_tools` (`deferToolsAbovePercent`).
pub const DEFAULT_DEFER_TOOLS_PERCENT: u64 = 10;

/// The whole configuration.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Config {
    /// The servers, in the file's order (the order references' servers are tried in).
    pub servers: Vec<ServerConfig>,
    /// Where spill files go; a folder under the system's temporary folder when absent.
    pub spill_dir: Option<PathBuf>,
    /// Where fetched references go; a folder under the system's temporary folder when absent.
    pub fetch_dir: Option<PathBuf>,
    /// The model's context window, in estimated tokens.
    pub context_window: u64,
    /// The route settings: request limits the platform and model raise, and image scaling.
    pub route: RouteSettings,
    /// Where spills go: the local folder, or an S3-compatible bucket.
    pub spill_store: SpillStoreConfig,
    /// How an omission notice names a spill (`spillNotice`: `read_result` or `path`).
    pub spill_notice: SpillNotice,
    /// How long spills are kept, in hours, for `cargo xtask spill-gc` (`spillTtlHours`).
    pub spill_ttl_hours: Option<u64>,
    /// PEM files of CA certificates every TLS connection trusts beside the Mozilla roots
    /// (`tlsRoots`): a private server's or a proxy's CA.
    pub tls_roots: Vec<PathBuf>,
    /// What each model named here takes, over the model table (`models`).
    pub models: BTreeMap<String, models::ModelOverride>,
    /// The most estimated tokens a tool's own budget may be (`maxToolBudget`): a size its
    /// server declares, or a server's `toolBudgets`, is held to it.
    pub max_tool_budget: u64,
    /// The share of the context window, in percent, the servers' tool definitions may take
    /// before they are deferred behind `search_tools` (`deferToolsAbovePercent`); 100 never
    /// defers.
    pub defer_tools_percent: u64,
}

impl Default for Config {
    /// The configuration of a file with no server and no mcpl options.
    fn default() -> Config {
        Config {
            servers: Vec::new(),
            spill_dir: None,
            fetch_dir: None,
            context_window: DEFAULT_CONTEXT_WINDOW,
            defer_tools_percent: DEFAULT_DEFER_TOOLS_PERCENT,
            route: RouteSettings::default(),
            spill_store: SpillStoreConfig::Local,
            spill_notice: SpillNotice::ReadResult,
            spill_ttl_hours: None,
            tls_roots: Vec::new(),
            models: BTreeMap::new(),
            max_tool_budget: DEFAULT_TOOL_BUDGET_CEILING,
        }
    }
}

/// What the configuration says of the route beyond its name (`mcpl.scaleImages`,
/// `mcpl.imageBase64`, `mcpl.maxImages`, `mcpl.maxBodyBytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RouteSettings {
    /// Whether an image over a per-image limit or the many-images side is scaled to fit (on by
    /// default) rather than left out.
    pub scale_images: bool,
    /// The most base64 characters of one image, in place of the route's (Anthropic's direct API
    /// takes 10,485,760).
    pub image_base64: Option<u64>,
    /// The most images in one request, in place of the route's (600 on Anthropic's larger-window
    /// models).
    pub max_images: Option<usize>,
    /// The largest request body in bytes, in place of the route's (32,000,000 on Anthropic).
    pub body_bytes: Option<u64>,
}

impl Default for RouteSettings {
    fn default() -> RouteSettings {
        RouteSettings {
            scale_images: true,
            image_base64: None,
            max_images: None,
            body_bytes: None,
        }
    }
}

impl RouteSettings {
    /// The route's request limits with these settings applied.
    pub fn limits(&self, route: mcpl_lanes::RouteId) -> mcpl_lanes::RequestLimits {
        let mut limits = route.request_limits();
        if let Some(chars) = self.image_base64 {
            limits = limits.with_image_base64(chars);
        }
        if let Some(images) = self.max_images {
            limits = limits.with_max_images(images);
        }
        if let Some(bytes) = self.body_bytes {
            limits.body_bytes = Some(bytes);
        }
        limits
    }
}

/// One server and mcpl's options for it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerConfig {
    /// How to start it.
    pub launch: Launch,
    /// mcpl's options for it.
    pub options: ServerOptions,
}

impl ServerConfig {
    /// The server `launch` starts or reaches, with mcpl's `options` for it.
    pub fn new(launch: Launch, options: ServerOptions) -> ServerConfig {
        ServerConfig { launch, options }
    }
}

/// mcpl's per-server options.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerOptions {
    /// The tool-result budget in estimated tokens.
    pub budget: u64,
    /// The budget of each push event and channel message the server sends, in estimated tokens
    /// (`mcpl.messageBudget`): one over it is cut head and tail and spilled, as a result is.
    pub message_budget: u64,
    /// Which uris may be shown.
    pub uri_policy: UriPolicy,
    /// Whether credential-shaped urls no block claims are withheld from this server's strings
    /// (`mcpl.withholdCredentialUrls`, on by default; see `docs/redaction.md`).
    pub withhold_credential_urls: bool,
    /// How long one call waits for its answer, or for the server's next progress or task status.
    pub timeout: Duration,
    /// How long one call may take in all, progress or not (`mcpl.totalTimeoutMs`).
    pub total_timeout: Duration,
    /// The longest message the server may send, in bytes: a longer one fails the call it
    /// answers, and is never held past this.
    pub max_message_bytes: usize,
    /// How many of one model turn's calls may be outstanding at once on this server (calls to
    /// different servers always run at once).
    pub max_concurrent_calls: usize,
    /// The reference fetcher's options for references this server delivers.
    pub fetch: FetchOptions,
    /// A dialed server's OAuth (`mcpl.oauth`; on by default with no fixed token), checked.
    pub oauth: Option<mcpl_auth::OAuthOptions>,
    /// Budgets of the server's tools, by the tool's own name, in estimated tokens
    /// (`mcpl.toolBudgets`): each replaces `budget` for that tool, up to `maxToolBudget`.
    pub tool_budgets: BTreeMap<String, u64>,
    /// The most bytes of the server's `instructions` the model reads (`mcpl.instructionsBytes`,
    /// 0 for none).
    pub instructions_bytes: usize,
}

impl ServerOptions {
    /// The bounds the server's connection keeps.
    pub fn limits(&self) -> Limits {
        Limits::with_timeout(self.timeout).with_max_message_bytes(self.max_message_bytes)
    }
}

impl Default for ServerOptions {
    fn default() -> ServerOptions {
        ServerOptions {
            budget: DEFAULT_BUDGET,
            message_budget: DEFAULT_MESSAGE_BUDGET,
            uri_policy: UriPolicy::Hidden,
            withhold_credential_urls: true,
            timeout: DEFAULT_TIMEOUT,
            total_timeout: DEFAULT_TOTAL_TIMEOUT,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_concurrent_calls: DEFAULT_MAX_CONCURRENT_CALLS,
            fetch: FetchOptions::default(),
            oauth: None,
            tool_budgets: BTreeMap::new(),
            instructions_bytes: DEFAULT_INSTRUCTIONS_BYTES,
        }
    }
}

/// Why a configuration cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    defer_tools_above_percent: Option<u64>,
    scale_images: Option<bool>,
    image_base64: Option<u64>,
    max_images: Option<usize>,
    max_body_bytes: Option<u64>,
    spill_store: Option<serde_json::Map<String, Value>>,
    spill_notice: Option<RawNotice>,
    spill_ttl_hours: Option<u64>,
    #[serde(default)]
    tls_roots: Vec<PathBuf>,
    #[serde(default)]
    models: BTreeMap<String, models::ModelOverride>,
    max_tool_budget: Option<u64>,
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
    command: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    protocol: Option<RawProtocol>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    /// `stdio`, `http` (or `streamable-http`) or `ws`; from the url's scheme when absent.
    #[serde(rename = "type")]
    transport: Option<RawTransport>,
    #[serde(default)]
    mcpl: RawOptions,
}

#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
enum RawTransport {
    Stdio,
    #[serde(alias = "streamable-http")]
    Http,
    Ws,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum RawProtocol {
    Legacy,
    Modern,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoot {
    uri: String,
    name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawOptions {
    budget: Option<u64>,
    message_budget: Option<u64>,
    uris: Option<RawUris>,
    withhold_credential_urls: Option<bool>,
    timeout_ms: Option<u64>,
    total_timeout_ms: Option<u64>,
    max_message_bytes: Option<usize>,
    max_concurrent_calls: Option<usize>,
    token: Option<String>,
    token_env: Option<String>,
    inherit_env: Option<RawInheritEnv>,
    #[serde(default)]
    roots: Vec<RawRoot>,
    #[serde(default)]
    fetch: RawFetch,
    #[serde(default)]
    oauth: mcpl_auth::OAuthSetting,
    #[serde(default)]
    tool_budgets: BTreeMap<String, u64>,
    instructions_bytes: Option<usize>,
}

/// `mcpl.inheritEnv`: `false` (the minimal list), `true` (everything) or variable names.
enum RawInheritEnv {
    All(bool),
    Named(Vec<VariableName>),
}

impl<'de> Deserialize<'de> for RawInheritEnv {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = RawInheritEnv;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("true, false or an array of environment variable names")
            }
            fn visit_bool<E: serde::de::Error>(self, all: bool) -> Result<RawInheritEnv, E> {
                Ok(RawInheritEnv::All(all))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<RawInheritEnv, A::Error> {
                let mut names = Vec::new();
                while let Some(name) = seq.next_element()? {
                    names.push(name);
                }
                Ok(RawInheritEnv::Named(names))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl RawInheritEnv {
    fn into_inherit_env(self) -> InheritEnv {
        match self {
            RawInheritEnv::All(true) => InheritEnv::All,
            RawInheritEnv::All(false) => InheritEnv::Minimal,
            RawInheritEnv::Named(names) => {
                InheritEnv::Named(names.into_iter().map(|name| name.0).collect())
            }
        }
    }
}

/// An environment variable's name as `inheritEnv` lists it: not empty, no `=` and no NUL, which
/// no variable's name can hold.
struct VariableName(String);

impl<'de> Deserialize<'de> for VariableName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(serde::de::Error::custom(format!(
                "{name:?} is not an environment variable name"
            )));
        }
        Ok(VariableName(name))
    }
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
        // At 0 no searched tool could be loaded: the share is what loaded tools may take.
        if raw
            .mcpl
            .defer_tools_above_percent
            .is_some_and(|p| !(1..=100).contains(&p))
        {
            return Err(key_error(
                "mcpl.deferToolsAbovePercent".to_owned(),
                "must be from 1 to 100".to_owned(),
            ));
        }
        let mut servers = Vec::with_capacity(raw.mcp_servers.len());
        for (name, value) in &raw.mcp_servers {
            let server: RawServer = serde_path_to_error::deserialize(value).map_err(|e| {
                key_error(
                    join_key(&format!("mcpServers.{name}"), &e.path().to_string()),
                    e.inner().to_string(),
                )
            })?;
            let at = |key: &str| format!("mcpServers.{name}.{key}");
            let (transport, protocol) =
                transport(&server, &at).map_err(|(k, m)| key_error(k, m))?;
            let dialed = !matches!(transport, Transport::Stdio);
            if dialed && server.mcpl.fetch.origin.is_some() {
                return Err(key_error(
                    at("mcpl.fetch.origin"),
                    "a dialed server's fetch origin is its url".to_owned(),
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
            let (fetch_origin, fetch_token, oauth) = match &transport {
                Transport::Http(dial) | Transport::Ws(dial) => {
                    let token = bearer(&server.mcpl, &at).map_err(|(k, m)| key_error(k, m))?;
                    let oauth = (server.mcpl.oauth)
                        .resolve(token.is_some(), &expand)
                        .map_err(|e| key_error(at(&format!("mcpl.{}", e.key_path())), e.message))?;
                    let token = server.mcpl.fetch.token.or(token);
                    (Some(fetch_origin(&dial.url)), token, oauth)
                }
                // Stdio: this file makes no other transport.
                _ => (server.mcpl.fetch.origin, server.mcpl.fetch.token, None),
            };
            let mut launch = Launch::new(name.clone(), transport).with_protocol(protocol);
            launch.roots = server
                .mcpl
                .roots
                .into_iter()
                .map(|r| Root::new(r.uri, r.name))
                .collect();
            launch.command = server.command.unwrap_or_default();
            launch.args = server.args;
            launch.env = server.env;
            launch.inherit_env = server
                .mcpl
                .inherit_env
                .map_or_else(InheritEnv::default, RawInheritEnv::into_inherit_env);
            launch.cwd = server.cwd;
            let mut fetch = FetchOptions::default();
            fetch.origin = fetch_origin;
            fetch.token = fetch_token;
            fetch.max_bytes = server.mcpl.fetch.max_bytes.unwrap_or(fetch.max_bytes);
            fetch.budget_bytes = server.mcpl.fetch.budget_bytes.unwrap_or(fetch.budget_bytes);
            fetch.eager_max_bytes = server
                .mcpl
                .fetch
                .eager_max_bytes
                .unwrap_or(fetch.eager_max_bytes);
            servers.push(ServerConfig {
                launch,
                options: ServerOptions {
                    budget: server.mcpl.budget.unwrap_or(DEFAULT_BUDGET),
                    message_budget: server.mcpl.message_budget.unwrap_or(DEFAULT_MESSAGE_BUDGET),
                    uri_policy: match server.mcpl.uris {
                        Some(RawUris::CredentialFree) => UriPolicy::CredentialFree,
                        Some(RawUris::Hidden) | None => UriPolicy::Hidden,
                    },
                    withhold_credential_urls: server.mcpl.withhold_credential_urls.unwrap_or(true),
                    timeout: server
                        .mcpl
                        .timeout_ms
                        .map_or(DEFAULT_TIMEOUT, Duration::from_millis),
                    total_timeout: server
                        .mcpl
                        .total_timeout_ms
                        .map_or(DEFAULT_TOTAL_TIMEOUT, Duration::from_millis),
                    max_message_bytes: server
                        .mcpl
                        .max_message_bytes
                        .unwrap_or(DEFAULT_MAX_MESSAGE_BYTES),
                    max_concurrent_calls: server
                        .mcpl
                        .max_concurrent_calls
                        .unwrap_or(DEFAULT_MAX_CONCURRENT_CALLS),
                    fetch,
                    oauth,
                    tool_budgets: server.mcpl.tool_budgets,
                    instructions_bytes: server
                        .mcpl
                        .instructions_bytes
                        .unwrap_or(DEFAULT_INSTRUCTIONS_BYTES),
                },
            });
        }
        Ok(Config {
            servers,
            spill_dir: raw.mcpl.spill_dir,
            fetch_dir: raw.mcpl.fetch_dir,
            context_window: raw.mcpl.context_window.unwrap_or(DEFAULT_CONTEXT_WINDOW),
            defer_tools_percent: raw
                .mcpl
                .defer_tools_above_percent
                .unwrap_or(DEFAULT_DEFER_TOOLS_PERCENT),
            route: RouteSettings {
                scale_images: raw.mcpl.scale_images.unwrap_or(true),
                image_base64: raw.mcpl.image_base64,
                max_images: raw.mcpl.max_images,
                body_bytes: raw.mcpl.max_body_bytes,
            },
            spill_store: SpillStoreConfig::from_json(raw.mcpl.spill_store)
                .map_err(|(key, message)| key_error(join_key("mcpl.spillStore", &key), message))?,
            spill_notice: match raw.mcpl.spill_notice {
                Some(RawNotice::Path) => SpillNotice::Path,
                Some(RawNotice::ReadResult) | None => SpillNotice::ReadResult,
            },
            spill_ttl_hours: raw.mcpl.spill_ttl_hours,
            tls_roots: raw.mcpl.tls_roots,
            models: raw.mcpl.models,
            max_tool_budget: raw
                .mcpl
                .max_tool_budget
                .unwrap_or(DEFAULT_TOOL_BUDGET_CEILING),
        })
    }
}

/// How a server is reached and which protocol family it speaks; errors name their key.
fn transport(
    server: &RawServer,
    at: &dyn Fn(&str) -> String,
) -> Result<(Transport, Protocol), (String, String)> {
    let scheme = server
        .url
        .as_deref()
        .map(|u| u.split(':').next().unwrap_or_default());
    let kind = match (server.transport, scheme) {
        (Some(kind), _) => kind,
        (None, Some("ws" | "wss")) => RawTransport::Ws,
        (None, Some(_)) => RawTransport::Http,
        (None, None) => RawTransport::Stdio,
    };
    if kind == RawTransport::Stdio {
        let command = server.command.as_deref().ok_or_else(|| {
            (
                at("").trim_end_matches('.').to_owned(),
                "missing field `command` or `url`".to_owned(),
            )
        })?;
        if command.trim().is_empty() {
            return Err((at("command"), "is empty".to_owned()));
        }
        for (key, set) in [
            ("url", server.url.is_some()),
            ("headers", !server.headers.is_empty()),
            ("mcpl.token", server.mcpl.token.is_some()),
            ("mcpl.tokenEnv", server.mcpl.token_env.is_some()),
            (
                "mcpl.oauth",
                server.mcpl.oauth != mcpl_auth::OAuthSetting::Absent,
            ),
        ] {
            if set {
                return Err((
                    at(key),
                    "only a dialed server (http or ws) takes it".to_owned(),
                ));
            }
        }
        let protocol = match server.protocol {
            Some(RawProtocol::Modern) => Protocol::Modern,
            Some(RawProtocol::Legacy) | None => Protocol::Legacy,
        };
        return Ok((Transport::Stdio, protocol));
    }
    for (key, set) in [
        ("command", server.command.is_some()),
        ("args", !server.args.is_empty()),
        ("env", !server.env.is_empty()),
        ("cwd", server.cwd.is_some()),
        ("protocol", server.protocol.is_some()),
    ] {
        if set {
            let why =
                "a dialed server has none (ws speaks MCP 2024-11-05 with MCPL, http modern MCP)";
            return Err((at(key), why.to_owned()));
        }
    }
    if server.mcpl.inherit_env.is_some() {
        return Err((
            at("mcpl.inheritEnv"),
            "only a stdio server takes it".to_owned(),
        ));
    }
    let raw = server
        .url
        .as_deref()
        .ok_or_else(|| (at("url"), "is missing".to_owned()))?;
    let expanded = expand(raw).map_err(|m| (at("url"), m))?;
    let url = url::Url::parse(&expanded).map_err(|e| (at("url"), format!("{e}")))?;
    let schemes: &[&str] = match kind {
        RawTransport::Ws => &["ws", "wss"],
        _ => &["http", "https"],
    };
    if !schemes.contains(&url.scheme()) || url.host().is_none() {
        return Err((at("url"), format!("is not a {} url", schemes.join(" or "))));
    }
    let mut headers = Vec::with_capacity(server.headers.len());
    for (header, value) in &server.headers {
        let value = expand(value).map_err(|m| (at(&format!("headers.{header}")), m))?;
        headers.push((header.clone(), value));
    }
    let authorizer = bearer(&server.mcpl, at)?
        .map(|token| Arc::new(BearerToken::new(&url, token)) as Arc<dyn mcpl_client::Authorizer>);
    let dial = Dial::new(url)
        .with_headers(headers)
        .with_authorizer(authorizer);
    Ok(match kind {
        RawTransport::Ws => (Transport::Ws(dial), Protocol::Legacy),
        _ => (Transport::Http(dial), Protocol::Modern),
    })
}

/// The server's bearer token: `mcpl.token` (with `${ENV}` expanded), or the variable
/// `mcpl.tokenEnv` names.
fn bearer(
    options: &RawOptions,
    at: &dyn Fn(&str) -> String,
) -> Result<Option<String>, (String, String)> {
    match (&options.token, &options.token_env) {
        (Some(_), Some(_)) => Err((
            at("mcpl.tokenEnv"),
            "give token or tokenEnv, not both".to_owned(),
        )),
        (Some(token), None) => expand(token).map(Some).map_err(|m| (at("mcpl.token"), m)),
        (None, Some(variable)) => match std::env::var(variable) {
            Ok(token) if !token.is_empty() => Ok(Some(token)),
            _ => Err((at("mcpl.tokenEnv"), format!("{variable} is not set"))),
        },
        (None, None) => Ok(None),
    }
}

/// `text` with each `${NAME}` replaced by the environment variable's value; an unset variable
/// is an error that names it (never its value).
fn expand(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| "has a `${` without its `}`".to_owned())?;
        let name = &after[..end];
        let value = std::env::var(name).map_err(|_| format!("${{{name}}} is not set"))?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The origin a dialed server's references are fetched from: its url's, `ws` read as `http`
/// and `wss` as `https`.
fn fetch_origin(url: &url::Url) -> String {
    let scheme = match url.scheme() {
        "ws" => "http",
        "wss" => "https",
        other => other,
    };
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{scheme}://{host}:{port}"),
        None => format!("{scheme}://{host}"),
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

#[cfg(test)]
mod tests {
    use super::Config;

    #[test]
    fn the_default_is_a_file_with_no_server() {
        let empty = Config::from_slice("mcpl.json", br#"{"mcpServers": {}}"#).unwrap();
        assert_eq!(Config::default(), empty);
    }

    #[test]
    fn tool_budgets_instructions_and_the_ceiling_are_read() {
        let config = Config::from_slice(
            "mcpl.json",
            br#"{"mcpServers": {"s": {"command": "x", "mcpl": {"toolBudgets": {"read_log": 30000},
                 "instructionsBytes": 0}}}, "mcpl": {"maxToolBudget": 40000}}"#,
        )
        .unwrap();
        assert_eq!(config.max_tool_budget, 40_000);
        let options = &config.servers[0].options;
        assert_eq!(options.tool_budgets.get("read_log"), Some(&30_000));
        assert_eq!(options.instructions_bytes, 0);
        let default =
            Config::from_slice("mcpl.json", br#"{"mcpServers": {"s": {"command": "x"}}}"#).unwrap();
        assert_eq!(
            default.max_tool_budget,
            mcpl_budget::DEFAULT_TOOL_BUDGET_CEILING
        );
        assert_eq!(
            default.servers[0].options.instructions_bytes,
            super::DEFAULT_INSTRUCTIONS_BYTES
        );
        let error = Config::from_slice(
            "mcpl.json",
            br#"{"mcpServers": {"s": {"command": "x", "mcpl": {"toolBudgets": {"t": "big"}}}}}"#,
        )
        .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("mcpServers.s.mcpl.toolBudgets.t"),
            "{error}"
        );
    }
}
