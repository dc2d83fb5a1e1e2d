//! Claims that reach across a whole result: which uris may appear in what a model sees.

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, MatchKind};
use mcpl_classify::classify;
use serde_json::Value;

use crate::markers::WITHHELD_LINK;

/// Whether a server's uris may appear in what a model sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UriPolicy {
    /// No uri is shown (the default).
    #[default]
    Hidden,
    /// A reference's stub shows its uri when the uri carries no credential (no userinfo, no
    /// query, no fragment, not `data:`) and nothing in the result marks it `never`.
    CredentialFree,
}

/// The block types that make an object at any depth of a result a content block.
pub const CONTENT_BLOCK_TYPES: &[&str] = &["text", "image", "audio", "resource", "resource_link"];

/// Hidden uris shorter than this are not searched for in free text: they cannot carry a
/// credential, and replacing every occurrence of, say, `a:b` would garble text.
pub const REDACT_MIN_CHARS: usize = 8;

/// Whether a value is a content block: an object whose `type` is one of
/// [`CONTENT_BLOCK_TYPES`]. Other objects in a result's data are data.
pub fn is_content_block(value: &Value) -> bool {
    value
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| CONTENT_BLOCK_TYPES.contains(&t))
}

/// The uris of one result that no lane may show: every uri a block carries (a reference's, an
/// embedded resource's, or one beside inline data) unless the policy lets it show, and every uri
/// the result marks `never`, whatever the policy. Wherever a server's string reaches a model
/// (text, a label, data), each occurrence of a hidden uri is replaced with [`WITHHELD_LINK`].
#[derive(Debug, Clone)]
pub struct HiddenUris {
    never: Vec<String>,
    hidden: Vec<String>,
    policy: UriPolicy,
    searcher: Option<AhoCorasick>,
}

impl HiddenUris {
    /// Reads the uris and `never` marks in every value of a result (its content, its structured
    /// content, ...). A `never` counts on a block in the content or in the data, not inside a
    /// block's own fields: one in a block's `_meta` marks nothing. Uris are collected at every
    /// depth, inside blocks too, since hiding one more is safe.
    pub fn of(values: &[&Value], policy: UriPolicy) -> HiddenUris {
        let mut never = Vec::new();
        let mut uris = Vec::new();
        for value in values {
            walk(value, true, &mut never, &mut uris);
        }
        never.sort();
        never.dedup();
        let mut hidden: Vec<String> = uris
            .into_iter()
            .filter(|uri| {
                policy == UriPolicy::Hidden
                    || !is_credential_free(uri)
                    || never.binary_search(uri).is_ok()
            })
            .chain(never.iter().cloned())
            .filter(|uri| !uri.is_empty())
            .collect();
        hidden.sort();
        hidden.dedup();
        let searchable: Vec<&String> = hidden
            .iter()
            .filter(|uri| uri.chars().count() >= REDACT_MIN_CHARS)
            .collect();
        let searcher = (!searchable.is_empty())
            .then(|| {
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(searchable)
                    .ok()
            })
            .flatten();
        HiddenUris {
            never,
            hidden,
            policy,
            searcher,
        }
    }

    /// Whether the result marks this uri `never`.
    pub fn is_never(&self, uri: &str) -> bool {
        self.never.binary_search_by(|u| u.as_str().cmp(uri)).is_ok()
    }

    /// Whether this uri may be shown: the policy allows credential-free uris, this one is, and
    /// the result does not mark it `never`.
    pub fn shows(&self, uri: &str) -> bool {
        self.policy == UriPolicy::CredentialFree
            && is_credential_free(uri)
            && !self.is_never(uri)
            && self
                .hidden
                .binary_search_by(|u| u.as_str().cmp(uri))
                .is_err()
    }

    /// A server's string with every hidden uri in it replaced by [`WITHHELD_LINK`].
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match &self.searcher {
            Some(searcher) if searcher.is_match(text) => Cow::Owned(
                searcher.replace_all(text, &vec![WITHHELD_LINK; searcher.patterns_len()]),
            ),
            _ => Cow::Borrowed(text),
        }
    }
}

/// Every uri a content block in `value` carries, at any depth: a reference's, an embedded
/// resource's, or one beside inline data. These are the uris no lane shows by default.
pub fn block_uris(value: &Value) -> Vec<String> {
    let (mut never, mut uris) = (Vec::new(), Vec::new());
    walk(value, true, &mut never, &mut uris);
    uris
}

fn walk(value: &Value, claims_count: bool, never: &mut Vec<String>, uris: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            let block = is_content_block(value);
            if block {
                if claims_count && let Some(uri) = classify(value).never_uri() {
                    never.push(uri.to_owned());
                }
                if let Some(Value::String(uri)) = object.get("uri") {
                    uris.push(uri.clone());
                }
                if let Some(Value::String(uri)) = object.get("resource").and_then(|r| r.get("uri"))
                {
                    uris.push(uri.clone());
                }
            }
            // Inside a block, claims no longer count; uris are still collected.
            let inner_claims = claims_count && !block;
            object
                .values()
                .for_each(|v| walk(v, inner_claims, never, uris));
        }
        Value::Array(items) => items
            .iter()
            .for_each(|v| walk(v, claims_count, never, uris)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

/// Whether a uri carries no credential a host can see: it has a scheme, is not `data:`, and has
/// no `?`, `#`, `@`, white space or control character anywhere. Deliberately stricter than
/// "no userinfo, no query, no fragment": an `@` anywhere is read as possible userinfo.
pub fn is_credential_free(uri: &str) -> bool {
    let Some((scheme, _)) = uri.split_once(':') else {
        return false;
    };
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    scheme_ok
        && !scheme.eq_ignore_ascii_case("data")
        && !uri
            .chars()
            .any(|c| matches!(c, '?' | '#' | '@') || c.is_whitespace() || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn never_counts_at_any_depth_of_data_but_not_inside_a_block() {
        let content = json!([
            {"type": "resource", "uri": "https://a.example/x", "disposition": "never"},
            {"type": "text", "text": "see", "_meta": {"type": "resource", "uri": "https://a.example/y", "disposition": "never"}}
        ]);
        let structured = json!({"deep": [{"k": {"type": "resource", "disposition": "never",
            "resource": {"uri": "file:///embedded", "text": "t"}}}]});
        let uris = HiddenUris::of(&[&content, &structured], UriPolicy::CredentialFree);
        assert!(uris.is_never("https://a.example/x"));
        assert!(uris.is_never("file:///embedded"));
        assert!(!uris.is_never("https://a.example/y"));
        assert!(uris.shows("https://a.example/y"));
        assert!(!uris.shows("https://a.example/x"));
        assert_eq!(
            uris.redact("at https://a.example/x now"),
            "at [withheld link] now"
        );
    }

    #[test]
    fn by_default_every_block_uri_is_redacted_from_server_strings() {
        let content = json!([{"type": "resource_link", "uri": "demo://resource/1", "name": "x"}]);
        let uris = HiddenUris::of(&[&content], UriPolicy::Hidden);
        assert!(!uris.shows("demo://resource/1"));
        assert_eq!(
            uris.redact("read demo://resource/1, or demo://resource/10"),
            "read [withheld link], or [withheld link]0"
        );
        // Too short to search for in text.
        let short = json!([{"type": "resource_link", "uri": "a:b"}]);
        assert_eq!(
            HiddenUris::of(&[&short], UriPolicy::Hidden).redact("a:b"),
            "a:b"
        );
    }

    #[test]
    fn credential_free_means_nothing_that_could_carry_a_secret() {
        for shown in [
            "demo://resource/dynamic/text/1",
            "https://example.com/a/b.png",
            "file:///tmp/x",
        ] {
            assert!(is_credential_free(shown), "{shown}");
        }
        for hidden in [
            "https://example.com/a?token=1",
            "https://u:p@example.com/",
            "https://example.com/#frag",
            "data:image/png;base64,AAAA",
            "DATA:text/plain,hi",
            "no scheme",
            "",
            "1http://x",
        ] {
            assert!(!is_credential_free(hidden), "{hidden}");
        }
    }
}
