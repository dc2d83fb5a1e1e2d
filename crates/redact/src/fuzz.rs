//! The entry point for the `redact` fuzz target and the tests that replay what it found.

use crate::{Admitted, HiddenSet, HiddenUris, PieceCheck, UriPolicy};

/// Splits `bytes` at the first NUL into a secret and a text (lossy UTF-8), registers the
/// secret with a session, and checks what redaction promises on any input: it never panics, a
/// searched secret never survives verbatim (nor in lower case), redacting the output again
/// leaves it as it is, the pass check asked ahead answers as the whole check does, and a
/// text searched for keywords in two halves calls the rules the whole text calls.
pub fn secret_never_survives(bytes: &[u8]) {
    let (secret, text) = match bytes.iter().position(|&b| b == 0) {
        Some(at) => (&bytes[..at], &bytes[at + 1..]),
        None => (&bytes[..0], bytes),
    };
    let secret = String::from_utf8_lossy(secret);
    let text = String::from_utf8_lossy(text);
    let mut session = HiddenSet::new();
    let searched = session.insert_secret(&secret) == Admitted::Searched;
    let hidden = HiddenUris::in_session(&[], UriPolicy::Hidden, &mut session, true);
    let once = hidden.redact(&text).into_owned();
    if searched {
        assert!(
            !once.contains(secret.as_ref()),
            "the secret survives: {once:?}"
        );
    }
    let twice = hidden.redact(&once);
    assert_eq!(twice, once, "redaction is idempotent");
    // What the text alone decides, asked ahead, gives the whole check's answer (decision 0172).
    let check = hidden.pass_check();
    let known = Some(PieceCheck::of(&text));
    assert_eq!(
        check.passes_unchanged_given(&text, known),
        check.passes_unchanged(&text),
        "the check asked ahead answers as the whole"
    );
    assert_eq!(
        check.label_passes_unchanged_given(&text, known),
        check.label_passes_unchanged(&text),
        "the label check asked ahead answers as the whole"
    );
    // Searched for keywords in two halves, as a long text is (decision 0174), the text calls
    // the rules the whole calls.
    assert!(
        crate::formats::two_halves_call_the_same_rules(&text),
        "the two halves call the rules the whole calls"
    );
}
