//! Any bytes, parsed as JSON, classified at every depth with the classifier's properties checked.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpl_classify::fuzz::classify_json_bytes(data));
