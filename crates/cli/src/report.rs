//! `--report FILE.html`: one self-contained page a person reads to see what the model saw
//! (issue 33, decision 0122).
//!
//! The page is built only from what the host sent: the tools it offered, each call's live copy
//! (the parts the route encodes into the request after the call: images from the base64 that
//! went, documents as an icon with their pages and size, audio as a player), the stored copy
//! history keeps in its place, the messages and injections each request carried; and from the
//! host's own account of them: estimated tokens, the budget, where a result was cut and the
//! spill that holds its whole, diagnostics and warnings, the provider's reported usage.
//!
//! Every string passes the redaction the host's log lines pass ([`Guard`]) before it is
//! escaped, as a second guard over the model's view, which is redacted already; a payload the
//! redaction would change is not shown at all. The page has no external resource (a content
//! security policy forbids any), styles inline, `<details>` for each call, a table of contents
//! with anchors, and reads without JavaScript; its one inline script only marks on `<body>`
//! whether every image loaded, for the browser test.

use std::borrow::Cow;
use std::fmt::Write as _;

use mcpl_classify::Payload;
use mcpl_encode::Encoder;
use mcpl_encode::conversation::{Content, ToolOutput};
use mcpl_host::host_loop::{CallReport, Host, Outcome};
use mcpl_lanes::{UriPolicy, markers};
use mcpl_redact::HiddenUris;
use serde_json::Value;

/// One run the page shows: a host after its conversation.
#[derive(Debug)]
pub struct ReportRun<'r> {
    /// The host: its servers, calls, rounds and usage.
    pub host: &'r Host,
    /// The model's final answer, or why the conversation stopped.
    pub outcome: Result<&'r Outcome, String>,
    /// A line about a call, by its call id (the demo's verdict on a planned fetch).
    pub call_notes: Vec<(String, String)>,
}

/// The page: a title, lines about the run, and one run per route (side by side when several).
#[derive(Debug)]
pub struct Report<'r> {
    /// The page's title.
    pub title: String,
    /// Lines under the title (where the files went, how the servers were reached).
    pub about: Vec<String>,
    /// The runs, one per route.
    pub runs: Vec<ReportRun<'r>>,
}

/// The redaction every string on the page passes: each run's host's, as it stands after the
/// run: every uri its session hides (as the model's view of the tools is redacted before each
/// request) and its secrets, the same set its log lines are redacted with.
#[derive(Debug, Default)]
pub struct Guard {
    hidden: Vec<HiddenUris<'static>>,
    secrets: Vec<mcpl_redact::Secrets>,
}

impl Guard {
    /// A guard with these secrets only.
    pub fn new(secrets: Vec<mcpl_redact::Secrets>) -> Guard {
        Guard {
            hidden: Vec::new(),
            secrets,
        }
    }

    /// The guard of these hosts: every uri each one's session hides, and its secrets.
    pub fn of_hosts<'h>(hosts: impl IntoIterator<Item = &'h mut Host>) -> Guard {
        let mut guard = Guard::default();
        for host in hosts {
            let session = host.lanes.session.registry_mut().hidden_mut();
            guard.secrets.push(session.secrets().clone());
            guard.hidden.push(HiddenUris::in_session(
                &[],
                UriPolicy::Hidden,
                session,
                true,
            ));
        }
        guard
    }

    /// `text` with every hidden uri replaced by its marker and every secret withheld.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut text = Cow::Borrowed(text);
        for hidden in &self.hidden {
            if let Cow::Owned(redacted) = hidden.redact(&text) {
                text = Cow::Owned(redacted);
            }
        }
        for secrets in &self.secrets {
            if let Cow::Owned(redacted) = secrets.redact(&text) {
                text = Cow::Owned(redacted);
            }
        }
        text
    }
}

/// `text` escaped for HTML text and attribute values.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.contains(['&', '<', '>', '"', '\'']) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The largest payload (in base64 characters) the page embeds: a bigger one is described only,
/// so that the page stays one a browser opens at once.
pub const MAX_EMBEDDED: usize = 1 << 20;

/// What the page may load: nothing from anywhere; images and audio only from `data:`.
const POLICY: &str = "default-src 'none'; img-src data:; media-src data:; \
                      style-src 'unsafe-inline'; script-src 'unsafe-inline'";

const STYLE: &str = "
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;padding:1em 1.5em;max-width:110em;color:#1d1f24;background:#fafafa}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ccd;padding-bottom:.2em}
h3{font-size:1.05em;margin:.6em 0 .3em}
nav{background:#fff;border:1px solid #dde;padding:.4em 1em;border-radius:6px}nav ol{margin:.3em 0;padding-left:1.4em;columns:18em}
nav li{margin:.1em 0}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #dde;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#eef}
details.call{background:#fff;border:1px solid #ccd;border-radius:6px;margin:.6em 0;padding:.3em .8em}
details.call>summary{font-weight:600;cursor:pointer}
.routes{display:grid;gap:.8em;grid-template-columns:repeat(var(--n),minmax(0,1fr))}
.route{border-top:3px solid #6a7bd1;padding-top:.3em;min-width:0}
.route h3{color:#3949ab}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f3f4f8;border:1px solid #e2e4ee;padding:.4em;margin:.2em 0;max-height:24em;overflow:auto;font-size:.86em}
.part{margin:.3em 0}
figure{margin:.3em 0}figcaption{font-size:.85em;color:#555}
img{image-rendering:pixelated;border:1px solid #bbb;background:repeating-conic-gradient(#eee 0 25%,#fff 0 50%) 0 0/8px 8px}
.doc{display:inline-flex;align-items:center;gap:.5em;border:1px solid #bbb;border-radius:4px;padding:.3em .6em;background:#fff}
.warn{color:#8a4b00}.error{color:#b00020}.note{color:#555;font-size:.92em}
.tokens{font-variant-numeric:tabular-nums}
.marker{background:#fff3c4}
";

/// Marks on `<body>` whether every image decoded, once the page has loaded: `data-images` is
/// `loaded <n>` or `broken <k> of <n>`. Reading needs none of it.
const SCRIPT: &str = "addEventListener('load',function(){var i=Array.prototype.slice.call(document.images);\
var b=i.filter(function(m){return !(m.complete&&m.naturalWidth>0)}).length;\
document.body.setAttribute('data-images',b?'broken '+b+' of '+i.length:'loaded '+i.length)});";

const PDF_ICON: &str = "<svg width=\"28\" height=\"34\" viewBox=\"0 0 28 34\" aria-hidden=\"true\">\
<path d=\"M2 1h17l7 7v25H2z\" fill=\"#fff\" stroke=\"#b00020\" stroke-width=\"1.5\"/>\
<path d=\"M19 1v7h7\" fill=\"none\" stroke=\"#b00020\" stroke-width=\"1.5\"/>\
<text x=\"14\" y=\"26\" font-size=\"8\" text-anchor=\"middle\" fill=\"#b00020\" font-family=\"sans-serif\">PDF</text></svg>";

/// The page, whole.
pub fn render(report: &Report<'_>, guard: &Guard) -> String {
    let mut page = Page {
        out: String::new(),
        guard,
    };
    page.render(report);
    page.out
}

struct Page<'g> {
    out: String,
    guard: &'g Guard,
}

impl Page<'_> {
    /// Redacted, then escaped.
    fn text(&mut self, text: &str) {
        let redacted = self.guard.redact(text);
        self.out.push_str(&escape(&redacted));
    }

    fn raw(&mut self, html: &str) {
        self.out.push_str(html);
    }

    fn pre(&mut self, text: &str) {
        self.raw("<pre>");
        self.text(text);
        self.raw("</pre>");
    }

    fn render(&mut self, report: &Report<'_>) {
        self.raw("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
        let _ = write!(
            self.out,
            "<meta http-equiv=\"Content-Security-Policy\" content=\"{POLICY}\">"
        );
        self.raw("<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>");
        self.text(&report.title);
        let _ = write!(
            self.out,
            "</title><style>{STYLE}</style><script>{SCRIPT}</script></head><body>\n<h1>"
        );
        self.text(&report.title);
        self.raw("</h1>");
        for line in &report.about {
            self.raw("<p class=\"note\">");
            self.text(line);
            self.raw("</p>");
        }
        let rounds = report
            .runs
            .iter()
            .map(|run| run.host.rounds.len())
            .max()
            .unwrap_or(0);
        self.contents(report, rounds);
        self.servers(report);
        self.tools(report);
        self.warnings(report);
        self.injections(report);
        for round in 1..=rounds {
            self.round(report, round);
        }
        self.usage(report);
        self.raw("\n</body></html>\n");
    }

    fn contents(&mut self, report: &Report<'_>, rounds: usize) {
        self.raw("<nav id=\"contents\"><strong>Contents</strong><ol>");
        self.raw("<li><a href=\"#servers\">Servers</a></li><li><a href=\"#tools\">Tools offered</a></li>");
        self.raw("<li><a href=\"#warnings\">Warnings</a></li><li><a href=\"#injections\">Context injections</a></li>");
        for round in 1..=rounds {
            let _ = write!(self.out, "<li><a href=\"#round-{round}\">Round {round}</a>");
            let first = report.runs.first();
            let names: Vec<String> = first
                .map(|run| calls_in(run.host, round))
                .unwrap_or_default()
                .iter()
                .map(|call| call.tool.clone())
                .collect();
            if !names.is_empty() {
                self.raw(": ");
                self.text(&names.join(", "));
            }
            let carried = first
                .and_then(|run| run.host.rounds.get(round - 1))
                .map_or(0, |r| r.messages.len());
            if carried > 0 {
                let _ = write!(
                    self.out,
                    " <span class=\"note\">({carried} pushed message{})</span>",
                    if carried == 1 { "" } else { "s" }
                );
            }
            self.raw("</li>");
        }
        self.raw("<li><a href=\"#usage\">Tokens and usage</a></li></ol></nav>\n");
    }

    fn servers(&mut self, report: &Report<'_>) {
        self.raw("<h2 id=\"servers\">Servers</h2>");
        let Some(first) = report.runs.first() else {
            return;
        };
        self.raw("<table><tr><th>server</th><th>tools listed</th><th>budget (estimated tokens per result)</th><th>state</th></tr>");
        for server in &first.host.servers {
            self.raw("<tr><td>");
            self.text(&server.config.launch.name);
            let _ = write!(
                self.out,
                "</td><td>{}</td><td class=\"tokens\">{}</td><td>",
                server.tools.len(),
                server.config.options.budget
            );
            match &server.error {
                Some(error) => {
                    self.raw("<span class=\"error\">");
                    self.text(error);
                    self.raw("</span>");
                }
                None => self.raw("running"),
            }
            self.raw("</td></tr>");
        }
        self.raw("</table>");
    }

    fn tools(&mut self, report: &Report<'_>) {
        self.raw("<h2 id=\"tools\">Tools offered to the model</h2>");
        let mut names: Vec<&str> = Vec::new();
        for run in &report.runs {
            for tool in run.host.tools() {
                if !names.contains(&tool.name.as_str()) {
                    names.push(&tool.name);
                }
            }
        }
        self.raw("<table><tr><th>tool</th><th>description</th>");
        if report.runs.len() > 1 {
            for run in &report.runs {
                let _ = write!(self.out, "<th>{}</th>", route_name(run.host));
            }
        }
        self.raw("<th>input schema</th></tr>");
        for name in names {
            let spec = report
                .runs
                .iter()
                .find_map(|run| run.host.tools().iter().find(|t| t.name == name));
            self.raw("<tr><td><code>");
            self.text(name);
            self.raw("</code></td><td>");
            if let Some(spec) = spec {
                self.text(&spec.description);
            }
            self.raw("</td>");
            if report.runs.len() > 1 {
                for run in &report.runs {
                    let offered = run.host.tools().iter().any(|t| t.name == name);
                    self.raw(if offered {
                        "<td>offered</td>"
                    } else {
                        "<td class=\"warn\">not offered</td>"
                    });
                }
            }
            self.raw("<td>");
            if let Some(spec) = spec {
                self.raw("<details><summary>schema</summary>");
                self.pre(&pretty(&spec.input_schema));
                self.raw("</details>");
            }
            self.raw("</td></tr>");
        }
        self.raw("</table>");
    }

    fn warnings(&mut self, report: &Report<'_>) {
        self.raw("<h2 id=\"warnings\">Warnings</h2>");
        let mut any = false;
        for run in &report.runs {
            for warning in &run.host.warnings {
                any = true;
                let _ = write!(self.out, "<p class=\"warn\">{}: ", route_name(run.host));
                self.text(warning);
                self.raw("</p>");
            }
            for server in run.host.servers.iter().filter(|s| s.error.is_some()) {
                any = true;
                let _ = write!(
                    self.out,
                    "<p class=\"warn\">{}: server ",
                    route_name(run.host)
                );
                self.text(&server.config.launch.name);
                self.raw(": ");
                self.text(server.error.as_deref().unwrap_or_default());
                self.raw("</p>");
            }
        }
        if !any {
            self.raw("<p class=\"note\">None: every tool went as its server listed it.</p>");
        }
    }

    fn injections(&mut self, report: &Report<'_>) {
        self.raw("<h2 id=\"injections\">Context injections</h2>");
        let mut any = false;
        for run in &report.runs {
            let Some(first) = run.host.rounds.first() else {
                continue;
            };
            for (server, injections) in &first.injections {
                any = true;
                let _ = write!(self.out, "<h3>{}: from ", route_name(run.host));
                self.text(server);
                self.raw(" (asked before each request)</h3>");
                for text in &injections.system {
                    self.raw("<div class=\"part\">system prompt gains:");
                    self.pre(text);
                    self.raw("</div>");
                }
                for (place, parts) in [
                    ("before the user's message", &injections.before_user),
                    ("after the user's message", &injections.after_user),
                ] {
                    for part in parts {
                        let _ = write!(self.out, "<div class=\"part\">{place}:");
                        self.part(part);
                        self.raw("</div>");
                    }
                }
                self.notes(&injections.diagnostics);
            }
        }
        if !any {
            self.raw("<p class=\"note\">No server injected context.</p>");
        }
    }

    fn round(&mut self, report: &Report<'_>, round: usize) {
        let _ = write!(
            self.out,
            "\n<h2 id=\"round-{round}\">Round {round}</h2><table><tr><th>route</th>\
             <th>tokens this request appends</th><th>projected size of the request</th>\
             <th>what the loop decided</th></tr>"
        );
        for run in &report.runs {
            let Some(this) = run.host.rounds.get(round - 1) else {
                let _ = write!(
                    self.out,
                    "<tr><td>{}</td><td colspan=\"3\" class=\"note\">no such round on this route</td></tr>",
                    route_name(run.host)
                );
                continue;
            };
            let _ = write!(
                self.out,
                "<tr><td>{}</td><td class=\"tokens\">{}</td><td class=\"tokens\">{}</td><td>",
                route_name(run.host),
                this.appended_tokens,
                this.projected_tokens
            );
            for line in &this.diagnostics {
                self.text(line);
                self.raw("<br>");
            }
            self.raw("</td></tr>");
        }
        self.raw("</table>");
        let carried = report.runs.iter().any(|run| {
            run.host
                .rounds
                .get(round - 1)
                .is_some_and(|r| !r.messages.is_empty())
        });
        if carried {
            self.raw("<h3>Messages servers pushed, which this request carries</h3>");
            self.columns(report, |page, run| {
                let Some(this) = run.host.rounds.get(round - 1) else {
                    return;
                };
                for message in &this.messages {
                    let _ = write!(
                        page.out,
                        "<div class=\"part\"><strong>{} message</strong> ",
                        message.origin.lane()
                    );
                    page.text(message.id.as_deref().unwrap_or("(no id)"));
                    page.raw(" from ");
                    page.text(&message.server);
                    page.raw(":");
                    for part in &message.parts {
                        page.part(part);
                    }
                    page.raw("<details><summary>history keeps</summary>");
                    page.pre(&message.stored);
                    page.raw("</details>");
                    page.notes(&message.diagnostics);
                    page.raw("</div>");
                }
            });
        }
        let calls = report
            .runs
            .iter()
            .map(|run| calls_in(run.host, round).len())
            .max()
            .unwrap_or(0);
        for index in 0..calls {
            self.call(report, round, index);
        }
    }

    /// One call, each route's copy side by side.
    fn call(&mut self, report: &Report<'_>, round: usize, index: usize) {
        let first = report
            .runs
            .iter()
            .find_map(|run| calls_in(run.host, round).get(index).copied());
        let Some(first) = first else {
            return;
        };
        let _ = write!(
            self.out,
            "\n<details class=\"call\" open id=\"call-{round}-{}\"><summary>",
            index + 1
        );
        if let Some(server) = &first.server {
            self.text(server);
            self.raw(" · ");
        }
        self.text(&first.tool);
        let tokens: Vec<String> = report
            .runs
            .iter()
            .filter_map(|run| calls_in(run.host, round).get(index).copied())
            .map(|call| call.estimated_tokens.to_string())
            .collect();
        let _ = write!(
            self.out,
            " <span class=\"note tokens\">(round {round}; {} estimated tokens)</span></summary>",
            tokens.join(" / ")
        );
        self.raw("<p class=\"note\">arguments: <code>");
        self.text(&first.call.arguments.to_string());
        self.raw("</code></p>");
        self.columns(report, |page, run| {
            match calls_in(run.host, round).get(index) {
                Some(call) => page.call_copy(run, call),
                None => page.raw("<p class=\"note\">no such call on this route</p>"),
            }
        });
        self.raw("</details>");
    }

    /// What one route's model got from one call.
    fn call_copy(&mut self, run: &ReportRun<'_>, call: &CallReport) {
        let host = run.host;
        let route = host.options.route.id();
        let _ = write!(
            self.out,
            "<div class=\"copy\" data-route=\"{route}\" data-tool=\""
        );
        self.text(&call.tool);
        self.raw("\">");
        let budget = host
            .servers
            .iter()
            .find(|s| Some(&s.config.launch.name) == call.server.as_ref())
            .map(|s| s.config.options.budget);
        let _ = write!(
            self.out,
            "<p class=\"tokens\">{} estimated tokens",
            call.estimated_tokens
        );
        if let Some(budget) = budget {
            let _ = write!(self.out, " of a budget of {budget}");
        }
        if call.output.is_error {
            self.raw(" · <span class=\"error\">an error result</span>");
        }
        self.raw("</p>");
        for (id, note) in &run.call_notes {
            if *id == call.call.id {
                self.raw("<p class=\"note\">");
                self.text(note);
                self.raw("</p>");
            }
        }
        if let Some(spill) = &call.spill {
            let id = spill.id.to_string();
            let notice = call
                .output
                .stored
                .lines()
                .find(|line| line.contains(spill.path.as_str()) || line.contains(&id));
            self.raw("<p class=\"warn\">");
            match notice {
                Some(_) => self.raw("Over the budget: cut to its head and tail. "),
                None => self.raw("Spilled. "),
            }
            self.raw("The whole result is in ");
            let link = spill
                .path
                .starts_with('/')
                .then(|| format!("file://{}", spill.path));
            match link {
                Some(href) => {
                    self.raw("<a href=\"");
                    self.text(&href);
                    self.raw("\">");
                    self.text(&spill.path);
                    self.raw("</a>");
                }
                None => self.text(&spill.path),
            }
            self.raw("; the model reads it back with <code>read_result(\"");
            self.text(&id);
            self.raw("\")</code>");
            if !spill.attachments.is_empty() {
                let _ = write!(self.out, " ({} attachments)", spill.attachments.len());
            }
            self.raw(".</p>");
            if let Some(notice) = notice {
                self.raw("<p>The notice the model gets in place of the middle:</p><pre class=\"marker\">");
                self.text(notice);
                self.raw("</pre>");
            }
        }
        if let Some(why) = &call.unsaved {
            self.raw("<p class=\"error\">Cut, but the whole could not be kept: ");
            self.text(why);
            self.raw("</p>");
        }
        match &call.output.live {
            Some(parts) => {
                self.raw("<h3>The model is sent</h3>");
                for part in parts {
                    self.part(part);
                }
                let follow_up = Encoder::new(route).follow_up(std::slice::from_ref(&call.output));
                if !follow_up.is_null() {
                    let _ = write!(
                        self.out,
                        "<p class=\"note\">On {route}, tool results carry text only: the images, \
                         documents and audio go in a user message right after them.</p>"
                    );
                }
                self.raw("<details><summary>History keeps (the stored copy)</summary>");
                self.pre(&call.output.stored);
                self.raw("</details>");
            }
            None => {
                self.raw("<h3>The model is sent, and history keeps, this text</h3>");
                self.pre(&call.output.stored);
            }
        }
        self.notes(&call.diagnostics);
        self.raw("<details><summary>As the route encodes it (payloads elided)</summary>");
        self.pre(&pretty(&encoded(route, &call.output)));
        self.raw("</details></div>");
    }

    /// Each run's share side by side, under its route's name when there are several.
    fn columns(&mut self, report: &Report<'_>, mut each: impl FnMut(&mut Self, &ReportRun<'_>)) {
        let _ = write!(
            self.out,
            "<div class=\"routes\" style=\"--n:{}\">",
            report.runs.len().max(1)
        );
        for run in &report.runs {
            self.raw("<div class=\"route\">");
            if report.runs.len() > 1 {
                let _ = write!(self.out, "<h3>{}</h3>", route_name(run.host));
            }
            each(self, run);
            self.raw("</div>");
        }
        self.raw("</div>");
    }

    fn notes(&mut self, lines: &[String]) {
        for line in lines {
            self.raw("<p class=\"warn\">note: ");
            self.text(line);
            self.raw("</p>");
        }
    }

    /// One part as the model gets it: text verbatim, an image at its size, a document as an
    /// icon with its pages and size, audio as a player.
    fn part(&mut self, part: &Content) {
        self.raw("<div class=\"part\">");
        match part {
            Content::Text(text) => self.pre(text),
            Content::Image {
                sniffed,
                dimensions,
                data,
            } => {
                let caption = format!(
                    "image: {}, {}×{} px, {}",
                    sniffed.mime(),
                    dimensions.width,
                    dimensions.height,
                    size_label(data)
                );
                self.raw("<figure>");
                if self.shows(data) {
                    let _ = write!(
                        self.out,
                        "<img src=\"data:{};base64,{data}\" width=\"{}\" height=\"{}\" alt=\"",
                        sniffed.mime(),
                        dimensions.width,
                        dimensions.height
                    );
                    self.text(&caption);
                    self.raw("\">");
                } else {
                    self.withheld(data);
                }
                self.raw("<figcaption>");
                self.text(&caption);
                self.raw("</figcaption></figure>");
            }
            Content::Audio { sniffed, data } => {
                let caption = format!("audio: {}, {}", sniffed.mime(), size_label(data));
                if self.shows(data) {
                    let _ = write!(
                        self.out,
                        "<audio controls preload=\"metadata\" src=\"data:{};base64,{data}\"></audio>",
                        sniffed.mime()
                    );
                } else {
                    self.withheld(data);
                }
                self.raw("<div class=\"note\">");
                self.text(&caption);
                self.raw("</div>");
            }
            Content::Document { pages, data } => {
                let _ = write!(
                    self.out,
                    "<span class=\"doc\">{PDF_ICON}<span>application/pdf, {pages} page{}, {}</span></span>",
                    if *pages == 1 { "" } else { "s" },
                    size_label(data)
                );
            }
        }
        self.raw("</div>");
    }

    /// Says why a payload is not on the page.
    fn withheld(&mut self, data: &str) {
        self.raw("<p class=\"note\">(");
        self.raw(if data.len() > MAX_EMBEDDED {
            "not embedded: larger than this page embeds"
        } else {
            "not embedded: its data is not base64 the page can show as it is"
        });
        self.raw(")</p>");
    }

    /// Whether a payload may go on the page: sound base64 no larger than [`MAX_EMBEDDED`] that
    /// the redaction leaves as it is.
    fn shows(&self, data: &str) -> bool {
        !data.is_empty()
            && data.len() <= MAX_EMBEDDED
            && data
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
            && matches!(self.guard.redact(data), Cow::Borrowed(_))
    }

    fn usage(&mut self, report: &Report<'_>) {
        self.raw(
            "\n<h2 id=\"usage\">Tokens and usage</h2><table><tr><th>route</th>\
                  <th>tool calls</th><th>estimated tokens of the results</th><th>requests</th>\
                  <th>last request's projected size</th><th>reported by the provider</th>\
                  <th>how it ended</th></tr>",
        );
        for run in &report.runs {
            let host = run.host;
            let estimated: u64 = host.calls.iter().map(|c| c.estimated_tokens).sum();
            let _ = write!(
                self.out,
                "<tr><td>{}</td><td class=\"tokens\">{}</td><td class=\"tokens\">{estimated}</td>\
                 <td class=\"tokens\">{}</td><td class=\"tokens\">{}</td><td>",
                route_name(host),
                host.calls.len(),
                host.rounds.len(),
                host.rounds.last().map_or(0, |r| r.projected_tokens)
            );
            match &host.usage {
                Some(usage) => {
                    let _ = write!(
                        self.out,
                        "{} input tokens ({} read from the cache, {} written to it), {} output tokens",
                        usage.input_tokens,
                        usage.cache_read_tokens,
                        usage.cache_write_tokens,
                        usage.output_tokens
                    );
                }
                None => self.raw(
                    "<span class=\"note\">none reported (a scripted model reports none)</span>",
                ),
            }
            self.raw("</td><td>");
            match &run.outcome {
                Ok(outcome) => {
                    self.raw("answered: ");
                    self.text(&outcome.answer);
                }
                Err(error) => {
                    self.raw("<span class=\"error\">stopped: ");
                    self.text(error);
                    self.raw("</span>");
                }
            }
            self.raw("</td></tr>");
        }
        self.raw("</table>");
    }
}

/// The calls made in `round`, in order.
fn calls_in(host: &Host, round: usize) -> Vec<&CallReport> {
    host.calls.iter().filter(|c| c.round == round).collect()
}

fn route_name(host: &Host) -> &'static str {
    host.options.route.id().name()
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// A payload's decoded size, from its base64's shape.
fn size_label(data: &str) -> String {
    markers::size_label(Payload::new(data).map_or(0, |payload| payload.decoded_len()))
}

/// The tool result as the route's API takes it, and the follow-up message the route moves its
/// media to, each long base64 string replaced by its length (the part is shown above).
fn encoded(route: mcpl_lanes::RouteId, output: &ToolOutput) -> Value {
    let encoder = Encoder::new(route);
    let mut value = serde_json::json!({
        "tool_result": encoder.tool_result(output),
        "follow_up": encoder.follow_up(std::slice::from_ref(output)),
    });
    elide(&mut value);
    value
}

fn elide(value: &mut Value) {
    match value {
        Value::String(text)
            if text.len() > 256
                && text.bytes().all(|b| {
                    b.is_ascii_alphanumeric()
                        || matches!(b, b'+' | b'/' | b'=' | b':' | b';' | b',')
                }) =>
        {
            *text = format!("({} characters of base64, shown above)", text.len());
        }
        Value::Array(items) => items.iter_mut().for_each(elide),
        Value::Object(map) => map.values_mut().for_each(elide),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_markup_character_is_escaped() {
        assert_eq!(
            escape("<a href=\"x\">Tom & 'Jerry'</a>"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;"
        );
        assert!(matches!(escape("plain text"), Cow::Borrowed("plain text")));
    }

    #[test]
    fn the_guard_withholds_each_sets_secrets() {
        let one = mcpl_redact::Secrets::new();
        one.insert("s3cr3tV4lu3One9x2k7q");
        let two = mcpl_redact::Secrets::new();
        two.insert("s3cr3tV4lu3Two4m8w1z");
        let guard = Guard::new(vec![one, two]);
        let text = guard.redact("a s3cr3tV4lu3One9x2k7q b s3cr3tV4lu3Two4m8w1z c");
        assert_eq!(text, "a [withheld secret] b [withheld secret] c");
        assert!(matches!(guard.redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn long_base64_is_elided_and_short_strings_kept() {
        let mut value = serde_json::json!({"data": "A".repeat(400), "text": "short", "list": ["B".repeat(300)]});
        elide(&mut value);
        assert_eq!(value["data"], "(400 characters of base64, shown above)");
        assert_eq!(value["text"], "short");
        assert_eq!(value["list"][0], "(300 characters of base64, shown above)");
    }
}
