//! The host tools a session offers the model: `fetch_reference` and `read_result`. Both answer
//! through the tool-result lanes, within budget: images native where the route takes them, text
//! cut and spilled. Where the host saved a payload goes to the host, not the model.

use std::io::Read;

use base64::Engine;
use mcpl_budget::read_back;
use mcpl_classify::sniff;
use mcpl_fetch::{ResourceReader, Saved};
use mcpl_lanes::{ServerName, ToolResult};
use serde_json::{Value, json};

use crate::{DEFAULT_BUDGET, LOAD_SKILL, Session, Shown, ToolSpec};

/// The host tool that fetches a reference.
pub const FETCH_REFERENCE: &str = "fetch_reference";

/// What the model reads about `fetch_reference`.
pub const FETCH_REFERENCE_DESCRIPTION: &str = "Fetch a referenced payload (a [ref_…] id from a \
    tool result or event) through the host. The fetch is origin-bound to the server that sent \
    the reference, size-capped, and digest-verified when the reference carries one. Returns the \
    payload's verified size and type, then its content: images as images where this \
    conversation takes them, text within a budget (the rest readable with read_result).";

/// The host tool that reads a cut result's spill back.
pub const READ_RESULT: &str = "read_result";

/// What the model reads about `read_result`.
pub const READ_RESULT_DESCRIPTION: &str = "Read the rest of a tool result that was cut: pass the \
    spill_… id its omission notice names. Returns the next part of the whole result within \
    max_tokens, images as images where this conversation takes them, and ends with the offset \
    the following part starts at.";

/// The fewest tokens one `read_result` part may be given: room for its footer and some text.
pub const READ_RESULT_MIN_TOKENS: u64 = 100;

/// The most bytes of a fetched payload read back to show the model (16 MiB). A larger text
/// shows its first 16 MiB, cut and spilled as any result; a larger image or document is
/// described, not shown. The whole stays where the host saved it.
pub const FETCHED_READ_LIMIT: u64 = 16 * 1024 * 1024;

/// How many times a `read_result` part is read again smaller when it came out over budget.
const READ_AGAIN: usize = 6;

impl Session {
    /// The host tools to offer the model beside the servers' tools: `read_result` always (it
    /// says when no store is set), `fetch_reference` when a fetcher is set. `load_skill` is
    /// [`Session::skill_tool`], offered once the servers' skills are added.
    pub fn host_tools(&self) -> Vec<ToolSpec> {
        let mut tools = Vec::with_capacity(2);
        if self.fetcher.is_ok() {
            tools.push(fetch_reference_spec());
        }
        tools.push(read_result_spec());
        tools
    }

    /// Whether `name` is a host tool this session answers.
    pub fn is_host_tool(&self, name: &str) -> bool {
        name == READ_RESULT
            || (name == FETCH_REFERENCE && self.fetcher.is_ok())
            || (name == LOAD_SKILL && self.has_skills())
    }

    /// Answers a call to a host tool, or `None` when `name` is none of this session's. `reader`
    /// reads MCP resources for `fetch_reference` (`&mut mcpl_fetch::NoResources` where the host
    /// reads none).
    pub fn call_host_tool(
        &mut self,
        name: &str,
        arguments: &Value,
        reader: &mut dyn ResourceReader,
    ) -> Option<Shown> {
        match name {
            READ_RESULT => Some(self.read_result(arguments, u64::MAX)),
            FETCH_REFERENCE if self.fetcher.is_ok() => {
                Some(self.fetch_reference(arguments, reader, u64::MAX))
            }
            LOAD_SKILL if self.has_skills() => Some(self.load_skill(arguments, reader, u64::MAX)),
            _ => None,
        }
    }

    /// `fetch_reference`: the payload `ref_id` names, fetched, then shown through the
    /// tool-result lanes within the budget of the server that sent the reference and `cap`:
    /// first its verified size and type, then its content. The saved path is in
    /// [`Shown::saved`], for the host.
    pub fn fetch_reference(
        &mut self,
        arguments: &Value,
        reader: &mut dyn ResourceReader,
        cap: u64,
    ) -> Shown {
        let Some(id) = arguments.get("ref_id").and_then(Value::as_str) else {
            return self.refusal(mcpl_lanes::markers::unknown_reference("(missing ref_id)"));
        };
        let max_bytes = arguments.get("max_bytes").and_then(Value::as_u64);
        let fetched = match &mut self.fetcher {
            Err(why) => Err(format!("fetching is not available: {why}")),
            Ok(fetcher) => fetcher
                .fetch(&mut self.registry, id, max_bytes, reader)
                .map_err(|refusal| refusal.to_string()),
        };
        let saved = match fetched {
            Ok(saved) => saved,
            Err(text) => return self.refusal(text),
        };
        // The content is the server's: shown under the policy of the first server that sent
        // the reference, within the smallest budget of those that did.
        let (server, budget) = match self.registry.lookup(id) {
            Ok(record) => (
                record
                    .servers
                    .first()
                    .map_or_else(|| FETCH_REFERENCE.to_owned(), |s| s.as_str().to_owned()),
                record
                    .servers
                    .iter()
                    .map(|s| self.policy(s.as_str()).budget)
                    .min()
                    .unwrap_or(self.default_policy.budget),
            ),
            Err(_) => (FETCH_REFERENCE.to_owned(), self.default_policy.budget),
        };
        let mut diagnostics = Vec::new();
        let budget = self.held_budget(budget.min(cap), &mut diagnostics);
        let result = fetched_result(id, &saved);
        let mut shown = self.tool_result_within(&server, &result, budget);
        diagnostics.append(&mut shown.diagnostics);
        shown.diagnostics = diagnostics;
        shown.saved = Some(saved);
        shown
    }

    /// `read_result`: the next part of a spill, through the lanes and the fitting every tool
    /// result goes through, or the refusal in words. A part is never given more than the budget
    /// of the server whose result it reads (a spill this session did not make gets the
    /// smallest budget any server has), nor more than `cap`.
    pub fn read_result(&mut self, arguments: &Value, cap: u64) -> Shown {
        let argument = |key| arguments.get(key).and_then(Value::as_u64);
        let Some(id) = arguments.get("id").and_then(Value::as_str) else {
            return self
                .refusal("read_result: the id is missing (the spill_… id a notice names)".into());
        };
        let ceiling = self.spill_budgets.get(id).copied().unwrap_or_else(|| {
            self.policies
                .values()
                .map(|policy| policy.budget)
                .chain([self.default_policy.budget])
                .min()
                .unwrap_or(DEFAULT_BUDGET)
        });
        let max_tokens = argument("max_tokens")
            .unwrap_or(ceiling)
            .min(ceiling)
            .min(cap)
            .max(READ_RESULT_MIN_TOKENS);
        let pricer = self.pricer();
        let mut diagnostics = Vec::new();
        let budget = self
            .held_budget(max_tokens, &mut diagnostics)
            .max(READ_RESULT_MIN_TOKENS);
        // A part is read within what is left after its footer; what the model is sent is then
        // priced as sent (both copies), and a part over the budget is read again with the excess
        // given back.
        let mut within = budget;
        for _ in 0..READ_AGAIN {
            let part = match &mut self.spill {
                Ok(store) => read_back(
                    &mut **store,
                    id,
                    argument("offset").unwrap_or(0),
                    within,
                    pricer,
                )
                .map_err(|error| error.to_string()),
                Err(why) => Err(format!("read_result: no spill store is available: {why}")),
            };
            let part = match part {
                Ok(part) => part,
                Err(text) => return self.refusal(text),
            };
            let result = json!({"content": part.content});
            let read = mcpl_lanes::ResultView::of_value(&result);
            let parsed = ToolResult::from_view(&read);
            // Read back without spilling again: the part is already the spill's.
            let shown = self.fit(&ServerName::new(READ_RESULT), &parsed, budget, false);
            let sent = shown
                .tokens
                .max(self.pricer().text.count(&shown.output.stored));
            if sent > budget && within > READ_RESULT_MIN_TOKENS / 2 {
                within = within
                    .saturating_sub(sent.saturating_sub(budget).max(1))
                    .max(READ_RESULT_MIN_TOKENS / 2);
                continue;
            }
            let mut shown = shown;
            diagnostics.append(&mut shown.diagnostics);
            shown.diagnostics = diagnostics;
            return shown;
        }
        self.refusal(format!(
            "read_result: no part of {id} from this offset fits {budget} tokens; ask again with a larger max_tokens"
        ))
    }

    /// A host tool's refusal, as an error result the model reads.
    pub(crate) fn refusal(&mut self, text: String) -> Shown {
        let result = json!({"content": [{"type": "text", "text": text}], "isError": true});
        let read = mcpl_lanes::ResultView::of_value(&result);
        let parsed = ToolResult::from_view(&read);
        self.fit(&ServerName::new(FETCH_REFERENCE), &parsed, u64::MAX, false)
    }
}

/// The `fetch_reference` tool as the model sees it.
pub(crate) fn fetch_reference_spec() -> ToolSpec {
    ToolSpec::new(
        FETCH_REFERENCE,
        FETCH_REFERENCE_DESCRIPTION,
        json!({
            "type": "object",
            "properties": {
                "ref_id": {"type": "string", "description": "the id in the reference's stub"},
                "max_bytes": {"type": "integer", "minimum": 1,
                              "description": "refuse if the payload is larger"},
            },
            "required": ["ref_id"],
        }),
    )
}

/// The `read_result` tool as the model sees it.
pub(crate) fn read_result_spec() -> ToolSpec {
    ToolSpec::new(
        READ_RESULT,
        READ_RESULT_DESCRIPTION,
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "the spill_… id in the omission notice"},
                "offset": {"type": "integer", "minimum": 0,
                           "description": "where to start, in bytes (the last part's footer says)"},
                "max_tokens": {"type": "integer", "minimum": READ_RESULT_MIN_TOKENS,
                               "maximum": DEFAULT_BUDGET, "description": "the most tokens of the part"},
            },
            "required": ["id"],
        }),
    )
}

/// A fetched payload as an MCP tool result: a first text with its verified size and type (no
/// path), then its content as the block its type makes it.
fn fetched_result(id: &str, saved: &Saved) -> Value {
    let header = json!({
        "ref_id": id,
        "bytes": saved.bytes,
        "mime_type": saved.mime_type,
        "digest_verified": saved.digest_verified,
    });
    let mut content = vec![json!({"type": "text", "text": header.to_string()})];
    match read_saved(&saved.path) {
        Ok((bytes, whole)) => content.push(payload_block(id, &saved.mime_type, &bytes, whole)),
        Err(error) => content.push(json!({"type": "text",
            "text": format!("[the payload was saved but could not be read back: {}]", error.kind())})),
    }
    json!({"content": content})
}

/// The first [`FETCHED_READ_LIMIT`] bytes of a saved payload, and whether that is all of it.
fn read_saved(path: &str) -> std::io::Result<(Vec<u8>, bool)> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(FETCHED_READ_LIMIT + 1)
        .read_to_end(&mut bytes)?;
    let whole = bytes.len() as u64 <= FETCHED_READ_LIMIT;
    bytes.truncate(FETCHED_READ_LIMIT as usize);
    Ok((bytes, whole))
}

/// A payload's content block: an image or audio block, a PDF as an embedded resource, text as
/// text, anything else described.
fn payload_block(id: &str, mime_type: &str, bytes: &[u8], whole: bool) -> Value {
    let sniffed = sniff(bytes);
    let base64 = || base64::engine::general_purpose::STANDARD.encode(bytes);
    let essence = mime_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if whole && essence.starts_with("image/") {
        return json!({"type": "image", "data": base64(), "mimeType": essence});
    }
    if whole && essence.starts_with("audio/") {
        return json!({"type": "audio", "data": base64(), "mimeType": essence});
    }
    if whole && essence == "application/pdf" {
        return json!({"type": "resource", "resource": {
            "uri": format!("mcpl-fetched:{id}"), "mimeType": essence, "blob": base64()}});
    }
    let textual = essence.starts_with("text/")
        || essence.ends_with("json")
        || essence.ends_with("xml")
        || essence.ends_with("yaml")
        || essence == "application/javascript";
    if textual || (sniffed.is_none() && std::str::from_utf8(bytes).is_ok()) {
        let mut text = String::from_utf8_lossy(bytes).into_owned();
        if !whole {
            text.push_str(&format!(
                "\n[only the first {FETCHED_READ_LIMIT} bytes are shown; the host keeps the rest]"
            ));
        }
        return json!({"type": "text", "text": text});
    }
    json!({"type": "text", "text": format!(
        "[a {essence} payload of {} bytes{}: the host saved it; it cannot be shown here]",
        bytes.len(),
        if whole { "" } else { " or more" }
    )})
}
