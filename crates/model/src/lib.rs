//! The model side of an inference loop: a [`Model`] turns a provider request body into the
//! next assistant turn.
//!
//! The embedded default is [`Scripted`]: a JSON file of the tool calls to make, one model turn
//! per step, and the final answer, so everything runs offline. HTTP backends for real providers
//! live behind the `http` feature, in [`http`]. `mcpl-host` re-exports this crate as
//! `mcpl_host::model` (and the backends as `mcpl_host::http`).

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use mcpl_encode::conversation::{ToolCall, ToolOutput, model_tool_name};
pub use mcpl_encode::conversation::{Turn, Usage};
use mcpl_lanes::RouteId;

#[cfg(feature = "http")]
pub mod http;

/// Why a model could not answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The script file could not be read.
    #[error("model script {path}: {message}")]
    ScriptRead {
        /// The script's path.
        path: String,
        /// What the operating system said.
        message: String,
    },
    /// The script is not a script.
    #[error("model script {path}: {message}")]
    Script {
        /// The script's path.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// A provider answered with something the backend cannot use.
    #[error("{provider}: {message}")]
    Provider {
        /// The provider's name.
        provider: &'static str,
        /// What went wrong.
        message: String,
    },
}

/// Turns a request body (as the model's route encodes it) into the next turn.
pub trait Model {
    /// The route whose request bodies this model takes; `None` when any route will do (the
    /// scripted model reads nothing from the request).
    fn route(&self) -> Option<RouteId>;

    /// The next turn, given the request body the loop would send.
    fn complete(&mut self, body: &Value) -> Result<Turn, ModelError>;

    /// What the last turn's tool calls came to, in the calls' order, before the next request.
    /// A provider's model reads them in the next body; the scripted model checks them against
    /// what the script expected.
    fn results(&mut self, outputs: &[ToolOutput]) {
        let _ = outputs;
    }
}

/// A scripted model: `{"steps": [{"tool_calls": [{"server", "name", "arguments"}]}, ...],
/// "final": "<answer>"}`. Each step is one model turn; after the last step it answers `final`.
/// A call with a `server` goes by the tool's model-facing name (`<server>__<name>`); one
/// without goes by `name` alone, which the loop routes (a host tool, a model-facing name, or a
/// tool's own name when exactly one server offers it). An argument that is the string
/// `"{{last_spill}}"` becomes the spill id the conversation last named in a `read_result(…)`,
/// and `"{{next_offset}}"` the offset the last `read_result` part ended at (0 before any), so a
/// script can read a cut result back to its end. A call with `"expect": "error"` must come back
/// as an error result, and one with `"expect": "ok"` as a result that is not; otherwise the
/// script fails on its next turn, naming the call.
#[derive(Debug, Clone)]
pub struct Scripted {
    steps: std::vec::IntoIter<Vec<(ToolCall, Option<Expect>)>>,
    answer: String,
    calls_made: usize,
    /// The last turn's expectations, by call id.
    expected: Vec<(String, Expect)>,
    /// The first expectation a result broke.
    broken: Option<String>,
}

/// What a scripted call expects of its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Expect {
    /// An error result.
    Error,
    /// A result that is not an error.
    Ok,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    steps: Vec<Step>,
    #[serde(rename = "final", default)]
    answer: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    #[serde(default)]
    tool_calls: Vec<ScriptedCall>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedCall {
    /// Absent for a host tool such as `fetch_reference`, or to name a tool by its own name.
    #[serde(default)]
    server: Option<String>,
    name: String,
    #[serde(default = "empty_object")]
    arguments: Value,
    /// What its result must be; unchecked when absent.
    #[serde(default)]
    expect: Option<Expect>,
}

/// A key path as errors print it: the whole document is `(top)`.
fn key_path(path: &str) -> &str {
    if path == "." || path == "?" {
        "(top)"
    } else {
        path
    }
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

impl Scripted {
    /// Reads a script file.
    pub fn from_file(path: &Path) -> Result<Scripted, ModelError> {
        let error = |message: String| ModelError::Script {
            path: path.display().to_string(),
            message,
        };
        let bytes = std::fs::read(path).map_err(|e| ModelError::ScriptRead {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Scripted::from_slice(&bytes).map_err(|e| match e {
            ModelError::Script { message, .. } => error(message),
            other => other,
        })
    }

    /// Reads a script from JSON bytes.
    pub fn from_slice(bytes: &[u8]) -> Result<Scripted, ModelError> {
        let deserializer = &mut serde_json::Deserializer::from_slice(bytes);
        let script: Script =
            serde_path_to_error::deserialize(deserializer).map_err(|e| ModelError::Script {
                path: "<inline>".to_owned(),
                message: format!("at {}: {}", key_path(&e.path().to_string()), e.inner()),
            })?;
        let mut calls_made = 0;
        let steps = script
            .steps
            .into_iter()
            .map(|step| {
                step.tool_calls
                    .into_iter()
                    .map(|call| {
                        calls_made += 1;
                        let tool_call = ToolCall::new(
                            format!("call_{calls_made}"),
                            match &call.server {
                                Some(server) => model_tool_name(server, &call.name),
                                None => call.name,
                            },
                            call.arguments,
                        );
                        (tool_call, call.expect)
                    })
                    .collect()
            })
            .collect::<Vec<_>>();
        Ok(Scripted {
            steps: steps.into_iter(),
            answer: script.answer,
            calls_made: 0,
            expected: Vec::new(),
            broken: None,
        })
    }

    /// How many tool calls the script has made so far.
    pub fn calls_made(&self) -> usize {
        self.calls_made
    }
}

impl Model for Scripted {
    fn route(&self) -> Option<RouteId> {
        None
    }

    fn complete(&mut self, body: &Value) -> Result<Turn, ModelError> {
        if let Some(message) = self.broken.take() {
            return Err(ModelError::Script {
                path: "<script>".to_owned(),
                message,
            });
        }
        match self.steps.next() {
            Some(step) => {
                self.expected = step
                    .iter()
                    .filter_map(|(call, expect)| Some((call.id.clone(), (*expect)?)))
                    .collect();
                let mut tool_calls: Vec<ToolCall> =
                    step.into_iter().map(|(call, _)| call).collect();
                if tool_calls
                    .iter()
                    .any(|c| c.arguments.to_string().contains("\"{{"))
                {
                    let seen = body.to_string();
                    for call in &mut tool_calls {
                        fill_in(&mut call.arguments, &seen);
                    }
                }
                self.calls_made += tool_calls.len();
                Ok(Turn::new("", tool_calls))
            }
            None => Ok(Turn::new(self.answer.clone(), Vec::new())),
        }
    }

    fn results(&mut self, outputs: &[ToolOutput]) {
        for (id, expect) in std::mem::take(&mut self.expected) {
            let Some(output) = outputs.iter().find(|output| output.call_id == id) else {
                continue;
            };
            let broken = match (expect, output.is_error) {
                (Expect::Error, false) => "was expected to fail, and it succeeded",
                (Expect::Ok, true) => "was expected to succeed, and it failed",
                _ => continue,
            };
            let first_line = output.stored.lines().next().unwrap_or("");
            self.broken
                .get_or_insert_with(|| format!("{id} ({}) {broken}: {first_line}", output.name));
        }
    }
}

/// Replaces the script's placeholders from what the conversation has shown (`seen`, a request
/// body as JSON text, where quotes are escaped).
fn fill_in(arguments: &mut Value, seen: &str) {
    match arguments {
        Value::String(text) if text == "{{last_spill}}" => {
            let marker = "read_result(\\\"";
            if let Some(at) = seen.rfind(marker) {
                let rest = &seen[at + marker.len()..];
                let end = rest.find('\\').unwrap_or(rest.len());
                *text = rest[..end].to_owned();
            }
        }
        Value::String(text) if text == "{{next_offset}}" => {
            let marker = "[read_result: bytes ";
            let next = seen.rfind(marker).and_then(|at| {
                let rest = &seen[at + marker.len()..];
                let rest = &rest[rest.find('–')? + '–'.len_utf8()..];
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                rest[..digits].parse::<u64>().ok()
            });
            *arguments = Value::from(next.unwrap_or(0));
        }
        Value::Array(items) => items.iter_mut().for_each(|item| fill_in(item, seen)),
        Value::Object(fields) => fields.values_mut().for_each(|field| fill_in(field, seen)),
        _ => {}
    }
}
