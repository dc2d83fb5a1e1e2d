//! Tests of every gitleaks rule against its own examples, and of the engine's parts.

use crate::formats::gitleaks;
use crate::formats::rules::{GLOBAL, SPECS};

#[test]
fn every_kept_regex_compiles() {
    let mut bad = Vec::new();
    for s in &SPECS {
        if let Err(e) = regex::bytes::RegexBuilder::new(s.regex)
            .unicode(false)
            .build()
        {
            bad.push(format!("{}: {e}", s.id));
        }
        for a in s.allows {
            for p in a.regexes {
                if let Err(e) = regex::bytes::RegexBuilder::new(p).unicode(false).build() {
                    bad.push(format!("{} allowlist: {e}", s.id));
                }
            }
        }
    }
    for p in GLOBAL.regexes {
        if let Err(e) = regex::bytes::RegexBuilder::new(p).unicode(false).build() {
            bad.push(format!("global allowlist: {e}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// What one table rule alone finds in `text`, as gitleaks' own rule tests run it.
fn by_rule(index: usize, text: &str) -> Vec<crate::formats::Found> {
    let mut out = Vec::new();
    let lower = text.to_ascii_lowercase();
    let keywords = SPECS.get(index).map_or(&[][..], |s| s.keywords);
    if keywords.is_empty() || keywords.iter().any(|k| lower.contains(k)) {
        gitleaks::scan(index, text, &mut out);
    }
    out
}

#[test]
fn every_rule_finds_its_positives_and_not_its_negatives() {
    let doc: serde_json::Value =
        serde_json::from_str(include_str!("../../data/gitleaks/cases.json")).unwrap_or_default();
    let mut failures = Vec::new();
    for (index, spec) in SPECS.iter().enumerate() {
        let case = &doc["cases"][spec.id];
        let list = |k: &str| case[k].as_array().cloned().unwrap_or_default();
        let (positives, negatives) = (list("positives"), list("negatives"));
        if positives.is_empty() || negatives.is_empty() {
            failures.push(format!("{}: no cases", spec.id));
        }
        for p in positives.iter().filter_map(|v| v.as_str()) {
            if by_rule(index, p).is_empty() {
                failures.push(format!("{}: missed {p:?}", spec.id));
            }
            // Through the whole pipeline, with its prefilter and merging, too.
            if crate::formats::credentials_in(p).is_empty() {
                failures.push(format!("{}: credentials_in missed {p:?}", spec.id));
            }
        }
        for n in negatives.iter().filter_map(|v| v.as_str()) {
            let found = by_rule(index, n);
            if let Some(f) = found.first() {
                failures.push(format!(
                    "{}: found {:?} in {n:?}",
                    spec.id,
                    &n[f.start..f.end]
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn ranges_widen_to_character_boundaries() {
    assert_eq!(crate::formats::secret_text("aéb", 2, 3), Some((1, 3, "é")));
    assert_eq!(crate::formats::secret_text("aéb", 0, 2), Some((0, 3, "aé")));
    assert_eq!(crate::formats::secret_text("ab", 5, 9), Some((2, 2, "")));
}

#[test]
fn entropy_is_computed_as_gitleaks_does() {
    assert_eq!(gitleaks::entropy(""), 0.0);
    assert_eq!(gitleaks::entropy("aaaa"), 0.0);
    assert!((gitleaks::entropy("abcd") - 2.0).abs() < 1e-9);
}

/// The keyword prefilter calls, in rule order, exactly the rules without keywords and those
/// with a keyword in the text (in any case), on texts drawn from the keywords themselves, cut,
/// joined and cased at random, and from plain words.
#[test]
fn the_prefilter_calls_exactly_the_rules_whose_keywords_occur() {
    use crate::formats::{keywords_of, rule_count, rules_called_for};
    let keywords: Vec<&str> = (0..rule_count()).flat_map(keywords_of).copied().collect();
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |below: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % below as u64) as usize
    };
    for _ in 0..2_000 {
        let mut text = String::new();
        for _ in 0..next(6) {
            let word = match next(3) {
                0 => "plain words ",
                _ => keywords[next(keywords.len())],
            };
            // Part of a keyword, or all of it, in either case.
            let cut = word.get(next(2)..).unwrap_or(word);
            match next(2) {
                0 => text.push_str(&cut.to_ascii_uppercase()),
                _ => text.push_str(cut),
            }
        }
        let lower = text.to_ascii_lowercase();
        let expected: Vec<usize> = (0..rule_count())
            .filter(|&rule| {
                let words = keywords_of(rule);
                words.is_empty()
                    || words
                        .iter()
                        .any(|k| lower.contains(&k.to_ascii_lowercase()))
            })
            .collect();
        let called: Vec<usize> = rules_called_for(&text).iter().collect();
        assert_eq!(called, expected, "{text:?}");
    }
}

proptest::proptest! {
    /// A text searched for keywords in two halves calls the rules the whole text calls
    /// (decision 0174), wherever its middle falls: inside a keyword, between two, or in
    /// characters of any width.
    #[test]
    fn two_halves_call_the_rules_the_whole_calls(
        picks in proptest::collection::vec(
            (0..super::rule_count(), 0usize..4, proptest::bool::ANY, "\\PC{0,3}"),
            1..12,
        ),
        split_from in 0usize..64,
    ) {
        let mut text = String::new();
        for (rule, k, upper, filler) in &picks {
            let keywords = super::keywords_of(*rule);
            if let Some(keyword) = keywords.get(k % keywords.len().max(1)) {
                match upper {
                    true => text.push_str(&keyword.to_ascii_uppercase()),
                    false => text.push_str(keyword),
                }
            }
            text.push_str(filler);
        }
        proptest::prop_assert_eq!(
            super::rules_called_for_from(&text, split_from, true),
            super::rules_called_for_from(&text, usize::MAX, true)
        );
    }
}

/// Each keyword alone in a text, with the middle at each of its bytes and just past it, calls
/// its rules when the text is searched in two halves: the first half runs on far enough for
/// the longest keyword.
#[test]
fn a_keyword_across_the_middle_calls_its_rules() {
    for rule in 0..super::rule_count() {
        for keyword in super::keywords_of(rule) {
            let before = keyword.len() + 2;
            for at in 0..=keyword.len() {
                // The text's middle, (before + len + after) / 2, is `before + at`.
                let after = before + 2 * at - keyword.len();
                let text = format!("{}{keyword}{}", " ".repeat(before), " ".repeat(after));
                let halves = super::rules_called_for_from(&text, 0, true);
                assert_eq!(
                    halves,
                    super::rules_called_for_from(&text, usize::MAX, true),
                    "{keyword:?} with the middle {at} bytes in"
                );
                assert!(halves.iter().any(|called| called == rule), "{keyword:?}");
            }
        }
    }
}
