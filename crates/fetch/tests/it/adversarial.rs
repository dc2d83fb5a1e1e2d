//! Servers that lie, stall, redirect and bomb, on loopback: nothing escapes the fetcher's
//! folder, no token leaves its origin, and no partial file remains.

use std::time::Duration;

use mcpl_fetch::FetchOptions;
use mcpl_fetch::{Fetcher, Limit, NoResources, Refusal, Saved};
use mcpl_lanes::Registry;
use mcpl_loopback::{Answer, Body, Loopback, gzip};
use rstest::rstest;
use serde_json::json;

use crate::support::{Scratch, authorizations, register, resource, serving};

const TOKEN: &str = "adversarial-secret";

/// One server, one fetcher dialed to it with `TOKEN`, one reference to `path` on it.
struct Setup {
    scratch: Scratch,
    fetcher: Fetcher,
    registry: Registry,
}

impl Setup {
    fn new(server: &Loopback, options: FetchOptions) -> Setup {
        let scratch = Scratch::new();
        let mut fetcher = scratch.fetcher();
        fetcher.add_server(
            "server",
            &options.with_origin(server.origin()).with_token(TOKEN),
        );
        Setup {
            scratch,
            fetcher,
            registry: Registry::new(),
        }
    }

    /// Registers a reference to `path` on the server with these claims and fetches it.
    fn fetch(
        &mut self,
        server: &Loopback,
        path: &str,
        claims: serde_json::Value,
    ) -> Result<Saved, Refusal> {
        let block = resource(&format!("{}{path}", server.origin()), claims);
        let id = register(&mut self.registry, &block, "server");
        let outcome = self
            .fetcher
            .fetch(&mut self.registry, id.as_str(), None, &mut NoResources);
        if let Err(refusal) = &outcome {
            assert!(!refusal.to_string().contains(TOKEN));
            assert!(self.registry.lookup(id.as_str()).unwrap().fetched.is_none());
        }
        outcome
    }
}

fn ceiling(max_bytes: u64) -> FetchOptions {
    FetchOptions::default().with_max_bytes(max_bytes)
}

#[test]
fn a_body_larger_than_claimed_is_cut_at_the_ceiling_or_saved_as_it_is() {
    let server = serving("application/octet-stream", &vec![7u8; 200 * 1024]);
    let mut setup = Setup::new(&server, ceiling(64 * 1024));
    let refused = setup
        .fetch(&server, "/big", json!({"sizeBytes": 10}))
        .unwrap_err();
    let Refusal::Aborted {
        limit: Limit::Ceiling,
        at,
    } = refused
    else {
        panic!("{refused}")
    };
    assert!(at > 64 * 1024 && at <= 128 * 1024, "cut at {at}");
    setup.scratch.assert_holds(&[]);

    // Under the ceiling, the bytes are saved as they are, whatever the claim said.
    let mut setup = Setup::new(&server, FetchOptions::default());
    let saved = setup
        .fetch(&server, "/big", json!({"sizeBytes": 10}))
        .unwrap();
    assert_eq!(saved.bytes, 200 * 1024);
}

#[test]
fn an_endless_stream_is_cut_and_the_connection_closed() {
    let server = Loopback::start(|_| {
        Answer::chunks(
            "application/octet-stream",
            vec![b'x'; 16 * 1024],
            u64::MAX,
            Duration::ZERO,
        )
    })
    .unwrap();
    let mut setup = Setup::new(&server, ceiling(1024 * 1024));
    let refused = setup.fetch(&server, "/endless", json!({})).unwrap_err();
    let Refusal::Aborted {
        limit: Limit::Ceiling,
        at,
    } = refused
    else {
        panic!("{refused}")
    };
    assert!(
        at > 1024 * 1024 && at <= 1024 * 1024 + 64 * 1024,
        "cut at {at}"
    );
    assert!(server.settle(Duration::from_secs(5)));
    let streams = server.streams();
    assert!(streams[0].client_closed, "{streams:?}");
    setup.scratch.assert_holds(&[]);
}

#[test]
fn a_slow_drip_runs_out_of_time() {
    let server = Loopback::start(|_| {
        Answer::chunks(
            "text/plain",
            b"x".to_vec(),
            u64::MAX,
            Duration::from_millis(50),
        )
    })
    .unwrap();
    let mut setup = Setup::new(&server, FetchOptions::default());
    setup
        .fetcher
        .set_timeouts(Duration::from_millis(400), Duration::from_millis(400));
    let refused = setup.fetch(&server, "/drip", json!({})).unwrap_err();
    assert_eq!(refused.to_string(), "fetch timed out or aborted");
    assert!(server.settle(Duration::from_secs(5)));
    assert!(server.streams()[0].client_closed);
    setup.scratch.assert_holds(&[]);
}

#[rstest]
fn a_redirect_to_another_origin_is_never_followed_so_the_token_stays_home(
    #[values(301, 302, 303, 307, 308)] status: u16,
) {
    let other = serving("text/plain", b"the token would have come here");
    let location = format!("{}/steal", other.origin());
    let server = Loopback::start(move |_| Answer {
        status,
        ..Answer::redirect(&location)
    })
    .unwrap();
    let mut setup = Setup::new(&server, FetchOptions::default());
    let refused = setup.fetch(&server, "/payload", json!({})).unwrap_err();
    assert_eq!(
        refused.to_string(),
        format!("redirect refused (HTTP {status}) — no redirect traversal")
    );
    assert_eq!(authorizations(&server), [Some(format!("Bearer {TOKEN}"))]);
    setup.scratch.assert_holds(&[]);
    assert!(
        other.requests().is_empty(),
        "the other origin saw a request"
    );
}

#[test]
fn a_gzip_bomb_is_cut_at_the_ceiling_on_decoded_bytes() {
    // 512 gzip members of 1 MiB of zeros each: half a MiB on the wire, 512 MiB decoded.
    let member = gzip(&vec![0u8; 1024 * 1024]);
    let bomb: Vec<u8> = member.repeat(512);
    assert!(bomb.len() < 1024 * 1024);
    let server = Loopback::start(move |_| {
        Answer::bytes("application/octet-stream", bomb.clone())
            .with_header("Content-Encoding", "gzip")
    })
    .unwrap();
    let mut setup = Setup::new(&server, ceiling(8 * 1024 * 1024));
    let refused = setup
        .fetch(&server, "/bomb", json!({"sizeBytes": 100}))
        .unwrap_err();
    let Refusal::Aborted {
        limit: Limit::Ceiling,
        at,
    } = refused
    else {
        panic!("{refused}")
    };
    assert!(
        at > 8 * 1024 * 1024 && at <= 8 * 1024 * 1024 + 64 * 1024,
        "cut at {at}"
    );
    setup.scratch.assert_holds(&[]);
}

#[test]
fn a_content_type_that_lies_loses_to_the_bytes() {
    let pdf = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n".to_vec();
    let server = Loopback::start(move |request| match request.target.as_str() {
        "/pdf" => Answer::bytes("image/png", pdf.clone()),
        "/csv" => Answer::bytes("Text/CSV; charset=utf-8", b"a,b\n1,2\n".to_vec()),
        _ => Answer::bytes("../../evil; x=y", b"just some words".to_vec()),
    })
    .unwrap();
    let mut setup = Setup::new(&server, FetchOptions::default());
    let pdf = setup
        .fetch(&server, "/pdf", json!({"mimeType": "image/png"}))
        .unwrap();
    assert_eq!(pdf.mime_type, "application/pdf");
    assert!(pdf.path.ends_with(".pdf"));
    // Bytes that name no type: the header, if it is a type.
    let csv = setup
        .fetch(&server, "/csv", json!({"mimeType": "image/png"}))
        .unwrap();
    assert_eq!(csv.mime_type, "text/csv");
    assert!(csv.path.ends_with(".csv"));
    // A header that is no type: the claim, and then the default.
    let claimed = setup
        .fetch(&server, "/junk", json!({"mimeType": "text/plain"}))
        .unwrap();
    assert_eq!(claimed.mime_type, "text/plain");
    let unknown = setup
        .fetch(&server, "/junk2", json!({"mimeType": "x/../../y"}))
        .unwrap();
    assert_eq!(unknown.mime_type, "application/octet-stream");
    assert!(unknown.path.ends_with(".bin"));
}

#[test]
fn a_servers_name_never_names_a_file() {
    let server = serving("audio/wav", b"RIFF0000WAVEpayload");
    let mut setup = Setup::new(&server, FetchOptions::default());
    let mut expected = Vec::new();
    for (n, name) in [
        "../../.ssh/authorized_keys",
        "CON",
        "..\\..\\boot.ini",
        "/etc/passwd",
        "nul.txt",
    ]
    .into_iter()
    .enumerate()
    {
        let saved = setup
            .fetch(
                &server,
                &format!("/{n}"),
                json!({"name": name, "mimeType": "audio/wav"}),
            )
            .unwrap();
        let file = std::path::Path::new(&saved.path);
        assert_eq!(file.parent(), Some(setup.scratch.folder().as_path()));
        let file_name = file.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(
            file_name.starts_with("ref_") && file_name.ends_with(".wav"),
            "{file_name}"
        );
        assert!(!file_name.contains(name) && !file_name.contains("CON"));
        expected.push(file_name);
    }
    let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
    setup.scratch.assert_holds(&expected);
}

#[test]
fn the_token_goes_to_its_origin_only() {
    let server = serving("audio/wav", b"RIFF0000WAVEpayload");
    let other = serving("audio/wav", b"RIFF0000WAVEpayload");
    let mut setup = Setup::new(&server, FetchOptions::default());
    // The same host on another port, and the same port under another host name.
    let port = other.origin().rsplit(':').next().unwrap().to_owned();
    let own_port = server.origin().rsplit(':').next().unwrap().to_owned();
    for uri in [
        format!("{}/x", other.origin()),
        format!("http://localhost:{own_port}/x"),
        format!("https://127.0.0.1:{own_port}/x"),
        format!("http://127.0.0.1:{port}@127.0.0.1:{own_port}/x"),
    ] {
        let id = register(&mut setup.registry, &resource(&uri, json!({})), "server");
        let refused = setup
            .fetcher
            .fetch(&mut setup.registry, id.as_str(), None, &mut NoResources)
            .unwrap_err();
        assert!(
            matches!(
                refused,
                Refusal::ThirdPartyOrigin { .. } | Refusal::UriDoesNotParse
            ),
            "{uri}: {refused}"
        );
    }
    assert!(server.requests().is_empty());
    assert!(other.requests().is_empty());
    assert!(!format!("{:?}", setup.fetcher).contains(TOKEN));
    // Fetched, it goes as a bearer token on the one request to the origin.
    setup.fetch(&server, "/mine", json!({})).unwrap();
    assert_eq!(authorizations(&server), [Some(format!("Bearer {TOKEN}"))]);
}

#[test]
fn failures_after_the_dial_keep_nothing() {
    let server = Loopback::start(|request| match request.target.as_str() {
        "/missing" => Answer {
            status: 404,
            ..Answer::bytes("text/plain", b"not here".to_vec())
        },
        "/truncated" => Answer {
            // Claims more than it sends, then closes.
            headers: vec![("Content-Length".to_owned(), "1000".to_owned())],
            body: Body::Bytes(b"short"[..].into()),
            status: 200,
        },
        _ => Answer::bytes("audio/wav", b"RIFF0000WAVEpayload".to_vec()),
    })
    .unwrap();
    let mut setup = Setup::new(&server, FetchOptions::default());
    let refused = setup.fetch(&server, "/missing", json!({})).unwrap_err();
    assert_eq!(refused.to_string(), "HTTP 404");
    let refused = setup
        .fetch(
            &server,
            "/wrong-digest",
            json!({"digest": "sha256:2SmKENGwc1g33EvYXaxkGw887yekfl1TpU8vP1svz_o"}),
        )
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "digest mismatch (claimed sha256:2SmKENGwc1g33…, got sha256:uM7OLD5sO8G3S…)"
    );
    let refused = setup.fetch(&server, "/truncated", json!({})).unwrap_err();
    assert_eq!(refused.to_string(), "fetch failed: io: Peer disconnected");
    setup.scratch.assert_holds(&[]);
    assert_eq!(setup.fetcher.used_bytes("server"), Some(0));
}

#[rstest]
#[case::expired(
    json!({"expiresAt": "2001-01-01T00:00:00Z"}),
    "reference expired (or unparseable expiry — fail closed)"
)]
#[case::unparsable_expiry(
    json!({"expiresAt": "tomorrow"}),
    "reference expired (or unparseable expiry — fail closed)"
)]
#[case::over_the_ceiling(
    json!({"sizeBytes": 101}),
    "claimed 101 bytes exceeds fetch ceiling 100"
)]
fn an_expired_or_oversized_claim_dials_nothing(
    #[case] claims: serde_json::Value,
    #[case] words: &str,
) {
    let server = serving("audio/wav", b"RIFF0000WAVEpayload");
    let mut setup = Setup::new(&server, ceiling(100));
    let refused = setup.fetch(&server, "/x", claims).unwrap_err();
    assert_eq!(refused.to_string(), words);
    assert!(server.requests().is_empty());
}

#[test]
fn a_claim_over_the_asked_ceiling_dials_nothing_and_a_later_expiry_is_fetched() {
    let server = serving("audio/wav", b"RIFF0000WAVEpayload");
    let mut setup = Setup::new(&server, ceiling(100));
    let block = resource(&format!("{}/y", server.origin()), json!({"sizeBytes": 50}));
    let id = register(&mut setup.registry, &block, "server");
    let refused = setup
        .fetcher
        .fetch(&mut setup.registry, id.as_str(), Some(20), &mut NoResources)
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "claimed 50 bytes exceeds fetch ceiling 20"
    );
    assert!(server.requests().is_empty());
    let later = setup.fetch(
        &server,
        "/z",
        json!({"expiresAt": "2999-01-01T00:00:00.5+01:00"}),
    );
    assert!(later.is_ok());
}
