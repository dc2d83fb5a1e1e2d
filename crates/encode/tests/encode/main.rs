//! Every route's request body for one conversation: a snapshot of each, and what must hold in
//! each whatever the snapshot says.

mod limits;
mod media;
mod scaling;
mod validate;

use insta::assert_json_snapshot;
use mcpl_classify::{Dimensions, Sniffed};
use mcpl_encode::Encoder;
use mcpl_encode::conversation::{Content, Message, ModelRequest, ToolCall, ToolOutput, ToolSpec};
use mcpl_lanes::RouteId;
use serde_json::{Value, json};

/// The text that opens the message a route moves a tool result's images into.
const MOVED_IMAGES_HEADER: &str = "Images from the tool results above:";

fn png() -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(mcpl_testkit::fixture("image.png"))
}

/// The start of a WAV file; encoders take the type as the lanes sniffed it.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEA";

fn image(data: &str) -> Content {
    Content::Image {
        sniffed: Sniffed::Png,
        dimensions: Dimensions {
            width: 16,
            height: 12,
        },
        data: data.to_owned(),
    }
}

fn text(text: &str) -> Content {
    Content::Text(text.to_owned())
}

/// System prompt, a user question, two parallel tool calls and their results (one with text and
/// a native PNG, one text only and marked an error), a push event with an image, and user audio.
fn conversation() -> (Vec<Message>, Vec<ToolSpec>) {
    let png = png();
    let messages = vec![
        Message::User(vec![text("What do the chart and the notes say?")]),
        Message::Assistant {
            text: "Let me look.".to_owned(),
            tool_calls: vec![
                ToolCall::new("call_chart", "demo__chart", json!({"month": "May"}))
                    .with_signature(Some("c2lnLWNoYXJ0".to_owned())),
                ToolCall::new("call_notes", "demo__notes", json!({})),
            ],
        },
        Message::ToolResults(vec![
            ToolOutput::new(
                "call_chart",
                "demo__chart",
                "The May chart:\n[image: image/png, 167B, ref img_1a2b_1]",
            )
            .with_live(vec![text("The May chart:"), image(&png)]),
            ToolOutput::new("call_notes", "demo__notes", "notes are locked").with_error(true),
        ]),
        Message::User(vec![text("deploy finished"), image(&png)]),
        Message::User(vec![
            text("And this recording:"),
            Content::Audio {
                sniffed: Sniffed::Wav,
                data: WAV.to_owned(),
            },
        ]),
    ];
    let tools = vec![
        ToolSpec::new(
            "demo__chart",
            "A month's chart.",
            json!({"type": "object", "properties": {"month": {"type": "string"}}}),
        ),
        ToolSpec::new("demo__notes", "The notes.", json!({"type": "object"})),
    ];
    (messages, tools)
}

fn body(encoder: Encoder) -> Value {
    let (messages, tools) = conversation();
    encoder.request(&ModelRequest::new(
        "a-model",
        "Answer from the tools.",
        &messages,
        &tools,
        1024,
    ))
}

#[test]
fn every_route_snapshot() {
    for encoder in RouteId::ALL.map(Encoder::new) {
        assert_json_snapshot!(encoder.id().name(), body(encoder));
    }
}

#[test]
fn anthropic_tool_results_hold_their_images() {
    let body = body(Encoder::new(RouteId::Anthropic));
    // The system prompt is a block, so that it can carry a cache breakpoint; so do the last
    // tool and the last assistant turn's last block (decision 0052).
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "Answer from the tools.", "cache_control": ephemeral}])
    );
    assert_eq!(body["messages"][1]["role"], "assistant");
    let last_call = body["messages"][1]["content"]
        .as_array()
        .unwrap()
        .last()
        .unwrap();
    assert_eq!(last_call["cache_control"], ephemeral);
    assert_eq!(
        body["tools"].as_array().unwrap().last().unwrap()["cache_control"],
        ephemeral
    );
    assert_eq!(body.to_string().matches("cache_control").count(), 3);
    // Text-only marks none.
    let text_only = self::body(Encoder::new(RouteId::TextOnly));
    assert!(!text_only.to_string().contains("cache_control"));
    let results = &body["messages"][2];
    assert_eq!(results["role"], "user");
    let chart = &results["content"][0];
    assert_eq!(chart["type"], "tool_result");
    assert_eq!(chart["tool_use_id"], "call_chart");
    assert_eq!(
        chart["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png()}})
    );
    let notes = &results["content"][1];
    assert_eq!(notes["is_error"], true);
    assert_eq!(
        notes["content"],
        json!([{"type": "text", "text": "notes are locked"}])
    );
    assert_eq!(body["messages"][1]["content"][1]["type"], "tool_use");
    assert_eq!(
        body["messages"][1]["content"][1]["input"],
        json!({"month": "May"})
    );
    // Anthropic takes no audio: the recording is described.
    let audio = &body["messages"][4]["content"][1];
    assert_eq!(audio["type"], "text");
    assert!(
        audio["text"]
            .as_str()
            .unwrap()
            .starts_with("[audio: audio/wav")
    );
}

#[test]
fn openai_chat_moves_images_after_both_tool_messages() {
    let body = body(Encoder::new(RouteId::OpenAiChat));
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "user",
            "user",
            "user"
        ]
    );
    for tool in messages.iter().filter(|m| m["role"] == "tool") {
        let content = tool["content"].as_str().expect("a tool message is text");
        assert!(!content.contains(&png()) && !content.contains("base64"));
    }
    assert_eq!(messages[3]["tool_call_id"], "call_chart");
    assert_eq!(
        messages[3]["content"],
        "The May chart:\n[image 1 of this result is shown after the tool results]"
    );
    assert_eq!(messages[4]["tool_call_id"], "call_notes");
    assert_eq!(messages[4]["content"], "notes are locked");
    let moved = messages[5]["content"].as_array().unwrap();
    assert_eq!(moved[0]["text"], MOVED_IMAGES_HEADER);
    assert_eq!(
        moved[1]["text"],
        "Image 1 of the result of call call_chart (demo__chart):"
    );
    let url = moved[2]["image_url"]["url"].as_str().unwrap();
    assert_eq!(url, format!("data:image/png;base64,{}", png()));
    assert_eq!(moved.len(), 3);
    // Arguments go as a JSON string.
    let call = &messages[2]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["arguments"], r#"{"month":"May"}"#);
    // The push event's image is an image_url; the recording is input_audio.
    assert!(
        messages[6]["content"][1]["image_url"]["url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,")
    );
    assert_eq!(
        messages[7]["content"][1],
        json!({"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}})
    );
    assert_eq!(body["tools"][0]["function"]["parameters"]["type"], "object");
}

#[test]
fn openai_responses_outputs_carry_input_images() {
    let body = body(Encoder::new(RouteId::OpenAiResponses));
    assert_eq!(body["instructions"], "Answer from the tools.");
    let input = body["input"].as_array().unwrap();
    let kinds: Vec<&str> = input
        .iter()
        .map(|item| {
            item["type"]
                .as_str()
                .or(item["role"].as_str())
                .unwrap_or("?")
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "user",
            "assistant",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output",
            "user",
            "user"
        ]
    );
    let chart = &input[4];
    assert_eq!(chart["call_id"], "call_chart");
    assert_eq!(
        chart["output"],
        json!([
            {"type": "input_text", "text": "The May chart:"},
            {"type": "input_image", "image_url": format!("data:image/png;base64,{}", png()), "detail": "low"},
        ])
    );
    assert_eq!(input[5]["output"], "notes are locked");
    // The Responses API takes no audio.
    assert!(!body.to_string().contains(WAV));
    assert_eq!(body["tools"][0]["strict"], false);
}

#[test]
fn gemini_has_function_responses_then_inline_data() {
    let body = body(Encoder::new(RouteId::Gemini));
    assert!(body.get("model").is_none(), "the model goes in the URL");
    let results = &body["contents"][2];
    assert_eq!(results["role"], "user");
    let parts = results["parts"].as_array().unwrap();
    assert_eq!(
        parts[0]["functionResponse"],
        json!({"id": "call_chart", "name": "demo__chart", "response": {"output":
            "The May chart:\n[image 1 of this result is shown after the tool results]"}})
    );
    assert_eq!(
        parts[1]["functionResponse"],
        json!({"id": "call_notes", "name": "demo__notes", "response": {"error": "notes are locked"}})
    );
    assert_eq!(parts[2]["text"], MOVED_IMAGES_HEADER);
    assert_eq!(
        parts[4],
        json!({"inline_data": {"mime_type": "image/png", "data": png()}})
    );
    assert_eq!(
        body["contents"][1]["parts"][1],
        json!({"functionCall": {"id": "call_chart", "name": "demo__chart", "args": {"month": "May"}},
               "thoughtSignature": "c2lnLWNoYXJ0"})
    );
    // The call without a signature gets none.
    assert_eq!(
        body["contents"][1]["parts"][2],
        json!({"functionCall": {"id": "call_notes", "name": "demo__notes", "args": {}}})
    );
    assert_eq!(
        body["contents"][4]["parts"][1],
        json!({"inline_data": {"mime_type": "audio/wav", "data": WAV}})
    );
    assert_eq!(
        body["tools"][0]["functionDeclarations"][1]["parametersJsonSchema"],
        json!({"type": "object"})
    );
}

#[test]
fn text_only_carries_no_base64() {
    let body = body(Encoder::new(RouteId::TextOnly));
    let text = body.to_string();
    assert!(!text.contains(&png()), "{text}");
    assert!(!text.contains(WAV), "{text}");
    assert!(!text.contains("base64"), "{text}");
    // Every content is a string, in the Messages API's shape.
    assert_eq!(
        body["messages"][0]["content"],
        "What do the chart and the notes say?"
    );
    // A tool result is its stored copy, whose image is already its placeholder.
    let chart = &body["messages"][2]["content"][0];
    assert_eq!(chart["type"], "tool_result");
    assert_eq!(
        chart["content"],
        "The May chart:\n[image: image/png, 167B, ref img_1a2b_1]"
    );
}

/// A part a route cannot take where it is becomes text, never a panic or an API error.
#[test]
fn parts_a_route_cannot_take_become_text() {
    let gif = Content::Image {
        sniffed: Sniffed::Gif,
        dimensions: Dimensions {
            width: 1,
            height: 1,
        },
        data: "R0lGODlhAQABAAAAACw=".to_owned(),
    };
    let ogg = Content::Audio {
        sniffed: Sniffed::Ogg,
        data: "T2dnUwACAAAAAAAAAAA=".to_owned(),
    };
    let content = [gif.clone(), ogg.clone()];
    // Gemini lists no GIF; Chat Completions takes WAV and MP3 only.
    let gemini = Encoder::new(RouteId::Gemini).message_content(&content);
    assert!(gemini[0]["text"].as_str().unwrap().contains("image/gif"));
    assert_eq!(gemini[1]["inline_data"]["mime_type"], "audio/ogg");
    let chat = Encoder::new(RouteId::OpenAiChat).message_content(&content);
    assert_eq!(chat[0]["type"], "image_url");
    assert_eq!(chat[1]["type"], "text");
    // Audio inside a tool result goes nowhere natively.
    let output = ToolOutput::new("c", "t", "x").with_live(vec![ogg, gif]);
    for encoder in RouteId::ALL.map(Encoder::new) {
        let shown = encoder.tool_result(&output).to_string();
        assert!(
            !shown.contains("T2dnUwAC"),
            "{}: {shown}",
            encoder.id().name()
        );
    }
}

#[test]
fn anthropic_sends_no_text_block_without_a_visible_character() {
    // The Messages API refuses a text block of only whitespace, and an empty message.
    let blank = ["", " ", "\n\t ", "\u{3000}", "\u{2028}"];
    for space in blank {
        let messages = vec![
            Message::User(vec![text("Look."), text(space)]),
            Message::Assistant {
                text: space.to_owned(),
                tool_calls: vec![ToolCall::new("call_1", "demo__chart", json!({}))],
            },
            Message::ToolResults(vec![
                ToolOutput::new("call_1", "demo__chart", space.to_owned()).with_live(vec![
                    text(space),
                    image(&png()),
                    text(space),
                ]),
            ]),
            Message::User(vec![text(space)]),
        ];
        let body = Encoder::new(RouteId::Anthropic).request(&ModelRequest::new(
            "a-model",
            "",
            &messages,
            &[],
            1024,
        ));
        let mut texts = Vec::new();
        for message in body["messages"].as_array().unwrap() {
            let content = message["content"].as_array().unwrap();
            assert!(!content.is_empty(), "{space:?}: {message}");
            for block in content {
                if let Some(text) = block["text"].as_str() {
                    texts.push(text.to_owned());
                }
                for inner in block["content"].as_array().into_iter().flatten() {
                    if let Some(text) = inner["text"].as_str() {
                        texts.push(text.to_owned());
                    }
                }
            }
        }
        for text in texts {
            assert!(
                text.chars().any(|c| !c.is_whitespace()),
                "{space:?}: a blank text block: {body}"
            );
        }
        let result = &body["messages"][2]["content"][0]["content"];
        assert_eq!(result.as_array().unwrap().len(), 1, "{result}");
        assert_eq!(result[0]["type"], "image");
    }
}
