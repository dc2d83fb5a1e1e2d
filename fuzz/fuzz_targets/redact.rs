//! Any bytes as a secret and a text: the secret never survives redaction, which never panics.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpl_redact::fuzz::secret_never_survives(data));
