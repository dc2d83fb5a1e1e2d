//! The inference loop: servers, lanes, budget and a model, round by round.
//!
//! [`Host::start`] starts every configured server (one that cannot start is reported and the
//! others go on) and lists their tools. [`Host::run`] then plays a conversation: each round it
//! handles what the servers sent since the last one (push events, channel messages), asks the
//! servers that offer it for context injections, encodes the request for the route, checks the
//! window projection, records the request body, and asks the [`Model`]. The model's tool calls
//! go to their servers; each result passes classify, lanes and budget (fitted to the server's
//! budget, spilled whole first when cut, its small references fetched first), its live copy
//! goes into the next request and its stored copy into history. `fetch_reference` goes to the
//! reference fetcher.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use mcpl_budget::{
    Heuristic, LocalSpillStore, PricedRoute, Pricer, Round, Spill, SpillStore, TokenEstimator,
    fit_tool_result, project_round,
};
use mcpl_classify::{Block, classify};
use mcpl_lanes::{
    ImageLedger, LiveCopy, RefId, Registry, ServerName, ToolResult, ToolResultCopies,
};
use serde_json::{Value, json};

use crate::config::{Config, ServerConfig};
use crate::mcpl::{Injections, Lanes, Queued};
use crate::model::{Model, ModelError};
use mcpl_client::{CallError, Connection, ServerRequests};
use mcpl_encode::conversation::{
    Content, Message, ModelRequest, ToolCall, ToolOutput, ToolSpec, model_tool_name,
};
use mcpl_fetch::{Fetcher, ResourceReader};

/// The host tool every conversation offers.
pub const FETCH_REFERENCE: &str = "fetch_reference";

/// What the model reads about `fetch_reference` (the predecessor host's words, with the host's
/// own folder in place of a workspace).
pub const FETCH_REFERENCE_DESCRIPTION: &str = "Fetch a referenced payload (a [ref_…] id from a \
    tool result or event) to a file in a folder the host owns, via the host-mediated fetcher. The \
    fetch is origin-bound to the server that sent the reference, size-capped, and \
    digest-verified when the reference carries one. Returns the path plus verified size/type. \
    Small payloads may already be fetched automatically — their stubs show a saved path instead.";

/// How long a server may take to answer `context/beforeInference` before the round goes on
/// without it.
const INJECTION_TIMEOUT: Duration = Duration::from_secs(5);

/// What the loop needs besides the servers.
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// The route requests are encoded for.
    pub route: &'static PricedRoute,
    /// The provider's model name, as requests carry it.
    pub model: String,
    /// The host's own system prompt.
    pub system: String,
    /// The most tokens the model may answer with each round.
    pub max_tokens: u32,
    /// The model's context window in estimated tokens.
    pub context_window: u64,
    /// Where spill files go.
    pub spill_dir: PathBuf,
    /// Where fetched references go.
    pub fetch_dir: PathBuf,
    /// The most rounds one conversation may take.
    pub max_rounds: usize,
}

impl HostOptions {
    /// Options for a route, with the configuration's context window and spill folder.
    pub fn new(route: &'static PricedRoute, config: &Config) -> HostOptions {
        HostOptions {
            route,
            model: "mcpl-scripted".to_owned(),
            system: "You are an agent. Tool results are shown as the host's policy allows; \
                     fetch a reference with fetch_reference."
                .to_owned(),
            max_tokens: 4096,
            context_window: config.context_window,
            spill_dir: config
                .spill_dir
                .clone()
                .unwrap_or_else(|| fresh_private_dir("mcpl-spill-")),
            fetch_dir: config
                .fetch_dir
                .clone()
                .unwrap_or_else(|| fresh_private_dir("mcpl-refs-")),
            max_rounds: 64,
        }
    }
}

/// A new owner-only folder under the system's temporary folder whose name no one can predict,
/// made the way `mkdtemp` makes one (`<prefix>` and 16 random characters). Should none be
/// possible, the fixed `<prefix>default`, which the stores use only if it proves private.
pub fn fresh_private_dir(prefix: &str) -> PathBuf {
    tempfile::Builder::new()
        .prefix(prefix)
        .rand_bytes(16)
        .tempdir()
        .map_or_else(
            |_| std::env::temp_dir().join(format!("{prefix}default")),
            tempfile::TempDir::keep,
        )
}

/// One configured server and its connection.
#[derive(Debug)]
pub struct Server {
    /// Its configuration.
    pub config: ServerConfig,
    /// The running connection; `None` when it could not start.
    pub connection: Option<Connection>,
    /// Why it could not start, or why it stopped.
    pub error: Option<String>,
    /// The tools it listed, as it listed them.
    pub tools: Vec<Value>,
}

/// One tool call as the loop handled it: what went to the model and why.
#[derive(Debug, Clone, PartialEq)]
pub struct CallReport {
    /// The round it was made in (1-based).
    pub round: usize,
    /// The server, or `None` for a host tool.
    pub server: Option<String>,
    /// The tool's own name on its server.
    pub tool: String,
    /// The call.
    pub call: ToolCall,
    /// The result as the model gets it.
    pub output: ToolOutput,
    /// The live copy's price on the route, in estimated tokens.
    pub estimated_tokens: u64,
    /// The spill file and attachments, when the result was cut.
    pub spill: Option<Spill>,
    /// What happened on the way, one line each.
    pub diagnostics: Vec<String>,
}

/// One request the loop sent.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundReport {
    /// The round (1-based).
    pub round: usize,
    /// The tokens this round appends, as the window projection counts them.
    pub appended_tokens: u64,
    /// The projected size of the whole request.
    pub projected_tokens: u64,
    /// Messages from servers this round carries.
    pub messages: Vec<Queued>,
    /// Injections this round carries, by server.
    pub injections: Vec<(String, Injections)>,
    /// What the loop decided, one line each.
    pub diagnostics: Vec<String>,
}

/// How a conversation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The model's final answer.
    pub answer: String,
    /// How many requests were sent.
    pub rounds: usize,
}

/// Why the loop stopped before the model's final answer.
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    /// The model failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The model takes another route's requests.
    #[error("the model takes {model} requests, but the route is {route}")]
    RouteMismatch {
        /// The model's route.
        model: &'static str,
        /// The host's route.
        route: &'static str,
    },
    /// The next request would not fit the context window.
    #[error(
        "the next request would need about {needed} tokens; the context window is {window} (round {round})"
    )]
    Window {
        /// The round.
        round: usize,
        /// The projected tokens.
        needed: u64,
        /// The window.
        window: u64,
    },
    /// The transcript could not be written.
    #[error("writing the transcript: {0}")]
    Transcript(std::io::Error),
    /// The model kept calling tools.
    #[error("the model was still calling tools after {0} rounds")]
    TooManyRounds(usize),
}

/// The host: servers, lane state, spill store and the tools offered to the model.
#[derive(Debug)]
pub struct Host {
    /// The servers, in the configuration's order.
    pub servers: Vec<Server>,
    /// The lane state every server shares.
    pub lanes: Lanes,
    /// What the loop was set up with.
    pub options: HostOptions,
    spill: Result<LocalSpillStore, String>,
    fetcher: Result<Fetcher, String>,
    tools: Vec<ToolSpec>,
    /// Model-facing tool name to (server index, tool name).
    tool_index: BTreeMap<String, (usize, String)>,
    /// Every tool call, in order.
    pub calls: Vec<CallReport>,
    /// Every round, in order.
    pub rounds: Vec<RoundReport>,
    history_tokens: u64,
}

impl Host {
    /// Starts every configured server and lists its tools. A server that cannot start, or
    /// whose tools cannot be listed, is reported in its [`Server::error`] and the others go on.
    pub fn start(config: &Config, options: HostOptions) -> Host {
        Host::start_with(config, options, Registry::new(), ImageLedger::new())
    }

    /// As [`Host::start`], with a given registry and ledger (seeded ones repeat their ids).
    pub fn start_with(
        config: &Config,
        options: HostOptions,
        registry: Registry,
        ledger: ImageLedger,
    ) -> Host {
        let mut lanes = Lanes::new(options.route, registry, ledger);
        for server in &config.servers {
            lanes
                .uri_policies
                .insert(server.launch.name.clone(), server.options.uri_policy);
            lanes.registry.hidden_mut().set_scan(
                &ServerName::new(server.launch.name.as_str()),
                server.options.withhold_credential_urls,
            );
        }
        let spill = LocalSpillStore::new(&options.spill_dir).map_err(|e| e.to_string());
        let mut fetcher = Fetcher::new(&options.fetch_dir).map_err(|e| e.to_string());
        if let Ok(fetcher) = &mut fetcher {
            for server in &config.servers {
                fetcher.add_server(&server.launch.name, &server.options.fetch);
            }
        }
        let mut host = Host {
            servers: Vec::with_capacity(config.servers.len()),
            lanes,
            options,
            spill,
            fetcher,
            tools: vec![fetch_reference_spec()],
            tool_index: BTreeMap::new(),
            calls: Vec::new(),
            rounds: Vec::new(),
            history_tokens: 0,
        };
        for server in &config.servers {
            let started = host.start_server(server);
            host.servers.push(started);
        }
        host
    }

    fn start_server(&mut self, config: &ServerConfig) -> Server {
        let name = &config.launch.name;
        let timeout = config.options.timeout;
        let mut server = Server {
            config: config.clone(),
            connection: None,
            error: None,
            tools: Vec::new(),
        };
        let mut connection = match Connection::start(&config.launch, timeout, &mut self.lanes) {
            Ok(connection) => connection,
            Err(error) => {
                tracing::warn!(server = %name, %error, "server not started");
                server.error = Some(error.to_string());
                return server;
            }
        };
        let mut cursor: Option<String> = None;
        loop {
            let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
            match connection.request("tools/list", params, timeout, &mut self.lanes) {
                Ok(result) => {
                    let listed = result.get("tools").and_then(Value::as_array);
                    server.tools.extend(listed.into_iter().flatten().cloned());
                    cursor = result
                        .get("nextCursor")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    if cursor.is_none() {
                        break;
                    }
                }
                Err(error) => {
                    server.error = Some(error.to_string());
                    break;
                }
            }
        }
        let index = self.servers.len();
        for tool in &server.tools {
            let Some(tool_name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            let model_name = model_tool_name(name, tool_name);
            if self.tool_index.contains_key(&model_name) {
                tracing::warn!(server = %name, tool = tool_name, "tool name taken; not offered");
                continue;
            }
            self.tool_index
                .insert(model_name.clone(), (index, tool_name.to_owned()));
            self.tools.push(ToolSpec {
                name: model_name,
                description: tool
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                input_schema: tool
                    .get("inputSchema")
                    .filter(|s| s.is_object())
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object"})),
            });
        }
        server.connection = Some(connection);
        server
    }

    /// The tools offered to the model: every server's, and `fetch_reference`.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// Plays a conversation from `prompt` until the model answers without tool calls. Each
    /// request body is written to `transcript` as one line of JSON before it is sent.
    pub fn run(
        &mut self,
        model: &mut dyn Model,
        prompt: &str,
        mut transcript: Option<&mut dyn Write>,
    ) -> Result<Outcome, LoopError> {
        let route = self.options.route.lanes.name;
        if let Some(model_route) = model.route()
            && model_route != route
        {
            return Err(LoopError::RouteMismatch {
                model: model_route,
                route,
            });
        }
        let mut history = vec![Message::User(vec![Content::Text(prompt.to_owned())])];
        self.history_tokens += estimate(prompt);
        for round in 1..=self.options.max_rounds {
            let report = self.prepare_round(round, &mut history)?;
            let request_messages = place_injections(&history, &report.injections);
            let system = system_prompt(&self.options.system, &report.injections);
            let request = ModelRequest {
                model: &self.options.model,
                system: &system,
                messages: &request_messages,
                tools: &self.tools,
                max_tokens: self.options.max_tokens,
            };
            let body = mcpl_encode::request(route, &request);
            if let Some(out) = transcript.as_mut() {
                write_line(&mut **out, &body).map_err(LoopError::Transcript)?;
            }
            self.rounds.push(report);
            let turn = model.complete(&body)?;
            // Live copies go once: from now on history carries the stored copies.
            settle(&mut history, &self.rounds[round - 1].messages);
            for message in &self.rounds[round - 1].messages {
                self.history_tokens += estimate(&message.stored);
            }
            self.history_tokens += estimate(&turn.text);
            let calls = turn.tool_calls.clone();
            history.push(Message::Assistant {
                text: turn.text.clone(),
                tool_calls: turn.tool_calls,
            });
            if calls.is_empty() {
                return Ok(Outcome {
                    answer: turn.text,
                    rounds: round,
                });
            }
            let outputs = calls
                .iter()
                .map(|call| self.call_tool(round, call))
                .collect();
            history.push(Message::ToolResults(outputs));
        }
        Err(LoopError::TooManyRounds(self.options.max_rounds))
    }

    /// Collects what servers sent, asks for injections, and checks the window projection for
    /// the round about to be sent. Server messages join `history`.
    fn prepare_round(
        &mut self,
        round: usize,
        history: &mut Vec<Message>,
    ) -> Result<RoundReport, LoopError> {
        for server in &mut self.servers {
            if let Some(connection) = &mut server.connection {
                connection.pump(&mut self.lanes);
            }
        }
        let mut injections = Vec::new();
        for server in &mut self.servers {
            let Some(connection) = &mut server.connection else {
                continue;
            };
            if !connection.offers_context_hook() {
                continue;
            }
            let name = server.config.launch.name.clone();
            let params = json!({"inferenceId": format!("inf_{round}"), "round": round});
            let mut found = Injections::default();
            match connection.request(
                "context/beforeInference",
                params,
                INJECTION_TIMEOUT,
                &mut self.lanes,
            ) {
                Ok(answer) => self.lanes.injections(&name, &answer, &mut found),
                // Fail open: the round goes on without this server's injections.
                Err(error) => found.diagnostics.push(error.to_string()),
            }
            injections.push((name, found));
        }
        let messages = std::mem::take(&mut self.lanes.queued);
        for message in &messages {
            history.push(Message::User(message.parts.clone()));
        }
        let mut report = RoundReport {
            round,
            appended_tokens: 0,
            projected_tokens: 0,
            messages,
            injections,
            diagnostics: Vec::new(),
        };
        let appended = self.appended_tokens(history, &report);
        // Every request also carries the system prompt and the tools' definitions, and leaves
        // room for the answer.
        let reserve = u64::from(self.options.max_tokens) + self.fixed_tokens();
        let mut projected = self.history_tokens + appended + reserve;
        report.appended_tokens = appended;
        if projected > self.options.context_window && drop_live_copies(history) {
            // Native parts cost more than their stored text; send the text instead.
            let appended = self.appended_tokens(history, &report);
            projected = self.history_tokens + appended + reserve;
            report.appended_tokens = appended;
            report.diagnostics.push(format!(
                "native tool-result parts sent as their stored copies to fit the context window of {}",
                self.options.context_window
            ));
        }
        report.projected_tokens = projected;
        if projected > self.options.context_window {
            return Err(LoopError::Window {
                round,
                needed: projected,
                window: self.options.context_window,
            });
        }
        Ok(report)
    }

    /// The window projection of what this round appends: the latest tool results as their live
    /// copies will be sent, the servers' messages, and the injections.
    fn appended_tokens(&self, history: &[Message], report: &RoundReport) -> u64 {
        let outputs: &[ToolOutput] = match history
            .iter()
            .rev()
            .find(|m| !matches!(m, Message::User(_)))
        {
            Some(Message::ToolResults(outputs)) => outputs,
            _ => &[],
        };
        let copies: Vec<ToolResultCopies<'_>> = outputs.iter().map(copies_of).collect();
        let message_parts: Vec<Vec<mcpl_lanes::Part<'_>>> = report
            .messages
            .iter()
            .map(|m| m.parts.iter().map(Content::as_part).collect())
            .chain(report.injections.iter().map(|(_, i)| {
                i.before_user
                    .iter()
                    .chain(&i.after_user)
                    .map(Content::as_part)
                    .collect()
            }))
            .collect();
        let round = Round {
            tool_results: copies.iter().collect(),
            injected_text: report
                .injections
                .iter()
                .flat_map(|(_, i)| i.system.iter().map(String::as_str))
                .collect(),
            messages: message_parts.iter().map(Vec::as_slice).collect(),
        };
        let pricer = self.pricer();
        project_round(pricer, &round).unwrap_or_else(|error| {
            // A part the route cannot price counts as its stored text would.
            tracing::debug!(%error, "window projection fell back to stored copies");
            outputs
                .iter()
                .map(|o| estimate(&o.stored))
                .chain(report.messages.iter().map(|m| estimate(&m.stored)))
                .sum()
        })
    }

    /// The system prompt's and the tool definitions' estimated tokens.
    fn fixed_tokens(&self) -> u64 {
        estimate(&self.options.system)
            + self
                .tools
                .iter()
                .map(|tool| {
                    estimate(&tool.name)
                        + estimate(&tool.description)
                        + estimate(&tool.input_schema.to_string())
                })
                .sum::<u64>()
    }

    fn pricer(&self) -> Pricer<'static> {
        Pricer {
            text: &Heuristic,
            route: self.options.route,
        }
    }

    /// One tool call: to its server through classify, lanes and budget, or to a host tool.
    pub fn call_tool(&mut self, round: usize, call: &ToolCall) -> ToolOutput {
        let report = if call.name == FETCH_REFERENCE {
            self.fetch_reference(round, call)
        } else if let Some((index, tool)) = self.tool_index.get(&call.name).cloned() {
            self.call_server_tool(round, call, index, &tool)
        } else {
            let text = format!(
                "unknown tool {}: it is not offered in this conversation",
                call.name
            );
            host_report(round, call, text, true, estimate(""))
        };
        self.history_tokens += estimate(&report.output.stored);
        let output = report.output.clone();
        self.calls.push(report);
        output
    }

    fn call_server_tool(
        &mut self,
        round: usize,
        call: &ToolCall,
        index: usize,
        tool: &str,
    ) -> CallReport {
        let server = &mut self.servers[index];
        let name = server.config.launch.name.clone();
        let options = server.config.options.clone();
        let failed = |error: String| {
            let text = format!("tool call failed: {error}");
            CallReport {
                round,
                server: Some(name.clone()),
                tool: tool.to_owned(),
                call: call.clone(),
                estimated_tokens: estimate(&text),
                output: ToolOutput {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    stored: text,
                    live: None,
                    is_error: true,
                },
                spill: None,
                diagnostics: Vec::new(),
            }
        };
        let Some(connection) = &mut server.connection else {
            let why = server
                .error
                .clone()
                .unwrap_or_else(|| "not running".to_owned());
            return failed(format!("server {name} is not available: {why}"));
        };
        let params = json!({"name": tool, "arguments": call.arguments});
        let result =
            match connection.request("tools/call", params, options.timeout, &mut self.lanes) {
                Ok(result) => result,
                Err(error) => {
                    if matches!(error, CallError::Exited { .. }) {
                        // The process is gone: later calls say so without writing to it.
                        server.error = Some(error.to_string());
                        server.connection = None;
                    }
                    tracing::warn!(server = %name, tool, %error, "tool call failed");
                    // The server's own message reaches the model: redacted as its content is.
                    let shown = self
                        .lanes
                        .projector(&ServerName::new(name.clone()))
                        .server_text(&error.to_string());
                    return failed(shown);
                }
            };
        let server_name = ServerName::new(name.clone());
        self.eager_fetch(&server_name, &result);
        let pricer = self.pricer();
        let mut store = self.spill.as_mut().ok();
        let mut projector = self.lanes.projector(&server_name);
        let fitted = fit_tool_result(
            &mut projector,
            &ToolResult::from_value(&result),
            pricer,
            options.budget,
            store.as_mut().map(|s| *s as &mut dyn SpillStore),
        );
        let mut diagnostics = fitted.diagnostics.clone();
        if let Err(error) = &self.spill {
            diagnostics.push(format!("spill folder unavailable: {error}"));
        }
        let estimated_tokens = fitted
            .price
            .unwrap_or_else(|| estimate(&fitted.copies.stored));
        CallReport {
            round,
            server: Some(name),
            tool: tool.to_owned(),
            call: call.clone(),
            output: ToolOutput {
                call_id: call.id.clone(),
                name: call.name.clone(),
                stored: fitted.copies.stored.clone(),
                live: match &fitted.copies.live {
                    LiveCopy::Stored => None,
                    LiveCopy::Native(parts) => Some(parts.iter().map(Content::from_part).collect()),
                },
                is_error: fitted.copies.is_error,
            },
            estimated_tokens,
            spill: fitted.spill,
            diagnostics,
        }
    }

    /// `fetch_reference`: the fetcher saves the reference's payload in the host's folder and
    /// answers `{"path", "bytes", "mime_type", "digest_verified"}`, or refuses in words.
    fn fetch_reference(&mut self, round: usize, call: &ToolCall) -> CallReport {
        let Some(id) = call.arguments.get("ref_id").and_then(Value::as_str) else {
            let text = mcpl_lanes::markers::unknown_reference("(missing ref_id)");
            return host_report(round, call, text, true, 0);
        };
        let max_bytes = call.arguments.get("max_bytes").and_then(Value::as_u64);
        let (text, is_error) = match &mut self.fetcher {
            Err(error) => (format!("fetching is not available: {error}"), true),
            Ok(fetcher) => {
                // The servers may send requests while a resource is read; they are answered as
                // always and shown once the registry is back.
                let (registry, mut deferring) = self.lanes.split_for_fetch();
                let mut resources = HostResources {
                    servers: &mut self.servers,
                    host: &mut deferring,
                };
                let outcome = fetcher.fetch(registry, id, max_bytes, &mut resources);
                self.lanes.project_deferred();
                match outcome {
                    Ok(saved) => (
                        serde_json::to_string(&saved).unwrap_or_else(|e| e.to_string()),
                        false,
                    ),
                    Err(refusal) => (refusal.to_string(), true),
                }
            }
        };
        let tokens = estimate(&text);
        host_report(round, call, text, is_error, tokens)
    }

    /// Registers the references at the top of a result the agent asked for, and fetches the
    /// small ones at once, so their stubs say where they were saved.
    fn eager_fetch(&mut self, server: &ServerName, result: &Value) {
        let Ok(fetcher) = &mut self.fetcher else {
            return;
        };
        // A failed call keeps only its text: its references are neither registered nor fetched.
        if result.get("isError") == Some(&Value::Bool(true)) {
            return;
        }
        let blocks = result.get("content").and_then(Value::as_array);
        let ids: Vec<RefId> = blocks
            .into_iter()
            .flatten()
            .filter_map(|block| match classify(block) {
                Block::Reference(reference) => {
                    Some(self.lanes.registry.register(&reference, server).id.clone())
                }
                _ => None,
            })
            .collect();
        if !ids.is_empty() {
            for (id, outcome) in fetcher.eager(&mut self.lanes.registry, &ids) {
                if let Ok(saved) = outcome {
                    tracing::info!(reference = %id, path = %saved.path, "fetched eagerly");
                }
            }
        }
    }
}

/// The host's connections as the fetcher reads resources through them.
struct HostResources<'h> {
    servers: &'h mut [Server],
    host: &'h mut dyn ServerRequests,
}

impl ResourceReader for HostResources<'_> {
    fn offers_resources(&self, server: &str) -> bool {
        self.servers.iter().any(|s| {
            s.config.launch.name == server
                && s.connection
                    .as_ref()
                    .is_some_and(Connection::offers_resources)
        })
    }

    fn read_resource(&mut self, server: &str, uri: &str) -> Result<Value, String> {
        let server = self
            .servers
            .iter_mut()
            .find(|s| s.config.launch.name == server)
            .ok_or_else(|| format!("unknown server: {server}"))?;
        let timeout = server.config.options.timeout;
        let connection = server
            .connection
            .as_mut()
            .ok_or_else(|| format!("server {} is not available", server.config.launch.name))?;
        connection
            .request(
                "resources/read",
                json!({"uri": uri}),
                timeout,
                &mut *self.host,
            )
            .map_err(|error| error.to_string())
    }
}

/// A text's price in estimated tokens.
fn estimate(text: &str) -> u64 {
    Heuristic.count(text)
}

fn host_report(
    round: usize,
    call: &ToolCall,
    text: String,
    is_error: bool,
    tokens: u64,
) -> CallReport {
    CallReport {
        round,
        server: None,
        tool: call.name.clone(),
        call: call.clone(),
        output: ToolOutput {
            call_id: call.id.clone(),
            name: call.name.clone(),
            stored: text,
            live: None,
            is_error,
        },
        estimated_tokens: tokens,
        spill: None,
        diagnostics: Vec::new(),
    }
}

fn fetch_reference_spec() -> ToolSpec {
    ToolSpec {
        name: FETCH_REFERENCE.to_owned(),
        description: FETCH_REFERENCE_DESCRIPTION.to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "ref_id": {"type": "string", "description": "the id in the reference's stub"},
                "max_bytes": {"type": "integer", "minimum": 1,
                              "description": "refuse if the payload is larger"},
            },
            "required": ["ref_id"],
        }),
    }
}

/// A tool output's copies as the window projection prices them.
fn copies_of(output: &ToolOutput) -> ToolResultCopies<'_> {
    ToolResultCopies {
        stored: output.stored.clone(),
        stored_parts: Vec::new(),
        live: match &output.live {
            Some(parts) => LiveCopy::Native(parts.iter().map(Content::as_part).collect()),
            None => LiveCopy::Stored,
        },
        is_error: output.is_error,
    }
}

/// Drops the live copies of the latest tool results; true when there were any.
fn drop_live_copies(history: &mut [Message]) -> bool {
    let mut dropped = false;
    if let Some(Message::ToolResults(outputs)) = history
        .iter_mut()
        .rev()
        .find(|m| !matches!(m, Message::User(_)))
    {
        for output in outputs {
            dropped |= output.live.take().is_some();
        }
    }
    dropped
}

/// After a request is sent: tool results keep their stored copies only, and server messages
/// their stored text.
fn settle(history: &mut [Message], sent: &[Queued]) {
    for message in history.iter_mut() {
        if let Message::ToolResults(outputs) = message {
            for output in outputs {
                output.live = None;
            }
        }
    }
    let start = history.len() - sent.len();
    for (message, queued) in history[start..].iter_mut().zip(sent) {
        *message = Message::User(vec![Content::Text(queued.stored.clone())]);
    }
}

/// The system prompt with system-position injections joined by `\n` after it.
fn system_prompt(system: &str, injections: &[(String, Injections)]) -> String {
    let mut prompt = system.to_owned();
    for text in injections.iter().flat_map(|(_, i)| &i.system) {
        prompt.push('\n');
        prompt.push_str(text);
    }
    prompt
}

/// The messages a request carries: history, with `beforeUser` and `afterUser` injections
/// placed around the latest user message's content (never stored).
fn place_injections<'h>(
    history: &'h [Message],
    injections: &[(String, Injections)],
) -> Cow<'h, [Message]> {
    let before: Vec<Content> = injections
        .iter()
        .flat_map(|(_, i)| i.before_user.iter().cloned())
        .collect();
    let after: Vec<Content> = injections
        .iter()
        .flat_map(|(_, i)| i.after_user.iter().cloned())
        .collect();
    if before.is_empty() && after.is_empty() {
        return Cow::Borrowed(history);
    }
    let mut messages = history.to_vec();
    if let Some(Message::User(content)) = messages
        .iter_mut()
        .rev()
        .find(|m| matches!(m, Message::User(_)))
    {
        let mut placed = before;
        placed.append(content);
        placed.extend(after);
        *content = placed;
    }
    Cow::Owned(messages)
}

fn write_line(out: &mut dyn Write, body: &Value) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, body)?;
    out.write_all(b"\n")?;
    out.flush()
}
