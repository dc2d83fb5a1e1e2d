//! Inputs that once crashed a fuzz target, replayed through the same entry point.

#[test]
fn fuzz_regressions_replay() {
    let dir = crate::tests_dir().join("fuzz-regressions");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "md") {
            continue;
        }
        mcpl_classify::fuzz::classify_json_bytes(&std::fs::read(&path).unwrap());
        replayed += 1;
    }
    // The folder always holds at least the seed input, so this test cannot pass by finding nothing.
    assert!(replayed > 0, "no regression inputs in {}", dir.display());
}
