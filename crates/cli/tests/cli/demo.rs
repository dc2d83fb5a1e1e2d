//! `mcpl demo`: the built-in demo server through the scripted loop, on every route.

use serde_json::Value;

use crate::mcpl;

/// The demo server's uris and credentials: none may reach the output.
const HIDDEN: &[&str] = &[
    "demo-secret",
    "never-show",
    "https://files.demo.example",
    "demo://notes/readme.md",
    "demo://files/report.csv",
    "demo://images/image.png",
    "demo://docs/document.pdf",
    "demo://blobs/untyped",
    "demo://notes/both.txt",
];

fn demo_json(route: &str) -> Value {
    let spill = std::env::temp_dir().join(format!("mcpl-cli-demo-{route}-{}", std::process::id()));
    let output = mcpl(
        &[
            "demo",
            "--route",
            route,
            "--json",
            "--spill-dir",
            spill.to_str().unwrap(),
        ],
        b"",
    );
    let _ = std::fs::remove_dir_all(&spill);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    for hidden in HIDDEN {
        assert!(!text.contains(hidden), "{route}: the output shows {hidden}");
    }
    serde_json::from_str(&text).unwrap()
}

fn call<'d>(demo: &'d Value, tool: &str) -> &'d Value {
    demo["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == tool)
        .unwrap_or_else(|| panic!("{tool} not called"))
}

#[test]
fn the_readable_demo_shows_every_tool_and_the_servers_messages() {
    let output = mcpl(&["demo"], b"");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    for tool in [
        "text",
        "png",
        "jpeg",
        "gif",
        "webp",
        "svg",
        "png-labelled-jpeg",
        "zip-labelled-png",
        "huge-image",
        "audio",
        "embedded-text",
        "embedded-image",
        "pdf",
        "untyped-blob",
        "text-and-blob",
        "resource-link",
        "reference-never",
        "reference-ref",
        "over-budget",
        "structured",
        "structured-only",
        "error",
        "push-events",
        "host-answers",
        "fetch_reference",
    ] {
        assert!(
            text.contains(&format!("\n== {tool} (round ")),
            "{tool} missing"
        );
    }
    assert!(
        text.contains("image: image/png, 16x12 px, 167B"),
        "images described, not dumped"
    );
    assert!(
        !text.contains("iVBORw0KGgo"),
        "no base64 in the readable demo"
    );
    assert!(text.contains("push evt-1 from demo:"));
    assert!(text.contains("channel m3 from demo:"));
    assert!(text.contains("system prompt gains: "));
    assert!(text.contains("final answer after "));
    for hidden in HIDDEN {
        assert!(!text.contains(hidden), "the output shows {hidden}");
    }
}

#[test]
fn the_json_demo_shows_what_each_route_takes() {
    for route in [
        "anthropic",
        "openai-chat",
        "openai-responses",
        "gemini",
        "text-only",
    ] {
        let demo = demo_json(route);
        assert_eq!(demo["route"], route);
        assert_eq!(
            demo["outcome"]["error"],
            Value::Null,
            "{route}: {}",
            demo["outcome"]
        );
        // Kinds that never go native read the same on every route.
        assert_eq!(
            call(&demo, "zip-labelled-png")["stored"],
            "[Image not shown: its bytes are not PNG, JPEG, GIF or WebP (application/zip, 122B).]"
        );
        // Anthropic takes 5 MiB per image; the OpenAI and Gemini routes declare larger limits.
        let huge = call(&demo, "huge-image")["stored"].as_str().unwrap();
        if matches!(route, "anthropic" | "text-only") {
            assert!(
                huge.ends_with(
                    "[Image not shown: ~6.0MB is over the 5.0MB this host sends inline per image.]"
                ),
                "{route}: {huge}"
            );
        } else {
            assert!(
                huge.contains("\n[image: image/png, ~6.0MB, ref img_"),
                "{route}: {huge}"
            );
        }
        assert_eq!(call(&demo, "error")["is_error"], true);
        let over = call(&demo, "over-budget");
        assert!(
            over["estimated_tokens"].as_u64().unwrap() <= 12_500,
            "{route}"
        );
        assert!(over["spill"]["path"].is_string(), "{route}: spilled");
        // The PNG labelled JPEG goes as what its bytes are, where the route takes images.
        let live = call(&demo, "png-labelled-jpeg")["live"].to_string();
        let follow_up = call(&demo, "png-labelled-jpeg")["follow_up"].to_string();
        match route {
            "text-only" => {
                assert!(!live.contains("iVBORw0KGgo") && !follow_up.contains("iVBORw0KGgo"));
            }
            "openai-chat" => {
                assert!(!live.contains("iVBORw0KGgo"), "tool messages are text only");
                assert!(
                    follow_up.contains("data:image/png;base64,iVBORw0KGgo"),
                    "{follow_up}"
                );
            }
            _ => assert!(
                live.contains("image/png") && live.contains("iVBORw0KGgo"),
                "{route}: {live}"
            ),
        }
    }
}
