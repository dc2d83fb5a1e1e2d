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
