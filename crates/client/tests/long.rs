//! Long calls against a scripted stdio server: a task polled within bounds and cancelled at the
//! call's deadline, a task that answers for another, one that asks for input; progress that
//! keeps a call alive, progress that does not advance, and a flood of it.

#![cfg(unix)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpl_client::{
    Call, CallError, Connection, Launch, Limits, MIN_POLL_INTERVAL, Notice, PROGRESS_GAP, RefuseAll,
};
use serde_json::{Value, json};

/// The server in `mode`, its log, and the notices it caused.
struct Long {
    connection: Connection,
    log: PathBuf,
    notices: Arc<Mutex<Vec<Notice>>>,
}

impl Long {
    fn start(mode: &str) -> Long {
        let dir =
            std::env::temp_dir().join(format!("mcpl-client-long-{mode}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("input.jsonl");
        let server =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/long_server.py");
        let launch = Launch::stdio(
            "long",
            "python3",
            vec![
                server.display().to_string(),
                mode.to_owned(),
                log.display().to_string(),
            ],
        );
        let mut connection = Connection::start(
            &launch,
            Limits::with_timeout(Duration::from_secs(10)),
            &mut RefuseAll,
        )
        .unwrap();
        let notices = Arc::new(Mutex::new(Vec::new()));
        let held = Arc::clone(&notices);
        connection.set_observer(Arc::new(move |notice: &Notice| {
            held.lock().unwrap().push(notice.clone())
        }));
        Long {
            connection,
            log,
            notices,
        }
    }

    fn call(&mut self, timeout_ms: u64, total_ms: u64) -> Result<Value, CallError> {
        let call = Call::new(
            "tools/call",
            json!({"name": "long"}),
            Duration::from_millis(timeout_ms),
        )
        .with_total(Duration::from_millis(total_ms));
        self.connection
            .request_all(vec![call], 1, &mut RefuseAll)
            .pop()
            .unwrap()
    }

    /// Every message the server read, once it has read `method` (or after a second).
    fn read(&self, method: &str) -> Vec<Value> {
        let until = Instant::now() + Duration::from_secs(1);
        loop {
            let lines: Vec<Value> = std::fs::read_to_string(&self.log)
                .unwrap_or_default()
                .lines()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect();
            if lines.iter().any(|m| m["method"] == method) || Instant::now() > until {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn notices(&self) -> Vec<Notice> {
        self.notices.lock().unwrap().clone()
    }
}

fn count(lines: &[Value], method: &str) -> usize {
    lines.iter().filter(|m| m["method"] == method).count()
}

#[test]
fn the_tasks_extension_is_declared_and_each_call_asks_for_progress() {
    let mut long = Long::start("progress");
    long.call(5_000, 10_000).unwrap();
    let lines = long.read("tools/call");
    let initialize = lines.iter().find(|m| m["method"] == "initialize").unwrap();
    assert_eq!(
        initialize["params"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    let call = lines.iter().find(|m| m["method"] == "tools/call").unwrap();
    assert_eq!(call["params"]["_meta"]["progressToken"], call["id"]);
}

#[test]
fn a_task_that_never_finishes_is_polled_within_bounds_and_cancelled_at_the_deadline() {
    let mut long = Long::start("forever");
    let started = Instant::now();
    let error = long.call(5_000, 1_000).unwrap_err();
    let took = started.elapsed();
    assert!(matches!(error, CallError::Deadline { .. }), "{error}");
    assert!(
        error.to_string().contains("within 1000 ms in all"),
        "{error}"
    );
    assert!(took < Duration::from_secs(3), "gave up after {took:?}");
    let lines = long.read("tasks/cancel");
    let polls = count(&lines, "tasks/get");
    // The server suggests 0 ms: polls stay at least MIN_POLL_INTERVAL apart.
    let most = (1_000 / MIN_POLL_INTERVAL.as_millis()) as usize + 1;
    assert!((2..=most).contains(&polls), "{polls} polls in a second");
    let cancel = lines
        .iter()
        .find(|m| m["method"] == "tasks/cancel")
        .unwrap();
    assert_eq!(cancel["params"], json!({"taskId": "t-1"}));
    let shown = long.notices();
    assert!(
        matches!(&shown[0], Notice::Task { task_id, status, .. } if task_id == "t-1" && status == "working"),
        "{shown:?}"
    );
}

#[test]
fn a_task_that_answers_for_another_fails_in_words_and_is_cancelled() {
    let mut long = Long::start("other-id");
    let error = long.call(5_000, 10_000).unwrap_err();
    assert!(matches!(error, CallError::Task { .. }), "{error}");
    assert!(error.to_string().contains("another task"), "{error}");
    let lines = long.read("tasks/cancel");
    assert_eq!(count(&lines, "tasks/cancel"), 1);
}

#[test]
fn a_task_that_asks_for_input_gets_it_and_its_result_is_fetched() {
    let mut long = Long::start("input");
    let result = long.call(5_000, 10_000).unwrap();
    assert_eq!(result["content"][0]["text"], "the task's result");
    let lines = long.read("tasks/result");
    let update = lines
        .iter()
        .find(|m| m["method"] == "tasks/update")
        .unwrap();
    assert_eq!(update["params"]["taskId"], "t-1");
    assert!(
        update["params"]["inputResponses"]["confirm"].is_object(),
        "{update}"
    );
    let statuses: Vec<String> = long
        .notices()
        .iter()
        .filter_map(|n| match n {
            Notice::Task { status, .. } => Some(status.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(statuses, ["working", "input_required", "completed"]);
}

#[test]
fn progress_keeps_a_call_past_its_idle_timeout_within_its_total() {
    let mut long = Long::start("progress");
    // Six notifications 100 ms apart: each restarts the 250 ms idle time.
    let result = long.call(250, 5_000).unwrap();
    assert_eq!(result["content"][0]["text"], "done");
    let shown = long.notices();
    assert!(!shown.is_empty() && shown.len() <= 6, "{shown:?}");
    assert_eq!(
        shown.last().unwrap().to_string(),
        r#"progress long/long: 6/6 "step 6""#,
        "the last progress is always shown"
    );
    // The same progress with a total under its length gives up at the total.
    let mut long = Long::start("progress");
    let error = long.call(250, 400).unwrap_err();
    assert!(matches!(error, CallError::Deadline { .. }), "{error}");
}

#[test]
fn progress_that_does_not_advance_does_not_keep_a_call() {
    let mut long = Long::start("stuck");
    let error = long.call(250, 5_000).unwrap_err();
    assert!(matches!(error, CallError::Timeout { .. }), "{error}");
    assert_eq!(long.notices().len(), 1, "a repeat is not shown");
}

#[test]
fn a_flood_of_progress_is_shown_a_few_times() {
    let mut long = Long::start("flood");
    let started = Instant::now();
    long.call(5_000, 30_000).unwrap();
    let most = (started.elapsed().as_millis() / PROGRESS_GAP.as_millis()) as usize + 2;
    let shown = long.notices().len();
    assert!(
        (1..=most).contains(&shown),
        "{shown} notices for 20,000 notifications"
    );
}

/// Calls each tool the `v1*` server lists, after listing them; returns each call's text and
/// the `tools/call` messages the server read.
fn call_each_listed_tool(mode: &str) -> (Vec<String>, Vec<Value>) {
    let mut long = Long::start(mode);
    let list = Call::new("tools/list", json!({}), Duration::from_secs(5));
    long.connection
        .request_all(vec![list], 1, &mut RefuseAll)
        .pop()
        .unwrap()
        .unwrap();
    let names = ["required", "optional", "forbidden", "odd", "plain"];
    let mut texts = Vec::new();
    for name in names {
        let call = Call::new(
            "tools/call",
            json!({"name": name, "arguments": {}}),
            Duration::from_secs(5),
        )
        .with_total(Duration::from_secs(7));
        let result = long
            .connection
            .request_all(vec![call], 1, &mut RefuseAll)
            .pop()
            .unwrap()
            .unwrap();
        texts.push(result["content"][0]["text"].as_str().unwrap().to_owned());
    }
    let lines = long.read("tools/call");
    let initialize = lines.iter().find(|m| m["method"] == "initialize").unwrap();
    // Revision 2025-11-25's client tasks capability, with no task requests received.
    assert_eq!(initialize["params"]["capabilities"]["tasks"], json!({}));
    let calls = lines
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .cloned()
        .collect();
    (texts, calls)
}

#[test]
fn at_2025_11_25_only_tools_listed_with_task_support_are_called_with_a_task() {
    let (texts, calls) = call_each_listed_tool("v1");
    assert_eq!(calls.len(), 5);
    for call in &calls {
        let name = call["params"]["name"].as_str().unwrap();
        let task = &call["params"]["task"];
        if name == "required" || name == "optional" {
            // The ttl asked for is the call's total time.
            assert_eq!(task, &json!({"ttl": 7000}), "{name}");
        } else {
            assert!(task.is_null(), "{name} was sent {task}");
        }
    }
    // The two task calls were polled and their results fetched with tasks/result.
    assert_eq!(
        texts,
        [
            "the task's result",
            "the task's result",
            "plain",
            "plain",
            "plain"
        ]
    );
}

#[test]
fn at_2025_11_25_no_task_is_asked_of_a_server_without_task_calls() {
    let (texts, calls) = call_each_listed_tool("v1-nocap");
    assert!(
        calls.iter().all(|c| c["params"].get("task").is_none()),
        "{calls:?}"
    );
    assert_eq!(texts, ["plain"; 5]);
}
