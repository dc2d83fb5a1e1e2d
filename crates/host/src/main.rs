//! `mcpl`: the command-line face of the mcpl workspace. See `shared/spec/host.md` for its contract.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use mcpl_classify::{Limits, Summary, classify};
use mcpl_host::input::{InputError, content_blocks, describe_shape, read_document};

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
    }
}

fn classify_command(file: Option<PathBuf>) -> Result<(), Failure> {
    let document = read_document(file.as_deref())?;
    let source_name = match file.as_deref() {
        Some(path) if path.as_os_str() != "-" => path.display().to_string(),
        _ => "stdin".to_owned(),
    };
    let blocks = content_blocks(&document).ok_or_else(|| {
        Failure::from(InputError::UnknownShape {
            source_name,
            found: describe_shape(&document),
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
