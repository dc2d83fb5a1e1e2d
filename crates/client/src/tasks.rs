//! Long calls: the tasks extension's wire shapes, progress notifications, and the notices a
//! host shows while a call runs.
//!
//! A `tools/call` may be answered with a task (revision 2026-07-28's tasks extension,
//! `resultType: "task"` with a top-level `taskId`, or the 2025-11-25 shape with a nested
//! `task`). The connection then polls `tasks/get` until the task ends. Everything a server
//! sends here is hostile input: ids and messages are bounded, numbers checked.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// The tasks extension's identifier, declared under `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// The `ttl` (milliseconds) asked for in a 2025-11-25 task-augmented `tools/call` at most: the
/// call's total time is asked for, bounded by this.
pub(crate) const MAX_TASK_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// The shortest wait between two `tasks/get` polls, whatever the server suggests.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_millis(100);
/// The longest wait between two polls, whatever the server suggests.
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(5);
/// The wait between polls when the server suggests none.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);
/// The shortest time between two progress notices shown for one call; the final one (progress
/// equal to total) is always shown.
pub const PROGRESS_GAP: Duration = Duration::from_millis(250);
/// The longest task id kept; a longer one fails the call.
const MAX_TASK_ID_CHARS: usize = 256;
/// The most characters of a server's message (progress or status) a notice keeps.
const MAX_MESSAGE_CHARS: usize = 200;
/// The most characters of a status or tool name a notice keeps.
const MAX_NAME_CHARS: usize = 64;

/// What a server says of one call while it runs, as a host shows it to the user.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Notice {
    /// A `notifications/progress` for the call.
    Progress {
        /// The server.
        server: String,
        /// The tool called.
        tool: String,
        /// How far the work is.
        progress: f64,
        /// How far it goes, when the server knows.
        total: Option<f64>,
        /// The server's message, one line and bounded.
        message: Option<String>,
    },
    /// A task's status, shown when the task starts and each time its status or message changes.
    Task {
        /// The server.
        server: String,
        /// The tool called.
        tool: String,
        /// The task's id.
        task_id: String,
        /// Its status (`working`, `input_required`, `completed`...).
        status: String,
        /// The server's status message, one line and bounded.
        message: Option<String>,
    },
}

impl std::fmt::Display for Notice {
    /// `progress demo/slow_job: 3/10 "message"` or `task demo/build_report (t-1): working`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (head, message) = match self {
            Notice::Progress {
                server,
                tool,
                progress,
                total,
                message,
            } => {
                let total = total.map(|t| format!("/{t}")).unwrap_or_default();
                (
                    format!("progress {server}/{tool}: {progress}{total}"),
                    message,
                )
            }
            Notice::Task {
                server,
                tool,
                task_id,
                status,
                message,
            } => (
                format!("task {server}/{tool} ({task_id}): {status}"),
                message,
            ),
        };
        match message {
            Some(message) => write!(f, "{head} {message:?}"),
            None => f.write_str(&head),
        }
    }
}

impl Notice {
    /// The server whose call it is about.
    pub fn server(&self) -> &str {
        match self {
            Notice::Progress { server, .. } | Notice::Task { server, .. } => server,
        }
    }

    /// The tool called.
    pub fn tool(&self) -> &str {
        match self {
            Notice::Progress { tool, .. } | Notice::Task { tool, .. } => tool,
        }
    }
}

/// What a host runs for each [`Notice`]; it may be called from any of the host's threads.
pub type Observer = Arc<dyn Fn(&Notice) + Send + Sync>;

/// The most notices [`Notices`] holds; later ones are passed on but not held.
pub const MAX_HELD_NOTICES: usize = 1000;

/// Notices held for a host until it takes them (at most [`MAX_HELD_NOTICES`]), each passed at
/// once to a watcher the host may set later (`mcpl run` prints them as they come).
#[derive(Clone, Default)]
pub struct Notices {
    held: Arc<Mutex<Vec<Notice>>>,
    watcher: Arc<Mutex<Option<Observer>>>,
}

impl std::fmt::Debug for Notices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notices").finish_non_exhaustive()
    }
}

impl Notices {
    /// The observer to give each connection: it holds the notice and passes it on.
    pub fn observer(&self) -> Observer {
        let notices = self.clone();
        Arc::new(move |notice: &Notice| {
            let watcher = lock(&notices.watcher).clone();
            if let Some(watcher) = watcher {
                watcher(notice);
            }
            let mut held = lock(&notices.held);
            if held.len() < MAX_HELD_NOTICES {
                held.push(notice.clone());
            }
        })
    }

    /// Passes every notice from now on to `watcher` too.
    pub fn watch(&self, watcher: Observer) {
        *lock(&self.watcher) = Some(watcher);
    }

    /// Takes the notices about calls of `tool` on `server`, leaving the others held.
    pub fn take(&self, server: &str, tool: &str) -> Vec<Notice> {
        let mut held = lock(&self.held);
        let (taken, kept) = std::mem::take(&mut *held)
            .into_iter()
            .partition(|n: &Notice| n.server() == server && n.tool() == tool);
        *held = kept;
        taken
    }
}

/// A lock whatever another thread's panic left: notices are plain data.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The tools a 2025-11-25 server lists with `execution.taskSupport` `"required"` or
/// `"optional"`: their `tools/call` carries `params.task`, so the server answers with a task
/// that the connection polls. Only those exact strings count; anything else (absent,
/// `"forbidden"`, another type) leaves the tool called plainly.
#[derive(Debug, Default)]
pub(crate) struct TaskTools {
    tools: HashSet<String>,
}

impl TaskTools {
    /// Reads one page of a `tools/list` result.
    pub(crate) fn learn(&mut self, result: &Value) {
        let Some(tools) = result.get("tools").and_then(Value::as_array) else {
            return;
        };
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            let support = tool
                .pointer("/execution/taskSupport")
                .and_then(Value::as_str);
            if matches!(support, Some("required" | "optional")) {
                self.tools.insert(name.to_owned());
            } else {
                self.tools.remove(name);
            }
        }
    }

    /// Whether a call of `tool` asks for a task.
    pub(crate) fn wants_task(&self, tool: &str) -> bool {
        self.tools.contains(tool)
    }
}

/// Whether a 2025-11-25 server's capabilities accept task-augmented `tools/call`
/// (`tasks.requests.tools.call`, an object); without it a client must not ask for a task,
/// whatever a tool says.
pub(crate) fn accepts_task_calls(capabilities: &Value) -> bool {
    capabilities
        .pointer("/tasks/requests/tools/call")
        .is_some_and(Value::is_object)
}

/// A task a server answered a call with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TaskStart {
    pub id: String,
    pub status: String,
    pub message: Option<String>,
    /// The poll interval it suggests, within bounds; `None` when it suggests none.
    pub interval: Option<Duration>,
}

/// The task in a `tools/call` result, when the result is one: `Err` for a task whose id is
/// missing or unusable.
pub(crate) fn task_of(result: &Value) -> Option<Result<TaskStart, String>> {
    let task = if result.get("resultType").and_then(Value::as_str) == Some("task") {
        result
    } else {
        // The 2025-11-25 shape: `{"task": {...}}` and no content.
        let nested = result.get("task").filter(|t| t.is_object())?;
        if result.get("content").is_some() {
            return None;
        }
        nested
    };
    Some(task_fields(task))
}

/// A task's id, status, message and suggested poll interval, checked.
pub(crate) fn task_fields(task: &Value) -> Result<TaskStart, String> {
    let id = match task.get("taskId").and_then(Value::as_str) {
        Some(id)
            if !id.is_empty()
                && id.chars().count() <= MAX_TASK_ID_CHARS
                && !id.chars().any(char::is_control) =>
        {
            id.to_owned()
        }
        Some(_) => {
            return Err("a task id that is empty, too long or holds control characters".to_owned());
        }
        None => return Err("a task without a taskId".to_owned()),
    };
    let status = task
        .get("status")
        .and_then(Value::as_str)
        .map_or_else(|| "working".to_owned(), |s| one_line(s, MAX_NAME_CHARS));
    let message = task
        .get("statusMessage")
        .and_then(Value::as_str)
        .map(|m| one_line(m, MAX_MESSAGE_CHARS));
    let suggested = task
        .get("pollIntervalMs")
        .or_else(|| task.get("pollInterval"))
        .and_then(Value::as_f64)
        .filter(|ms| ms.is_finite() && *ms >= 0.0);
    Ok(TaskStart {
        id,
        status,
        message,
        interval: suggested.map(|ms| poll_interval(Some(ms))),
    })
}

/// The wait before the next poll: the server's suggestion within
/// [`MIN_POLL_INTERVAL`]..=[`MAX_POLL_INTERVAL`], or [`DEFAULT_POLL_INTERVAL`].
pub(crate) fn poll_interval(suggested_ms: Option<f64>) -> Duration {
    suggested_ms.map_or(DEFAULT_POLL_INTERVAL, |ms| {
        Duration::from_millis(ms.min(u64::MAX as f64) as u64)
            .clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL)
    })
}

/// One `notifications/progress`, checked: its token, progress, total and message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Progress {
    pub token: Value,
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// The progress in a notification's params; `None` when it has no token or no finite progress.
pub(crate) fn progress_of(params: &Value) -> Option<Progress> {
    let token = params
        .get("progressToken")
        .filter(|t| t.is_string() || t.is_number())?;
    let progress = params
        .get("progress")
        .and_then(Value::as_f64)
        .filter(|p| p.is_finite())?;
    Some(Progress {
        token: token.clone(),
        progress,
        total: params
            .get("total")
            .and_then(Value::as_f64)
            .filter(|t| t.is_finite()),
        message: params
            .get("message")
            .and_then(Value::as_str)
            .map(|m| one_line(m, MAX_MESSAGE_CHARS)),
    })
}

/// A tool's name as a notice shows it, bounded.
pub(crate) fn tool_name(params: &Value) -> String {
    params
        .get("name")
        .and_then(Value::as_str)
        .map_or_else(String::new, |name| one_line(name, MAX_NAME_CHARS))
}

/// `text` on one line, control characters replaced, at most `chars` characters (`…` when cut).
fn one_line(text: &str, chars: usize) -> String {
    let mut line: String = text
        .chars()
        .take(chars)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().nth(chars).is_some() {
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_task_shapes_are_read_and_a_plain_result_is_not_a_task() {
        let v2 = json!({"resultType": "task", "taskId": "t-1", "status": "working", "pollIntervalMs": 200});
        let start = task_of(&v2).unwrap().unwrap();
        assert_eq!(
            (start.id.as_str(), start.interval),
            ("t-1", Some(Duration::from_millis(200)))
        );
        let v1 = json!({"task": {"taskId": "t-2", "status": "working", "pollInterval": 1}});
        assert_eq!(
            task_of(&v1).unwrap().unwrap().interval,
            Some(MIN_POLL_INTERVAL),
            "a suggestion under the floor is raised to it"
        );
        assert!(task_of(&json!({"content": [], "resultType": "complete"})).is_none());
        assert!(task_of(&json!({"resultType": "task"})).unwrap().is_err());
        assert!(
            task_of(&json!({"resultType": "task", "taskId": "a\nb"}))
                .unwrap()
                .is_err(),
            "an id that would break a line"
        );
        let long = "x".repeat(MAX_TASK_ID_CHARS + 1);
        assert!(
            task_of(&json!({"resultType": "task", "taskId": long}))
                .unwrap()
                .is_err()
        );
    }

    #[test]
    fn only_the_exact_task_support_strings_ask_for_a_task() {
        let mut tools = TaskTools::default();
        tools.learn(&json!({"tools": [
            {"name": "req", "execution": {"taskSupport": "required"}},
            {"name": "opt", "execution": {"taskSupport": "optional"}},
            {"name": "no", "execution": {"taskSupport": "forbidden"}},
            {"name": "case", "execution": {"taskSupport": "Required"}},
            {"name": "spaced", "execution": {"taskSupport": "required "}},
            {"name": "typed", "execution": {"taskSupport": true}},
            {"name": "flat", "taskSupport": "required"},
            {"name": "plain"},
            {"execution": {"taskSupport": "required"}},
        ]}));
        let wanted: Vec<_> = [
            "req", "opt", "no", "case", "spaced", "typed", "flat", "plain",
        ]
        .into_iter()
        .filter(|t| tools.wants_task(t))
        .collect();
        assert_eq!(wanted, ["req", "opt"]);
        // A later listing that drops the support forgets it.
        tools.learn(&json!({"tools": [{"name": "req"}]}));
        assert!(!tools.wants_task("req"));
        assert!(tools.wants_task("opt"));

        assert!(accepts_task_calls(
            &json!({"tasks": {"requests": {"tools": {"call": {}}}}})
        ));
        for no in [
            json!({}),
            json!({"tasks": {}}),
            json!({"tasks": {"requests": {"tools": {"call": true}}}}),
            json!({"tasks": {"requests": {"tools": {}}}}),
        ] {
            assert!(!accepts_task_calls(&no), "{no}");
        }
    }

    #[test]
    fn poll_intervals_stay_within_bounds() {
        assert_eq!(poll_interval(None), DEFAULT_POLL_INTERVAL);
        assert_eq!(poll_interval(Some(1e30)), MAX_POLL_INTERVAL);
        assert_eq!(poll_interval(Some(0.0)), MIN_POLL_INTERVAL);
    }

    #[test]
    fn progress_is_checked_and_its_message_kept_to_one_bounded_line() {
        let p = progress_of(&json!({"progressToken": 3, "progress": 2, "total": 10,
            "message": format!("a\nb{}", "y".repeat(500))}))
        .unwrap();
        assert_eq!((p.progress, p.total), (2.0, Some(10.0)));
        let message = p.message.unwrap();
        assert!(message.starts_with("a b") && message.chars().count() == MAX_MESSAGE_CHARS + 1);
        assert!(progress_of(&json!({"progressToken": 3})).is_none());
        assert!(progress_of(&json!({"progress": 1})).is_none());
    }

    #[test]
    fn notices_are_held_bounded_passed_on_and_taken_by_call() {
        let notices = Notices::default();
        let seen = Arc::new(Mutex::new(0));
        let counter = Arc::clone(&seen);
        notices.watch(Arc::new(move |_: &Notice| *lock(&counter) += 1));
        let observer = notices.observer();
        let notice = |tool: &str| Notice::Task {
            server: "s".into(),
            tool: tool.into(),
            task_id: "t".into(),
            status: "working".into(),
            message: None,
        };
        for _ in 0..MAX_HELD_NOTICES + 5 {
            observer(&notice("a"));
        }
        assert_eq!(
            *lock(&seen),
            MAX_HELD_NOTICES + 5,
            "every notice is passed on"
        );
        assert_eq!(notices.take("s", "b"), Vec::new());
        assert_eq!(
            notices.take("s", "a").len(),
            MAX_HELD_NOTICES,
            "held within bounds"
        );
        assert!(notices.take("s", "a").is_empty());
    }

    #[test]
    fn notices_read_as_one_line() {
        let notice = Notice::Progress {
            server: "demo".into(),
            tool: "slow_job".into(),
            progress: 3.0,
            total: Some(10.0),
            message: Some("step 3".into()),
        };
        assert_eq!(
            notice.to_string(),
            r#"progress demo/slow_job: 3/10 "step 3""#
        );
    }
}
