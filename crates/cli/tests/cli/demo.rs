//! `mcpl demo`: the built-in demo server through the scripted loop, on every route.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use mcpl_budget::{DEFAULT_BUDGET, PricedRoute};
use mcpl_cli::demo::{DemoFolder, DemoTransport, render_json, render_text, run_demo};
use serde_json::Value;

use crate::mcpl;

/// The routes `--route` takes.
const ROUTES: [&str; 5] = [
    "anthropic",
    "openai-chat",
    "openai-responses",
    "gemini",
    "text-only",
];

/// The demo server's uris and credentials: none may reach the output.
pub(crate) const HIDDEN: &[&str] = &[
    "demo-secret",
    "never-show",
    "https://files.demo.example",
    "demo://notes/readme.md",
    "demo://files/report.csv",
    "demo://images/image.png",
    "demo://docs/document.pdf",
    "demo://blobs/untyped",
    "demo://notes/both.txt",
];

fn demo_json(route: &str) -> Value {
    let spill = std::env::temp_dir().join(format!("mcpl-cli-demo-{route}-{}", std::process::id()));
    let output = mcpl(
        &[
            "demo",
            "--route",
            route,
            "--json",
            "--spill-dir",
            spill.to_str().unwrap(),
        ],
        b"",
    );
    let _ = std::fs::remove_dir_all(&spill);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    for hidden in HIDDEN {
        assert!(!text.contains(hidden), "{route}: the output shows {hidden}");
    }
    serde_json::from_str(&text).unwrap()
}

fn call<'d>(demo: &'d Value, tool: &str) -> &'d Value {
    demo["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == tool)
        .unwrap_or_else(|| panic!("{tool} not called"))
}

#[test]
fn the_readable_demo_shows_every_tool_and_the_servers_messages() {
    let output = mcpl(&["demo"], b"");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    for tool in [
        "text",
        "png",
        "jpeg",
        "gif",
        "webp",
        "svg",
        "png-labelled-jpeg",
        "zip-labelled-png",
        "huge-image",
        "audio",
        "embedded-text",
        "embedded-image",
        "pdf",
        "untyped-blob",
        "text-and-blob",
        "resource-link",
        "reference-never",
        "reference-ref",
        "over-budget",
        "structured",
        "structured-only",
        "error",
        "push-events",
        "host-answers",
        "weather-schema",
        "weather-mismatch",
        "audience",
        "sized-log",
        "task",
        "progress",
        "change-tools",
        "added-tool",
        "look",
        "fetch_reference",
    ] {
        assert!(
            text.contains(&format!("\n== {tool} (round ")),
            "{tool} missing"
        );
    }
    assert!(
        text.contains("image: image/png, 16x12 px, 167B"),
        "images described, not dumped"
    );
    assert!(
        !text.contains("iVBORw0KGgo"),
        "no base64 in the readable demo"
    );
    // What a long call's server said while it ran: a task's statuses, progress.
    assert!(text.contains("note: task demo/task (task-1): working \"step 1 of 3\""));
    assert!(text.contains("note: progress demo/progress: 2/2 \"step 2 of 2\""));
    assert!(
        !text.contains("== task-forever"),
        "the demo does not wait on it"
    );
    assert!(text.contains("push evt-1 from demo:"));
    assert!(text.contains("channel m3 from demo:"));
    assert!(text.contains("system prompt gains: "));
    assert!(text.contains("final answer after "));
    // The tool list changed once and was listed again once; the two looks ran at once.
    assert!(text.contains("added-tool answered; tools/list was answered 2 times"));
    assert_eq!(
        text.matches("note: ran at the same time as 1 other call of tools that say they only read")
            .count(),
        2
    );
    for hidden in HIDDEN {
        assert!(!text.contains(hidden), "the output shows {hidden}");
    }
}

#[test]
fn the_json_demo_shows_what_each_route_takes() {
    for route in [
        "anthropic",
        "openai-chat",
        "openai-responses",
        "gemini",
        "text-only",
    ] {
        let demo = demo_json(route);
        assert_eq!(demo["route"], route);
        assert_eq!(
            demo["outcome"]["error"],
            Value::Null,
            "{route}: {}",
            demo["outcome"]
        );
        // Kinds that never go native read the same on every route.
        assert_eq!(
            call(&demo, "zip-labelled-png")["stored"],
            "[Image not shown: its bytes are not PNG, JPEG, GIF or WebP (application/zip, 122B).]"
        );
        // Anthropic takes 5 MiB per image, so its 6 MiB image is re-encoded to fit; the OpenAI
        // and Gemini routes declare larger limits, and text-only takes no image to scale.
        let huge = call(&demo, "huge-image")["stored"].as_str().unwrap();
        if route == "anthropic" {
            assert!(
                huge.contains("\n[image above scaled from 16×12 px, ~6.0MB to 16×12 px, "),
                "{route}: {huge}"
            );
        } else if route == "text-only" {
            assert!(
                huge.ends_with(
                    "[Image not shown: ~6.0MB is over the 5.0MB this host sends inline per image.]"
                ),
                "{route}: {huge}"
            );
        } else {
            assert!(
                huge.contains("\n[image: image/png, ~6.0MB, ref img_"),
                "{route}: {huge}"
            );
        }
        assert_eq!(call(&demo, "error")["is_error"], true);
        let over = call(&demo, "over-budget");
        assert!(
            over["estimated_tokens"].as_u64().unwrap() <= 12_500,
            "{route}"
        );
        assert!(over["spill"]["path"].is_string(), "{route}: spilled");
        // The PNG labelled JPEG goes as what its bytes are, where the route takes images.
        let live = call(&demo, "png-labelled-jpeg")["live"].to_string();
        let follow_up = call(&demo, "png-labelled-jpeg")["follow_up"].to_string();
        match route {
            "text-only" => {
                assert!(!live.contains("iVBORw0KGgo") && !follow_up.contains("iVBORw0KGgo"));
            }
            "openai-chat" => {
                assert!(!live.contains("iVBORw0KGgo"), "tool messages are text only");
                assert!(
                    follow_up.contains("data:image/png;base64,iVBORw0KGgo"),
                    "{follow_up}"
                );
            }
            _ => assert!(
                live.contains("image/png") && live.contains("iVBORw0KGgo"),
                "{route}: {live}"
            ),
        }
        // The PDF goes natively wherever a tool result takes a document (issue 17); its stored
        // copy is a placeholder with a ref. Text-only keeps the marker.
        let pdf = call(&demo, "pdf");
        let sent = format!("{}{}", pdf["live"], pdf["follow_up"]);
        let native = match route {
            "anthropic" => {
                r#""type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0"#
            }
            "openai-responses" => {
                r#""type":"input_file","filename":"document.pdf","file_data":"data:application/pdf;base64,JVBERi0"#
            }
            "openai-chat" => {
                r#""type":"file","file":{"filename":"document.pdf","file_data":"data:application/pdf;base64,JVBERi0"#
            }
            "gemini" => r#""inline_data":{"mime_type":"application/pdf","data":"JVBERi0"#,
            _ => "",
        };
        if route == "text-only" {
            assert!(!sent.contains("JVBERi0"), "{sent}");
            assert_eq!(
                pdf["stored"],
                "[Resource not shown: this host can't display its data (application/pdf, ~2KB).]"
            );
        } else {
            assert!(sent.contains(native), "{route}: {sent}");
            let stored = pdf["stored"].as_str().unwrap();
            assert!(
                stored.starts_with("[document: application/pdf, ~2KB, ref doc_"),
                "{stored}"
            );
        }
        // The WAV goes natively in a tool result on openai-chat and gemini only.
        let audio = call(&demo, "audio");
        let sent = format!("{}{}", audio["live"], audio["follow_up"]);
        let wav = "UklGR";
        match route {
            "openai-chat" => assert!(
                sent.contains(&format!(r#""input_audio":{{"data":"{wav}"#)),
                "{sent}"
            ),
            "gemini" => assert!(
                sent.contains(&format!(
                    r#""inline_data":{{"mime_type":"audio/wav","data":"{wav}"#
                )),
                "{sent}"
            ),
            _ => assert!(!sent.contains(wav), "{route}: {sent}"),
        }
    }
}

/// A temporary folder of its own for one test: `mcpl demo` runs with `TMPDIR` pointing at it,
/// so whatever the demo leaves behind is found there.
struct Tmp(PathBuf);

impl Tmp {
    fn new(name: &str) -> Tmp {
        let dir =
            std::env::temp_dir().join(format!("mcpl-cli-demo-tmp-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Tmp(dir)
    }

    fn entries(&self) -> Vec<PathBuf> {
        std::fs::read_dir(&self.0)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mcpl"));
        command
            .args(args)
            .env("TMPDIR", &self.0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    fn mcpl(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn the_demo_removes_its_folder_at_exit() {
    let tmp = Tmp::new("removed");
    let output = tmp.mcpl(&["demo"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    let header = text
        .lines()
        .find_map(|line| line.strip_prefix("files: spill files and fetched references go to "))
        .unwrap();
    let folder = header
        .strip_suffix(" (removed at exit; --keep keeps it)")
        .unwrap_or_else(|| panic!("{header}"));
    assert!(Path::new(folder).starts_with(&tmp.0), "{folder}");
    assert!(!Path::new(folder).exists());
    assert_eq!(tmp.entries(), Vec::<PathBuf>::new(), "left behind");

    let output = tmp.mcpl(&["demo", "--json", "--route", "openai-chat"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let demo: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(demo["files"]["at_exit"], "removed");
    let folder = PathBuf::from(demo["files"]["path"].as_str().unwrap());
    assert!(folder.starts_with(&tmp.0), "{folder:?}");
    assert!(!folder.exists());
    assert_eq!(tmp.entries(), Vec::<PathBuf>::new(), "left behind");
}

#[test]
fn with_keep_the_folder_stays_and_the_demo_says_where() {
    let tmp = Tmp::new("kept");
    let output = tmp.mcpl(&["demo", "--keep"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    let last = text.lines().last().unwrap();
    let folder = PathBuf::from(
        last.strip_prefix("the demo's files are kept in ")
            .unwrap_or_else(|| panic!("{last}")),
    );
    assert_eq!(tmp.entries(), std::slice::from_ref(&folder));
    // The spill file the over-budget result points at, and the two references the fetcher saved.
    let spilled = text
        .lines()
        .find_map(|line| line.strip_prefix("the whole result is in "))
        .unwrap();
    let spilled = spilled.split(" (with").next().unwrap();
    assert!(Path::new(spilled).starts_with(&folder), "{spilled}");
    assert!(Path::new(spilled).is_file(), "{spilled}");
    assert_eq!(std::fs::read_dir(folder.join("refs")).unwrap().count(), 2);

    let output = tmp.mcpl(&["demo", "--keep", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let demo: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(demo["files"]["at_exit"], "kept");
    let second = PathBuf::from(demo["files"]["path"].as_str().unwrap());
    assert!(second.is_dir() && second != folder, "{second:?}");
    assert_eq!(tmp.entries().len(), 2);
}

#[test]
fn the_folder_is_removed_when_the_demo_fails() {
    // Standard output closed before the demo writes: it fails with status 1.
    let tmp = Tmp::new("failed");
    let mut child = tmp.command(&["demo"]).spawn().unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("mcpl: cannot write the output:"),
        "{stderr}"
    );
    assert_eq!(tmp.entries(), Vec::<PathBuf>::new(), "left behind");
}

#[test]
fn a_folder_the_user_names_is_left_in_place() {
    let tmp = Tmp::new("given");
    let given = tmp.0.join("mine");
    let output = tmp.mcpl(&["demo", "--spill-dir", given.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.ends_with(&format!("the demo's files are in {}\n", given.display())),
        "{text}"
    );
    assert!(given.join("refs").is_dir());
}

/// The demo run in this process on one route, as the text and the JSON it renders, with the
/// omission notice the model got: the line of the over-budget result that names its spill file.
struct Rendered {
    route: &'static str,
    text: String,
    json: Value,
    notice: String,
}

/// The demo on every route, run once for all the tests that read it.
fn rendered() -> &'static [Rendered] {
    static RENDERED: OnceLock<Vec<Rendered>> = OnceLock::new();
    RENDERED.get_or_init(|| {
        ROUTES
            .iter()
            .map(|route| {
                let folder = DemoFolder::temporary(false).unwrap();
                let run = run_demo(
                    PathBuf::from(env!("CARGO_BIN_EXE_mcpl")),
                    PricedRoute::of(route.parse().unwrap()),
                    &folder,
                    DemoTransport::Stdio,
                )
                .unwrap();
                assert!(run.outcome.is_ok(), "{:?}", run.outcome.as_ref().err());
                let call = run
                    .host
                    .calls
                    .iter()
                    .find(|c| c.tool == "over-budget")
                    .unwrap();
                let spill = call.spill.as_ref().unwrap();
                let notice = call
                    .output
                    .stored
                    .lines()
                    .find(|line| line.contains(&spill.path))
                    .unwrap()
                    .to_owned();
                Rendered {
                    route,
                    text: render_text(&run),
                    json: render_json(&run),
                    notice,
                }
            })
            .collect()
    })
}

#[test]
fn the_readable_demo_shows_the_budget_and_the_omission_notice_verbatim() {
    for Rendered {
        route,
        text,
        json,
        notice,
    } in rendered()
    {
        assert!(
            text.contains(&format!(
                "\nbudget: {DEFAULT_BUDGET} estimated tokens per tool result\n"
            )),
            "{route}: {text}"
        );
        assert_eq!(json["budget"], DEFAULT_BUDGET);
        assert_eq!(
            call(json, "over-budget")["omission_notice"],
            notice.as_str()
        );
        assert!(notice.starts_with("[… ") && notice.contains(" omitted ("));
        assert!(
            text.contains(&format!(
                "\nthe model gets this notice in place of the middle:\n  | {notice}\n"
            )),
            "{route}: {text}"
        );
        // And in its place among the lines the model sees, whatever the listing skips.
        let section = text.split("\n== over-budget ").nth(1).unwrap();
        let section = section.split("\n== ").next().unwrap();
        assert_eq!(
            section
                .lines()
                .filter(|line| *line == format!("  | {notice}"))
                .count(),
            2,
            "{route}: {section}"
        );
        assert!(
            section.contains(&format!(
                "over the budget of {DEFAULT_BUDGET} estimated tokens"
            )),
            "{route}: {section}"
        );
    }
}

/// Every noun the demo counts, in the plural.
const COUNTED: &[&str] = &[
    "estimated tokens",
    "tokens",
    "characters",
    "images",
    "attachments",
    "lines",
    "more lines",
    "more characters",
    "pages",
    "tool calls",
    "tools",
    "requests",
];

#[test]
fn every_count_the_demo_prints_reads_right_in_the_singular() {
    for Rendered {
        route,
        text,
        notice,
        ..
    } in rendered()
    {
        // The omission notice is the budget spec's exact template (`<i> images`), shown verbatim;
        // every other count is the demo's own words.
        let prose: String = text
            .lines()
            .filter(|line| !line.contains("tokens omitted ("))
            .collect::<Vec<_>>()
            .join("\n");
        let text = &prose;
        assert!(!text.contains("(s)"), "{route}: {text}");
        for plural in COUNTED {
            let wrong = format!(" 1 {plural}");
            assert!(
                !text.contains(&wrong) && !text.contains(&format!("(1 {plural}")),
                "{route}: {wrong} in {text}"
            );
        }
        assert!(text.contains(" 1 attachment)"), "{route}: {text}");
        if *route != "text-only" {
            assert!(
                text.contains("document: application/pdf, 1 page, "),
                "{route}"
            );
            // The over-budget result's one image is in the middle it cuts: the notice says so in
            // the spec's words.
            assert!(notice.contains(", 1 images);"), "{route}: {notice}");
        }
        if *route == "anthropic" {
            // A 16x12 image alone costs one token there.
            assert!(text.contains("(1 estimated token)"), "{text}");
        }
    }
}

#[test]
fn the_refused_fetch_is_marked_as_intended_with_its_reason() {
    for Rendered {
        route, text, json, ..
    } in rendered()
    {
        let section = |name: &str| {
            text.split("\n== fetch_reference ")
                .skip(1)
                .find(|section| section.contains(name))
                .unwrap()
        };
        let refused = section("503.log");
        assert!(
            refused.contains(
                "\nrefused, as intended: 503.log is a link on the demo's own origin too, but one \
                 the origin does not serve: the fetcher reports the HTTP status it got\n"
            ),
            "{route}: {refused}"
        );
        // What the model reads is still shown, verbatim.
        assert!(refused.contains("\n  | HTTP 404\n"), "{route}: {refused}");
        for saved in ["report.csv", "brief.pdf"] {
            let saved = section(saved);
            assert!(saved.contains("\nsaved, as intended: "), "{route}: {saved}");
        }

        let fetches: Vec<&Value> = json["calls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["tool"] == "fetch_reference")
            .collect();
        let expected: Vec<(&str, &str)> = fetches
            .iter()
            .map(|f| {
                assert_eq!(f["expected"]["as_intended"], true, "{route}: {f}");
                (
                    f["expected"]["reference"].as_str().unwrap(),
                    f["expected"]["outcome"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            expected,
            [
                ("report.csv", "saved"),
                ("brief.pdf", "saved"),
                ("503.log", "refused")
            ]
        );
        assert!(
            fetches[1]["expected"]["why"]
                .as_str()
                .unwrap()
                .starts_with("brief.pdf is a link on the demo's own loopback origin"),
            "{}",
            fetches[1]
        );
        assert_eq!(call(json, "png")["expected"], Value::Null);
    }
}

/// What changes from one run of the demo to the next whatever the transport: the folder, the
/// loopback port, the random part of reference, image and document ids and spill names, and so the
/// estimated tokens of the strings that hold them. Each is replaced by `#`.
fn run_independent(mut text: String, folder: &str) -> String {
    text = text.replace(folder, "FOLDER");
    for prefix in [
        "http://127.0.0.1:",
        "ref_",
        "img_",
        "doc_",
        "spill_",
        "mcpl-",
    ] {
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(at) = rest.find(prefix) {
            out.push_str(&rest[..at + prefix.len()]);
            rest = &rest[at + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(rest.len());
            out.push('#');
            rest = &rest[end..];
        }
        out.push_str(rest);
        text = out;
    }
    text.lines()
        .filter(|line| !line.contains("estimated tokens") && !line.contains("\"estimated_tokens\""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `mcpl demo --transport T` for each transport, JSON and text, with what changes from run to
/// run masked.
fn over_transport(transport: &str, json: bool) -> String {
    let spill = std::env::temp_dir().join(format!(
        "mcpl-cli-demo-{transport}-{json}-{}",
        std::process::id()
    ));
    let mut args = vec!["demo", "--route", "anthropic", "--transport", transport];
    if json {
        args.push("--json");
    }
    args.extend(["--spill-dir", spill.to_str().unwrap()]);
    let output = mcpl(&args, b"");
    let _ = std::fs::remove_dir_all(&spill);
    assert_eq!(output.status.code(), Some(0), "{transport}: {output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    for hidden in HIDDEN {
        assert!(
            !text.contains(hidden),
            "{transport}: the output shows {hidden}"
        );
    }
    let text = if json {
        serde_json::to_string_pretty(&serde_json::from_str::<Value>(&text).unwrap()).unwrap()
    } else {
        text
    };
    run_independent(text, spill.to_str().unwrap())
}

#[test]
fn the_model_sees_the_same_over_stdio_http_and_ws() {
    for json in [true, false] {
        let stdio = over_transport("stdio", json);
        assert!(stdio.contains("HTTP 404"), "{stdio}");
        assert!(stdio.contains("push-1"), "{stdio}");
        for transport in ["http", "ws"] {
            let other = over_transport(transport, json);
            // Modern MCP over http, MCPL over ws: MCP's nested `resource` is read as the
            // embedded text it holds, MCPL's flat one as a reference's stub, on both families.
            assert!(other.contains("# Demo notes"), "{transport}: {other}");
            assert!(
                other.contains("q3-report.pdf — application/pdf"),
                "{transport}: {other}"
            );
            if other != stdio {
                let (a, b) = stdio
                    .lines()
                    .zip(other.lines())
                    .find(|(a, b)| a != b)
                    .unwrap_or_default();
                panic!(
                    "{transport} differs from stdio (json: {json}):\n  stdio: {a}\n  {transport}: {b}"
                );
            }
        }
    }
}

#[test]
fn the_masking_keeps_what_the_model_reads() {
    // The comparison would pass on anything if the masking ate the content; it does not.
    assert_eq!(
        run_independent(
            "[ref_2_ab9z] brief.pdf at http://127.0.0.1:4123/x in /tmp/d/mcpl-17-2.txt\n\
             (49 estimated tokens)\nHTTP 404"
                .to_owned(),
            "/tmp/d"
        ),
        "[ref_#] brief.pdf at http://127.0.0.1:#/x in FOLDER/mcpl-#.txt\nHTTP 404"
    );
}

#[test]
fn the_json_demo_keeps_its_keys_and_adds_the_budget_and_the_notice() {
    let demo = demo_json("gemini");
    for key in [
        "route",
        "servers",
        "calls",
        "messages",
        "answers",
        "injections",
        "outcome",
        "budget",
        "files",
    ] {
        assert!(demo.get(key).is_some(), "{key} missing");
    }
    assert_eq!(demo["budget"], DEFAULT_BUDGET);
    assert_eq!(demo["files"]["at_exit"], "given");
    for call in demo["calls"].as_array().unwrap() {
        for key in [
            "round",
            "server",
            "tool",
            "arguments",
            "live",
            "follow_up",
            "stored",
            "estimated_tokens",
            "is_error",
            "spill",
            "diagnostics",
            "omission_notice",
            "expected",
        ] {
            assert!(call.get(key).is_some(), "{key} missing in {}", call["tool"]);
        }
    }
    let over = call(&demo, "over-budget");
    let notice = over["omission_notice"].as_str().unwrap();
    let path = over["spill"]["path"].as_str().unwrap();
    assert!(
        over["stored"]
            .as_str()
            .unwrap()
            .lines()
            .any(|line| line == notice)
    );
    assert!(
        notice.ends_with(&format!("the full result is in {path}]")),
        "{notice}"
    );
    assert_eq!(call(&demo, "text")["omission_notice"], Value::Null);
}

#[test]
fn the_demo_shows_what_the_server_declares_on_every_route() {
    for rendered in rendered() {
        let route = rendered.route;
        let text = &rendered.text;
        assert!(
            text.contains("instructions: every request's system prompt carries the server's"),
            "{route}"
        );
        assert!(
            text.contains("  | <server-instructions server=\"demo\">"),
            "{route}"
        );
        assert!(
            text.contains("the user is shown (the model is not):\n  | Shown to you, the user"),
            "{route}"
        );
        let json = &rendered.json;
        assert!(
            json["instructions"].as_str().unwrap().contains("sized-log"),
            "{route}"
        );
        let mismatch = call(json, "weather-mismatch")["stored"].as_str().unwrap();
        assert!(
            mismatch.ends_with("/temperatureC: \"warm\" is not of type \"number\"]"),
            "{route}: {mismatch}"
        );
        let audience = call(json, "audience");
        assert!(
            !audience["stored"]
                .as_str()
                .unwrap()
                .contains("Shown to you")
        );
        assert_eq!(
            audience["for_user"][0],
            "Shown to you, the user: the build log is in build/log.txt."
        );
        let sized = call(json, "sized-log");
        assert_eq!(sized["spill"], Value::Null, "{route}");
        assert!(
            sized["estimated_tokens"].as_u64().unwrap() > DEFAULT_BUDGET,
            "{route}"
        );
    }
}

#[test]
fn the_demo_shows_the_skills_index_and_loads_a_skill_on_demand() {
    let output = mcpl(&["demo"], b"");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("skills: the model is offered load_skill, whose description indexes"),
        "{text}"
    );
    assert!(text.contains("  | - chart-reading: Read a chart image and say what its trend is."));
    assert!(text.contains("  | - csv-report: Summarise the demo's report.csv by region."));
    let loads: Vec<&str> = text.split("\n== load_skill (round ").skip(1).collect();
    assert_eq!(loads.len(), 2, "{text}");
    assert!(loads[0].contains("Name the axes"), "{}", loads[0]);
    assert!(loads[0].contains("examples/chart.png ("), "{}", loads[0]);
    assert!(
        loads[1].contains("image: image/png, 16x12 px"),
        "{}",
        loads[1]
    );
    for load in &loads {
        assert!(
            !load.lines().next().unwrap().contains("error result"),
            "{load}"
        );
    }

    let demo = demo_json("anthropic");
    let loads: Vec<&Value> = demo["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["tool"] == "load_skill")
        .collect();
    assert_eq!(loads.len(), 2);
    assert_eq!(loads[1]["arguments"]["file"], "examples/chart.png");
    assert_eq!(loads[1]["is_error"], false);
    assert!(
        loads[1]["live"].to_string().contains("\"type\":\"image\""),
        "{}",
        loads[1]["live"]
    );
}

#[test]
fn the_demo_says_what_the_tool_definitions_cost_against_the_deferral_share() {
    let output = mcpl(&["demo"], b"");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    let line = text
        .lines()
        .find(|line| line.starts_with("tools: the servers' definitions take "))
        .unwrap_or_else(|| panic!("no tools line in {text}"));
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|word| word.parse().ok())
        .collect();
    let [tokens, limit, percent] = numbers[..] else {
        panic!("{line}");
    };
    assert_eq!(percent, 10, "{line}");
    assert!(tokens > 500 && tokens < limit, "{line}");
    assert!(line.contains("deferToolsAbovePercent"), "{line}");
    assert!(line.ends_with("Here all are offered."), "{line}");
}
