//! Long calls: a tool answered with a task that completes after a few polls, one whose task
//! never finishes, and one that streams progress before it answers.
//!
//! The server is single-threaded, so a task's work is counted in polls: each `tasks/get` moves
//! it one step. Tasks are created only for a client that declared the tasks extension.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::time::Duration;

use serde_json::{Value, json};

use crate::{INVALID_PARAMS, Server, tools};

/// The tasks extension's identifier.
const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// How many polls `task` takes to complete.
const TASK_POLLS: u32 = 3;
/// The poll interval the demo suggests, in milliseconds.
const POLL_INTERVAL_MS: u64 = 100;
/// The most tasks one session keeps; older ones are forgotten.
const MAX_TASKS: usize = 64;
/// `progress`'s steps and wait between them when not told, and the most it takes.
const PROGRESS_STEPS: u64 = 2;
const PROGRESS_EVERY_MS: u64 = 300;
const PROGRESS_MAX_STEPS: u64 = 100_000;
const PROGRESS_MAX_EVERY_MS: u64 = 2_000;

/// One of the long tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LongTool {
    Task,
    TaskForever,
    Progress,
}

impl LongTool {
    const ALL: [LongTool; 3] = [LongTool::Task, LongTool::TaskForever, LongTool::Progress];

    /// The tool called `name`.
    pub(crate) fn named(name: &str) -> Option<LongTool> {
        LongTool::ALL.into_iter().find(|tool| tool.name() == name)
    }

    fn name(self) -> &'static str {
        match self {
            LongTool::Task => "task",
            LongTool::TaskForever => "task-forever",
            LongTool::Progress => "progress",
        }
    }

    fn listing(self) -> Value {
        let (description, schema) = match self {
            LongTool::Task => (
                "Answers with a task (the tasks extension) that completes after three polls of tasks/get.",
                json!({"type": "object"}),
            ),
            LongTool::TaskForever => (
                "Answers with a task that never finishes, until tasks/cancel.",
                json!({"type": "object"}),
            ),
            LongTool::Progress => (
                "Sends notifications/progress, `steps` of them `everyMs` apart (2 and 300 unless told), then answers.",
                json!({"type": "object", "properties": {
                    "steps": {"type": "integer", "minimum": 1},
                    "everyMs": {"type": "integer", "minimum": 0},
                }}),
            ),
        };
        json!({"name": self.name(), "description": description, "inputSchema": schema})
    }
}

/// The long tools' listings, after the other tools'.
pub(crate) fn listing() -> impl Iterator<Item = Value> {
    LongTool::ALL.into_iter().map(LongTool::listing)
}

/// The session's tasks, and whether its client takes them.
#[derive(Debug, Default)]
pub(crate) struct Long {
    /// Whether the client declared the tasks extension in `initialize`.
    declared: bool,
    created: u64,
    tasks: BTreeMap<String, DemoTask>,
}

#[derive(Debug)]
struct DemoTask {
    /// Polls left before it completes; `None` for one that never does.
    polls_left: Option<u32>,
    status: &'static str,
}

impl Long {
    /// Notes what the client declared in `initialize`.
    pub(crate) fn note_client(&mut self, params: &Value) {
        self.declared = declares_tasks(params.get("capabilities"));
    }
}

fn declares_tasks(capabilities: Option<&Value>) -> bool {
    capabilities
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some()
}

fn task_result() -> Value {
    json!({"content": [tools::text(&format!(
        "The task's result, after {TASK_POLLS} polls: 42 rows exported."
    ))]})
}

impl<W: Write> Server<W> {
    /// Calls one long tool.
    pub(crate) fn long_call(
        &mut self,
        id: Value,
        tool: LongTool,
        params: &Value,
    ) -> io::Result<()> {
        let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
        let declared = self.long.declared
            || declares_tasks(
                params
                    .pointer("/_meta/io.modelcontextprotocol~1clientCapabilities")
                    .filter(|c| c.is_object()),
            );
        match tool {
            LongTool::Task | LongTool::TaskForever if !declared => {
                let text = "This tool runs as a task; the client did not declare the tasks extension, so here is its result at once.";
                self.answer(id, json!({"content": [tools::text(text)]}))
            }
            LongTool::Task | LongTool::TaskForever => {
                self.long.created += 1;
                let task_id = format!("task-{}", self.long.created);
                let polls_left = (tool == LongTool::Task).then_some(TASK_POLLS);
                if self.long.tasks.len() >= MAX_TASKS {
                    self.long.tasks.pop_first();
                }
                self.long.tasks.insert(
                    task_id.clone(),
                    DemoTask {
                        polls_left,
                        status: "working",
                    },
                );
                self.log(&format!("{} answered with {task_id}", tool.name()));
                let mut answer = task_envelope(&task_id, "working", Some("queued"));
                answer["resultType"] = json!("task");
                answer["ttlMs"] = json!(600_000);
                answer["pollIntervalMs"] = json!(POLL_INTERVAL_MS);
                self.answer(id, answer)
            }
            LongTool::Progress => {
                let steps = arguments
                    .get("steps")
                    .and_then(Value::as_u64)
                    .unwrap_or(PROGRESS_STEPS)
                    .clamp(1, PROGRESS_MAX_STEPS);
                let every = arguments
                    .get("everyMs")
                    .and_then(Value::as_u64)
                    .unwrap_or(PROGRESS_EVERY_MS)
                    .min(PROGRESS_MAX_EVERY_MS);
                let token = params.pointer("/_meta/progressToken").cloned();
                for step in 1..=steps {
                    std::thread::sleep(Duration::from_millis(every));
                    if let Some(token) = &token {
                        self.write(
                            &json!({"jsonrpc": "2.0", "method": "notifications/progress",
                            "params": {"progressToken": token, "progress": step, "total": steps,
                                "message": format!("step {step} of {steps}")}}),
                        )?;
                    }
                }
                let text = format!("Done after {steps} steps, {every} ms apart.");
                self.answer(id, json!({"content": [tools::text(&text)]}))
            }
        }
    }

    /// Answers `tasks/get`, `tasks/cancel`, `tasks/update` and `tasks/result`.
    pub(crate) fn task_request(
        &mut self,
        id: Value,
        method: &str,
        params: &Value,
    ) -> io::Result<()> {
        let task_id = params
            .get("taskId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !self.long.tasks.contains_key(task_id) {
            let message = format!("unknown task: {task_id}");
            return self.error(id, INVALID_PARAMS, &message, None);
        }
        self.log(&format!("{method} {task_id}"));
        let Some(task) = self.long.tasks.get_mut(task_id) else {
            return Ok(());
        };
        match method {
            "tasks/cancel" => {
                if task.status == "working" {
                    task.status = "cancelled";
                }
                self.answer(id, json!({"resultType": "complete"}))
            }
            "tasks/get" => {
                if let Some(left) = task
                    .polls_left
                    .as_mut()
                    .filter(|_| task.status == "working")
                {
                    *left = left.saturating_sub(1);
                    if *left == 0 {
                        task.status = "completed";
                    }
                }
                let message = match (task.status, task.polls_left) {
                    ("working", Some(left)) => {
                        Some(format!("step {} of {TASK_POLLS}", TASK_POLLS - left))
                    }
                    ("working", None) => Some("still working".to_owned()),
                    _ => None,
                };
                let mut answer = task_envelope(task_id, task.status, message.as_deref());
                if task.status == "completed" {
                    answer["result"] = task_result();
                }
                self.answer(id, answer)
            }
            "tasks/result" if task.status == "completed" => self.answer(id, task_result()),
            _ => self.answer(id, json!({"resultType": "complete"})),
        }
    }
}

fn task_envelope(task_id: &str, status: &str, message: Option<&str>) -> Value {
    let now = crate::push::now_rfc3339();
    let mut task =
        json!({"taskId": task_id, "status": status, "createdAt": now, "lastUpdatedAt": now});
    if let Some(message) = message {
        task["statusMessage"] = json!(message);
    }
    task
}
