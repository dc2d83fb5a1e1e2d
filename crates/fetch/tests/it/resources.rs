//! References that are MCP resources (`demo://...`): read with `resources/read` on a delivering
//! server that offers resources, under the same ceiling, budget, naming and type rules.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_fetch::DigestCheck;
use mcpl_fetch::FetchOptions;
use mcpl_fetch::ReadError;
use mcpl_lanes::Registry;
use serde_json::{Value, json};

use crate::support::{Scratch, register};

/// The first bytes of a PNG (signature and IHDR of a 1 x 1 image).
const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

fn link(uri: &str, size: u64) -> serde_json::Value {
    json!({"type": "resource_link", "uri": uri, "name": "../../notes", "mimeType": "text/plain",
           "size": size})
}

/// A host's resources for the fetcher: which servers offer `resources/read`, what each uri
/// reads as, and every read asked for.
#[derive(Default)]
struct Resources {
    offering: Vec<String>,
    contents: Vec<(String, Value)>,
    reads: Vec<(String, String)>,
}

impl mcpl_fetch::ResourceReader for Resources {
    fn offers_resources(&self, server: &str) -> bool {
        self.offering.iter().any(|s| s == server)
    }

    fn read_resource(&mut self, server: &str, uri: &str) -> Result<Value, ReadError> {
        self.reads.push((server.to_owned(), uri.to_owned()));
        self.contents
            .iter()
            .find(|(u, _)| u == uri)
            .map(|(_, result)| result.clone())
            .ok_or_else(|| ReadError::Request(format!("no resource {uri}").into()))
    }
}

fn resources() -> Resources {
    Resources {
        offering: vec!["demo".to_owned()],
        contents: vec![
            (
                "demo://notes/1".to_owned(),
                json!({"contents": [{"uri": "demo://notes/1", "mimeType": "text/plain",
                                     "text": "hello world"}]}),
            ),
            (
                "demo://images/1".to_owned(),
                json!({"contents": [{"uri": "demo://images/1", "mimeType": "image/jpeg",
                                     "blob": STANDARD.encode(PNG)}]}),
            ),
        ],
        reads: Vec::new(),
    }
}

#[test]
fn text_and_blob_contents_are_saved_under_the_hosts_names() {
    let scratch = Scratch::new();
    let mut fetcher = scratch.fetcher();
    fetcher.add_server("demo", &FetchOptions::default());
    let mut registry = Registry::new();
    let mut resources = resources();

    let notes = register(&mut registry, &link("demo://notes/1", 11), "demo");
    let saved = fetcher
        .fetch(&mut registry, notes.as_str(), None, &mut resources)
        .unwrap();
    assert_eq!((saved.bytes, saved.mime_type.as_str()), (11, "text/plain"));
    assert_eq!(saved.digest_verified, DigestCheck::NotClaimed);
    assert_eq!(std::fs::read(&saved.path).unwrap(), b"hello world");

    // The blob's bytes say PNG, whatever its mimeType says.
    let image = register(&mut registry, &link("demo://images/1", 33), "demo");
    let saved = fetcher
        .fetch(&mut registry, image.as_str(), None, &mut resources)
        .unwrap();
    assert_eq!(saved.mime_type, "image/png");
    assert_eq!(std::fs::read(&saved.path).unwrap(), PNG);

    assert_eq!(
        resources.reads,
        [
            ("demo".to_owned(), "demo://notes/1".to_owned()),
            ("demo".to_owned(), "demo://images/1".to_owned())
        ]
    );
    assert_eq!(fetcher.used_bytes("demo"), Some(11 + PNG.len() as u64));
    scratch.assert_holds(&[&format!("{image}.png"), &format!("{notes}.txt")]);
}

#[test]
fn a_server_that_offers_no_resources_and_a_file_uri_are_refused_unread() {
    let scratch = Scratch::new();
    let mut fetcher = scratch.fetcher();
    fetcher.add_server("demo", &FetchOptions::default());
    fetcher.add_server("plain", &FetchOptions::default());
    let mut registry = Registry::new();
    let mut resources = resources();

    let id = register(&mut registry, &link("demo://notes/1", 11), "plain");
    let refused = fetcher
        .fetch(&mut registry, id.as_str(), None, &mut resources)
        .unwrap_err();
    assert_eq!(refused.to_string(), "scheme not allowed: demo:");

    // A later delivery by a server that offers resources is read from that server.
    register(&mut registry, &link("demo://notes/1", 11), "demo");
    fetcher
        .fetch(&mut registry, id.as_str(), None, &mut resources)
        .unwrap();

    let file = register(&mut registry, &link("file:///etc/passwd", 11), "demo");
    let refused = fetcher
        .fetch(&mut registry, file.as_str(), None, &mut resources)
        .unwrap_err();
    assert_eq!(refused.to_string(), "scheme not allowed: file:");
    assert_eq!(
        resources.reads.len(),
        1,
        "only the one server that offers resources was read"
    );
}

#[test]
fn resource_contents_meet_the_ceiling_budget_and_digest() {
    let scratch = Scratch::new();
    let mut fetcher = scratch.fetcher();
    fetcher.add_server("demo", &FetchOptions::default().with_max_bytes(10));
    let mut registry = Registry::new();
    let mut resources = resources();

    // The claim says 5; the text is 11.
    let notes = register(&mut registry, &link("demo://notes/1", 5), "demo");
    let refused = fetcher
        .fetch(&mut registry, notes.as_str(), None, &mut resources)
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "aborted: actual bytes exceeded ceiling at 11"
    );

    let digest = "sha256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    // MCP's resource_link carries no digest; MCPL's resource does.
    let block = json!({"type": "resource", "uri": "demo://notes/1", "sizeBytes": 5,
                       "digest": digest});
    let notes = register(&mut registry, &block, "demo");
    let refused = fetcher
        .fetch(&mut registry, notes.as_str(), Some(100), &mut resources)
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .starts_with("aborted: actual bytes exceeded ceiling"),
        "max_bytes is clamped to the server's ceiling: {refused}"
    );
    fetcher.add_server("demo", &FetchOptions::default());
    let refused = fetcher
        .fetch(&mut registry, notes.as_str(), None, &mut resources)
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .starts_with("digest mismatch (claimed sha256:AAAAAAAAAAAAA…, got sha256:"),
        "{refused}"
    );
    let missing = register(&mut registry, &link("demo://gone", 5), "demo");
    let refused = fetcher
        .fetch(&mut registry, missing.as_str(), None, &mut resources)
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "resources/read failed: no resource demo://gone"
    );
    assert_eq!(fetcher.used_bytes("demo"), Some(0));
    scratch.assert_holds(&[]);
}
