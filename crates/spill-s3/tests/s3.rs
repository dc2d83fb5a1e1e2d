//! The S3 store against a real S3-compatible server (moto's, started by `.ci/run`; the tests
//! say `skipped` without `MCPL_S3_ENDPOINT`, and fail under `CI`): spills read back whole, a
//! bucket that refuses writes still holds the budget (the result is cut), a connection cut mid-upload leaves no
//! object, and 1,000 spills from 8 processes at once are all there, none mixed up.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_budget::{
    Bound, PricedRoute, Pricer, S3Location, SpillNotice, SpillStore, fit_tool_result, read_back,
    write_spill,
};
use mcpl_lanes::{ImageLedger, Projector, Registry, ServerName, ToolResult, UriPolicy};
use mcpl_spill_s3::{PART_SIZE, S3SpillStore};
use mcpl_testkit::{S3_TEST_ENV, create_bucket, list_keys, s3_endpoint, s3_request};
use serde_json::{Value, json};

/// A fresh bucket on the server, and a store over it; `None` when there is no server.
fn bucket(name: &str) -> Option<(String, String)> {
    let endpoint = s3_endpoint()?;
    let bucket = format!("mcpl-{name}-{}", std::process::id());
    create_bucket(&endpoint, &bucket);
    Some((endpoint, bucket))
}

fn store(endpoint: &str, bucket: &str, conversation: &str) -> S3SpillStore {
    let location = S3Location::new(bucket)
        .with_prefix("spills/")
        .with_endpoint(endpoint)
        .with_region("us-east-1");
    S3SpillStore::with_credentials(&location, "testing", "testing")
        .unwrap()
        .with_conversation(conversation)
        .with_notice(SpillNotice::ReadResult)
}

fn pricer(route: &PricedRoute) -> Pricer<'_> {
    Pricer::new(&Bound, route)
}

/// A result over any small budget: `text` and a PNG between two halves of it.
fn result_with(text: &str) -> Value {
    let png = STANDARD.encode(mcpl_testkit::fixture("image.png"));
    json!({"content": [
        {"type": "text", "text": text},
        {"type": "image", "data": png, "mimeType": "image/png"},
        {"type": "text", "text": "the end"},
    ]})
}

/// Writes the spill of `result` through `store` as the loop would.
fn spill(result: &Value, store: &mut dyn SpillStore) -> Result<mcpl_budget::Spill, String> {
    let (mut registry, mut ledger) = (Registry::with_seed(1), ImageLedger::with_seed(2));
    let server = ServerName::new("s3-test");
    let route = PricedRoute::ANTHROPIC;
    let mut projector = Projector::new(
        &mut registry,
        &mut ledger,
        &route.lanes,
        &server,
        UriPolicy::Hidden,
    );
    let read = mcpl_lanes::ResultView::of_value(result);
    write_spill(&mut projector, &ToolResult::from_view(&read), store).map_err(|e| e.to_string())
}

#[test]
fn a_spill_is_read_back_whole_and_carries_no_public_acl() {
    let Some((endpoint, bucket)) = bucket("whole") else {
        return;
    };
    let mut store = store(&endpoint, &bucket, "c1");
    let text = "a line of the log\n".repeat(5000);
    let written = spill(&result_with(&text), &mut store).unwrap();
    let id = written.id.as_str();
    assert_eq!(written.path, format!("s3://{bucket}/spills/{id}.txt"));
    let mut keys = list_keys(&endpoint, &bucket, "spills/");
    keys.sort();
    assert_eq!(
        keys,
        [
            format!("spills/{id}.json"),
            format!("spills/{id}.txt"),
            format!("spills/{id}/1.png"),
        ]
    );
    let route = PricedRoute::ANTHROPIC;
    let part = read_back(&mut store, id, 0, 1_000_000, pricer(&route)).unwrap();
    assert!(part.text.starts_with(&text), "{}", &part.text[..100]);
    assert!(part.text.ends_with("\nthe end"));
    assert!(part.content.iter().any(|block| block["type"] == "image"));
    // No public ACL: an anonymous read is refused (the server lets one through for an object
    // written `public-read`).
    for key in keys {
        let (status, body) = s3_request(&endpoint, "GET", &format!("/{bucket}/{key}"), b"");
        assert_eq!(status, 403, "{key} is readable by anyone: {body}");
    }
    // Another conversation's store over the same bucket reads nothing.
    let mut theirs = self::store(&endpoint, &bucket, "c2");
    let error = read_back(&mut theirs, id, 0, 1_000, pricer(&route)).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("was made in another conversation"),
        "{error}"
    );
}

#[test]
fn a_bucket_that_refuses_writes_still_holds_the_budget() {
    let Some(endpoint) = s3_endpoint() else {
        return;
    };
    let mut store = store(&endpoint, "mcpl-no-such-bucket", "c1");
    let text = "word ".repeat(10_000);
    let result = result_with(&text);
    let (mut registry, mut ledger) = (Registry::with_seed(1), ImageLedger::with_seed(2));
    let server = ServerName::new("s3-test");
    let route = PricedRoute::ANTHROPIC;
    let mut projector = Projector::new(
        &mut registry,
        &mut ledger,
        &route.lanes,
        &server,
        UriPolicy::Hidden,
    );
    let read = mcpl_lanes::ResultView::of_value(&result);
    let parsed = ToolResult::from_view(&read);
    let fitted = fit_tool_result(
        &mut projector,
        &parsed,
        pricer(&route),
        500,
        Some(&mut store),
    );
    // The budget holds all the same: the result is cut, and the notice says why the whole is
    // not kept.
    assert!(fitted.cut);
    assert!(fitted.spill.is_none());
    assert!(fitted.price.is_some_and(|p| p <= 500), "{:?}", fitted.price);
    assert!(
        fitted
            .copies
            .stored
            .contains("; the whole could not be kept: spill store s3://"),
        "{}",
        fitted.copies.stored
    );
    let diagnostic = fitted.diagnostics.join("\n");
    assert!(
        diagnostic.contains(
            "and its spill could not be written (spill store s3://mcpl-no-such-bucket/spills: "
        ) && diagnostic.ends_with("; it is cut, and the whole is not kept"),
        "{diagnostic}"
    );
}

#[test]
fn a_big_file_goes_in_parts_and_comes_back_byte_for_byte() {
    let Some((endpoint, bucket)) = bucket("parts") else {
        return;
    };
    let mut store = store(&endpoint, &bucket, "c1").with_multipart_threshold(PART_SIZE + 1);
    let bytes: Vec<u8> = (0..PART_SIZE * 2 + 12_345)
        .map(|i| (i % 251) as u8)
        .collect();
    store.put("spill_big-1.bin", &bytes).unwrap();
    assert_eq!(store.get("spill_big-1.bin", u64::MAX).unwrap(), bytes);
    let error = store.get("spill_big-1.bin", 1000).unwrap_err();
    assert!(
        error.to_string().ends_with(" is over 1000 bytes"),
        "{error}"
    );
}

/// A loopback proxy to the server that cuts every connection once `limit` bytes have gone
/// up, and refuses all connections after: the server dies mid-upload, as far as the store can
/// tell.
struct DyingProxy {
    address: String,
    dead: Arc<AtomicBool>,
}

impl DyingProxy {
    fn start(upstream: &str, limit: u64) -> DyingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = format!("http://{}", listener.local_addr().unwrap());
        let upstream = upstream.trim_start_matches("http://").to_owned();
        let dead = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let flag = Arc::clone(&dead);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if flag.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let (flag, sent) = (Arc::clone(&flag), Arc::clone(&sent));
                let (mut up_from, mut up_to) =
                    (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (mut down_from, mut down_to) = (server, client);
                std::thread::spawn(move || {
                    let mut buffer = [0u8; 16 * 1024];
                    loop {
                        let n = match up_from.read(&mut buffer) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        if sent.fetch_add(n as u64, Ordering::SeqCst) + n as u64 > limit {
                            flag.store(true, Ordering::SeqCst);
                            break;
                        }
                        if up_to.write_all(&buffer[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = up_from.shutdown(Shutdown::Both);
                    let _ = up_to.shutdown(Shutdown::Both);
                });
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut down_from, &mut down_to);
                    let _ = down_to.shutdown(Shutdown::Both);
                });
            }
        });
        DyingProxy { address, dead }
    }
}

#[test]
fn a_server_that_dies_mid_upload_leaves_no_object() {
    let Some((endpoint, bucket)) = bucket("dies") else {
        return;
    };
    // Multipart: the connection is cut in the second part of three.
    let proxy = DyingProxy::start(&endpoint, PART_SIZE as u64 + PART_SIZE as u64 / 2);
    let mut cut = store(&proxy.address, &bucket, "c1").with_multipart_threshold(PART_SIZE + 1);
    let bytes = vec![7u8; PART_SIZE * 2 + 1000];
    let error = cut.put("spill_dies-1.bin", &bytes).unwrap_err();
    assert!(
        proxy.dead.load(Ordering::SeqCst),
        "the proxy cut the upload"
    );
    assert!(
        error
            .to_string()
            .starts_with(&format!("spill store s3://{bucket}/spills: ")),
        "{error}"
    );
    // One PUT cut half-way through its body.
    let proxy = DyingProxy::start(&endpoint, 1024 * 1024);
    let mut cut = store(&proxy.address, &bucket, "c1");
    assert!(
        cut.put("spill_dies-2.bin", &vec![8u8; 3 * 1024 * 1024])
            .is_err()
    );
    assert!(proxy.dead.load(Ordering::SeqCst));
    // The server itself, asked directly, holds no object at either key.
    assert_eq!(list_keys(&endpoint, &bucket, ""), Vec::<String>::new());
    // And a whole spill cut part-way is not there for read_result: its files are removed or
    // never visible, and it has no manifest.
    let proxy = DyingProxy::start(&endpoint, 40_000);
    let mut cut = store(&proxy.address, &bucket, "c1");
    assert!(spill(&result_with(&"x".repeat(60_000)), &mut cut).is_err());
    assert!(
        list_keys(&endpoint, &bucket, "")
            .iter()
            .all(|key| !key.ends_with(".json")),
    );
}

#[test]
fn retention_removes_old_spills_only() {
    let Some((endpoint, bucket)) = bucket("retention") else {
        return;
    };
    let mut store = store(&endpoint, &bucket, "c1");
    spill(&result_with("some text"), &mut store).unwrap();
    let other = S3Location::new(bucket.clone())
        .with_prefix("elsewhere")
        .with_endpoint(endpoint.clone());
    let mut elsewhere = S3SpillStore::with_credentials(&other, "testing", "testing").unwrap();
    elsewhere.put("spill_kept.txt", b"kept").unwrap();
    assert_eq!(
        store
            .remove_older_than(std::time::Duration::from_secs(3600))
            .unwrap(),
        0
    );
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(
        store.remove_older_than(std::time::Duration::ZERO).unwrap(),
        3
    );
    assert_eq!(
        list_keys(&endpoint, &bucket, ""),
        ["elsewhere/spill_kept.txt"]
    );
}

/// What a worker spills: its number and the spill's, in text long enough to be cut.
fn worker_text(worker: usize, n: usize) -> String {
    format!(
        "worker {worker} spill {n}\n{}",
        format!("{worker}:{n} ").repeat(300)
    )
}

const WORKERS: usize = 8;
const SPILLS_EACH: usize = 125;

/// One of the eight processes of `a_thousand_spills_from_eight_processes_are_all_there`.
#[test]
#[ignore = "a worker process of a_thousand_spills_from_eight_processes_are_all_there"]
fn spill_worker() {
    let endpoint = std::env::var("MCPL_S3_WORKER_ENDPOINT").expect("run by the parent test");
    let bucket = std::env::var("MCPL_S3_WORKER_BUCKET").unwrap();
    let worker: usize = std::env::var("MCPL_S3_WORKER").unwrap().parse().unwrap();
    let mut store = store(&endpoint, &bucket, "many");
    for n in 0..SPILLS_EACH {
        let written = spill(&result_with(&worker_text(worker, n)), &mut store).unwrap();
        println!("spilled {worker} {n} {}", written.id);
    }
}

#[test]
fn a_thousand_spills_from_eight_processes_are_all_there() {
    let Some((endpoint, bucket)) = bucket("many") else {
        return;
    };
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..WORKERS)
        .map(|worker| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "spill_worker",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .envs(S3_TEST_ENV)
                .env("MCPL_S3_WORKER_ENDPOINT", &endpoint)
                .env("MCPL_S3_WORKER_BUCKET", &bucket)
                .env("MCPL_S3_WORKER", worker.to_string())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut spills = Vec::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "a worker failed");
        for line in String::from_utf8(output.stdout).unwrap().lines() {
            // libtest's own `test spill_worker ... ` may begin the first line.
            if let Some(at) = line.find("spilled ") {
                let rest = &line[at + "spilled ".len()..];
                let fields: Vec<&str> = rest.split(' ').collect();
                spills.push((
                    fields[0].parse::<usize>().unwrap(),
                    fields[1].parse::<usize>().unwrap(),
                    fields[2].to_owned(),
                ));
            }
        }
    }
    assert_eq!(spills.len(), WORKERS * SPILLS_EACH);
    let ids: std::collections::BTreeSet<&str> =
        spills.iter().map(|(_, _, id)| id.as_str()).collect();
    assert_eq!(ids.len(), spills.len(), "every id is its own");
    assert_eq!(
        list_keys(&endpoint, &bucket, "spills/").len(),
        3 * spills.len()
    );
    let mut reader = store(&endpoint, &bucket, "many");
    let route = PricedRoute::ANTHROPIC;
    for (worker, n, id) in &spills {
        let part = read_back(&mut reader, id, 0, 1_000_000, pricer(&route)).unwrap();
        let expected = worker_text(*worker, *n);
        assert!(
            part.text.starts_with(&format!(
                "{expected}\n[attachment: {id}/1.png (image/png, 167B)]"
            )),
            "{id}: {}",
            &part.text[..60]
        );
        assert!(part.text.ends_with("\nthe end"));
        assert_eq!(part.end, part.total);
    }
}

#[test]
fn a_store_over_https_trusts_what_every_client_trusts() {
    // The store's client is built on mcpl-tls's one stack: an endpoint whose certificate a
    // private CA signed is refused until that CA is trusted, then works (decision 0120).
    let Some((endpoint, bucket)) = bucket("https") else {
        return;
    };
    let plain: std::net::SocketAddr = endpoint
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let front = mcpl_testkit::tls_front(plain);
    let https = format!("https://127.0.0.1:{}", front.port());
    let result = result_with(&"a line over https\n".repeat(2000));
    let refused = spill(&result, &mut store(&https, &bucket, "untrusted")).unwrap_err();
    assert!(refused.contains("certificate"), "{refused}");
    let trust = mcpl_tls::Trust::public()
        .with_pem_files([mcpl_testkit::test_ca()])
        .unwrap();
    mcpl_tls::install(trust);
    let mut store = store(&https, &bucket, "trusted");
    let written = spill(&result, &mut store).unwrap();
    let route = PricedRoute::ANTHROPIC;
    let part = read_back(
        &mut store,
        written.id.as_str(),
        0,
        1_000_000,
        pricer(&route),
    )
    .unwrap();
    assert!(
        part.text.starts_with("a line over https\n"),
        "{}",
        part.text
    );
}
