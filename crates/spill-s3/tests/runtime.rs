//! The store inside a caller's tokio runtime, as every rmcp host holds it: used and dropped
//! from `#[tokio::test]` of both flavours without a panic (issue 30). Before, `put` panicked
//! with "Cannot start a runtime from within a runtime", and even an unused store panicked when
//! dropped.

use mcpl_budget::{S3Location, SpillStore};
use mcpl_spill_s3::S3SpillStore;

/// A store whose endpoint refuses connections: every request fails, in words, at once.
fn unreachable_store() -> S3SpillStore {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let location = S3Location::new("b")
        .with_prefix("spills/")
        .with_endpoint(format!("http://127.0.0.1:{port}"))
        .with_region("us-east-1");
    S3SpillStore::with_credentials(&location, "testing", "testing").unwrap()
}

fn use_and_drop() {
    let unused = unreachable_store();
    drop(unused);
    let mut store = unreachable_store();
    let error = store.put("spill_runtime.txt", b"text").unwrap_err();
    assert!(
        error.to_string().starts_with("spill store s3://b/spills"),
        "{error}"
    );
    assert!(store.get("spill_runtime.txt", 10).is_err());
    store.remove("spill_runtime.txt");
    drop(store);
}

#[tokio::test(flavor = "current_thread")]
async fn the_store_is_used_and_dropped_inside_a_current_thread_runtime() {
    use_and_drop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_is_used_and_dropped_inside_a_multi_thread_runtime() {
    use_and_drop();
}

#[test]
fn the_store_is_used_and_dropped_outside_any_runtime() {
    use_and_drop();
}
