//! The tools: each emits one kind of content, or misbehaves in one way.

use std::time::Duration;

use serde_json::{Value, json};

use crate::media;
use crate::resources::{
    self, BOTH_URI, IMAGE_URI, PDF_URI, README_URI, REPORT_BYTES, REPORT_URI, UNTYPED_URI,
};

/// The uri the `reference-never` tool marks `never` and also writes in its text.
pub(crate) const NEVER_URI: &str = "https://files.demo.example/private/x.bin?sig=never-show";
/// The uri, with a token, the `reference-ref` tool refers to.
pub(crate) const REF_URI: &str = "https://files.demo.example/reports/q3.pdf?token=demo-secret-123";
/// The log the `error` tool's failed result refers to.
/// The error's log on the demo's own origin, which does not serve it.
pub(crate) const MISSING_LOG_PATH: &str = "/logs/503.txt";
pub(crate) const ERROR_LOG_URI: &str =
    "https://files.demo.example/logs/503.txt?token=demo-secret-err";
/// The lines of log the `over-budget` tool returns, about 300 KB.
const LOG_LINES: u32 = 3600;
/// How long `slow` waits when it is not told.
const SLOW_DEFAULT_MS: u64 = 1000;
/// The longest `slow` waits, whatever it is told.
const SLOW_MAX_MS: u64 = 600_000;

/// One tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tool {
    Text,
    Png,
    Jpeg,
    Gif,
    Webp,
    Svg,
    PngLabelledJpeg,
    ZipLabelledPng,
    HugeImage,
    Audio,
    EmbeddedText,
    EmbeddedImage,
    Pdf,
    UntypedBlob,
    TextAndBlob,
    ResourceLink,
    ReferenceNever,
    ReferenceRef,
    OverBudget,
    Structured,
    StructuredOnly,
    Error,
    PushEvents,
    HostAnswers,
    Crash,
    Hang,
    Garbage,
    Slow,
}

/// What calling a tool does.
pub(crate) enum Effect {
    /// Answer with this `CallToolResult`.
    Answer(Value),
    /// Send the push events and the channel messages, then answer with how many were sent.
    Push,
    /// Answer with every response the host has sent to the server's own requests.
    HostAnswers,
    /// Exit with status 3 without answering.
    Crash,
    /// Never answer this call, and go on serving.
    Hang,
    /// Write a line that is not JSON instead of the answer, and go on serving.
    Garbage,
    /// Wait, then answer.
    Slow(Duration),
}

impl Tool {
    /// Every tool, in the order `tools/list` gives them.
    pub(crate) const ALL: [Tool; 28] = [
        Tool::Text,
        Tool::Png,
        Tool::Jpeg,
        Tool::Gif,
        Tool::Webp,
        Tool::Svg,
        Tool::PngLabelledJpeg,
        Tool::ZipLabelledPng,
        Tool::HugeImage,
        Tool::Audio,
        Tool::EmbeddedText,
        Tool::EmbeddedImage,
        Tool::Pdf,
        Tool::UntypedBlob,
        Tool::TextAndBlob,
        Tool::ResourceLink,
        Tool::ReferenceNever,
        Tool::ReferenceRef,
        Tool::OverBudget,
        Tool::Structured,
        Tool::StructuredOnly,
        Tool::Error,
        Tool::PushEvents,
        Tool::HostAnswers,
        Tool::Crash,
        Tool::Hang,
        Tool::Garbage,
        Tool::Slow,
    ];

    /// The tool called `name`.
    pub(crate) fn named(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|tool| tool.name() == name)
    }

    /// Its name in `tools/list` and `tools/call`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Tool::Text => "text",
            Tool::Png => "png",
            Tool::Jpeg => "jpeg",
            Tool::Gif => "gif",
            Tool::Webp => "webp",
            Tool::Svg => "svg",
            Tool::PngLabelledJpeg => "png-labelled-jpeg",
            Tool::ZipLabelledPng => "zip-labelled-png",
            Tool::HugeImage => "huge-image",
            Tool::Audio => "audio",
            Tool::EmbeddedText => "embedded-text",
            Tool::EmbeddedImage => "embedded-image",
            Tool::Pdf => "pdf",
            Tool::UntypedBlob => "untyped-blob",
            Tool::TextAndBlob => "text-and-blob",
            Tool::ResourceLink => "resource-link",
            Tool::ReferenceNever => "reference-never",
            Tool::ReferenceRef => "reference-ref",
            Tool::OverBudget => "over-budget",
            Tool::Structured => "structured",
            Tool::StructuredOnly => "structured-only",
            Tool::Error => "error",
            Tool::PushEvents => "push-events",
            Tool::HostAnswers => "host-answers",
            Tool::Crash => "crash",
            Tool::Hang => "hang",
            Tool::Garbage => "garbage",
            Tool::Slow => "slow",
        }
    }

    /// Its description: what kind of content it emits.
    pub(crate) fn description(self) -> &'static str {
        match self {
            Tool::Text => "Emits one text block.",
            Tool::Png => "Emits a text caption and an inline image block: a 16x12 PNG (image/png).",
            Tool::Jpeg => {
                "Emits a text caption and an inline image block: a 16x12 JPEG (image/jpeg)."
            }
            Tool::Gif => "Emits a text caption and an inline image block: a 16x12 GIF (image/gif).",
            Tool::Webp => {
                "Emits a text caption and an inline image block: a 16x12 WebP (image/webp)."
            }
            Tool::Svg => "Emits a text caption and an inline image block: an SVG (image/svg+xml).",
            Tool::PngLabelledJpeg => {
                "Emits an inline image block whose bytes are a PNG but whose mimeType says image/jpeg."
            }
            Tool::ZipLabelledPng => {
                "Emits an inline image block whose bytes are a ZIP archive but whose mimeType says image/png."
            }
            Tool::HugeImage => {
                "Emits a text caption and an inline image block: a valid 6 MiB PNG, over a 5 MiB per-image limit."
            }
            Tool::Audio => {
                "Emits a text caption and an inline audio block: a WAV tone (audio/wav)."
            }
            Tool::EmbeddedText => {
                "Emits an embedded text resource (text/markdown) at demo://notes/readme.md."
            }
            Tool::EmbeddedImage => "Emits an embedded blob resource holding a PNG (image/png).",
            Tool::Pdf => "Emits an embedded blob resource holding a PDF (application/pdf).",
            Tool::UntypedBlob => "Emits an embedded blob resource with no mimeType.",
            Tool::TextAndBlob => {
                "Emits an embedded resource holding both text and a blob, which MCP does not allow."
            }
            Tool::ResourceLink => {
                "Emits a text block and a resource_link to demo://files/report.csv (text/csv)."
            }
            Tool::ReferenceNever => {
                "Emits an MCPL reference with disposition never, and a text block that mentions its uri."
            }
            Tool::ReferenceRef => {
                "Emits a text block and an MCPL reference with disposition ref to a PDF whose uri carries a token \
                 (or to `uri`, claiming `sizeBytes`, when given)."
            }
            Tool::OverBudget => {
                "Emits about 300 KB of numbered log lines in two text blocks with a PNG image between them, \
                 and a closing text block: far over a 12,500-token budget."
            }
            Tool::Structured => {
                "Emits a text block holding JSON and the same object as structuredContent."
            }
            Tool::StructuredOnly => {
                "Emits an empty content array and an object as structuredContent."
            }
            Tool::Error => {
                "Emits a result with isError true: a text block saying what failed and an MCPL \
                 reference to its log."
            }
            Tool::PushEvents => {
                "Sends the host push/event requests (evt-1 with text, image and reference; evt-1 again; \
                 evt-empty with blank text) and a channels/incoming request (m1 text, m2 empty, m3 text \
                 and image), then emits a text block saying what it sent."
            }
            Tool::HostAnswers => {
                "Emits a text block holding a JSON array of every response the host has sent to the \
                 server's own requests: [{id, result} or {id, error}]."
            }
            Tool::Crash => "Misbehaves: the server exits with status 3 without answering.",
            Tool::Hang => {
                "Misbehaves: the server never answers this call, and goes on serving others."
            }
            Tool::Garbage => {
                "Misbehaves: the server writes a line that is not JSON instead of the answer, and goes on serving."
            }
            Tool::Slow => {
                "Waits `ms` milliseconds (default 1000), then emits a text block saying so."
            }
        }
    }

    /// Its `inputSchema`.
    pub(crate) fn input_schema(self) -> Value {
        match self {
            Tool::Error => json!({
                "type": "object",
                "properties": {
                    "uri": {"type": "string", "description": "The failed call's log reference's uri."},
                },
            }),
            Tool::ReferenceRef => json!({
                "type": "object",
                "properties": {
                    "uri": {"type": "string", "description": "The reference's uri."},
                    "sizeBytes": {"type": "integer", "minimum": 0,
                                  "description": "The size the reference claims."},
                },
            }),
            Tool::Slow => json!({
                "type": "object",
                "properties": {"ms": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": SLOW_MAX_MS,
                    "description": "How long to wait, in milliseconds.",
                }},
            }),
            Tool::Text
            | Tool::Png
            | Tool::Jpeg
            | Tool::Gif
            | Tool::Webp
            | Tool::Svg
            | Tool::PngLabelledJpeg
            | Tool::ZipLabelledPng
            | Tool::HugeImage
            | Tool::Audio
            | Tool::EmbeddedText
            | Tool::EmbeddedImage
            | Tool::Pdf
            | Tool::UntypedBlob
            | Tool::TextAndBlob
            | Tool::ResourceLink
            | Tool::ReferenceNever
            | Tool::OverBudget
            | Tool::Structured
            | Tool::StructuredOnly
            | Tool::PushEvents
            | Tool::HostAnswers
            | Tool::Crash
            | Tool::Hang
            | Tool::Garbage => json!({"type": "object", "properties": {}}),
        }
    }

    /// Its entry in `tools/list`.
    pub(crate) fn listing(self) -> Value {
        let mut listing = json!({
            "name": self.name(),
            "description": self.description(),
            "inputSchema": self.input_schema(),
        });
        if self == Tool::Text {
            listing["annotations"] = json!({"readOnlyHint": true});
        }
        listing
    }

    /// What calling it with `arguments` does.
    /// A link the demo's own origin serves (`files_origin`, see [`crate::Remote`]) goes there.
    pub(crate) fn call(self, arguments: &Value, files_origin: Option<&str>) -> Effect {
        let answer = |content: Value| Effect::Answer(json!({"content": content}));
        match self {
            Tool::Text => answer(json!([text(
                "Hello from the mcpl demo server. This result is one text block."
            )])),
            Tool::Png => captioned_image("A 16x12 PNG drawn by Pillow", "image/png", media::PNG),
            Tool::Jpeg => captioned_image(
                "A 16x12 baseline JPEG drawn by Pillow",
                "image/jpeg",
                media::JPEG,
            ),
            Tool::Gif => captioned_image("A 16x12 GIF drawn by Pillow", "image/gif", media::GIF),
            Tool::Webp => captioned_image(
                "A 16x12 lossy WebP drawn by Pillow",
                "image/webp",
                media::WEBP,
            ),
            Tool::Svg => captioned_image(
                "A 16x12 SVG with a gold rectangle",
                "image/svg+xml",
                media::SVG,
            ),
            Tool::PngLabelledJpeg => {
                answer(json!([image("image/jpeg", media::base64(media::PNG))]))
            }
            Tool::ZipLabelledPng => answer(json!([image("image/png", media::base64(media::ZIP))])),
            Tool::HugeImage => answer(json!([
                text(&format!(
                    "A 16x12 PNG grown to {} bytes by a text chunk.",
                    media::HUGE_PNG_BYTES
                )),
                image("image/png", media::huge_png_base64().to_owned()),
            ])),
            Tool::Audio => answer(json!([
                text(&format!("A short tone as WAV ({} bytes).", media::WAV.len())),
                {"type": "audio", "mimeType": "audio/wav", "data": media::base64(media::WAV)},
            ])),
            Tool::EmbeddedText => answer(json!([embedded(README_URI)])),
            Tool::EmbeddedImage => answer(json!([embedded(IMAGE_URI)])),
            Tool::Pdf => answer(json!([embedded(PDF_URI)])),
            Tool::UntypedBlob => answer(json!([embedded(UNTYPED_URI)])),
            Tool::TextAndBlob => answer(json!([embedded(BOTH_URI)])),
            Tool::ResourceLink => answer(json!([
                text("The quarterly report is linked below."),
                {
                    "type": "resource_link",
                    "uri": REPORT_URI,
                    "name": "report.csv",
                    "mimeType": "text/csv",
                    "size": REPORT_BYTES,
                },
            ])),
            Tool::ReferenceNever => answer(json!([
                {
                    "type": "resource",
                    "uri": NEVER_URI,
                    "name": "private.bin",
                    "mimeType": "application/octet-stream",
                    "sizeBytes": 4096,
                    "disposition": "never",
                },
                text(&format!("The private file is at {NEVER_URI}; that link must never be shown.")),
            ])),
            Tool::ReferenceRef => {
                // A host's tests point the reference at a server of their own.
                let uri = arguments
                    .get("uri")
                    .and_then(Value::as_str)
                    .unwrap_or(REF_URI);
                let size = arguments
                    .get("sizeBytes")
                    .and_then(Value::as_u64)
                    .unwrap_or(48213);
                answer(json!([
                    text("The Q3 report is attached as a reference; fetch it to read it."),
                    {
                        "type": "resource",
                        "uri": uri,
                        "name": "q3-report.pdf",
                        "mimeType": "application/pdf",
                        "sizeBytes": size,
                        "disposition": "ref",
                    },
                ]))
            }
            Tool::OverBudget => {
                let half = LOG_LINES / 2;
                answer(json!([
                    text(&log_lines(1..=half)),
                    image("image/png", media::base64(media::PNG)),
                    text(&log_lines(half + 1..=LOG_LINES)),
                    text(&format!("End of log: {LOG_LINES} lines, 0 errors.")),
                ]))
            }
            Tool::Structured => {
                let weather = weather();
                Effect::Answer(json!({
                    "content": [text(&weather.to_string())],
                    "structuredContent": weather,
                }))
            }
            Tool::StructuredOnly => {
                Effect::Answer(json!({"content": [], "structuredContent": weather()}))
            }
            Tool::Error => {
                // On the demo's own origin the log is a path it does not serve: a 404.
                let served = files_origin.map(|origin| format!("{origin}{MISSING_LOG_PATH}"));
                let log = arguments
                    .get("uri")
                    .and_then(Value::as_str)
                    .or(served.as_deref())
                    .unwrap_or(ERROR_LOG_URI);
                Effect::Answer(json!({
                "content": [
                    text("The demo tool failed on purpose: the upstream service answered 503."),
                    // A failed call's reference: a host keeps only the error's text.
                    {
                        "type": "resource",
                        "uri": log,
                        "name": "503.log",
                        "mimeType": "text/plain",
                        "sizeBytes": 512,
                        "disposition": "ref",
                    },
                ],
                "isError": true,
                }))
            }
            Tool::PushEvents => Effect::Push,
            Tool::HostAnswers => Effect::HostAnswers,
            Tool::Crash => Effect::Crash,
            Tool::Hang => Effect::Hang,
            Tool::Garbage => Effect::Garbage,
            Tool::Slow => {
                let ms = arguments
                    .get("ms")
                    .and_then(Value::as_u64)
                    .unwrap_or(SLOW_DEFAULT_MS);
                Effect::Slow(Duration::from_millis(ms.min(SLOW_MAX_MS)))
            }
        }
    }
}

/// The answer of `slow` after waiting `waited`.
pub(crate) fn slow_answer(waited: Duration) -> Value {
    json!({"content": [text(&format!("Waited {} ms.", waited.as_millis()))]})
}

/// A text block.
pub(crate) fn text(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

fn image(mime_type: &str, data: String) -> Value {
    json!({"type": "image", "mimeType": mime_type, "data": data})
}

fn captioned_image(caption: &str, mime_type: &str, bytes: &[u8]) -> Effect {
    Effect::Answer(json!({"content": [
        text(&format!("{caption} ({} bytes, {mime_type}).", bytes.len())),
        image(mime_type, media::base64(bytes)),
    ]}))
}

fn embedded(uri: &str) -> Value {
    json!({"type": "resource", "resource": resources::get(uri).contents()})
}

fn log_lines(numbers: std::ops::RangeInclusive<u32>) -> String {
    numbers
        .map(|n| {
            format!(
                "{n:05} 2025-01-01T{:02}:{:02}:{:02}Z INFO worker-{} processed batch {n} of \
                 {LOG_LINES}: 128 records, 0 errors\n",
                n / 3600,
                n / 60 % 60,
                n % 60,
                n % 8
            )
        })
        .collect()
}

fn weather() -> Value {
    json!({
        "city": "Lisbon",
        "temperatureC": 21.5,
        "conditions": "clear",
        "forecast": [{"day": "Mon", "highC": 23}, {"day": "Tue", "highC": 22}],
    })
}
