//! Inputs the `lanes` fuzz target found, replayed through the same entry point; and every
//! data-driven case through it too, so the fuzz target's own checks hold on them (read from
//! bytes, each case projects as its `Value` does).

#[test]
fn fuzz_regressions_replay() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut replayed = 0;
    for entry in std::fs::read_dir(root.join("fuzz-regressions")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        mcpl_lanes::fuzz::every_lane_on_json_bytes(&std::fs::read(&path).unwrap());
        replayed += 1;
    }
    assert!(replayed > 0);
    for entry in std::fs::read_dir(root.join("cases")).unwrap() {
        let input = entry.unwrap().path().join("input.json");
        if let Ok(text) = std::fs::read_to_string(&input) {
            let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
            mcpl_testkit::expand_fixtures(&mut value);
            let result = value.get("result").cloned().unwrap_or(value);
            mcpl_lanes::fuzz::every_lane(&result);
            mcpl_lanes::fuzz::view_matches_value(&serde_json::to_vec(&result).unwrap());
        }
    }
}
