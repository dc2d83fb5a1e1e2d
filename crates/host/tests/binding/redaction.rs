//! Issue 13 through the host's lanes: a uri one server's result hid stays hidden in every later
//! lane of every server, and the credential scan is each server's to turn off.

use mcpl_client::ServerRequests;
use mcpl_host::mcpl::{Injections, Lanes};
use mcpl_lanes::{ImageLedger, Registry, ServerName, ToolResult};
use mcpl_session::{RouteId, Session};
use serde_json::json;

fn stored(lanes: &mut Lanes, server: &str, text: &str) -> String {
    let result = json!({"content": [{"type": "text", "text": text}]});
    let read = mcpl_lanes::ResultView::of_value(&result);
    lanes
        .projector(&ServerName::new(server))
        .tool_result(&ToolResult::from_view(&read))
        .stored
        .into_owned()
}

#[test]
fn a_hidden_uri_stays_hidden_in_every_later_lane_of_every_server() {
    let mut lanes = Lanes::new(
        Session::new(RouteId::Anthropic)
            .with_state(Registry::with_seed(1), ImageLedger::with_seed(2)),
    );
    // Not credential-shaped: only the session's memory hides it from the other servers.
    let uri = "demo://private/report-7";
    let result = json!({"content": [{"type": "resource_link", "uri": uri, "name": "r"}]});
    let read = mcpl_lanes::ResultView::of_value(&result);
    lanes
        .projector(&ServerName::new("files"))
        .tool_result(&ToolResult::from_view(&read));
    let text = json!([{"type": "text", "text": format!("see {}", uri.to_uppercase())}]);
    lanes
        .answer(
            "chat",
            "push/event",
            &json!({"eventId": "e1", "payload": {"content": text}}),
        )
        .unwrap();
    lanes
        .answer(
            "chat",
            "channels/incoming",
            &json!({"messages": [{"messageId": "m1", "content": text}]}),
        )
        .unwrap();
    let mut injections = Injections::default();
    lanes.injections(
        "injector",
        &json!({"contextInjections": [
            {"position": "system", "content": format!("about {uri}")},
            {"position": "afterUser", "content": text},
        ]}),
        &mut injections,
    );
    let mut shown: Vec<String> = lanes.queued.iter().map(|q| q.stored.clone()).collect();
    shown.extend(injections.system.iter().cloned());
    shown.push(format!("{:?}", injections.after_user));
    shown.push(stored(&mut lanes, "other", &format!("and {uri}")));
    assert_eq!(lanes.queued.len(), 2);
    for text in &shown {
        assert!(!text.to_lowercase().contains("report-7"), "{text}");
        assert!(text.contains("[withheld link]"), "{text}");
    }
}

#[test]
fn a_server_may_turn_off_withholding_unclaimed_credential_urls() {
    let mut lanes = Lanes::new(
        Session::new(RouteId::Anthropic)
            .with_state(Registry::with_seed(1), ImageLedger::with_seed(2)),
    );
    lanes
        .session
        .registry_mut()
        .hidden_mut()
        .set_scan(&ServerName::new("trusted"), false);
    let text = "get https://x.example/o?token=abc123 now";
    assert_eq!(stored(&mut lanes, "trusted", text), text);
    assert_eq!(stored(&mut lanes, "other", text), "get [withheld link] now");
    // Once hidden, it is hidden for the trusted server too.
    assert_eq!(
        stored(&mut lanes, "trusted", text),
        "get [withheld link] now"
    );
}
