//! The inference loop against the real demo server over stdio (`mcpl serve-demo`): every lane
//! end to end, and servers that crash, hang, write garbage or never start.

use std::time::Duration;

use mcpl_budget::PricedRoute;
use mcpl_client::Launch;
use mcpl_host::config::{Config, ServerConfig, ServerOptions};
use mcpl_host::host_loop::{Host, HostOptions, LoopError};
use mcpl_host::model::Scripted;
use mcpl_lanes::RouteId;
use serde_json::{Value, json};

mod declared;
mod fit;

/// The tokens the demo server's texts carry that must never reach a model.
const SECRETS: &[&str] = &[
    "demo-secret",
    "never-show",
    "https://files.demo.example",
    "demo://",
];

fn demo_server(name: &str, options: ServerOptions) -> ServerConfig {
    let launch = Launch::stdio(
        name,
        env!("CARGO_BIN_EXE_mcpl"),
        vec!["serve-demo".to_owned()],
    );
    ServerConfig::new(launch, options)
}

fn config(servers: Vec<ServerConfig>, spill: &tempdir::Dir) -> Config {
    let mut config = Config::default();
    config.servers = servers;
    config.fetch_dir = Some(spill.path().join("refs"));
    config.spill_dir = Some(spill.path().to_owned());
    config.context_window = 1_000_000;
    config
}

/// Runs a script (a list of steps, each a list of `(server, tool)`; an empty server calls the
/// tool by its name alone) and returns the host, the outcome and the transcript's request bodies.
fn play(
    config: &Config,
    route: &'static PricedRoute,
    steps: &[&[(&str, &str)]],
) -> (Host, Result<String, LoopError>, Vec<Value>) {
    let script = json!({
        "steps": steps.iter().map(|calls| json!({"tool_calls": calls.iter().map(|(server, tool)| {
            // No server: the tool goes by the name given.
            if server.is_empty() {
                json!({"name": tool})
            } else {
                json!({"server": server, "name": tool})
            }
        }).collect::<Vec<_>>()})).collect::<Vec<_>>(),
        "final": "done",
    });
    let mut model = Scripted::from_slice(script.to_string().as_bytes()).unwrap();
    let mut host = Host::start(config, HostOptions::new(route, config));
    let mut transcript = Vec::new();
    let outcome = host
        .run(&mut model, "Show me.", Some(&mut transcript))
        .map(|o| o.answer);
    let bodies = transcript
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).unwrap())
        .collect();
    (host, outcome, bodies)
}

fn assert_no_secrets(bodies: &[Value]) {
    for (round, body) in bodies.iter().enumerate() {
        // The tools' own descriptions are the server's words about itself, not content.
        let mut body = body.clone();
        body.as_object_mut().unwrap().remove("tools");
        let text = body.to_string();
        for secret in SECRETS {
            assert!(
                !text.contains(secret),
                "request {} carries {secret:?}",
                round + 1
            );
        }
    }
}

mod tempdir {
    //! A folder removed when dropped.
    pub(crate) struct Dir(std::path::PathBuf);

    impl Dir {
        pub(crate) fn new(name: &str) -> Dir {
            let path = std::env::temp_dir().join(format!(
                "mcpl-loop-{name}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = std::fs::remove_dir_all(&path);
            Dir(path)
        }

        pub(crate) fn path(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The anthropic `tool_result` blocks of a request body, in order.
fn tool_results(body: &Value) -> Vec<&Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|block| block["type"] == "tool_result")
        .collect()
}

#[test]
fn every_lane_end_to_end_on_anthropic() {
    let spill = tempdir::Dir::new("lanes");
    let config = config(vec![demo_server("demo", ServerOptions::default())], &spill);
    let (host, outcome, bodies) = play(
        &config,
        &PricedRoute::ANTHROPIC,
        &[
            &[("demo", "png")],
            &[("demo", "reference-ref")],
            &[("demo", "push-events")],
            &[("demo", "host-answers")],
            &[("demo", "over-budget")],
        ],
    );
    assert_eq!(outcome.unwrap(), "done");
    assert_eq!(
        bodies.len(),
        6,
        "one request per step and one for the answer"
    );
    assert_no_secrets(&bodies);

    // The image goes native on the round it lands, and as its stored copy afterwards.
    let landed = tool_results(&bodies[1]);
    let image = &landed[0]["content"][1];
    assert_eq!(image["type"], "image");
    assert_eq!(image["source"]["media_type"], "image/png");
    let later = tool_results(&bodies[2]);
    assert!(
        later[0]["content"]
            .to_string()
            .contains("[image: image/png, 167B, ref img_"),
        "{}",
        later[0]
    );
    assert!(!bodies[2].to_string().contains("\"type\":\"image\""));

    // The reference is a stub bound to its server.
    let stub = tool_results(&bodies[2])[1]["content"].to_string();
    assert!(stub.contains("q3-report.pdf — application/pdf"), "{stub}");
    let record = host
        .lanes
        .session
        .registry()
        .find_uri("https://files.demo.example/reports/q3.pdf?token=demo-secret-123")
        .unwrap();
    assert_eq!(record.servers[0].as_str(), "demo");

    // Push events and channel messages arrive during the call and join the next request.
    let after_push = bodies[3].to_string();
    assert!(after_push.contains("Build 42 finished"), "push event shown");
    assert!(after_push.contains("attachment on push event"));
    assert!(
        after_push.contains("Ada: the deploy is green."),
        "channel message shown"
    );
    assert!(after_push.contains("Ada: here is the dashboard."));
    let push_images = bodies[3]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user" && m["content"].to_string().contains("\"type\":\"image\""))
        .count();
    assert_eq!(
        push_images, 2,
        "the push event's and the channel message's images go native"
    );
    let build_log = host
        .lanes
        .session
        .registry()
        .find_uri("https://files.demo.example/builds/42/log.txt?token=demo-secret-build")
        .unwrap();
    assert_eq!(build_log.servers[0].as_str(), "demo");
    assert_eq!(
        host.rounds[3].messages.len(),
        3,
        "one push event and two channel messages"
    );

    // What the host answered, as the server saw it.
    let answers: Value = serde_json::from_str(
        tool_results(&bodies[4])[3]["content"][0]["text"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        answers,
        json!([
            {"id": "push-1", "result": {"accepted": true}},
            {"id": "push-2", "result": {"accepted": true, "reason": "duplicate"}},
            {"id": "push-3", "error": {"code": -32602, "message": "push event content is visibly empty",
                                        "data": {"field": "payload.content"}}},
            {"id": "channel-1", "result": {"results": [
                {"messageId": "m1", "accepted": true},
                {"messageId": "m2", "accepted": false, "reason": "empty_content"},
                {"messageId": "m3", "accepted": true}]}},
        ])
    );

    // Injections: system text appended, user-position injections around the user's message.
    let system = bodies[0]["system"].to_string();
    assert!(
        system.contains("The mcpl demo server is connected"),
        "{system}"
    );
    let first_user = bodies[0]["messages"][0]["content"].to_string();
    let before = first_user.find("Lighthouse").unwrap();
    let prompt = first_user.find("Show me.").unwrap();
    let after = first_user.find("attachment on context injection").unwrap();
    assert!(before < prompt && prompt < after, "{first_user}");

    // The result far over budget is cut to its budget and spilled whole.
    let over = host.calls.iter().find(|c| c.tool == "over-budget").unwrap();
    assert!(over.estimated_tokens <= 12_500, "{}", over.estimated_tokens);
    let spilled = over.spill.as_ref().expect("spilled");
    assert!(std::path::Path::new(&spilled.path).starts_with(spill.path()));
    assert_eq!(
        spilled.attachments.len(),
        1,
        "the log's image is an attachment"
    );
}

#[test]
fn a_crashing_server_fails_its_call_and_the_others_go_on() {
    let spill = tempdir::Dir::new("crash");
    let config = config(
        vec![
            demo_server("flaky", ServerOptions::default()),
            demo_server("steady", ServerOptions::default()),
        ],
        &spill,
    );
    let (host, outcome, bodies) = play(
        &config,
        &PricedRoute::ANTHROPIC,
        &[
            &[("flaky", "crash"), ("steady", "text")],
            &[("flaky", "text"), ("steady", "png")],
        ],
    );
    assert_eq!(outcome.unwrap(), "done");
    let crash = &host.calls[0].output;
    assert!(crash.is_error);
    assert!(
        crash.stored.starts_with("tool call failed: server flaky exited before answering tools/call: it exited with exit status: 3"),
        "{}",
        crash.stored
    );
    assert!(!host.calls[1].output.is_error, "the other server answered");
    let after = &host.calls[2].output;
    assert!(after.is_error);
    assert!(
        after.stored.contains("server flaky is not available"),
        "{}",
        after.stored
    );
    assert!(
        host.calls[3].output.live.is_some(),
        "steady's image goes native"
    );
    assert_eq!(bodies.len(), 3);
}

#[test]
fn a_hanging_call_times_out_and_the_server_serves_the_next() {
    let spill = tempdir::Dir::new("hang");
    let mut options = ServerOptions::default();
    options.timeout = Duration::from_millis(400);
    let config = config(vec![demo_server("demo", options)], &spill);
    let (host, outcome, _) = play(
        &config,
        &PricedRoute::ANTHROPIC,
        &[&[("demo", "hang")], &[("demo", "text")]],
    );
    assert_eq!(outcome.unwrap(), "done");
    assert_eq!(
        host.calls[0].output.stored,
        "tool call failed: server demo did not answer tools/call within 400 ms"
    );
    assert_eq!(
        host.calls[1].output.stored,
        "Hello from the mcpl demo server. This result is one text block."
    );
}

#[test]
fn garbage_is_skipped_and_the_server_serves_the_next() {
    let spill = tempdir::Dir::new("garbage");
    let mut options = ServerOptions::default();
    options.timeout = Duration::from_millis(400);
    let config = config(vec![demo_server("demo", options)], &spill);
    let (host, outcome, _) = play(
        &config,
        &PricedRoute::ANTHROPIC,
        &[&[("demo", "garbage")], &[("demo", "text")]],
    );
    assert_eq!(outcome.unwrap(), "done");
    // The line that is not JSON is skipped, as the official SDKs skip it; the call, which got
    // no answer, times out, and its error quotes nothing the server wrote.
    assert_eq!(
        host.calls[0].output.stored,
        "tool call failed: server demo did not answer tools/call within 400 ms"
    );
    assert!(!host.calls[1].output.is_error);
}

#[test]
fn a_server_that_cannot_start_is_reported_and_the_others_go_on() {
    let spill = tempdir::Dir::new("nostart");
    let mut missing = demo_server("missing", ServerOptions::default());
    missing.launch.command = "/nonexistent/mcpl-no-such-server".to_owned();
    let config = config(
        vec![missing, demo_server("demo", ServerOptions::default())],
        &spill,
    );
    let (host, outcome, _) = play(
        &config,
        &PricedRoute::ANTHROPIC,
        &[&[("missing", "text"), ("demo", "text")]],
    );
    assert_eq!(outcome.unwrap(), "done");
    let error = host.servers[0].error.as_deref().unwrap();
    assert!(
        error.starts_with("server missing could not be started: /nonexistent/mcpl-no-such-server:"),
        "{error}"
    );
    // A call to it is answered as a call to a server that crashed: not available, and why.
    assert_eq!(
        host.calls[0].output.stored,
        format!("tool call failed: server missing is not available: {error}")
    );
    assert!(host.calls[0].output.is_error);
    assert!(!host.calls[1].output.is_error);
}

#[test]
fn a_tool_called_by_its_own_name_goes_to_the_one_server_offering_it() {
    let spill = tempdir::Dir::new("own-name");
    let config = config(vec![demo_server("demo", ServerOptions::default())], &spill);
    let (host, outcome, bodies) = play(&config, &PricedRoute::ANTHROPIC, &[&[("", "text")]]);
    assert_eq!(outcome.unwrap(), "done");
    assert_eq!(host.calls[0].call.name, "demo__text");
    assert_eq!(host.calls[0].server.as_deref(), Some("demo"));
    assert!(!host.calls[0].output.is_error);
    let assistant = &bodies[1]["messages"][1]["content"][0];
    assert_eq!(assistant["type"], "tool_use");
    assert_eq!(
        assistant["name"], "demo__text",
        "history keeps the offered name"
    );
}

#[test]
fn a_call_that_cannot_be_routed_is_an_error_result_and_the_loop_goes_on() {
    let spill = tempdir::Dir::new("unroutable");
    let config = config(
        vec![
            demo_server("one", ServerOptions::default()),
            demo_server("two", ServerOptions::default()),
            demo_server("three", ServerOptions::default()),
        ],
        &spill,
    );
    // A tool's own name that three servers offer: the model is told which to call, and the
    // other call of the turn is made.
    let (host, outcome, bodies) = play(
        &config,
        &PricedRoute::ANTHROPIC,
        &[&[("one", "text"), ("", "png")]],
    );
    assert_eq!(outcome.unwrap(), "done");
    assert!(!host.calls[0].output.is_error);
    let ambiguous = &host.calls[1].output;
    assert!(ambiguous.is_error);
    assert_eq!(
        ambiguous.stored,
        "tool call failed: 3 servers offer a tool named png; call one of one__png, two__png, three__png"
    );
    assert_eq!(bodies.len(), 2, "the model was asked again");

    // A name no tool has: the nearest names, and the run goes on.
    let (host, outcome, _) = play(
        &config,
        &PricedRoute::ANTHROPIC,
        &[&[("two", "text")], &[("one", "pnj")]],
    );
    assert_eq!(outcome.unwrap(), "done");
    let unknown = &host.calls[1].output;
    assert!(unknown.is_error);
    assert!(
        unknown
            .stored
            .starts_with("tool call failed: no tool is named one__pnj. The nearest: one__png, "),
        "{}",
        unknown.stored
    );
}

#[test]
fn arguments_that_are_not_an_object_or_not_what_the_schema_takes_are_error_results() {
    let spill = tempdir::Dir::new("bad-arguments");
    let config = config(vec![demo_server("demo", ServerOptions::default())], &spill);
    let script = json!({"steps": [{"tool_calls": [
        {"server": "demo", "name": "text", "arguments": "{\"broken\": ", "expect": "error"},
        {"server": "demo", "name": "text", "arguments": [1, 2], "expect": "error"},
        {"server": "demo", "name": "text", "expect": "ok"},
        {"server": "demo", "name": "slow", "arguments": {"ms": "soon"}, "expect": "error"},
    ]}], "final": "done"});
    let mut model = Scripted::from_slice(script.to_string().as_bytes()).unwrap();
    let mut host = Host::start(&config, HostOptions::new(&PricedRoute::ANTHROPIC, &config));
    let mut transcript = Vec::new();
    let outcome = host.run(&mut model, "Go.", Some(&mut transcript));
    assert_eq!(outcome.unwrap().answer, "done");
    assert!(
        host.calls[0]
            .output
            .stored
            .starts_with("tool call failed: the arguments of demo__text are not JSON ("),
        "{}",
        host.calls[0].output.stored
    );
    assert!(
        host.calls[1]
            .output
            .stored
            .contains("are an array, not an object")
    );
    assert!(!host.calls[2].output.is_error);
    assert!(
        host.calls[3].output.stored.starts_with(
            "tool call failed: the arguments of demo__slow do not match its input schema: at /ms: "
        ),
        "{}",
        host.calls[3].output.stored
    );
    // The history sends the broken calls back with `{}`, which every route takes.
    let bodies: Vec<Value> = transcript
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).unwrap())
        .collect();
    let assistant = &bodies[1]["messages"][1]["content"];
    assert_eq!(assistant[0]["input"], json!({}));
    assert_eq!(assistant[1]["input"], json!({}));
}

#[test]
fn a_model_that_keeps_failing_is_stopped_and_a_script_that_expects_otherwise_fails() {
    let spill = tempdir::Dir::new("repeated-errors");
    let config = config(vec![demo_server("demo", ServerOptions::default())], &spill);
    let steps: Vec<&[(&str, &str)]> = vec![&[("demo", "no-such-tool")]; 12];
    let (host, outcome, _) = play(&config, &PricedRoute::ANTHROPIC, &steps);
    match outcome {
        Err(LoopError::RepeatedErrors { round, count, last }) => {
            assert_eq!((round, count), (10, 10));
            assert!(
                last.starts_with("tool call failed: no tool is named"),
                "{last}"
            );
        }
        other => panic!("not stopped: {other:?}"),
    }
    assert_eq!(host.calls.len(), 10);
    // A success between errors starts the count again.
    let mut steps: Vec<&[(&str, &str)]> = vec![&[("demo", "no-such-tool")]; 9];
    steps.push(&[("demo", "text")]);
    steps.extend(vec![&[("demo", "no-such-tool")][..]; 9]);
    let (_, outcome, _) = play(&config, &PricedRoute::ANTHROPIC, &steps);
    assert_eq!(outcome.unwrap(), "done");
    // A scripted call expected to succeed that fails ends the run on the script's next turn.
    let script = json!({"steps": [{"tool_calls": [
        {"server": "demo", "name": "no-such-tool", "expect": "ok"},
    ]}], "final": "done"});
    let mut model = Scripted::from_slice(script.to_string().as_bytes()).unwrap();
    let mut host = Host::start(&config, HostOptions::new(&PricedRoute::ANTHROPIC, &config));
    let error = host.run(&mut model, "Go.", None).unwrap_err().to_string();
    assert!(
        error.contains("call_1 (demo__no-such-tool) was expected to succeed, and it failed"),
        "{error}"
    );
}

#[test]
fn a_round_over_the_window_clears_what_servers_sent_and_only_the_hosts_own_part_ends_it() {
    let spill = tempdir::Dir::new("window");
    let mut config = config(vec![demo_server("demo", ServerOptions::default())], &spill);
    config.context_window = 9_000;
    // The demo's tools take more than a tenth of this window: they are all offered here, so
    // the projection counts them (deferred tools are decision 0131's, tested in cli/toolset.rs).
    config.defer_tools_percent = 100;
    let (host, outcome, bodies) = play(
        &config,
        &PricedRoute::ANTHROPIC,
        &[&[("demo", "over-budget")]],
    );
    // Each request's projection counts the system prompt, the tools' definitions and the room
    // for the answer, besides what the round appends.
    let first = &host.rounds[0];
    assert!(
        first.projected_tokens > 4096 + first.appended_tokens + 1000,
        "{first:?}"
    );
    // A result of 12,500 tokens does not fit a window of 9,000 beside them: it is cleared, and
    // the run goes on.
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(bodies.len(), 2);
    assert!(
        host.rounds[1]
            .diagnostics
            .iter()
            .any(|d| d
                .contains("of the latest tool results cleared to fit the context window of 9000")),
        "{:?}",
        host.rounds[1].diagnostics
    );
    // A window too small for the host's own part (the system prompt, the tools, the room for
    // the answer) ends the run before anything is sent.
    config.context_window = 3_000;
    let (_, outcome, bodies) = play(&config, &PricedRoute::ANTHROPIC, &[&[("demo", "text")]]);
    let error = outcome.unwrap_err().to_string();
    assert!(
        error.starts_with("the next request would need about "),
        "{error}"
    );
    assert!(
        error.ends_with("the context window is 3000 (round 1)"),
        "{error}"
    );
    assert!(bodies.is_empty(), "the round over the window was not sent");
}

/// Plays a script given as JSON steps (each a list of calls with arguments).
fn play_calls(config: &Config, steps: Value) -> (Host, Vec<Value>) {
    let script = json!({"steps": steps, "final": "done"});
    let mut model = Scripted::from_slice(script.to_string().as_bytes()).unwrap();
    let mut host = Host::start(config, HostOptions::new(&PricedRoute::ANTHROPIC, config));
    let mut transcript = Vec::new();
    host.run(&mut model, "Fetch.", Some(&mut transcript))
        .unwrap();
    let bodies = transcript
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).unwrap())
        .collect();
    (host, bodies)
}

#[test]
fn fetch_reference_reads_a_resource_link_through_its_server() {
    let spill = tempdir::Dir::new("fetch-resource");
    let mut config = config(vec![demo_server("demo", ServerOptions::default())], &spill);
    config.fetch_dir = Some(spill.path().join("refs"));
    let script = json!([
        {"tool_calls": [{"server": "demo", "name": "resource-link"}]},
        {"tool_calls": [{"name": "fetch_reference", "arguments": {"ref_id": "ref_9_zzzz"}}]},
    ]);
    let (mut host, _) = play_calls(&config, script);
    assert_eq!(
        host.calls[1].output.stored,
        "unknown reference: ref_9_zzzz — it may have been evicted; ids are never reused"
    );
    let id = host
        .lanes
        .session
        .registry()
        .find_uri("demo://files/report.csv")
        .unwrap()
        .id
        .clone();
    let call = mcpl_encode::conversation::ToolCall::new(
        "call_x",
        "fetch_reference",
        json!({"ref_id": id.as_str()}),
    );
    let output = host.call_tool(3, &call);
    assert!(!output.is_error, "{}", output.stored);
    // The model reads the payload's size and type, then the payload, but not the path.
    let (header, payload) = output.stored.split_once('\n').unwrap();
    let saved: Value = serde_json::from_str(header).unwrap();
    assert!(saved.get("path").is_none(), "{header}");
    let path = host.calls.last().unwrap().saved.clone().unwrap();
    assert!(!output.stored.contains(&path));
    let csv = std::fs::read_to_string(&path).unwrap();
    assert!(
        payload.starts_with(csv.lines().next().unwrap()),
        "{payload}"
    );
    assert_eq!(
        std::path::Path::new(&path),
        spill
            .path()
            .join("refs")
            .join(format!("{}.csv", id.as_str()))
    );
    assert_eq!(saved["bytes"], 1234);
    assert_eq!(saved["mime_type"], "text/csv");
    assert_eq!(saved["digest_verified"], "no digest claimed");
    assert_eq!(csv.len(), 1234);
    assert!(host.tools().iter().any(|t| t.name == "fetch_reference"));
}

#[test]
fn small_references_in_a_result_the_agent_asked_for_are_fetched_at_once() {
    use mcpl_loopback::{Answer, Loopback};
    let files =
        Loopback::start(|_| Answer::bytes("application/pdf", b"%PDF-1.4 small".to_vec())).unwrap();
    let spill = tempdir::Dir::new("eager");
    let mut options = ServerOptions::default();
    options.fetch.origin = Some(files.origin().to_owned());
    options.fetch.token = Some("tok".to_owned());
    let mut config = config(vec![demo_server("demo", options)], &spill);
    config.fetch_dir = Some(spill.path().join("refs"));
    let small = format!("{}/small.pdf?sig=x", files.origin());
    let large = format!("{}/large.pdf", files.origin());
    let script = json!([
        {"tool_calls": [{"server": "demo", "name": "reference-ref",
                         "arguments": {"uri": small, "sizeBytes": 14}}]},
        {"tool_calls": [{"server": "demo", "name": "reference-ref",
                         "arguments": {"uri": large, "sizeBytes": 10_000_000}}]},
    ]);
    let (host, bodies) = play_calls(&config, script);
    assert_no_secrets(&bodies);
    let small_record = host.lanes.session.registry().find_uri(&small).unwrap();
    let fetched = small_record.fetched.as_ref().expect("fetched eagerly");
    assert_eq!(std::fs::read(&fetched.path).unwrap(), b"%PDF-1.4 small");
    assert!(std::path::Path::new(&fetched.path).starts_with(spill.path().join("refs")));
    let stored = &host.calls[0].output.stored;
    assert!(
        stored.contains(&format!("saved: {}", fetched.path)),
        "the stub says where: {stored}"
    );
    assert!(
        host.lanes
            .session
            .registry()
            .find_uri(&large)
            .unwrap()
            .fetched
            .is_none()
    );
    let requests = files.requests();
    assert_eq!(requests.len(), 1, "only the small one was dialed");
    assert_eq!(requests[0].header("authorization"), Some("Bearer tok"));
}

#[test]
fn a_failed_call_registers_nothing_and_an_error_results_references_are_not_fetched() {
    use mcpl_loopback::{Answer, Loopback};
    let files = Loopback::start(|_| Answer::bytes("text/plain", b"log".to_vec())).unwrap();
    let spill = tempdir::Dir::new("failed");
    let mut options = ServerOptions::default();
    options.timeout = Duration::from_millis(300);
    options.fetch.origin = Some(files.origin().to_owned());
    let config = config(vec![demo_server("demo", options)], &spill);
    let uri = format!("{}/503.txt", files.origin());
    let script = json!([
        {"tool_calls": [{"server": "demo", "name": "hang"}]},
        {"tool_calls": [{"server": "demo", "name": "garbage"}]},
        {"tool_calls": [{"server": "demo", "name": "error", "arguments": {"uri": uri}}]},
    ]);
    let (host, bodies) = play_calls(&config, script);
    assert_no_secrets(&bodies);
    assert!(host.calls[0].output.is_error && host.calls[1].output.is_error);
    let error = &host.calls[2].output;
    assert!(error.is_error);
    assert!(
        error.stored.starts_with(
            "The demo tool failed on purpose: the upstream service answered 503.\n[ref_"
        )
    );
    // The failed calls registered nothing; the error result's reference is shown and registered
    // like any other, and not fetched: only results that did not fail are fetched eagerly.
    // Two records: the demo's context injection's brief, and the error's log.
    assert_eq!(host.lanes.session.registry().len(), 2);
    let record = host.lanes.session.registry().find_uri(&uri).unwrap();
    assert!(record.fetched.is_none());
    assert!(
        files.requests().is_empty(),
        "nothing dialed for a failed result"
    );
}

#[test]
fn every_route_runs_the_same_conversation_without_a_secret() {
    for id in RouteId::ALL {
        let route = PricedRoute::of(id);
        let spill = tempdir::Dir::new(id.name());
        let config = config(vec![demo_server("demo", ServerOptions::default())], &spill);
        let (host, outcome, bodies) = play(
            &config,
            route,
            &[
                &[("demo", "png"), ("demo", "audio")],
                &[("demo", "push-events"), ("demo", "reference-never")],
            ],
        );
        assert_eq!(outcome.unwrap(), "done", "{id}");
        assert_eq!(bodies.len(), 3);
        assert_no_secrets(&bodies);
        let png = &host.calls[0].output;
        assert_eq!(
            png.live.is_some(),
            route.lanes.images_in_tool_results,
            "{id}"
        );
        if id == RouteId::TextOnly {
            for body in &bodies {
                assert!(
                    !body.to_string().contains("iVBORw0KGgo"),
                    "no base64 on text-only"
                );
            }
        }
    }
}

#[test]
fn a_200_round_session_in_a_small_window_clears_old_results_and_runs_to_its_end() {
    let spill = tempdir::Dir::new("long-session");
    let mut options = ServerOptions::default();
    options.budget = 1_500;
    let mut config = config(vec![demo_server("demo", options)], &spill);
    config.context_window = 16_000;
    // Path wording, so the test reads each cleared result's file by the path its notice names.
    config.spill_notice = mcpl_budget::SpillNotice::Path;
    // Over-budget results (cut and spilled when they land) every tenth round, an image and
    // small texts (never spilled) in the others, two calls a round.
    let steps: Vec<Value> = (0..200)
        .map(|n| {
            let tool = match n % 10 {
                0 => "over-budget",
                5 => "png",
                _ => "text",
            };
            json!({"tool_calls": [{"server": "demo", "name": tool}, {"server": "demo", "name": "text"}]})
        })
        .collect();
    let script = json!({"steps": steps, "final": "done"});
    let mut model = Scripted::from_slice(script.to_string().as_bytes()).unwrap();
    let mut options = HostOptions::new(&PricedRoute::ANTHROPIC, &config);
    options.max_rounds = 250;
    let mut host = Host::start(&config, options);
    let mut transcript = Vec::new();
    let outcome = host.run(&mut model, "Call the tools.", Some(&mut transcript));
    assert_eq!(outcome.unwrap().rounds, 201, "the session runs to its end");
    // Every request stayed within the window by the loop's own projection.
    assert!(host.rounds.iter().all(|r| r.projected_tokens <= 16_000));
    let cleared: Vec<&String> = host
        .rounds
        .iter()
        .flat_map(|r| &r.diagnostics)
        .filter(|d| d.contains("earlier tool results cleared"))
        .collect();
    assert!(!cleared.is_empty());
    // The last request: older results are notices naming a spill file that exists and holds
    // the result; the latest round's results are whole.
    let last: Value = serde_json::from_slice(
        transcript
            .split(|&b| b == b'\n')
            .rfind(|line| !line.is_empty())
            .unwrap(),
    )
    .unwrap();
    let messages = last["messages"].as_array().unwrap();
    let prefix = "[tool result cleared to fit the context window; the whole result is in ";
    let mut notices = 0;
    for message in messages {
        for block in message["content"].as_array().into_iter().flatten() {
            let text = match &block["content"] {
                Value::String(text) => text.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => continue,
            };
            if let Some(path) = text.strip_prefix(prefix) {
                let path = path.trim_end_matches(']');
                let kept = std::fs::read_to_string(path).unwrap();
                assert!(!kept.is_empty(), "{path}");
                notices += 1;
            }
        }
    }
    assert!(
        notices > 0,
        "the last request names cleared results' spill files"
    );
    let latest = messages.last().unwrap()["content"].as_array().unwrap();
    assert_eq!(latest.len(), 2);
    assert!(
        latest.iter().all(|block| block["type"] == "tool_result"
            && !block["content"].to_string().contains(prefix))
    );
}

#[test]
fn a_never_spilled_result_is_spilled_when_cleared() {
    let spill = tempdir::Dir::new("clear-spills");
    // A budget the over-budget tool's 300 KB fit, so nothing is cut or spilled when it lands.
    let mut options = ServerOptions::default();
    options.budget = 1_000_000;
    let mut config = config(vec![demo_server("demo", options)], &spill);
    config.context_window = 10_000_000;
    let call = || json!({"tool_calls": [{"server": "demo", "name": "over-budget"}]});
    // A request carrying one result, then a window with no room for two.
    let (probe, _) = play_calls(&config, json!([call()]));
    config.context_window = probe.rounds[1].projected_tokens + 1_000;
    let (host, bodies) = play_calls(&config, json!([call(), call(), call()]));
    assert!(
        host.calls.iter().all(|c| c.spill.is_none()),
        "no result was cut"
    );
    // The notice names the new spill by the id read_result takes (the config's wording).
    let last = bodies.last().unwrap().to_string();
    let prefix =
        r#"[tool result cleared to fit the context window; read it with read_result(\"spill_"#;
    let at = last
        .find(prefix)
        .expect("a cleared result in the last request");
    let id: String = last[at + prefix.len()..]
        .chars()
        .take_while(char::is_ascii_lowercase)
        .collect();
    let text = host.calls[0].output.stored.clone();
    let path = spill.path().join(format!("spill_{id}.txt"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn no_request_body_passes_the_route_limit() {
    let spill = tempdir::Dir::new("body-limit");
    // Results of about 300 KB that fit their budget, so only the body limit holds them.
    let mut options = ServerOptions::default();
    options.budget = 1_000_000;
    let mut config = config(vec![demo_server("demo", options)], &spill);
    config.context_window = 10_000_000;
    config.route.body_bytes = Some(1_000_000);
    let call = || json!({"tool_calls": [{"server": "demo", "name": "over-budget"}]});
    for route in [
        &PricedRoute::ANTHROPIC,
        &PricedRoute::TEXT_ONLY,
        &PricedRoute::OPENAI_CHAT,
    ] {
        let script =
            json!({"steps": [call(), call(), call(), call(), call(), call()], "final": "done"});
        let mut model = Scripted::from_slice(script.to_string().as_bytes()).unwrap();
        let mut host = Host::start(&config, HostOptions::new(route, &config));
        let mut transcript = Vec::new();
        let outcome = host.run(&mut model, "Call.", Some(&mut transcript));
        assert_eq!(outcome.unwrap().rounds, 7, "{}", route.id());
        let lines: Vec<&[u8]> = transcript
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(lines.len(), 7);
        assert!(
            lines.iter().all(|line| line.len() <= 1_000_000),
            "{}",
            route.id()
        );
        // Without the limit the last body would carry all six results.
        assert!(lines.last().unwrap().len() > 300_000);
        assert!(
            host.rounds
                .iter()
                .flat_map(|r| &r.diagnostics)
                .any(|d| d.ends_with("to keep the request body within 1000000 bytes")),
            "{}",
            route.id()
        );
    }
    // The latest round alone over the limit: the request is not sent.
    config.route.body_bytes = Some(100_000);
    let (host, outcome, bodies) = play(
        &config,
        &PricedRoute::ANTHROPIC,
        &[&[("demo", "over-budget")]],
    );
    let error = outcome.unwrap_err().to_string();
    assert!(
        error.starts_with("the next request's body would be "),
        "{error}"
    );
    assert!(
        error.ends_with("bytes; the route takes at most 100000 (round 2)"),
        "{error}"
    );
    assert_eq!(bodies.len(), 1);
    assert_eq!(host.rounds.len(), 1);
}
