//! Inputs that once crashed a fuzz target, replayed through the same entry points.

use std::path::Path;

fn replay(folder: &str, entry: fn(&[u8])) -> usize {
    let dir = crate::tests_dir().join("fuzz-regressions").join(folder);
    let mut replayed = 0;
    for entry_path in std::fs::read_dir(&dir).unwrap() {
        let path = entry_path.unwrap().path();
        entry(&std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())));
        replayed += 1;
    }
    replayed
}

#[test]
fn classify_regressions_replay() {
    // The folder always holds at least the seed input, so this cannot pass by finding nothing.
    assert!(replay("classify", mcpl_classify::fuzz::classify_json_bytes) > 0);
}

#[test]
fn payload_regressions_replay() {
    assert!(replay("payload", mcpl_classify::fuzz::inspect_payload_bytes) > 0);
    // The first crash, checked by name too, so that losing the file fails a test.
    let crash = crate::tests_dir()
        .join("fuzz-regressions/payload/crash-cc85a1755d62e9c01db5bbfc9c21def0825df958");
    assert!(Path::new(&crash).exists());
}
