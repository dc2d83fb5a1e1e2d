//! The vectors case by case, through the one checker: every render and registry case passes
//! (the fetch cases run in `every_vector_passes`), and a case whose expectation is wrong fails
//! with the reason.

use std::collections::BTreeMap;
use std::path::PathBuf;

use mcpl_cli::conformance::{check_case, vector_cases};
use rstest::rstest;
use serde_json::{Value, json};

/// A work folder of its own for one test, removed when it ends.
struct Work(PathBuf);

impl Work {
    fn new(name: &str) -> Work {
        Work(std::env::temp_dir().join(format!(
            "mcpl-conformance-test-{name}-{}",
            std::process::id()
        )))
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn cases() -> Vec<Value> {
    vector_cases(mcpl_testkit::conformance_vectors()).unwrap()
}

#[test]
fn every_render_and_registry_case_passes() {
    let work = Work::new("all");
    let mut checked: BTreeMap<String, usize> = BTreeMap::new();
    for (n, case) in cases().into_iter().enumerate() {
        let id = case["id"].as_str().unwrap_or_default().to_owned();
        let operation = case["operation"].as_str().unwrap_or_default().to_owned();
        if operation == "fetch" {
            continue;
        }
        let failures = check_case(case, &work.0.join(n.to_string())).unwrap();
        assert!(failures.is_empty(), "{id}: {failures:?}");
        *checked.entry(operation).or_default() += 1;
    }
    assert_eq!(
        checked,
        BTreeMap::from([("registry".to_owned(), 1), ("render".to_owned(), 28)])
    );
}

#[rstest]
#[case("08-push-size-0", "/expect/includes", json!(["not in any view"]), "lacks \"not in any view\"")]
#[case("01-never", "/expect/hidden", json!(["ref_"]), "shows \"ref_\"")]
#[case("02-inline-image", "/expect/stub", json!(true), "no reference record was made")]
#[case("schema-uri-4097", "/expect/kind", json!("reference"), "the first block is invalid, not reference")]
#[case("field-rule-name", "/expect/missingFields", json!(["uri"]), "uri was kept")]
#[case("schema-name-256", "/expect/truncationMarked", json!(true), "has no truncation mark")]
#[case("20-eviction-and-unknown", "/registrations", json!(1), " still resolves")]
fn a_wrong_expectation_fails_with_the_reason(
    #[case] id: &str,
    #[case] pointer: &str,
    #[case] wrong: Value,
    #[case] reason: &str,
) {
    let mut case = cases()
        .into_iter()
        .find(|case| case["id"] == id)
        .unwrap_or_else(|| panic!("no case {id}"));
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let parent = if parent.is_empty() {
        &mut case
    } else {
        case.pointer_mut(parent).unwrap()
    };
    parent[key] = wrong;
    let work = Work::new(id);
    let failures = check_case(case, &work.0).unwrap();
    assert!(
        failures.iter().any(|failure| failure.contains(reason)),
        "{id}: {failures:?}"
    );
}
