//! The session: initialize, notifications, tools/list, resources, injections, errors.

use serde_json::{Value, json};

use crate::client::{Server, decode};

const TOOL_NAMES: [&str; 37] = [
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
    "crash",
    "hang",
    "garbage",
    "slow",
    "weather-schema",
    "weather-mismatch",
    "audience",
    "sized-log",
    "task",
    "task-forever",
    "progress",
    "change-tools",
    "look",
];

#[test]
fn skills_are_listed_and_their_files_read_as_resources() {
    let mut server = Server::start_with(&[]);
    let answer = server.request("skills/list", json!({}));
    let skills = answer["result"]["skills"].as_array().unwrap();
    let names: Vec<&Value> = skills.iter().map(|s| &s["frontmatter"]["name"]).collect();
    assert_eq!(names, ["chart-reading", "csv-report"]);
    for skill in skills {
        for file in skill["resources"].as_array().unwrap() {
            let read = server.request("resources/read", json!({"uri": file["uri"]}));
            assert_eq!(read["result"]["contents"][0]["uri"], file["uri"]);
        }
    }
    let image = server.request(
        "resources/read",
        json!({"uri": "skill://mcpl-demo/chart-reading/examples/chart.png"}),
    );
    assert_eq!(image["result"]["contents"][0]["mimeType"], "image/png");
}

#[test]
fn initialize_echoes_the_version_and_offers_mcpl() {
    let mut server = Server::start_with(&[]);
    let answer = server.request("initialize", json!({"protocolVersion": "2024-11-05"}));
    let result = &answer["result"];
    assert_eq!(result["protocolVersion"], "2024-11-05");
    assert_eq!(result["serverInfo"]["name"], "mcpl-demo");
    assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(
        result["instructions"]
            .as_str()
            .unwrap()
            .contains("sized-log")
    );
    assert_eq!(
        result["capabilities"],
        json!({
            "tools": {},
            "resources": {},
            "extensions": {"io.modelcontextprotocol/skills": {}, "io.modelcontextprotocol/tasks": {}},
            "experimental": {"mcpl": {
                "pushEvents": {},
                "channels": {},
                "contextHooks": {"beforeInference": {}},
            }},
        })
    );
}

#[test]
fn the_name_option_names_the_server() {
    let mut server = Server::start_with(&["--name", "other"]);
    let answer = server.request("initialize", json!({}));
    assert_eq!(answer["result"]["serverInfo"]["name"], "other");
    assert!(answer["result"]["protocolVersion"].is_string());
}

#[test]
fn notifications_get_no_answer() {
    let mut server = Server::start();
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}),
    );
    // The next line is the ping's answer, so neither notification was answered.
    let answer = server.request("ping", json!({}));
    assert_eq!(answer["result"], json!({}));
}

#[test]
fn tools_list_describes_every_tool() {
    let mut server = Server::start();
    let answer = server.request("tools/list", json!({}));
    let tools = answer["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOL_NAMES);
    for tool in tools {
        assert!(tool["description"].as_str().unwrap().len() > 20, "{tool}");
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }
    let slow = tools.iter().find(|t| t["name"] == "slow").unwrap();
    assert_eq!(slow["inputSchema"]["properties"]["ms"]["type"], "integer");
    let sized = tools.iter().find(|t| t["name"] == "sized-log").unwrap();
    assert_eq!(sized["_meta"]["anthropic/maxResultSizeChars"], 100_000);
    let mismatch = tools
        .iter()
        .find(|t| t["name"] == "weather-mismatch")
        .unwrap();
    assert_eq!(
        mismatch["outputSchema"]["properties"]["temperatureC"]["type"],
        "number"
    );
}

#[test]
fn the_declaring_tools_answer_as_they_say() {
    let mut server = Server::start();
    let mismatch = server.call("weather-mismatch", json!({}));
    assert_eq!(mismatch["structuredContent"]["temperatureC"], "warm");
    let audience = server.call("audience", json!({}));
    assert_eq!(
        audience["content"][1]["annotations"]["audience"],
        json!(["user"])
    );
    assert_eq!(
        audience["content"][2]["annotations"]["audience"],
        json!(["assistant"])
    );
    let log = server.call("sized-log", json!({}));
    let chars = log["content"][0]["text"].as_str().unwrap().chars().count();
    assert!((60_000..100_000).contains(&chars), "{chars}");
}

#[test]
fn change_tools_says_the_list_changed_and_the_next_listing_adds_a_tool() {
    let mut server = Server::start();
    let id = server.send_request(
        "tools/call",
        json!({"name": "change-tools", "arguments": {"times": 2}}),
    );
    for _ in 0..2 {
        assert_eq!(server.next()["method"], "notifications/tools/list_changed");
    }
    assert_eq!(server.next()["id"], id);
    let answer = server.request("tools/list", json!({}));
    let tools = answer["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.last().unwrap()["name"], "added-tool");
    let read_only: Vec<&Value> = (tools.iter())
        .filter(|t| t["annotations"]["readOnlyHint"] == true)
        .map(|t| &t["name"])
        .collect();
    assert_eq!(read_only, [&json!("text"), &json!("look")]);
    let result = server.call("added-tool", json!({}));
    assert_eq!(
        result["content"][0]["text"],
        "added-tool answered; tools/list was answered once"
    );
}

#[test]
fn every_listed_resource_reads_back_and_matches_what_tools_embed() {
    let mut server = Server::start();
    let answer = server.request("resources/list", json!({}));
    let resources = answer["result"]["resources"].as_array().unwrap().clone();
    let uris: Vec<&str> = resources
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            "demo://notes/readme.md",
            "demo://files/report.csv",
            "demo://images/image.png",
            "demo://docs/document.pdf",
            "demo://blobs/untyped",
            "demo://notes/both.txt",
        ]
    );
    for listed in &resources {
        let read = server.request("resources/read", json!({"uri": listed["uri"]}));
        let contents = read["result"]["contents"].as_array().unwrap();
        assert_eq!(contents.len(), 1);
        let contents = &contents[0];
        assert_eq!(contents["uri"], listed["uri"]);
        assert_eq!(contents.get("mimeType"), listed.get("mimeType"));
        let size = match (contents.get("text"), contents.get("blob")) {
            (_, Some(blob)) => decode(blob).len(),
            (Some(Value::String(text)), None) => text.len(),
            other => panic!("no contents: {other:?}"),
        };
        assert_eq!(listed["size"], size, "{listed}");
    }
    for (tool, uri) in [
        ("embedded-text", "demo://notes/readme.md"),
        ("embedded-image", "demo://images/image.png"),
        ("pdf", "demo://docs/document.pdf"),
        ("untyped-blob", "demo://blobs/untyped"),
        ("text-and-blob", "demo://notes/both.txt"),
    ] {
        let embedded = server.call(tool, json!({}))["content"][0]["resource"].clone();
        let read = server.request("resources/read", json!({"uri": uri}));
        assert_eq!(read["result"]["contents"][0], embedded, "{tool}");
    }
}

#[test]
fn reading_what_the_server_does_not_have_is_an_error() {
    let mut server = Server::start();
    let answer = server.request("resources/read", json!({"uri": "demo://nowhere"}));
    assert_eq!(answer["error"]["code"], -32002);
    assert_eq!(answer["error"]["data"]["uri"], "demo://nowhere");
    let answer = server.request("resources/read", json!({}));
    assert_eq!(answer["error"]["code"], -32602);
}

#[test]
fn before_inference_injects_at_each_position() {
    let mut server = Server::start();
    let answer = server.request("context/beforeInference", json!({"messages": []}));
    let injections = answer["result"]["contextInjections"].as_array().unwrap();
    let positions: Vec<&str> = injections
        .iter()
        .map(|i| i["position"].as_str().unwrap())
        .collect();
    assert_eq!(positions, ["system", "beforeUser", "afterUser"]);
    assert!(
        injections[0]["content"]
            .as_str()
            .unwrap()
            .contains("demo server")
    );
    assert_eq!(injections[1]["content"][0]["type"], "text");
    assert_eq!(injections[2]["content"][0]["type"], "text");
    assert_eq!(
        injections[2]["content"][1],
        json!({
            "type": "resource",
            "uri": "https://files.demo.example/brief.pdf?token=demo-secret",
            "name": "brief.pdf",
            "mimeType": "application/pdf",
            "sizeBytes": 20480,
            "disposition": "ref",
        })
    );
}

#[test]
fn unknown_methods_tools_and_lines_are_errors_and_the_session_goes_on() {
    let mut server = Server::start();
    let answer = server.request("sampling/createMessage", json!({}));
    assert_eq!(answer["error"]["code"], -32601);
    assert!(answer.get("result").is_none());

    let answer = server.request("tools/call", json!({"name": "no-such-tool"}));
    assert_eq!(answer["error"]["code"], -32602);

    server.send_line("{not json");
    let answer = server.next();
    assert_eq!(answer["error"]["code"], -32700);
    assert_eq!(answer["id"], Value::Null);

    server.send_line("[1, 2]");
    assert_eq!(server.next()["error"]["code"], -32600);

    assert_eq!(server.call("text", json!({}))["content"][0]["type"], "text");
}

#[test]
fn string_ids_come_back_as_they_went() {
    let mut server = Server::start();
    server.send(&json!({"jsonrpc": "2.0", "id": "abc", "method": "ping"}));
    assert_eq!(server.next()["id"], "abc");
}

#[test]
fn closing_stdin_ends_the_server_with_status_0() {
    let mut server = Server::start();
    server.call("text", json!({}));
    let status = server.close();
    assert_eq!(status.code(), Some(0));
}

/// A session whose client declared the tasks extension.
fn with_tasks() -> Server {
    let mut server = Server::start_with(&[]);
    let init = server.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25",
            "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    server
}

#[test]
fn task_answers_with_a_task_done_after_three_polls() {
    let mut server = with_tasks();
    let task = server.call("task", json!({}));
    assert_eq!(task["resultType"], "task");
    assert_eq!(task["taskId"], "task-1");
    assert_eq!(task["pollIntervalMs"], 100);
    let get = |server: &mut Server| {
        server.request("tasks/get", json!({"taskId": "task-1"}))["result"].clone()
    };
    assert_eq!(get(&mut server)["statusMessage"], "step 1 of 3");
    assert_eq!(get(&mut server)["status"], "working");
    let done = get(&mut server);
    assert_eq!(done["status"], "completed");
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("42 rows")
    );
    let unknown = server.request("tasks/get", json!({"taskId": "nope"}));
    assert_eq!(unknown["error"]["code"], -32602);
}

#[test]
fn task_forever_works_until_cancelled_and_tasks_need_the_extension() {
    let mut server = with_tasks();
    server.call("task-forever", json!({}));
    let get = server.request("tasks/get", json!({"taskId": "task-1"}));
    assert_eq!(get["result"]["status"], "working");
    let cancel = server.request("tasks/cancel", json!({"taskId": "task-1"}));
    assert_eq!(cancel["result"], json!({"resultType": "complete"}));
    let get = server.request("tasks/get", json!({"taskId": "task-1"}));
    assert_eq!(get["result"]["status"], "cancelled");
    // Without the extension, the tool answers at once.
    let mut plain = Server::start();
    let result = plain.call("task-forever", json!({}));
    assert!(
        result.get("taskId").is_none() && result["content"].is_array(),
        "{result}"
    );
}

#[test]
fn progress_sends_notifications_for_a_token_then_answers() {
    let mut server = Server::start();
    let id = server.send_request(
        "tools/call",
        json!({"name": "progress", "arguments": {"steps": 3, "everyMs": 0},
            "_meta": {"progressToken": "p-1"}}),
    );
    for step in 1..=3 {
        let note = server.next();
        assert_eq!(note["method"], "notifications/progress");
        assert_eq!(note["params"]["progressToken"], "p-1");
        assert_eq!(note["params"]["progress"], step);
        assert_eq!(note["params"]["total"], 3);
    }
    let answer = server.next();
    assert_eq!(answer["id"], id);
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "Done after 3 steps, 0 ms apart."
    );
}
