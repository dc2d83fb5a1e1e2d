//! The `redact` fuzz target's check on its regression inputs and on random bytes.

use proptest::prelude::*;

#[test]
fn the_fuzz_regressions_hold() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        mcpl_redact::fuzz::secret_never_survives(&bytes);
        count += 1;
    }
    assert!(count > 0, "no regression input in {}", dir.display());
}

proptest! {
    #[test]
    fn any_secret_and_text_hold(secret in "[a-zA-Z0-9]{0,30}", text in any::<String>()) {
        let mut bytes = secret.into_bytes();
        bytes.push(0);
        bytes.extend(text.into_bytes());
        mcpl_redact::fuzz::secret_never_survives(&bytes);
    }
}

proptest! {
    /// Chains of values, each after a token a rule withholds, in a text with an escape (so its
    /// decoded layer is read too): a marker written for one token must not name the value
    /// after it as a secret's. Each link of such a chain took one more redaction, and a chain
    /// longer than the passes a redaction makes came out changed by the next one.
    #[test]
    fn a_marker_never_names_the_value_after_it(
        links in proptest::collection::vec(("[a-z0-9]{8,20}", "[a-z0-9]{6,14}"), 1..9),
        escape in prop_oneof![Just("%83"), Just("=3D"), Just("\\101"), Just("")],
        quote in prop_oneof![Just("'"), Just("\""), Just("")],
    ) {
        let mut text = format!("a8f3{escape}2q{quote}:");
        for (token, value) in &links {
            text.push_str(&format!("shpss_{token}{quote}:{value}{quote}:"));
        }
        mcpl_redact::fuzz::secret_never_survives(text.as_bytes());
    }
}
