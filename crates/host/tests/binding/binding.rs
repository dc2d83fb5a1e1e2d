//! References bound to every server that delivered them (reference-binding.md): each lane binds
//! its references to its server, and the fetcher dials through the first of a uri's servers on
//! the uri's origin, with that server's token, eager limit and budget.

use mcpl_client::ServerRequests;
use mcpl_fetch::FetchOptions;
use mcpl_fetch::{DigestCheck, NoResources, Refusal};
use mcpl_host::mcpl::{Injections, Lanes};
use mcpl_lanes::{ImageLedger, Registry, ServerName, ToolResult};
use mcpl_session::{RouteId, Session};
use serde_json::{Value, json};

use crate::support::{Scratch, authorizations, dialed, register, resource, serving};

/// A 19-byte WAV header, as the conformance vectors serve.
const WAV: &[u8] = b"RIFF0000WAVEpayload";

fn lanes() -> Lanes {
    Lanes::new(
        Session::new(RouteId::Anthropic)
            .with_state(Registry::with_seed(1), ImageLedger::with_seed(2)),
    )
}

fn wav(uri: &str) -> Value {
    resource(
        uri,
        json!({"name": "clip.wav", "mimeType": "audio/wav", "sizeBytes": 19}),
    )
}

/// The stored copy a tool result from `server` shows for these blocks now.
fn stored(lanes: &mut Lanes, server: &str, blocks: Value) -> String {
    let result = json!({ "content": blocks });
    let read = mcpl_lanes::ResultView::of_value(&result);
    lanes
        .projector(&ServerName::new(server))
        .tool_result(&ToolResult::from_view(&read))
        .stored
        .into_owned()
}

#[test]
fn each_lane_binds_its_references_and_each_is_fetched_through_its_server() {
    let scratch = Scratch::new();
    let servers: Vec<(&str, _)> = ["pusher", "chatter", "injector", "tooler"]
        .into_iter()
        .map(|name| (name, serving("audio/wav", WAV)))
        .collect();
    let uri = |n: usize| format!("{}/payload/{}", servers[n].1.origin(), servers[n].0);
    let mut fetcher = scratch.fetcher();
    for (name, server) in &servers {
        fetcher.add_server(name, &dialed(server, &format!("{name}-token")));
    }
    let mut lanes = lanes();

    lanes
        .answer(
            "pusher",
            "push/event",
            &json!({"eventId": "e1", "payload": {"content": [
                {"type": "text", "text": "a clip arrived"}, wav(&uri(0))]}}),
        )
        .unwrap();
    lanes
        .answer(
            "chatter",
            "channels/incoming",
            &json!({"messages": [{"messageId": "m1", "content": [wav(&uri(1))]}]}),
        )
        .unwrap();
    let mut injections = Injections::default();
    lanes.injections(
        "injector",
        &json!({"contextInjections": [{"position": "afterUser", "content": [wav(&uri(2))]}]}),
        &mut injections,
    );
    stored(&mut lanes, "tooler", json!([wav(&uri(3))]));

    for (n, (name, server)) in servers.iter().enumerate() {
        let record = lanes.session.registry().find_uri(&uri(n)).unwrap();
        assert_eq!(record.servers, [ServerName::new(*name)], "{name}");
        let id = record.id.clone();
        let saved = fetcher
            .fetch(
                lanes.session.registry_mut(),
                id.as_str(),
                None,
                &mut NoResources,
            )
            .unwrap();
        assert_eq!(saved.bytes, 19);
        assert_eq!(saved.mime_type, "audio/wav");
        assert_eq!(saved.digest_verified, DigestCheck::NotClaimed);
        assert_eq!(
            authorizations(server),
            [Some(format!("Bearer {name}-token"))],
            "{name}: one request, with its own token"
        );
        assert_eq!(fetcher.used_bytes(name), Some(19));
    }
    // Each stub now says where its payload was saved.
    let later = stored(&mut lanes, "tooler", json!([wav(&uri(3))]));
    assert!(later.contains("— saved: "), "{later}");
    assert!(!later.contains("fetch with fetch_reference"), "{later}");
    assert_eq!(scratch.files().len(), 4);
}

/// Two servers deliver one uri on `home`'s origin, in `order`; `home`'s options are `home`'s.
struct TwoServers {
    scratch: Scratch,
    relay: mcpl_loopback::Loopback,
    home: mcpl_loopback::Loopback,
    fetcher: mcpl_fetch::Fetcher,
    registry: Registry,
    id: mcpl_lanes::RefId,
}

fn two_servers(order: [&str; 2], relay: FetchOptions, home: FetchOptions) -> TwoServers {
    let scratch = Scratch::new();
    let relay_server = serving("audio/wav", WAV);
    let home_server = serving("audio/wav", WAV);
    let mut fetcher = scratch.fetcher();
    fetcher.add_server("relay", &relay.with_origin(relay_server.origin()));
    fetcher.add_server("home", &home.with_origin(home_server.origin()));
    let mut registry = Registry::with_seed(5);
    let block = wav(&format!("{}/payload", home_server.origin()));
    let id = register(&mut registry, &block, order[0]);
    assert_eq!(register(&mut registry, &block, order[1]), id);
    // A server that sends the uri again is not listed twice.
    register(&mut registry, &block, order[0]);
    let servers = &registry.lookup(id.as_str()).unwrap().servers;
    assert_eq!(
        *servers,
        [ServerName::new(order[0]), ServerName::new(order[1])]
    );
    TwoServers {
        scratch,
        relay: relay_server,
        home: home_server,
        fetcher,
        registry,
        id,
    }
}

fn token(token: &str) -> FetchOptions {
    FetchOptions::default().with_token(token)
}

#[test]
fn a_uri_two_servers_delivered_is_fetched_through_the_one_on_its_origin_in_either_order() {
    for order in [["relay", "home"], ["home", "relay"]] {
        let mut t = two_servers(order, token("relay-token"), token("home-token"));
        let saved = t
            .fetcher
            .fetch(&mut t.registry, t.id.as_str(), None, &mut NoResources)
            .unwrap();
        assert_eq!(saved.bytes, 19);
        assert_eq!(
            authorizations(&t.home),
            [Some("Bearer home-token".to_owned())]
        );
        assert!(t.relay.requests().is_empty(), "{order:?}");
        assert_eq!(t.fetcher.used_bytes("home"), Some(19), "{order:?}");
        assert_eq!(t.fetcher.used_bytes("relay"), Some(0), "{order:?}");
        t.scratch.assert_holds(&[&format!("{}.wav", t.id)]);
    }
}

#[test]
fn the_dialed_servers_eager_limit_applies_not_the_first_deliverers() {
    let limit = |eager_max_bytes| FetchOptions::default().with_eager_max_bytes(eager_max_bytes);
    for order in [["relay", "home"], ["home", "relay"]] {
        // The relay would allow 19 bytes eagerly, the server on the origin would not.
        let t = two_servers(order, limit(1024), limit(10));
        assert!(
            !t.fetcher.is_eager_eligible(&t.registry, &t.id),
            "{order:?}"
        );
        // And the other way round.
        let mut t = two_servers(order, limit(10), limit(1024));
        assert!(t.fetcher.is_eager_eligible(&t.registry, &t.id), "{order:?}");
        let outcomes = t
            .fetcher
            .eager(&mut t.registry, std::slice::from_ref(&t.id));
        assert!(outcomes[0].1.is_ok(), "{outcomes:?}");
        assert_eq!(t.home.requests().len(), 1);
        assert!(t.relay.requests().is_empty());
        assert_eq!(t.fetcher.used_bytes("home"), Some(19));
    }
}

#[test]
fn a_relays_earlier_push_does_not_block_the_origin_servers_fetch() {
    let scratch = Scratch::new();
    let (relay, home) = (serving("audio/wav", WAV), serving("audio/wav", WAV));
    let mut fetcher = scratch.fetcher();
    fetcher.add_server("relay", &dialed(&relay, "relay-token"));
    fetcher.add_server("home", &dialed(&home, "home-token"));
    let uri = format!("{}/payload", home.origin());
    let mut lanes = lanes();
    lanes
        .answer(
            "relay",
            "push/event",
            &json!({"eventId": "r1", "payload": {"content": [wav(&uri)]}}),
        )
        .unwrap();
    stored(&mut lanes, "home", json!([wav(&uri)]));
    let record = lanes.session.registry().find_uri(&uri).unwrap();
    assert_eq!(
        record.servers,
        [ServerName::new("relay"), ServerName::new("home")]
    );
    let id = record.id.clone();
    fetcher
        .fetch(
            lanes.session.registry_mut(),
            id.as_str(),
            None,
            &mut NoResources,
        )
        .unwrap();
    assert_eq!(
        authorizations(&home),
        [Some("Bearer home-token".to_owned())]
    );
    assert!(relay.requests().is_empty());
}

#[test]
fn of_two_servers_on_the_origin_the_first_to_deliver_is_dialed_with_its_token() {
    for order in [["first", "second"], ["second", "first"]] {
        let scratch = Scratch::new();
        let origin = serving("audio/wav", WAV);
        let mut fetcher = scratch.fetcher();
        fetcher.add_server("first", &dialed(&origin, "first-token"));
        fetcher.add_server("second", &dialed(&origin, "second-token"));
        let mut registry = Registry::new();
        let block = wav(&format!("{}/payload", origin.origin()));
        let id = register(&mut registry, &block, order[0]);
        register(&mut registry, &block, order[1]);
        fetcher
            .fetch(&mut registry, id.as_str(), None, &mut NoResources)
            .unwrap();
        assert_eq!(
            authorizations(&origin),
            [Some(format!("Bearer {}-token", order[0]))]
        );
        assert_eq!(fetcher.used_bytes(order[0]), Some(19));
        assert_eq!(fetcher.used_bytes(order[1]), Some(0));
    }
}

#[test]
fn unknown_and_off_origin_servers_are_refused_in_order_with_nothing_dialed() {
    let scratch = Scratch::new();
    let (origin, elsewhere) = (serving("audio/wav", WAV), serving("audio/wav", WAV));
    let mut fetcher = scratch.fetcher();
    fetcher.add_server("off", &dialed(&elsewhere, "off-token"));
    let block = wav(&format!("{}/payload", origin.origin()));
    let third_party = format!(
        "third-party origin ({} != dialed {}); not fetched by this host",
        origin.origin(),
        elsewhere.origin()
    );
    for (order, refusal) in [
        (["ghost", "off"], "unknown server: ghost".to_owned()),
        (["off", "ghost"], third_party),
    ] {
        let mut registry = Registry::new();
        let id = register(&mut registry, &block, order[0]);
        register(&mut registry, &block, order[1]);
        // Small enough for any eager limit, yet not eager-eligible: no server may fetch it.
        assert!(!fetcher.is_eager_eligible(&registry, &id));
        assert!(
            fetcher
                .eager(&mut registry, std::slice::from_ref(&id))
                .is_empty()
        );
        let refused = fetcher
            .fetch(&mut registry, id.as_str(), None, &mut NoResources)
            .unwrap_err();
        assert_eq!(refused.to_string(), refusal, "{order:?}");
        assert!(registry.lookup(id.as_str()).unwrap().fetched.is_none());
    }
    assert!(origin.requests().is_empty());
    assert!(elsewhere.requests().is_empty());
    scratch.assert_holds(&[]);
}

#[test]
fn a_server_with_no_address_is_the_refusal_only_while_it_is_alone() {
    let scratch = Scratch::new();
    let origin = serving("audio/wav", WAV);
    let mut fetcher = scratch.fetcher();
    fetcher.add_server("stdio", &FetchOptions::default());
    fetcher.add_server("home", &dialed(&origin, "home-token"));
    let mut registry = Registry::new();
    let block = wav(&format!("{}/payload", origin.origin()));
    let id = register(&mut registry, &block, "stdio");
    let refused = fetcher
        .fetch(&mut registry, id.as_str(), None, &mut NoResources)
        .unwrap_err();
    assert_eq!(refused, Refusal::UnknownServer("stdio".to_owned()));
    assert!(origin.requests().is_empty());
    register(&mut registry, &block, "home");
    fetcher
        .fetch(&mut registry, id.as_str(), None, &mut NoResources)
        .unwrap();
    assert_eq!(
        authorizations(&origin),
        [Some("Bearer home-token".to_owned())]
    );
}

#[test]
fn a_fetch_is_charged_to_the_dialed_servers_budget_which_never_renews() {
    let scratch = Scratch::new();
    let (relay, home) = (serving("audio/wav", WAV), serving("audio/wav", WAV));
    let mut fetcher = scratch.fetcher();
    fetcher.add_server("relay", &dialed(&relay, "relay-token"));
    fetcher.add_server("home", &dialed(&home, "home-token").with_budget_bytes(30));
    let mut registry = Registry::new();
    let first = wav(&format!("{}/one", home.origin()));
    let id = register(&mut registry, &first, "relay");
    register(&mut registry, &first, "home");
    fetcher
        .fetch(&mut registry, id.as_str(), None, &mut NoResources)
        .unwrap();
    assert_eq!(fetcher.used_bytes("home"), Some(19));
    assert_eq!(fetcher.used_bytes("relay"), Some(0));

    // The server's next reference has 11 bytes of budget left for its 19.
    let second = register(
        &mut registry,
        &wav(&format!("{}/two", home.origin())),
        "home",
    );
    let refused = fetcher
        .fetch(&mut registry, second.as_str(), None, &mut NoResources)
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "aborted: actual bytes exceeded per-server budget at 19"
    );
    assert_eq!(
        fetcher.used_bytes("home"),
        Some(19),
        "a cut fetch costs nothing"
    );
    scratch.assert_holds(&[&format!("{id}.wav")]);

    // Replacing a server's options keeps what it spent: budgets never renew.
    fetcher.add_server("home", &dialed(&home, "home-token").with_budget_bytes(19));
    let refused = fetcher
        .fetch(&mut registry, second.as_str(), None, &mut NoResources)
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "per-server fetch budget exhausted (19/19 bytes)"
    );
    assert_eq!(
        home.requests().len(),
        2,
        "an exhausted budget dials nothing"
    );
}

#[test]
fn a_fetched_reference_answers_its_saved_outcome_again_without_dialing() {
    let scratch = Scratch::new();
    let origin = serving("audio/wav", WAV);
    let mut fetcher = scratch.fetcher();
    fetcher.add_server("home", &dialed(&origin, "t"));
    let mut registry = Registry::new();
    let digest = "sha256:uM7OLD5sO8G3SeWw3LirIreZM71523d9_qXxkn8ewpM";
    let block = resource(
        &format!("{}/payload", origin.origin()),
        json!({"digest": digest}),
    );
    let id = register(&mut registry, &block, "home");
    let first = fetcher
        .fetch(&mut registry, id.as_str(), None, &mut NoResources)
        .unwrap();
    assert_eq!(first.digest_verified, DigestCheck::Verified);
    let again = fetcher
        .fetch(&mut registry, id.as_str(), Some(1), &mut NoResources)
        .unwrap();
    assert_eq!(again, first);
    assert_eq!(origin.requests().len(), 1);
    assert_eq!(
        serde_json::to_value(&again).unwrap(),
        json!({"path": first.path, "bytes": 19, "mime_type": "audio/wav", "digest_verified": true})
    );
}

#[test]
fn an_unknown_or_evicted_id_is_a_defined_miss() {
    let scratch = Scratch::new();
    let mut fetcher = scratch.fetcher();
    let refused = fetcher
        .fetch(&mut Registry::new(), "ref_9_zzzz", None, &mut NoResources)
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "unknown reference: ref_9_zzzz — it may have been evicted; ids are never reused"
    );
}
