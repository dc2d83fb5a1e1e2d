//! The generative leak test (issue 26): a secret the session holds (a part of a hidden uri, or
//! a token the host registered), spelled by the grammar of `mcpl_redact::spellings` (one to
//! three transformations composed) and put in every place a server string goes, never
//! survives on any lane, in a tool's definition or in a log line. The oracle is independent
//! of the engine: neither the secret (in any case) nor the spelling itself may be in any
//! output.

use mcpl_lanes::UriPolicy;
use mcpl_redact::spellings::in_context;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::Host;

/// A random capability: letters and digits, two of each at least.
fn capability() -> impl Strategy<Value = String> {
    "[a-z]{3}[0-9]{3}[a-zA-Z0-9]{10,24}"
}

/// Every string a lane wrote for `result`, in one text.
fn every_output(host: &mut Host, result: &Value) -> String {
    let lanes = host.all_lanes(result, UriPolicy::Hidden);
    let mut out = format!("{lanes:?}");
    out.push_str(&lanes.script.to_string());
    out
}

/// The places a server's string goes, each holding `text`.
fn places(text: &str) -> Vec<Value> {
    vec![
        json!({"content": [{"type": "text", "text": text}]}),
        json!({"content": [{"type": "resource_link", "uri": "https://other.example/x", "name": text}]}),
        json!({"content": [{"type": "resource", "resource": {"uri": "https://other.example/y", "text": text, "mimeType": "text/plain"}}]}),
        json!({"content": [{"type": "text", "text": "ok"}], "structuredContent": {"note": text, "nested": [text]}}),
        json!({"content": [{"type": "image", "data": text, "mimeType": "image/png"}]}),
        json!({"content": [{"type": "mystery", "payload": text}]}),
    ]
}

fn assert_absent(output: &str, secret: &str, spelling: &str, rules: &[&str]) {
    let lower = output.to_lowercase();
    assert!(
        !lower.contains(&secret.to_lowercase()),
        "{rules:?}: the secret survives in {output}"
    );
    assert!(
        !output.contains(spelling),
        "{rules:?}: the spelling {spelling:?} survives in {output}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("MCPL_SECRET_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(48),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_hidden_uris_path_segment_never_survives_in_any_spelling_or_place(
        (secret, spelled) in capability().prop_flat_map(|s| (Just(s.clone()), in_context(s))),
    ) {
        let (text, spelling, rules) = spelled;
        let mut host = Host::new();
        // The session hides the uri: its path segment is a part searched on its own.
        let uri = format!("https://files.example/share/{secret}/report.pdf");
        every_output(&mut host, &json!({"content": [{"type": "resource_link", "uri": uri, "name": "r"}]}));
        for result in places(&text) {
            let output = every_output(&mut host, &result);
            assert_absent(&output, &secret, &spelling, &rules);
        }
    }

    #[test]
    fn a_host_secret_never_survives_in_any_spelling_or_place(
        (secret, spelled) in capability().prop_flat_map(|s| (Just(s.clone()), in_context(s))),
    ) {
        let (text, spelling, rules) = spelled;
        let mut host = Host::new();
        host.registry.hidden_mut().insert_secret(&secret);
        for result in places(&text) {
            let output = every_output(&mut host, &result);
            assert_absent(&output, &secret, &spelling, &rules);
        }
        // A tool's definition, as the host redacts it each round, and a log line, as the
        // command's writer redacts it with the session's shared set.
        let tool = json!({"name": "t", "description": text, "inputSchema": {"type": "object",
            "properties": {"mode": {"description": text, "default": text, "enum": ["a", text]}}}});
        let hidden = mcpl_redact::HiddenUris::in_session(&[], UriPolicy::Hidden, host.registry.hidden_mut(), true);
        assert_absent(&hidden.redact_value(&tool).to_string(), &secret, &spelling, &rules);
        let log = host.registry.hidden().secrets().redact(&format!("INFO server said: {text}")).into_owned();
        assert_absent(&log, &secret, &spelling, &rules);
    }

    #[test]
    fn a_credential_url_never_survives_in_any_decoding_or_place(
        (value, (spelling, rules)) in (
            prop::sample::select(vec!["access_token", "sig", "api_key", "client_secret", "X-Amz-Signature"]),
            capability(),
        ).prop_flat_map(|(name, value)| {
            let url = format!("https://api.example.org/cb?{name}={value}&page=2");
            (Just(value), mcpl_redact::spellings::spelled_whole(url))
        }),
    ) {
        // No session holds the value: the url is withheld by its shape, read in every
        // decoding of the canonical view.
        let mut host = Host::new();
        for result in places(&format!("next page: {spelling} (cursor)")) {
            let output = every_output(&mut host, &result);
            assert_absent(&output, &value, &spelling, &rules);
        }
    }
}

/// A token at one text block's end never runs on into the next block: the next block's text
/// reaches the model whole (the leak test's case, where 200,000 characters were lost).
#[test]
fn a_token_at_a_blocks_end_takes_nothing_of_the_next_block() {
    let mut host = Host::new();
    let result = json!({"content": [
        {"type": "text", "text": "github ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3s0Q"},
        {"type": "text", "text": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx and the rest"},
    ]});
    let lanes = host.all_lanes(&result, UriPolicy::Hidden);
    assert!(!lanes.stored.contains("R4nd0mT0k3n"), "{}", lanes.stored);
    assert!(
        lanes
            .stored
            .contains("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx and the rest"),
        "{}",
        lanes.stored
    );
}

proptest! {
    // Each case projects 3,000 blocks: it runs a 64th of the recipe's count, at least 16.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("MCPL_SECRET_CASES")
            .ok()
            .and_then(|n| n.parse::<u32>().ok())
            .map_or(16, |n| (n / 64).max(16)),
        ..ProptestConfig::default()
    })]

    /// A result of thousands of blocks has what each piece alone decides of its check asked
    /// on a second thread while its hidden uris are read (decision 0172): a secret spelled at
    /// any place among plain texts and link names, as a text or as a name, never survives:
    /// a host's secret, a hidden uri's path segment, or a credential url no session holds.
    #[test]
    fn a_secret_among_thousands_of_blocks_never_survives(
        (secret, spelled) in capability().prop_flat_map(|s| (Just(s.clone()), in_context(s))),
        (value, (url, url_rules)) in (
            prop::sample::select(vec!["access_token", "sig", "api_key", "client_secret"]),
            capability(),
        ).prop_flat_map(|(name, value)| {
            let url = format!("https://api.example.org/cb?{name}={value}&page=2");
            (Just(value), mcpl_redact::spellings::spelled_whole(url))
        }),
        kind in 0usize..3,
        at in 0usize..3_000,
        as_name: bool,
    ) {
        let (mut text, mut spelling, mut rules) = spelled;
        let mut host = Host::new();
        let mut secret = secret;
        match kind {
            0 => {
                host.registry.hidden_mut().insert_secret(&secret);
            }
            1 => {
                let uri = format!("https://files.example/share/{secret}/report.pdf");
                every_output(&mut host, &json!({"content": [{"type": "resource_link", "uri": uri, "name": "r"}]}));
            }
            _ => {
                text = format!("next page: {url} (cursor)");
                spelling = url;
                rules = url_rules;
                secret = value;
            }
        }
        let mut blocks: Vec<Value> = (0..3_000)
            .map(|i| match i % 3 {
                0 => json!({"type": "text", "text": format!("row {i}: plain words")}),
                1 => json!({"type": "resource_link", "uri": format!("https://h.example/l/{i}"), "name": format!("file{i}.csv")}),
                _ => json!({"type": "text", "text": format!("more words {i}")}),
            })
            .collect();
        blocks[at] = match as_name {
            true => json!({"type": "resource_link", "uri": "https://h.example/n", "name": text}),
            false => json!({"type": "text", "text": text}),
        };
        let output = every_output(&mut host, &json!({"content": blocks}));
        assert_absent(&output, &secret, &spelling, &rules);
    }
}
