//! `mcpl`: the command-line face of the mcpl workspace. Its contract is `docs/cli.md`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use mcpl_budget::PricedRoute;
use mcpl_budget::{SpillError, SpillNotice, SpillStore};
use mcpl_classify::{Limits, Summary, classify};
use mcpl_cli::conformance::{ConformanceError, run_conformance};
use mcpl_cli::demo::{DemoFolder, DemoTransport, render_json, render_text, run_demo};
use mcpl_cli::input::{
    InputError, content_blocks, describe_shape, fingerprint, parse_document, read_document,
    read_input,
};
use mcpl_cli::oauth::{Presenter, authorize};
use mcpl_cli::project::{Lane, Request, project_owned, project_view_step, scale_view};
use mcpl_cli::report;
use mcpl_host::config::{Config, ConfigError, S3Location, SpillStoreConfig};
use mcpl_host::host_loop::{Host, HostOptions, LoopError};
use mcpl_host::model::{Model, ModelError, Scripted};
use mcpl_lanes::{RouteId, UriPolicy};

/// Turns what MCP and MCPL servers send into what a language model should see.
#[derive(Debug, Parser)]
#[command(name = "mcpl", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Classify each content block of one input: one JSON object per block, as a JSON array.
    Classify {
        /// The input file; absent or `-` reads standard input.
        file: Option<PathBuf>,
    },
    /// Project one input on one lane: what the model sees, as one JSON object.
    Project {
        /// The lane.
        #[arg(long, default_value = "tool-result", value_parser = lane_name)]
        lane: Lane,
        /// The route: the provider API the live copy is for.
        #[arg(long, default_value = "anthropic", value_parser = route_id())]
        route: RouteId,
        /// The tool-result budget, in estimated tokens.
        #[arg(long, default_value_t = 12_500)]
        budget: u64,
        /// Where a result over budget is spilled.
        #[arg(long)]
        spill_dir: Option<PathBuf>,
        /// The name of the server the input came from.
        #[arg(long, default_value = "cli")]
        server: String,
        /// Show uris that carry no credential (default: show none).
        #[arg(long)]
        show_uris: Option<ShowUris>,
        /// The input file; absent or `-` reads standard input.
        file: Option<PathBuf>,
    },
    /// Start the built-in demo server, call each of its tools through the scripted loop, and
    /// show what the model sees on a route.
    Demo {
        /// The route, or `all` (with `--report`): the demo once per route, side by side.
        #[arg(long, default_value = "anthropic", value_parser = demo_route())]
        route: DemoRoutes,
        /// Print the same as JSON.
        #[arg(long)]
        json: bool,
        /// Where spill files and fetched references go (default: a new folder under the
        /// system's temporary folder, removed at exit); a folder given here is left in place.
        #[arg(long)]
        spill_dir: Option<PathBuf>,
        /// Keep the demo's temporary folder at exit, and say where it is.
        #[arg(long)]
        keep: bool,
        /// How the host reaches the demo server: `stdio` (a child process), `http` (Streamable
        /// HTTP on loopback) or `ws` (MCPL over a WebSocket on loopback).
        #[arg(long, default_value = "stdio", value_parser = demo_transport())]
        transport: DemoTransport,
        /// Write a self-contained HTML page of what the model saw.
        #[arg(long, value_name = "FILE.html")]
        report: Option<PathBuf>,
    },
    /// Run the inference loop against the configured servers.
    Run {
        /// The configuration: `{"mcpServers": {...}}`.
        #[arg(long)]
        config: PathBuf,
        /// The model: `scripted:FILE` (a JSON script of tool calls and a final answer), or a
        /// provider's: `anthropic:MODEL`, `openai-chat:MODEL`, `openai-responses:MODEL` or
        /// `gemini:MODEL` (keys and base urls from the environment; see docs/run.md).
        #[arg(long)]
        model: Option<String>,
        /// The route requests are encoded for (default: the model's, else anthropic).
        #[arg(long, value_parser = route_id())]
        route: Option<RouteId>,
        /// Write each provider request body, one JSON object per line.
        #[arg(long)]
        transcript: Option<PathBuf>,
        /// Write a self-contained HTML page of what the model saw.
        #[arg(long, value_name = "FILE.html")]
        report: Option<PathBuf>,
        /// The user's message that starts the conversation.
        #[arg(long, default_value = "Go ahead.")]
        prompt: String,
        /// The conversation this run continues: `read_result` reads back only the spills of
        /// the conversation that made them (default: a new random one).
        #[arg(long, value_parser = conversation_id)]
        conversation: Option<String>,
        /// Open a browser on a server's OAuth authorization url instead of printing it.
        #[arg(long)]
        open_browser: bool,
    },
    /// Remove the spills older than the configuration's `spillTtlHours` from its spill store
    /// (the local folder or the S3 bucket), and say how many went.
    SpillGc {
        /// The configuration: `{"mcpServers": {...}, "mcpl": {"spillTtlHours": N, ...}}`.
        #[arg(long)]
        config: PathBuf,
    },
    /// Run MCPL conformance vectors (format mcpl-bulk-references-1) against the fetcher and a
    /// real HTTP server on loopback: one line per case, then `N passed, M failed`.
    Conformance {
        /// The vector files; `-` reads standard input.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Serve the built-in demo MCP server on standard input and output.
    #[command(hide = true)]
    ServeDemo {
        /// Misbehave instead, in this way (for the host's tests).
        #[arg(long)]
        hostile: Option<String>,
        /// The size a misbehaviour uses (bytes, or a count of notifications).
        #[arg(long, requires = "hostile")]
        size: Option<u64>,
        /// Serve a remote misbehaviour on this loopback address (`127.0.0.1:0` picks a port),
        /// print its url and serve until standard input ends.
        #[arg(long, requires = "hostile")]
        listen: Option<std::net::SocketAddr>,
        /// The origin serving the demo's reference files (`mcpl demo` gives its own).
        #[arg(long, conflicts_with = "hostile")]
        files_origin: Option<String>,
    },
}

/// The one uri policy a user may opt into.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum ShowUris {
    /// Uris with no userinfo, query or fragment, and not `data:`.
    CredentialFree,
}

/// `--route`: one of the routes' names (listed in `--help` and in clap's error), parsed into the
/// route it names.
fn route_id() -> impl clap::builder::TypedValueParser<Value = RouteId> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(RouteId::ALL.map(RouteId::name))
        .try_map(|name| name.parse::<RouteId>())
}

/// The routes `mcpl demo --route` names: one, or all five.
#[derive(Debug, Clone)]
struct DemoRoutes(Vec<RouteId>);

fn demo_route() -> impl clap::builder::TypedValueParser<Value = DemoRoutes> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(
        RouteId::ALL.map(RouteId::name).into_iter().chain(["all"]),
    )
    .try_map(|name| match name.as_str() {
        "all" => Ok(DemoRoutes(RouteId::ALL.to_vec())),
        name => name.parse::<RouteId>().map(|route| DemoRoutes(vec![route])),
    })
}

fn demo_transport() -> impl clap::builder::TypedValueParser<Value = DemoTransport> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(DemoTransport::ALL.map(DemoTransport::name)).map(
        |name| {
            DemoTransport::ALL
                .into_iter()
                .find(|t| t.name() == name)
                .unwrap_or_default()
        },
    )
}

fn lane_name(name: &str) -> Result<Lane, String> {
    Lane::ALL
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, lane)| *lane)
        .ok_or_else(|| {
            let names: Vec<&str> = Lane::ALL.iter().map(|(n, _)| *n).collect();
            format!("unknown lane {name}; lanes: {}", names.join(", "))
        })
}

/// A failure and the exit status it gets: 2 for input the command cannot use, 1 otherwise.
#[derive(Debug)]
struct Failure {
    status: u8,
    message: String,
}

impl From<InputError> for Failure {
    fn from(error: InputError) -> Self {
        Failure {
            status: if error.is_unusable_input() { 2 } else { 1 },
            message: error.to_string(),
        }
    }
}

fn main() -> ExitCode {
    // A panic is a bug, but the contract says the command never prints one: say it in one line.
    std::panic::set_hook(Box::new(|info| {
        let detail = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        eprintln!("mcpl: internal error: {}", detail.replace('\n', " "));
    }));
    // One TLS stack for the whole process, installed here (decision 0120): ring as rustls's
    // default and the Mozilla roots, until a config adds its own (`load_config`).
    #[cfg(feature = "tls")]
    mcpl_tls::install(mcpl_tls::Trust::public());
    // Logs (servers' stderr among them) go to standard error; MCPL_LOG picks the level.
    let level = std::env::var("MCPL_LOG")
        .ok()
        .and_then(|level| level.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::WARN);
    tracing_subscriber::fmt()
        .with_writer(|| RedactedStderr)
        .with_max_level(level)
        .init();
    let cli = Cli::parse();
    let outcome = std::panic::catch_unwind(|| run(cli)).unwrap_or_else(|_| {
        Err(Failure {
            status: 1,
            message: String::new(),
        })
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            if !failure.message.is_empty() {
                eprintln!("mcpl: {}", failure.message.replace('\n', " "));
            }
            ExitCode::from(failure.status)
        }
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Classify { file } => classify_command(file),
        Command::Project {
            lane,
            route,
            budget,
            spill_dir,
            server,
            show_uris,
            file,
        } => {
            let request = Request {
                lane,
                route,
                budget,
                spill_dir,
                server,
                uri_policy: match show_uris {
                    Some(ShowUris::CredentialFree) => UriPolicy::CredentialFree,
                    None => UriPolicy::Hidden,
                },
            };
            project_command(file, &request)
        }
        Command::Demo {
            route,
            json,
            spill_dir,
            keep,
            transport,
            report,
        } => demo_command(&DemoArgs {
            routes: route.0,
            json,
            spill_dir,
            keep,
            transport,
            report,
        }),
        Command::Run {
            config,
            model,
            route,
            transcript,
            report,
            prompt,
            open_browser,
            conversation,
        } => run_command(&RunArgs {
            config,
            model,
            route,
            transcript,
            report,
            prompt,
            open_browser,
            conversation,
        }),
        Command::SpillGc { config } => spill_gc_command(&config),
        Command::Conformance { files } => conformance_command(&files),
        Command::ServeDemo {
            hostile,
            size,
            listen,
            files_origin,
        } => match (hostile, listen) {
            (None, _) => serve_demo(files_origin),
            (Some(mode), None) => serve_hostile(&mode, size),
            (Some(mode), Some(address)) => serve_hostile_remote(&mode, size, address),
        },
    }
}

struct DemoArgs {
    routes: Vec<RouteId>,
    json: bool,
    spill_dir: Option<PathBuf>,
    keep: bool,
    transport: DemoTransport,
    report: Option<PathBuf>,
}

fn demo_command(args: &DemoArgs) -> Result<(), Failure> {
    if args.routes.len() > 1 && args.report.is_none() {
        return Err(Failure {
            status: 2,
            message: "--route all needs --report FILE.html: the routes go side by side on the page"
                .to_owned(),
        });
    }
    let program = std::env::current_exe().map_err(|error| Failure {
        status: 1,
        message: format!("cannot find the mcpl program to start the demo server: {error}"),
    })?;
    // Each folder removes itself when dropped, at the end of this function, whichever way it
    // ends; they are declared before the runs so that the runs (and their servers) end first.
    let mut folders = Vec::new();
    for route in &args.routes {
        folders.push(match &args.spill_dir {
            Some(path) if args.routes.len() > 1 => DemoFolder::given(path.join(route.name())),
            Some(path) => DemoFolder::given(path.clone()),
            None => DemoFolder::temporary(args.keep).map_err(|error| Failure {
                status: 1,
                message: format!(
                    "cannot create the demo's folder in {}: {error}",
                    std::env::temp_dir().display()
                ),
            })?,
        });
    }
    let mut runs = Vec::new();
    for (route, folder) in args.routes.iter().zip(&folders) {
        let run = run_demo(
            program.clone(),
            PricedRoute::of(*route),
            folder,
            args.transport,
        )
        .map_err(|error| Failure {
            status: 1,
            message: format!("cannot serve the demo's origin on loopback: {error}"),
        })?;
        if let Some(error) = run.host.servers.iter().find_map(|s| s.error.as_ref())
            && run.host.calls.is_empty()
        {
            return Err(Failure {
                status: 1,
                message: format!("the demo server did not start: {error}"),
            });
        }
        runs.push(run);
    }
    if args.json {
        match runs.as_slice() {
            [run] => print_json(&render_json(run))?,
            runs => print_json(&runs.iter().map(render_json).collect::<Vec<_>>())?,
        }
    } else {
        let mut out = std::io::stdout().lock();
        for run in &runs {
            out.write_all(render_text(run).as_bytes())
                .map_err(|error| Failure {
                    status: 1,
                    message: format!("cannot write the output: {error}"),
                })?;
        }
        out.flush().map_err(|error| Failure {
            status: 1,
            message: format!("cannot write the output: {error}"),
        })?;
    }
    if let Some(path) = &args.report {
        let guard = report::Guard::of_hosts(runs.iter_mut().map(|r| &mut r.host));
        write_report(path, &demo_report(&runs), &guard)?;
    }
    for run in runs {
        run.outcome.map(drop).map_err(|error| Failure {
            status: 1,
            message: error.to_string(),
        })?;
    }
    Ok(())
}

/// The demo's page: its runs side by side, each planned fetch's verdict beside its call.
fn demo_report(runs: &[mcpl_cli::demo::DemoRun]) -> report::Report<'_> {
    let routes: Vec<&str> = runs
        .iter()
        .map(|r| r.host.options.route.id().name())
        .collect();
    let mut about = vec![format!(
        "The built-in demo server, reached over {}, on {} {}; a scripted model calls each of its tools, one a round.",
        runs.first().map_or("stdio", |r| r.transport.name()),
        if routes.len() == 1 {
            "the route"
        } else {
            "the routes"
        },
        routes.join(", ")
    )];
    for run in runs {
        about.push(format!(
            "{}: spill files and fetched references went to {} ({}).",
            run.host.options.route.id().name(),
            run.folder.display(),
            match run.at_exit {
                mcpl_cli::demo::AtExit::Removed => "removed at exit; --keep keeps it",
                mcpl_cli::demo::AtExit::Kept => "kept",
                mcpl_cli::demo::AtExit::Given => "your folder, left in place",
            }
        ));
    }
    report::Report {
        title: format!("mcpl demo: what the model saw on {}", routes.join(", ")),
        about,
        runs: runs
            .iter()
            .map(|run| report::ReportRun {
                host: &run.host,
                outcome: run.outcome.as_ref().map_err(ToString::to_string),
                call_notes: run
                    .fetches
                    .iter()
                    .filter_map(|(id, planned)| {
                        let call = run.host.calls.iter().find(|c| c.call.id == *id)?;
                        Some((id.clone(), planned.verdict(&call.output)))
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// Writes the page to `path`: exit 1 when it cannot.
fn write_report(
    path: &std::path::Path,
    page: &report::Report<'_>,
    guard: &report::Guard,
) -> Result<(), Failure> {
    std::fs::write(path, report::render(page, guard)).map_err(|error| Failure {
        status: 1,
        message: format!("cannot write the report {}: {error}", path.display()),
    })
}

struct RunArgs {
    config: PathBuf,
    model: Option<String>,
    route: Option<RouteId>,
    transcript: Option<PathBuf>,
    report: Option<PathBuf>,
    prompt: String,
    open_browser: bool,
    conversation: Option<String>,
}

/// `--conversation`: 1 to 128 of `[A-Za-z0-9_.-]`.
fn conversation_id(text: &str) -> Result<String, String> {
    let fits = (1..=128).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if fits {
        Ok(text.to_owned())
    } else {
        Err("a conversation id is 1 to 128 letters, digits, '_', '.' or '-'".to_owned())
    }
}

/// What `capabilities` takes natively, in words: `images, PDFs`, or `text only`.
fn describe(capabilities: mcpl_host::config::models::Capabilities) -> String {
    let taken: Vec<&str> = [
        (capabilities.images, "images"),
        (capabilities.pdf, "PDFs"),
        (capabilities.audio, "audio"),
    ]
    .into_iter()
    .filter_map(|(yes, what)| yes.then_some(what))
    .collect();
    if taken.is_empty() {
        "text only".to_owned()
    } else {
        taken.join(", ")
    }
}

/// Holds the run to what the provider's model takes: its route narrowed to the images, PDFs
/// and audio the model takes, its context window and output limit. A model the table does not
/// know gets its route's conservative default, and a warning says so.
fn narrow_to_model(options: &mut HostOptions, model: &str, config: &Config) {
    use mcpl_host::config::models;
    let route = options.route;
    let resolved = models::resolve(route.id(), model, &config.models);
    let capabilities = resolved.capabilities;
    // One narrowed route for the whole run, as the routes' tables are.
    options.route = Box::leak(Box::new(models::narrow(route, capabilities)));
    if let Some(window) = capabilities.context_window {
        options.context_window = options.context_window.min(window);
    }
    if let Some(max) = capabilities.max_output {
        options.max_tokens = options
            .max_tokens
            .min(u32::try_from(max).unwrap_or(u32::MAX));
    }
    let takes = describe(capabilities);
    let window = capabilities
        .context_window
        .map_or_else(String::new, |w| format!(", a context window of {w} tokens"));
    match (&resolved.source, resolved.configured) {
        (models::Source::Default, false) => eprintln!(
            "mcpl: warning: model {model} is not in the model table ({}); it gets the {} route's default: {takes} (set mcpl.models.\"{model}\" to say what it takes)",
            models::table_source(),
            route.id().name()
        ),
        (models::Source::Table(name), configured) => eprintln!(
            "mcpl: model {model}: {takes}{window} (the model table's {name}{})",
            if configured {
                ", with mcpl.models over it"
            } else {
                ""
            }
        ),
        (models::Source::Default, true) => eprintln!(
            "mcpl: model {model}: {takes}{window} (mcpl.models over the {} route's default)",
            route.id().name()
        ),
        _ => eprintln!("mcpl: model {model}: {takes}{window}"),
    }
}

/// Reads the configuration at `path` and trusts its `tlsRoots` for every TLS connection made
/// after: exit 1 when it cannot be read, 2 when a key is wrong or a root file is unusable.
fn load_config(path: &std::path::Path) -> Result<Config, Failure> {
    let config = Config::from_file(path).map_err(|error| Failure {
        status: match error {
            ConfigError::Read { .. } => 1,
            ConfigError::Key { .. } => 2,
            _ => 1,
        },
        message: error.to_string(),
    })?;
    #[cfg(feature = "tls")]
    if !config.tls_roots.is_empty() {
        let trust = mcpl_tls::Trust::public()
            .with_pem_files(&config.tls_roots)
            .map_err(|error| Failure {
                status: 2,
                message: format!("{}: mcpl.tlsRoots: {error}", path.display()),
            })?;
        mcpl_tls::install(trust);
    }
    Ok(config)
}

/// Ctrl-C (SIGINT) and SIGTERM during a run: the first sets mcpl-client's interruption flag, so
/// the calls in flight are cancelled at their servers (`notifications/cancelled`) and the run
/// ends with exit 130 once its servers are closed; a second ends the process at once.
fn interrupt_on_signals() {
    let flag = mcpl_client::interruption();
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // The order matters: the exit is registered first, and fires only once the flag is set.
        let registered =
            signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(flag))
                .and_then(|_| signal_hook::flag::register(signal, Arc::clone(flag)));
        if let Err(error) = registered {
            tracing::warn!(%error, signal, "no handler for the signal: it ends the run at once");
        }
    }
}

fn run_command(args: &RunArgs) -> Result<(), Failure> {
    interrupt_on_signals();
    let mut config = load_config(&args.config)?;
    let presenter = if args.open_browser {
        Presenter::OpenBrowser
    } else {
        Presenter::Print
    };
    authorize(&mut config, presenter).map_err(|error| Failure {
        status: 1,
        message: format!("{}: {error}", args.config.display()),
    })?;
    let mut model = model_named(args.model.as_deref())?;
    let route = PricedRoute::of(args.route.or(model.route()).unwrap_or(RouteId::Anthropic));
    if config.servers.is_empty() {
        return Err(Failure {
            status: 1,
            message: format!(
                "{}: mcpServers is empty: no server to run",
                args.config.display()
            ),
        });
    }
    let mut options = HostOptions::new(route, &config);
    if let Some((kind, name)) = args.model.as_deref().and_then(|m| m.split_once(':'))
        && kind != "scripted"
    {
        // A provider's model name goes in its requests (and in the transcript).
        options.model = name.to_owned();
        narrow_to_model(&mut options, name, &config);
    }
    if let Some(conversation) = &args.conversation {
        options.conversation.clone_from(conversation);
    }
    let object_store = spill_store(&config, &options);
    let mut registry = mcpl_lanes::Registry::new();
    registry.hidden_mut().share_secrets(log_secrets().clone());
    let mut host = Host::start_with(&config, options, registry, mcpl_lanes::ImageLedger::new());
    if let Some(store) = object_store {
        host.set_spill_store(store);
    }
    let running = host.servers.iter().any(|s| s.connection.is_some());
    for server in &host.servers {
        match (&server.error, running) {
            // Each error names its server and says why.
            (Some(error), true) => {
                eprintln!("mcpl: warning: {}", log_secrets().redact(&one_line(error)))
            }
            (Some(error), false) => eprintln!("mcpl: {}", log_secrets().redact(&one_line(error))),
            (None, _) => {}
        }
    }
    if !running {
        return Err(Failure {
            status: 1,
            message: String::new(),
        });
    }
    // What the route's rules changed in the tools offered (a schema wrapped, tools left out).
    for warning in &host.warnings {
        eprintln!(
            "mcpl: warning: {}",
            log_secrets().redact(&one_line(warning))
        );
    }
    let mut transcript = match &args.transcript {
        Some(path) => Some(std::fs::File::create(path).map_err(|error| Failure {
            status: 1,
            message: format!("{}: {error}", path.display()),
        })?),
        None => None,
    };
    // Each call's line is printed as the call lands, and what its server says while it runs
    // (progress, a task's status) as it comes.
    host.watch(
        Arc::new(|notice| eprintln!("mcpl: {}", log_secrets().redact(&notice.to_string()))),
        Box::new(|call| {
            eprintln!("mcpl: {}", call_line(call));
            // The blocks the server meant for the user alone: shown here, never to the model.
            for text in &call.for_user {
                eprintln!(
                    "mcpl: round {} {} for you: {}",
                    call.round,
                    call.call.name,
                    log_secrets().redact(text)
                );
            }
        }),
    );
    let outcome = host.run(
        model.as_mut(),
        &args.prompt,
        transcript.as_mut().map(|f| f as &mut dyn Write),
    );
    if let Some(usage) = host.usage {
        eprintln!("mcpl: {}", usage_line(&usage));
    }
    if let Some(path) = &args.report {
        // The host's session hides what it hid in the run, and shares the log's secrets.
        let guard = report::Guard::of_hosts([&mut host]);
        let page = report::Report {
            title: format!("mcpl run: what the model saw ({})", args.config.display()),
            about: vec![format!(
                "Model {}, route {}; the user's message: {}",
                args.model.as_deref().unwrap_or("(none)"),
                host.options.route.id().name(),
                args.prompt
            )],
            runs: vec![report::ReportRun {
                host: &host,
                outcome: outcome.as_ref().map_err(ToString::to_string),
                call_notes: Vec::new(),
            }],
        };
        write_report(path, &page, &guard)?;
    }
    let outcome = outcome.map_err(|error| Failure {
        // 128 + SIGINT, as a shell reports a run ended by Ctrl-C.
        status: if matches!(error, LoopError::Interrupted) {
            130
        } else {
            1
        },
        message: error.to_string(),
    })?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", outcome.answer)
        .and_then(|()| out.flush())
        .map_err(|error| Failure {
            status: 1,
            message: format!("cannot write the output: {error}"),
        })
}

/// One call's line: `round <n> <tool>: <tokens> estimated tokens`, and what became of it.
fn call_line(call: &mcpl_host::host_loop::CallReport) -> String {
    format!(
        "round {} {}: {} estimated tokens{}{}{}{}",
        call.round,
        call.call.name,
        call.estimated_tokens,
        if call.output.is_error { ", error" } else { "" },
        call.spill
            .as_ref()
            .map(|s| format!(", spilled to {}", s.path))
            .unwrap_or_default(),
        call.saved
            .as_deref()
            .map(|path| format!(", saved to {path}"))
            .unwrap_or_default(),
        // The result was cut, and its whole could not be kept: say so, and why.
        call.unsaved
            .as_deref()
            .map(|why| format!(", cut but not spilled: {}", one_line(why)))
            .unwrap_or_default()
    )
}

/// What the provider reported over the run: `usage: <n> input tokens (<r> read from the
/// cache, <w> written to it), <m> output tokens`.
fn usage_line(usage: &mcpl_encode::conversation::Usage) -> String {
    format!(
        "usage: {} input tokens ({} read from the cache, {} written to it), {} output tokens",
        usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens, usage.output_tokens
    )
}

/// A message on one line: each line break becomes a space.
fn one_line(message: &str) -> String {
    message.replace(['\r', '\n'], " ")
}

/// The model `--model` names: `scripted:FILE`, or with the `http` feature a provider's.
fn model_named(spec: Option<&str>) -> Result<Box<dyn Model>, Failure> {
    let unusable = |message: String| Failure { status: 2, message };
    let Some(spec) = spec else {
        // No model: a script with no steps, which answers at once; servers still start, list
        // their tools and are asked for injections, so a configuration can be checked.
        return Ok(Box::new(
            Scripted::from_slice(
                br#"{"steps": [], "final": "(no model given: pass --model scripted:FILE)"}"#,
            )
            .map_err(|e| unusable(e.to_string()))?,
        ));
    };
    let (kind, rest) = spec.split_once(':').unwrap_or((spec, ""));
    match kind {
        "scripted" => Scripted::from_file(std::path::Path::new(rest))
            .map(|model| Box::new(model) as Box<dyn Model>)
            .map_err(|e| Failure {
                // A script that cannot be read is a failure; one that is not a script is input
                // the command cannot use.
                status: if matches!(e, ModelError::ScriptRead { .. }) {
                    1
                } else {
                    2
                },
                message: e.to_string(),
            }),
        _ => kind
            .parse()
            .ok()
            .and_then(|route| http_model(route, rest))
            .ok_or_else(|| {
                unusable(format!(
                    "unknown model {spec}; models: scripted:FILE{}",
                    if cfg!(feature = "http") {
                        ", anthropic:MODEL, openai-chat:MODEL, openai-responses:MODEL, gemini:MODEL"
                    } else {
                        " (this mcpl was built without the http feature)"
                    }
                ))
            })?,
    }
}

#[cfg(not(feature = "http"))]
fn http_model(_route: RouteId, _model: &str) -> Option<Result<Box<dyn Model>, Failure>> {
    None
}

#[cfg(feature = "http")]
fn http_model(route: RouteId, model: &str) -> Option<Result<Box<dyn Model>, Failure>> {
    mcpl_host::http::model_from_env(route, model).map(|result| {
        result.map_err(|error| Failure {
            status: 2,
            message: error.to_string(),
        })
    })
}

fn conformance_command(files: &[PathBuf]) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    let tally = run_conformance(files, &mut out).map_err(|error| Failure {
        status: match error {
            ConformanceError::Vectors { .. } => 2,
            _ => 1,
        },
        message: error.to_string(),
    })?;
    let _ = out.flush();
    if tally.failed > 0 {
        return Err(Failure {
            status: 1,
            message: String::new(),
        });
    }
    Ok(())
}

fn serve_hostile(mode: &str, size: Option<u64>) -> Result<(), Failure> {
    let mode = mcpl_demo_server::Misbehaviour::named(mode).ok_or_else(|| Failure {
        status: 2,
        message: match mcpl_demo_server::RemoteMisbehaviour::named(mode) {
            Some(_) => format!("{mode} is served over the network: add --listen 127.0.0.1:0"),
            None => format!("no misbehaviour named {mode}"),
        },
    })?;
    let stdin = std::io::stdin().lock();
    mcpl_demo_server::serve_hostile(mode, size, stdin, std::io::stdout()).map_err(|error| Failure {
        status: 1,
        message: format!("hostile server: {error}"),
    })
}

/// Serves a remote misbehaviour on `address`, prints its url, and serves until standard input
/// ends.
fn serve_hostile_remote(
    mode: &str,
    size: Option<u64>,
    address: std::net::SocketAddr,
) -> Result<(), Failure> {
    let mode = mcpl_demo_server::RemoteMisbehaviour::named(mode).ok_or_else(|| Failure {
        status: 2,
        message: match mcpl_demo_server::Misbehaviour::named(mode) {
            Some(_) => format!("{mode} is served over standard input and output: drop --listen"),
            None => format!("no misbehaviour named {mode}"),
        },
    })?;
    if !address.ip().is_loopback() {
        return Err(Failure {
            status: 2,
            message: format!("--listen {address}: not a loopback address"),
        });
    }
    let remote =
        mcpl_demo_server::HostileRemote::bind(mode, size, address).map_err(|error| Failure {
            status: 1,
            message: format!("hostile server: {address}: {error}"),
        })?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", remote.url())
        .and_then(|()| out.flush())
        .map_err(|error| Failure {
            status: 1,
            message: format!("stdout: {error}"),
        })?;
    drop(out);
    // Serve until standard input ends: whoever started the server ends it by closing it.
    let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
    drop(remote);
    Ok(())
}

fn serve_demo(files_origin: Option<String>) -> Result<(), Failure> {
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    let options = mcpl_demo_server::Options {
        files_origin,
        ..mcpl_demo_server::Options::default()
    };
    let ending = mcpl_demo_server::serve(stdin, stdout, options).map_err(|error| Failure {
        status: 1,
        message: format!("demo server: {error}"),
    })?;
    match ending.status() {
        0 => Ok(()),
        status => Err(Failure {
            status,
            message: String::new(),
        }),
    }
}

/// A view that borrows at most this share of its input (one part in it) holds its own strings
/// and frees the input.
const OWNED_VIEW_SHARE: usize = 8;

fn project_command(file: Option<PathBuf>, request: &Request) -> Result<(), Failure> {
    let (source_name, bytes) = read_input(file.as_deref())?;
    // A plain tool result is read straight from its bytes, its blocks borrowing them, and its
    // images scaled where they stand; any other document (a JSON-RPC message, another lane's
    // shape, input that is not JSON) is parsed into a `Value`, whose reading says what is wrong
    // with it.
    let first = mcpl_classify::first_json_byte(&bytes);
    if request.lane == Lane::ToolResult
        && matches!(first, Some(b'{' | b'['))
        && memchr::memmem::find(&bytes, b"\"jsonrpc\"").is_none()
    {
        let mut mended = Vec::new();
        if let Ok((mut view, replaced)) = mcpl_classify::parse_view_mending(&bytes, &mut mended)
            && view.content.is_some()
        {
            let scaled = scale_view(&mut view, first == Some(b'{'), request);
            let fingerprint = fingerprint(&bytes);
            // A view that borrows little of the input (a text with escapes is decoded into a
            // string of its own) takes its strings, and the input is freed before the lanes
            // copy anything: a 200 MB text is then held once, not twice.
            if view.borrowed_bytes() <= bytes.len() / OWNED_VIEW_SHARE {
                let view = view.into_owned();
                drop(mended);
                drop(bytes);
                let step = project_view_step(&view, fingerprint, replaced, scaled, request);
                drop(view);
                return print_json(&step.finish(request));
            }
            // Copies that stand without the view free it, and the input, before they are priced,
            // cut and spilled: a result of many small blocks is then held once, as its stored
            // copy.
            let step = project_view_step(&view, fingerprint, replaced, scaled, request);
            drop(view);
            drop(mended);
            drop(bytes);
            return print_json(&step.finish(request));
        }
    }
    let document = parse_document(&source_name, &bytes)?;
    drop(bytes);
    let projection = project_owned(document, request).map_err(|error| Failure {
        // Every projection error is input the command cannot use.
        status: 2,
        message: error.to_string(),
    })?;
    print_json(&projection)
}

fn classify_command(file: Option<PathBuf>) -> Result<(), Failure> {
    let document = read_document(file.as_deref())?;
    let blocks = content_blocks(&document.value).ok_or_else(|| {
        Failure::from(InputError::UnknownShape {
            source_name: document.source_name.clone(),
            found: describe_shape(&document.value),
        })
    })?;
    let limits = Limits::default();
    let summaries: Vec<Summary> = blocks
        .iter()
        .map(|block| Summary::of(&classify(block), &limits))
        .collect();
    print_json(&summaries)
}

fn print_json(value: &impl serde::Serialize) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(out))
        .and_then(|()| out.flush())
        .map_err(|error| Failure {
            status: 1,
            message: format!("cannot write the output: {error}"),
        })
}

/// The object store `spillStore` names, when it names one; `None` keeps the local folder.
fn spill_store(
    config: &Config,
    options: &HostOptions,
) -> Option<Result<Box<dyn SpillStore + Send>, SpillError>> {
    match &config.spill_store {
        SpillStoreConfig::Local => None,
        SpillStoreConfig::S3(location) => Some(s3_store(
            location,
            &options.conversation,
            options.spill_notice,
        )),
        _ => Some(Err(SpillError::Remote {
            store: "spillStore".to_owned(),
            message: "this mcpl opens no store of that kind".to_owned(),
        })),
    }
}

#[cfg(feature = "s3")]
fn s3_store(
    location: &S3Location,
    conversation: &str,
    notice: SpillNotice,
) -> Result<Box<dyn SpillStore + Send>, SpillError> {
    mcpl_spill_s3::S3SpillStore::new(location).map(|store| {
        Box::new(store.with_conversation(conversation).with_notice(notice))
            as Box<dyn SpillStore + Send>
    })
}

#[cfg(not(feature = "s3"))]
fn s3_store(
    location: &S3Location,
    _conversation: &str,
    _notice: SpillNotice,
) -> Result<Box<dyn SpillStore + Send>, SpillError> {
    Err(SpillError::Remote {
        store: format!("s3://{}/{}", location.bucket, location.prefix),
        message: "this mcpl was built without the s3 feature".to_owned(),
    })
}

/// `mcpl spill-gc`: the retention recipe for `spillTtlHours`.
fn spill_gc_command(path: &std::path::Path) -> Result<(), Failure> {
    let config = load_config(path)?;
    let Some(hours) = config.spill_ttl_hours else {
        return Err(Failure {
            status: 2,
            message: format!(
                "{}: mcpl.spillTtlHours is not set: spills are kept",
                path.display()
            ),
        });
    };
    let failed = |error: SpillError| Failure {
        status: 1,
        message: error.to_string(),
    };
    let (mut store, place): (Box<dyn SpillStore + Send>, String) = match &config.spill_store {
        SpillStoreConfig::Local => {
            let Some(dir) = &config.spill_dir else {
                return Err(Failure {
                    status: 2,
                    message: format!(
                        "{}: mcpl.spillDir is not set: there is no spill folder to clean",
                        path.display()
                    ),
                });
            };
            let store = mcpl_budget::LocalSpillStore::new(dir).map_err(failed)?;
            (Box::new(store), dir.display().to_string())
        }
        SpillStoreConfig::S3(location) => {
            let place = format!("s3://{}/{}", location.bucket, location.prefix);
            let store = s3_store(location, "spill-gc", SpillNotice::Path).map_err(failed)?;
            (store, place)
        }
        _ => {
            return Err(Failure {
                status: 2,
                message: format!(
                    "{}: spillStore names a store this mcpl does not open",
                    path.display()
                ),
            });
        }
    };
    let age = std::time::Duration::from_secs(hours.saturating_mul(3600));
    let removed = store.remove_older_than(age).map_err(failed)?;
    println!("removed {removed} spill files older than {hours} hours from {place}");
    Ok(())
}

/// The secrets every log line and every error mcpl prints is redacted with: the host's session
/// shares this set, so each secret it learns (a key in the environment, a token it sends, a
/// hidden uri's parts) is withheld from standard error too.
fn log_secrets() -> &'static mcpl_redact::Secrets {
    static SECRETS: std::sync::OnceLock<mcpl_redact::Secrets> = std::sync::OnceLock::new();
    SECRETS.get_or_init(mcpl_redact::Secrets::new)
}

/// Standard error, each write (one log event) redacted with [`log_secrets`] first.
struct RedactedStderr;

impl std::io::Write for RedactedStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().write_all(log_secrets().redact(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
