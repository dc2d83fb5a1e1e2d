//! The tools a host offers, kept stable across requests: a changed tool list merged without
//! moving the tools that did not change (decision 0131), a turn's calls grouped into what may
//! run at once (decision 0132), and deferred tools behind the `search_tools` host tool when the
//! definitions would take too much of the context window (decision 0131).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Range;

use mcpl_budget::{Bound, TokenEstimator};
use mcpl_encode::Encoder;
use mcpl_encode::conversation::{ModelRequest, ToolSpec};
use serde_json::{Value, json};

/// The host tool that finds deferred tools and loads them.
pub const SEARCH_TOOLS: &str = "search_tools";

/// What the model reads about `search_tools`.
pub const SEARCH_TOOLS_DESCRIPTION: &str = "Find tools by what they do. The servers offer more \
    tools than fit here: pass a few words in query. Returns the names and descriptions of the \
    tools that match best; each one listed as loaded can be called from the next turn on.";

/// How many tools one search lists.
pub const SEARCH_MATCHES: usize = 5;

/// The most characters of a query read, and of a description shown in a search's answer.
const QUERY_CHARS: usize = 200;
const DESCRIPTION_CHARS: usize = 200;
/// The most words of a query matched.
const QUERY_WORDS: usize = 16;
/// The most characters of a tool's description a search reads.
const SEARCHED_CHARS: usize = 4096;

/// `old` merged with `new`, the server's tools as listed again: a tool whose definition did
/// not change keeps its place, a tool no longer listed drops out, and a new or changed tool
/// goes to the end in `new`'s order. The tools before the first change keep their bytes, so a
/// provider's prompt cache still holds them.
pub fn merge_stable(old: &[ToolSpec], new: Vec<ToolSpec>) -> Vec<ToolSpec> {
    let listed: HashMap<&str, &ToolSpec> = new.iter().map(|t| (t.name.as_str(), t)).collect();
    let kept: HashSet<&str> = (old.iter())
        .filter(|tool| listed.get(tool.name.as_str()) == Some(tool))
        .map(|tool| tool.name.as_str())
        .collect();
    let mut merged: Vec<ToolSpec> = (old.iter())
        .filter(|tool| kept.contains(tool.name.as_str()))
        .cloned()
        .collect();
    let kept: HashSet<String> = kept.into_iter().map(str::to_owned).collect();
    merged.extend(new.into_iter().filter(|tool| !kept.contains(&tool.name)));
    merged
}

/// A turn's calls in the groups that run one after another: each run of neighbouring calls
/// that may overlap (`parallel[i]`) is one group, and every other call is a group of its own.
/// The groups cover `0..parallel.len()` in order.
pub fn phases(parallel: &[bool]) -> Vec<Range<usize>> {
    let mut phases = Vec::new();
    let mut start = 0;
    while start < parallel.len() {
        let mut end = start + 1;
        if parallel[start] {
            while end < parallel.len() && parallel[end] {
                end += 1;
            }
        }
        phases.push(start..end);
        start = end;
    }
    phases
}

/// The note on a call that ran at the same time as `others` calls of tools that say they
/// only read.
pub fn overlap_note(others: usize) -> String {
    let calls = if others == 1 { "call" } else { "calls" };
    format!("ran at the same time as {others} other {calls} of tools that say they only read")
}

/// Whether the tool called `name` in a server's `listings` says it only reads:
/// `annotations.readOnlyHint` is `true`. A hint, never trusted for more than overlapping with
/// other such calls.
pub fn is_read_only(listings: &[Value], name: &str) -> bool {
    listings.iter().any(|listing| {
        listing.get("name").and_then(Value::as_str) == Some(name)
            && listing.pointer("/annotations/readOnlyHint") == Some(&Value::Bool(true))
    })
}

/// The error result of a call of `tool`, which `server` offered before it listed its tools
/// again without it.
pub fn vanished(tool: &str, server: &str) -> String {
    format!(
        "tool call failed: {tool} is no longer offered: server {server} changed its tools; \
         call one of the tools offered now"
    )
}

/// What `tools` add to a request on the encoder's route, in estimated tokens: the request
/// with them priced against the same request without them.
pub fn tools_price(encoder: Encoder, tools: &[ToolSpec]) -> u64 {
    if tools.is_empty() {
        return 0;
    }
    let price = |tools: &[ToolSpec]| {
        let body = encoder.request(&ModelRequest::new("m", "", &[], tools, 1));
        Bound.count(&body.to_string())
    };
    price(tools).saturating_sub(price(&[]))
}

/// The spec of `search_tools`.
pub fn search_tools_spec() -> ToolSpec {
    ToolSpec::new(
        SEARCH_TOOLS,
        SEARCH_TOOLS_DESCRIPTION,
        json!({
            "type": "object",
            "properties": {"query": {"type": "string", "description": "words of what the tool does or its name"}},
            "required": ["query"],
        }),
    )
}

/// Deferred tools: on when the servers' tool definitions would take more than a share of the
/// window. The model is then offered the host's tools, `search_tools`, and the tools its
/// searches loaded, in the order they were loaded.
#[derive(Debug, Clone, Default)]
pub struct Deferral {
    /// The most tokens the servers' definitions may take before they are deferred.
    limit: u64,
    /// What the servers' definitions cost at the last decision, in estimated tokens.
    tokens: u64,
    active: bool,
    /// The tools loaded, in the order they were loaded.
    loaded: Vec<String>,
    /// What the loaded tools cost, in estimated tokens; held within `limit`.
    loaded_tokens: u64,
}

impl Deferral {
    /// Defers when the definitions take more than `percent` of `window` tokens; 100 or more
    /// never defers.
    pub fn new(percent: u64, window: u64) -> Deferral {
        let limit = if percent >= 100 {
            u64::MAX
        } else {
            window.saturating_mul(percent) / 100
        };
        Deferral {
            limit,
            ..Deferral::default()
        }
    }

    /// Decides again, from what the servers' definitions cost now (`tokens`).
    pub fn decide(&mut self, tokens: u64) {
        self.tokens = tokens;
        self.active = tokens > self.limit;
    }

    /// What the servers' definitions cost at the last decision, in estimated tokens.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// The most tokens the definitions may take before they are deferred.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Whether tools are deferred now.
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// The tools offered from `all`: every tool when nothing is deferred; else the tools that
    /// are not `deferrable` (the host's own), `search_tools`, and the loaded tools still in
    /// `all`, in the order they were loaded.
    pub fn offered(&self, all: &[ToolSpec], deferrable: impl Fn(&str) -> bool) -> Vec<ToolSpec> {
        if !self.active {
            return all.to_vec();
        }
        let mut offered: Vec<ToolSpec> = all
            .iter()
            .filter(|tool| !deferrable(&tool.name))
            .cloned()
            .collect();
        offered.push(search_tools_spec());
        for name in &self.loaded {
            if let Some(tool) = all.iter().find(|tool| &tool.name == name) {
                offered.push(tool.clone());
            }
        }
        offered
    }

    /// Answers `search_tools`: the [`SEARCH_MATCHES`] deferrable tools of `all` that match
    /// `arguments.query` best, each loaded while the loaded tools stay within the share.
    pub fn search(
        &mut self,
        all: &[ToolSpec],
        deferrable: impl Fn(&str) -> bool,
        arguments: &Value,
    ) -> Result<String, String> {
        let Some(query) = arguments.get("query").and_then(Value::as_str) else {
            return Err("search_tools needs a query: a few words of what the tool does".into());
        };
        let query: String = query.chars().take(QUERY_CHARS).collect();
        let wanted: BTreeSet<String> = words(&query).take(QUERY_WORDS).collect();
        let mut scored: Vec<(usize, usize)> = all
            .iter()
            .enumerate()
            .filter(|(_, tool)| deferrable(&tool.name))
            .filter_map(|(at, tool)| {
                let name: BTreeSet<String> = words(&tool.name).collect();
                let searched: String = tool.description.chars().take(SEARCHED_CHARS).collect();
                let description: BTreeSet<String> = words(&searched).collect();
                let score: usize = wanted
                    .iter()
                    .map(|w| {
                        2 * usize::from(name.contains(w)) + usize::from(description.contains(w))
                    })
                    .sum();
                (score > 0).then_some((score, at))
            })
            .collect();
        scored.sort_by_key(|&(score, at)| (std::cmp::Reverse(score), at));
        if scored.is_empty() {
            return Ok(format!("no tool matches \"{query}\"; try other words"));
        }
        let mut lines = Vec::new();
        for (_, at) in scored.into_iter().take(SEARCH_MATCHES) {
            let tool = &all[at];
            let description: String = tool.description.chars().take(DESCRIPTION_CHARS).collect();
            let state = self.load(tool);
            lines.push(format!("{} ({state}): {description}", tool.name));
        }
        Ok(lines.join("\n"))
    }

    /// Loads `tool` when there is room; says what became of it.
    fn load(&mut self, tool: &ToolSpec) -> &'static str {
        if self.loaded.contains(&tool.name) {
            return "loaded";
        }
        let tokens = Bound.count(&tool.name)
            + Bound.count(&tool.description)
            + Bound.count(&tool.input_schema.to_string());
        if self.loaded_tokens.saturating_add(tokens) > self.limit {
            return "not loaded: the loaded tools take their whole share of the window";
        }
        self.loaded_tokens += tokens;
        self.loaded.push(tool.name.clone());
        "loaded"
    }
}

/// The lower-case words of `text`: runs of letters and digits.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> ToolSpec {
        ToolSpec::new(name, description, json!({"type": "object"}))
    }

    #[test]
    fn a_merge_keeps_unchanged_tools_in_place_and_appends_the_rest() {
        let old = [tool("a", "1"), tool("b", "2"), tool("c", "3")];
        let new = vec![
            tool("d", "4"),
            tool("c", "3"),
            tool("b", "changed"),
            tool("a", "1"),
        ];
        let names: Vec<String> = merge_stable(&old, new)
            .into_iter()
            .map(|t| format!("{}={}", t.name, t.description))
            .collect();
        assert_eq!(names, ["a=1", "c=3", "d=4", "b=changed"]);
    }

    #[test]
    fn a_merge_of_the_most_tools_a_server_may_list_moves_only_the_changed_one() {
        let many: Vec<ToolSpec> = (0..10_000).map(|i| tool(&format!("t{i}"), "d")).collect();
        let mut again = many.clone();
        again.reverse();
        again[0].description = "changed".into();
        let merged = merge_stable(&many, again);
        assert_eq!(merged.len(), 10_000);
        assert_eq!(merged[0].name, "t0");
        assert_eq!(merged[9_999].name, "t9999");
        assert_eq!(merged[9_999].description, "changed");
    }

    #[test]
    fn only_neighbouring_parallel_calls_share_a_phase() {
        assert_eq!(
            phases(&[true, true, false, true, false, false, true]),
            [0..2, 2..3, 3..4, 4..5, 5..6, 6..7]
        );
        assert!(phases(&[]).is_empty());
    }

    #[test]
    fn only_a_true_hint_is_read_only() {
        let listings = [
            json!({"name": "a", "annotations": {"readOnlyHint": true}}),
            json!({"name": "b"}),
            json!({"name": "c", "annotations": {"readOnlyHint": "true"}}),
        ];
        assert!(is_read_only(&listings, "a"));
        for name in ["b", "c", "d"] {
            assert!(!is_read_only(&listings, name));
        }
    }

    #[test]
    fn a_search_loads_the_best_matches_within_the_share() {
        let all: Vec<ToolSpec> = (0..20)
            .map(|i| {
                tool(
                    &format!("s__tool_{i}"),
                    &format!("reads the weather of city {i}"),
                )
            })
            .chain([tool("read_result", "weather")])
            .collect();
        let mut deferral = Deferral::new(10, 300);
        deferral.decide(1_000);
        let host = |name: &str| name.starts_with("s__");
        let answer = deferral
            .search(&all, host, &json!({"query": "tool_7 weather"}))
            .unwrap();
        assert_eq!(answer.lines().count(), SEARCH_MATCHES);
        assert!(answer.starts_with("s__tool_7 (loaded)"), "{answer}");
        let offered: Vec<String> = deferral
            .offered(&all, host)
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(offered[..3], ["read_result", SEARCH_TOOLS, "s__tool_7"]);
        // The share is 30 tokens: not every match fits.
        assert!(answer.contains("not loaded"), "{answer}");
        assert!(deferral.search(&all, host, &json!({})).is_err());
        let none = deferral
            .search(&all, host, &json!({"query": "zzz"}))
            .unwrap();
        assert!(none.starts_with("no tool matches"));
    }

    #[test]
    fn the_route_encoding_prices_the_tools() {
        let encoder = Encoder::new(mcpl_lanes::RouteId::Anthropic);
        let one = tools_price(encoder, &[tool("a", "x")]);
        let two = tools_price(encoder, &[tool("a", "x"), tool("b", &"long ".repeat(400))]);
        assert!(one > 0 && two > one + 300, "{one} {two}");
        assert_eq!(tools_price(encoder, &[]), 0);
    }
}
