//! The gitleaks rules: the types of their table and how one rule runs over a text.

use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use regex::bytes::{Regex, RegexBuilder};

use crate::formats::rules::{GLOBAL, SPEC_COUNT, SPECS};
use crate::formats::{Found, secret_text};

/// What an allowlist's regexes are matched against.
pub(crate) enum Target {
    /// The secret part of a finding.
    Secret,
    /// The whole match of the rule's regex.
    Match,
    /// The lines the match lies on.
    Line,
}

/// One gitleaks allowlist, less any path or commit condition.
pub(crate) struct Allow {
    /// What the regexes look at.
    pub(crate) target: Target,
    /// True when regexes and stop words must both hit (gitleaks' AND condition).
    pub(crate) all: bool,
    /// Patterns that mark a finding as allowed.
    pub(crate) regexes: &'static [&'static str],
    /// Lowercase words whose presence in the secret marks it as allowed.
    pub(crate) stopwords: &'static [&'static str],
}

/// One gitleaks rule as vendored in `data/gitleaks/rules.json`.
pub(crate) struct Spec {
    /// The gitleaks rule id, reported in [`Found::rule`].
    pub(crate) id: &'static str,
    /// The Go regex, as `convert.py` adapts it for Rust's parser; Unicode stays off.
    pub(crate) regex: &'static str,
    /// Lowercase words one of which must be in the text for the rule to run.
    pub(crate) keywords: &'static [&'static str],
    /// The capture group holding the secret, or 0 for gitleaks' default choice.
    pub(crate) secret_group: usize,
    /// The Shannon entropy a secret must exceed, or 0 for no check.
    pub(crate) entropy: f64,
    /// The rule's own allowlists.
    pub(crate) allows: &'static [Allow],
}

/// A rule's regex with its allowlists, compiled together on first use.
struct Compiled {
    regex: Regex,
    allows: Vec<AllowCompiled>,
}

/// One allowlist's regexes, and its stop words as one automaton: `generic-api-key` has some
/// 1,500, and a text of a million findings read them one `contains` at a time took minutes.
struct AllowCompiled {
    regexes: Vec<Regex>,
    /// Finds any stop word in a text; `None` when the list is empty (or cannot be built, when
    /// the words are read one by one).
    stopwords: Option<AhoCorasick>,
}

/// Compiles a Go pattern with Go's meaning: Perl classes, `\b` and `(?i)` are ASCII.
///
/// Byte regexes allow `.` and negated classes to match any byte, as Go's do per rune.
pub(crate) fn compile(pattern: &str) -> Option<Regex> {
    RegexBuilder::new(pattern).unicode(false).build().ok()
}

fn compile_allows(allows: &[Allow]) -> Vec<AllowCompiled> {
    allows
        .iter()
        .map(|a| AllowCompiled {
            regexes: a.regexes.iter().filter_map(|p| compile(p)).collect(),
            stopwords: match a.stopwords {
                [] => None,
                words => AhoCorasick::new(words).ok(),
            },
        })
        .collect()
}

/// The compiled rule at `index`, or None when it does not compile.
fn compiled(index: usize) -> Option<&'static Compiled> {
    // One cell per rule, so a text compiles only the rules its keywords call for.
    static CELLS: [OnceLock<Option<Compiled>>; SPEC_COUNT] =
        [const { OnceLock::new() }; SPEC_COUNT];
    let spec = SPECS.get(index)?;
    CELLS
        .get(index)?
        .get_or_init(|| {
            Some(Compiled {
                regex: compile(spec.regex)?,
                allows: compile_allows(spec.allows),
            })
        })
        .as_ref()
}

fn global_allows() -> &'static [AllowCompiled] {
    static CELL: OnceLock<Vec<AllowCompiled>> = OnceLock::new();
    CELL.get_or_init(|| compile_allows(std::slice::from_ref(&GLOBAL)))
}

/// Shannon entropy as gitleaks computes it: counts per character, over the byte length.
pub(crate) fn entropy(secret: &str) -> f64 {
    if secret.is_empty() {
        return 0.0;
    }
    let mut counts: Vec<(char, u32)> = Vec::new();
    for c in secret.chars() {
        match counts.iter_mut().find(|(k, _)| *k == c) {
            Some((_, n)) => *n += 1,
            None => counts.push((c, 1)),
        }
    }
    let len = secret.len() as f64;
    counts
        .iter()
        .map(|&(_, n)| {
            let p = f64::from(n) / len;
            -p * p.log2()
        })
        .sum()
}

/// What an allowlist can look at for one finding.
struct Seen<'t> {
    secret: &'t str,
    /// The secret in lowercase, as stop words are written.
    lower: String,
    matched: &'t str,
    line: &'t str,
}

/// Whether one allowlist lets a finding through, with gitleaks' OR and AND conditions.
fn allowed(allow: &Allow, compiled: &AllowCompiled, seen: &Seen<'_>) -> bool {
    let target = match allow.target {
        Target::Secret => seen.secret,
        Target::Match => seen.matched,
        Target::Line => seen.line,
    };
    let by_regex = !target.is_empty()
        && compiled
            .regexes
            .iter()
            .any(|r| r.is_match(target.as_bytes()));
    let by_word = !seen.lower.is_empty()
        && match &compiled.stopwords {
            Some(words) => words.is_match(&seen.lower),
            None => allow.stopwords.iter().any(|w| seen.lower.contains(w)),
        };
    if allow.all {
        (allow.regexes.is_empty() || by_regex) && (allow.stopwords.is_empty() || by_word)
    } else {
        by_regex || by_word
    }
}

fn any_allowed(allows: &[Allow], compiled: &[AllowCompiled], seen: &Seen<'_>) -> bool {
    allows
        .iter()
        .zip(compiled)
        .any(|(a, c)| allowed(a, c, seen))
}

/// How far a line reaches on each side of a match, for line allowlists.
///
/// A text of one long line would otherwise be read once per finding. The line
/// allowlists look at the words right around a match, so 4 KB changes nothing.
const LINE_REACH: usize = 4096;

/// The byte range of the lines from the one holding `start` to the one holding `end`.
fn line_around(text: &[u8], start: usize, end: usize) -> (usize, usize) {
    let low = start.saturating_sub(LINE_REACH);
    let high = end.saturating_add(LINE_REACH).min(text.len());
    let from = text
        .get(low..start)
        .and_then(|t| t.iter().rposition(|&b| b == b'\n'))
        .map_or(low, |i| low + i + 1);
    let to = text
        .get(end..high)
        .and_then(|t| t.iter().position(|&b| b == b'\n'))
        .map_or(high, |i| end + i);
    (from, to)
}

/// Runs the table rule at `index` over `text` and pushes what it finds.
pub(crate) fn scan(index: usize, text: &str, out: &mut Vec<Found>) {
    let (Some(spec), Some(rule)) = (SPECS.get(index), compiled(index)) else {
        return;
    };
    let hay = text.as_bytes();
    for caps in rule.regex.captures_iter(hay) {
        let Some(whole) = caps.get(0) else { continue };
        // gitleaks trims newlines off both ends of a match before using it.
        let mut start = whole.start();
        let mut end = whole.end();
        while start < end && hay.get(start) == Some(&b'\n') {
            start += 1;
        }
        while end > start && hay.get(end - 1) == Some(&b'\n') {
            end -= 1;
        }
        // The secret group when it is set and matched, else the first non-empty group.
        let chosen = caps
            .get(spec.secret_group)
            .filter(|m| spec.secret_group > 0 && !m.is_empty())
            .or_else(|| caps.iter().skip(1).flatten().find(|m| !m.is_empty()));
        let (s_start, s_end) = chosen.map_or((start, end), |m| (m.start(), m.end()));
        let Some((s_start, s_end, secret)) = secret_text(text, s_start, s_end) else {
            continue;
        };
        if spec.entropy > 0.0 && entropy(secret) <= spec.entropy {
            continue;
        }
        let (l_start, l_end) = line_around(hay, start, end);
        let seen = Seen {
            secret,
            lower: secret.to_lowercase(),
            matched: secret_text(text, start, end).map_or("", |t| t.2),
            line: secret_text(text, l_start, l_end).map_or("", |t| t.2),
        };
        if any_allowed(std::slice::from_ref(&GLOBAL), global_allows(), &seen)
            || any_allowed(spec.allows, &rule.allows, &seen)
        {
            continue;
        }
        out.push(Found {
            start: s_start,
            end: s_end,
            rule: spec.id,
        });
    }
}
