//! The origin check on the wire: a reference spelled another way than its server's origin is
//! fetched from that origin when the WHATWG parser reads it as that origin, and otherwise is
//! refused without a request, whatever the spelling.

use mcpl_fetch::{NoResources, Refusal};
use mcpl_lanes::Registry;
use rstest::rstest;
use serde_json::json;

use crate::support::{Scratch, dialed, register, resource, serving};

/// Fetches `uri` (with `{port}` replaced by the server's port) from a server dialed at
/// `http://127.0.0.1:<port>`; answers the refusal, or the request target the server saw.
fn fetch(uri: &str) -> Result<String, Refusal> {
    let server = serving("text/plain", b"payload");
    let port = server.origin().rsplit(':').next().unwrap_or_default();
    let uri = uri.replace("{port}", port);
    let scratch = Scratch::new();
    let mut fetcher = scratch.fetcher();
    fetcher.add_server("server", &dialed(&server, "token"));
    let mut registry = Registry::new();
    let id = register(&mut registry, &resource(&uri, json!({})), "server");
    let outcome = fetcher.fetch(&mut registry, id.as_str(), None, &mut NoResources);
    let requests = server.requests();
    match outcome {
        Ok(saved) => {
            assert_eq!(saved.bytes, 7);
            assert_eq!(requests.len(), 1, "{uri}");
            Ok(requests[0].target.clone())
        }
        Err(refusal) => {
            assert!(requests.is_empty(), "{uri} was refused after a request");
            Err(refusal)
        }
    }
}

#[rstest]
#[case("http://127.0.0.1:{port}/a", "/a")]
#[case("HTTP://127.0.0.1:{port}/a#part", "/a")]
#[case("http://0x7f.0.0.1:{port}/a", "/a")]
#[case("http://2130706433:{port}/a", "/a")]
#[case("http://127.1:{port}/a", "/a")]
#[case("http://127.0.0.1.:{port}/a", "/a")]
#[case("http://%31%32%37.0.0.1:{port}/a", "/a")]
#[case("http:127.0.0.1:{port}/a", "/a")]
#[case("http:\\\\127.0.0.1:{port}\\a", "/a")]
#[case("http://127.0.0.1:{port}\\@evil.example/a", "/@evil.example/a")]
#[case(" http://127.0.0.1:{port}/\ta\n", "/a")]
#[case("http://127.0.0.1:{port}/a b?c d", "/a%20b?c%20d")]
fn spellings_of_the_dialed_origin_are_fetched_from_it(#[case] uri: &str, #[case] seen: &str) {
    assert_eq!(fetch(uri), Ok(seen.to_owned()));
}

#[rstest]
#[case("http://evil.example\\@127.0.0.1:{port}/a")]
#[case("http://[::ffff:127.0.0.1]:{port}/a")]
#[case("http://localhost:{port}/a")]
#[case("https://127.0.0.1:{port}/a")]
#[case("http://0x7f.0.0.2:{port}/a")]
fn spellings_of_another_origin_are_refused_before_any_request(#[case] uri: &str) {
    let refused = fetch(uri);
    assert!(
        matches!(refused, Err(Refusal::ThirdPartyOrigin { .. })),
        "{uri}: {refused:?}"
    );
}

#[rstest]
#[case("http://127.0.0.1:{port}@evil.example/a")]
#[case("http://evil.example@127.0.0.1:{port}/a")]
#[case("http://127.0.0.1:{port}\n@evil.example/a")]
#[case("http://127.0.0.1:{port}:80/a")]
#[case("http://127.0.0.1:{port}0000000/a")]
#[case("http://127.0.0.1:{port}.evil.example/a")]
fn spellings_that_hide_the_host_do_not_parse(#[case] uri: &str) {
    assert_eq!(fetch(uri), Err(Refusal::UriDoesNotParse), "{uri}");
}
