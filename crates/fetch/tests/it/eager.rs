//! Eager fetches of a result's small references: at most eight, in parallel, each cut at its
//! claimed size, failures logged and left to `fetch_reference`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcpl_fetch::{EAGER_PER_RESULT, NoResources, Refusal};
use mcpl_lanes::{
    ImageLedger, Projector, RefId, Registry, Route, ServerName, ToolResult, UriPolicy,
};
use mcpl_loopback::{Answer, Loopback};
use serde_json::{Value, json};

use crate::support::{Scratch, dialed, register, resource, serving};

const WAV: &[u8] = b"RIFF0000WAVEpayload";

fn wav(uri: &str, size: u64) -> Value {
    resource(uri, json!({"mimeType": "audio/wav", "sizeBytes": size}))
}

/// The stored copy of a tool result holding these blocks, from `server`.
fn stored(registry: &mut Registry, server: &str, blocks: &[Value]) -> String {
    let result = json!({ "content": blocks });
    let mut ledger = ImageLedger::new();
    let server = ServerName::new(server);
    let read = mcpl_lanes::ResultView::of_value(&result);
    Projector::new(
        registry,
        &mut ledger,
        &Route::ANTHROPIC,
        &server,
        UriPolicy::Hidden,
    )
    .tool_result(&ToolResult::from_view(&read))
    .stored
    .into_owned()
}

#[test]
fn at_most_eight_small_references_of_a_result_are_fetched_in_parallel() {
    let scratch = Scratch::new();
    let (in_flight, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (counting, highest) = (Arc::clone(&in_flight), Arc::clone(&most));
    let origin = Loopback::start(move |_| {
        let now = counting.fetch_add(1, Ordering::SeqCst) + 1;
        highest.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(100));
        counting.fetch_sub(1, Ordering::SeqCst);
        Answer::bytes("audio/wav", WAV.to_vec())
    })
    .unwrap();
    let elsewhere = serving("audio/wav", WAV);
    let mut fetcher = scratch.fetcher();
    fetcher.add_server("home", &dialed(&origin, "t"));
    let mut registry = Registry::new();
    let mut blocks = vec![
        // Over the eager limit, and on another origin: neither is tried.
        wav(&format!("{}/large", origin.origin()), 256 * 1024 + 1),
        wav(&format!("{}/elsewhere", elsewhere.origin()), 19),
    ];
    blocks.extend((0..10).map(|n| wav(&format!("{}/{n}", origin.origin()), 19)));
    let ids: Vec<RefId> = blocks
        .iter()
        .map(|b| register(&mut registry, b, "home"))
        .collect();

    let outcomes = fetcher.eager(&mut registry, &ids);
    assert_eq!(outcomes.len(), EAGER_PER_RESULT);
    assert!(
        outcomes.iter().all(|(_, outcome)| outcome.is_ok()),
        "{outcomes:?}"
    );
    let tried: Vec<&RefId> = outcomes.iter().map(|(id, _)| id).collect();
    assert_eq!(tried, ids[2..10].iter().collect::<Vec<_>>());
    assert_eq!(origin.requests().len(), EAGER_PER_RESULT);
    assert!(elsewhere.requests().is_empty());
    assert!(
        most.load(Ordering::SeqCst) > 1,
        "the fetches ran one at a time"
    );
    assert_eq!(fetcher.used_bytes("home"), Some(8 * 19));

    let text = stored(&mut registry, "home", &blocks);
    assert_eq!(text.matches("— saved: ").count(), 8, "{text}");
    assert_eq!(
        text.matches("fetch with fetch_reference").count(),
        4,
        "{text}"
    );
}

#[test]
fn an_eager_failure_leaves_the_stub_offering_fetch_reference() {
    let scratch = Scratch::new();
    let origin = Loopback::start(|request| {
        if request.target == "/broken" {
            Answer {
                status: 500,
                ..Answer::bytes("text/plain", b"no".to_vec())
            }
        } else {
            Answer::bytes("audio/wav", WAV.to_vec())
        }
    })
    .unwrap();
    let mut fetcher = scratch.fetcher();
    fetcher.add_server("home", &dialed(&origin, "t"));
    let mut registry = Registry::new();
    let blocks = [
        wav(&format!("{}/broken", origin.origin()), 19),
        wav(&format!("{}/fine", origin.origin()), 19),
    ];
    let ids: Vec<RefId> = blocks
        .iter()
        .map(|b| register(&mut registry, b, "home"))
        .collect();
    let outcomes = fetcher.eager(&mut registry, &ids);
    assert_eq!(outcomes[0].1, Err(Refusal::Status(500)));
    assert!(outcomes[1].1.is_ok());
    let text = stored(&mut registry, "home", &blocks[..1]);
    assert!(text.ends_with("fetch with fetch_reference"), "{text}");
    scratch.assert_holds(&[&format!("{}.wav", ids[1])]);
}

#[test]
fn an_eager_fetch_is_cut_at_its_claim_and_fetch_reference_still_works() {
    let scratch = Scratch::new();
    let origin = serving("text/plain", &[b'x'; 1000]);
    let mut fetcher = scratch.fetcher();
    fetcher.add_server("home", &dialed(&origin, "t"));
    let mut registry = Registry::new();
    let id = register(
        &mut registry,
        &wav(&format!("{}/a", origin.origin()), 10),
        "home",
    );
    let outcomes = fetcher.eager(&mut registry, std::slice::from_ref(&id));
    let Err(Refusal::Aborted { at, .. }) = &outcomes[0].1 else {
        panic!("{outcomes:?}")
    };
    assert!(*at > 10);
    assert!(
        outcomes[0]
            .1
            .as_ref()
            .unwrap_err()
            .to_string()
            .starts_with("aborted: actual bytes exceeded ceiling at ")
    );
    scratch.assert_holds(&[]);
    assert_eq!(fetcher.used_bytes("home"), Some(0));
    let saved = fetcher
        .fetch(&mut registry, id.as_str(), None, &mut NoResources)
        .unwrap();
    assert_eq!(saved.bytes, 1000);
}

#[test]
fn parallel_eager_fetches_never_spend_more_than_the_budget_left() {
    let scratch = Scratch::new();
    let origin = serving("audio/wav", WAV);
    let mut fetcher = scratch.fetcher();
    fetcher.add_server("home", &dialed(&origin, "t").with_budget_bytes(50));
    let mut registry = Registry::new();
    let ids: Vec<RefId> = (0..3)
        .map(|n| {
            register(
                &mut registry,
                &wav(&format!("{}/{n}", origin.origin()), 19),
                "home",
            )
        })
        .collect();
    let outcomes = fetcher.eager(&mut registry, &ids);
    assert_eq!(outcomes.len(), 2, "the third would not fit in what is left");
    assert_eq!(fetcher.used_bytes("home"), Some(38));
    assert_eq!(origin.requests().len(), 2);
    let refused = fetcher
        .fetch(&mut registry, ids[2].as_str(), None, &mut NoResources)
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "aborted: actual bytes exceeded per-server budget at 19"
    );
}
