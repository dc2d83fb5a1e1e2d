//! The tools that show what a host does with a server's tool list: `change-tools` changes it
//! (and says so with `notifications/tools/list_changed`), `added-tool` is offered from then on,
//! and `look` says with `readOnlyHint` that it only reads.

use serde_json::{Value, json};

/// The tool whose call changes the tool list.
pub const CHANGE_TOOLS: &str = "change-tools";
/// The tool `change-tools` adds.
pub const ADDED_TOOL: &str = "added-tool";
/// The read-only tool.
pub const LOOK: &str = "look";
/// What `look` answers.
pub const LOOK_ANSWER: &str = "looked: this tool only reads, and says so with readOnlyHint";
/// The notification `change-tools` sends.
const LIST_CHANGED: &str = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
/// The most notifications one `change-tools` call sends.
const MOST_NOTICES: u64 = 100_000;

/// The state of the tool list of one session.
#[derive(Debug, Default)]
pub(crate) struct ToolList {
    /// Whether `change-tools` was called.
    changed: bool,
    /// `tools/list` requests answered.
    listings: u64,
}

impl ToolList {
    /// These tools' entries in `tools/list`, counted as one listing.
    pub(crate) fn listing(&mut self) -> Vec<Value> {
        self.listings += 1;
        let mut tools = vec![
            tool(
                CHANGE_TOOLS,
                "Changes this server's tool list: adds added-tool and says so \
                 with notifications/tools/list_changed (times: how many, 1 by default).",
            ),
            json!({
                "name": LOOK,
                "description": "Looks, and changes nothing: annotated readOnlyHint.",
                "inputSchema": {"type": "object", "properties": {}},
                "annotations": {"readOnlyHint": true},
            }),
        ];
        if self.changed {
            tools.push(tool(
                ADDED_TOOL,
                "Offered since change-tools changed the tool list.",
            ));
        }
        tools
    }

    /// Answers a call of `name` when it is one of these tools: the lines to send first (the
    /// notifications), then the result.
    pub(crate) fn call(
        &mut self,
        name: &str,
        arguments: &Value,
    ) -> Option<(Vec<&'static str>, Value)> {
        let text = |text: String| json!({"content": [{"type": "text", "text": text}]});
        match name {
            CHANGE_TOOLS => {
                self.changed = true;
                let times = arguments.get("times").and_then(Value::as_u64).unwrap_or(1);
                let times = times.clamp(1, MOST_NOTICES);
                let answer = format!(
                    "added {ADDED_TOOL}; sent notifications/tools/list_changed {}",
                    times_said(times)
                );
                Some((vec![LIST_CHANGED; times as usize], text(answer)))
            }
            ADDED_TOOL if self.changed => Some((
                Vec::new(),
                text(format!(
                    "{ADDED_TOOL} answered; tools/list was answered {}",
                    times_said(self.listings)
                )),
            )),
            LOOK => Some((Vec::new(), text(LOOK_ANSWER.to_owned()))),
            _ => None,
        }
    }
}

/// `once`, or `n times`.
fn times_said(n: u64) -> String {
    if n == 1 {
        "once".to_owned()
    } else {
        format!("{n} times")
    }
}

fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": {"type": "object", "properties": {}}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_tools_adds_a_tool_and_bounds_its_notices() {
        let mut list = ToolList::default();
        assert_eq!(list.listing().len(), 2);
        assert!(list.call(ADDED_TOOL, &json!({})).is_none());
        let (lines, _) = list
            .call(CHANGE_TOOLS, &json!({"times": u64::MAX}))
            .unwrap();
        assert_eq!(lines.len() as u64, MOST_NOTICES);
        assert_eq!(list.listing().len(), 3);
        let (_, answer) = list.call(ADDED_TOOL, &json!({})).unwrap();
        assert!(answer.to_string().contains("answered 2 times"), "{answer}");
    }
}
