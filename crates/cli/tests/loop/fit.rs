//! What the loop sends fits, by the loop's own count and by what it sends: images scaled for
//! the request are priced as sent, server messages' images are scaled as results' are, a
//! budget holds by the provider's count, and no body passes Anthropic's 32 MB.

use std::io::Cursor;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use mcpl_budget::{Bound, PricedRoute, Pricer};
use mcpl_classify::{Dimensions, Media, Sniffed};
use mcpl_client::{Dial, Launch, Transport};
use mcpl_encode::conversation::Content;
use mcpl_host::config::{Config, ServerConfig, ServerOptions};
use mcpl_host::host_loop::{Host, HostOptions};
use mcpl_host::mcpl::{Origin, Queued};
use mcpl_host::model::Scripted;
use mcpl_loopback::{Answer, Body, Loopback};
use serde_json::{Value, json};

use super::{config, demo_server, play_calls, tempdir};

/// A real PNG of `width`×`height` black pixels, as base64.
fn black_png(width: u32, height: u32) -> String {
    let mut out = Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(image::RgbImage::new(width, height))
        .write_to(&mut out, image::ImageFormat::Png)
        .unwrap();
    base64::engine::general_purpose::STANDARD.encode(out.into_inner())
}

fn empty(status: u16) -> Answer {
    Answer {
        status,
        headers: Vec::new(),
        body: Body::Bytes(Arc::from(&b""[..])),
    }
}

/// A Streamable HTTP MCP server on loopback offering one tool, `shots`, that answers every call
/// with `result`: just enough of MCP for the loop to start it, list and call it.
fn canned_server(result: Value) -> Loopback {
    Loopback::start(move |request| {
        if request.method != "POST" {
            return empty(if request.method == "GET" { 405 } else { 200 });
        }
        let message: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let answer = |value: Value| {
            let body = json!({"jsonrpc": "2.0", "id": message["id"], "result": value});
            Answer::bytes("application/json", body.to_string().into_bytes())
        };
        match message["method"].as_str() {
            _ if message.get("id").is_none() => empty(202),
            Some("initialize") => answer(json!({
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "shots", "version": "1"},
            })),
            Some("tools/list") => answer(json!({"tools": [
                {"name": "shots", "description": "Screenshots.", "inputSchema": {"type": "object"}},
            ]})),
            Some("tools/call") => answer(result.clone()),
            _ => {
                let body = json!({"jsonrpc": "2.0", "id": message["id"],
                    "error": {"code": -32601, "message": "Method not found"}});
                Answer::bytes("application/json", body.to_string().into_bytes())
            }
        }
    })
    .unwrap()
}

fn dialed(name: &str, server: &Loopback) -> ServerConfig {
    let url = url::Url::parse(&format!("{}/mcp", server.origin())).unwrap();
    let launch = Launch::new(name, Transport::Http(Dial::new(url)));
    ServerConfig::new(launch, ServerOptions::default())
}

/// Every native image's base64 in an Anthropic body, in order.
fn native_images(body: &Value) -> Vec<String> {
    fn walk(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) if map.get("type").and_then(Value::as_str) == Some("image") => {
                out.extend(map["source"]["data"].as_str().map(str::to_owned));
            }
            Value::Object(map) => map.values().for_each(|v| walk(v, out)),
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(body, &mut out);
    out
}

fn pricer() -> Pricer<'static> {
    Pricer::new(&Bound, &PricedRoute::ANTHROPIC)
}

#[test]
fn images_scaled_for_the_request_are_priced_as_sent() {
    // 21 images of 2100×100 px: over 20 images, Anthropic takes at most 2000 px a side, so the
    // request scales each to 2000×95.
    let wide = black_png(2100, 100);
    let blocks: Vec<Value> = (0..21)
        .map(|_| json!({"type": "image", "data": wide, "mimeType": "image/png"}))
        .collect();
    let server = canned_server(json!({"content": blocks}));
    let spill = tempdir::Dir::new("priced-as-sent");
    let config = config(vec![dialed("shots", &server)], &spill);
    let (host, bodies) = play_calls(
        &config,
        json!([{"tool_calls": [{"server": "shots", "name": "shots"}]}]),
    );
    let sent = native_images(&bodies[1]);
    assert_eq!(sent.len(), 21);
    let scaled = Dimensions {
        width: 2000,
        height: 95,
    };
    for data in &sent {
        assert_eq!(Media::inspect(data, None).dimensions, Some(scaled));
    }
    // The call's report holds what was sent, and its price is that of what was sent.
    let call = &host.calls[0];
    let live = call.output.live.as_ref().unwrap();
    let images: Vec<Dimensions> = live
        .iter()
        .filter_map(|part| match part {
            Content::Image { dimensions, .. } => Some(*dimensions),
            _ => None,
        })
        .collect();
    assert_eq!(images, vec![scaled; 21]);
    let parts: Vec<_> = live.iter().map(Content::as_part).collect();
    let as_sent = pricer().parts(&parts).unwrap();
    assert_eq!(call.estimated_tokens, as_sent);
    let original = 21
        * pricer()
            .image(Dimensions {
                width: 2100,
                height: 100,
            })
            .unwrap();
    assert_ne!(as_sent, original);
    assert!(
        call.diagnostics
            .iter()
            .any(|d| d.starts_with(&format!("priced as sent: {as_sent} estimated tokens (was "))),
        "{:?}",
        call.diagnostics
    );
    // The window projection of the round that sent them, and so the estimate reported usage is
    // compared with, price the same.
    assert_eq!(host.rounds[1].appended_tokens, as_sent);
}

#[test]
fn push_and_channel_images_over_a_limit_are_scaled_in_both_copies_unless_off() {
    // The demo's push event and channel message carry a 16×12 PNG of 224 base64 characters;
    // a route setting of 200 puts it over the per-image limit.
    for scale in [true, false] {
        let spill = tempdir::Dir::new(&format!("push-scaled-{scale}"));
        let mut config = config(vec![demo_server("demo", ServerOptions::default())], &spill);
        config.route.image_base64 = Some(200);
        config.route.scale_images = scale;
        let (host, bodies) = play_calls(
            &config,
            json!([{"tool_calls": [{"server": "demo", "name": "push-events"}]}]),
        );
        let messages = &host.rounds[1].messages;
        let origins: Vec<Origin> = messages.iter().map(|m| m.origin).collect();
        assert_eq!(
            origins,
            [
                Origin::PushEvent,
                Origin::ChannelMessage,
                Origin::ChannelMessage
            ]
        );
        // The event and the third message carry the image; the first message is text.
        for message in [&messages[0], &messages[2]] {
            let notice = "[image above scaled from 16×12 px, 167B to ";
            if scale {
                // What history keeps says it was scaled, and the image sent fits.
                assert!(message.stored.contains(notice), "{}", message.stored);
                assert!(
                    message
                        .stored
                        .contains("its base64 was over 200 characters]")
                );
                let image = message.parts.iter().find_map(|part| match part {
                    Content::Image { data, .. } => Some(data),
                    _ => None,
                });
                assert!(image.is_some_and(|data| data.len() <= 200));
            } else {
                // Off, the image is left out of the request with the limit's notice.
                assert!(!message.stored.contains(notice), "{}", message.stored);
                assert!(bodies[1].to_string().contains(
                    "[image not sent in this request: its base64 is over 200 characters per image]"
                ));
            }
        }
        // The request carries no image over the setting.
        assert!(
            native_images(&bodies[1])
                .iter()
                .all(|data| data.len() <= 200)
        );
    }
}

/// A tool result fitted in a session against a loopback Anthropic that reports `reported`
/// input tokens for each request: the first answer calls the demo's `over-budget` tool, whose
/// result is fitted to a budget of 2,000.
fn fitted_with_usage(reported: u64) -> mcpl_host::host_loop::CallReport {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    let provider = Loopback::start(move |_request| {
        let n = seen.fetch_add(1, Ordering::SeqCst);
        let (stop, content) = if n == 0 {
            let call = json!({"type": "tool_use", "id": "toolu_1", "name": "demo__over-budget",
                "input": {}});
            ("tool_use", json!([call]))
        } else {
            ("end_turn", json!([{"type": "text", "text": "done"}]))
        };
        let body = json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
            "stop_reason": stop, "content": content,
            "usage": {"input_tokens": reported, "output_tokens": 5}});
        Answer::bytes("application/json", body.to_string().into_bytes())
    })
    .unwrap();
    let spill = tempdir::Dir::new(&format!("correction-{reported}"));
    let mut options = ServerOptions::default();
    options.budget = 2_000;
    let config = config(vec![demo_server("demo", options)], &spill);
    let mut host = Host::start(&config, HostOptions::new(&PricedRoute::ANTHROPIC, &config));
    let mut model =
        mcpl_host::http::AnthropicHttp::new(provider.origin(), "sk-test", "claude-test");
    let outcome = host.run(&mut model, "Read the log.", None).unwrap();
    assert_eq!(outcome.answer, "done");
    host.calls.remove(0)
}

#[test]
fn a_result_is_fitted_so_its_budget_holds_by_the_providers_count() {
    // A provider that counts far more than the estimate: the factor stops at 2.0, and the
    // result is fitted so that twice its estimate is within the budget.
    let corrected = fitted_with_usage(10_000_000);
    assert!(corrected.spill.is_some(), "the result was cut");
    assert!(
        corrected.estimated_tokens * 2 <= 2_000,
        "{}",
        corrected.estimated_tokens
    );
    assert!(corrected.diagnostics.iter().any(|d| d
        == "fitted to 1000 estimated tokens: the provider counts 2.000 times the estimate, so the budget of 2000 holds by its count"),
        "{:?}", corrected.diagnostics);
    // One that counts fewer leaves the budget as it is: the result uses more of it.
    let plain = fitted_with_usage(1);
    assert!(
        plain.estimated_tokens > 1_000 && plain.estimated_tokens <= 2_000,
        "{}",
        plain.estimated_tokens
    );
    assert!(
        !plain
            .diagnostics
            .iter()
            .any(|d| d.starts_with("fitted to "))
    );
}

/// The one request of a conversation with no servers whose first round carries a server message
/// of seven images: six of `each` base64 characters and one of `last`, a PNG's first 24 bytes
/// (its signature and header, so the request's check reads its sides) and zeros, never decoded
/// further. Returns the body as sent, its length, and the host.
/// The base64 of a 16 x 12 PNG's signature and header chunk start: 24 bytes, 32 characters.
const PNG_HEAD: &str = "iVBORw0KGgoAAAANSUhEUgAAABAAAAAM";

fn one_request(each: usize, last: usize) -> (Value, usize, Host) {
    // Base64 comes in fours: what `last` has over a multiple of four goes in the prompt.
    let (last, pad) = (last - last % 4, last % 4);
    let spill = tempdir::Dir::new(&format!("body-{last}"));
    let mut config: Config = config(Vec::new(), &spill);
    config.context_window = 100_000_000;
    let mut host = Host::start(&config, HostOptions::new(&PricedRoute::ANTHROPIC, &config));
    let image = |chars: usize| Content::Image {
        sniffed: Sniffed::Png,
        dimensions: Dimensions {
            width: 100,
            height: 100,
        },
        data: format!("{PNG_HEAD}{}", "A".repeat(chars - PNG_HEAD.len())),
    };
    let mut parts: Vec<Content> = (0..6).map(|_| image(each)).collect();
    parts.push(image(last));
    host.lanes.queued.push(Queued {
        server: "s".to_owned(),
        origin: Origin::PushEvent,
        id: None,
        parts,
        stored: "[seven images]".to_owned(),
        diagnostics: Vec::new(),
    });
    let mut model = Scripted::from_slice(br#"{"steps": [], "final": "done"}"#).unwrap();
    let mut transcript = Vec::new();
    host.run(
        &mut model,
        &format!("Look.{}", " ".repeat(pad)),
        Some(&mut transcript),
    )
    .unwrap();
    assert_eq!(transcript.pop(), Some(b'\n'));
    assert!(!transcript.contains(&b'\n'), "one request");
    let len = transcript.len();
    let body = serde_json::from_slice(&transcript).unwrap();
    (body, len, host)
}

#[test]
fn with_default_settings_no_anthropic_body_leaves_over_32_mb() {
    // A small request tells how many bytes besides the images' a body takes: each image's
    // base64 goes once, as it is.
    let (_, probe, _) = one_request(PNG_HEAD.len(), PNG_HEAD.len());
    let each = 5_000_000;
    let at_limit = 32_000_000 - (probe - 7 * PNG_HEAD.len()) - 6 * each;
    // A body of exactly 32,000,000 bytes goes as it is: every image natively.
    let (body, len, host) = one_request(each, at_limit);
    assert_eq!(len, 32_000_000);
    assert_eq!(native_images(&body).len(), 7);
    assert!(!body.to_string().contains("not sent in this request"));
    assert!(host.rounds[0].diagnostics.is_empty());
    drop((body, host));
    // One byte more: the lowest-priority image (the last in call order) is left out, with the
    // limit's notice, and the body that leaves is within the limit.
    let (body, len, _) = one_request(each, at_limit + 1);
    assert!(len <= 32_000_000, "{len}");
    assert_eq!(native_images(&body).len(), 6);
    let notice = "[image not sent in this request: the request body would pass 32000000 bytes]";
    let text = body.to_string();
    assert_eq!(text.matches(notice).count(), 1);
    // It stands where the last image stood, after the six that went.
    let sent = native_images(&body);
    let last_sent = text.rfind(&sent[5]).unwrap();
    assert!(text.rfind(notice).unwrap() > last_sent);
}
