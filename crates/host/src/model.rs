//! The model side of the inference loop: a [`Model`] turns a provider request body into the
//! next assistant turn.
//!
//! The embedded default is [`Scripted`]: a JSON file of the tool calls to make, one model turn
//! per step, and the final answer, so everything runs offline. HTTP backends for real providers
//! live behind the `http` feature.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use mcpl_encode::conversation::{ToolCall, model_tool_name};
pub use mcpl_encode::conversation::{Turn, Usage};
use mcpl_lanes::RouteId;

/// Why a model could not answer.
#[derive(Debug, thiserror::Error)]
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
}

/// A scripted model: `{"steps": [{"tool_calls": [{"server", "name", "arguments"}]}, ...],
/// "final": "<answer>"}`. Each step is one model turn; after the last step it answers `final`.
/// A call with a `server` goes by the tool's model-facing name (`<server>__<name>`); one
/// without goes by `name` alone, which the loop routes (a host tool, a model-facing name, or a
/// tool's own name when exactly one server offers it). An argument that is the string
/// `"{{last_spill}}"` becomes the spill id the conversation last named in a `read_result(…)`,
/// and `"{{next_offset}}"` the offset the last `read_result` part ended at (0 before any), so a
/// script can read a cut result back to its end.
#[derive(Debug, Clone)]
pub struct Scripted {
    steps: std::vec::IntoIter<Vec<ToolCall>>,
    answer: String,
    calls_made: usize,
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
                        ToolCall {
                            id: format!("call_{calls_made}"),
                            name: match &call.server {
                                Some(server) => model_tool_name(server, &call.name),
                                None => call.name,
                            },
                            arguments: call.arguments,
                            signature: None,
                        }
                    })
                    .collect()
            })
            .collect::<Vec<_>>();
        Ok(Scripted {
            steps: steps.into_iter(),
            answer: script.answer,
            calls_made: 0,
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
        match self.steps.next() {
            Some(mut tool_calls) => {
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
                Ok(Turn {
                    text: String::new(),
                    tool_calls,
                    usage: None,
                })
            }
            None => Ok(Turn {
                text: self.answer.clone(),
                tool_calls: Vec::new(),
                usage: None,
            }),
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
