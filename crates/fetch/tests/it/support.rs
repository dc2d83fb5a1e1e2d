//! What the fetcher's tests share: a scratch folder, servers on loopback with their options, and
//! references registered the way the lanes register them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use mcpl_classify::{Block, classify};
use mcpl_fetch::FetchOptions;
use mcpl_fetch::Fetcher;
use mcpl_lanes::{RefId, Registry, ServerName};
use mcpl_loopback::{Answer, Loopback};
use serde_json::{Value, json};

/// A folder of its own for one test, removed when the test ends. The fetcher saves into
/// `<root>/refs`, so a test can see that nothing was written beside it.
pub(crate) struct Scratch {
    pub(crate) root: PathBuf,
}

impl Scratch {
    pub(crate) fn new() -> Scratch {
        static COUNT: AtomicU64 = AtomicU64::new(0);
        let root = std::env::temp_dir().join(format!(
            "mcpl-fetch-test-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&root).unwrap();
        Scratch { root }
    }

    /// The fetcher's folder.
    pub(crate) fn folder(&self) -> PathBuf {
        self.root.join("refs")
    }

    /// A fetcher saving into the folder.
    pub(crate) fn fetcher(&self) -> Fetcher {
        Fetcher::new(self.folder()).unwrap()
    }

    /// The names in the fetcher's folder, sorted.
    pub(crate) fn files(&self) -> Vec<String> {
        names(&self.folder())
    }

    /// Asserts the folder holds exactly these names and nothing else was written beside it.
    pub(crate) fn assert_holds(&self, expected: &[&str]) {
        let mut expected = expected.to_vec();
        expected.sort_unstable();
        assert_eq!(self.files(), expected, "the fetcher's folder");
        assert_eq!(names(&self.root), ["refs"], "beside the fetcher's folder");
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A loopback server answering every request with the same bytes.
pub(crate) fn serving(content_type: &str, body: &[u8]) -> Loopback {
    let answer = Answer::bytes(content_type, body.to_vec());
    Loopback::start(move |_| answer.clone()).unwrap()
}

/// A server's fetch options: dialed to `server`'s origin, with `token`.
pub(crate) fn dialed(server: &Loopback, token: &str) -> FetchOptions {
    FetchOptions::default()
        .with_origin(server.origin())
        .with_token(token)
}

/// An MCPL resource block for `uri` with extra fields.
pub(crate) fn resource(uri: &str, extra: Value) -> Value {
    let mut block = json!({"type": "resource", "uri": uri});
    if let (Some(block), Some(extra)) = (block.as_object_mut(), extra.as_object()) {
        block.extend(extra.clone());
    }
    block
}

/// Registers a block's reference as delivered by `server`, as a lane does.
pub(crate) fn register(registry: &mut Registry, block: &Value, server: &str) -> RefId {
    let Block::Reference(reference) = classify(block) else {
        panic!("not a reference: {block}")
    };
    registry
        .register(&reference, &ServerName::new(server))
        .id
        .clone()
}

/// The authorization headers a server saw, in order.
pub(crate) fn authorizations(server: &Loopback) -> Vec<Option<String>> {
    server
        .requests()
        .iter()
        .map(|r| r.header("authorization").map(str::to_owned))
        .collect()
}
