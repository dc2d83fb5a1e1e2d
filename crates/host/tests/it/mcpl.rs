//! MCPL on a connection: push events, channel messages, server requests during a fetch, caps
//! on what waits, and context injections, through `mcpl_host::mcpl::Lanes`.

use mcpl_session::{RouteId, Session};
use std::collections::BTreeMap;

use mcpl_client::ServerRequests;
use mcpl_encode::conversation::Content;
use mcpl_host::mcpl::*;
use mcpl_lanes::{ImageLedger, Registry, ServerName};
use serde_json::json;

fn lanes() -> Lanes {
    Lanes::new(
        Session::new(RouteId::Anthropic)
            .with_state(Registry::with_seed(1), ImageLedger::with_seed(2)),
    )
}

#[test]
fn an_empty_push_is_refused_without_burning_its_id() {
    let mut lanes = lanes();
    let empty = json!({"eventId": "e1", "payload": {"content": [{"type": "text", "text": "  "}]}});
    let error = lanes.answer("s", "push/event", &empty).unwrap_err();
    assert_eq!(error.code, -32602);
    assert_eq!(error.data, Some(json!({"field": "payload.content"})));
    let full = json!({"eventId": "e1", "payload": {"content": [{"type": "text", "text": "hi"}]}});
    assert_eq!(
        lanes.answer("s", "push/event", &full).unwrap(),
        json!({"accepted": true})
    );
    assert_eq!(
        lanes.answer("s", "push/event", &full).unwrap(),
        json!({"accepted": true, "reason": "duplicate"})
    );
    // The same id from another server is another event.
    assert_eq!(
        lanes.answer("t", "push/event", &full).unwrap(),
        json!({"accepted": true})
    );
    assert_eq!(lanes.queued.len(), 2);
    assert_eq!(lanes.queued[0].parts, [Content::Text("hi".to_owned())]);
    assert_eq!(lanes.answered.len(), 4);
}

#[test]
fn a_push_reference_is_registered_with_its_server() {
    let mut lanes = lanes();
    let event = json!({"eventId": "e", "payload": {"content": [{"type": "resource",
        "uri": "https://f.example/a?token=t", "name": "a.pdf", "disposition": "ref"}]}});
    lanes.answer("files", "push/event", &event).unwrap();
    let record = lanes
        .session
        .registry()
        .find_uri("https://f.example/a?token=t")
        .unwrap();
    assert_eq!(record.servers, [ServerName::new("files")]);
    assert!(lanes.queued[0].stored.contains("attachment on push event"));
    assert!(!lanes.queued[0].stored.contains("token"));
}

#[test]
fn channel_messages_are_answered_one_by_one() {
    let mut lanes = lanes();
    let params = json!({"messages": [
        {"messageId": "m1", "content": [{"type": "text", "text": "hello"}]},
        {"messageId": "m2", "content": [{"type": "text", "text": ""}]},
        {"messageId": "m3", "content": [{"type": "text", "text": "again"}]},
    ]});
    assert_eq!(
        lanes.answer("chat", "channels/incoming", &params).unwrap(),
        json!({"results": [
            {"messageId": "m1", "accepted": true},
            {"messageId": "m2", "accepted": false, "reason": "empty_content"},
            {"messageId": "m3", "accepted": true},
        ]})
    );
    assert_eq!(lanes.queued.len(), 2);
}

#[test]
fn requests_during_a_fetch_get_the_same_answers_and_are_shown_after_it() {
    let mut lanes = lanes();
    let event = json!({"eventId": "e", "payload": {"content": [{"type": "resource",
        "uri": "https://f.example/a", "name": "a.pdf", "disposition": "ref"}]}});
    let empty = json!({"eventId": "e2", "payload": {"content": []}});
    {
        let (session, mut deferring) = lanes.split_for_fetch();
        assert_eq!(session.registry().len(), 0);
        assert_eq!(
            deferring.answer("s", "push/event", &event).unwrap(),
            json!({"accepted": true})
        );
        assert_eq!(
            deferring.answer("s", "push/event", &event).unwrap(),
            json!({"accepted": true, "reason": "duplicate"})
        );
        assert_eq!(
            deferring
                .answer("s", "push/event", &empty)
                .unwrap_err()
                .code,
            -32602
        );
    }
    assert!(
        lanes.queued.is_empty(),
        "not projected while the registry was lent"
    );
    lanes.project_deferred();
    assert_eq!(lanes.queued.len(), 1);
    assert!(
        lanes
            .session
            .registry()
            .find_uri("https://f.example/a")
            .is_some()
    );
    assert_eq!(lanes.answered.len(), 3);
    // The id stays seen after the fetch.
    assert_eq!(
        lanes.answer("s", "push/event", &event).unwrap(),
        json!({"accepted": true, "reason": "duplicate"})
    );
}

#[test]
fn a_server_may_have_only_so_many_messages_waiting() {
    let mut lanes = lanes();
    let event = |n: usize| json!({"eventId": format!("e{n}"), "payload": {"content": [{"type": "text", "text": "hi"}]}});
    for n in 0..MAX_QUEUED_PER_SERVER + 5 {
        lanes.answer("s", "push/event", &event(n)).unwrap();
    }
    lanes.answer("t", "push/event", &event(0)).unwrap();
    assert_eq!(
        lanes.queued.len(),
        MAX_QUEUED_PER_SERVER + 1,
        "t's is not dropped"
    );
    assert_eq!(lanes.take_dropped(), BTreeMap::from([("s".to_owned(), 5)]));
    assert!(lanes.take_dropped().is_empty(), "counted once");
    assert_eq!(
        unseen_events("s", 5),
        "[mcpl: 5 push events and channel messages from server s were not shown: more than 64 were waiting]"
    );
    // While the registry is lent out, the same cap holds.
    lanes.queued.clear();
    {
        let (_, mut deferring) = lanes.split_for_fetch();
        for n in 100..100 + MAX_QUEUED_PER_SERVER + 2 {
            deferring.answer("s", "push/event", &event(n)).unwrap();
        }
    }
    lanes.project_deferred();
    assert_eq!(lanes.queued.len(), MAX_QUEUED_PER_SERVER);
    assert_eq!(lanes.take_dropped(), BTreeMap::from([("s".to_owned(), 2)]));
}

#[test]
fn only_so_many_answers_are_kept_for_the_report() {
    let mut lanes = lanes();
    for _ in 0..MAX_ANSWERED + 3 {
        lanes.answer("s", "ping", &json!({})).unwrap();
    }
    assert_eq!(lanes.answered.len(), MAX_ANSWERED);
}

#[test]
fn other_requests_are_not_found() {
    let error = lanes()
        .answer("s", "sampling/createMessage", &json!({}))
        .unwrap_err();
    assert_eq!(error.code, -32601);
}

#[test]
fn injections_go_to_their_positions() {
    let mut lanes = lanes();
    let mut injections = Injections::default();
    lanes.injections(
        "ctx",
        &json!({"contextInjections": [
            {"position": "system", "content": "Be brief."},
            {"position": "beforeUser", "content": "Earlier: the user asked about Q3."},
            {"position": "afterUser", "content": [{"type": "resource",
                "uri": "https://f.example/brief.pdf?token=x", "name": "brief.pdf",
                "disposition": "ref"}]},
            {"position": "sideways", "content": "?"},
        ]}),
        &mut injections,
    );
    assert_eq!(injections.system, ["Be brief."]);
    assert_eq!(
        injections.before_user,
        [Content::Text(
            "Earlier: the user asked about Q3.".to_owned()
        )]
    );
    let Content::Text(stub) = &injections.after_user[0] else {
        panic!("not a stub")
    };
    assert!(stub.contains("attachment on context injection"), "{stub}");
    assert!(!stub.contains("token"));
    assert_eq!(injections.diagnostics.len(), 1);
    let record = lanes
        .session
        .registry()
        .find_uri("https://f.example/brief.pdf?token=x")
        .unwrap();
    assert_eq!(record.servers, [ServerName::new("ctx")]);
}

/// A push event carrying `data` as a PNG after a line of text.
fn image_event(id: &str, data: &str) -> serde_json::Value {
    json!({"eventId": id, "payload": {"content": [
        {"type": "text", "text": "The dashboard:"},
        {"type": "image", "mimeType": "image/png", "data": data},
    ]}})
}

/// The fixture PNG grown past Anthropic's 5 MiB per image, as base64.
fn over_limit_png(corrupt: bool) -> String {
    use base64::Engine as _;
    let mut bytes = mcpl_testkit::grown_png("image.png", 6 * 1024 * 1024);
    if corrupt {
        // The pixels' compressed stream broken: the header still reads, the pixels do not.
        let at = bytes.windows(4).position(|w| w == b"IDAT").unwrap() + 4;
        bytes[at..at + 8].fill(0xFF);
    }
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn push_and_channel_images_over_the_route_limit_are_scaled_before_the_lane() {
    let png = over_limit_png(false);
    let mut lanes = lanes();
    lanes
        .answer("s", "push/event", &image_event("e1", &png))
        .unwrap();
    let channel = json!({"messages": [{"messageId": "m1", "content": [
        {"type": "image", "mimeType": "image/png", "data": png},
    ]}]});
    lanes.answer("s", "channels/incoming", &channel).unwrap();
    assert_eq!(lanes.queued.len(), 2);
    for queued in &lanes.queued {
        // The image goes natively, small, and both copies say from what it was scaled.
        let image = queued.parts.iter().find_map(|part| match part {
            Content::Image { data, .. } => Some(data),
            _ => None,
        });
        assert!(image.is_some_and(|data| data.len() < 1_000), "{queued:?}");
        let notice = "[image above scaled from 16×12 px, ~6.0MB to 16×12 px, ";
        assert!(queued.stored.contains(notice), "{}", queued.stored);
        assert!(
            queued
                .parts
                .iter()
                .any(|p| matches!(p, Content::Text(t) if t.starts_with(notice))),
            "{queued:?}"
        );
        assert!(queued.diagnostics.is_empty());
    }
}

#[test]
fn user_position_injection_images_over_the_route_limit_are_scaled_before_the_lane() {
    let png = over_limit_png(false);
    let answer = json!({"contextInjections": [
        {"position": "beforeUser", "content": [{"type": "image", "mimeType": "image/png", "data": png}]},
        {"position": "afterUser", "content": [{"type": "image", "mimeType": "image/png", "data": png}]},
    ]});
    let mut injections = Injections::default();
    lanes().injections("s", &answer, &mut injections);
    let notice = "[image above scaled from 16×12 px, ~6.0MB to 16×12 px, ";
    for parts in [&injections.before_user, &injections.after_user] {
        let image = parts.iter().find_map(|part| match part {
            Content::Image { data, .. } => Some(data),
            _ => None,
        });
        assert!(image.is_some_and(|data| data.len() < 1_000), "{parts:?}");
        assert!(
            parts
                .iter()
                .any(|p| matches!(p, Content::Text(t) if t.starts_with(notice))),
            "{parts:?}"
        );
    }
    assert!(injections.diagnostics.is_empty(), "{injections:?}");
    // Off: the lane's marker, as before.
    let mut off = lanes();
    off.session.set_scaling(None);
    let mut injections = Injections::default();
    off.injections("s", &answer, &mut injections);
    assert!(
        injections
            .before_user
            .iter()
            .all(|p| !matches!(p, Content::Image { .. })),
        "{injections:?}"
    );
}

#[test]
fn with_scaling_off_or_an_undecodable_image_a_message_shows_the_marker() {
    let marker = "[Image not shown: ~6.0MB is over the 5.0MB this host sends inline per image.]";
    // Off (`scaleImages: false`): today's marker.
    let mut off = lanes();
    off.session.set_scaling(None);
    off.answer(
        "s",
        "push/event",
        &image_event("e1", &over_limit_png(false)),
    )
    .unwrap();
    assert_eq!(off.queued[0].stored, format!("The dashboard:\n{marker}"));
    assert!(off.queued[0].diagnostics.is_empty());
    // On, but the pixels cannot be decoded: the same marker, and a line saying why.
    let mut on = lanes();
    on.answer("s", "push/event", &image_event("e2", &over_limit_png(true)))
        .unwrap();
    assert_eq!(on.queued[0].stored, format!("The dashboard:\n{marker}"));
    let diagnostics = &on.queued[0].diagnostics;
    assert_eq!(diagnostics.len(), 1);
    assert!(
        diagnostics[0].starts_with("push event from s: image 2 not scaled: "),
        "{diagnostics:?}"
    );
}
