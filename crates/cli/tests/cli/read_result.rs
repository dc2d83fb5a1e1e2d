//! `read_result` in `mcpl run`: a scripted model reads a cut result back to its last byte, a
//! second process of the same conversation reads the first one's spill, and another
//! conversation is refused. The same tests run against an S3-compatible server when
//! `MCPL_S3_ENDPOINT` names one (`.ci/run` starts moto's).

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::mcpl;

/// A fresh bucket on the S3-compatible server, when there is one.
fn s3(name: &str) -> Option<Store> {
    let endpoint = mcpl_testkit::s3_endpoint()?;
    let bucket = format!("mcpl-cli-{name}-{}", std::process::id());
    mcpl_testkit::create_bucket(&endpoint, &bucket);
    Some(Store::S3 { endpoint, bucket })
}

/// The text with every spill id in it made `spill_<id>`.
fn without_ids(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("spill_") {
        out.push_str(&rest[..at + 6]);
        rest = &rest[at + 6..];
        let id = rest.bytes().take_while(u8::is_ascii_lowercase).count();
        if id == 28 {
            out.push_str("<id>");
            rest = &rest[id..];
        }
    }
    out.push_str(rest);
    out
}

/// Where a test's spills go.
#[derive(Clone)]
pub(crate) enum Store {
    /// The local folder `spill` in the test's scratch folder.
    Local,
    /// A bucket on the S3-compatible server at the endpoint.
    S3 { endpoint: String, bucket: String },
}

/// A folder of its own for one test, removed when the test ends.
pub(crate) struct Scratch(pub(crate) PathBuf);

impl Scratch {
    pub(crate) fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("mcpl-cli-read-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub(crate) fn write(&self, name: &str, value: &Value) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, value.to_string()).unwrap();
        path
    }

    /// A configuration with the demo server as `demo` (budget 6,000), spilling to `store`.
    pub(crate) fn config(&self, store: &Store, notice: &str) -> PathBuf {
        let mut host = json!({
            "spillDir": self.0.join("spill"),
            "contextWindow": 10_000_000,
            "spillNotice": notice,
        });
        if let Store::S3 { endpoint, bucket } = store {
            host["spillStore"] =
                json!({"type": "s3", "bucket": bucket, "prefix": "runs/", "endpoint": endpoint});
        }
        self.write(
            "config.json",
            &json!({
                "mcpServers": {"demo": {"command": env!("CARGO_BIN_EXE_mcpl"), "args": ["serve-demo"],
                                        "mcpl": {"budget": 6000}}},
                "mcpl": host,
            }),
        )
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `mcpl run` with a script, a transcript and a conversation id; the S3 server's test
/// credentials in its environment.
pub(crate) fn run(
    scratch: &Scratch,
    config: &Path,
    script: &Value,
    conversation: &str,
) -> (Output, Vec<Value>) {
    let script = scratch.write(&format!("script-{conversation}.json"), script);
    let transcript = scratch.0.join(format!("transcript-{conversation}.jsonl"));
    let model = format!("scripted:{}", script.display());
    let args = [
        "run",
        "--config",
        config.to_str().unwrap(),
        "--model",
        &model,
        "--transcript",
        transcript.to_str().unwrap(),
        "--conversation",
        conversation,
    ];
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcpl"))
        .args(args)
        .envs(mcpl_testkit::S3_TEST_ENV)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let bodies = std::fs::read_to_string(&transcript)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (output, bodies)
}

/// The content of the `tool_result` answering `id` in a Messages API body.
pub(crate) fn tool_result<'a>(body: &'a Value, id: &str) -> Option<&'a Value> {
    body["messages"]
        .as_array()?
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == id)
        .map(|b| &b["content"])
}

/// A `read_result` answer as the model got it, split into the spill's text and the footer:
/// one text (the part and its footer on the last line), or native blocks (the footer last).
pub(crate) fn part_of(content: &Value) -> (String, String) {
    let texts: Vec<&str> = match content {
        Value::String(text) => vec![text.as_str()],
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        other => panic!("not a tool result's content: {other}"),
    };
    match texts.as_slice() {
        [one] if one.starts_with("[read_result: bytes ") => (String::new(), (*one).to_owned()),
        [one] => {
            let at = one.rfind("\n[read_result: bytes ").expect("a footer");
            (one[..at].to_owned(), one[at + 1..].to_owned())
        }
        [body @ .., footer] => (body.concat(), (*footer).to_owned()),
        [] => panic!("no text in {content}"),
    }
}

/// The script: the over-budget tool, then `reads` calls of `read_result` that each continue
/// where the last part ended.
pub(crate) fn read_script(reads: usize) -> Value {
    let read = json!({"tool_calls": [{"name": "read_result", "arguments":
        {"id": "{{last_spill}}", "offset": "{{next_offset}}", "max_tokens": 12_500}}]});
    let mut steps = vec![json!({"tool_calls": [{"server": "demo", "name": "over-budget"}]})];
    steps.extend(std::iter::repeat_n(read, reads));
    json!({"steps": steps, "final": "read"})
}

/// The spill id a cut result's notice names, and the notice.
pub(crate) fn notice_in(bodies: &[Value]) -> (String, String) {
    let first = part_text(tool_result(&bodies[1], "call_1").expect("the cut result"));
    let notice = first
        .lines()
        .find(|line| line.starts_with("[… "))
        .expect("a notice")
        .to_owned();
    let at = notice
        .find("read_result(\"")
        .expect("read_result in the notice")
        + 13;
    (notice[at..at + 34].to_owned(), notice)
}

pub(crate) fn part_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => panic!("{other}"),
    }
}

/// Reads a cut result back through `read_result` in parts, and checks the parts add up to the
/// whole spill text, byte for byte, ending with the demo tool's last line.
pub(crate) fn reads_back_to_the_last_byte(store: &Store, name: &str) -> String {
    let scratch = Scratch::new(name);
    let config = scratch.config(store, "read_result");
    // Each part is held to the demo server's budget of 6,000, whatever max_tokens asks.
    let reads = 45;
    let (output, bodies) = run(&scratch, &config, &read_script(reads), "conversation-one");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let (id, notice) = notice_in(&bodies);
    assert!(
        notice.ends_with(&format!(
            " images); read the rest with read_result(\"{id}\")]"
        )),
        "{notice}"
    );
    assert!(
        !notice.contains(&scratch.0.display().to_string()),
        "{notice}"
    );
    let mut whole = String::new();
    let mut images = 0;
    let mut ended = false;
    for k in 0..reads {
        let call = format!("call_{}", k + 2);
        // The round after the call carries its live copy: images as images.
        let content = tool_result(&bodies[k + 2], &call).expect("the read's result");
        images += content.as_array().map_or(0, |blocks| {
            blocks.iter().filter(|b| b["type"] == "image").count()
        });
        let (text, footer) = part_of(content);
        let sent: u64 = content.as_array().map_or(0, |blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .map(|t| mcpl_budget::TokenEstimator::count(&mcpl_budget::O200k, t))
                .sum()
        });
        assert!(
            sent <= 6_000,
            "part {k}: {sent} o200k tokens of text over the server's 6,000"
        );
        let start = whole.len();
        whole.push_str(&text);
        if ended {
            assert_eq!(text, "", "nothing after the end");
            continue;
        }
        let expected_end = if footer.contains("that is the end") {
            ended = true;
            format!(
                "[read_result: bytes {start}–{} of {}; that is the end of {id}]",
                whole.len(),
                whole.len()
            )
        } else {
            let end = whole.len();
            format!("[read_result: bytes {start}–{end} of ")
        };
        assert!(
            footer.starts_with(&expected_end),
            "{footer} / {expected_end}"
        );
    }
    assert!(ended, "the last part was read");
    assert_eq!(images, 1, "the demo's image came back as an image");
    assert!(
        whole.ends_with("\nEnd of log: 3600 lines, 0 errors."),
        "{}",
        &whole[whole.len() - 200..]
    );
    if let Store::Local = store {
        let spilled = std::fs::read(scratch.0.join("spill").join(format!("{id}.txt"))).unwrap();
        assert_eq!(whole.as_bytes(), spilled.as_slice());
    }
    whole
}

#[test]
fn a_scripted_model_reads_a_cut_result_back_to_its_last_byte() {
    let whole = reads_back_to_the_last_byte(&Store::Local, "local");
    assert!(whole.len() > 200_000, "{} bytes", whole.len());
}

/// One process makes a spill; a second process of the same conversation reads it back whole;
/// a third, of another conversation, is refused.
pub(crate) fn another_process_reads_the_spill(store: &Store, name: &str) {
    let scratch = Scratch::new(name);
    let config = scratch.config(store, "read_result");
    let first = json!({"steps": [{"tool_calls": [{"server": "demo", "name": "over-budget"}]}],
                       "final": "cut"});
    let (output, bodies) = run(&scratch, &config, &first, "shared");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (id, _) = notice_in(&bodies);
    let read = |offset: u64| {
        json!({"tool_calls": [{"name": "read_result",
        "arguments": {"id": id, "offset": offset, "max_tokens": 500}}]})
    };
    let second = json!({"steps": [read(0)], "final": "read"});
    let (output, bodies) = run(&scratch, &config, &second, "shared");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (text, footer) = part_of(tool_result(&bodies[1], "call_1").unwrap());
    assert!(
        text.starts_with("00001 2025-01-01T00:00:01Z INFO"),
        "{text}"
    );
    assert!(
        footer.starts_with(&format!("[read_result: bytes 0–{} of ", text.len())),
        "{footer}"
    );
    let (output, bodies) = run(&scratch, &config, &second, "another");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        tool_result(&bodies[1], "call_1").unwrap(),
        &json!([{"type": "text", "text": format!(
            "read_result: spill {id} was made in another conversation; it cannot be read here"
        )}])
    );
}

#[test]
fn a_spill_is_read_back_by_another_process_of_its_conversation_only() {
    another_process_reads_the_spill(&Store::Local, "local-two");
}

#[test]
fn the_path_wording_stays_available() {
    let scratch = Scratch::new("path");
    let config = scratch.config(&Store::Local, "path");
    let script = json!({"steps": [{"tool_calls": [{"server": "demo", "name": "over-budget"}]}],
                        "final": "cut"});
    let (output, bodies) = run(&scratch, &config, &script, "paths");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = part_text(tool_result(&bodies[1], "call_1").unwrap());
    let notice = text.lines().find(|l| l.starts_with("[… ")).unwrap();
    let folder = scratch.0.join("spill").display().to_string();
    assert!(
        notice.contains(&format!("; the full result is in {folder}/spill_")),
        "{notice}"
    );
    assert!(notice.ends_with(".txt]"), "{notice}");
}

#[test]
fn a_scripted_model_reads_a_cut_result_back_from_the_object_store() {
    let Some(store) = s3("read") else {
        return;
    };
    let remote = reads_back_to_the_last_byte(&store, "s3");
    // The local run's text is the spill file byte for byte; the object store's is the same.
    let local = reads_back_to_the_last_byte(&Store::Local, "s3-local");
    assert_eq!(without_ids(&remote), without_ids(&local));
}

#[test]
fn a_spill_in_the_object_store_is_read_back_by_another_process_of_its_conversation_only() {
    let Some(store) = s3("two") else {
        return;
    };
    another_process_reads_the_spill(&store, "s3-two");
}

#[test]
fn a_bucket_that_refuses_writes_still_holds_the_budget_in_a_run() {
    let Some(Store::S3 { endpoint, .. }) = s3("refuses") else {
        return;
    };
    let store = Store::S3 {
        endpoint,
        bucket: "mcpl-cli-no-such-bucket".to_owned(),
    };
    let scratch = Scratch::new("refuses");
    let config = scratch.config(&store, "read_result");
    let script = json!({"steps": [{"tool_calls": [{"server": "demo", "name": "over-budget"}]}],
                        "final": "cut"});
    let (output, bodies) = run(&scratch, &config, &script, "refused");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("spilled to"), "{stderr}");
    // stderr says it too, on the call's line.
    assert!(
        stderr.contains("mcpl: round 1 demo__over-budget: ")
            && stderr.contains(", cut but not spilled: spill store s3://mcpl-cli-no-such-bucket/"),
        "{stderr}"
    );
    // The spill failed, and the result is cut to its budget all the same; its notice says the
    // whole could not be kept, and why.
    let text = part_text(tool_result(&bodies[1], "call_1").unwrap());
    assert!(text.contains(" tokens omitted ("), "cut: {text}");
    assert!(
        text.contains("; the whole could not be kept: spill store s3://mcpl-cli-no-such-bucket/"),
        "{text}"
    );
    assert!(
        text.ends_with("End of log: 3600 lines, 0 errors."),
        "its tail: {text}"
    );
}

#[test]
fn spill_gc_removes_the_spills_older_than_the_ttl() {
    let scratch = Scratch::new("gc");
    let config = scratch.config(&Store::Local, "read_result");
    let script = json!({"steps": [{"tool_calls": [{"server": "demo", "name": "over-budget"}]}],
                        "final": "cut"});
    let (output, _) = run(&scratch, &config, &script, "gc");
    assert_eq!(output.status.code(), Some(0));
    let spill = scratch.0.join("spill");
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 3);
    let output = mcpl(&["spill-gc", "--config", config.to_str().unwrap()], b"");
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "mcpl: {}: mcpl.spillTtlHours is not set: spills are kept\n",
            config.display()
        )
    );
    let mut with_ttl: Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    with_ttl["mcpl"]["spillTtlHours"] = json!(1);
    let config = scratch.write("config-ttl.json", &with_ttl);
    let output = mcpl(&["spill-gc", "--config", config.to_str().unwrap()], b"");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!(
            "removed 0 spill files older than 1 hours from {}\n",
            spill.display()
        )
    );
    with_ttl["mcpl"]["spillTtlHours"] = json!(0);
    let config = scratch.write("config-ttl.json", &with_ttl);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let output = mcpl(&["spill-gc", "--config", config.to_str().unwrap()], b"");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!(
            "removed 3 spill files older than 0 hours from {}\n",
            spill.display()
        )
    );
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0);
}
