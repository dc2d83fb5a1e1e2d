//! The generative test of the request bodies: random conversations (texts blank and not,
//! images, PDFs and audio of every fixture type, many of them, tool results with native parts,
//! calls with odd arguments) and random tool lists (odd names, schemas of every shape, long
//! descriptions), held to the route's tool rules as the host holds them and encoded for every
//! route: the validator finds nothing to refuse in any body. `MCPL_VALIDATE_CASES` sets the
//! case count (`cargo xtask validate` runs many).

use base64::Engine as _;
use mcpl_classify::{Dimensions, Media};
use mcpl_encode::conversation::{
    Content, Message, ModelRequest, ToolCall, ToolOutput, ToolSpec, model_tool_name,
};
use mcpl_encode::validate::validate;
use mcpl_encode::{Encoder, tools};
use mcpl_lanes::RouteId;
use proptest::prelude::*;
use serde_json::{Value, json};

/// Every fixture a lane may carry natively, as the lanes would type it.
const FIXTURES: &[&str] = &[
    "image.png",
    "baseline.jpg",
    "static.gif",
    "animated.gif",
    "lossy.webp",
    "large-dimensions.png",
    "document.pdf",
    "three-pages.pdf",
    "tone.wav",
    "tone.mp3",
    "tone.ogg",
    "tone.flac",
];

fn media(name: &str) -> Content {
    let data = base64::engine::general_purpose::STANDARD.encode(mcpl_testkit::fixture(name));
    let inspected = Media::inspect(&data, None);
    let sniffed = inspected.sniffed.expect("a typed fixture");
    match sniffed.mime() {
        "application/pdf" => Content::Document {
            pages: mcpl_lanes::pdf_pages(&data).expect("a fixture PDF whose pages count"),
            data,
        },
        mime if mime.starts_with("audio/") => Content::Audio { sniffed, data },
        _ => Content::Image {
            sniffed,
            dimensions: inspected.dimensions.unwrap_or(Dimensions {
                width: 0,
                height: 0,
            }),
            data,
        },
    }
}

fn text() -> impl Strategy<Value = Content> {
    prop_oneof![
        Just(String::new()),
        "[ \t\n\u{3000}\u{2028}]{1,4}",
        "\\PC{1,40}",
        Just("x".repeat(5000)),
    ]
    .prop_map(Content::Text)
}

fn part() -> impl Strategy<Value = Content> {
    prop_oneof![
        3 => text(),
        2 => (0..FIXTURES.len()).prop_map(|i| media(FIXTURES[i])),
    ]
}

fn parts() -> impl Strategy<Value = Vec<Content>> {
    prop_oneof![
        8 => prop::collection::vec(part(), 0..6),
        // Many images: more than a request takes.
        1 => (1usize..130).prop_map(|n| vec![media("image.png"); n]),
    ]
}

fn arguments() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({})),
        Just(json!({"n": 1})),
        "\\PC{0,12}".prop_map(Value::String),
        Just(json!([1, 2])),
        Just(Value::Null),
    ]
}

fn tool_name() -> impl Strategy<Value = String> {
    ("[a-z0-9 ._:-]{0,10}", "\\PC{1,80}").prop_map(|(server, tool)| model_tool_name(&server, &tool))
}

fn schema() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"type": "object", "properties": {"n": {"type": "integer"}}})),
        Just(json!({"properties": {"n": {"type": "integer"}}})),
        Just(json!({"$ref": "#/$defs/A", "$defs": {"A": {"type": "object"}}})),
        Just(json!({"anyOf": [{"type": "object"}, {"type": "null"}]})),
        Just(json!({"type": "string"})),
        Just(json!({"type": ["object", "null"]})),
        Just(json!("not a schema")),
        Just(json!([])),
        Just(json!({})),
    ]
}

fn tool() -> impl Strategy<Value = ToolSpec> {
    (tool_name(), "\\PC{0,20}", 0usize..3000, schema()).prop_map(
        |(name, description, extra, input_schema)| {
            ToolSpec::new(
                name,
                format!("{description}{}", "d".repeat(extra)),
                input_schema,
            )
        },
    )
}

fn tools_list() -> impl Strategy<Value = Vec<ToolSpec>> {
    prop_oneof![
        4 => prop::collection::vec(tool(), 0..6),
        1 => (120usize..210).prop_flat_map(|n| prop::collection::vec(tool(), n)),
    ]
}

/// A conversation: the user's turn, then rounds of calls and their results with server
/// messages between.
fn conversation() -> impl Strategy<Value = Vec<Message>> {
    let round = (
        "\\PC{0,20}",
        prop::collection::vec(
            (
                tool_name(),
                arguments(),
                parts(),
                any::<bool>(),
                any::<bool>(),
            ),
            1..4,
        ),
        parts(),
    );
    (parts(), prop::collection::vec(round, 0..3)).prop_map(|(first, rounds)| {
        let mut messages = vec![Message::User(first)];
        let mut id = 0;
        for (said, calls, pushed) in rounds {
            let mut tool_calls = Vec::new();
            let mut outputs = Vec::new();
            for (name, arguments, live, native, is_error) in calls {
                id += 1;
                tool_calls.push(ToolCall::new(format!("call_{id}"), name.clone(), arguments));
                let stored: String = live
                    .iter()
                    .map(|part| match part {
                        Content::Text(text) => text.clone(),
                        _ => "[image: image/png, 1KB, ref img_abcdef_1]".to_owned(),
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                let mut output = ToolOutput::new(format!("call_{id}"), name, stored);
                output.live = native.then_some(live);
                output.is_error = is_error;
                outputs.push(output);
            }
            messages.push(Message::Assistant {
                text: said,
                tool_calls,
            });
            messages.push(Message::ToolResults(outputs));
            messages.push(Message::User(pushed));
        }
        messages
    })
}

/// With `MCPL_VALIDATE_BODIES` set to a folder, the first bodies of each route are written
/// there (`<route>.jsonl`, at most [`KEPT_BODIES`] a route), for the official SDKs' types to
/// validate (`cargo xtask validate` does).
fn keep(route: RouteId, body: &Value) {
    use std::io::Write as _;
    use std::sync::Mutex;
    static KEPT: Mutex<[usize; 5]> = Mutex::new([0; 5]);
    let Some(folder) = std::env::var_os("MCPL_VALIDATE_BODIES") else {
        return;
    };
    let index = RouteId::ALL.iter().position(|r| *r == route).unwrap_or(0);
    let mut kept = KEPT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if kept[index] >= KEPT_BODIES {
        return;
    }
    kept[index] += 1;
    let path = std::path::Path::new(&folder).join(format!("{}.jsonl", route.name()));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(file, "{body}").unwrap();
}

/// How many bodies of each route [`keep`] writes.
const KEPT_BODIES: usize = 400;

/// What the route's API would refuse in the body `messages` and `tools` encode to, one
/// violation after another; empty when it takes it all. The body is kept for the SDK check.
fn refused(route: RouteId, messages: &[Message], tools: &[ToolSpec]) -> String {
    let body = Encoder::new(route).request(&ModelRequest::new(
        "a-model", "Answer.", messages, tools, 1024,
    ));
    keep(route, &body);
    validate(route, &route.request_limits(), &body)
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

fn cases() -> u32 {
    std::env::var("MCPL_VALIDATE_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn every_body_an_encoder_writes_is_one_its_api_takes(
        messages in conversation(),
        tools in tools_list(),
    ) {
        for route in RouteId::ALL {
            let conformed = tools::conform(route, tools.clone());
            let refused = refused(route, &messages, &conformed.tools);
            prop_assert!(refused.is_empty(), "{}: {refused}", route.name());
        }
    }
}

#[test]
fn a_body_the_api_would_refuse_is_repaired_before_it_is_sent() {
    // Definitions no host held to the route's rules: the request is checked as it is written.
    let tools = vec![
        ToolSpec::new("ok", "", json!({"type": "object"})),
        ToolSpec::new("1 bad", "", json!("x")),
    ];
    let messages = vec![Message::User(vec![Content::Text("Go.".to_owned())])];
    for route in RouteId::ALL {
        let (body, repaired) = Encoder::new(route).checked_request(&ModelRequest::new(
            "a-model", "Answer.", &messages, &tools, 1024,
        ));
        assert!(
            validate(route, &route.request_limits(), &body).is_empty(),
            "{}: {body}",
            route.name()
        );
        assert!(
            repaired
                .iter()
                .any(|line| line.contains("tools the route refuses were left out")),
            "{}: {repaired:?}",
            route.name()
        );
    }
}

/// Every fixture a server may send, PDFs of every defect among them.
const SENT: &[&str] = &[
    "image.png",
    "baseline.jpg",
    "static.gif",
    "animated.gif",
    "lossy.webp",
    "large-dimensions.png",
    "truncated.png",
    "header-only.png",
    "image.bmp",
    "image.heic",
    "document.pdf",
    "three-pages.pdf",
    "three-pages-object-streams.pdf",
    "150-pages.pdf",
    "150-pages-direct-tree.pdf",
    "encrypted.pdf",
    "encrypted-empty-password.pdf",
    "no-pages.pdf",
    "tone.wav",
    "tone.mp3",
    "tone.ogg",
    "tone.flac",
    "archive.zip",
];

/// One content block a server may send: a fixture as an image, audio or embedded blob, cut
/// short or not, labelled with any type; a text; a link.
fn sent_block() -> impl Strategy<Value = Value> {
    let blob = (0..SENT.len(), any::<bool>(), 0usize..4, 0usize..3).prop_map(
        |(i, cut, label, kind)| {
            let mut bytes = mcpl_testkit::fixture(SENT[i]);
            if cut {
                bytes.truncate(bytes.len() / 2);
            }
            let data = base64::engine::general_purpose::STANDARD.encode(bytes);
            let mime = ["image/png", "application/pdf", "audio/wav", "application/octet-stream"][label];
            match kind {
                0 => json!({"type": "image", "mimeType": mime, "data": data}),
                1 => json!({"type": "audio", "mimeType": mime, "data": data}),
                _ => json!({"type": "resource", "resource": {"uri": "file:///x", "mimeType": mime, "blob": data}}),
            }
        },
    );
    prop_oneof![
        2 => "\\PC{0,60}".prop_map(|text| json!({"type": "text", "text": text})),
        1 => Just(json!({"type": "text", "text": " \n "})),
        3 => blob,
        1 => Just(json!({"type": "resource_link", "uri": "https://x.example/a.pdf", "name": "a.pdf"})),
    ]
}

/// What a model takes: images, PDFs, audio.
const MODELS: [(bool, bool, bool); 4] = [
    (true, true, true),
    (true, true, false),
    (true, false, false),
    (false, false, false),
];

/// `route` held to what a model takes, as `mcpl-config`'s `narrow` holds it.
fn narrowed(route: RouteId, (images, pdf, audio): (bool, bool, bool)) -> mcpl_budget::PricedRoute {
    mcpl_budget::PricedRoute::of(route).narrowed(mcpl_budget::NativeMedia::new(images, pdf, audio))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Tool results as servers send them, through the lanes and the budget of each route as
    /// each model narrows it, then encoded: every body is one the API takes.
    #[test]
    fn every_result_a_server_sends_reaches_a_body_the_api_takes(
        results in prop::collection::vec(prop::collection::vec(sent_block(), 0..8), 1..4),
        budget in prop_oneof![Just(40u64), Just(400), Just(12_500)],
    ) {
        use mcpl_budget::{Bound, Pricer, fit_tool_result};
        use mcpl_lanes::{ImageLedger, Projector, Registry, ServerName, ToolResult, UriPolicy};
        for route in RouteId::ALL {
            for model in MODELS {
                let priced = narrowed(route, model);
                let (mut registry, mut ledger) = (Registry::new(), ImageLedger::new());
                let server = ServerName::new("s");
                let mut outputs = Vec::new();
                let mut tool_calls = Vec::new();
                for (n, content) in results.iter().enumerate() {
                    let result = json!({"content": content});
                    let mut lanes = Projector::new(&mut registry, &mut ledger, &priced.lanes, &server, UriPolicy::Hidden);
                    let pricer = Pricer::new(&Bound, &priced);
                    let read = mcpl_lanes::ResultView::of_value(&result);
                    let fitted = fit_tool_result(&mut lanes, &ToolResult::from_view(&read), pricer, budget, None);
                    let mut output = mcpl_encode::conversation::ToolOutput::from_copies("call_1", "tool", &fitted.copies);
                    output.call_id = format!("call_{n}");
                    tool_calls.push(ToolCall::new(format!("call_{n}"), "s__t", json!({})));
                    outputs.push(output);
                }
                let messages = vec![
                    Message::User(vec![Content::Text("Go.".to_owned())]),
                    Message::Assistant { text: String::new(), tool_calls },
                    Message::ToolResults(outputs),
                ];
                let refused = refused(route, &messages, &[]);
                prop_assert!(refused.is_empty(), "{} {model:?}: {refused}", route.name());
            }
        }
    }
}
