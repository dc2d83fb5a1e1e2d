//! An interrupted run cancels a call's task with `tasks/cancel`. A test binary of its own, as
//! the interruption is process-wide.

#![cfg(unix)]

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mcpl_client::{Call, CallError, Connection, Launch, Limits, RefuseAll, interruption};
use serde_json::{Value, json};

#[test]
fn an_interrupted_task_is_cancelled_at_its_server() {
    let dir = std::env::temp_dir().join(format!("mcpl-client-interrupt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("input.jsonl");
    let server = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/long_server.py");
    let launch = Launch::stdio(
        "long",
        "python3",
        vec![
            server.display().to_string(),
            "forever".to_owned(),
            log.display().to_string(),
        ],
    );
    let mut connection = Connection::start(
        &launch,
        Limits::with_timeout(Duration::from_secs(10)),
        &mut RefuseAll,
    )
    .unwrap();
    let interrupter = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(400));
        interruption().store(true, Ordering::Relaxed);
    });
    let call = Call::new(
        "tools/call",
        json!({"name": "long"}),
        Duration::from_secs(10),
    )
    .with_total(Duration::from_secs(30));
    let error = connection
        .request_all(vec![call], 1, &mut RefuseAll)
        .pop()
        .unwrap()
        .unwrap_err();
    interrupter.join().unwrap();
    assert!(matches!(error, CallError::Interrupted { .. }), "{error}");
    let until = Instant::now() + Duration::from_secs(2);
    let cancelled = loop {
        let lines: Vec<Value> = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        if let Some(cancel) = lines.iter().find(|m| m["method"] == "tasks/cancel") {
            break cancel.clone();
        }
        assert!(Instant::now() < until, "no tasks/cancel in {lines:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(cancelled["params"], json!({"taskId": "t-1"}));
    let _ = std::fs::remove_dir_all(&dir);
}
