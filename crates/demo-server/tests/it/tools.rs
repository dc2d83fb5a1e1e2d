//! Each content tool emits the kind of block its description names, with real bytes.

use serde_json::{Value, json};

use crate::client::{Server, decode, kinds};

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
const IEND_CHUNK: &[u8] = b"\0\0\0\0IEND\xae\x42\x60\x82";

/// Calls `name` with no arguments on a fresh session.
fn call(name: &str) -> Value {
    Server::start().call(name, json!({}))
}

/// The one image block of `result` after its caption: its mime type and its bytes.
fn captioned_image(result: &Value) -> (String, Vec<u8>) {
    assert_eq!(kinds(result), ["text", "image"]);
    assert!(!result["content"][0]["text"].as_str().unwrap().is_empty());
    let image = &result["content"][1];
    (
        image["mimeType"].as_str().unwrap().to_owned(),
        decode(&image["data"]),
    )
}

#[test]
fn text_is_one_text_block() {
    let result = call("text");
    assert_eq!(kinds(&result), ["text"]);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("demo server")
    );
    assert!(result.get("isError").is_none());
}

#[test]
fn each_image_format_comes_with_its_type_and_its_bytes() {
    let cases: [(&str, &str, &[u8]); 5] = [
        ("png", "image/png", PNG_SIGNATURE),
        ("jpeg", "image/jpeg", b"\xff\xd8\xff"),
        ("gif", "image/gif", b"GIF8"),
        ("webp", "image/webp", b"RIFF"),
        ("svg", "image/svg+xml", b"<svg"),
    ];
    let mut server = Server::start();
    for (tool, mime_type, magic) in cases {
        let (claimed, bytes) = captioned_image(&server.call(tool, json!({})));
        assert_eq!(claimed, mime_type, "{tool}");
        assert!(bytes.starts_with(magic), "{tool}");
        if tool == "webp" {
            assert_eq!(&bytes[8..12], b"WEBP");
        }
    }
}

#[test]
fn mislabelled_images_carry_other_bytes() {
    let mut server = Server::start();
    let result = server.call("png-labelled-jpeg", json!({}));
    assert_eq!(kinds(&result), ["image"]);
    assert_eq!(result["content"][0]["mimeType"], "image/jpeg");
    assert!(decode(&result["content"][0]["data"]).starts_with(PNG_SIGNATURE));

    let result = server.call("zip-labelled-png", json!({}));
    assert_eq!(kinds(&result), ["image"]);
    assert_eq!(result["content"][0]["mimeType"], "image/png");
    assert!(decode(&result["content"][0]["data"]).starts_with(b"PK\x03\x04"));
}

#[test]
fn the_huge_image_is_a_valid_png_over_five_mib() {
    let (mime_type, bytes) = captioned_image(&call("huge-image"));
    assert_eq!(mime_type, "image/png");
    assert!(bytes.len() > 5 * 1024 * 1024, "{} bytes", bytes.len());
    assert!(bytes.starts_with(PNG_SIGNATURE));
    assert!(bytes.ends_with(IEND_CHUNK));
    // Every chunk's length fits and its CRC is right.
    let mut at = PNG_SIGNATURE.len();
    let mut types = Vec::new();
    while at < bytes.len() {
        let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let chunk = &bytes[at + 4..at + 8 + len];
        let crc = u32::from_be_bytes(bytes[at + 8 + len..at + 12 + len].try_into().unwrap());
        assert_eq!(
            crc32(chunk),
            crc,
            "chunk {}",
            String::from_utf8_lossy(&chunk[..4])
        );
        types.push(String::from_utf8_lossy(&chunk[..4]).into_owned());
        at += 12 + len;
    }
    assert_eq!(at, bytes.len());
    assert_eq!(types, ["IHDR", "IDAT", "tEXt", "IEND"]);
}

/// Bitwise CRC-32 (ISO-HDLC), slow and plain, to check the server's table-driven one.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn audio_is_a_wav_audio_block() {
    let result = call("audio");
    assert_eq!(kinds(&result), ["text", "audio"]);
    let audio = &result["content"][1];
    assert_eq!(audio["mimeType"], "audio/wav");
    let bytes = decode(&audio["data"]);
    assert_eq!((&bytes[..4], &bytes[8..12]), (&b"RIFF"[..], &b"WAVE"[..]));
}

#[test]
fn embedded_resources_of_every_shape() {
    let mut server = Server::start();

    let result = server.call("embedded-text", json!({}));
    assert_eq!(kinds(&result), ["resource"]);
    let resource = &result["content"][0]["resource"];
    assert_eq!(resource["uri"], "demo://notes/readme.md");
    assert_eq!(resource["mimeType"], "text/markdown");
    assert!(
        resource["text"]
            .as_str()
            .unwrap()
            .starts_with("# Demo notes")
    );
    assert!(resource.get("blob").is_none());

    let resource = &server.call("embedded-image", json!({}))["content"][0]["resource"];
    assert_eq!(resource["mimeType"], "image/png");
    assert!(decode(&resource["blob"]).starts_with(PNG_SIGNATURE));
    assert!(resource.get("text").is_none());

    let resource = &server.call("pdf", json!({}))["content"][0]["resource"];
    assert_eq!(resource["mimeType"], "application/pdf");
    assert!(decode(&resource["blob"]).starts_with(b"%PDF-"));

    let resource = &server.call("untyped-blob", json!({}))["content"][0]["resource"];
    assert!(resource.get("mimeType").is_none());
    assert!(!decode(&resource["blob"]).is_empty());

    let resource = &server.call("text-and-blob", json!({}))["content"][0]["resource"];
    assert!(resource["text"].is_string());
    assert!(!decode(&resource["blob"]).is_empty());
}

#[test]
fn the_resource_link_names_a_resource_the_server_reads() {
    let mut server = Server::start();
    let result = server.call("resource-link", json!({}));
    assert_eq!(kinds(&result), ["text", "resource_link"]);
    let link = &result["content"][1];
    assert_eq!(link["uri"], "demo://files/report.csv");
    assert_eq!(link["name"], "report.csv");
    assert_eq!(link["mimeType"], "text/csv");
    assert_eq!(link["size"], 1234);
    let read = server.request("resources/read", json!({"uri": link["uri"]}));
    let contents = &read["result"]["contents"][0];
    assert_eq!(contents["uri"], link["uri"]);
    assert_eq!(contents["mimeType"], "text/csv");
    assert_eq!(contents["text"].as_str().unwrap().len(), 1234);
}

#[test]
fn references_carry_their_dispositions() {
    let mut server = Server::start();
    let result = server.call("reference-never", json!({}));
    assert_eq!(kinds(&result), ["resource", "text"]);
    let reference = &result["content"][0];
    assert_eq!(reference["disposition"], "never");
    assert_eq!(reference["sizeBytes"], 4096);
    assert!(reference.get("resource").is_none());
    let uri = reference["uri"].as_str().unwrap();
    assert!(uri.contains("sig=never-show"));
    assert!(result["content"][1]["text"].as_str().unwrap().contains(uri));

    let result = server.call("reference-ref", json!({}));
    assert_eq!(kinds(&result), ["text", "resource"]);
    let reference = &result["content"][1];
    assert_eq!(reference["disposition"], "ref");
    assert_eq!(reference["mimeType"], "application/pdf");
    assert!(reference["uri"].as_str().unwrap().contains("?token="));
    assert!(reference["name"].is_string() && reference["sizeBytes"].is_u64());
}

#[test]
fn over_budget_is_about_300_kb_with_an_image_in_the_middle() {
    let result = call("over-budget");
    assert_eq!(kinds(&result), ["text", "image", "text", "text"]);
    let texts: usize = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|block| block["text"].as_str())
        .map(str::len)
        .sum();
    assert!((250_000..400_000).contains(&texts), "{texts} bytes of text");
    assert!(decode(&result["content"][1]["data"]).starts_with(PNG_SIGNATURE));
    let first = result["content"][0]["text"].as_str().unwrap();
    let second = result["content"][2]["text"].as_str().unwrap();
    assert!(first.starts_with("00001 ") && second.starts_with("01801 "));
    assert!(second.ends_with("of 3600: 128 records, 0 errors\n"));
}

#[test]
fn structured_content_with_and_without_text() {
    let mut server = Server::start();
    let result = server.call("structured", json!({}));
    assert_eq!(kinds(&result), ["text"]);
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert!(result["structuredContent"].is_object());
    assert_eq!(text, result["structuredContent"]);

    let result = server.call("structured-only", json!({}));
    assert_eq!(result["content"], json!([]));
    assert!(result["structuredContent"].is_object());
}

#[test]
fn error_is_an_error_result_with_text() {
    let result = call("error");
    assert_eq!(result["isError"], true);
    assert_eq!(kinds(&result), ["text", "resource"]);
}

#[test]
fn every_content_tool_answers_the_same_every_time() {
    let tools = [
        "text",
        "png",
        "jpeg",
        "gif",
        "webp",
        "svg",
        "png-labelled-jpeg",
        "zip-labelled-png",
        "audio",
        "embedded-text",
        "embedded-image",
        "pdf",
        "untyped-blob",
        "text-and-blob",
        "resource-link",
        "reference-never",
        "reference-ref",
        "structured",
        "structured-only",
        "error",
    ];
    let (mut first, mut second) = (Server::start(), Server::start());
    for tool in tools {
        assert_eq!(
            first.call(tool, json!({})),
            second.call(tool, json!({})),
            "{tool}"
        );
    }
}
