//! Any bytes, parsed as JSON, through every lane, with lanes.md's properties checked.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpl_lanes::fuzz::every_lane_on_json_bytes(data));
