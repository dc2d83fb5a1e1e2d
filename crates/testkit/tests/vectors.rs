//! The repository's copy of the conformance vectors is the one its README describes: the same
//! sha256 and size, so the data cannot change without its provenance note changing too.

use sha2::{Digest, Sha256};

fn readme() -> String {
    let path = mcpl_testkit::workspace_root().join("conformance/README.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The value after `label` on the README's line that starts with `- <label>`, without
/// backquotes.
fn readme_field(readme: &str, label: &str) -> String {
    let prefix = format!("- {label}:");
    let line = readme
        .lines()
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("conformance/README.md has no `{prefix}` line"));
    line.trim().trim_matches('`').to_owned()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn the_vectors_match_the_sha256_in_their_readme() {
    let bytes = std::fs::read(mcpl_testkit::conformance_vectors_path()).unwrap();
    let stated = readme_field(&readme(), "sha256");
    assert_eq!(stated.len(), 64, "not a sha256: {stated}");
    assert_eq!(hex(&Sha256::digest(&bytes)), stated);
}

#[test]
fn the_vectors_have_the_size_in_their_readme() {
    let bytes = std::fs::read(mcpl_testkit::conformance_vectors_path()).unwrap();
    let stated = readme_field(&readme(), "Size");
    let size = stated
        .split_whitespace()
        .next()
        .map(|n| n.replace(',', ""))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("no byte count in `{stated}`"));
    assert_eq!(bytes.len(), size);
}

#[test]
fn the_vectors_are_the_format_and_count_their_readme_names() {
    let vectors = mcpl_testkit::conformance_vectors();
    assert_eq!(vectors["format"], "mcpl-bulk-references-1");
    let cases = vectors["cases"].as_array().map_or(0, Vec::len);
    let readme = readme();
    let stated = readme_field(&readme, "Contents");
    assert!(
        stated.starts_with(&format!("{cases} cases ")),
        "the README says `{stated}`; the file holds {cases} cases"
    );
    assert!(readme.contains("`mcpl-bulk-references-1`"));
}
