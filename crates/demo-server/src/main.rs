//! `mcpl-demo-server`: the demo MCP server on standard input and output, logs on standard error.
//!
//! Usage: `mcpl-demo-server [--name NAME]`. It exits with status 0 when standard input closes,
//! 3 when its `crash` tool is called, and 1 when reading or writing fails.

use std::process::ExitCode;

use mcpl_demo_server::{Options, serve};

const USAGE: &str = "usage: mcpl-demo-server [--name NAME]";

fn main() -> ExitCode {
    let mut options = Options::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--name" => match args.next() {
                Some(name) => options.name = name,
                None => return usage("--name needs a value"),
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => return usage(&format!("unknown argument {other}")),
        }
    }
    match serve(std::io::stdin().lock(), std::io::stdout().lock(), options) {
        Ok(ending) => ExitCode::from(ending.status()),
        Err(error) => {
            eprintln!("mcpl-demo-server: {error}");
            ExitCode::FAILURE
        }
    }
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("mcpl-demo-server: {problem}\n{USAGE}");
    ExitCode::from(2)
}
