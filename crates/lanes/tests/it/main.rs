//! The lanes' integration tests, in one binary: data-driven cases (a folder per case with its
//! input and each lane's snapshot) and property tests of lanes.md's four properties. MCPL's
//! conformance vectors run in mcpl-cli, through the one checker `mcpl conformance` uses.

mod cases;
mod native;
mod properties;
mod redaction;
mod regressions;
mod routes;
mod secrets;

use mcpl_lanes::{
    ImageLedger, LiveCopy, MessageView, Part, Projector, Registry, Route, ServerName, ToolResult,
    UriPolicy,
};
use serde_json::Value;

/// Everything a lane writes for one input, on every lane.
#[derive(Debug)]
pub(crate) struct AllLanes {
    pub(crate) stored: String,
    pub(crate) live_anthropic: String,
    pub(crate) live_text_only: String,
    pub(crate) push: String,
    pub(crate) channel: String,
    pub(crate) injection_user: String,
    pub(crate) injection_system: String,
    pub(crate) script: Value,
    pub(crate) script_field: Option<(String, Value)>,
}

impl AllLanes {
    /// Every text a model could see on the lanes that take the whole result.
    pub(crate) fn result_texts(&self) -> Vec<String> {
        vec![
            self.stored.clone(),
            self.live_anthropic.clone(),
            self.live_text_only.clone(),
            self.script.to_string(),
            self.script_field
                .as_ref()
                .map(|(_, v)| v.to_string())
                .unwrap_or_default(),
        ]
    }

    /// Every text a model could see on the lanes that take the content alone (a push event, a
    /// channel message and an injection carry no structured content).
    pub(crate) fn message_texts(&self) -> Vec<String> {
        vec![
            self.push.clone(),
            self.channel.clone(),
            self.injection_user.clone(),
            self.injection_system.clone(),
        ]
    }
}

/// The host state one test uses: a registry and a ledger with fixed seeds.
pub(crate) struct Host {
    pub(crate) registry: Registry,
    pub(crate) ledger: ImageLedger,
    pub(crate) server: ServerName,
}

impl Host {
    pub(crate) fn new() -> Host {
        Host {
            registry: Registry::with_seed(1),
            ledger: ImageLedger::with_seed(2),
            server: ServerName::new("test-server"),
        }
    }

    pub(crate) fn on<'h>(&'h mut self, route: &'h Route, policy: UriPolicy) -> Projector<'h> {
        Projector::new(
            &mut self.registry,
            &mut self.ledger,
            route,
            &self.server,
            policy,
        )
    }

    /// Projects a tool result on every lane. The message and injection lanes take its content.
    pub(crate) fn all_lanes(&mut self, result: &Value, policy: UriPolicy) -> AllLanes {
        let read = mcpl_lanes::ResultView::of_value(result);
        let parsed = ToolResult::from_view(&read);
        // The content as sent: a result's `content`, or the whole of a bare array or block.
        let content = match result {
            Value::Object(object) if !mcpl_lanes::is_content_block(result) => {
                object.get("content").cloned().unwrap_or(Value::Null)
            }
            other => other.clone(),
        };
        let anthropic = self.on(&Route::ANTHROPIC, policy).tool_result(&parsed);
        let text_only = self.on(&Route::TEXT_ONLY, policy).tool_result(&parsed);
        // A text-only route takes no document, so a PDF keeps its plain marker there (issue 17)
        // where another route shows its placeholder, or a marker saying why it does not go
        // natively (decision 0109).
        let says_why = anthropic.stored.contains(") because ");
        if !anthropic.stored.contains("[document: ") && !says_why {
            assert_eq!(
                text_only.stored, anthropic.stored,
                "the stored copy does not depend on the route"
            );
        }
        assert_eq!(
            text_only.live,
            LiveCopy::Stored,
            "a text-only route never goes native"
        );
        let push = match self.on(&Route::ANTHROPIC, policy).push(&content) {
            Ok(view) => render_view(&view),
            Err(_) => "refused: JSON-RPC -32602, data.field payload.content\n".to_owned(),
        };
        let channel = match self.on(&Route::ANTHROPIC, policy).channel_message(&content) {
            Ok(view) => render_view(&view),
            Err(_) => "refused: {\"accepted\": false, \"reason\": \"empty_content\"}\n".to_owned(),
        };
        let injection_user =
            render_view(&self.on(&Route::ANTHROPIC, policy).injection_user(&content));
        let injection_system = self
            .on(&Route::ANTHROPIC, policy)
            .injection_system(&content);
        let script = self.on(&Route::ANTHROPIC, policy).script_result(result);
        let pointer = if parsed.structured.is_some() {
            "/structuredContent"
        } else {
            "/content/0"
        };
        let script_field = self
            .on(&Route::ANTHROPIC, policy)
            .script_field(result, pointer)
            .map(|v| (pointer.to_owned(), v));
        AllLanes {
            live_anthropic: render_live(&anthropic.live, &anthropic.stored),
            live_text_only: render_live(&text_only.live, &text_only.stored),
            stored: anthropic.stored.into_owned(),
            push,
            channel,
            injection_user,
            injection_system,
            script,
            script_field,
        }
    }
}

fn render_parts(parts: &[Part<'_>]) -> String {
    parts
        .iter()
        .map(|part| match part {
            Part::Text(text) => format!("text: {text}\n"),
            Part::Image { sniffed, data, .. } => {
                format!(
                    "image: {}, {} characters of base64\n",
                    sniffed.mime(),
                    data.len()
                )
            }
            Part::Audio { sniffed, data } => {
                format!(
                    "audio: {}, {} characters of base64\n",
                    sniffed.mime(),
                    data.len()
                )
            }
            Part::Document { pages, data } => {
                let noun = if *pages == 1 { "page" } else { "pages" };
                format!(
                    "document: application/pdf, {pages} {noun}, {} characters of base64\n",
                    data.len()
                )
            }
        })
        .collect()
}

fn render_live(live: &LiveCopy<'_>, stored: &str) -> String {
    match live {
        LiveCopy::Stored => format!("(the stored copy, byte for byte)\n{stored}\n"),
        LiveCopy::Native(parts) => format!("(native)\n{}", render_parts(parts)),
    }
}

fn render_view(view: &MessageView<'_>) -> String {
    format!(
        "{}--- kept in history:\n{}\n",
        render_parts(&view.parts),
        view.stored
    )
}

/// A script view with long base64 strings summarised, for a readable snapshot.
pub(crate) fn summarise_data(value: &Value) -> Value {
    match value {
        Value::String(s) if s.len() > 96 && !s.contains(' ') => {
            Value::String(format!("<{} characters of base64>", s.len()))
        }
        Value::Array(items) => Value::Array(items.iter().map(summarise_data).collect()),
        Value::Object(object) => Value::Object(
            object
                .iter()
                .map(|(k, v)| (k.clone(), summarise_data(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}
