//! `cargo xtask hostile-memory`: the peak resident memory of `mcpl run` (release build) against
//! each hostile server mode (`mcpl serve-demo --hostile MODE`, at the mode's full default size:
//! a 4 GiB line, a 500 MB line, a million notifications, an endless push stream, ...) beside the
//! demo server, one line per mode. The peak is `VmHWM` from `/proc/<pid>/status`, read every
//! 10 ms while the run lasts, so this recipe needs Linux. The target is the message limit plus
//! 150 MiB in every mode (issue 12).

use std::path::Path;
use std::process::{Command, Stdio};
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
/// The default message limit (`maxMessageBytes`).
const MESSAGE_LIMIT: u64 = 64 << 20;
/// The headroom the target allows above the limit.
const HEADROOM: u64 = 150 << 20;
/// The hostile server's call timeout.
const TIMEOUT_MS: u64 = 5000;
/// A run that takes longer than this is stopped and reported.
const DEADLINE: Duration = Duration::from_secs(300);

pub(crate) fn hostile_memory(root: &Path) -> Result<(), String> {
    crate::cargo(root, &["build", "--release", "-p", "mcpl-cli"])?;
    let mcpl = root.join("target").join("release").join("mcpl");
    let scratch = std::env::temp_dir().join(format!("mcpl-hostile-memory-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let target = (MESSAGE_LIMIT + HEADROOM) >> 20;
    println!("peak resident memory of mcpl run (target: at most {target} MiB)");
    println!("{:<20} {:>9} {:>9}  outcome", "mode", "peak MiB", "seconds");
    let mut over = Vec::new();
    for mode in MODES {
        let name = mode.unwrap_or("(demo only)");
        let (peak, took, outcome) = measure(&mcpl, &scratch, mode)?;
        let peak_mib = peak >> 20;
        println!(
            "{name:<20} {peak_mib:>9} {:>9.1}  {outcome}",
            took.as_secs_f64()
        );
        if peak_mib > target {
            over.push(name);
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    if over.is_empty() {
        Ok(())
    } else {
        Err(format!("over {target} MiB: {}", over.join(", ")))
    }
}

/// Runs one conversation and returns the peak, the time and how the run ended.
fn measure(
    mcpl: &Path,
    scratch: &Path,
    mode: Option<&str>,
) -> Result<(u64, Duration, String), String> {
    let quote = |text: &str| format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""));
    let program = quote(&mcpl.display().to_string());
    let hostile = mode.map_or(String::new(), |mode| {
        format!(
            r#""hostile": {{"command": {program}, "args": ["serve-demo", "--hostile", "{mode}"],
                           "mcpl": {{"timeoutMs": {TIMEOUT_MS}}}}},"#
        )
    });
    let spill = quote(&scratch.join("spill").display().to_string());
    let config = format!(
        r#"{{"mcpServers": {{{hostile} "demo": {{"command": {program}, "args": ["serve-demo"]}}}},
            "mcpl": {{"spillDir": {spill}, "contextWindow": 100000000}}}}"#
    );
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
    let mut peak = 0;
    let outcome = loop {
        if let Some(now) = peak_resident(child.id()) {
            peak = peak.max(now);
        }
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break "finished".to_owned(),
            Ok(Some(status)) => break format!("failed ({status})"),
            Ok(None) if started.elapsed() > DEADLINE => {
                let _ = child.kill();
                let _ = child.wait();
                break format!("stopped after {} s", DEADLINE.as_secs());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(error) => return Err(format!("waiting for mcpl run: {error}")),
        }
    };
    if peak == 0 {
        return Err("no VmHWM in /proc/<pid>/status: this recipe needs Linux".to_owned());
    }
    Ok((peak, started.elapsed(), outcome))
}

/// A process's peak resident memory in bytes (`VmHWM`).
pub(crate) fn peak_resident(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
