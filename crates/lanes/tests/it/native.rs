//! Only what was verified goes natively (decision 0109): a PDF whose pages were counted, within
//! the route's pages and bytes per document, and not encrypted; audio whose type and duration
//! were read; an image whose type and dimensions were read. Anything else is its marker or line,
//! and a PDF's marker says why.

use base64::Engine as _;
use mcpl_lanes::{
    ImageLedger, LiveCopy, PDF_COUNT_LIMIT, Part, Projector, Registry, RouteId, ServerName,
    ToolResult, UriPolicy,
};
use proptest::prelude::*;
use serde_json::{Value, json};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn pdf_result(pdf: &[u8]) -> Value {
    json!({"content": [{"type": "resource", "resource": {
        "uri": "file:///r.pdf", "mimeType": "application/pdf", "blob": b64(pdf)}}]})
}

/// What a model is shown of `result` on `route`: the tool result's stored and live copies, and
/// the parts of the same content as a push event, a channel message and a user injection.
struct Shown {
    stored: String,
    live: LiveCopy<'static>,
    messages: Vec<Part<'static>>,
}

fn shown_on(route: RouteId, result: Value) -> Shown {
    let result: &'static Value = Box::leak(Box::new(result));
    let (mut registry, mut ledger) = (Registry::with_seed(1), ImageLedger::with_seed(2));
    let server = ServerName::new("s");
    let mut projector = Projector::new(
        &mut registry,
        &mut ledger,
        route.route(),
        &server,
        UriPolicy::Hidden,
    );
    let read: &'static _ = Box::leak(Box::new(mcpl_lanes::ResultView::of_value(result)));
    let copies = projector.tool_result(&ToolResult::from_view(read));
    let content = &result["content"];
    let mut messages = projector.push(content).unwrap().parts;
    messages.extend(projector.channel_message(content).unwrap().parts);
    messages.extend(projector.injection_user(content).parts);
    Shown {
        stored: copies.stored.into_owned(),
        live: copies.live,
        messages,
    }
}

fn native_parts(live: &LiveCopy<'static>) -> Vec<Part<'static>> {
    match live {
        LiveCopy::Stored => Vec::new(),
        LiveCopy::Native(parts) => parts
            .iter()
            .filter(|part| !matches!(part, Part::Text(_)))
            .cloned()
            .collect(),
    }
}

/// 150 blank pages grown past [`PDF_COUNT_LIMIT`] to 9 MB: the pages are never read.
fn nine_megabytes_of_150_pages() -> Vec<u8> {
    let mut pdf = mcpl_testkit::fixture("150-pages.pdf");
    pdf.resize(9_000_000, b'\n');
    assert!(pdf.len() as u64 > PDF_COUNT_LIMIT);
    pdf
}

const OVER_100: &str = "it has 150 pages, over the 100 this route takes per document";
const UNCOUNTED: &str = "its pages could not be counted";
const ENCRYPTED: &str = "it is encrypted";
const TOO_BIG_TO_COUNT: &str = "it is over the 8.0MB whose pages this host counts";

/// Each PDF on each route that takes documents: `None` where it goes natively, else the reason
/// its marker gives. A text-only route shows every PDF as the plain marker, and no message lane
/// takes a document.
#[rstest::rstest]
#[case::over_100_pages("150-pages.pdf", [Some(OVER_100), Some(OVER_100), Some(OVER_100), None])]
#[case::a_page_tree_lopdf_cannot_walk("150-pages-direct-tree.pdf", [Some(UNCOUNTED); 4])]
#[case::no_pages("no-pages.pdf", [Some("it has no pages"); 4])]
#[case::encrypted("encrypted.pdf", [Some(ENCRYPTED); 4])]
#[case::encrypted_empty_password("encrypted-empty-password.pdf", [Some(ENCRYPTED); 4])]
#[case::encrypted_aes128_empty_password("encrypted-aes128-empty-password.pdf", [Some(ENCRYPTED); 4])]
#[case::five_bytes("%PDF-", [Some(UNCOUNTED); 4])]
#[case::over_the_count_limit("9 MB of 150 pages", [Some(TOO_BIG_TO_COUNT); 4])]
#[case::object_streams("three-pages-object-streams.pdf", [None; 4])]
#[case::one_page("document.pdf", [None; 4])]
fn a_pdf_goes_natively_only_when_verified(#[case] name: &str, #[case] reasons: [Option<&str>; 4]) {
    let pdf = match name {
        "%PDF-" => b"%PDF-".to_vec(),
        "9 MB of 150 pages" => nine_megabytes_of_150_pages(),
        fixture => mcpl_testkit::fixture(fixture),
    };
    let routes = [
        RouteId::Anthropic,
        RouteId::OpenAiChat,
        RouteId::OpenAiResponses,
        RouteId::Gemini,
    ];
    for (route, reason) in routes.into_iter().zip(reasons) {
        let shown = shown_on(route, pdf_result(&pdf));
        match reason {
            Some(reason) => {
                assert!(
                    shown.stored.starts_with(
                        "[Resource not shown: this host can't display its data (application/pdf, "
                    ) && shown.stored.ends_with(&format!(") because {reason}.]")),
                    "{name} on {route}: {}",
                    shown.stored
                );
                assert_eq!(shown.live, LiveCopy::Stored, "{name} on {route}");
            }
            None => {
                assert!(
                    shown.stored.starts_with("[document: application/pdf, "),
                    "{name} on {route}: {}",
                    shown.stored
                );
                let parts = native_parts(&shown.live);
                assert!(
                    matches!(parts[..], [Part::Document { pages, .. }] if pages >= 1),
                    "{name} on {route}: {parts:?}"
                );
            }
        }
        assert!(
            shown.messages.iter().all(|p| matches!(p, Part::Text(_))),
            "{name} on {route}: a message took a document"
        );
    }
    let text_only = shown_on(RouteId::TextOnly, pdf_result(&pdf));
    assert!(
        text_only.stored.ends_with("B).]"),
        "{name}: {}",
        text_only.stored
    );
    assert_eq!(text_only.live, LiveCopy::Stored);
}

/// A PDF goes natively with the pages counted, so its price and the request's page limits read
/// what the provider will count.
#[test]
fn a_native_pdf_carries_its_counted_pages() {
    let pdf = mcpl_testkit::fixture("150-pages.pdf");
    let shown = shown_on(RouteId::Gemini, pdf_result(&pdf));
    assert!(matches!(
        native_parts(&shown.live)[..],
        [Part::Document { pages: 150, .. }]
    ));
    let pdf = mcpl_testkit::fixture("three-pages-object-streams.pdf");
    let shown = shown_on(RouteId::Anthropic, pdf_result(&pdf));
    assert!(matches!(
        native_parts(&shown.live)[..],
        [Part::Document { pages: 3, .. }]
    ));
}

fn audio_result(bytes: &[u8], mime: &str) -> Value {
    json!({"content": [{"type": "audio", "data": b64(bytes), "mimeType": mime}]})
}

/// Audio goes natively in a tool result and in a message only where its type was read from its
/// bytes and its header says how long it plays: Gemini takes Ogg and FLAC in messages, but
/// their duration is not read, so they go as their line, and so does a WAV cut inside its
/// header.
#[test]
fn audio_goes_natively_only_with_its_type_and_duration_read() {
    let wav = mcpl_testkit::fixture("tone.wav");
    let cases = [
        (wav.clone(), "audio/wav", true),
        (mcpl_testkit::fixture("tone.mp3"), "audio/mpeg", true),
        (wav[..20].to_vec(), "audio/wav", false),
        (mcpl_testkit::fixture("tone.ogg"), "audio/ogg", false),
        (mcpl_testkit::fixture("tone.flac"), "audio/flac", false),
        // Bytes no sniffer reads, labelled as audio.
        (b"not audio at all".to_vec(), "audio/wav", false),
    ];
    for (bytes, mime, verified) in cases {
        for route in [RouteId::OpenAiChat, RouteId::Gemini] {
            let shown = shown_on(route, audio_result(&bytes, mime));
            assert!(shown.stored.starts_with("[audio: "), "{}", shown.stored);
            let in_result = matches!(native_parts(&shown.live)[..], [Part::Audio { .. }]);
            assert_eq!(in_result, verified, "{mime} in a tool result on {route}");
            let in_messages = shown
                .messages
                .iter()
                .filter(|p| matches!(p, Part::Audio { .. }))
                .count();
            assert_eq!(
                in_messages,
                if verified { 3 } else { 0 },
                "{mime} in messages on {route}"
            );
        }
    }
}

/// An image goes natively only where its type and size in pixels were read, and it is whole:
/// this already held (a native image's part carries its dimensions, not an option of them).
#[test]
fn an_image_goes_natively_only_with_its_dimensions_read() {
    let png = mcpl_testkit::fixture("image.png");
    let cases = [
        (png.clone(), true),
        // The signature and half the IHDR chunk: no dimensions.
        (png[..20].to_vec(), false),
        (mcpl_testkit::fixture("header-only.png"), false),
        (mcpl_testkit::fixture("truncated.png"), false),
        (b"\x89PNG\r\n\x1a\n".to_vec(), false),
    ];
    for (bytes, verified) in cases {
        let result =
            json!({"content": [{"type": "image", "data": b64(&bytes), "mimeType": "image/png"}]});
        for route in RouteId::ALL {
            let shown = shown_on(route, result.clone());
            let in_result = matches!(native_parts(&shown.live)[..], [Part::Image { .. }]);
            let in_messages = shown
                .messages
                .iter()
                .any(|p| matches!(p, Part::Image { .. }));
            let takes = route != RouteId::TextOnly;
            assert_eq!(
                in_result,
                verified && takes,
                "{} bytes on {route}",
                bytes.len()
            );
            assert_eq!(
                in_messages,
                verified && takes,
                "{} bytes on {route}",
                bytes.len()
            );
            if !verified {
                assert!(
                    shown.stored.starts_with("[Image not shown: "),
                    "{}",
                    shown.stored
                );
            }
        }
    }
}

const PDFS: [&str; 9] = [
    "document.pdf",
    "three-pages.pdf",
    "three-pages-object-streams.pdf",
    "150-pages.pdf",
    "150-pages-direct-tree.pdf",
    "no-pages.pdf",
    "encrypted.pdf",
    "encrypted-empty-password.pdf",
    "encrypted-aes128-empty-password.pdf",
];

/// Names whose bytes a mutation most often changes what a PDF says of itself.
const TOKENS: [&[u8]; 8] = [
    b"/Encrypt",
    b"/Count",
    b"/Kids",
    b"/Pages",
    b"/Type",
    b"/Root",
    b"xref",
    b" 0 R",
];

/// A real PDF, cut, with bytes overwritten, a stretch removed, or a name that matters altered.
fn mutated_pdf() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(&PDFS[..]),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        prop::option::of((any::<prop::sample::Index>(), 0usize..64)),
        prop::option::of((
            prop::sample::select(&TOKENS[..]),
            any::<prop::sample::Index>(),
            any::<u8>(),
        )),
        prop::option::of(any::<prop::sample::Index>()),
    )
        .prop_map(|(name, writes, removed, token, cut)| {
            let mut pdf = mcpl_testkit::fixture(name);
            if let Some((token, at, byte)) = token {
                let found: Vec<usize> = memchr::memmem::find_iter(&pdf, token).collect();
                if !found.is_empty() {
                    let start = found[at.index(found.len())];
                    let i = start + 1 + at.index(token.len() - 1);
                    pdf[i] = byte;
                }
            }
            for (at, byte) in writes {
                let i = at.index(pdf.len());
                pdf[i] = byte;
            }
            if let Some((at, len)) = removed {
                let start = at.index(pdf.len());
                pdf.drain(start..(start + len).min(pdf.len()));
            }
            if let Some(cut) = cut {
                pdf.truncate(cut.index(pdf.len() + 1));
            }
            pdf
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever a real PDF is made into, it goes natively only with its pages counted (at least
    /// one, within the route's pages per document), within the bytes the route and the count
    /// take, as a PDF whose bytes do not name `/Encrypt`; and never in a message or on a
    /// text-only route. Nothing panics.
    #[test]
    fn a_native_pdf_was_verified(pdf in mutated_pdf()) {
        for route in RouteId::ALL {
            let shown = shown_on(route, pdf_result(&pdf));
            prop_assert!(shown.messages.iter().all(|p| matches!(p, Part::Text(_))));
            let limits = route.request_limits();
            for part in native_parts(&shown.live) {
                let Part::Document { pages, data } = part else {
                    prop_assert!(false, "not a document: {part:?}");
                    continue;
                };
                prop_assert!(route.route().documents_in_tool_results);
                prop_assert!(pages >= 1);
                prop_assert!(limits.document_pages.is_none_or(|max| pages <= max), "{pages}");
                prop_assert_eq!(mcpl_lanes::pdf_pages(data), Ok(pages));
                let bytes = base64::engine::general_purpose::STANDARD.decode(data).unwrap();
                prop_assert!(bytes.starts_with(b"%PDF-"));
                prop_assert!(bytes.len() as u64 <= PDF_COUNT_LIMIT);
                prop_assert!(limits.document_bytes.is_none_or(|max| bytes.len() as u64 <= max));
                prop_assert!(memchr::memmem::find(&bytes, b"/Encrypt").is_none());
            }
        }
    }
}
