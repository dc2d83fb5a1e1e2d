//! `mcpl conformance`: MCPL's vectors against the real fetcher and a loopback HTTP server.

use serde_json::Value;

use crate::mcpl;

#[test]
fn every_public_vector_passes() {
    let path = mcpl_testkit::conformance_vectors_path();
    let output = mcpl(&["conformance", path.to_str().unwrap()], b"");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 44, "one line per case and the summary");
    assert!(
        lines[..43].iter().all(|line| line.starts_with("ok ")),
        "{stdout}"
    );
    assert_eq!(lines[43], "43 passed, 0 failed");
}

#[test]
fn a_failing_case_fails_the_command() {
    let mut vectors: Value =
        serde_json::from_slice(&std::fs::read(mcpl_testkit::conformance_vectors_path()).unwrap())
            .unwrap();
    let cases = vectors["cases"].as_array_mut().unwrap();
    cases.retain(|case| case["id"] == "11-file-refused");
    // The vector says a file: reference is refused; claim the opposite.
    cases[0]["expect"]["ok"] = Value::Bool(true);
    let output = mcpl(&["conformance", "-"], vectors.to_string().as_bytes());
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.starts_with("FAIL 11-file-refused: "), "{stdout}");
    assert!(stdout.ends_with("0 passed, 1 failed\n"), "{stdout}");
}

#[test]
fn a_file_that_is_not_vectors_exits_2() {
    let output = mcpl(
        &["conformance", "-"],
        br#"{"format": "something-else", "cases": []}"#,
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.starts_with("mcpl: -: "), "{stderr}");
    assert_eq!(stderr.lines().count(), 1);
}
