//! `mcpl demo`: the built-in demo server, a scripted conversation that calls each of its tools,
//! and what the model sees on a route, tool by tool.
//!
//! The demo server is embedded in the `mcpl` binary (`mcpl serve-demo`, hidden), so the demo
//! needs nothing but the binary and runs offline. The scripted model calls every tool that
//! answers (the ones that crash, hang or write garbage are for the failure tests), one per
//! round so each result's live copy is its own request, then `push-events` and
//! `host-answers`, then reads the stubs it was shown and calls `fetch_reference` on two of
//! them by their names, as a model would: one the fetcher saves, one it refuses.

use std::fmt::Write as _;
use std::path::PathBuf;

use mcpl_budget::PricedRoute;
use mcpl_classify::Media;
use mcpl_lanes::markers;
use serde_json::{Value, json};

use mcpl_client::Launch;
use mcpl_encode::Encoder;
use mcpl_encode::conversation::{Content, ToolCall, ToolOutput, model_tool_name};
use mcpl_host::config::{Config, ServerConfig, ServerOptions};
use mcpl_host::host_loop::{CallReport, FETCH_REFERENCE, Host, HostOptions, LoopError, Outcome};
use mcpl_host::model::{Model, ModelError, Turn};

/// The demo server's name in the host.
pub const DEMO_SERVER: &str = "demo";

/// The demo server's tools that misbehave on purpose; the demo does not call them.
const MISBEHAVING: &[&str] = &["crash", "hang", "garbage", "slow"];

/// The tools the demo calls last, in this order: the push events arrive during the first and
/// the second reports what the host answered.
const LAST: &[&str] = &["push-events", "host-answers"];

/// Everything `mcpl demo` ran and saw.
#[derive(Debug)]
pub struct DemoRun {
    /// The host after the conversation: its servers, reports and lanes.
    pub host: Host,
    /// How the conversation ended.
    pub outcome: Result<Outcome, LoopError>,
}

/// The configuration of the embedded demo server: `program serve-demo`.
pub fn demo_config(program: PathBuf, spill_dir: PathBuf) -> Config {
    Config {
        servers: vec![ServerConfig {
            launch: Launch {
                name: DEMO_SERVER.to_owned(),
                command: program.display().to_string(),
                args: vec!["serve-demo".to_owned()],
                env: Default::default(),
                cwd: None,
            },
            options: ServerOptions::default(),
        }],
        fetch_dir: Some(spill_dir.join("refs")),
        spill_dir: Some(spill_dir),
        context_window: mcpl_host::config::DEFAULT_CONTEXT_WINDOW,
    }
}

/// Starts the demo server from `program` and plays the demo conversation on `route`.
pub fn run_demo(program: PathBuf, route: &'static PricedRoute, spill_dir: PathBuf) -> DemoRun {
    let config = demo_config(program, spill_dir);
    let mut options = HostOptions::new(route, &config);
    // The demo's results are large on purpose; a window that fits them shows them all.
    options.context_window = 1_000_000;
    let mut host = Host::start(&config, options);
    let mut model = DemoModel::new(demo_steps(&host));
    let outcome = host.run(&mut model, "Show me what each demo tool returns.", None);
    DemoRun { host, outcome }
}

/// The tools the demo calls, in order.
fn demo_steps(host: &Host) -> Vec<String> {
    let Some(server) = host.servers.first() else {
        return Vec::new();
    };
    let names: Vec<&str> = server
        .tools
        .iter()
        .filter_map(|tool| tool.get("name").and_then(Value::as_str))
        .collect();
    let mut steps: Vec<String> = names
        .iter()
        .filter(|name| !MISBEHAVING.contains(name) && !LAST.contains(name))
        .map(|name| model_tool_name(DEMO_SERVER, name))
        .collect();
    steps.extend(
        LAST.iter()
            .filter(|name| names.contains(name))
            .map(|name| model_tool_name(DEMO_SERVER, name)),
    );
    steps
}

/// The stubs the demo fetches, by the name they show: a resource link the demo server reads
/// back through `resources/read`, and a reference on an origin no server was dialed to, which
/// the fetcher refuses.
const FETCHED_NAMES: &[&str] = &["report.csv", "brief.pdf"];

/// The demo's model: one tool per turn, then `fetch_reference` on the stubs it was shown, by
/// their names, then a final answer.
#[derive(Debug)]
struct DemoModel {
    steps: std::vec::IntoIter<String>,
    fetches: std::slice::Iter<'static, &'static str>,
    calls: usize,
}

impl DemoModel {
    fn new(steps: Vec<String>) -> DemoModel {
        DemoModel {
            steps: steps.into_iter(),
            fetches: FETCHED_NAMES.iter(),
            calls: 0,
        }
    }

    fn call(&mut self, name: String, arguments: Value) -> Turn {
        self.calls += 1;
        Turn {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: format!("call_{}", self.calls),
                name,
                arguments,
            }],
        }
    }
}

impl Model for DemoModel {
    fn route(&self) -> Option<&'static str> {
        None
    }

    fn complete(&mut self, body: &Value) -> Result<Turn, ModelError> {
        if let Some(tool) = self.steps.next() {
            return Ok(self.call(tool, json!({})));
        }
        // Read the request as a model would: the id in the stub that names the file.
        let text = body.to_string();
        for name in self.fetches.by_ref() {
            if let Some(id) = ref_id_named(&text, name) {
                let id = id.to_owned();
                return Ok(self.call(FETCH_REFERENCE.to_owned(), json!({"ref_id": id})));
            }
        }
        Ok(Turn {
            text: format!("I called {} tools.", self.calls),
            tool_calls: Vec::new(),
        })
    }
}

/// The id of the first stub `[<ref id>] <name> — ...` in a text.
fn ref_id_named<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    let at = text.find(&format!("] {name} "))?;
    let start = text[..at].rfind("[ref_")? + 1;
    let id = &text[start..at];
    id.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        .then_some(id)
}

/// The demo as readable text: per tool, what the model sees on the round it lands, what history
/// keeps, the price; then the server messages, the host's answers and the injections.
pub fn render_text(run: &DemoRun) -> String {
    let host = &run.host;
    let route = host.options.route.lanes.name;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "mcpl demo: route {route}, {} tool calls on the built-in demo server",
        host.calls.len()
    );
    for server in &host.servers {
        if let Some(error) = &server.error {
            let _ = writeln!(out, "server {}: {error}", server.config.launch.name);
        }
    }
    for call in &host.calls {
        render_call(&mut out, call);
    }
    render_rounds(&mut out, host);
    match &run.outcome {
        Ok(outcome) => {
            let _ = writeln!(
                out,
                "\nfinal answer after {} requests: {}",
                outcome.rounds, outcome.answer
            );
        }
        Err(error) => {
            let _ = writeln!(out, "\nthe conversation stopped: {error}");
        }
    }
    out
}

fn render_call(out: &mut String, call: &CallReport) {
    let _ = writeln!(
        out,
        "\n== {} (round {}){}",
        call.tool,
        call.round,
        if call.output.is_error {
            " - error result"
        } else {
            ""
        }
    );
    match &call.output.live {
        Some(parts) => {
            let _ = writeln!(
                out,
                "model sees, natively ({} estimated tokens):",
                call.estimated_tokens
            );
            for part in parts {
                let _ = writeln!(out, "  {}", describe_part(part));
            }
            let _ = writeln!(out, "history keeps:");
            indent(out, &call.output.stored);
        }
        None => {
            let _ = writeln!(
                out,
                "model sees, and history keeps, the same text ({} estimated tokens):",
                call.estimated_tokens
            );
            indent(out, &call.output.stored);
        }
    }
    if let Some(spill) = &call.spill {
        let _ = writeln!(
            out,
            "spilled whole to {} with {} attachment(s)",
            spill.path,
            spill.attachments.len()
        );
    }
    for line in &call.diagnostics {
        let _ = writeln!(out, "note: {line}");
    }
}

/// At most this many lines of a long text are shown, head and tail.
const SHOWN_LINES: usize = 12;

fn indent(out: &mut String, text: &str) {
    let lines: Vec<&str> = text.lines().collect();
    let show = |out: &mut String, line: &str| {
        let line: String = if line.chars().count() > 160 {
            line.chars().take(159).chain(['…']).collect()
        } else {
            line.to_owned()
        };
        let _ = writeln!(out, "  | {line}");
    };
    if lines.len() <= SHOWN_LINES {
        lines.iter().for_each(|line| show(out, line));
    } else {
        lines[..SHOWN_LINES / 2]
            .iter()
            .for_each(|line| show(out, line));
        let _ = writeln!(
            out,
            "  | ... ({} more lines) ...",
            lines.len() - SHOWN_LINES
        );
        lines[lines.len() - SHOWN_LINES / 2..]
            .iter()
            .for_each(|line| show(out, line));
    }
}

/// A part described for a reader: images and audio by type, dimensions and size, never dumped.
pub fn describe_part(part: &Content) -> String {
    match part {
        Content::Text(text) => {
            let first = text.lines().next().unwrap_or_default();
            let more = if text.lines().count() > 1 { " …" } else { "" };
            format!("text: {first}{more}")
        }
        Content::Image { media_type, data } => {
            let media = Media::inspect(data, None);
            let size = markers::size_label(media.decoded_bytes.unwrap_or_default());
            match media.dimensions {
                Some(d) => format!("image: {media_type}, {}x{} px, {size}", d.width, d.height),
                None => format!("image: {media_type}, {size}"),
            }
        }
        Content::Audio { media_type, data } => {
            let media = Media::inspect(data, None);
            format!(
                "audio: {media_type}, {}",
                markers::size_label(media.decoded_bytes.unwrap_or_default())
            )
        }
    }
}

fn render_rounds(out: &mut String, host: &Host) {
    let messages: Vec<_> = host.rounds.iter().flat_map(|r| &r.messages).collect();
    if !messages.is_empty() {
        let _ = writeln!(
            out,
            "\n== messages the server pushed (shown on the next request)"
        );
        for message in messages {
            let _ = writeln!(
                out,
                "{} {} from {}:",
                message.origin.lane(),
                message.id.as_deref().unwrap_or("(no id)"),
                message.server
            );
            for part in &message.parts {
                let _ = writeln!(out, "  {}", describe_part(part));
            }
        }
    }
    if !host.lanes.answered.is_empty() {
        let _ = writeln!(out, "\n== what the host answered the server's own requests");
        for answered in &host.lanes.answered {
            let answer = match &answered.answer {
                Ok(result) => format!("result {result}"),
                Err(error) => format!("error {error}"),
            };
            let _ = writeln!(
                out,
                "{} from {}: {answer}",
                answered.method, answered.server
            );
        }
    }
    if let Some(first) = host.rounds.first() {
        for (server, injections) in &first.injections {
            let _ = writeln!(
                out,
                "\n== context injections from {server} (asked before each request)"
            );
            for text in &injections.system {
                let _ = writeln!(out, "system prompt gains: {text}");
            }
            for part in &injections.before_user {
                let _ = writeln!(out, "before the user's message: {}", describe_part(part));
            }
            for part in &injections.after_user {
                let _ = writeln!(out, "after the user's message: {}", describe_part(part));
            }
            for line in &injections.diagnostics {
                let _ = writeln!(out, "note: {line}");
            }
        }
    }
}

/// The demo as JSON: per tool call, the live copy exactly as the route takes it, the stored
/// copy, the price, the spill and the diagnostics; then messages, answers and injections.
pub fn render_json(run: &DemoRun) -> Value {
    let host = &run.host;
    let route = host.options.route.lanes.name;
    let calls: Vec<Value> = host
        .calls
        .iter()
        .map(|call| {
            let (live, follow_up) = live_json(route, &call.output);
            json!({
                "round": call.round,
                "server": call.server,
                "tool": call.tool,
                "arguments": call.call.arguments,
                "live": live,
                "follow_up": follow_up,
                "stored": call.output.stored,
                "estimated_tokens": call.estimated_tokens,
                "is_error": call.output.is_error,
                "spill": call.spill.as_ref().map(|s| json!({"path": s.path, "attachments": s.attachments})),
                "diagnostics": call.diagnostics,
            })
        })
        .collect();
    let messages: Vec<Value> = host
        .rounds
        .iter()
        .flat_map(|round| {
            round.messages.iter().map(move |m| {
                json!({"round": round.round, "lane": m.origin.lane(), "server": m.server,
                       "id": m.id, "stored": m.stored})
            })
        })
        .collect();
    let answers: Vec<Value> = host
        .lanes
        .answered
        .iter()
        .map(|a| match &a.answer {
            Ok(result) => json!({"server": a.server, "method": a.method, "result": result}),
            Err(error) => json!({"server": a.server, "method": a.method, "error": error}),
        })
        .collect();
    let injections: Vec<Value> = host
        .rounds
        .first()
        .map(|round| {
            round
                .injections
                .iter()
                .map(|(server, i)| {
                    json!({"server": server, "system": i.system,
                           "before_user": i.before_user.iter().map(describe_part).collect::<Vec<_>>(),
                           "after_user": i.after_user.iter().map(describe_part).collect::<Vec<_>>(),
                           "diagnostics": i.diagnostics})
                })
                .collect()
        })
        .unwrap_or_default();
    json!({
        "route": route,
        "servers": host.servers.iter().map(|s| json!({"name": s.config.launch.name, "error": s.error, "tools": s.tools.len()})).collect::<Vec<_>>(),
        "calls": calls,
        "messages": messages,
        "answers": answers,
        "injections": injections,
        "outcome": match &run.outcome {
            Ok(outcome) => json!({"answer": outcome.answer, "rounds": outcome.rounds}),
            Err(error) => json!({"error": error.to_string()}),
        },
    })
}

/// A tool result's live copy as the route's API takes it, and the user message's content the
/// route moves its images to (null where it moves none).
fn live_json(route: &str, output: &ToolOutput) -> (Value, Value) {
    Encoder::named(route).map_or((Value::Null, Value::Null), |encoder| {
        (
            encoder.tool_result(output),
            encoder.follow_up(std::slice::from_ref(output)),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_reads_a_stub_id_by_its_name() {
        let text = "see [ref_1_ab3z] report.csv — text/csv and [ref_2_x] brief.pdf — fetch";
        assert_eq!(ref_id_named(text, "report.csv"), Some("ref_1_ab3z"));
        assert_eq!(ref_id_named(text, "brief.pdf"), Some("ref_2_x"));
        assert_eq!(ref_id_named(text, "other.txt"), None);
        assert_eq!(ref_id_named("[ref_1 x] report.csv — ", "report.csv"), None);
    }
}
