//! The conformance checker on MCPL's bulk-reference vectors: every case passes, case by case
//! and as `mcpl conformance` runs a file, and a case whose expectation is wrong fails.

mod cases;
mod classify;

use mcpl_cli::conformance::{Tally, run_conformance};

#[test]
fn every_vector_passes() {
    let mut report = Vec::new();
    let tally = run_conformance(&[mcpl_testkit::conformance_vectors_path()], &mut report).unwrap();
    let report = String::from_utf8(report).unwrap();
    assert_eq!(
        tally,
        Tally {
            passed: 43,
            failed: 0
        },
        "{report}"
    );
    assert!(report.ends_with("43 passed, 0 failed\n"), "{report}");
    assert_eq!(report.lines().filter(|l| l.starts_with("ok ")).count(), 43);
}
