//! `cargo xtask hostile-memory [stdio|remote]`: the peak resident memory of `mcpl run` (release
//! build) against each hostile server mode beside the demo server, one line per mode.
//!
//! The stdio modes (`mcpl serve-demo --hostile MODE`, at the mode's full default size: a 4 GiB
//! line, a 500 MB line, a million notifications, an endless push stream, ...) are held to the
//! message limit plus 150 MiB (issue 12). The remote modes (`mcpl serve-demo --hostile MODE
//! --listen 127.0.0.1:0`, dialed at the url it prints: endless and huge SSE events, a gzip
//! bomb, drips, redirects, floods, answers after the timeout) are held to the same memory, to
//! twice the call timeout per hostile call (one more for the start), and to fewer than 64
//! threads and 64 open descriptors at once (issue 29).
//!
//! The peak memory is `VmHWM` from `/proc/<pid>/status`; the threads (`Threads`) and the
//! descriptors (the entries of `/proc/<pid>/fd`) are sampled every 10 ms while the run lasts.
//! This recipe needs Linux. Every line is printed before a failure is reported.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Every hostile mode, as `mcpl serve-demo --hostile` names them; `None` is the demo alone.
const MODES: [Option<&str>; 15] = [
    None,
    Some("same-cursor"),
    Some("endless-cursors"),
    Some("ping-flood"),
    Some("endless-line"),
    Some("big-line"),
    Some("push-stream"),
    Some("notify-flood"),
    Some("unmatched-response"),
    Some("banner"),
    Some("old-version"),
    Some("invalid-utf8"),
    Some("deep-nesting"),
    Some("huge-number"),
    Some("image-injections"),
];
/// Every remote mode, as `mcpl serve-demo --hostile MODE --listen ADDR` names them.
const REMOTE_MODES: [&str; 12] = [
    "sse-endless-event",
    "sse-huge-event",
    "gzip-bomb",
    "drip-connect",
    "drip-headers",
    "drip-body",
    "ws-drip-upgrade",
    "redirect-loop",
    "redirect-origin",
    "header-flood",
    "request-flood",
    "timeout-loop",
];
/// The default message limit (`maxMessageBytes`).
const MESSAGE_LIMIT: u64 = 64 << 20;
/// The headroom the target allows above the limit.
const HEADROOM: u64 = 150 << 20;
/// The hostile server's call timeout over stdio.
const TIMEOUT_MS: u64 = 5000;
/// The remote hostile server's call timeout: under the 3 s `timeout-loop` waits to answer.
const REMOTE_TIMEOUT_MS: u64 = 2000;
/// `timeout-loop`'s rounds, and its calls in each: 30 calls, 3 at a time.
const LOOP_ROUNDS: u64 = 10;
const LOOP_CALLS: u64 = 3;
/// A remote run may have fewer threads and open descriptors than this at once.
const MAX_THREADS: u64 = 64;
const MAX_DESCRIPTORS: u64 = 64;
/// A run that takes longer than this is stopped and reported.
const DEADLINE: Duration = Duration::from_secs(300);
/// How often a run's memory, threads and descriptors are sampled.
const SAMPLE: Duration = Duration::from_millis(10);

/// What one run came to.
struct Measured {
    peak: u64,
    threads: u64,
    descriptors: u64,
    took: Duration,
    outcome: String,
    finished: bool,
}

pub(crate) fn hostile_memory(root: &Path, args: &[String]) -> Result<(), String> {
    let (stdio, remote) = match args.first().map(String::as_str) {
        None => (true, true),
        Some("stdio") if args.len() == 1 => (true, false),
        Some("remote") if args.len() == 1 => (false, true),
        _ => return Err("usage: cargo xtask hostile-memory [stdio|remote]".to_owned()),
    };
    crate::cargo(root, &["build", "--release", "-p", "mcpl-cli"])?;
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map_or_else(|| root.join("target"), |dir| root.join(dir));
    let mcpl = target_dir.join("release").join("mcpl");
    let scratch = std::env::temp_dir().join(format!("mcpl-hostile-memory-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let target = (MESSAGE_LIMIT + HEADROOM) >> 20;
    let mut failures = Vec::new();
    if stdio {
        println!("peak resident memory of mcpl run (target: at most {target} MiB)");
        println!(
            "{:<20} {:>9} {:>9} {:>8} {:>12}  outcome",
            "mode", "peak MiB", "seconds", "threads", "descriptors"
        );
        for mode in MODES {
            let name = mode.unwrap_or("(demo only)");
            match measure(&mcpl, &scratch, mode) {
                Ok(run) => {
                    print_line(name, &run, "");
                    if run.peak >> 20 > target {
                        failures.push(format!("{name}: {} MiB", run.peak >> 20));
                    }
                }
                Err(error) => {
                    println!("{name:<20} {error}");
                    failures.push(format!("{name}: {error}"));
                }
            }
        }
    }
    if remote {
        println!(
            "mcpl run against remote hostile servers, timeout {REMOTE_TIMEOUT_MS} ms (target: at \
             most {target} MiB, twice the timeout per call and once more for the start, fewer \
             than {MAX_THREADS} threads and {MAX_DESCRIPTORS} descriptors)"
        );
        println!(
            "{:<20} {:>9} {:>9} {:>8} {:>12}  outcome",
            "mode", "peak MiB", "seconds", "threads", "descriptors"
        );
        for mode in REMOTE_MODES {
            let calls = if mode == "timeout-loop" {
                LOOP_ROUNDS * LOOP_CALLS
            } else {
                1
            };
            let bound = Duration::from_millis(2 * REMOTE_TIMEOUT_MS * (calls + 1));
            match measure_remote(&mcpl, &scratch, mode, bound) {
                Ok(run) => {
                    let mut over = Vec::new();
                    if run.peak >> 20 > target {
                        over.push(format!("{} MiB", run.peak >> 20));
                    }
                    if run.took > bound {
                        over.push(format!(
                            "{:.1} s, over {} s",
                            run.took.as_secs_f64(),
                            bound.as_secs()
                        ));
                    }
                    if run.threads >= MAX_THREADS {
                        over.push(format!("{} threads", run.threads));
                    }
                    if run.descriptors >= MAX_DESCRIPTORS {
                        over.push(format!("{} descriptors", run.descriptors));
                    }
                    if !run.finished {
                        over.push(run.outcome.clone());
                    }
                    let bound_note = format!(" ({calls} calls, bound {} s)", bound.as_secs());
                    print_line(mode, &run, &bound_note);
                    if !over.is_empty() {
                        failures.push(format!("{mode}: {}", over.join(", ")));
                    }
                }
                Err(error) => {
                    println!("{mode:<20} {error}");
                    failures.push(format!("{mode}: {error}"));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("over target: {}", failures.join("; ")))
    }
}

fn print_line(name: &str, run: &Measured, note: &str) {
    println!(
        "{name:<20} {:>9} {:>9.1} {:>8} {:>12}  {}{note}",
        run.peak >> 20,
        run.took.as_secs_f64(),
        run.threads,
        run.descriptors,
        run.outcome
    );
}

fn quote(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Runs one conversation against a stdio mode and measures it.
fn measure(mcpl: &Path, scratch: &Path, mode: Option<&str>) -> Result<Measured, String> {
    let program = quote(&mcpl.display().to_string());
    let hostile = mode.map_or(String::new(), |mode| {
        format!(
            r#""hostile": {{"command": {program}, "args": ["serve-demo", "--hostile", "{mode}"],
                           "mcpl": {{"timeoutMs": {TIMEOUT_MS}}}}},"#
        )
    });
    // Without a hostile server there is no `hostile__act` to call, and `mcpl run` refuses a
    // call no server offers.
    let act = if mode.is_some() {
        r#"{"server": "hostile", "name": "act"}, "#
    } else {
        ""
    };
    let script = format!(
        r#"{{"steps": [
        {{"tool_calls": [{act}{{"server": "demo", "name": "text"}}]}},
        {{"tool_calls": [{{"server": "demo", "name": "text"}}]}}], "final": "done"}}"#
    );
    run_mcpl(mcpl, scratch, &hostile, &script, DEADLINE)
}

/// Serves a remote mode, runs one conversation against it (30 calls for `timeout-loop`) and
/// measures it; the run is stopped at twice its bound, or a minute if that is longer.
fn measure_remote(
    mcpl: &Path,
    scratch: &Path,
    mode: &str,
    bound: Duration,
) -> Result<Measured, String> {
    let mut server = Command::new(mcpl)
        .args(["serve-demo", "--hostile", mode, "--listen", "127.0.0.1:0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", mcpl.display()))?;
    let measured = dial(mcpl, scratch, mode, bound, &mut server);
    // Closing its input ends the server; one that does not end is killed.
    drop(server.stdin.take());
    let waited = Instant::now();
    while matches!(server.try_wait(), Ok(None)) && waited.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(SAMPLE);
    }
    let _ = server.kill();
    let _ = server.wait();
    measured
}

fn dial(
    mcpl: &Path,
    scratch: &Path,
    mode: &str,
    bound: Duration,
    server: &mut Child,
) -> Result<Measured, String> {
    let stdout = server.stdout.take().ok_or("the server has no stdout")?;
    let mut url = String::new();
    BufReader::new(stdout)
        .read_line(&mut url)
        .map_err(|e| format!("reading the server's url: {e}"))?;
    let url = url.trim();
    if !url.contains("://") {
        return Err(format!("the server printed no url: {url:?}"));
    }
    let hostile = format!(
        r#""hostile": {{"url": {}, "mcpl": {{"timeoutMs": {REMOTE_TIMEOUT_MS}}}}},"#,
        quote(url)
    );
    let act = r#"{"server": "hostile", "name": "act"}"#;
    let demo = r#"{"server": "demo", "name": "text"}"#;
    // Each round calls the demo too: a run whose last 12 calls all failed stops there.
    let steps: Vec<String> = if mode == "timeout-loop" {
        let calls = vec![act; LOOP_CALLS as usize].join(", ");
        (0..LOOP_ROUNDS)
            .map(|_| format!(r#"{{"tool_calls": [{calls}, {demo}]}}"#))
            .collect()
    } else {
        vec![format!(r#"{{"tool_calls": [{act}, {demo}]}}"#)]
    };
    let script = format!(
        r#"{{"steps": [{}, {{"tool_calls": [{demo}]}}], "final": "done"}}"#,
        steps.join(", ")
    );
    let deadline = (bound * 2).max(Duration::from_secs(60));
    run_mcpl(mcpl, scratch, &hostile, &script, deadline)
}

/// Runs `mcpl run` with the hostile server's entry (`"hostile": {...},` or nothing) beside the
/// demo server and this script, sampling it every [`SAMPLE`] until it ends or `deadline`.
fn run_mcpl(
    mcpl: &Path,
    scratch: &Path,
    hostile: &str,
    script: &str,
    deadline: Duration,
) -> Result<Measured, String> {
    let program = quote(&mcpl.display().to_string());
    let spill = quote(&scratch.join("spill").display().to_string());
    let config = format!(
        r#"{{"mcpServers": {{{hostile} "demo": {{"command": {program}, "args": ["serve-demo"]}}}},
            "mcpl": {{"spillDir": {spill}, "contextWindow": 100000000}}}}"#
    );
    let config_path = scratch.join("config.json");
    let script_path = scratch.join("script.json");
    std::fs::write(&config_path, config).map_err(|e| format!("{}: {e}", config_path.display()))?;
    std::fs::write(&script_path, script).map_err(|e| format!("{}: {e}", script_path.display()))?;
    let mut child = Command::new(mcpl)
        .arg("run")
        .arg("--config")
        .arg(&config_path)
        .arg("--model")
        .arg(format!("scripted:{}", script_path.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", mcpl.display()))?;
    let started = Instant::now();
    let (mut peak, mut threads, mut descriptors) = (0, 0, 0);
    let (outcome, finished) = loop {
        let pid = child.id();
        if let Some(now) = peak_resident(pid) {
            peak = peak.max(now);
        }
        threads = threads.max(status_field(pid, "Threads:").unwrap_or(0));
        descriptors = descriptors.max(open_descriptors(pid));
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break ("finished".to_owned(), true),
            Ok(Some(status)) => break (format!("failed ({status})"), false),
            Ok(None) if started.elapsed() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break (format!("stopped after {} s", deadline.as_secs()), false);
            }
            Ok(None) => std::thread::sleep(SAMPLE),
            Err(error) => return Err(format!("waiting for mcpl run: {error}")),
        }
    };
    let took = started.elapsed();
    if peak == 0 {
        return Err("no VmHWM in /proc/<pid>/status: this recipe needs Linux".to_owned());
    }
    Ok(Measured {
        peak,
        threads,
        descriptors,
        took,
        outcome,
        finished,
    })
}

/// A process's peak resident memory in bytes (`VmHWM`).
pub(crate) fn peak_resident(pid: u32) -> Option<u64> {
    status_field(pid, "VmHWM:").map(|kib| kib * 1024)
}

/// The number a line of `/proc/<pid>/status` starting with `field` gives.
fn status_field(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// How many descriptors a process has open (the entries of `/proc/<pid>/fd`).
fn open_descriptors(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |entries| entries.count() as u64)
}
