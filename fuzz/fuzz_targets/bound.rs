//! `Bound` against o200k on any bytes (read as UTF-8, lossily): see `bound_check.rs`.
#![no_main]

#[path = "../../crates/budget/tests/it/bound_check.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(why) = check::check(&text) {
        panic!("{why}");
    }
});
