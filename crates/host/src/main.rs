//! `mcpl`: the command-line face of the mcpl workspace. See `shared/spec/host.md` for its contract.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use mcpl_classify::{Limits, Summary, classify};
use mcpl_host::encode::ROUTE_NAMES;
use mcpl_host::input::{InputError, content_blocks, describe_shape, read_document};
use mcpl_host::project::{Lane, ProjectError, Request, project};
use mcpl_lanes::UriPolicy;

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
        #[arg(long, default_value = "anthropic", value_parser = clap::builder::PossibleValuesParser::new(ROUTE_NAMES))]
        route: String,
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
}

/// The one uri policy a user may opt into.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum ShowUris {
    /// Uris with no userinfo, query or fragment, and not `data:`.
    CredentialFree,
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
    }
}

fn project_command(file: Option<PathBuf>, request: &Request) -> Result<(), Failure> {
    let document = read_document(file.as_deref())?;
    let projection = project(&document, request).map_err(|error| Failure {
        status: match error {
            ProjectError::RouteNotBuilt(_) | ProjectError::UnknownShape { .. } => 2,
        },
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
