//! Any bytes as a decoded payload: sizes, sniffing and dimensions checked against a full decode.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpl_classify::fuzz::inspect_payload_bytes(data));
