//! A small tokio host on rmcp, the official Rust MCP SDK, with an mcpl session: it starts an
//! MCP server, reads each tool result whole through the session's tap, and prints, per call,
//! what the model gets. See README.md.

use std::process::{ExitCode, Stdio};

use mcpl_budget::{LocalSpillStore, SpillNotice, SpillStore};
use mcpl_session::rmcp::{Tap, call_tool_raw};
use mcpl_session::{READ_RESULT, RouteId, ServerPolicy, Session, Shown};
use rmcp::ServiceExt;
use serde_json::{Value, json};

const USAGE: &str = "usage: rmcp-host [--route ROUTE] [--budget TOKENS] [--s3 URL BUCKET] \
    [--call TOOL[=JSON]]... -- COMMAND [ARG]...

Starts COMMAND as an MCP server over stdio, lists its tools, calls each --call (by default
server-everything's get-tiny-image, get-resource-links and a long echo) and prints one JSON line
per call: {\"tool\", \"tokens\", \"content\"}, content as the route's API takes it (anthropic by
default). A result over the budget is cut, its whole spilled (into a temporary folder, or the
S3 bucket with --s3, built with the s3 feature) and read back with read_result.";

/// The name the session knows the server by.
const SERVER: &str = "server";

/// What the command line asks for.
struct Options {
    route: RouteId,
    budget: Option<u64>,
    s3: Option<(String, String)>,
    calls: Vec<(String, Value)>,
    command: Vec<String>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(error) => {
            eprintln!("rmcp-host: {error}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(options).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("rmcp-host: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(options: Options) -> Result<(), String> {
    let (store, local_folder) = spill_store(&options)?;
    let policy = options.budget.map_or_else(ServerPolicy::default, |tokens| {
        ServerPolicy::default().with_budget(tokens)
    });
    let mut session = Session::new(options.route).with_default_policy(policy);
    session.set_spill_store(Ok(store));
    let mut session = Some(session);

    // The server as a child process; the session's tap reads its stdout before rmcp does.
    let mut child = tokio::process::Command::new(&options.command[0])
        .args(&options.command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", options.command[0]))?;
    let stdout = child.stdout.take().ok_or("the server has no stdout")?;
    let stdin = child.stdin.take().ok_or("the server has no stdin")?;
    let tap = Tap::new();
    let client =
        ().serve((tap.reader(stdout), stdin))
            .await
            .map_err(|e| format!("initialize: {e}"))?;
    let tools = client
        .list_all_tools()
        .await
        .map_err(|e| format!("tools/list: {e}"))?;
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    eprintln!("rmcp-host: {} tools: {}", names.len(), names.join(", "));

    for (tool, arguments) in &options.calls {
        if !names.contains(&tool.as_str()) {
            return Err(format!("the server offers no tool {tool}"));
        }
        let raw = call_tool_raw(&client, &tap, tool, arguments.clone())
            .await
            .map_err(|e| e.to_string())?;
        // The session blocks while a store writes: off the runtime's thread.
        let shown;
        (session, shown) = blocking(session, move |s| s.raw_tool_result(SERVER, &raw)).await?;
        print(tool, &shown, None);
        if let Some(spill) = &shown.spill {
            let arguments = json!({"id": spill.id.as_str()});
            let part;
            (session, part) = blocking(session, move |s| {
                s.call_host_tool(READ_RESULT, &arguments, &mut mcpl_fetch::NoResources)
                    .expect("read_result is always a host tool")
            })
            .await?;
            print(READ_RESULT, &part, Some(tool));
        }
    }

    let _ = client.cancel().await;
    let _ = child.kill().await;
    drop(session);
    if let Some(folder) = local_folder {
        let _ = std::fs::remove_dir_all(folder);
    }
    Ok(())
}

/// Runs `f` on the session on tokio's blocking pool, and gives the session back.
async fn blocking<T: Send + 'static>(
    session: Option<Session>,
    f: impl FnOnce(&mut Session) -> T + Send + 'static,
) -> Result<(Option<Session>, T), String> {
    tokio::task::spawn_blocking(move || {
        let mut session = session.expect("the session is back after each call");
        let out = f(&mut session);
        (Some(session), out)
    })
    .await
    .map_err(|e| format!("the session's task failed: {e}"))
}

/// One JSON line: the tool, what the result costs, and what the model gets.
fn print(tool: &str, shown: &Shown, of: Option<&str>) {
    let mut line = json!({"tool": tool, "tokens": shown.tokens, "content": shown.content});
    if let Some(of) = of {
        line["of"] = json!(of);
    }
    if let Some(spill) = &shown.spill {
        line["spill"] = json!(spill.id.as_str());
    }
    println!("{line}");
    for diagnostic in &shown.diagnostics {
        eprintln!("rmcp-host: {tool}: {diagnostic}");
    }
}

/// The spill store: the S3 bucket `--s3` names, or a temporary folder (removed at the end).
fn spill_store(
    options: &Options,
) -> Result<(Box<dyn SpillStore + Send>, Option<std::path::PathBuf>), String> {
    if let Some((url, bucket)) = &options.s3 {
        return s3_store(url, bucket).map(|store| (store, None));
    }
    let folder = std::env::temp_dir().join(format!("rmcp-host-{}", std::process::id()));
    let store = LocalSpillStore::new(&folder)
        .map_err(|e| e.to_string())?
        .with_notice(SpillNotice::ReadResult);
    Ok((Box::new(store), Some(folder)))
}

#[cfg(feature = "s3")]
fn s3_store(url: &str, bucket: &str) -> Result<Box<dyn SpillStore + Send>, String> {
    let location = mcpl_budget::S3Location::new(bucket)
        .with_prefix("rmcp-host/")
        .with_endpoint(url);
    // Credentials and region from the AWS environment (or the shared credentials file).
    let store = mcpl_spill_s3::S3SpillStore::new(&location)
        .map_err(|e| e.to_string())?
        .with_notice(SpillNotice::ReadResult);
    eprintln!("rmcp-host: spilling into s3://{bucket}/rmcp-host/ at {url}");
    Ok(Box::new(store))
}

#[cfg(not(feature = "s3"))]
fn s3_store(_: &str, _: &str) -> Result<Box<dyn SpillStore + Send>, String> {
    Err("--s3 needs the s3 feature: cargo build --features s3".to_owned())
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        route: RouteId::Anthropic,
        budget: None,
        s3: None,
        calls: Vec::new(),
        command: Vec::new(),
    };
    let value = |args: &mut dyn Iterator<Item = String>, flag: &str| {
        args.next().ok_or(format!("{flag} needs a value"))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--route" => {
                let name = value(&mut args, "--route")?;
                options.route = name.parse().map_err(|e| format!("--route {name}: {e}"))?;
            }
            "--budget" => {
                let tokens = value(&mut args, "--budget")?;
                options.budget = Some(
                    tokens
                        .parse()
                        .map_err(|e| format!("--budget {tokens}: {e}"))?,
                );
            }
            "--s3" => {
                let url = value(&mut args, "--s3")?;
                let bucket = value(&mut args, "--s3 URL")?;
                options.s3 = Some((url, bucket));
            }
            "--call" => {
                let call = value(&mut args, "--call")?;
                let (tool, arguments) = match call.split_once('=') {
                    Some((tool, json)) => (
                        tool.to_owned(),
                        serde_json::from_str(json).map_err(|e| format!("--call {tool}: {e}"))?,
                    ),
                    None => (call, json!({})),
                };
                options.calls.push((tool, arguments));
            }
            "--" => {
                options.command = args.by_ref().collect();
            }
            "-h" | "--help" => return Err("help".to_owned()),
            other => return Err(format!("unknown option {other}")),
        }
    }
    if options.command.is_empty() {
        return Err("no server command after --".to_owned());
    }
    if options.calls.is_empty() {
        options.calls = everything_calls();
    }
    Ok(options)
}

/// server-everything's tools: an image, two resource links, and a long text echoed back.
fn everything_calls() -> Vec<(String, Value)> {
    let message: String = (1..=200)
        .map(|n| format!("Line {n} of 200: the rmcp host asked server-everything to echo this.\n"))
        .collect();
    vec![
        ("get-tiny-image".to_owned(), json!({})),
        ("get-resource-links".to_owned(), json!({"count": 2})),
        ("echo".to_owned(), json!({"message": message})),
    ]
}
