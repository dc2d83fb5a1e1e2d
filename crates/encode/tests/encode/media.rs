//! PDFs and tool-result audio on each route, and the `detail` OpenAI images go at.

use mcpl_classify::{Dimensions, Sniffed};
use mcpl_encode::conversation::{Content, ToolOutput};
use mcpl_encode::{Encoder, ImageDetail};
use mcpl_lanes::RouteId;
use serde_json::json;

/// The text that opens the message a route moves a tool result's media into.
const MOVED_MEDIA_HEADER: &str = "Images, documents and audio from the tool results above:";

fn b64(name: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(mcpl_testkit::fixture(name))
}

fn output(live: Vec<Content>) -> ToolOutput {
    ToolOutput::new("call_7", "demo__report", "stored").with_live(live)
}

fn pdf() -> Content {
    Content::Document {
        pages: 1,
        data: b64("document.pdf"),
    }
}

fn wav() -> Content {
    Content::Audio {
        sniffed: Sniffed::Wav,
        data: b64("tone.wav"),
    }
}

#[test]
fn a_pdf_goes_natively_on_every_route_that_takes_one() {
    let data = b64("document.pdf");
    let result = output(vec![Content::Text("The report:".to_owned()), pdf()]);
    assert_eq!(
        Encoder::new(RouteId::Anthropic).tool_result(&result),
        json!([
            {"type": "text", "text": "The report:"},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": data}},
        ])
    );
    assert_eq!(
        Encoder::new(RouteId::OpenAiResponses).tool_result(&result),
        json!([
            {"type": "input_text", "text": "The report:"},
            {"type": "input_file", "filename": "document.pdf", "file_data": format!("data:application/pdf;base64,{data}")},
        ])
    );
    let chat = Encoder::new(RouteId::OpenAiChat);
    assert_eq!(
        chat.tool_result(&result),
        json!("The report:\n[document 1 of this result is shown after the tool results]")
    );
    assert_eq!(
        chat.follow_up(std::slice::from_ref(&result)),
        json!([
            {"type": "text", "text": MOVED_MEDIA_HEADER},
            {"type": "text", "text": "Document 1 of the result of call call_7 (demo__report):"},
            {"type": "file", "file": {"filename": "document.pdf", "file_data": format!("data:application/pdf;base64,{data}")}},
        ])
    );
    let gemini = Encoder::new(RouteId::Gemini).tool_result(&result);
    assert_eq!(
        gemini[0]["functionResponse"]["response"]["output"],
        "The report:\n[document 1 of this result is shown after the tool results]"
    );
    assert_eq!(
        gemini[3],
        json!({"inline_data": {"mime_type": "application/pdf", "data": data}})
    );
    // Text-only never carries the bytes.
    let text_only = Encoder::new(RouteId::TextOnly).tool_result(&result);
    assert_eq!(text_only, json!("stored"));
}

#[test]
fn tool_result_audio_goes_natively_on_chat_and_gemini_only() {
    let data = b64("tone.wav");
    let result = output(vec![wav()]);
    let chat = Encoder::new(RouteId::OpenAiChat);
    assert_eq!(
        chat.follow_up(std::slice::from_ref(&result))[2],
        json!({"type": "input_audio", "input_audio": {"data": data, "format": "wav"}})
    );
    assert_eq!(
        chat.tool_result(&result),
        json!("[audio 1 of this result is shown after the tool results]")
    );
    let gemini = Encoder::new(RouteId::Gemini).tool_result(&result);
    assert_eq!(
        gemini[3],
        json!({"inline_data": {"mime_type": "audio/wav", "data": data}})
    );
    // Anthropic and Responses take no audio: it is described.
    assert_eq!(
        Encoder::new(RouteId::Anthropic).tool_result(&result),
        json!([{"type": "text", "text": "[audio: audio/wav, ~4KB]"}])
    );
    assert_eq!(
        Encoder::new(RouteId::OpenAiResponses).tool_result(&result),
        json!([{"type": "input_text", "text": "[audio: audio/wav, ~4KB]"}])
    );
}

#[test]
fn images_under_the_low_detail_size_go_at_low_detail() {
    let png = b64("image.png");
    let sized = |width, height| Content::Image {
        sniffed: Sniffed::Png,
        dimensions: Dimensions { width, height },
        data: png.clone(),
    };
    let detail = |encoder: Encoder, content: Content| {
        let user = encoder.message_content(&[content]);
        match encoder.id() {
            RouteId::OpenAiChat => user[0]["image_url"]["detail"].clone(),
            _ => user[0]["detail"].clone(),
        }
    };
    for id in [RouteId::OpenAiChat, RouteId::OpenAiResponses] {
        let encoder = Encoder::new(id);
        assert_eq!(detail(encoder, sized(512, 300)), "low", "{id}");
        assert_eq!(detail(encoder, sized(513, 300)), "auto", "{id}");
        let high = encoder.with_image_detail(ImageDetail::High);
        assert_eq!(detail(high, sized(16, 12)), "high", "{id}");
        let low = encoder.with_image_detail(ImageDetail::Low);
        assert_eq!(detail(low, sized(4000, 3000)), "low", "{id}");
    }
}

#[test]
fn documents_over_the_route_pages_go_as_their_placeholder_with_a_notice() {
    use mcpl_encode::conversation::{Message, ModelRequest};
    let doc = |pages| Content::Document {
        pages,
        data: b64("document.pdf"),
    };
    let stored = "[document: application/pdf, ~2KB, ref doc_t_1]\n[document: application/pdf, ~2KB, ref doc_t_2]";
    let mut both = output(vec![doc(150), doc(60)]);
    both.stored = stored.to_owned();
    let messages = [Message::ToolResults(vec![both])];
    let request = ModelRequest::new("m", "", &messages, &[], 16);
    let body = Encoder::new(RouteId::Anthropic).request(&request);
    let content = &body["messages"][0]["content"][0]["content"];
    assert_eq!(
        content[0]["text"],
        "[document: application/pdf, ~2KB, ref doc_t_1] [document not sent in this request: it has more than 100 pages]"
    );
    assert_eq!(content[1]["type"], "document");
    // Two of 60 pages pass one by one, but not together: the later one is left out.
    let mut both = output(vec![doc(60), doc(60)]);
    both.stored = stored.to_owned();
    let messages = [Message::ToolResults(vec![both])];
    let mut request = request;
    request.messages = &messages;
    let body = Encoder::new(RouteId::OpenAiResponses).request(&request);
    let items = &body["input"][0]["output"];
    assert_eq!(items[0]["type"], "input_file");
    assert_eq!(
        items[1]["text"],
        "[document: application/pdf, ~2KB, ref doc_t_2] [document not sent in this request: the request's documents would pass 100 pages]"
    );
}
