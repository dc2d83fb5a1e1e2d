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
//! reference fetcher, and `read_result` reads a cut result's spill back, a part at a time.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use mcpl_budget::{
    Bound, Correction, DEFAULT_BUDGET, LocalSpillStore, PricedRoute, Pricer, Round, Spill,
    SpillError, SpillId, SpillNotice, SpillStore, TokenEstimator, project_round, write_text_spill,
};
use mcpl_lanes::{
    HiddenUris, ImageLedger, LiveCopy, Part, Registry, RouteId, ServerName, ToolResultCopies,
    UriPolicy,
};
use serde_json::{Value, json};

use crate::config::{Config, DEFAULT_MESSAGE_BUDGET, ServerConfig, ServerOptions};
use crate::mcpl::{Injections, Lanes, Queued, unseen_events};
use crate::mistakes::{self, Schemas};
use crate::model::{Model, ModelError};
use mcpl_client::{Call, CallError, Connection, Reply, ServerRequests};
use mcpl_encode::conversation::{
    Content, Message, ModelRequest, ToolCall, ToolOutput, ToolSpec, Usage, model_tool_name,
};
use mcpl_encode::{Encoder, window};
use mcpl_fetch::{Fetcher, ResourceReader};
use mcpl_session::toolset::{self, Deferral};
use mcpl_session::{ServerPolicy, Session, Shown};

pub use mcpl_session::{
    FETCH_REFERENCE, FETCH_REFERENCE_DESCRIPTION, LOAD_SKILL, READ_RESULT, READ_RESULT_DESCRIPTION,
    SEARCH_TOOLS,
};

/// How long a server may take to answer `context/beforeInference` before the round goes on
/// without it.
const INJECTION_TIMEOUT: Duration = Duration::from_secs(5);

pub use mcpl_client::{MAX_TOOL_PAGES, MAX_TOOLS};

/// What the loop needs besides the servers.
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// The route requests are encoded for.
    pub route: &'static PricedRoute,
    /// The provider's model name, as requests carry it.
    pub model: String,
    /// The host's own system prompt; [`Host::start`] adds each server's instructions after it.
    pub system: String,
    /// The most tokens the model may answer with each round.
    pub max_tokens: u32,
    /// The model's context window in estimated tokens.
    pub context_window: u64,
    /// The share of the window, in percent, tool definitions may take before they are deferred.
    pub defer_tools_percent: u64,
    /// Where spill files go.
    pub spill_dir: PathBuf,
    /// How an omission notice names a spill.
    pub spill_notice: SpillNotice,
    /// The conversation spills are bound to: `read_result` reads only this one's. A new random
    /// one unless the host continues a conversation (`mcpl run --conversation`).
    pub conversation: String,
    /// Where fetched references go.
    pub fetch_dir: PathBuf,
    /// The most rounds one conversation may take.
    pub max_rounds: usize,
    /// The most tool calls in a row that may fail before the run stops: a model that keeps
    /// making the same mistake is stopped, one that recovers goes on.
    pub max_consecutive_errors: usize,
    /// The route settings: raised request limits, image scaling.
    pub settings: crate::config::RouteSettings,
}

impl HostOptions {
    /// Options for a route, with the configuration's context window and spill folder.
    pub fn new(route: &'static PricedRoute, config: &Config) -> HostOptions {
        HostOptions {
            route,
            model: "mcpl-scripted".to_owned(),
            system: "You are an agent. Tool results are shown as the host's policy allows; \
                     fetch a reference with fetch_reference, and read the rest of a cut result \
                     with read_result."
                .to_owned(),
            max_tokens: 4096,
            context_window: config.context_window,
            defer_tools_percent: config.defer_tools_percent,
            spill_dir: config
                .spill_dir
                .clone()
                .unwrap_or_else(|| fresh_private_dir("mcpl-spill-")),
            spill_notice: config.spill_notice,
            conversation: SpillId::random()
                .map_or_else(|_| "default".to_owned(), |id| id.to_string()),
            fetch_dir: config
                .fetch_dir
                .clone()
                .unwrap_or_else(|| fresh_private_dir("mcpl-refs-")),
            max_rounds: 64,
            max_consecutive_errors: 10,
            settings: config.route,
        }
    }

    /// The conversation's session: the route and its encoder, each server's policy, image
    /// scaling as the settings say, spills in the spill folder, references fetched into the
    /// fetch folder. Why a folder cannot be used is what the session says when it is needed.
    pub fn session(&self, config: &Config) -> Session {
        let route = &self.route.lanes;
        // Every lane's images are scaled to the same fit, or none are.
        let scaling = self
            .settings
            .scale_images
            .then(|| mcpl_scale::Fit::for_route(route, &self.settings.limits(route.id)));
        let mut session = Session::for_route(self.route)
            .with_encoder(self.encoder())
            .with_scaling(scaling);
        for server in &config.servers {
            let policy = ServerPolicy::default()
                .with_budget(server.options.budget)
                .with_message_budget(server.options.message_budget)
                .with_uri_policy(server.options.uri_policy)
                .with_credential_urls_withheld(server.options.withhold_credential_urls);
            session.set_server(&server.launch.name, policy);
            for (tool, tokens) in &server.options.tool_budgets {
                session.set_tool_budget(&server.launch.name, tool, *tokens);
            }
        }
        session.set_budget_ceiling(config.max_tool_budget);
        session.set_spill_store(
            LocalSpillStore::new(&self.spill_dir)
                .map(|store| {
                    Box::new(
                        store
                            .with_conversation(self.conversation.as_str())
                            .with_notice(self.spill_notice),
                    ) as Box<dyn SpillStore + Send>
                })
                .map_err(|error| format!("spill folder unavailable: {error}")),
        );
        let fetcher = Fetcher::new(&self.fetch_dir).map(|mut fetcher| {
            for server in &config.servers {
                fetcher.add_server(&server.launch.name, &server.options.fetch);
            }
            fetcher
        });
        session.set_fetcher(fetcher.map_err(|error| error.to_string()));
        session
    }

    /// The encoder every request goes through: the route's, held to the settings' limits.
    pub fn encoder(&self) -> Encoder {
        let id = self.route.id();
        Encoder::new(id)
            .with_limits(self.settings.limits(id))
            .with_scaling(self.settings.scale_images)
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
    /// Why the whole could not be kept, when the result was cut and its spill failed.
    pub unsaved: Option<String>,
    /// For `fetch_reference`: where the host saved the payload (the model is not told).
    pub saved: Option<String>,
    /// What happened on the way, one line each.
    pub diagnostics: Vec<String>,
    /// The result's blocks for the user alone, as the user is shown them (the model is not).
    pub for_user: Vec<String>,
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
        model: RouteId,
        /// The host's route.
        route: RouteId,
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
    /// The request body would pass the route's limit with nothing left to clear.
    #[error(
        "the next request's body would be {bytes} bytes; the route takes at most {max} (round {round})"
    )]
    Body {
        /// The round.
        round: usize,
        /// The body's size.
        bytes: u64,
        /// The limit.
        max: u64,
    },
    /// The transcript could not be written.
    #[error("writing the transcript: {0}")]
    Transcript(std::io::Error),
    /// The run was interrupted (`mcpl_client::interruption`); calls in flight were cancelled.
    #[error("the run was interrupted")]
    Interrupted,
    /// The model kept calling tools.
    #[error("the model was still calling tools after {0} rounds")]
    TooManyRounds(usize),
    /// The model's tool calls kept failing: this many in a row, none succeeding between.
    #[error(
        "round {round}: the model's last {count} tool calls all failed, so the run stops (the last: {last})"
    )]
    RepeatedErrors {
        /// The round.
        round: usize,
        /// How many calls failed in a row.
        count: usize,
        /// The last call's error result.
        last: String,
    },
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
    tools: Vec<ToolSpec>,
    /// Model-facing tool name to (server index, tool name).
    tool_index: BTreeMap<String, (usize, String)>,
    /// The tools' input schemas, compiled when a call is first checked against one.
    schemas: Schemas,
    /// The tools whose schema the route's rules wrapped: a call's arguments are unwrapped.
    wrapped: std::collections::HashSet<String>,
    /// What the route's rules changed in the tools offered, one line each.
    pub warnings: Vec<String>,
    /// The tool calls that failed since the last one that did not.
    consecutive_errors: usize,
    /// Deferred tools: when on, the model finds the servers' tools with `search_tools`.
    deferral: Deferral,
    /// The tools the last listing again took away, with their server.
    vanished: BTreeMap<String, String>,
    /// Every tool call, in order.
    pub calls: Vec<CallReport>,
    /// Every round, in order.
    pub rounds: Vec<RoundReport>,
    /// The tokens the provider reported, summed over the run's answers; `None` while no answer
    /// reported any (a scripted model never does).
    pub usage: Option<Usage>,
    history_tokens: u64,
    /// What servers said of calls while they ran (progress, task status), until recorded.
    notices: mcpl_client::Notices,
    /// The notice lines recorded since the transcript last took them.
    notice_lines: Vec<String>,
    /// Who is shown each call's report as it lands.
    on_call: CallWatch,
}

/// What a host runs for each call's report as it lands (`mcpl run` prints a line).
pub type CallWatcher = Box<dyn FnMut(&CallReport) + Send + Sync>;

#[derive(Default)]
struct CallWatch(Option<CallWatcher>);

impl std::fmt::Debug for CallWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallWatch")
    }
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
        let session = options.session(config).with_state(registry, ledger);
        let secrets = session.registry().hidden().secrets().clone();
        mcpl_config::secrets::register_environment(&secrets, std::env::vars());
        let tools = session.host_tools();
        let mut host = Host {
            servers: Vec::with_capacity(config.servers.len()),
            lanes: Lanes::new(session),
            options,
            tools,
            tool_index: BTreeMap::new(),
            schemas: Schemas::default(),
            wrapped: std::collections::HashSet::new(),
            warnings: Vec::new(),
            consecutive_errors: 0,
            deferral: Deferral::default(),
            vanished: BTreeMap::new(),
            calls: Vec::new(),
            rounds: Vec::new(),
            usage: None,
            history_tokens: 0,
            notices: mcpl_client::Notices::default(),
            notice_lines: Vec::new(),
            on_call: CallWatch::default(),
        };
        // Every server starts at once, each within its own timeout: a slow one delays nobody.
        let launches: Vec<_> = config
            .servers
            .iter()
            .map(|server| {
                let secrets = host.lanes.session.registry().hidden().secrets();
                mcpl_config::secrets::register_oauth(secrets, server.options.oauth.as_ref());
                let launch = mcpl_config::secrets::register_server(secrets, &server.launch);
                (launch, server.options.limits())
            })
            .collect();
        let (_, deferring) = host.lanes.split_for_fetch();
        let started = mcpl_client::start_all(&launches, &std::sync::Mutex::new(deferring));
        host.lanes.project_deferred();
        for (server, started) in config.servers.iter().zip(started) {
            let server = host.add_server(server, started);
            host.servers.push(server);
            host.index_tools(host.servers.len() - 1);
        }
        host.deferral = Deferral::new(
            host.options.defer_tools_percent,
            host.options.context_window,
        );
        host.offer(&[]);
        host
    }

    /// Offers the tools gathered in `self.tools` as the route takes them (its own come
    /// first, so they stay), merged with `old` so unchanged tools keep their place, and decides
    /// again whether they are deferred.
    fn offer(&mut self, old: &[ToolSpec]) {
        // `load_skill`, when a server offers skills, goes right after the host's own tools.
        let at = self.lanes.session.host_tools().len().min(self.tools.len());
        let skill_tool = self.lanes.session.skill_tool();
        self.tools.splice(at..at, skill_tool);
        let tools = std::mem::take(&mut self.tools);
        let conformed = mcpl_encode::tools::conform(self.options.route.id(), tools);
        for name in &conformed.left_out {
            self.tool_index.remove(name);
        }
        (self.tools, self.wrapped) = (
            toolset::merge_stable(old, conformed.tools),
            conformed.wrapped.into_iter().collect(),
        );
        self.warnings.extend(conformed.notes);
        let deferrable: Vec<ToolSpec> = (self.tools.iter())
            .filter(|tool| self.tool_index.contains_key(&tool.name))
            .cloned()
            .collect();
        (self.deferral).decide(toolset::tools_price(self.options.encoder(), &deferrable));
    }

    /// Lists again the tools of each server that said they changed (once a round, however
    /// often it said so); the new set is offered from this round's request.
    fn relist(&mut self, diagnostics: &mut Vec<String>) {
        let mut changed = false;
        let Host { servers, lanes, .. } = self;
        for server in servers.iter_mut() {
            let Some(connection) = server.connection.as_mut() else {
                continue;
            };
            if connection.take_tools_changed() {
                let (tools, error) = connection.list_tools(server.config.options.timeout, lanes);
                match error {
                    None => {
                        // Their output schemas and own budgets are read again too.
                        let name = &server.config.launch.name;
                        diagnostics.extend(lanes.session.declare_tools(name, &tools));
                        (server.tools, changed) = (tools, true);
                    }
                    Some(error) => {
                        diagnostics.push(format!("tools kept as listed before: {error}"))
                    }
                }
            }
        }
        if !changed {
            return;
        }
        let (old, before) = (
            std::mem::take(&mut self.tools),
            std::mem::take(&mut self.tool_index),
        );
        self.tools = self.lanes.session.host_tools();
        for index in 0..self.servers.len() {
            self.index_tools(index);
        }
        self.schemas = Schemas::default();
        self.offer(&old);
        self.vanished = (before.into_iter())
            .filter(|(name, _)| !self.tool_index.contains_key(name))
            .map(|(name, (index, _))| (name, self.servers[index].config.launch.name.clone()))
            .collect();
        diagnostics.push(format!("tools listed again: {} offered", self.tools.len()));
    }

    /// Shows `notice` each server's progress and task status as it comes, and `call` each call's
    /// report as it lands. Both run on the host's threads; a notice's text is the server's.
    pub fn watch(&mut self, notice: mcpl_client::Observer, call: CallWatcher) {
        self.notices.watch(notice);
        self.on_call = CallWatch(Some(call));
    }

    /// Spills go to `store` from now on (an object store, say), or, when it could not be set
    /// up, nowhere: results over budget are then kept whole, with the error as a diagnostic.
    pub fn set_spill_store(&mut self, store: Result<Box<dyn SpillStore + Send>, SpillError>) {
        let store = store.map_err(|error| format!("spill folder unavailable: {error}"));
        self.lanes.session.set_spill_store(store);
    }

    /// Takes a server's start: its tools join the offer; why it did not start is kept for the
    /// caller, who reports it (`mcpl run` prints one line per server).
    fn add_server(
        &mut self,
        config: &ServerConfig,
        started: Result<mcpl_client::Started, CallError>,
    ) -> Server {
        let name = &config.launch.name;
        let mut server = Server {
            config: config.clone(),
            connection: None,
            error: None,
            tools: Vec::new(),
        };
        let started = match started {
            Ok(started) => started,
            Err(error) => {
                tracing::info!(server = %name, %error, "server not started");
                server.error = Some(error.to_string());
                return server;
            }
        };
        server.tools = started.tools;
        for line in self.lanes.session.add_skills(name, &started.skills) {
            tracing::warn!("{line}");
        }
        server.error = started.listing_error.map(|error| error.to_string());
        let declared = self.lanes.session.declare_tools(name, &server.tools);
        self.warnings.extend(declared);
        if let Some(text) = started.connection.instructions()
            && let Some(fenced) = self.lanes.session.server_instructions(
                name,
                text,
                config.options.instructions_bytes,
            )
        {
            // After the host's own words, the same bytes every request: the prompt stays cached.
            self.options.system.push_str("\n\n");
            self.options.system.push_str(&fenced);
        }
        let mut connection = started.connection;
        connection.set_observer(self.notices.observer());
        server.connection = Some(connection);
        server
    }

    /// Adds the tools of the server at `index` (as it listed them) to the offer.
    fn index_tools(&mut self, index: usize) {
        let server = &self.servers[index];
        let name = &server.config.launch.name;
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
            self.tools.push(ToolSpec::new(
                model_name,
                tool.get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                tool.get("inputSchema")
                    .filter(|s| s.is_object())
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object"})),
            ));
        }
    }

    /// The tools as the model is shown them: each description and every string of each input
    /// schema redacted with what the session hides now (a uri hidden since the listing, a
    /// token, a signed url); a tool whose name would change is not offered.
    fn redacted_tools(&mut self) -> Vec<ToolSpec> {
        let offered = self.offered();
        let hidden = HiddenUris::in_session(
            &[],
            UriPolicy::Hidden,
            self.lanes.session.registry_mut().hidden_mut(),
            true,
        );
        offered
            .into_iter()
            .filter(|tool| hidden.redact(&tool.name) == tool.name)
            .map(|tool| {
                ToolSpec::new(
                    tool.name.clone(),
                    hidden.redact(&tool.description).into_owned(),
                    hidden.redact_value(&tool.input_schema),
                )
            })
            .collect()
    }

    /// The tools offered now: every tool, or while they are deferred the host's, `search_tools`
    /// and the ones its searches loaded.
    fn offered(&self) -> Vec<ToolSpec> {
        let index = &self.tool_index;
        self.deferral
            .offered(&self.tools, |name| index.contains_key(name))
    }

    /// Whether the servers' tools are deferred behind `search_tools`, and what they cost.
    pub fn deferral(&self) -> &Deferral {
        &self.deferral
    }

    /// The tools offered to the model: every server's and the host's (`fetch_reference`,
    /// `read_result`, and `load_skill` when a server offers skills).
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
        let route = self.options.route.id();
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
            if mcpl_client::interruption().load(std::sync::atomic::Ordering::Relaxed) {
                return Err(LoopError::Interrupted);
            }
            let mut report = self.prepare_round(round, &mut history)?;
            let body = self.request_body(round, &mut history, &mut report)?;
            let estimated = self.history_tokens + report.appended_tokens + self.fixed_tokens();
            if let Some(out) = transcript.as_mut() {
                write_line(&mut **out, &body).map_err(LoopError::Transcript)?;
            }
            self.rounds.push(report);
            let turn = model.complete(&body)?;
            if let Some(usage) = turn.usage {
                // Provider usage is authoritative: later projections follow it, within 1.0-2.0.
                self.lanes
                    .session
                    .observe_usage(estimated, usage.input_tokens);
                tracing::info!(route = %route, estimated, reported = usage.input_tokens,
                    correction = self.correction().milli(), "input tokens reported");
                self.usage.get_or_insert_default().add(usage);
            }
            // Live copies go once: from now on history carries the stored copies.
            settle(&mut history, &self.rounds[round - 1].messages);
            for message in &self.rounds[round - 1].messages {
                self.history_tokens += estimate(&message.stored);
            }
            self.history_tokens += estimate(&turn.text);
            // Every call is routed before any is made, so a turn that cannot be carried out has
            // no side effects.
            let calls: Vec<ToolCall> = turn
                .tool_calls
                .into_iter()
                .map(|call| self.route(call))
                .collect();
            history.push(Message::Assistant {
                text: turn.text.clone(),
                tool_calls: calls.clone(),
            });
            if calls.is_empty() {
                return Ok(Outcome {
                    answer: turn.text,
                    rounds: round,
                });
            }
            let outputs = self.call_tools(round, &calls);
            if let Some(out) = transcript.as_mut() {
                for line in std::mem::take(&mut self.notice_lines) {
                    write_line(&mut **out, &json!({"notice": line}))
                        .map_err(LoopError::Transcript)?;
                }
            }
            history.push(Message::ToolResults(outputs));
            model.results(
                &self.calls[self.calls.len() - calls.len()..]
                    .iter()
                    .map(|report| report.output.clone())
                    .collect::<Vec<_>>(),
            );
            if self.consecutive_errors >= self.options.max_consecutive_errors {
                let last = self
                    .calls
                    .last()
                    .map_or_else(String::new, |c| c.output.stored.clone());
                return Err(LoopError::RepeatedErrors {
                    round,
                    count: self.consecutive_errors,
                    last,
                });
            }
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
        let mut diagnostics = Vec::new();
        self.relist(&mut diagnostics);
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
        // Each injected text is held to its server's message budget.
        for (name, found) in &mut injections {
            self.fit_injections(name, found);
        }
        for (server, count) in self.lanes.take_dropped() {
            // Before the queued messages: `settle` finds those at the end of history.
            let note = unseen_events(&server, count);
            self.history_tokens += estimate(&note);
            history.push(Message::User(vec![Content::Text(note.clone())]));
            diagnostics.push(note);
        }
        let mut messages = std::mem::take(&mut self.lanes.queued);
        for message in &mut messages {
            self.fit_message(message);
        }
        for message in &messages {
            history.push(Message::User(message.parts.clone()));
            diagnostics.extend(message.diagnostics.iter().cloned());
        }
        self.hold_to_limits(round, history);
        // The servers' messages are priced as held, as the tool results are.
        let start = history.len() - messages.len();
        for (queued, held) in messages.iter_mut().zip(&mut history[start..]) {
            let Message::User(parts) = held else {
                continue;
            };
            // The notices the limits wrote are priced too: a message they put over its budget
            // goes as its stored text, which was held to it.
            if *parts != queued.parts {
                let budget = self
                    .correction()
                    .budget(self.message_budget(&queued.server));
                let pricer = self.pricer();
                let live: Vec<Part<'_>> = parts.iter().map(Content::as_part).collect();
                if pricer.parts(&live).is_ok_and(|price| price > budget) {
                    *parts = vec![Content::Text(queued.stored.clone())];
                }
            }
            queued.parts.clone_from(parts);
        }
        let mut report = RoundReport {
            round,
            appended_tokens: 0,
            projected_tokens: 0,
            messages,
            injections,
            diagnostics,
        };
        let appended = self.appended_tokens(history, &report);
        // Every request also carries the system prompt and the tools' definitions, and leaves
        // room for the answer.
        let fixed = self.fixed_tokens();
        let mut projected = self.projected(appended, fixed);
        report.appended_tokens = appended;
        if projected > self.options.context_window {
            // Old tool results go first, then old rounds; the latest round stays whole.
            let room = self.make_room(history, projected - self.options.context_window);
            self.history_tokens = self.history_tokens.saturating_sub(room.freed);
            projected = self.projected(appended, fixed);
            if room.cleared + room.rounds_removed > 0 {
                report.diagnostics.push(format!(
                    "{} earlier tool results cleared and {} earlier rounds removed to fit the context window of {}",
                    room.cleared, room.rounds_removed, self.options.context_window
                ));
            }
        }
        if projected > self.options.context_window && drop_live_copies(history) {
            // Native parts cost more than their stored text; send the text instead.
            let appended = self.appended_tokens(history, &report);
            projected = self.projected(appended, fixed);
            report.appended_tokens = appended;
            report.diagnostics.push(format!(
                "native tool-result parts sent as their stored copies to fit the context window of {}",
                self.options.context_window
            ));
        }
        if projected > self.options.context_window {
            // What servers sent never ends a session: their messages of this round are left
            // out, oldest first, each spilled and named by a line, until the request fits.
            let left_out = self.leave_out_messages(history, &mut report, fixed);
            if left_out > 0 {
                projected = self.projected(report.appended_tokens, fixed);
                report.diagnostics.push(format!(
                    "{left_out} server messages left out to fit the context window of {}",
                    self.options.context_window
                ));
            }
        }
        if projected > self.options.context_window {
            // Then the latest results themselves, each replaced by a line naming its spill.
            let room = self.clear_latest(history, projected - self.options.context_window);
            if room.cleared > 0 {
                self.history_tokens = self.history_tokens.saturating_sub(room.freed);
                self.note_cleared(round, history);
                report.appended_tokens = self.appended_tokens(history, &report);
                projected = self.projected(report.appended_tokens, fixed);
                report.diagnostics.push(format!(
                    "{} of the latest tool results cleared to fit the context window of {}",
                    room.cleared, self.options.context_window
                ));
            }
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

    /// Holds what the round sends to the route's request limits before anything prices it:
    /// an image over a limit is scaled to fit (or left out as its placeholder) in `history`
    /// itself, so the window projection, the usage estimate and each call's
    /// `estimated_tokens` price the dimensions that are sent. The request encodes these parts
    /// as they are.
    fn hold_to_limits(&mut self, round: usize, history: &mut Vec<Message>) {
        let encoder = self.options.encoder();
        let Cow::Owned(held) = encoder.within_limits(history) else {
            return;
        };
        *history = held;
        let Some(Message::ToolResults(outputs)) = history
            .iter_mut()
            .rev()
            .find(|m| !matches!(m, Message::User(_)))
        else {
            return;
        };
        let pricer = self.pricer();
        let correction = self.correction();
        for output in outputs {
            let Some(report) = self
                .calls
                .iter_mut()
                .rev()
                .find(|c| c.round + 1 == round && c.output.call_id == output.call_id)
            else {
                continue;
            };
            if report.output.live == output.live {
                continue;
            }
            let copies = copies_of(output);
            let Ok(mut tokens) = pricer.live(&copies.live, &copies.stored) else {
                continue;
            };
            // The notices the limits wrote are priced too: a result they put over its budget
            // goes as its stored copy, which was fitted to it.
            let budget = report
                .server
                .as_deref()
                .and_then(|name| options_of(&self.servers, name))
                .map_or(DEFAULT_BUDGET, |options| options.budget);
            let held = correction.budget(budget);
            if tokens > held && output.live.is_some() {
                output.live = None;
                tokens = pricer.text.count(&output.stored);
                report.diagnostics.push(format!(
                    "sent as its stored copy: the request's limits left its live copy over its budget of {held} estimated tokens"
                ));
            }
            report.diagnostics.push(format!(
                "priced as sent: {tokens} estimated tokens (was {}), images scaled or left out to hold the request limits",
                report.estimated_tokens
            ));
            report.estimated_tokens = tokens;
            report.output = output.clone();
        }
    }

    /// The projected tokens of a request: history, what the round appends and the `fixed`
    /// system prompt and tools, corrected by what the provider reported, and the room for the
    /// answer.
    fn projected(&self, appended: u64, fixed: u64) -> u64 {
        self.correction()
            .apply(self.history_tokens + appended + fixed)
            + u64::from(self.options.max_tokens)
    }

    /// What a result with this budget is fitted to: the budget divided by the correction the
    /// provider's reported usage set, so the result costs at most `budget` by the provider's
    /// count too; said in a diagnostic and logged when it is less.
    fn held_budget(&self, budget: u64, diagnostics: &mut Vec<String>) -> u64 {
        let held = self.lanes.session.held_budget(budget, diagnostics);
        if held < budget {
            let correction = self.correction().milli();
            tracing::info!(budget, held, correction, "budget held by the correction");
        }
        held
    }

    /// The correction the provider's reported usage set (1.0 until it reports any).
    pub fn correction(&self) -> Correction {
        self.lanes.session.correction()
    }

    /// The round's request body, held to the route's body limit: while it is over, old results
    /// are cleared and old rounds removed as for the window; a body the latest round alone takes
    /// over the limit is not sent.
    fn request_body(
        &mut self,
        round: usize,
        history: &mut Vec<Message>,
        report: &mut RoundReport,
    ) -> Result<Value, LoopError> {
        let encoder = self.options.encoder();
        loop {
            let messages = place_injections(history, &report.injections);
            let system = system_prompt(&self.options.system, &report.injections);
            let tools = self.redacted_tools();
            let (body, repaired) = encoder.checked_request(&ModelRequest::new(
                &self.options.model,
                &system,
                &messages,
                &tools,
                self.options.max_tokens,
            ));
            // Only the body sent says what was repaired in it: a pass that is over the limit
            // is built again, and its repairs with it.
            let Some(max) = encoder.limits().body_bytes else {
                report.diagnostics.extend(repaired);
                return Ok(body);
            };
            let bytes = mcpl_encode::body_len(&body);
            if bytes <= max {
                report.diagnostics.extend(repaired);
                return Ok(body);
            }
            // A token is several bytes; clear about an eighth of the excess's bytes in tokens,
            // and measure again.
            let room = self.make_room(history, (bytes - max) / 8 + 1);
            if room.freed == 0 {
                return Err(LoopError::Body { round, bytes, max });
            }
            self.history_tokens = self.history_tokens.saturating_sub(room.freed);
            report.diagnostics.push(format!(
                "{} earlier tool results cleared and {} earlier rounds removed to keep the request body within {max} bytes",
                room.cleared, room.rounds_removed
            ));
        }
    }

    /// Frees `excess` estimated tokens of history: the oldest tool results cleared, each to a
    /// notice naming its spill file (written now if the result was never spilled), then the
    /// oldest whole rounds removed.
    fn make_room(&mut self, history: &mut Vec<Message>, excess: u64) -> window::Room {
        self.with_spill_of(|spill_of| {
            let mut room = window::clear_oldest_results(history, excess, &estimate, spill_of);
            if room.freed < excess {
                let more = window::remove_oldest_rounds(history, excess - room.freed, &estimate);
                room.freed += more.freed;
                room.rounds_removed = more.rounds_removed;
            }
            room
        })
    }

    /// Frees `excess` estimated tokens from the latest round's results, in call order, each
    /// cleared to a notice naming its spill: the last resort before the window would end the run.
    fn clear_latest(&mut self, history: &mut [Message], excess: u64) -> window::Room {
        self.with_spill_of(|spill_of| {
            window::clear_latest_results(history, excess, &estimate, spill_of)
        })
    }

    /// Runs `body` with the reference a cleared result's notice names: the spill its result was
    /// written to, or one written now.
    fn with_spill_of<T>(
        &mut self,
        body: impl FnOnce(&mut dyn FnMut(&ToolOutput) -> Option<String>) -> T,
    ) -> T {
        let Host { calls, lanes, .. } = self;
        let mut spill_of = |output: &ToolOutput| -> Option<String> {
            let report = calls
                .iter()
                .rev()
                .find(|c| c.output.call_id == output.call_id && c.output.stored == output.stored);
            if let Some(written) = report.and_then(|c| c.spill.as_ref()) {
                return Some(written.reference());
            }
            let store = lanes.session.spill_store().ok()?;
            write_text_spill(&output.stored, store)
                .ok()
                .map(|written| written.reference())
        };
        body(&mut spill_of)
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
        let mut round = Round::default();
        round.tool_results = copies.iter().collect();
        round.injected_text = report
            .injections
            .iter()
            .flat_map(|(_, i)| i.system.iter().map(String::as_str))
            .collect();
        round.messages = message_parts.iter().map(Vec::as_slice).collect();
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
            + (self.offered().iter())
                .map(|tool| {
                    estimate(&tool.name)
                        + estimate(&tool.description)
                        + estimate(&tool.input_schema.to_string())
                })
                .sum::<u64>()
    }

    fn pricer(&self) -> Pricer<'static> {
        Pricer::new(&Bound, self.options.route)
    }

    /// A call as the loop makes it. A call by a tool's own name (`read_graph`) is renamed to
    /// the one tool of that name. Any other call goes as it is: a tool's model-facing name
    /// (`memory__read_graph`), a host tool's, a name under a configured server that is not
    /// running (which gets that server's error), or a name no tool has or several share (which
    /// gets an error result naming the tools the model may mean).
    pub fn route(&self, mut call: ToolCall) -> ToolCall {
        if self.is_host_tool(&call.name)
            || self.tool_index.contains_key(&call.name)
            || self.stopped_server(&call.name).is_some()
        {
            return call;
        }
        if let [model_name] = self.own_name_candidates(&call.name).as_slice() {
            call.name = (*model_name).to_owned();
        }
        call
    }

    /// The model-facing names of the tools whose own name is `name`, in the configuration's order.
    fn own_name_candidates(&self, name: &str) -> Vec<&str> {
        let mut candidates: Vec<(usize, &str)> = self
            .tool_index
            .iter()
            .filter(|(_, (_, tool))| tool == name)
            .map(|(model_name, (index, _))| (*index, model_name.as_str()))
            .collect();
        candidates.sort();
        candidates.into_iter().map(|(_, name)| name).collect()
    }

    /// The model's mistake in `call`, in the words of its error result: a tool no one offers,
    /// arguments that are not an object, or arguments its tool's input schema refuses. A call
    /// with a mistake is not made.
    fn mistake(&mut self, call: &ToolCall) -> Option<String> {
        let host_tool = self.is_host_tool(&call.name);
        if !host_tool
            && !self.tool_index.contains_key(&call.name)
            && self.stopped_server(&call.name).is_none()
        {
            if let Some(server) = self.vanished.get(&call.name) {
                return Some(toolset::vanished(&call.name, server));
            }
            let candidates = self.own_name_candidates(&call.name);
            if candidates.len() > 1 {
                return Some(mistakes::ambiguous_tool(&call.name, &candidates));
            }
            let offered = self.tools.iter().map(|tool| {
                let own = self
                    .tool_index
                    .get(&tool.name)
                    .map_or(tool.name.as_str(), |(_, own)| own.as_str());
                (tool.name.as_str(), own)
            });
            return Some(mistakes::unknown_tool(&call.name, offered));
        }
        if let Some(why) = mistakes::not_an_object(&call.name, &call.arguments) {
            return Some(why);
        }
        let tool = self.tools.iter().find(|tool| tool.name == call.name)?;
        if host_tool {
            return None;
        }
        self.schemas
            .mismatch(&tool.name, &tool.input_schema, &call.arguments)
    }

    /// Whether `name` is a host tool offered now: `fetch_reference` (which says when there is
    /// no fetcher), `read_result`, `load_skill` when a server offers skills, and `search_tools`
    /// only while tools are deferred.
    fn is_host_tool(&self, name: &str) -> bool {
        name == FETCH_REFERENCE
            || self.lanes.session.is_host_tool(name)
            || (name == SEARCH_TOOLS && self.deferral.is_active())
    }

    /// The configured server that is not running whose tools' model-facing names `name` is under.
    fn stopped_server(&self, name: &str) -> Option<&Server> {
        self.servers.iter().find(|server| {
            server.connection.is_none()
                && name.starts_with(&model_tool_name(&server.config.launch.name, ""))
        })
    }

    /// One model turn's tool calls. The servers' calls go out first, in phases (decision 0132):
    /// neighbouring calls of read-only-hinted tools together, each server's on a thread of its
    /// own, up to its `max_concurrent_calls` outstanding at a time; any other call alone. The
    /// servers' requests are meanwhile answered as always and shown once all have returned. Then
    /// each call, in the model's order, passes classify, lanes and budget, or goes to its host
    /// tool. The outputs keep the model's order.
    pub fn call_tools(&mut self, round: usize, calls: &[ToolCall]) -> Vec<ToolOutput> {
        let mistakes: Vec<Option<String>> = calls.iter().map(|call| self.mistake(call)).collect();
        let targets: Vec<Option<(usize, String)>> = calls
            .iter()
            .zip(&mistakes)
            .map(|(call, mistake)| {
                (call.name != FETCH_REFERENCE && mistake.is_none())
                    .then(|| self.tool_index.get(&call.name).cloned())
                    .flatten()
            })
            .collect();
        // Neighbouring calls of tools that say they only read overlap; any other call runs
        // alone, after the calls before it and before the calls after it.
        let parallel: Vec<bool> = (targets.iter())
            .map(|t| {
                t.as_ref()
                    .is_some_and(|(i, tool)| toolset::is_read_only(&self.servers[*i].tools, tool))
            })
            .collect();
        let mut raw: Vec<Option<Result<Reply, CallError>>> = calls.iter().map(|_| None).collect();
        let mut overlap = vec![0; calls.len()];
        for phase in toolset::phases(&parallel) {
            phase.clone().for_each(|i| overlap[i] = phase.len() - 1);
            let only: Vec<Option<(usize, String)>> = (targets.iter().enumerate())
                .map(|(i, target)| target.clone().filter(|_| phase.contains(&i)))
                .collect();
            for (i, result) in self.call_servers(calls, &only).into_iter().enumerate() {
                raw[i] = raw[i].take().or(result);
            }
        }
        let mut outputs = Vec::with_capacity(calls.len());
        for ((call, mistake), (target, result)) in calls
            .iter()
            .zip(mistakes)
            .zip(targets.iter().zip(raw.iter_mut()))
        {
            let mut report = match (mistake, target, result.take()) {
                (Some(text), _, _) => self.mistaken(round, call, text),
                (None, Some((index, tool)), Some(result)) => {
                    self.finish_server_call(round, call, *index, tool, result)
                }
                _ => self.one_call(round, call),
            };
            if overlap[outputs.len()] > 0 {
                let note = toolset::overlap_note(overlap[outputs.len()]);
                report.diagnostics.push(note);
            }
            outputs.push(self.record(report));
        }
        outputs
    }

    /// Keeps a call's report and counts the errors in a row; returns its output.
    fn record(&mut self, mut report: CallReport) -> ToolOutput {
        if let Some(server) = report.server.clone() {
            // What the server said while the call ran is its text: redacted as its content is.
            let name = ServerName::new(server.as_str());
            let mut projector = self.lanes.projector(&name);
            for notice in self.notices.take(&server, &report.tool) {
                let line = projector.server_text(&notice.to_string());
                report.diagnostics.push(line.clone());
                self.notice_lines.push(line);
            }
        }
        if let Some(watcher) = &mut self.on_call.0 {
            watcher(&report);
        }
        self.history_tokens += estimate(&report.output.stored);
        if report.output.is_error {
            self.consecutive_errors += 1;
        } else {
            self.consecutive_errors = 0;
        }
        let output = report.output.clone();
        self.calls.push(report);
        output
    }

    /// The error result of a call the model got wrong, which was not made.
    fn mistaken(&self, round: usize, call: &ToolCall, text: String) -> CallReport {
        let tokens = estimate(&text);
        let mut report = host_report(round, call, text, true, tokens);
        report.server = self
            .tool_index
            .get(&call.name)
            .map(|(index, _)| self.servers[*index].config.launch.name.clone());
        report
            .diagnostics
            .push("not called: the model's call was not one any tool takes".to_owned());
        report
    }

    /// Sends every call that goes to a running server, all servers at once, and returns each
    /// call's raw result (`None` for calls that go elsewhere).
    fn call_servers(
        &mut self,
        calls: &[ToolCall],
        targets: &[Option<(usize, String)>],
    ) -> Vec<Option<Result<Reply, CallError>>> {
        let mut raw: Vec<Option<Result<Reply, CallError>>> = calls.iter().map(|_| None).collect();
        let Host {
            servers,
            lanes,
            wrapped,
            ..
        } = self;
        let wrapped = &*wrapped;
        let (_, deferring) = lanes.split_for_fetch();
        let shared = std::sync::Mutex::new(deferring);
        std::thread::scope(|scope| {
            let mut running = Vec::new();
            for (index, server) in servers.iter_mut().enumerate() {
                let Some(connection) = server.connection.as_mut() else {
                    continue;
                };
                let mine: Vec<usize> = (0..calls.len())
                    .filter(|&i| targets[i].as_ref().is_some_and(|(s, _)| *s == index))
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                let batch: Vec<Call> = mine
                    .iter()
                    .filter_map(|&i| {
                        let (_, tool) = targets[i].as_ref()?;
                        Some(
                            Call::new(
                                "tools/call",
                                json!({"name": tool, "arguments": arguments_of(wrapped, &calls[i])}),
                                server.config.options.timeout,
                            )
                            .with_total(server.config.options.total_timeout),
                        )
                    })
                    .collect();
                let in_flight = server.config.options.max_concurrent_calls;
                let shared = &shared;
                let thread = scope.spawn(move || {
                    connection.replies(batch, in_flight, &mut mcpl_client::Locked(shared))
                });
                running.push((server.config.launch.name.clone(), mine, thread));
            }
            for (name, mine, thread) in running {
                let results = thread.join().unwrap_or_else(|_| {
                    mine.iter()
                        .map(|_| {
                            Err(CallError::Exited {
                                server: name.clone(),
                                method: "tools/call".to_owned(),
                                detail: "the host's thread for it failed".to_owned(),
                                stderr: mcpl_client::StderrTail::default(),
                            })
                        })
                        .collect()
                });
                for (i, result) in mine.into_iter().zip(results) {
                    raw[i] = Some(result);
                }
            }
        });
        self.lanes.project_deferred();
        raw
    }

    /// One call, alone: to its server (or the error that it is not available), to a host tool,
    /// or the error that no server offers it.
    fn one_call(&mut self, round: usize, call: &ToolCall) -> CallReport {
        if call.name == FETCH_REFERENCE || call.name == LOAD_SKILL {
            self.fetch_reference(round, call)
        } else if call.name == READ_RESULT {
            self.read_result(round, call)
        } else if call.name == SEARCH_TOOLS && self.deferral.is_active() {
            let index = &self.tool_index;
            let deferrable = |name: &str| index.contains_key(name);
            let found = (self.deferral).search(&self.tools, deferrable, &call.arguments);
            let (is_error, text) = (found.is_err(), found.unwrap_or_else(|why| why));
            host_report(round, call, text.clone(), is_error, estimate(&text))
        } else if let Some((index, tool)) = self.tool_index.get(&call.name).cloned() {
            self.call_server_tool(round, call, index, &tool)
        } else if let Some(server) = self.stopped_server(&call.name) {
            let text = format!(
                "tool call failed: server {} is not available: {}",
                server.config.launch.name,
                server.error.as_deref().unwrap_or("not running")
            );
            let name = server.config.launch.name.clone();
            let text = self
                .lanes
                .projector(&ServerName::new(name.as_str()))
                .server_text(&text);
            let mut report = host_report(round, call, text, true, 0);
            report.estimated_tokens = estimate(&report.output.stored);
            report.server = Some(name);
            report
        } else {
            let offered = self
                .tools
                .iter()
                .map(|tool| (tool.name.as_str(), tool.name.as_str()));
            let text = mistakes::unknown_tool(&call.name, offered);
            let tokens = estimate(&text);
            host_report(round, call, text, true, tokens)
        }
    }

    /// One tool call: to its server through classify, lanes and budget, or to a host tool; a
    /// call the model got wrong is answered with its error result and not made.
    pub fn call_tool(&mut self, round: usize, call: &ToolCall) -> ToolOutput {
        let report = match self.mistake(call) {
            Some(text) => self.mistaken(round, call, text),
            None => self.one_call(round, call),
        };
        self.record(report)
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
        let (timeout, total) = (
            server.config.options.timeout,
            server.config.options.total_timeout,
        );
        let Some(connection) = &mut server.connection else {
            let why = server
                .error
                .clone()
                .unwrap_or_else(|| "not running".to_owned());
            let text = format!("server {name} is not available: {why}");
            return failed_report(round, call, &name, tool, text);
        };
        let params = json!({"name": tool, "arguments": arguments_of(&self.wrapped, call)});
        let one = Call::new("tools/call", params, timeout).with_total(total);
        let result = connection
            .replies(vec![one], 1, &mut self.lanes)
            .pop()
            .unwrap_or_else(|| {
                Err(CallError::Timeout {
                    server: name.clone(),
                    method: "tools/call".to_owned(),
                    after: timeout,
                })
            });
        self.finish_server_call(round, call, index, tool, result)
    }

    /// What a server's answer to one call comes to: a failed call's error, or the result
    /// through classify, lanes and budget.
    fn finish_server_call(
        &mut self,
        round: usize,
        call: &ToolCall,
        index: usize,
        tool: &str,
        result: Result<Reply, CallError>,
    ) -> CallReport {
        let server = &mut self.servers[index];
        let name = server.config.launch.name.clone();
        let result = match result {
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
                return failed_report(round, call, &name, tool, shown);
            }
        };
        let mut diagnostics = Vec::new();
        let budget = self.held_budget(
            self.lanes.session.tool_budget(&name, tool),
            &mut diagnostics,
        );
        // A result in strict JSON is read from its bytes by the one reader (decision 0139).
        let session = &mut self.lanes.session;
        let shown = match &result {
            Reply::Json(text) => session
                .declared_result_bytes(&name, tool, text.bytes(), budget)
                .unwrap_or_else(|_| session.declared_result(&name, tool, &Value::Null, budget)),
            Reply::Value(value) => session.declared_result(&name, tool, value, budget),
        };
        let mut report = shown_report(round, call, tool, shown);
        report.server = Some(name);
        // The budget's line first, then the scaling's and the fitting's.
        diagnostics.append(&mut report.diagnostics);
        report.diagnostics = diagnostics;
        report
    }

    /// `read_result`: the next part of a spill of this conversation, through the lanes and the
    /// fitting every tool result goes through, or the refusal in words.
    fn read_result(&mut self, round: usize, call: &ToolCall) -> CallReport {
        let shown = self.lanes.session.read_result(&call.arguments, u64::MAX);
        shown_report(round, call, READ_RESULT, shown)
    }

    /// Leaves out this round's server messages, oldest first, until the request's projection
    /// fits the context window: each is spilled whole (its stored text) and replaced, in history
    /// and in the report, by one line that names the spill. Returns how many were left out.
    fn leave_out_messages(
        &mut self,
        history: &mut [Message],
        report: &mut RoundReport,
        fixed: u64,
    ) -> usize {
        let count = report.messages.len();
        // The round's messages are the last entries of history (nothing after them yet).
        let Some(start) = history.len().checked_sub(count) else {
            return 0;
        };
        let mut left_out = 0;
        for index in 0..count {
            if self.projected(report.appended_tokens, fixed) <= self.options.context_window {
                break;
            }
            let message = &mut report.messages[index];
            let what = message.origin.lane();
            let spill = match self.lanes.session.spill_store() {
                Ok(store) => write_text_spill(&message.stored, store).ok(),
                Err(_) => None,
            };
            let line = match spill {
                Some(spill) => format!(
                    "[a {what} message from server {} was left out to fit the context window; {}]",
                    message.server,
                    spill.reference()
                ),
                None => format!(
                    "[a {what} message from server {} was left out to fit the context window]",
                    message.server
                ),
            };
            message.parts = vec![Content::Text(line.clone())];
            message.stored = line.clone();
            history[start + index] = Message::User(vec![Content::Text(line)]);
            left_out += 1;
            report.appended_tokens = self.appended_tokens(history, report);
        }
        left_out
    }

    /// Each of this round's call reports whose result was cleared from the latest results says
    /// so, and carries what the model is sent instead.
    fn note_cleared(&mut self, round: usize, history: &[Message]) {
        let Some(Message::ToolResults(outputs)) = history
            .iter()
            .rev()
            .find(|m| !matches!(m, Message::User(_)))
        else {
            return;
        };
        for output in outputs {
            let report = self
                .calls
                .iter_mut()
                .rev()
                .find(|c| c.round + 1 == round && c.output.call_id == output.call_id);
            if let Some(report) = report
                && report.output.stored != output.stored
            {
                report.output = output.clone();
                report.estimated_tokens = estimate(&output.stored);
                report.diagnostics.push(
                    "cleared to fit the context window; the model is told where it is".to_owned(),
                );
            }
        }
    }

    /// The message budget of the server named `server` (the default for one not configured).
    fn message_budget(&self, server: &str) -> u64 {
        options_of(&self.servers, server)
            .map_or(DEFAULT_MESSAGE_BUDGET, |options| options.message_budget)
    }

    /// Holds each injection a server makes to its message budget, as a push event is held:
    /// a system text, or a `beforeUser` or `afterUser` injection with its images, over it is
    /// spilled whole and cut head and tail.
    fn fit_injections(&mut self, server: &str, found: &mut Injections) {
        let configured = self.message_budget(server);
        let mut diagnostics = Vec::new();
        let budget = self.held_budget(configured, &mut diagnostics);
        let mut held = 0;
        for text in &mut found.system {
            held += usize::from(self.lanes.session.hold_system_text(text, budget));
        }
        let mut user = std::mem::take(&mut found.user);
        for injection in &mut user {
            let lines = self.lanes.session.hold_message(
                &mut injection.parts,
                &mut injection.stored,
                budget,
                "injected",
            );
            held += usize::from(!lines.is_empty());
            diagnostics.extend(lines);
        }
        found.user = user;
        found.place_user();
        if held > 0 {
            diagnostics.push(format!(
                "{held} injections from server {server} were over the message budget of {budget} estimated tokens: held to it"
            ));
        }
        found.diagnostics.append(&mut diagnostics);
    }

    /// Holds a push event or channel message to its server's message budget (see
    /// [`Host::hold_message`]).
    fn fit_message(&mut self, message: &mut Queued) {
        let configured = self.message_budget(&message.server);
        let mut diagnostics = Vec::new();
        let budget = self.held_budget(configured, &mut diagnostics);
        let what = message.origin.lane();
        diagnostics.extend(self.lanes.session.hold_message(
            &mut message.parts,
            &mut message.stored,
            budget,
            what,
        ));
        message.diagnostics.append(&mut diagnostics);
    }

    /// `fetch_reference`: the payload fetched and shown through the lanes within budget; where
    /// it was saved goes to the report (and `mcpl run`'s stderr), not to the model. Or
    /// `load_skill`, which reads a skill's file through the same resource reader.
    fn fetch_reference(&mut self, round: usize, call: &ToolCall) -> CallReport {
        // The servers may send requests while a resource is read; they are answered as always
        // and shown once the session is back.
        let (session, mut deferring) = self.lanes.split_for_fetch();
        let mut resources = HostResources {
            servers: &mut self.servers,
            host: &mut deferring,
        };
        let shown = if call.name == LOAD_SKILL {
            session.load_skill(&call.arguments, &mut resources, u64::MAX)
        } else {
            session.fetch_reference(&call.arguments, &mut resources, u64::MAX)
        };
        self.lanes.project_deferred();
        shown_report(round, call, &call.name, shown)
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

    fn read_resource(&mut self, server: &str, uri: &str) -> Result<Value, mcpl_fetch::ReadError> {
        let server = self
            .servers
            .iter_mut()
            .find(|s| s.config.launch.name == server)
            .ok_or_else(|| mcpl_fetch::ReadError::UnknownServer(server.to_owned()))?;
        let timeout = server.config.options.timeout;
        let connection = server
            .connection
            .as_mut()
            .ok_or_else(|| mcpl_fetch::ReadError::Unavailable(server.config.launch.name.clone()))?;
        connection
            .request(
                "resources/read",
                json!({"uri": uri}),
                timeout,
                &mut *self.host,
            )
            .map_err(|error| mcpl_fetch::ReadError::Request(Box::new(error)))
    }
}

/// The arguments a server gets for `call`: the model's, unwrapped for a tool whose schema the
/// route's rules wrapped.
fn arguments_of(wrapped: &std::collections::HashSet<String>, call: &ToolCall) -> Value {
    if wrapped.contains(&call.name) {
        mcpl_encode::tools::unwrap_arguments(&call.arguments)
    } else {
        call.arguments.clone()
    }
}

/// A result as the session showed it, with its price, spill and diagnostics.
fn shown_report(round: usize, call: &ToolCall, tool: &str, shown: Shown) -> CallReport {
    CallReport {
        round,
        server: None,
        tool: tool.to_owned(),
        output: shown.answering(&call.id, &call.name),
        call: call.clone(),
        estimated_tokens: shown.tokens,
        spill: shown.spill,
        unsaved: shown.unsaved,
        saved: shown.saved.map(|saved| saved.path),
        diagnostics: shown.diagnostics,
        for_user: shown.for_user,
    }
}

/// A server call that failed, as the model reads it.
fn failed_report(
    round: usize,
    call: &ToolCall,
    server: &str,
    tool: &str,
    error: String,
) -> CallReport {
    let text = format!("tool call failed: {error}");
    CallReport {
        round,
        server: Some(server.to_owned()),
        tool: tool.to_owned(),
        call: call.clone(),
        estimated_tokens: estimate(&text),
        output: ToolOutput::new(&call.id, &call.name, text).with_error(true),
        spill: None,
        unsaved: None,
        saved: None,
        diagnostics: Vec::new(),
        for_user: Vec::new(),
    }
}

/// The options of the server named `name`, when one is configured.
fn options_of<'s>(servers: &'s [Server], name: &str) -> Option<&'s ServerOptions> {
    servers
        .iter()
        .find(|server| server.config.launch.name == name)
        .map(|server| &server.config.options)
}

/// A text's price in estimated tokens.
fn estimate(text: &str) -> u64 {
    Bound.count(text)
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
        output: ToolOutput::new(&call.id, &call.name, text).with_error(is_error),
        estimated_tokens: tokens,
        spill: None,
        unsaved: None,
        saved: None,
        diagnostics: Vec::new(),
        for_user: Vec::new(),
    }
}

/// A tool output's copies as the window projection prices them.
fn copies_of(output: &ToolOutput) -> ToolResultCopies<'_> {
    ToolResultCopies::new(
        output.stored.clone().into(),
        Default::default(),
        match &output.live {
            Some(parts) => LiveCopy::Native(parts.iter().map(Content::as_part).collect()),
            None => LiveCopy::Stored,
        },
        output.is_error,
    )
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
    mcpl_encode::write_body(&mut *out, body)?;
    out.write_all(b"\n")?;
    out.flush()
}
