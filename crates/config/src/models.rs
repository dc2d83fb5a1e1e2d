//! What each model takes: images, PDFs and audio natively, its context window and its output
//! limit. A route says what an API takes; a model may take less (`o3-mini` takes no image on
//! Chat Completions, and only the audio models take `input_audio`). The table is LiteLLM's
//! model list, vendored in `data/models.json` with its source, licence and date, and refreshed
//! by `cargo xtask models`. The configuration's `mcpl.models` overrides it per model; a model in
//! neither gets a conservative default for its route.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use mcpl_budget::PricedRoute;
use mcpl_lanes::RouteId;
use serde::Deserialize;

/// The vendored table.
const TABLE: &str = include_str!("../data/models.json");

/// What one model takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Capabilities {
    /// Images natively.
    pub images: bool,
    /// PDFs natively.
    pub pdf: bool,
    /// Audio natively.
    pub audio: bool,
    /// The context window, in tokens, when known.
    #[serde(rename = "input")]
    pub context_window: Option<u64>,
    /// The most tokens of one answer, when known.
    #[serde(rename = "output")]
    pub max_output: Option<u64>,
}

/// A model's entry in `mcpl.models`: each key overrides what the table or the default says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct ModelOverride {
    /// Images natively.
    pub images: Option<bool>,
    /// PDFs natively.
    pub pdf: Option<bool>,
    /// Audio natively.
    pub audio: Option<bool>,
    /// The context window, in tokens.
    pub context_window: Option<u64>,
    /// The most tokens of one answer.
    pub max_output_tokens: Option<u64>,
}

/// Where a model's capabilities came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// The vendored table, under this name.
    Table(String),
    /// The route's conservative default: the model is not in the table.
    Default,
}

/// A model's capabilities and where they came from; `configured` when `mcpl.models` changed any.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Resolved {
    /// What the model takes.
    pub capabilities: Capabilities,
    /// The table or the default.
    pub source: Source,
    /// Whether `mcpl.models` overrode anything.
    pub configured: bool,
}

#[derive(Deserialize)]
struct Table {
    source: String,
    date: String,
    models: BTreeMap<String, BTreeMap<String, Capabilities>>,
}

fn table() -> Option<&'static Table> {
    static TABLE_READ: OnceLock<Option<Table>> = OnceLock::new();
    TABLE_READ
        .get_or_init(|| serde_json::from_str(TABLE).ok())
        .as_ref()
}

/// The table's source and date, as `mcpl run` names them.
pub fn table_source() -> String {
    table().map_or_else(
        || "no model table".to_owned(),
        |t| format!("{}, {}", t.source, t.date),
    )
}

/// The provider whose models a route reaches, as the table names it.
fn provider(route: RouteId) -> Option<&'static str> {
    match route {
        RouteId::Anthropic => Some("anthropic"),
        RouteId::OpenAiChat | RouteId::OpenAiResponses => Some("openai"),
        RouteId::Gemini => Some("gemini"),
        RouteId::TextOnly => None,
    }
}

/// What a model the table does not know gets on `route`: every Claude and Gemini model in the
/// table takes images and PDFs (Gemini audio too); OpenAI's do not all take images, so an
/// unknown OpenAI model gets text only.
pub fn default_for(route: RouteId) -> Capabilities {
    let (images, pdf, audio) = match route {
        RouteId::Anthropic => (true, true, false),
        RouteId::Gemini => (true, true, true),
        RouteId::OpenAiChat | RouteId::OpenAiResponses | RouteId::TextOnly => (false, false, false),
    };
    Capabilities {
        images,
        pdf,
        audio,
        context_window: None,
        max_output: None,
    }
}

/// The capabilities of `model` on `route`: the table's entry under its name (or its name
/// without a trailing date, `-20250929` or `-2025-09-29`), else the route's default, then
/// whatever `overrides` says of it.
pub fn resolve(
    route: RouteId,
    model: &str,
    overrides: &BTreeMap<String, ModelOverride>,
) -> Resolved {
    let found = provider(route)
        .and_then(|p| table()?.models.get(p))
        .and_then(|models| {
            let undated = undated(model);
            [model, undated]
                .into_iter()
                .find_map(|name| Some((name.to_owned(), *models.get(name)?)))
        });
    let (mut capabilities, source) = match found {
        Some((name, capabilities)) => (capabilities, Source::Table(name)),
        None => (default_for(route), Source::Default),
    };
    let configured = overrides.get(model);
    if let Some(o) = configured {
        capabilities.images = o.images.unwrap_or(capabilities.images);
        capabilities.pdf = o.pdf.unwrap_or(capabilities.pdf);
        capabilities.audio = o.audio.unwrap_or(capabilities.audio);
        capabilities.context_window = o.context_window.or(capabilities.context_window);
        capabilities.max_output = o.max_output_tokens.or(capabilities.max_output);
    }
    Resolved {
        capabilities,
        source,
        configured: configured.is_some(),
    }
}

/// `model` without a trailing release date.
fn undated(model: &str) -> &str {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((head, date)) = model.rsplit_once('-')
        && date.len() == 8
        && digits(date)
    {
        return head;
    }
    // `-YYYY-MM-DD`: three dashes from the end.
    let parts: Vec<&str> = model.rsplitn(4, '-').collect();
    if let [day, month, year, head] = parts.as_slice()
        && (year.len(), month.len(), day.len()) == (4, 2, 2)
        && digits(year)
        && digits(month)
        && digits(day)
    {
        return head;
    }
    model
}

/// `route` as `capabilities` narrow it: images, PDFs and audio go natively only where both the
/// API and the model take them. The route's limits and prices stay.
pub fn narrow(route: &PricedRoute, capabilities: Capabilities) -> PricedRoute {
    route.narrowed(mcpl_budget::NativeMedia::new(
        capabilities.images,
        capabilities.pdf,
        capabilities.audio,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_reads_and_knows_the_models_the_issue_names() {
        assert!(table().is_some(), "data/models.json does not read");
        let none = BTreeMap::new();
        let o3 = resolve(RouteId::OpenAiChat, "o3-mini", &none);
        assert_eq!(o3.source, Source::Table("o3-mini".to_owned()));
        assert!(!o3.capabilities.images && !o3.capabilities.pdf && !o3.capabilities.audio);
        let gpt4o = resolve(RouteId::OpenAiChat, "gpt-4o", &none).capabilities;
        assert!(gpt4o.images && gpt4o.pdf && !gpt4o.audio);
        let dated = resolve(RouteId::OpenAiChat, "gpt-4o-2099-01-31", &none);
        assert_eq!(dated.source, Source::Table("gpt-4o".to_owned()));
        let unknown = resolve(RouteId::OpenAiChat, "gpt-from-the-future", &none);
        assert_eq!(unknown.source, Source::Default);
        let takes = unknown.capabilities;
        assert!(!takes.images && !takes.pdf && !takes.audio);
        let mut overrides = BTreeMap::new();
        overrides.insert(
            "gpt-from-the-future".to_owned(),
            ModelOverride {
                images: Some(true),
                context_window: Some(1000),
                ..ModelOverride::default()
            },
        );
        let configured = resolve(RouteId::OpenAiChat, "gpt-from-the-future", &overrides);
        assert!(configured.configured && configured.capabilities.images);
        assert_eq!(configured.capabilities.context_window, Some(1000));
    }

    #[test]
    fn a_route_narrowed_by_a_model_takes_only_what_both_take() {
        let narrowed = narrow(&PricedRoute::OPENAI_CHAT, default_for(RouteId::OpenAiChat));
        assert!(!narrowed.lanes.images_in_tool_results && !narrowed.lanes.images_in_messages);
        assert!(narrowed.lanes.audio_in_messages.is_empty());
        assert!(!narrowed.lanes.documents_in_tool_results);
        let whole = narrow(&PricedRoute::ANTHROPIC, default_for(RouteId::Anthropic));
        assert_eq!(whole, PricedRoute::ANTHROPIC);
    }
}
