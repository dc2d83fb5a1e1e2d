//! `mcpl demo`: the built-in demo server, a scripted conversation that calls each of its tools,
//! and what the model sees on a route, tool by tool.
//!
//! The demo server is embedded in the `mcpl` binary (`mcpl serve-demo`, hidden), so the demo
//! needs nothing but the binary and runs offline. The scripted model calls every tool that
//! answers (the ones that crash, hang or write garbage are for the failure tests), one per
//! round so each result's live copy is its own request (but `look`, called twice in one round
//! to show read-only calls running at once, and `added-tool`, called in the round after
//! `change-tools` added it), then `push-events` and
//! `host-answers`, then reads the stubs it was shown and calls `fetch_reference` on two of
//! them by their names, as a model would: one the fetcher saves, one it refuses, on purpose.
//!
//! Spill files and fetched references go to a [`DemoFolder`], which removes itself when
//! dropped unless the user asked to keep it, so every way out of the demo cleans up.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use mcpl_budget::PricedRoute;
use mcpl_classify::Payload;
use mcpl_lanes::{RouteId, markers};
use serde_json::{Value, json};

use mcpl_demo_server::{CHANGE_TOOLS, LOOK, Options as DemoOptions, Remote};
use mcpl_encode::Encoder;
use mcpl_encode::conversation::{Content, ToolCall, ToolOutput, model_tool_name};
use mcpl_host::config::{Config, ConfigError};
use mcpl_host::host_loop::{
    CallReport, FETCH_REFERENCE, Host, HostOptions, LOAD_SKILL, LoopError, Outcome, SEARCH_TOOLS,
};
use mcpl_host::model::{Model, ModelError, Turn};

/// The demo server's name in the host.
pub const DEMO_SERVER: &str = "demo";

/// The demo server's tools that misbehave on purpose; the demo does not call them.
const MISBEHAVING: &[&str] = &["crash", "hang", "garbage", "slow", "task-forever"];

/// The tools the demo calls last, in this order: the push events arrive during the first and
/// the second reports what the host answered.
const LAST: &[&str] = &["push-events", "host-answers"];

/// What the demo's model loads last with `load_skill`, once its index lists the skill: a
/// skill's SKILL.md, then its image file.
const SKILL_LOADS: &[(&str, Option<&str>)] = &[
    ("chart-reading", None),
    ("chart-reading", Some("examples/chart.png")),
];

/// Everything `mcpl demo` ran and saw.
#[derive(Debug)]
pub struct DemoRun {
    /// The host after the conversation: its servers, reports and lanes.
    pub host: Host,
    /// How the conversation ended.
    pub outcome: Result<Outcome, LoopError>,
    /// The `fetch_reference` calls the demo's model made, by call id, with what each is for.
    pub fetches: Vec<(String, &'static PlannedFetch)>,
    /// The folder spill files and fetched references went to.
    pub folder: PathBuf,
    /// What becomes of that folder when the demo ends.
    pub at_exit: AtExit,
    /// How the host reached the demo server.
    pub transport: DemoTransport,
    /// The demo's loopback origin (`http://127.0.0.1:PORT`), which serves its reference files.
    pub origin: String,
    /// What serves that origin, for as long as the run is kept: a dialed server's host ends
    /// before it does, as fields drop in order.
    pub _remote: Remote,
}

/// What becomes of the demo's folder when the demo ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtExit {
    /// A temporary folder, removed.
    Removed,
    /// A temporary folder the user asked to keep (`--keep`).
    Kept,
    /// The user's own folder (`--spill-dir`), left in place.
    Given,
}

impl AtExit {
    /// The word the JSON output uses.
    pub fn name(self) -> &'static str {
        match self {
            AtExit::Removed => "removed",
            AtExit::Kept => "kept",
            AtExit::Given => "given",
        }
    }
}

/// The folder the demo writes spill files and fetched references in. A temporary one is
/// created fresh (never one that already exists, readable by its owner only) and removed when
/// the value is dropped, unless it is to be kept: dropping runs on every way out of the
/// command, an error or a panic included.
#[derive(Debug)]
pub struct DemoFolder {
    path: PathBuf,
    at_exit: AtExit,
}

impl DemoFolder {
    /// A new folder `mcpl-demo-<16 random characters>` under the system's temporary folder.
    pub fn temporary(keep: bool) -> std::io::Result<DemoFolder> {
        DemoFolder::temporary_in(&std::env::temp_dir(), keep)
    }

    /// A new folder `mcpl-demo-<16 random characters>` under `parent`, made the way `mkdtemp`
    /// makes one (owner-only, never one that already exists), so no one can plant it first.
    pub fn temporary_in(parent: &Path, keep: bool) -> std::io::Result<DemoFolder> {
        let path = tempfile::Builder::new()
            .prefix("mcpl-demo-")
            .rand_bytes(16)
            .tempdir_in(parent)?
            .keep();
        Ok(DemoFolder {
            path,
            at_exit: if keep { AtExit::Kept } else { AtExit::Removed },
        })
    }

    /// The user's own folder, which the demo never removes.
    pub fn given(path: PathBuf) -> DemoFolder {
        DemoFolder {
            path,
            at_exit: AtExit::Given,
        }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What becomes of it when dropped.
    pub fn at_exit(&self) -> AtExit {
        self.at_exit
    }
}

impl Drop for DemoFolder {
    fn drop(&mut self) {
        if self.at_exit == AtExit::Removed
            && let Err(error) = std::fs::remove_dir_all(&self.path)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(folder = %self.path.display(), %error, "cannot remove the demo's folder");
        }
    }
}

/// How the host reaches the demo server: `mcpl demo --transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DemoTransport {
    /// `mcpl serve-demo`, started as a child process; MCPL's legacy family.
    #[default]
    Stdio,
    /// Streamable HTTP on loopback: modern MCP.
    Http,
    /// A WebSocket on loopback: MCP 2024-11-05 plus MCPL.
    Ws,
}

impl DemoTransport {
    /// Every transport, in the order the command line lists them.
    pub const ALL: [DemoTransport; 3] =
        [DemoTransport::Stdio, DemoTransport::Http, DemoTransport::Ws];

    /// The name the command line takes.
    pub fn name(self) -> &'static str {
        match self {
            DemoTransport::Stdio => "stdio",
            DemoTransport::Http => "http",
            DemoTransport::Ws => "ws",
        }
    }
}

/// The configuration of the embedded demo server, reached over `transport`, written as a user
/// would write it and read by the host's own config reader. The demo's origin (`origin`, a
/// [`Remote`] on loopback) serves its reference files: a dialed server's fetch origin is the
/// url it was dialed at, on that origin, and the stdio server's `mcpl.fetch.origin` is set to
/// it, so the reference binding holds alike on every transport (decision 0075).
pub fn demo_config(
    program: &Path,
    spill_dir: &Path,
    transport: DemoTransport,
    origin: &Remote,
) -> Result<Config, ConfigError> {
    let server = match transport {
        DemoTransport::Stdio => json!({
            "command": program,
            "args": ["serve-demo", "--files-origin", origin.origin()],
            "mcpl": {"fetch": {"origin": origin.origin()}},
        }),
        DemoTransport::Http => json!({"type": "http", "url": origin.http_url()}),
        DemoTransport::Ws => json!({"type": "ws", "url": origin.ws_url()}),
    };
    let config = json!({
        "mcpServers": {DEMO_SERVER: server},
        // The demo shows the spill folder it made, so its notices name paths there.
        "mcpl": {"spillDir": spill_dir, "fetchDir": spill_dir.join("refs"), "spillNotice": "path"},
    });
    Config::from_slice("the demo's configuration", config.to_string().as_bytes())
}

/// Starts the demo server (from `program` over stdio, or in this process on a loopback origin
/// over HTTP or a WebSocket) and plays the demo conversation on `route`, writing spill files
/// and fetched references in `folder`.
pub fn run_demo(
    program: PathBuf,
    route: &'static PricedRoute,
    folder: &DemoFolder,
    transport: DemoTransport,
) -> std::io::Result<DemoRun> {
    let origin = Remote::start(DemoOptions::default())?;
    let config =
        demo_config(&program, folder.path(), transport, &origin).map_err(std::io::Error::other)?;
    let mut options = HostOptions::new(route, &config);
    // The demo's results are large on purpose; a window that fits them shows them all.
    options.context_window = 1_000_000;
    let mut host = Host::start(&config, options);
    let mut model = DemoModel::new(demo_steps(&host));
    let outcome = host.run(&mut model, "Show me what each demo tool returns.", None);
    Ok(DemoRun {
        origin: origin.origin(),
        _remote: origin,
        host,
        outcome,
        fetches: model.fetched,
        folder: folder.path().to_path_buf(),
        at_exit: folder.at_exit(),
        transport,
    })
}

/// The demo's turns, in order: each the tools called in it.
fn demo_steps(host: &Host) -> Vec<Vec<String>> {
    let Some(server) = host.servers.first() else {
        return Vec::new();
    };
    let names: Vec<&str> = server
        .tools
        .iter()
        .filter_map(|tool| tool.get("name").and_then(Value::as_str))
        .collect();
    let turn = |names: &[&str]| -> Vec<String> {
        names
            .iter()
            .map(|name| model_tool_name(DEMO_SERVER, name))
            .collect()
    };
    let mut steps = Vec::new();
    for name in names
        .iter()
        .filter(|name| !MISBEHAVING.contains(name) && !LAST.contains(name))
    {
        match *name {
            // Two read-only calls in one turn: they run at the same time.
            mcpl_demo_server::LOOK => steps.push(turn(&[LOOK, LOOK])),
            // The tool list changes: the tool it adds is offered from the next request on.
            mcpl_demo_server::CHANGE_TOOLS => {
                steps.extend([turn(&[CHANGE_TOOLS]), turn(&[mcpl_demo_server::ADDED_TOOL])]);
            }
            name => steps.push(turn(&[name])),
        }
    }
    steps.extend(
        LAST.iter()
            .filter(|name| names.contains(name))
            .map(|name| turn(&[name])),
    );
    steps
}

/// A stub the demo's model fetches, by the name it shows, and what the fetcher should do.
#[derive(Debug, PartialEq, Eq)]
pub struct PlannedFetch {
    /// The name the stub shows.
    pub name: &'static str,
    /// Whether the fetcher should save it (or refuse it).
    pub saved: bool,
    /// Why, for a reader.
    pub why: &'static str,
}

/// The stubs the demo fetches: a resource link the demo server reads back through
/// `resources/read`, a link on the demo's own origin, and one it does not serve, which the
/// fetcher refuses.
pub const PLANNED_FETCHES: &[PlannedFetch] = &[
    PlannedFetch {
        name: "report.csv",
        saved: true,
        why: "report.csv is a demo:// resource, and the demo server offers resources, so the \
              fetcher reads it back through resources/read and saves it in the demo's folder",
    },
    PlannedFetch {
        name: "brief.pdf",
        saved: true,
        why: "brief.pdf is a link on the demo's own loopback origin, the origin the host dialed \
              the demo server at (over stdio, the one its config names), so the fetcher \
              downloads it and saves it in the demo's folder",
    },
    PlannedFetch {
        name: "503.log",
        saved: false,
        why: "503.log is a link on the demo's own origin too, but one the origin does not \
              serve: the fetcher reports the HTTP status it got",
    },
];

impl PlannedFetch {
    /// The words the fetcher refuses the planned refusal with: the origin's 404.
    pub fn refusal_words() -> &'static str {
        "HTTP 404"
    }

    /// Whether a `fetch_reference` result is what was planned.
    pub fn as_intended(&self, output: &ToolOutput) -> bool {
        if self.saved {
            !output.is_error
        } else {
            output.is_error && output.stored == PlannedFetch::refusal_words()
        }
    }

    /// One line for a reader: what happened, whether that was the plan, and why.
    pub fn verdict(&self, output: &ToolOutput) -> String {
        let done = if output.is_error { "refused" } else { "saved" };
        if self.as_intended(output) {
            format!("{done}, as intended: {}", self.why)
        } else {
            let planned = if self.saved {
                "saved".to_owned()
            } else {
                format!("refused with \"{}\"", PlannedFetch::refusal_words())
            };
            format!(
                "{done}, NOT as intended (a bug): the demo expects {} {planned}, because {}",
                self.name, self.why
            )
        }
    }
}

/// The demo's model: its turns' tools (one per turn but `look`'s), then `fetch_reference` on the stubs it was shown, by
/// their names, then a final answer.
#[derive(Debug)]
struct DemoModel {
    steps: std::vec::IntoIter<Vec<String>>,
    fetches: std::slice::Iter<'static, PlannedFetch>,
    fetched: Vec<(String, &'static PlannedFetch)>,
    skill_loads: std::slice::Iter<'static, (&'static str, Option<&'static str>)>,
    calls: u64,
}

impl DemoModel {
    fn new(steps: Vec<Vec<String>>) -> DemoModel {
        DemoModel {
            steps: steps.into_iter(),
            fetches: PLANNED_FETCHES.iter(),
            fetched: Vec::new(),
            skill_loads: SKILL_LOADS.iter(),
            calls: 0,
        }
    }

    fn call(&mut self, name: String, arguments: Value) -> Turn {
        self.calls_in_turn(vec![name], arguments)
    }

    /// One turn calling each of `names` with `arguments`.
    fn calls_in_turn(&mut self, names: Vec<String>, arguments: Value) -> Turn {
        let calls = names
            .into_iter()
            .map(|name| {
                self.calls += 1;
                ToolCall::new(format!("call_{}", self.calls), name, arguments.clone())
            })
            .collect();
        Turn::new("", calls)
    }
}

impl Model for DemoModel {
    fn route(&self) -> Option<RouteId> {
        None
    }

    fn complete(&mut self, body: &Value) -> Result<Turn, ModelError> {
        if let Some(tools) = self.steps.next() {
            return Ok(self.calls_in_turn(tools, json!({})));
        }
        // Read the request as a model would: the id in the stub that names the file.
        let text = body.to_string();
        while let Some(planned) = self.fetches.next() {
            if let Some(id) = ref_id_named(&text, planned.name) {
                let id = id.to_owned();
                let turn = self.call(FETCH_REFERENCE.to_owned(), json!({"ref_id": id}));
                if let Some(call) = turn.tool_calls.first() {
                    self.fetched.push((call.id.clone(), planned));
                }
                return Ok(turn);
            }
        }
        // A skill the index in load_skill's description lists, loaded on demand.
        if let Some((name, file)) = self.skill_loads.next()
            && text.contains(&format!("- {name}: "))
        {
            let arguments =
                file.map_or(json!({"name": name}), |f| json!({"name": name, "file": f}));
            return Ok(self.call(LOAD_SKILL.to_owned(), arguments));
        }
        Ok(Turn::new(
            format!("I called {}.", counted(self.calls, "tool", "tools")),
            Vec::new(),
        ))
    }
}

/// `1 tool`, `0 tools`, `2 tools`: a count with its noun in the singular when it is 1.
fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
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

/// The demo as readable text: what it shows and how to read it; per tool, what the model sees
/// on the round it lands, what history keeps, the price, and for a result over the budget the
/// notice the model gets; then the server messages, the host's answers and the injections.
pub fn render_text(run: &DemoRun) -> String {
    let host = &run.host;
    let route = host.options.route.id();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "mcpl demo: route {route}, {} on the built-in demo server",
        counted(host.calls.len() as u64, "tool call", "tool calls")
    );
    let _ = writeln!(
        out,
        "budget: {} per tool result\n  over it, the model gets the result's head and tail with a \
         notice in place of the middle,\n  and the whole result is saved to a spill file",
        counted(demo_budget(host), "estimated token", "estimated tokens")
    );
    let _ = writeln!(
        out,
        "files: spill files and fetched references go to {} ({})",
        run.folder.display(),
        match run.at_exit {
            AtExit::Removed => "removed at exit; --keep keeps it",
            AtExit::Kept => "kept at exit",
            AtExit::Given => "your folder, left in place",
        }
    );
    let _ = writeln!(
        out,
        "how to read it: \"model sees\" is what the request after the call carries; \"history \
         keeps\" is what\n  later requests carry in its place. After | a line is verbatim; \
         after ~ this listing says what it skips."
    );
    for server in &host.servers {
        if let Some(error) = &server.error {
            let _ = writeln!(out, "server {}: {error}", server.config.launch.name);
        }
    }
    if let Some(fenced) = instructions(host) {
        let _ = writeln!(
            out,
            "instructions: every request's system prompt carries the server's, fenced as its words:"
        );
        excerpt(&mut out, fenced, &[]);
    }
    if let Some(tool) = host.tools().iter().find(|t| t.name == LOAD_SKILL) {
        let _ = writeln!(
            out,
            "skills: the model is offered {LOAD_SKILL}, whose description indexes the server's skills:"
        );
        excerpt(&mut out, &tool.description, &[]);
    }
    let deferral = host.deferral();
    let _ = writeln!(
        out,
        "tools: the servers' definitions take {} estimated tokens; past {} ({}% of the window, \
         deferToolsAbovePercent) the model would get {SEARCH_TOOLS} in their place. {}",
        deferral.tokens(),
        deferral.limit(),
        host.options.defer_tools_percent,
        if deferral.is_active() {
            "Here it does."
        } else {
            "Here all are offered."
        }
    );
    for call in &host.calls {
        let planned = run
            .fetches
            .iter()
            .find(|(id, _)| *id == call.call.id)
            .map(|(_, planned)| *planned);
        render_call(&mut out, route, demo_budget(host), call, planned);
    }
    render_rounds(&mut out, host);
    match &run.outcome {
        Ok(outcome) => {
            let _ = writeln!(
                out,
                "\nfinal answer after {}: {}",
                counted(outcome.rounds as u64, "request", "requests"),
                outcome.answer
            );
        }
        Err(error) => {
            let _ = writeln!(out, "\nthe conversation stopped: {error}");
        }
    }
    match run.at_exit {
        AtExit::Removed => {}
        AtExit::Kept => {
            let _ = writeln!(out, "the demo's files are kept in {}", run.folder.display());
        }
        AtExit::Given => {
            let _ = writeln!(out, "the demo's files are in {}", run.folder.display());
        }
    }
    out
}

/// The demo server's tool-result budget.
fn demo_budget(host: &Host) -> u64 {
    host.servers
        .first()
        .map_or(mcpl_budget::DEFAULT_BUDGET, |server| {
            server.config.options.budget
        })
}

/// The omission notice in a result that was cut: its line that names the spill file.
fn omission_notice(call: &CallReport) -> Option<&str> {
    let spill = call.spill.as_ref()?;
    call.output
        .stored
        .lines()
        .find(|line| line.contains(spill.path.as_str()))
}

fn render_call(
    out: &mut String,
    route: RouteId,
    budget: u64,
    call: &CallReport,
    planned: Option<&PlannedFetch>,
) {
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
    if let Some(planned) = planned {
        let _ = writeln!(
            out,
            "the model asks for {} by the id its stub shows: {}",
            planned.name, call.call.arguments
        );
        let _ = writeln!(out, "{}", planned.verdict(&call.output));
    }
    let notice = omission_notice(call);
    if let Some(spill) = &call.spill {
        if notice.is_some() {
            let _ = writeln!(
                out,
                "over the budget of {}: cut to its head and tail",
                counted(budget, "estimated token", "estimated tokens")
            );
        }
        let attachments = match spill.attachments.len() {
            0 => String::new(),
            n => format!(" (with {})", counted(n as u64, "attachment", "attachments")),
        };
        let _ = writeln!(out, "the whole result is in {}{attachments}", spill.path);
    }
    if let Some(notice) = notice {
        let _ = writeln!(out, "the model gets this notice in place of the middle:");
        let _ = writeln!(out, "  | {notice}");
    }
    let tokens = counted(call.estimated_tokens, "estimated token", "estimated tokens");
    let keep: Vec<&str> = notice.into_iter().collect();
    match &call.output.live {
        Some(parts) => {
            let _ = writeln!(out, "model sees ({tokens}):");
            for part in parts {
                let _ = writeln!(out, "  {}", describe_part(part));
            }
            if !Encoder::new(route)
                .follow_up(std::slice::from_ref(&call.output))
                .is_null()
            {
                let _ = writeln!(
                    out,
                    "  (on {route} tool results carry text only: images, documents and audio go in \
                     a user message right after them)"
                );
            }
            let _ = writeln!(out, "history keeps:");
            excerpt(out, &call.output.stored, &keep);
        }
        None => {
            let _ = writeln!(
                out,
                "model sees, and history keeps, the same text ({tokens}):"
            );
            excerpt(out, &call.output.stored, &keep);
        }
    }
    if !call.for_user.is_empty() {
        let _ = writeln!(out, "the user is shown (the model is not):");
        for text in &call.for_user {
            excerpt(out, text, &[]);
        }
    }
    for line in &call.diagnostics {
        let _ = writeln!(out, "note: {line}");
    }
}

/// The servers' instructions as the system prompt carries them, after the host's own words.
fn instructions(host: &Host) -> Option<&str> {
    let system = &host.options.system;
    system.find("<server-instructions").map(|at| &system[at..])
}

/// At most this many lines of a long text are shown, head and tail, besides the lines kept.
const SHOWN_LINES: usize = 12;

/// A line longer than this many characters is shown up to it, unless it is kept.
const SHOWN_CHARACTERS: usize = 160;

/// Writes `text` a line at a time after `  | `, verbatim, but for a long text only its first
/// and last lines and for a long line only its start; each thing skipped gets a `  ~ ` line or
/// a `~` note saying how much. A line that contains one of `keep` is always shown whole.
fn excerpt(out: &mut String, text: &str, keep: &[&str]) {
    let lines: Vec<&str> = text.lines().collect();
    let kept = |line: &str| keep.iter().any(|k| line.contains(k));
    let shown = |index: usize| {
        lines.len() <= SHOWN_LINES
            || index < SHOWN_LINES / 2
            || index >= lines.len() - SHOWN_LINES / 2
            || kept(lines[index])
    };
    let mut skipped = 0u64;
    for (index, line) in lines.iter().enumerate() {
        if !shown(index) {
            skipped += 1;
            continue;
        }
        if skipped > 0 {
            let _ = writeln!(
                out,
                "  ~ {} not shown here",
                counted(skipped, "line", "lines")
            );
            skipped = 0;
        }
        let length = line.chars().count();
        if length > SHOWN_CHARACTERS && !kept(line) {
            let start: String = line.chars().take(SHOWN_CHARACTERS).collect();
            let rest = (length - SHOWN_CHARACTERS) as u64;
            let _ = writeln!(
                out,
                "  | {start} ~ {} not shown here",
                counted(rest, "more character", "more characters")
            );
        } else {
            let _ = writeln!(out, "  | {line}");
        }
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
        Content::Image {
            sniffed,
            dimensions,
            data,
        } => format!(
            "image: {}, {}x{} px, {}",
            sniffed.mime(),
            dimensions.width,
            dimensions.height,
            size_label(data)
        ),
        Content::Audio { sniffed, data } => {
            format!("audio: {}, {}", sniffed.mime(), size_label(data))
        }
        Content::Document { pages: 1, data } => {
            format!("document: application/pdf, 1 page, {}", size_label(data))
        }
        Content::Document { pages, data } => format!(
            "document: application/pdf, {pages} pages, {}",
            size_label(data)
        ),
    }
}

/// A payload's decoded size, from its base64's shape (nothing is decoded).
fn size_label(data: &str) -> String {
    markers::size_label(Payload::new(data).map_or(0, |payload| payload.decoded_len()))
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
        let _ = writeln!(
            out,
            "(the demo server repeats one event and sends empty content on purpose: the \
             duplicate and the refusals below are as intended)"
        );
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
    let route = host.options.route.id();
    let calls: Vec<Value> = host
        .calls
        .iter()
        .map(|call| {
            let (live, follow_up) = live_json(route, &call.output);
            let planned = run
                .fetches
                .iter()
                .find(|(id, _)| *id == call.call.id)
                .map(|(_, planned)| *planned);
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
                "for_user": call.for_user,
                "omission_notice": omission_notice(call),
                "expected": planned.map(|p| json!({
                    "reference": p.name,
                    "outcome": if p.saved { "saved" } else { "refused" },
                    "as_intended": p.as_intended(&call.output),
                    "why": p.why,
                })),
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
        "route": route.name(),
        "budget": demo_budget(host),
        "files": {"path": run.folder, "at_exit": run.at_exit.name()},
        "servers": host.servers.iter().map(|s| json!({"name": s.config.launch.name, "error": s.error, "tools": s.tools.len()})).collect::<Vec<_>>(),
        "instructions": instructions(host),
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
fn live_json(route: RouteId, output: &ToolOutput) -> (Value, Value) {
    let encoder = Encoder::new(route);
    (
        encoder.tool_result(output),
        encoder.follow_up(std::slice::from_ref(output)),
    )
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

    #[test]
    fn counts_read_in_the_singular_and_the_plural() {
        assert_eq!(counted(0, "tool", "tools"), "0 tools");
        assert_eq!(counted(1, "tool", "tools"), "1 tool");
        assert_eq!(counted(2, "tool", "tools"), "2 tools");
    }

    fn output(text: &str, is_error: bool) -> ToolOutput {
        ToolOutput::new("call_1", FETCH_REFERENCE.to_owned(), text.to_owned()).with_error(is_error)
    }

    #[test]
    fn a_fetch_that_goes_otherwise_than_planned_reads_as_a_bug() {
        let [saved, _, refused] = PLANNED_FETCHES else {
            panic!("three planned fetches");
        };
        let words = PlannedFetch::refusal_words();
        assert_eq!(words, "HTTP 404");
        assert_eq!(
            refused.verdict(&output(words, true)),
            format!("refused, as intended: {}", refused.why)
        );
        assert_eq!(
            refused.verdict(&output("unknown server: demo", true)),
            format!(
                "refused, NOT as intended (a bug): the demo expects 503.log refused with \
                 \"HTTP 404\", because {}",
                refused.why
            )
        );
        assert!(
            refused
                .verdict(&output("{}", false))
                .starts_with("saved, NOT as intended (a bug): ")
        );
        assert!(
            saved
                .verdict(&output("{}", false))
                .starts_with("saved, as intended: report.csv is a demo:// resource")
        );
        assert!(
            saved
                .verdict(&output(words, true))
                .starts_with("refused, NOT as intended (a bug): the demo expects report.csv saved")
        );
    }

    #[test]
    fn a_long_text_is_shown_head_and_tail_with_the_kept_lines_whole() {
        let notice = format!("[… notice {}]", "n".repeat(300));
        let mut lines: Vec<String> = (1..=40).map(|n| format!("line {n}")).collect();
        lines[20] = notice.clone();
        lines[1] = "x".repeat(200);
        let mut out = String::new();
        excerpt(&mut out, &lines.join("\n"), &[notice.as_str()]);
        let expected = format!(
            "  | line 1\n  | {} ~ 40 more characters not shown here\n  | line 3\n  | line 4\n\
             \x20 | line 5\n  | line 6\n  ~ 14 lines not shown here\n  | {notice}\n\
             \x20 ~ 13 lines not shown here\n  | line 35\n  | line 36\n  | line 37\n\
             \x20 | line 38\n  | line 39\n  | line 40\n",
            "x".repeat(160)
        );
        assert_eq!(out, expected);

        let mut out = String::new();
        excerpt(&mut out, "a\nb", &[]);
        assert_eq!(out, "  | a\n  | b\n");
        let mut out = String::new();
        let fifteen: Vec<String> = (1..=15).map(|n| n.to_string()).collect();
        excerpt(&mut out, &fifteen.join("\n"), &[]);
        assert!(out.contains("\n  ~ 3 lines not shown here\n"), "{out}");
        let mut out = String::new();
        let thirteen: Vec<String> = (1..=13).map(|n| n.to_string()).collect();
        excerpt(&mut out, &thirteen.join("\n"), &[]);
        assert!(out.contains("\n  ~ 1 line not shown here\n"), "{out}");
    }

    #[test]
    fn a_temporary_folder_is_removed_when_dropped_on_every_way_out() {
        let parent = std::env::temp_dir().join(format!("mcpl-demo-folder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&parent);
        std::fs::create_dir_all(&parent).unwrap();

        let folder = DemoFolder::temporary_in(&parent, false).unwrap();
        let path = folder.path().to_path_buf();
        std::fs::write(path.join("spill.txt"), "x").unwrap();
        drop(folder);
        assert!(!path.exists());

        // A panic unwinds through the guard.
        let unwound = std::panic::catch_unwind(|| {
            let folder = DemoFolder::temporary_in(&parent, false).unwrap();
            std::fs::create_dir(folder.path().join("refs")).unwrap();
            panic!("on purpose");
        });
        assert!(unwound.is_err());
        assert_eq!(std::fs::read_dir(&parent).unwrap().count(), 0);

        // Kept: it stays; a second folder gets another name.
        let kept = DemoFolder::temporary_in(&parent, true).unwrap();
        let path = kept.path().to_path_buf();
        assert_eq!(kept.at_exit(), AtExit::Kept);
        drop(kept);
        assert!(path.is_dir());
        let other = DemoFolder::temporary_in(&parent, false).unwrap();
        assert_ne!(other.path(), path);
        drop(other);

        // The user's folder is never removed.
        let given = DemoFolder::given(path.clone());
        drop(given);
        assert!(path.is_dir());
        std::fs::remove_dir_all(&parent).unwrap();
    }
}
