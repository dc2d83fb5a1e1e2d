//! Whole requests held to their route's request limits: each limit in the table as a request
//! that would break it, and what the encoder sends instead.

use base64::Engine as _;
use mcpl_budget::{Bound, Pricer, fit_tool_result};
use mcpl_classify::{Dimensions, Media};
use mcpl_encode::conversation::{Content, Message, ModelRequest, ToolOutput};
use mcpl_encode::{Encoder, LimitHit, request_limit_notice};
use mcpl_lanes::{ImageLedger, Projector, Registry, RouteId, ServerName, ToolResult, UriPolicy};
use serde_json::{Value, json};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The fixture PNG with its IHDR saying `width`×`height`.
fn png_sized(width: u32, height: u32) -> String {
    let mut bytes = mcpl_testkit::fixture("image.png");
    bytes[16..20].copy_from_slice(&width.to_be_bytes());
    bytes[20..24].copy_from_slice(&height.to_be_bytes());
    b64(&bytes)
}

/// A PNG of `bytes` decoded bytes.
fn png_of(bytes: usize) -> String {
    b64(&mcpl_testkit::grown_png("image.png", bytes))
}

/// An image as the lanes carry it: its type and dimensions as classification reads them.
fn image(data: &str) -> Content {
    let media = Media::inspect(data, None);
    Content::Image {
        sniffed: media.sniffed.expect("an image fixture"),
        dimensions: media.dimensions.unwrap_or(Dimensions {
            width: 0,
            height: 0,
        }),
        data: data.to_owned(),
    }
}

fn output(n: usize, live: Vec<Content>) -> ToolOutput {
    ToolOutput::new(
        format!("call_{n}"),
        "shot",
        format!("[image: image/png, 1 KB, ref img_test_{n}]"),
    )
    .with_live(live)
}

fn request(encoder: Encoder, messages: &[Message]) -> Value {
    encoder.request(&ModelRequest::new("a-model", "", messages, &[], 64))
}

/// Every native image's base64 in a body, in document order, whatever the route's shape.
fn native(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(body, &mut out);
    out
}

fn walk(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let data_url = |v: &Value| {
                v.as_str()
                    .and_then(|url| url.split_once(";base64,"))
                    .map(|(_, data)| data.to_owned())
            };
            match map.get("type").and_then(Value::as_str) {
                Some("image") => {
                    out.extend(map["source"]["data"].as_str().map(str::to_owned));
                    return;
                }
                Some("image_url") => {
                    out.extend(data_url(&map["image_url"]["url"]));
                    return;
                }
                Some("input_image") => {
                    out.extend(data_url(&map["image_url"]));
                    return;
                }
                _ => {}
            }
            if let Some(inline) = map.get("inline_data") {
                out.extend(inline["data"].as_str().map(str::to_owned));
                return;
            }
            map.values().for_each(|v| walk(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
        _ => {}
    }
}

/// How many times a body's text says `needle`.
fn mentions(body: &Value, needle: &str) -> usize {
    body.to_string().matches(needle).count()
}

const IMAGE_ROUTES: [RouteId; 4] = [
    RouteId::Anthropic,
    RouteId::OpenAiChat,
    RouteId::OpenAiResponses,
    RouteId::Gemini,
];

#[test]
fn over_twenty_images_each_side_is_at_most_2000_px_on_anthropic() {
    let big = png_sized(2100, 100);
    let notice = request_limit_notice(LimitHit::ManyImagesSide(20, 2000));
    assert_eq!(
        notice,
        "[image not sent in this request: a side is over 2000 px in a request of more than 20 images]"
    );
    // With scaling off (the scaling module tests it on).
    let outputs: Vec<ToolOutput> = (1..=21).map(|n| output(n, vec![image(&big)])).collect();
    let body = request(
        Encoder::new(RouteId::Anthropic).with_scaling(false),
        &[Message::ToolResults(outputs)],
    );
    assert_eq!(native(&body).len(), 20);
    // The last call's image is the one left out, as its stored placeholder with the notice.
    assert_eq!(
        body["messages"][0]["content"][20]["content"],
        json!([{"type": "text", "text": format!("[image: image/png, 1 KB, ref img_test_21] {notice}")}])
    );

    // Small images always fit; large ones fill what is left of the 20, latest round first.
    let small = png_sized(2000, 2000);
    let earlier: Vec<Content> = (0..10).map(|_| image(&big)).collect();
    let later: Vec<Content> = (0..15).map(|_| image(&small)).collect();
    let body = request(
        Encoder::new(RouteId::Anthropic).with_scaling(false),
        &[Message::User(earlier), Message::User(later)],
    );
    let sent = native(&body);
    assert_eq!(sent.iter().filter(|d| **d == small).count(), 15);
    assert_eq!(sent.iter().filter(|d| **d == big).count(), 5);
    assert_eq!(mentions(&body, &notice), 5);
    assert!(body["messages"][0]["content"][4]["source"].is_object());
    assert!(body["messages"][0]["content"][5]["text"].is_string());

    // Twenty large images, or 21 on a route without the rule, all go.
    let twenty: Vec<Content> = (0..20).map(|_| image(&big)).collect();
    assert_eq!(
        native(&request(
            Encoder::new(RouteId::Anthropic).with_scaling(false),
            &[Message::User(twenty)]
        ))
        .len(),
        20
    );
    let many: Vec<Content> = (0..21).map(|_| image(&big)).collect();
    assert_eq!(
        native(&request(
            Encoder::new(RouteId::OpenAiChat),
            &[Message::User(many)]
        ))
        .len(),
        21
    );
}

#[test]
fn the_image_count_per_request_keeps_the_latest_round_first() {
    let small = png_sized(16, 12);
    for (route, max) in [
        (RouteId::Anthropic, 100),
        (RouteId::OpenAiChat, 500),
        (RouteId::OpenAiResponses, 500),
    ] {
        let earlier: Vec<Content> = (0..300).map(|_| image(&small)).collect();
        let later: Vec<Content> = (0..301).map(|_| image(&small)).collect();
        let messages = [Message::User(earlier), Message::User(later)];
        let body = request(Encoder::new(route), &messages);
        assert_eq!(native(&body).len(), max, "{route}");
        let notice = request_limit_notice(LimitHit::Images(max));
        assert_eq!(mentions(&body, &notice), 601 - max, "{route}");
        let texts = |message: &Value| -> usize {
            message["content"].as_array().map_or(0, |parts| {
                parts.iter().filter(|p| p["text"].is_string()).count()
            })
        };
        let (first, second) = match route {
            RouteId::OpenAiChat => (&body["messages"][0], &body["messages"][1]),
            RouteId::OpenAiResponses => (&body["input"][0], &body["input"][1]),
            _ => (&body["messages"][0], &body["messages"][1]),
        };
        // The later message keeps all its images before the earlier one keeps any.
        assert_eq!(texts(second), 301 - max.min(301), "{route}");
        assert_eq!(texts(first), 601 - max - (301 - max.min(301)), "{route}");
    }
    // A route setting raises Anthropic's count.
    let images: Vec<Content> = (0..150).map(|_| image(&small)).collect();
    let encoder = Encoder::new(RouteId::Anthropic)
        .with_limits(RouteId::Anthropic.request_limits().with_max_images(600));
    assert_eq!(
        native(&request(encoder, &[Message::User(images)])).len(),
        150
    );
}

#[test]
fn openai_takes_at_most_50_mb_of_images_per_request() {
    let big = png_of(6 * 1024 * 1024);
    let notice = request_limit_notice(LimitHit::ImageBytes(50_000_000));
    assert_eq!(
        notice,
        "[image not sent in this request: the request's images would pass 50000000 bytes]"
    );
    for route in [RouteId::OpenAiChat, RouteId::OpenAiResponses] {
        let outputs: Vec<ToolOutput> = (1..=9).map(|n| output(n, vec![image(&big)])).collect();
        let body = request(Encoder::new(route), &[Message::ToolResults(outputs)]);
        assert_eq!(native(&body).len(), 7, "{route}");
        assert_eq!(mentions(&body, &notice), 2, "{route}");
    }
    // A smaller image after the one that would pass still fits.
    let small = png_of(1_000_000);
    let mut content: Vec<Content> = (0..8).map(|_| image(&big)).collect();
    content.push(image(&small));
    let body = request(Encoder::new(RouteId::OpenAiChat), &[Message::User(content)]);
    let sent = native(&body);
    assert_eq!(sent.len(), 8);
    assert_eq!(sent.last(), Some(&small));
    // Anthropic has no such total, but with scaling off its per-image base64 cap turns each
    // away.
    let body = request(
        Encoder::new(RouteId::Anthropic).with_scaling(false),
        &[Message::User(vec![image(&big)])],
    );
    assert!(native(&body).is_empty());
    assert_eq!(
        mentions(
            &body,
            &request_limit_notice(LimitHit::ImageBase64(5_242_880))
        ),
        1
    );
}

#[test]
fn anthropic_takes_5_242_880_base64_characters_per_image_unless_raised() {
    // 3,932,160 decoded bytes are exactly 5,242,880 characters of base64.
    let at = png_of(3_932_160);
    let over = png_of(3_932_161);
    assert_eq!(at.len(), 5_242_880);
    let body = request(
        Encoder::new(RouteId::Anthropic).with_scaling(false),
        &[Message::User(vec![image(&at), image(&over)])],
    );
    assert_eq!(native(&body), vec![at.clone()]);
    let direct = Encoder::new(RouteId::Anthropic)
        .with_scaling(false)
        .with_limits(
            RouteId::Anthropic
                .request_limits()
                .with_image_base64(mcpl_lanes::RequestLimits::ANTHROPIC_DIRECT_IMAGE_BASE64),
        );
    let body = request(direct, &[Message::User(vec![image(&at), image(&over)])]);
    assert_eq!(native(&body).len(), 2);
}

#[test]
fn an_anthropic_body_stays_within_32_mb() {
    // Seven images of just under 5,000,000 base64 characters: a 35 MB body.
    let each = png_of(3_740_000);
    let outputs: Vec<ToolOutput> = (1..=7).map(|n| output(n, vec![image(&each)])).collect();
    let messages = [Message::ToolResults(outputs)];
    let body = request(Encoder::new(RouteId::Anthropic), &messages);
    let len = body.to_string().len();
    assert!(len <= 32_000_000, "{len}");
    assert_eq!(native(&body).len(), 6);
    let notice = request_limit_notice(LimitHit::Body(32_000_000));
    assert_eq!(
        body["messages"][0]["content"][6]["content"][0]["text"],
        format!("[image: image/png, 1 KB, ref img_test_7] {notice}")
    );
    // The same images in two rounds: the earlier round's go first.
    let (first, second): (Vec<_>, Vec<_>) = (1..=7).partition(|n| *n <= 4);
    let messages = [
        Message::User(first.iter().map(|_| image(&each)).collect()),
        Message::User(second.iter().map(|_| image(&each)).collect()),
    ];
    let body = request(Encoder::new(RouteId::Anthropic), &messages);
    assert!(body.to_string().len() <= 32_000_000);
    assert_eq!(mentions(&body["messages"][1], &notice), 0);
    assert_eq!(mentions(&body["messages"][0], &notice), 1);
    assert!(body["messages"][0]["content"][3]["text"].is_string());
}

#[test]
fn gemini_carries_at_most_20_mb_inline() {
    let each = png_of(8_000_000);
    let notice = request_limit_notice(LimitHit::InlineBase64(20_000_000));
    let body = request(
        Encoder::new(RouteId::Gemini),
        &[Message::User((0..3).map(|_| image(&each)).collect())],
    );
    assert_eq!(native(&body).len(), 1);
    assert_eq!(mentions(&body, &notice), 2);
    // Two of 7 MB fit in 18.7 MB of base64; a third does not.
    let each = png_of(7_000_000);
    let body = request(
        Encoder::new(RouteId::Gemini),
        &[Message::User((0..3).map(|_| image(&each)).collect())],
    );
    assert_eq!(native(&body).len(), 2);
}

#[test]
fn gemini_counts_inline_audio_toward_its_20_mb() {
    // A WAV header and 8 MB of base64 after it.
    let wav = format!("UklGRiQAAABXQVZFZm10IBAAAAABAAEA{}", "A".repeat(8_000_000));
    let audio = Content::Audio {
        sniffed: mcpl_classify::Sniffed::Wav,
        data: wav.clone(),
    };
    let picture = png_of(6_000_000);
    // The later message's audio goes first; then the earlier image passes the 20 MB.
    let messages = [
        Message::User(vec![image(&picture)]),
        Message::User(vec![audio.clone(), audio.clone(), image(&png_of(2_000))]),
    ];
    let body = request(Encoder::new(RouteId::Gemini), &messages);
    let inline = native(&body);
    assert_eq!(inline.len(), 3, "two audio and the small image");
    assert!(!inline.contains(&picture));
    assert_eq!(
        mentions(
            &body,
            &request_limit_notice(LimitHit::InlineBase64(20_000_000))
        ),
        1
    );
    // A third audio would pass it too, and says so as audio.
    let body = request(
        Encoder::new(RouteId::Gemini),
        &[Message::User(vec![audio.clone(), audio.clone(), audio])],
    );
    assert_eq!(native(&body).len(), 2);
    assert_eq!(
        body["contents"][0]["parts"][2]["text"],
        format!(
            "[audio: audio/wav, ~5.7MB] {}",
            mcpl_encode::audio_limit_notice(LimitHit::InlineBase64(20_000_000))
        )
    );
}

#[test]
fn openai_takes_no_animated_gif() {
    let animated = b64(&mcpl_testkit::fixture("animated.gif"));
    let still = b64(&mcpl_testkit::fixture("static.gif"));
    assert!(mcpl_encode::is_animated(&animated));
    assert!(!mcpl_encode::is_animated(&still));
    let notice = request_limit_notice(LimitHit::AnimatedGif);
    for route in [RouteId::OpenAiChat, RouteId::OpenAiResponses] {
        let body = request(
            Encoder::new(route).with_scaling(false),
            &[Message::User(vec![image(&animated), image(&still)])],
        );
        assert_eq!(native(&body), vec![still.clone()], "{route}");
        assert_eq!(mentions(&body, &notice), 1, "{route}");
    }
    // Anthropic takes an animation's first frame.
    let body = request(
        Encoder::new(RouteId::Anthropic),
        &[Message::User(vec![image(&animated)])],
    );
    assert_eq!(native(&body).len(), 1);
}

#[test]
fn images_without_pixels_or_over_8000_px_are_never_native() {
    let cases = [
        (png_sized(0, 0), Some(LimitHit::NoPixels)),
        (png_sized(0, 100), Some(LimitHit::NoPixels)),
        (png_sized(100_000, 100_000), Some(LimitHit::Side(8000))),
        (png_sized(8001, 10), Some(LimitHit::Side(8000))),
        (png_sized(8000, 8000), None),
    ];
    for route in IMAGE_ROUTES {
        for (data, hit) in &cases {
            let body = request(Encoder::new(route), &[Message::User(vec![image(data)])]);
            match hit {
                Some(hit) => {
                    assert!(native(&body).is_empty(), "{route}");
                    assert_eq!(mentions(&body, &request_limit_notice(*hit)), 1, "{route}");
                }
                None => assert_eq!(native(&body).len(), 1, "{route}"),
            }
        }
    }
}

#[test]
fn a_lane_made_result_over_a_limit_goes_as_its_stored_placeholder() {
    let huge = png_sized(100_000, 100_000);
    let result = json!({"content": [
        {"type": "text", "text": "one\ntwo"},
        {"type": "image", "data": huge, "mimeType": "image/png"},
        {"type": "text", "text": "three"},
    ]});
    let (mut registry, mut ledger) = (Registry::new(), ImageLedger::new());
    let encoder = Encoder::new(RouteId::Anthropic);
    let server = ServerName::new("shots");
    let mut lanes = Projector::new(
        &mut registry,
        &mut ledger,
        &encoder.route().lanes,
        &server,
        UriPolicy::Hidden,
    );
    let pricer = Pricer::new(&Bound, encoder.route());
    let read = mcpl_lanes::ResultView::of_value(&result);
    let fitted = fit_tool_result(
        &mut lanes,
        &ToolResult::from_view(&read),
        pricer,
        100_000,
        None,
    );
    let placeholder = fitted.copies.stored_parts().nth(1).unwrap().to_owned();
    assert!(
        placeholder.starts_with("[image: image/png, "),
        "{placeholder}"
    );
    let body = request(
        encoder,
        &[Message::ToolResults(vec![
            mcpl_encode::conversation::ToolOutput::from_copies("call_1", "tool", &fitted.copies),
        ])],
    );
    assert_eq!(
        body["messages"][0]["content"][0]["content"],
        json!([
            {"type": "text", "text": "one\ntwo"},
            {"type": "text", "text": format!("{placeholder} {}", request_limit_notice(LimitHit::Side(8000)))},
            {"type": "text", "text": "three"},
        ])
    );
}

/// A small deterministic generator, so a failing case repeats.
struct Xorshift(u64);

impl Xorshift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// What a body holds, checked against every limit of the route's table.
fn assert_within_limits(route: RouteId, body: &Value, case: u64) {
    let limits = route.request_limits();
    let sent = native(body);
    let media: Vec<Media<'_>> = sent.iter().map(|data| Media::inspect(data, None)).collect();
    let side = |m: &Media<'_>| m.dimensions.map_or(0, |d| d.width.max(d.height));
    for m in &media {
        let d = m.dimensions.expect("a sent image has dimensions");
        assert!(d.width > 0 && d.height > 0, "{route} case {case}");
        assert!(side(m) <= limits.max_side, "{route} case {case}");
        if let Some(max) = limits.image_base64 {
            assert!(m.data.len() as u64 <= max, "{route} case {case}");
        }
    }
    if let Some(max) = limits.max_images {
        assert!(sent.len() <= max, "{route} case {case}");
    }
    if let Some(many) = limits.many_images
        && sent.len() > many
    {
        assert!(
            media.iter().all(|m| side(m) <= limits.many_images_side),
            "{route} case {case}"
        );
    }
    if let Some(max) = limits.image_bytes {
        let bytes: u64 = media.iter().filter_map(|m| m.decoded_bytes).sum();
        assert!(bytes <= max, "{route} case {case}: {bytes}");
    }
    if let Some(max) = limits.inline_base64 {
        let chars: u64 = sent.iter().map(|d| d.len() as u64).sum();
        assert!(chars <= max, "{route} case {case}: {chars}");
    }
    if let Some(max) = limits.body_bytes {
        assert!(body.to_string().len() as u64 <= max, "{route} case {case}");
    }
}

#[test]
fn requests_of_other_sizes_and_orders_stay_within_every_limit() {
    let mut rng = Xorshift(0x9E37_79B9_7F4A_7C15);
    // A few payload sizes, shared so the cases stay cheap to build.
    let sizes = [2_000, 900_000, 3_000_000, 4_500_000, 9_000_000];
    let payloads: Vec<Vec<u8>> = sizes
        .iter()
        .map(|&size| mcpl_testkit::grown_png("image.png", size))
        .collect();
    let sides: [u32; 10] = [0, 1, 640, 1999, 2000, 2001, 4000, 8000, 8001, 30_000];
    for case in 0..24 {
        let rounds = 1 + rng.below(4) as usize;
        let mut messages = Vec::new();
        for round in 0..rounds {
            let images = rng.below(if case % 3 == 0 { 160 } else { 12 }) as usize;
            let content: Vec<Content> = (0..images)
                .map(|_| {
                    // Mostly small payloads, so many images stay affordable.
                    let size = if rng.below(6) == 0 {
                        1 + rng.below(sizes.len() as u64 - 1) as usize
                    } else {
                        0
                    };
                    let mut bytes = payloads[size].clone();
                    let (w, h) = (
                        sides[rng.below(sides.len() as u64) as usize],
                        sides[rng.below(sides.len() as u64) as usize],
                    );
                    bytes[16..20].copy_from_slice(&w.to_be_bytes());
                    bytes[20..24].copy_from_slice(&h.to_be_bytes());
                    image(&b64(&bytes))
                })
                .collect();
            if round % 2 == 0 {
                messages.push(Message::User(content));
            } else {
                let outputs = content
                    .into_iter()
                    .enumerate()
                    .map(|(n, c)| output(n, vec![Content::Text("shot".to_owned()), c]))
                    .collect();
                messages.push(Message::ToolResults(outputs));
            }
        }
        for route in IMAGE_ROUTES {
            let body = request(Encoder::new(route), &messages);
            assert_within_limits(route, &body, case);
        }
    }
}
