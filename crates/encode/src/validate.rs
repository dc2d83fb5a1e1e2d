//! The body actually sent, checked against what its route's API documents: a validator that
//! reads the JSON an encoder wrote, not the messages it was written from, and a repair that
//! turns each block it refuses into a text marker and leaves out each tool it refuses.
//!
//! It checks, with the limits of [`RequestLimits`] and [`ToolRules`] (each sourced and dated
//! where it is defined):
//! - every text block has a character that is not whitespace, on Anthropic's Messages API;
//! - every image's type is one the API takes (PNG, JPEG, GIF, WebP; HEIC and HEIF on Gemini),
//!   its base64 within the per-image cap, its sides read and within the route's (the smaller
//!   side of a request of many images), and the images together within the count;
//! - every PDF's pages counted, within the pages per document and per request, its bytes
//!   within the route's;
//! - audio only where the route takes it, in the formats it takes (`wav`, `mp3` on Chat
//!   Completions); PDFs only where the route takes them;
//! - inline data together within Gemini's 20 MB, and the body within the route's bytes;
//! - text only where the API takes text only: a Chat Completions tool or system message, and
//!   every route's system prompt;
//! - tools: their count, a name of 1 to 64 letters, digits, `_` and `-` (Gemini: also `.` and
//!   `:`, starting with a letter or `_`), a description within the route's length, and an input
//!   schema whose `type` is `object`.
//!
//! The encoders are built to write only bodies it accepts; a generative test holds them to it.
//! The host checks every request too, so a body it would refuse is repaired, never sent.

use mcpl_classify::Media;
use mcpl_lanes::{RequestLimits, RouteId};
use serde_json::{Value, json};

use crate::tools::ToolRules;

/// One thing the route's API would refuse: where it is (a JSON pointer) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Violation {
    /// The JSON pointer of the block, tool or field.
    pub at: String,
    /// What the API would refuse, in words.
    pub why: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.why)
    }
}

/// Every violation in `body` on `route` held to `limits`, in the body's order.
pub fn validate(route: RouteId, limits: &RequestLimits, body: &Value) -> Vec<Violation> {
    let mut check = Check {
        route,
        limits,
        violations: Vec::new(),
        images: Vec::new(),
        inline: 0,
        pages: 0,
    };
    let conversation = match route {
        RouteId::OpenAiResponses => "input",
        RouteId::Gemini => "contents",
        _ => "messages",
    };
    if let Some(items) = body.get(conversation) {
        check.walk(items, &format!("/{conversation}"));
    }
    if route == RouteId::Gemini
        && let Some(system) = body.get("systemInstruction")
    {
        check.walk(system, "/systemInstruction");
    }
    check.positions(body, conversation);
    check.images();
    check.tools(body);
    if let Some(max) = limits.body_bytes {
        let len = crate::body_len(body);
        if len > max {
            check.refuse(
                "",
                format!("the body is {len} bytes, over the route's {max}"),
            );
        }
    }
    check.violations
}

struct Check<'l, 'b> {
    route: RouteId,
    limits: &'l RequestLimits,
    violations: Vec<Violation>,
    /// Each image of a type the route takes: where it is and its base64, checked for its
    /// size, its sides and the count once all are known.
    images: Vec<(String, &'b str)>,
    inline: u64,
    /// The pages of the documents so far.
    pages: u64,
}

impl<'b> Check<'_, 'b> {
    fn refuse(&mut self, at: &str, why: String) {
        self.violations.push(Violation {
            at: at.to_owned(),
            why,
        });
    }

    /// Blocks in places their API takes text only: a Chat Completions tool message, and the
    /// system prompt of every route.
    fn positions(&mut self, body: &Value, conversation: &str) {
        let text_kinds = ["text", "input_text"];
        let mut text_only = |value: &Value, at: String| {
            for (i, part) in value.as_array().into_iter().flatten().enumerate() {
                let kind = part.get("type").and_then(Value::as_str);
                let gemini_text = self.route == RouteId::Gemini && part.get("text").is_some();
                if !gemini_text && !kind.is_some_and(|k| text_kinds.contains(&k)) {
                    self.violations.push(Violation {
                        at: format!("{at}/{i}"),
                        why: format!(
                            "a {} block where the API takes text only",
                            kind.unwrap_or("non-text")
                        ),
                    });
                }
            }
        };
        match self.route {
            RouteId::OpenAiChat => {
                for (i, message) in body[conversation]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    if message["role"] == "tool" || message["role"] == "system" {
                        text_only(&message["content"], format!("/{conversation}/{i}/content"));
                    }
                }
            }
            RouteId::Anthropic | RouteId::TextOnly => {
                text_only(&body["system"], "/system".to_owned())
            }
            RouteId::Gemini => text_only(
                &body["systemInstruction"]["parts"],
                "/systemInstruction/parts".to_owned(),
            ),
            RouteId::OpenAiResponses => {}
        }
    }

    fn walk(&mut self, value: &'b Value, at: &str) {
        match value {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.walk(item, &format!("{at}/{i}"));
                }
            }
            Value::Object(map) => {
                if self.block(value, at) {
                    return;
                }
                for (key, inner) in map {
                    let key = key.replace('~', "~0").replace('/', "~1");
                    self.walk(inner, &format!("{at}/{key}"));
                }
            }
            _ => {}
        }
    }

    /// Checks `value` if it is a content block; true when it was one (its inside is done).
    fn block(&mut self, value: &'b Value, at: &str) -> bool {
        let kind = value.get("type").and_then(Value::as_str);
        match (self.route, kind) {
            (RouteId::Anthropic, Some("text")) => {
                let text = value.get("text").and_then(Value::as_str).unwrap_or("");
                if text.chars().all(char::is_whitespace) {
                    self.refuse(
                        at,
                        "a text block with no character but whitespace".to_owned(),
                    );
                }
                true
            }
            (RouteId::Anthropic, Some("image")) => {
                let media = value.pointer("/source/media_type").and_then(Value::as_str);
                let data = value
                    .pointer("/source/data")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                self.image(at, media, data);
                true
            }
            (RouteId::Anthropic, Some("document")) => {
                let media = value.pointer("/source/media_type").and_then(Value::as_str);
                let data = value
                    .pointer("/source/data")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                self.document(at, media, data);
                true
            }
            (RouteId::OpenAiChat, Some("image_url")) => {
                let url = value
                    .pointer("/image_url/url")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                self.data_url_image(at, url);
                true
            }
            (RouteId::OpenAiResponses, Some("input_image")) => {
                let url = value.get("image_url").and_then(Value::as_str).unwrap_or("");
                self.data_url_image(at, url);
                true
            }
            (RouteId::OpenAiChat, Some("input_audio")) => {
                let format = value.pointer("/input_audio/format").and_then(Value::as_str);
                if !matches!(format, Some("wav" | "mp3"))
                    || self.route.route().audio_in_messages.is_empty()
                {
                    self.refuse(
                        at,
                        format!("audio in format {format:?}, which the route does not take"),
                    );
                }
                true
            }
            (RouteId::OpenAiChat, Some("file")) => {
                let url = value
                    .pointer("/file/file_data")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                self.document(at, data_url_type(url), data_url_data(url));
                true
            }
            (RouteId::OpenAiResponses, Some("input_file")) => {
                let url = value.get("file_data").and_then(Value::as_str).unwrap_or("");
                self.document(at, data_url_type(url), data_url_data(url));
                true
            }
            (RouteId::Gemini, _) if value.get("inline_data").is_some() => {
                let media = value
                    .pointer("/inline_data/mime_type")
                    .and_then(Value::as_str);
                let data = value
                    .pointer("/inline_data/data")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                self.gemini_inline(at, media, data);
                true
            }
            _ => false,
        }
    }

    fn data_url_image(&mut self, at: &str, url: &'b str) {
        self.image(at, data_url_type(url), data_url_data(url));
    }

    fn image(&mut self, at: &str, media: Option<&str>, data: &'b str) {
        // The APIs' own lists, written here on purpose rather than read from mcpl-lanes' route
        // table: the validator is the oracle the table is checked against, so it must not
        // share the table's mistakes.
        let taken = matches!(
            media,
            Some("image/png" | "image/jpeg" | "image/gif" | "image/webp")
        );
        if taken {
            self.images.push((at.to_owned(), data));
        } else {
            self.refuse(
                at,
                format!("an image of type {media:?}, which the route does not take"),
            );
        }
    }

    /// Each image's base64 and sides, and the count, now that all are known.
    fn images(&mut self) {
        let count = self.images.len();
        let many = self.limits.many_images.is_some_and(|many| count > many);
        let max_side = if many {
            self.limits.many_images_side
        } else {
            self.limits.max_side
        };
        for (n, (at, data)) in std::mem::take(&mut self.images).into_iter().enumerate() {
            let side = Media::inspect(data, None)
                .dimensions
                .map(|d| d.width.max(d.height));
            let why = if let Some(max) = self.limits.image_base64
                && data.len() as u64 > max
            {
                format!(
                    "an image of {} base64 characters, over the route's {max}",
                    data.len()
                )
            } else if let Some(max) = self.limits.max_images
                && n >= max
            {
                format!("image {} of the request, over the route's {max}", n + 1)
            } else if side.is_none_or(|side| side == 0 || side > max_side) {
                format!("an image whose sides are not read as within {max_side} px")
            } else {
                continue;
            };
            self.refuse(&at, why);
        }
    }

    fn document(&mut self, at: &str, media: Option<&str>, data: &str) {
        if media != Some("application/pdf") || !self.route.route().documents_in_tool_results {
            self.refuse(
                at,
                format!("a document of type {media:?}, which the route does not take"),
            );
            return;
        }
        let pages = match mcpl_lanes::pdf_pages(data) {
            Ok(pages) => pages,
            Err(why) => {
                self.refuse(at, format!("a PDF whose pages are not counted ({why:?})"));
                return;
            }
        };
        self.pages += u64::from(pages);
        let bytes = data.len() as u64 / 4 * 3;
        if let Some(max) = self.limits.document_pages
            && pages > max
        {
            self.refuse(
                at,
                format!("a PDF of {pages} pages, over the route's {max}"),
            );
        } else if let Some(max) = self.limits.document_bytes
            && bytes > max
        {
            self.refuse(
                at,
                format!("a PDF of about {bytes} bytes, over the route's {max}"),
            );
        } else if let Some(max) = self.limits.request_pages
            && self.pages > u64::from(max)
        {
            self.refuse(at, format!("PDF pages past the request's {max}"));
        }
    }

    fn gemini_inline(&mut self, at: &str, media: Option<&str>, data: &'b str) {
        self.inline += data.len() as u64;
        let taken = matches!(
            media,
            Some(
                "image/png"
                    | "image/jpeg"
                    | "image/webp"
                    | "image/heic"
                    | "image/heif"
                    | "application/pdf"
                    | "audio/wav"
                    | "audio/mp3"
                    | "audio/aiff"
                    | "audio/aac"
                    | "audio/ogg"
                    | "audio/flac"
            )
        );
        if !taken {
            self.refuse(
                at,
                format!("inline data of type {media:?}, which the route does not take"),
            );
        } else if let Some(max) = self.limits.inline_base64
            && self.inline > max
        {
            self.refuse(
                at,
                format!("inline data past the route's {max} base64 characters"),
            );
        } else if media == Some("application/pdf") {
            self.document(at, media, data);
        } else if media.is_some_and(|m| m.starts_with("image/")) {
            self.images.push((at.to_owned(), data));
        }
    }

    fn tools(&mut self, body: &Value) {
        let Some(tools) = body.get("tools").and_then(Value::as_array) else {
            return;
        };
        let rules = ToolRules::of(self.route);
        // (pointer, name, description, schema) of each function.
        let mut functions: Vec<(String, &Value)> = Vec::new();
        for (i, tool) in tools.iter().enumerate() {
            match self.route {
                RouteId::Gemini => {
                    for (j, f) in tool
                        .get("functionDeclarations")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .enumerate()
                    {
                        functions.push((function_at(self.route, i, j), f));
                    }
                }
                RouteId::OpenAiChat => {
                    functions.push((
                        function_at(self.route, i, 0),
                        tool.get("function").unwrap_or(&Value::Null),
                    ));
                }
                _ => functions.push((function_at(self.route, i, 0), tool)),
            }
        }
        if let Some(max) = rules.max_tools
            && functions.len() > max
        {
            let len = functions.len();
            self.refuse("/tools", format!("{len} tools, over the route's {max}"));
        }
        let schema_key = match self.route {
            RouteId::Anthropic | RouteId::TextOnly => "input_schema",
            _ => "parameters",
        };
        for (at, function) in functions {
            let name = function.get("name").and_then(Value::as_str).unwrap_or("");
            if !name_taken(self.route, name) {
                self.refuse(
                    &at,
                    format!("the tool name {name:?}, which the route does not take"),
                );
            }
            if let Some(max) = rules.description_chars {
                let chars = function
                    .get("description")
                    .and_then(Value::as_str)
                    .map_or(0, |d| d.chars().count());
                if chars > max {
                    self.refuse(
                        &at,
                        format!("a description of {chars} characters, over the route's {max}"),
                    );
                }
            }
            match function.get(schema_key) {
                Some(schema) if schema.get("type") == Some(&json!("object")) => {}
                None if self.route == RouteId::Gemini => {}
                _ => self.refuse(&at, "an input schema whose type is not object".to_owned()),
            }
        }
    }
}

/// The data of a `data:` url (what follows its comma).
fn data_url_data(url: &str) -> &str {
    url.split_once(',').map_or("", |(_, data)| data)
}

/// The media type of a `data:` url.
fn data_url_type(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("data:")?;
    let end = rest.find([';', ','])?;
    Some(&rest[..end])
}

/// Whether a tool name is one the route takes.
fn name_taken(route: RouteId, name: &str) -> bool {
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let within = !name.is_empty() && name.len() <= 64;
    match route {
        RouteId::Gemini => {
            within
                && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| plain(c) || c == '.' || c == ':')
        }
        _ => within && name.chars().all(plain),
    }
}

/// Turns each block `violations` name into a text marker saying why, in the route's text shape,
/// leaves out each tool they name, and removes blank text blocks; returns what it did, one line
/// each. A violation of the whole body cannot be repaired here and is left for the caller.
pub fn repair(route: RouteId, body: &mut Value, violations: &[Violation]) -> Vec<String> {
    let mut done = Vec::new();
    let mut dropped_tools: Vec<String> = Vec::new();
    for violation in violations {
        if violation.at.starts_with("/tools") {
            dropped_tools.push(violation.at.clone());
            continue;
        }
        // The whole body over its bytes is the caller's to shrink.
        if violation.at.is_empty() {
            continue;
        }
        let Some(block) = body.pointer_mut(&violation.at) else {
            continue;
        };
        let marker = format!("[not sent: {}]", violation.why);
        *block = match route {
            RouteId::OpenAiResponses => json!({"type": "input_text", "text": marker}),
            RouteId::Gemini => json!({"text": marker}),
            _ => json!({"type": "text", "text": marker}),
        };
        done.push(format!("{violation}: sent as a marker"));
    }
    if !dropped_tools.is_empty() {
        done.extend(leave_out_tools(route, body, &dropped_tools));
    }
    done
}

/// Where the `declaration`th function of the `tool`th tool is in a route's body (Gemini groups
/// functions in declarations; the others have one function a tool): what a violation names
/// and a repair finds.
fn function_at(route: RouteId, tool: usize, declaration: usize) -> String {
    match route {
        RouteId::Gemini => format!("/tools/{tool}/functionDeclarations/{declaration}"),
        RouteId::OpenAiChat => format!("/tools/{tool}/function"),
        _ => format!("/tools/{tool}"),
    }
}

/// Leaves out the tools at `pointers` (or every tool past the count, for `/tools`).
fn leave_out_tools(route: RouteId, body: &mut Value, pointers: &[String]) -> Vec<String> {
    let rules = ToolRules::of(route);
    let Some(tools) = body.get_mut("tools").and_then(Value::as_array_mut) else {
        return Vec::new();
    };
    let mut done = Vec::new();
    if route == RouteId::Gemini {
        for (i, tool) in tools.iter_mut().enumerate() {
            if let Some(list) = tool
                .get_mut("functionDeclarations")
                .and_then(Value::as_array_mut)
            {
                let mut j = 0;
                list.retain(|_| {
                    let keep = !pointers.contains(&function_at(route, i, j));
                    j += 1;
                    keep
                });
                if let Some(max) = rules.max_tools {
                    list.truncate(max);
                }
            }
        }
        done.push("tools the route refuses were left out".to_owned());
        return done;
    }
    let mut i = 0;
    tools.retain(|_| {
        let at = function_at(route, i, 0);
        i += 1;
        !pointers.contains(&at)
    });
    if let Some(max) = rules.max_tools {
        tools.truncate(max);
    }
    done.push("tools the route refuses were left out".to_owned());
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(route: RouteId, body: &Value) -> Vec<String> {
        validate(route, &route.request_limits(), body)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn what_each_api_refuses_is_found_and_repaired() {
        let mut body = json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": " \n"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": "AA"}},
            {"type": "document", "source": {"type": "base64", "media_type": "text/plain", "data": "AA"}},
        ]}], "tools": [{"name": "ok", "input_schema": {"type": "object"}},
                       {"name": "bad name", "input_schema": {"type": "string"}}]});
        let violations = validate(RouteId::Anthropic, &RequestLimits::ANTHROPIC, &body);
        let said: Vec<String> = violations.iter().map(ToString::to_string).collect();
        assert_eq!(said.len(), 5, "{said:?}");
        assert!(
            said[0].starts_with("/messages/0/content/0: a text block"),
            "{said:?}"
        );
        assert!(said[1].contains("image/bmp"), "{said:?}");
        assert!(said[3].starts_with("/tools/1: the tool name"), "{said:?}");
        repair(RouteId::Anthropic, &mut body, &violations);
        assert!(found(RouteId::Anthropic, &body).is_empty(), "{body}");
        assert_eq!(body["tools"].as_array().unwrap().len(), 1);

        let mut body = json!({"contents": [{"role": "user", "parts": [
            {"inline_data": {"mime_type": "image/gif", "data": "AA"}}]}],
            "tools": [{"functionDeclarations": [{"name": "1abc"}, {"name": "_ok"}]}]});
        let said = found(RouteId::Gemini, &body);
        assert_eq!(said.len(), 2, "{said:?}");
        let violations = validate(RouteId::Gemini, &RequestLimits::GEMINI, &body);
        repair(RouteId::Gemini, &mut body, &violations);
        assert!(found(RouteId::Gemini, &body).is_empty(), "{body}");

        // An image whose header says 9000 px wide, and a PDF whose pages do not count.
        use base64::Engine as _;
        let mut png = mcpl_testkit::fixture("image.png");
        png[16..20].copy_from_slice(&9000u32.to_be_bytes());
        let png = base64::engine::general_purpose::STANDARD.encode(png);
        let body = json!({"messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                             "data": "JVBERi0="}},
        ]}]});
        let said = found(RouteId::Anthropic, &body);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].contains("PDF whose pages are not counted"),
            "{said:?}"
        );
        assert!(
            said[1].contains("sides are not read as within 8000 px"),
            "{said:?}"
        );

        // An image in a Chat Completions tool message, where the API takes text only.
        let body = json!({"messages": [{"role": "tool", "tool_call_id": "c", "content": [
            {"type": "text", "text": "a"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]}]});
        let said = found(RouteId::OpenAiChat, &body);
        assert!(
            said.iter().any(|s| s.starts_with(
                "/messages/0/content/1: a image_url block where the API takes text only"
            )),
            "{said:?}"
        );

        let tools: Vec<Value> = (0..129)
            .map(|n| {
                json!({"type": "function", "function": {"name": format!("t{n}"),
                            "parameters": {"type": "object"}}})
            })
            .collect();
        let mut body = json!({"messages": [{"role": "user", "content": [
            {"type": "input_audio", "input_audio": {"format": "ogg", "data": "AA"}}]}],
            "tools": tools});
        let said = found(RouteId::OpenAiChat, &body);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[1].starts_with("/tools: 129 tools, over the route's 128"),
            "{said:?}"
        );
        let violations = validate(RouteId::OpenAiChat, &RequestLimits::OPENAI, &body);
        repair(RouteId::OpenAiChat, &mut body, &violations);
        assert!(found(RouteId::OpenAiChat, &body).is_empty(), "{body}");
    }
}
