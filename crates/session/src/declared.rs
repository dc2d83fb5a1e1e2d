//! What servers declare, and what the session makes of it (decisions 0133 and 0134).
//!
//! - A tool's `outputSchema`: its `structuredContent` is checked against it. A mismatch is one
//!   line the model reads beside the content; the result itself is never lost.
//! - A tool's `_meta["anthropic/maxResultSizeChars"]`, or a budget the config gives the tool:
//!   the tool's results get that budget in place of the server's, never above a ceiling.
//! - A content block's `annotations.audience`: a block for the user only goes to the user, a
//!   block for the assistant only goes to the model alone.
//! - The server's `instructions`: fenced as the server's words, redacted and bounded, for the
//!   system prompt.
//!
//! Every one of these is a server's to send, so each is read as hostile input: sizes are
//! bounded, and nothing a server writes can make a check panic or run without end.

use std::borrow::Cow;
use std::collections::HashMap;

use mcpl_budget::{Bound, DEFAULT_TOOL_BUDGET_CEILING, TokenEstimator};
use mcpl_classify::DataView;
use serde_json::Value;

use crate::{READ_RESULT_MIN_TOKENS, Session, Shown};
use mcpl_encode::conversation::Content;

/// The most estimated tokens one character can cost. A character is at most 4 bytes of UTF-8,
/// and [`Bound`] never prices a text above its bytes, so `chars × 4` tokens hold any text of
/// `chars` characters.
pub const TOKENS_PER_CHAR: u64 = 4;
/// The `_meta` key a server declares a tool's result size under, in characters.
pub const MAX_RESULT_SIZE_KEY: &str = "anthropic/maxResultSizeChars";

/// The largest output schema compiled, in bytes: a larger one is not, and its results go
/// unchecked.
const SCHEMA_BYTES: usize = 256 * 1024;
/// The most bytes of output schemas one listing compiles, all tools together.
const LISTING_SCHEMA_BYTES: usize = 4 * 1024 * 1024;
/// The largest `structuredContent` checked, in bytes of JSON.
const STRUCTURED_BYTES: usize = 1024 * 1024;
/// How many of a check's errors the model's line names.
pub const SCHEMA_ERRORS: usize = 3;
/// The most characters of one error the line keeps.
const ERROR_CHARS: usize = 200;
/// The most bytes of one block shown to the user.
const USER_BLOCK_BYTES: usize = 4096;
/// The most blocks of one result shown to the user.
const USER_BLOCKS: usize = 16;
/// How far past a cut a text is redacted before the cut, so a secret across it is still found.
const REDACT_MARGIN: usize = 16 * 1024;
/// The tag the system prompt fences each server's instructions in.
const FENCE: &str = "server-instructions";

/// What the servers declared of their tools, and the budgets the config gives tools.
#[derive(Default)]
pub(crate) struct Declarations {
    /// By server, then by tool: what its latest listing declared.
    tools: HashMap<String, HashMap<String, Declared>>,
    /// By server, then by tool: the budget the config gives it.
    configured: HashMap<String, HashMap<String, u64>>,
    /// The most a tool's own budget may be; [`DEFAULT_TOOL_BUDGET_CEILING`] when unset.
    ceiling: Option<u64>,
}

/// What one tool declared.
#[derive(Default)]
struct Declared {
    /// Its output schema, compiled, or why it could not be.
    schema: Option<Result<Box<jsonschema::Validator>, String>>,
    /// Its `maxResultSizeChars`.
    max_chars: Option<u64>,
}

/// Which readers a content block is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// The user alone: shown to the user, kept from the model.
    User,
    /// The model alone: given to the model, not shown to the user.
    Assistant,
    /// Both: no audience, both roles, or a value that is not a list of the two roles.
    Both,
}

impl Audience {
    /// The audience a block's `annotations.audience` names. Anything but a list of the two
    /// roles (a string, an unknown role, an empty list) is both, as if it were not there.
    pub fn of(block: &Value) -> Audience {
        Audience::of_annotations(block.get("annotations"))
    }

    /// The audience a block's `annotations` value names.
    fn of_annotations(annotations: Option<&Value>) -> Audience {
        let Some(roles) = annotations
            .and_then(|a| a.get("audience"))
            .and_then(Value::as_array)
        else {
            return Audience::Both;
        };
        let (mut user, mut assistant) = (false, false);
        for role in roles {
            match role.as_str() {
                Some("user") => user = true,
                Some("assistant") => assistant = true,
                _ => return Audience::Both,
            }
        }
        match (user, assistant) {
            (true, false) => Audience::User,
            (false, true) => Audience::Assistant,
            _ => Audience::Both,
        }
    }
}

/// A result's content split by audience: the result the model gets, and the blocks for the
/// user alone.
struct Split<'v> {
    for_model: Cow<'v, Value>,
    for_user: Vec<&'v Value>,
}

/// Splits the blocks for the user alone out of `result`'s content array. The result is
/// borrowed as it is when there are none.
fn split(result: &Value) -> Split<'_> {
    // A result shaped as a block has no blocks of its own, as the view reads it.
    let blocks = mcpl_classify::result_fields(result)
        .and_then(|fields| fields.get("content"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let for_user: Vec<&Value> = blocks
        .iter()
        .filter(|block| Audience::of(block) == Audience::User)
        .collect();
    if for_user.is_empty() {
        return Split {
            for_model: Cow::Borrowed(result),
            for_user,
        };
    }
    let mut kept = serde_json::Map::new();
    if let Value::Object(fields) = result {
        for (key, value) in fields {
            let value = match (key.as_str(), value) {
                ("content", Value::Array(blocks)) => Value::Array(
                    blocks
                        .iter()
                        .filter(|block| Audience::of(block) != Audience::User)
                        .cloned()
                        .collect(),
                ),
                _ => value.clone(),
            };
            kept.insert(key.clone(), value);
        }
    }
    Split {
        for_model: Cow::Owned(Value::Object(kept)),
        for_user,
    }
}

/// What an output schema's check reads of a result.
#[derive(Clone)]
struct Checked<'v> {
    /// `isError: true`.
    is_error: bool,
    /// `structuredContent`, when the key is there (`null` included).
    structured: Option<DataView<'v>>,
}

impl<'v> Checked<'v> {
    fn of_value(result: &'v Value) -> Checked<'v> {
        // A result shaped as a block has neither field, as the view reads it.
        let fields = mcpl_classify::result_fields(result);
        Checked {
            is_error: fields.and_then(|fields| fields.get("isError")) == Some(&Value::Bool(true)),
            structured: fields
                .and_then(|fields| fields.get("structuredContent"))
                .map(|data| DataView::Value(Cow::Borrowed(data))),
        }
    }

    fn of_view(view: &'v mcpl_classify::ResultView<'_>) -> Checked<'v> {
        Checked {
            is_error: view.is_error,
            structured: view.structured.as_ref().map(DataView::borrowed),
        }
    }
}

/// Whether a result read from bytes may hold a block for the user alone: a block whose
/// `annotations` name the user alone as its audience, as the view reads them. A result that
/// may is read as a `Value`, where [`split`] decides.
fn may_hold_user_blocks(view: &mcpl_classify::ResultView<'_>) -> bool {
    let Some(mcpl_classify::ContentView::Blocks(blocks)) = &view.content else {
        return false;
    };
    blocks.iter().any(|block| match block {
        mcpl_classify::BlockView::Object(object) => object.for_the_user_alone(),
        mcpl_classify::BlockView::Text(_) | mcpl_classify::BlockView::Other(_) => false,
    })
}

impl Declarations {
    /// Takes a server's listing: each tool's output schema compiled once, and its declared
    /// result size. Returns one line for each schema that cannot be used.
    fn declare(&mut self, server: &str, tools: &[Value]) -> Vec<String> {
        let mut notes = Vec::new();
        let mut compiled_bytes = 0usize;
        let mut declared = HashMap::new();
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            let max_chars = tool
                .get("_meta")
                .and_then(|meta| meta.get(MAX_RESULT_SIZE_KEY))
                .and_then(declared_chars);
            let schema = tool.get("outputSchema").map(|schema| {
                let compiled = compile(schema, &mut compiled_bytes);
                if let Err(why) = &compiled {
                    notes.push(clip(
                        &format!(
                            "server {server}: the outputSchema of {name} {why}; its results are not checked"
                        ),
                        ERROR_CHARS * 2,
                    ));
                }
                compiled
            });
            declared.insert(name.to_owned(), Declared { schema, max_chars });
        }
        self.tools.insert(server.to_owned(), declared);
        notes
    }

    fn declared(&self, server: &str, tool: &str) -> Option<&Declared> {
        self.tools.get(server)?.get(tool)
    }

    /// The line the model reads when `result`'s structured content does not match its tool's
    /// output schema (not yet redacted). Why it was not checked goes to `diagnostics`.
    fn check(
        &self,
        server: &str,
        tool: &str,
        result: Checked<'_>,
        diagnostics: &mut Vec<String>,
    ) -> Option<String> {
        let schema = self.declared(server, tool)?.schema.as_ref()?;
        // An error result need not match: it says what went wrong instead.
        if result.is_error {
            return None;
        }
        let validator = match schema {
            Ok(validator) => validator,
            Err(why) => {
                diagnostics.push(format!(
                    "structuredContent not checked: the tool's outputSchema {why}"
                ));
                return None;
            }
        };
        let Some(structured) = &result.structured else {
            return Some(
                "[mcpl: the tool declares an outputSchema but sent no structuredContent]"
                    .to_owned(),
            );
        };
        // Raw JSON is parsed only where its compact form could fit: over twice the limit, it
        // would need more than half of it to be spaces or escapes (decision 0142).
        let structured = match structured {
            DataView::Raw(raw) if raw.get().len() > 2 * STRUCTURED_BYTES => None,
            data => Some(data.to_value()),
        };
        let Some(structured) = structured.filter(|data| fits(data, STRUCTURED_BYTES)) else {
            diagnostics.push(format!(
                "structuredContent not checked against the tool's outputSchema: over {STRUCTURED_BYTES} bytes"
            ));
            return None;
        };
        let errors = schema_errors(validator, &structured, |error| {
            let path = error.instance_path().to_string();
            let at = if path.is_empty() { "/" } else { &path };
            clip(&format!("{at}: {error}"), ERROR_CHARS)
        })?;
        Some(format!(
            "[mcpl: structuredContent does not match the tool's outputSchema: {errors}]"
        ))
    }
}

/// What `value` breaks of `validator`'s schema: its first [`SCHEMA_ERRORS`] errors, each
/// written by `line`, joined by `; `, and `; and more` when there are more; `None` when it
/// matches.
pub fn schema_errors<'v>(
    validator: &'v jsonschema::Validator,
    value: &'v Value,
    line: impl Fn(jsonschema::ValidationError<'v>) -> String,
) -> Option<String> {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .take(SCHEMA_ERRORS + 1)
        .map(line)
        .collect();
    if errors.is_empty() {
        return None;
    }
    let more = if errors.len() > SCHEMA_ERRORS {
        "; and more"
    } else {
        ""
    };
    let shown = &errors[..errors.len().min(SCHEMA_ERRORS)];
    Some(format!("{}{more}", shown.join("; ")))
}

/// The validator for an output schema, with linear-time patterns and no remote `$ref`
/// fetched; or why there is none. `spent` counts the listing's bytes compiled so far.
fn compile(schema: &Value, spent: &mut usize) -> Result<Box<jsonschema::Validator>, String> {
    let left = LISTING_SCHEMA_BYTES
        .saturating_sub(*spent)
        .min(SCHEMA_BYTES);
    let bytes = json_bytes(schema, left)
        .ok_or_else(|| format!("is over {} bytes", SCHEMA_BYTES.min(left.max(1))))?;
    *spent += bytes;
    jsonschema::options()
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .should_validate_formats(false)
        .build(schema)
        .map(Box::new)
        .map_err(|error| clip(&format!("does not compile: {error}"), ERROR_CHARS))
}

/// The bytes of `value`'s JSON, or `None` as soon as they pass `limit`.
fn json_bytes(value: &Value, limit: usize) -> Option<usize> {
    struct Counter {
        bytes: usize,
        limit: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.bytes += buf.len();
            if self.bytes > self.limit {
                return Err(std::io::Error::other("over the limit"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter { bytes: 0, limit };
    serde_json::to_writer(&mut counter, value).ok()?;
    Some(counter.bytes)
}

/// Whether `value`'s JSON takes at most `limit` bytes.
fn fits(value: &Value, limit: usize) -> bool {
    json_bytes(value, limit).is_some()
}

/// `text` up to `chars` characters, with `…` when cut.
fn clip(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// The longest start of `text` of at most `bytes` bytes that ends on a character's boundary.
fn head(text: &str, bytes: usize) -> &str {
    if text.len() <= bytes {
        return text;
    }
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A declared size in characters: a whole number, or a number a JavaScript server wrote with a
/// fraction (`5e4`, `6000.5`, taken down to the whole characters). Negative, not finite or not a
/// number is no size.
fn declared_chars(value: &Value) -> Option<u64> {
    value.as_u64().or_else(|| {
        let chars = value.as_f64().filter(|f| f.is_finite() && *f >= 0.0)?;
        // `as` saturates: a size past u64's range is held to the ceiling like any large one.
        Some(chars as u64)
    })
}

/// A tool's own budget for a size of `chars` characters: an upper bound of what so many
/// characters cost ([`TOKENS_PER_CHAR`] each).
pub fn chars_to_tokens(chars: u64) -> u64 {
    chars.saturating_mul(TOKENS_PER_CHAR)
}

/// `text` with every spelling of the fence's tag name broken, so the server's words cannot
/// close the fence they are in.
fn unfenced(text: &str) -> Cow<'_, str> {
    let lower = text.to_ascii_lowercase();
    if !lower.contains(FENCE) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(found) = lower[at..].find(FENCE) {
        out.push_str(&text[at..at + found]);
        out.push_str("server instructions");
        at += found + FENCE.len();
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

impl Session {
    /// Takes the tools `server` listed: each output schema is compiled once (bounded in size),
    /// and each declared result size kept. Returns a line for each schema that cannot be
    /// used; that tool's results go unchecked. A new listing replaces the last.
    pub fn declare_tools(&mut self, server: &str, tools: &[Value]) -> Vec<String> {
        self.declarations.declare(server, tools)
    }

    /// Sets the most estimated tokens a tool's own budget may be (`mcpl.maxToolBudget`).
    pub fn set_budget_ceiling(&mut self, tokens: u64) {
        self.declarations.ceiling = Some(tokens);
    }

    /// The most estimated tokens a tool's own budget may be.
    pub fn budget_ceiling(&self) -> u64 {
        self.declarations
            .ceiling
            .unwrap_or(DEFAULT_TOOL_BUDGET_CEILING)
    }

    /// Gives the tool `tool` of `server` a budget of its own, in estimated tokens, over what
    /// the server declares for it (held to [`Session::budget_ceiling`]).
    pub fn set_tool_budget(&mut self, server: &str, tool: &str, tokens: u64) {
        self.declarations
            .configured
            .entry(server.to_owned())
            .or_default()
            .insert(tool.to_owned(), tokens);
    }

    /// The budget of one result of `tool` on `server`: the config's for the tool, else the
    /// size the server declared for it ([`chars_to_tokens`]), each held to the ceiling and
    /// to at least [`READ_RESULT_MIN_TOKENS`]; else the server's budget.
    pub fn tool_budget(&self, server: &str, tool: &str) -> u64 {
        self.own_budget(server, tool)
            .map_or_else(|| self.policy(server).budget, |(tokens, _)| tokens)
    }

    /// The tool's own budget, held to the ceiling and the floor, and where it comes from.
    fn own_budget(&self, server: &str, tool: &str) -> Option<(u64, String)> {
        let configured = self
            .declarations
            .configured
            .get(server)
            .and_then(|tools| tools.get(tool))
            .map(|tokens| (*tokens, "the config's toolBudgets".to_owned()));
        let declared = || {
            let chars = self.declarations.declared(server, tool)?.max_chars?;
            Some((
                chars_to_tokens(chars),
                format!("the server's {MAX_RESULT_SIZE_KEY} of {chars}"),
            ))
        };
        let (tokens, from) = configured.or_else(declared)?;
        let held = tokens
            .min(self.budget_ceiling())
            .max(READ_RESULT_MIN_TOKENS);
        Some((held, from))
    }

    /// A result of `tool` on `server` as the model gets it, within `budget`, after what the
    /// server declared: the blocks for the user alone are taken out (into
    /// [`Shown::for_user`]), and a structured content its tool's output schema refuses gets
    /// one line the model reads after the content. Each line the model reads is redacted and
    /// bounded, and its price is kept out of the budget the rest is fitted to.
    pub fn declared_result(
        &mut self,
        server: &str,
        tool: &str,
        result: &Value,
        budget: u64,
    ) -> Shown {
        let split = split(result);
        let for_model: &Value = &split.for_model;
        let checked = Checked::of_value(for_model);
        let for_user = split.for_user.len();
        let mut shown = self.declared(
            server,
            tool,
            checked,
            for_user,
            budget,
            |session, budget| session.tool_result_within(server, for_model, budget),
        );
        shown.for_user = self.for_user(server, &split.for_user);
        shown
    }

    /// [`Session::declared_result`] for a result as the JSON text of its `result` (the bytes a
    /// client read), read by the one reader without a `Value` (decision 0139): the same
    /// [`Shown`] as for those bytes parsed as a host reads messages
    /// (`mcpl_classify::parse_json_repaired`). Its images over the route's limits are scaled
    /// where they stand in the view (decision 0161). A result with blocks for the user alone,
    /// or that only a repair other than a lone surrogate's makes JSON, takes the `Value` path.
    /// Fails only on bytes no repair makes JSON.
    pub fn declared_result_bytes(
        &mut self,
        server: &str,
        tool: &str,
        bytes: &[u8],
        budget: u64,
    ) -> Result<Shown, serde_json::Error> {
        let mut mended = Vec::new();
        if let Some((mut view, is_object)) = self.view_of(bytes, &mut mended)
            && !may_hold_user_blocks(&view)
        {
            // Scaled before anything reads it, as the `Value` path scales a result.
            let mut diagnostics = Vec::new();
            self.scale_view(&mut view, is_object, &mut diagnostics);
            let checked = Checked::of_view(&view);
            return Ok(
                self.declared(server, tool, checked, 0, budget, |session, budget| {
                    session.tool_result_read(server, &view, is_object, budget, diagnostics)
                }),
            );
        }
        let (value, _) = mcpl_classify::parse_json_repaired(bytes)?;
        Ok(self.declared_result(server, tool, &value, budget))
    }

    /// What both readers of a declared result share: the tool's own budget, the output schema's
    /// line, the line saying how many blocks (`for_user`) went to the user alone, and those
    /// lines priced out of the budget `shown` fits the rest to.
    fn declared(
        &mut self,
        server: &str,
        tool: &str,
        checked: Checked<'_>,
        for_user: usize,
        budget: u64,
        shown: impl FnOnce(&mut Session, u64) -> Shown,
    ) -> Shown {
        let mut diagnostics = Vec::new();
        if let Some((tokens, from)) = self.own_budget(server, tool) {
            diagnostics.push(format!(
                "the tool's own budget: {tokens} estimated tokens, from {from} (at most {})",
                self.budget_ceiling()
            ));
        }
        let mut lines = Vec::new();
        if let Some(line) = self
            .declarations
            .check(server, tool, checked, &mut diagnostics)
        {
            lines.push(self.server_text(server, &line));
        }
        if for_user > 0 {
            lines.push(format!(
                "[mcpl: {for_user} content block{} shown to the user, not to you]",
                if for_user == 1 { " was" } else { "s were" }
            ));
        }
        let reserved: u64 = lines.iter().map(|line| Bound.count(line) + 1).sum();
        let mut shown = shown(self, budget.saturating_sub(reserved));
        if let Some(spill) = &shown.spill {
            // A part read back from its spill may be as large as the tool's own budget.
            let tool_budget = self.tool_budget(server, tool);
            self.spill_budgets
                .insert(spill.id.as_str().to_owned(), tool_budget);
        }
        for line in lines {
            shown.output.stored.push('\n');
            shown.output.stored.push_str(&line);
            if let Some(parts) = &mut shown.output.live {
                parts.push(Content::Text(line));
            }
        }
        if reserved > 0 {
            shown.content = self.encoder.tool_result(&shown.output);
            shown.tokens += reserved;
        }
        diagnostics.append(&mut shown.diagnostics);
        shown.diagnostics = diagnostics;
        shown
    }

    /// What the user is shown of the blocks for the user alone: a text's text, any other
    /// block's type, each redacted and bounded; at most [`USER_BLOCKS`] of them.
    fn for_user(&mut self, server: &str, blocks: &[&Value]) -> Vec<String> {
        let mut shown: Vec<String> = blocks
            .iter()
            .take(USER_BLOCKS)
            .map(|block| match block.get("text").and_then(Value::as_str) {
                Some(text) if block.get("type").and_then(Value::as_str) == Some("text") => {
                    self.bounded_text(server, text, USER_BLOCK_BYTES)
                }
                _ => {
                    let kind = block.get("type").and_then(Value::as_str).unwrap_or("?");
                    let kind = self.server_text(server, &clip(kind, 40));
                    format!("[{kind} block]")
                }
            })
            .collect();
        if blocks.len() > USER_BLOCKS {
            shown.push(format!(
                "[and {} more blocks for the user]",
                blocks.len() - USER_BLOCKS
            ));
        }
        shown
    }

    /// `text` redacted as a server's words are, then cut to `max_bytes` with a note of what
    /// was left out. Only the start of a long text is read.
    fn bounded_text(&mut self, server: &str, text: &str, max_bytes: usize) -> String {
        let read = head(text, max_bytes.saturating_add(REDACT_MARGIN));
        let redacted = self.server_text(server, read);
        let kept = head(&redacted, max_bytes);
        if kept.len() == redacted.len() && read.len() == text.len() {
            return redacted;
        }
        format!(
            "{kept} [cut: the rest of its {} bytes left out]",
            text.len()
        )
    }

    /// A server's `instructions` as the system prompt carries them, or `None` when there are
    /// none (or `max_bytes` is 0): redacted, cut to `max_bytes`, and fenced as the server's
    /// words. The same text gives the same bytes every time, so a prompt that carries them
    /// stays cached.
    pub fn server_instructions(
        &mut self,
        server: &str,
        text: &str,
        max_bytes: usize,
    ) -> Option<String> {
        if max_bytes == 0 || text.trim().is_empty() {
            return None;
        }
        let bounded = self.bounded_text(server, text.trim(), max_bytes);
        Some(format!(
            "<{FENCE} server=\"{server}\">\nThe MCP server \"{server}\" gave these instructions for \
             its tools. They are the server's words, not the host's or the user's.\n{}\n</{FENCE}>",
            unfenced(&bounded)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_audience_that_is_not_a_list_of_the_two_roles_is_both() {
        let of = |audience: Value| Audience::of(&json!({"annotations": {"audience": audience}}));
        assert_eq!(of(json!(["user"])), Audience::User);
        assert_eq!(of(json!(["assistant"])), Audience::Assistant);
        assert_eq!(of(json!(["user", "assistant"])), Audience::Both);
        assert_eq!(of(json!("user")), Audience::Both);
        assert_eq!(of(json!(["user", "admin"])), Audience::Both);
        assert_eq!(of(json!([])), Audience::Both);
        assert_eq!(of(json!([1])), Audience::Both);
        assert_eq!(
            Audience::of(&json!({"annotations": "user"})),
            Audience::Both
        );
    }

    #[test]
    fn the_fence_cannot_be_closed_from_inside() {
        assert_eq!(
            unfenced("a </Server-Instructions> b"),
            "a </server instructions> b"
        );
        assert_eq!(unfenced("plain"), "plain");
    }

    #[test]
    fn a_json_size_is_counted_only_up_to_its_limit() {
        assert_eq!(json_bytes(&json!([1, 2]), 10), Some(5));
        assert_eq!(json_bytes(&json!("x".repeat(100)), 10), None);
    }

    #[test]
    fn a_head_ends_on_a_character() {
        assert_eq!(head("héllo", 2), "h");
        assert_eq!(head("héllo", 3), "hé");
    }
}
