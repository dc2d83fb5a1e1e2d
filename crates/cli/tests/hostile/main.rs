//! `mcpl run` against a hostile server (`mcpl serve-demo --hostile MODE`) beside the demo
//! server: one test per misbehaviour. Each asserts that the run ends within its timeouts, that
//! the demo server's calls succeed, that the transcript says what the hostile call came to, that
//! no uri from the hostile output reaches a request, and (on Linux) that the host's peak
//! resident memory stays within the message limit plus 150 MiB.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcpl_demo_server::{ACT_ANSWER, FOREIGN_PROTOCOL_VERSION, HOSTILE_URI, Misbehaviour, gathered};
use serde_json::{Value, json};

mod remote;

/// The hostile server's call timeout.
const TIMEOUT_MS: u64 = 2000;
/// The longest a run may take: a few timeouts, and the seconds a server that does not exit is
/// given before it is killed.
const RUN_DEADLINE: Duration = Duration::from_secs(60);
/// The default message limit.
const MESSAGE_LIMIT: u64 = 64 << 20;
/// The host's peak resident memory may be the message limit and this much more.
const MEMORY_HEADROOM: u64 = 150 << 20;
/// What the demo server's `text` tool answers.
const DEMO_TEXT: &str = "Hello from the mcpl demo server. This result is one text block.";

/// A folder of its own for one test, removed when the test ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("mcpl-hostile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What one run came to.
struct Run {
    stdout: String,
    stderr: String,
    success: bool,
    bodies: Vec<Value>,
    peak_bytes: Option<u64>,
    /// How long the run took.
    took: Duration,
    /// The most threads and open descriptors the run had at once, where `/proc` tells them.
    peak_threads: usize,
    peak_descriptors: usize,
}

/// Runs `mcpl run` with the hostile server in `mode` and the demo server; the model calls the
/// hostile tool and the demo's `text` in round 1 and the demo's `text` in round 2.
fn run(mode: Misbehaviour, size: Option<u64>) -> Run {
    run_within(mode, size, TIMEOUT_MS)
}

/// As [`run`], with the hostile server's call timeout in milliseconds.
fn run_within(mode: Misbehaviour, size: Option<u64>, timeout_ms: u64) -> Run {
    let scratch = Scratch::new(&format!("{}-{}", mode.name(), size.unwrap_or(0)));
    let mcpl = env!("CARGO_BIN_EXE_mcpl");
    let mut hostile_args = vec![
        "serve-demo".to_owned(),
        "--hostile".to_owned(),
        mode.name().to_owned(),
    ];
    if let Some(size) = size {
        hostile_args.extend(["--size".to_owned(), size.to_string()]);
    }
    let config = json!({
        "mcpServers": {
            "hostile": {"command": mcpl, "args": hostile_args, "mcpl": {"timeoutMs": timeout_ms}},
            "demo": {"command": mcpl, "args": ["serve-demo"]},
        },
        "mcpl": {"spillDir": scratch.path("spill"), "fetchDir": scratch.path("refs"),
                 "contextWindow": 100_000_000},
    });
    let script = json!({
        "steps": [
            {"tool_calls": [{"server": "hostile", "name": "act"}, {"server": "demo", "name": "text"}]},
            {"tool_calls": [{"server": "demo", "name": "text"}]},
        ],
        "final": "done",
    });
    run_config(&scratch, mode.name(), &config, &script)
}

/// Runs `mcpl run` with this configuration and script, within [`RUN_DEADLINE`] and the
/// memory bound, watching its peak memory.
fn run_config(scratch: &Scratch, name: &str, config: &Value, script: &Value) -> Run {
    run_config_within(scratch, name, config, script, RUN_DEADLINE)
}

/// As [`run_config`], within `deadline`.
fn run_config_within(
    scratch: &Scratch,
    name: &str,
    config: &Value,
    script: &Value,
    deadline: Duration,
) -> Run {
    let mcpl = env!("CARGO_BIN_EXE_mcpl");
    let config_path = scratch.path("config.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    let script_path = scratch.path("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let transcript = scratch.path("transcript.jsonl");
    let stdout_path = scratch.path("stdout");
    let stderr_path = scratch.path("stderr");
    let mut child = Command::new(mcpl)
        .arg("run")
        .arg("--config")
        .arg(&config_path)
        .arg("--model")
        .arg(format!("scripted:{}", script_path.display()))
        .arg("--transcript")
        .arg(&transcript)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut peak_bytes = None;
    let (mut peak_threads, mut peak_descriptors) = (0, 0);
    let status = loop {
        if let Some(peak) = peak_resident(child.id()) {
            peak_bytes = Some(peak_bytes.unwrap_or(0).max(peak));
        }
        let (threads, descriptors) = threads_and_descriptors(child.id());
        peak_threads = peak_threads.max(threads);
        peak_descriptors = peak_descriptors.max(descriptors);
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if peak_bytes.is_some_and(|peak| peak > MESSAGE_LIMIT + MEMORY_HEADROOM) {
            // Over the bound already: stop before the machine runs short.
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{name}: peak resident memory over {} MiB",
                (MESSAGE_LIMIT + MEMORY_HEADROOM) >> 20
            );
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{name}: mcpl run did not end within {deadline:?}; stderr: {}",
                tail(&std::fs::read_to_string(&stderr_path).unwrap_or_default())
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed();
    let bodies = std::fs::read_to_string(&transcript)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    Run {
        stdout: std::fs::read_to_string(&stdout_path).unwrap(),
        stderr: String::from_utf8_lossy(&std::fs::read(&stderr_path).unwrap()).into_owned(),
        success: status.success(),
        bodies,
        peak_bytes,
        took,
        peak_threads,
        peak_descriptors,
    }
}

/// A process's peak resident memory (`VmHWM`), where `/proc` tells it.
fn peak_resident(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// A process's threads (`Threads` in `/proc/<pid>/status`) and open descriptors (the entries
/// of `/proc/<pid>/fd`); 0 where `/proc` does not tell them.
fn threads_and_descriptors(pid: u32) -> (usize, usize) {
    let threads = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("Threads:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0);
    let descriptors = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count);
    (threads, descriptors)
}

fn tail(text: &str) -> &str {
    let start = text.len().saturating_sub(2000);
    let start = (start..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    &text[start..]
}

/// The anthropic `tool_result` blocks' contents of a request body, in order, as text.
fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|block| block["type"] == "tool_result")
        .map(|block| match &block["content"] {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts
                .iter()
                .map(|part| match part["text"].as_str() {
                    Some(text) if part["type"] == "text" => text.to_owned(),
                    _ => part.to_string(),
                })
                .collect::<Vec<_>>()
                .join("\n"),
            other => other.to_string(),
        })
        .collect()
}

impl Run {
    /// Asserts what every hostile run must come to, and returns the hostile call's result as
    /// the model saw it.
    fn check(&self, mode: Misbehaviour) -> String {
        self.check_named(mode.name())
    }

    /// As [`Run::check`], for the server misbehaving as `name` says.
    fn check_named(&self, name: &str) -> String {
        assert!(
            self.success,
            "{name}: mcpl run failed: {}",
            tail(&self.stderr)
        );
        assert_eq!(self.stdout, "done\n", "{name}");
        assert_eq!(self.bodies.len(), 3, "{name}: one request per model turn");
        let first = tool_results(&self.bodies[1]);
        assert_eq!(first.len(), 2, "{name}: {first:?}");
        assert!(
            first[1].contains(DEMO_TEXT),
            "{name}: the demo answered round 1: {}",
            first[1]
        );
        let second = tool_results(&self.bodies[2]);
        assert!(
            second.last().unwrap().contains(DEMO_TEXT),
            "{name}: the demo answered round 2"
        );
        for (index, body) in self.bodies.iter().enumerate() {
            let text = body.to_string();
            assert!(
                !text.contains(HOSTILE_URI),
                "{name}: request {} leaks the uri",
                index + 1
            );
            assert!(
                !text.contains("hostile-secret"),
                "{name}: request {} leaks",
                index + 1
            );
        }
        if let Some(peak) = self.peak_bytes {
            assert!(
                peak <= MESSAGE_LIMIT + MEMORY_HEADROOM,
                "{name}: peak resident memory {} MiB",
                peak >> 20
            );
        }
        first[0].clone()
    }
}

#[test]
fn a_cursor_that_repeats_ends_the_listing() {
    let mode = Misbehaviour::SameCursor;
    let run = run(mode, None);
    assert_eq!(run.check(mode), ACT_ANSWER);
    assert!(run.stderr.contains("nextCursor"), "{}", tail(&run.stderr));
}

/// The tools a request offers the model from the hostile server.
fn hostile_tools(body: &Value) -> usize {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|tool| tool["name"].as_str().unwrap().starts_with("hostile__"))
        .count()
}

#[test]
fn a_listing_without_end_stops_at_a_thousand_pages() {
    let mode = Misbehaviour::EndlessCursors;
    let run = run(mode, Some(0));
    assert_eq!(run.check(mode), ACT_ANSWER);
    assert_eq!(hostile_tools(&run.bodies[0]), 1);
    assert!(
        run.stderr.contains("tools/list gave more than 1000 pages"),
        "{}",
        tail(&run.stderr)
    );
}

#[test]
fn a_listing_stops_at_ten_thousand_tools() {
    let mode = Misbehaviour::EndlessCursors;
    let run = run(mode, Some(30));
    assert_eq!(run.check(mode), ACT_ANSWER);
    assert_eq!(hostile_tools(&run.bodies[0]), 10_000);
    assert!(
        run.stderr
            .contains("more than 10000 tools; listing stopped with the first 10000"),
        "{}",
        tail(&run.stderr)
    );
}

#[test]
fn a_server_that_never_reads_times_out_on_time() {
    let mode = Misbehaviour::PingFlood;
    let run = run(mode, None);
    assert_eq!(
        run.check(mode),
        format!(
            "tool call failed: server hostile did not answer tools/call within {TIMEOUT_MS} ms"
        )
    );
}

#[test]
fn a_line_without_end_is_cut_at_the_limit() {
    let mode = Misbehaviour::EndlessLine;
    let run = run(mode, Some(300 << 20));
    assert_eq!(
        run.check(mode),
        format!(
            "tool call failed: server hostile sent a message longer than {MESSAGE_LIMIT} bytes (maxMessageBytes) while tools/call waited"
        )
    );
}

#[test]
fn a_line_over_the_limit_fails_its_call() {
    let mode = Misbehaviour::BigLine;
    let run = run(mode, Some(MESSAGE_LIMIT + (4 << 20)));
    assert_eq!(
        run.check(mode),
        format!(
            "tool call failed: server hostile sent a message longer than {MESSAGE_LIMIT} bytes (maxMessageBytes) while tools/call waited"
        )
    );
}

#[test]
fn a_push_stream_does_not_starve_the_rounds() {
    let mode = Misbehaviour::PushStream;
    let run = run(mode, None);
    assert_eq!(run.check(mode), ACT_ANSWER);
    let all: String = run.bodies.iter().map(Value::to_string).collect();
    assert!(all.contains("event 0"), "the first events are shown");
    assert!(
        all.contains("push events and channel messages from server hostile were not shown"),
        "the model is told what it did not see"
    );
}

#[test]
fn a_push_stream_of_big_events_is_held_to_the_message_budget() {
    let mode = Misbehaviour::PushStream;
    // Each event is 200 KB of text: about 25,000 tokens, and 64 may wait at once.
    let run = run(mode, Some(200_000));
    assert_eq!(run.check(mode), ACT_ANSWER);
    let budget = mcpl_host::config::DEFAULT_MESSAGE_BUDGET;
    let mut events = 0;
    let mut cut = 0;
    for body in &run.bodies {
        for message in body["messages"].as_array().into_iter().flatten() {
            for block in message["content"].as_array().into_iter().flatten() {
                let Some(text) = block["text"].as_str() else {
                    continue;
                };
                if !text.contains("event ") || block["type"] == "tool_result" {
                    continue;
                }
                events += 1;
                cut += usize::from(text.contains("tokens omitted"));
                let tokens = mcpl_budget::TokenEstimator::count(&mcpl_budget::O200k, text);
                assert!(
                    tokens <= budget,
                    "a push event of {tokens} o200k tokens, over the budget of {budget}"
                );
            }
        }
    }
    assert!(events > 0 && cut == events, "{cut} of {events} events cut");
}

#[test]
fn a_push_stream_never_ends_the_run_on_the_context_window() {
    // 64 waiting events of 4,000 tokens each are far over a window of 60,000: the oldest are
    // left out, each named by a line, and the rounds go on.
    let mode = Misbehaviour::PushStream;
    let scratch = Scratch::new("push-window");
    let mcpl = env!("CARGO_BIN_EXE_mcpl");
    let config = json!({
        "mcpServers": {
            "hostile": {"command": mcpl, "args": ["serve-demo", "--hostile", mode.name(), "--size", "200000"],
                        "mcpl": {"timeoutMs": TIMEOUT_MS}},
            "demo": {"command": mcpl, "args": ["serve-demo"]},
        },
        "mcpl": {"spillDir": scratch.path("spill"), "fetchDir": scratch.path("refs"),
                 "contextWindow": 60_000},
    });
    let script = json!({
        "steps": [
            {"tool_calls": [{"server": "hostile", "name": "act"}, {"server": "demo", "name": "text"}]},
            {"tool_calls": [{"server": "demo", "name": "text"}]},
        ],
        "final": "done",
    });
    let run = run_config(&scratch, "push-window", &config, &script);
    assert_eq!(run.check(mode), ACT_ANSWER);
    let all: String = run.bodies.iter().map(Value::to_string).collect();
    assert!(
        all.contains("message from server hostile was left out to fit the context window; read it with read_result"),
        "the model is told what was left out"
    );
}

#[test]
fn a_notification_flood_during_a_call_is_read_and_dropped() {
    let mode = Misbehaviour::NotifyFlood;
    // A million notifications (142 MB) before the answer, which must come within the timeout.
    let run = run_within(mode, Some(1_000_000), 10_000);
    assert_eq!(run.check(mode), ACT_ANSWER);
}

#[test]
fn responses_that_match_no_call_are_skipped() {
    let mode = Misbehaviour::UnmatchedResponse;
    let run = run(mode, None);
    assert_eq!(run.check(mode), ACT_ANSWER);
}

#[test]
fn lines_that_are_not_json_are_skipped_before_initialize_too() {
    let mode = Misbehaviour::Banner;
    let run = run(mode, None);
    assert_eq!(run.check(mode), ACT_ANSWER);
}

#[test]
fn a_foreign_protocol_version_is_refused() {
    let mode = Misbehaviour::OldVersion;
    let run = run(mode, None);
    assert_eq!(
        run.check(mode),
        "tool call failed: server hostile is not available: server hostile answered initialize \
         with protocol version 1999-01-01; mcpl speaks 2025-11-25 (and accepts 2025-06-18, \
         2025-03-26, 2024-11-05)"
    );
    let expected = format!(
        "mcpl: warning: server hostile answered initialize with protocol version {FOREIGN_PROTOCOL_VERSION}; mcpl speaks 2025-11-25"
    );
    assert!(run.stderr.contains(&expected), "{}", tail(&run.stderr));
}

/// A result with bytes strict JSON refuses is read, and its link is a stub.
fn check_read_anyway(mode: Misbehaviour, text: &str) {
    let run = run(mode, None);
    let result = run.check(mode);
    assert!(result.contains(text), "{}: {result}", mode.name());
    assert!(
        result.contains("leak.bin"),
        "{}: the link is a stub: {result}",
        mode.name()
    );
}

#[test]
fn invalid_utf8_is_replaced_and_the_result_kept() {
    check_read_anyway(
        Misbehaviour::InvalidUtf8,
        &format!("{ACT_ANSWER}: bad \u{FFFD} byte"),
    );
}

#[test]
fn nesting_too_deep_is_cut_and_the_result_kept() {
    check_read_anyway(Misbehaviour::DeepNesting, ACT_ANSWER);
}

#[test]
fn a_number_out_of_range_is_kept_as_text() {
    check_read_anyway(Misbehaviour::HugeNumber, ACT_ANSWER);
}

#[test]
fn every_misbehaviour_has_a_test() {
    let source = include_str!("main.rs");
    for mode in Misbehaviour::ALL {
        let variant = format!("Misbehaviour::{mode:?}");
        assert!(
            source.matches(&variant).count() >= 1,
            "{variant} has no test"
        );
    }
}

/// A server that answers only once it holds `size` calls, in a folder shared with `servers`.
fn gatherer(size: u64, dir: Option<(&std::path::Path, u64)>) -> Value {
    let mut server = json!({
        "command": env!("CARGO_BIN_EXE_mcpl"),
        "args": ["serve-demo", "--hostile", Misbehaviour::Gather.name(), "--size", size.to_string()],
        "mcpl": {"timeoutMs": 15_000},
    });
    if let Some((dir, servers)) = dir {
        server["env"] = json!({"MCPL_GATHER_DIR": dir, "MCPL_GATHER_SERVERS": servers.to_string()});
    }
    server
}

#[test]
fn calls_to_different_servers_run_at_once_and_keep_their_order() {
    let scratch = Scratch::new("gather-servers");
    let meet = scratch.path("meet");
    let config = json!({
        "mcpServers": {
            "one": gatherer(1, Some((&meet, 2))),
            "demo": {"command": env!("CARGO_BIN_EXE_mcpl"), "args": ["serve-demo"]},
            "two": gatherer(1, Some((&meet, 2))),
        },
        "mcpl": {"spillDir": scratch.path("spill")},
    });
    let script = json!({"steps": [{"tool_calls": [
        {"server": "one", "name": "act"},
        {"server": "demo", "name": "text"},
        {"server": "two", "name": "act"},
    ]}], "final": "done"});
    let run = run_config(&scratch, "gather-servers", &config, &script);
    assert!(run.success, "{}", tail(&run.stderr));
    let results = tool_results(&run.bodies[1]);
    assert_eq!(
        results,
        [gathered(1, 2), DEMO_TEXT.to_owned(), gathered(1, 2)],
        "each server saw the other's call while its own waited"
    );
}

#[test]
fn calls_not_hinted_read_only_run_one_at_a_time() {
    // The gatherer answers when two calls wait; its `act` says it writes now, so the host sends
    // one call, waits for it, and only then the next: the first is left waiting alone (and
    // the second finds it still held).
    let scratch = Scratch::new("gather-writes");
    let mut one = gatherer(2, None);
    one["env"] = json!({"MCPL_GATHER_WRITES": "1"});
    one["mcpl"] = json!({"timeoutMs": 500});
    let config = json!({
        "mcpServers": {"one": one},
        "mcpl": {"spillDir": scratch.path("spill")},
    });
    let script = json!({"steps": [{"tool_calls": [
        {"server": "one", "name": "act"},
        {"server": "one", "name": "act"},
    ]}], "final": "done"});
    let run = run_config(&scratch, "gather-writes", &config, &script);
    assert!(run.success, "{}", tail(&run.stderr));
    let waited = "tool call failed: server one did not answer tools/call within 500 ms";
    assert_eq!(
        tool_results(&run.bodies[1]),
        [waited.to_owned(), gathered(2, 1)]
    );
}

#[test]
fn calls_to_one_server_run_at_once_up_to_its_limit() {
    let scratch = Scratch::new("gather-calls");
    let mut config = json!({
        "mcpServers": {
            "one": gatherer(2, None),
            "demo": {"command": env!("CARGO_BIN_EXE_mcpl"), "args": ["serve-demo"]},
        },
        "mcpl": {"spillDir": scratch.path("spill")},
    });
    let script = json!({"steps": [{"tool_calls": [
        {"server": "one", "name": "act"},
        {"server": "demo", "name": "text"},
        {"server": "one", "name": "act"},
    ]}], "final": "done"});
    let run = run_config(&scratch, "gather-calls", &config, &script);
    assert!(run.success, "{}", tail(&run.stderr));
    assert_eq!(
        tool_results(&run.bodies[1]),
        [gathered(2, 1), DEMO_TEXT.to_owned(), gathered(2, 1)]
    );

    // With one call at a time, the first never gets its answer.
    config["mcpServers"]["one"]["mcpl"] = json!({"timeoutMs": 500, "maxConcurrentCalls": 1});
    let run = run_config(&scratch, "gather-calls-one", &config, &script);
    assert!(run.success, "{}", tail(&run.stderr));
    let results = tool_results(&run.bodies[1]);
    assert_eq!(
        results[0],
        "tool call failed: server one did not answer tools/call within 500 ms"
    );
}

#[test]
fn injected_images_are_held_to_the_message_budget_whatever_the_limits_do() {
    // One injection of 300 tiny PNGs: a request carries at most 100 images, so the limits would
    // write a notice in the place of each of the other 200, far more than the budget of 1,000.
    // The injection is priced at the most the limits can make of it, and goes as its text, cut.
    let scratch = Scratch::new("image-injections");
    let mcpl = env!("CARGO_BIN_EXE_mcpl");
    let budget = 1_000;
    let config = json!({
        "mcpServers": {
            "hostile": {"command": mcpl,
                        "args": ["serve-demo", "--hostile", Misbehaviour::ImageInjections.name()],
                        "mcpl": {"timeoutMs": TIMEOUT_MS, "messageBudget": budget}},
        },
        "mcpl": {"spillDir": scratch.path("spill"), "contextWindow": 1_000_000},
    });
    let script = json!({"steps": [], "final": "done"});
    let run = run_config(&scratch, "image-injections", &config, &script);
    assert!(run.success, "{}", tail(&run.stderr));
    let body = &run.bodies[0];
    let blocks: Vec<&Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .collect();
    // Every block but the person's own turn is the injection's.
    let injected: Vec<&Value> = blocks.iter().skip(1).copied().collect();
    assert!(!injected.is_empty(), "{body}");
    let text_tokens: u64 = injected
        .iter()
        .filter_map(|b| b["text"].as_str())
        .map(|t| mcpl_budget::TokenEstimator::count(&mcpl_budget::O200k, t))
        .sum();
    let images = injected.iter().filter(|b| b["type"] == "image").count() as u64;
    // A 16 x 12 PNG costs the anthropic route 1 token.
    let tokens = text_tokens + images;
    assert!(
        tokens <= budget,
        "{tokens} tokens ({images} images) over the budget of {budget}: {}",
        tail(&body.to_string())
    );
    // The whole injection is in a spill the model is told how to read.
    assert!(
        injected
            .iter()
            .filter_map(|b| b["text"].as_str())
            .any(|t| t.contains("read the rest with read_result(")),
        "{}",
        tail(&body.to_string())
    );
}
