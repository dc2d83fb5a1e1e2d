//! The `mcpl` command's contract (`docs/cli.md`), checked by running the built binary.

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::sync::LazyLock;

use rstest::rstest;
use serde_json::{Value, json};

pub(crate) fn mcpl(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcpl"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the mcpl binary runs");
    // A command that fails before reading its input closes the pipe; that is not a test failure.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

use mcpl_testkit::workspace_root;

fn fixture_base64(name: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(mcpl_testkit::fixture(name))
}

fn classify_stdin(document: &Value) -> Vec<Value> {
    let output = mcpl(&["classify"], document.to_string().as_bytes());
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(output.stderr.is_empty(), "{output:?}");
    match serde_json::from_slice(&output.stdout).unwrap() {
        Value::Array(items) => items,
        other => panic!("not an array: {other}"),
    }
}

/// A fixture and what its bytes must classify as: sniffed type, renderable, dimensions.
type Expected = (&'static str, Option<&'static str>, bool, Option<(u64, u64)>);

/// Every real-encoder fixture, sent as an image block labelled `image/png` whatever it is: the
/// bytes decide the type, renderability and dimensions, as the spec says.
#[test]
fn classify_answers_for_every_fixture_by_its_bytes() {
    let expected: &[Expected] = &[
        ("image.png", Some("image/png"), true, Some((16, 12))),
        ("animated.apng", Some("image/png"), true, Some((16, 12))),
        ("baseline.jpg", Some("image/jpeg"), true, Some((16, 12))),
        ("progressive.jpg", Some("image/jpeg"), true, Some((16, 12))),
        ("cmyk.jpg", Some("image/jpeg"), true, Some((16, 12))),
        ("exif-rotated.jpg", Some("image/jpeg"), true, Some((20, 10))),
        ("icc-60k.jpg", Some("image/jpeg"), true, Some((24, 18))),
        ("exif-50k.jpg", Some("image/jpeg"), true, Some((30, 20))),
        ("static.gif", Some("image/gif"), true, Some((16, 12))),
        ("animated.gif", Some("image/gif"), true, Some((16, 12))),
        ("lossy.webp", Some("image/webp"), true, Some((16, 12))),
        ("lossless.webp", Some("image/webp"), true, Some((16, 12))),
        ("alpha.webp", Some("image/webp"), true, Some((16, 12))),
        ("image.tiff", Some("image/tiff"), false, None),
        ("image.bmp", Some("image/bmp"), false, None),
        ("image.avif", Some("image/avif"), false, None),
        ("image.heic", Some("image/heic"), false, None),
        ("document.pdf", Some("application/pdf"), false, None),
        ("archive.zip", Some("application/zip"), false, None),
        ("text.gz", Some("application/gzip"), false, None),
        ("tone.wav", Some("audio/wav"), false, None),
        ("tone.mp3", Some("audio/mpeg"), false, None),
        ("tone-id3.mp3", Some("audio/mpeg"), false, None),
        ("tone.ogg", Some("audio/ogg"), false, None),
        ("tone.flac", Some("audio/flac"), false, None),
        ("plain.svg", Some("image/svg+xml"), false, None),
        ("bom.svg", Some("image/svg+xml"), false, None),
        ("note.txt", None, false, None),
        ("truncated.png", Some("image/png"), false, Some((16, 12))),
        ("header-only.png", Some("image/png"), false, Some((16, 12))),
        ("empty.bin", None, false, None),
    ];
    let blocks: Vec<Value> = expected
        .iter()
        .map(|(name, ..)| json!({"type": "image", "mimeType": "image/png", "data": fixture_base64(name)}))
        .collect();
    let answers = classify_stdin(&Value::Array(blocks));
    assert_eq!(answers.len(), expected.len());
    for ((name, sniffed, renderable, dimensions), answer) in expected.iter().zip(&answers) {
        assert_eq!(answer["kind"], "inline-image", "{name}");
        assert_eq!(answer["claimed_type"], "image/png", "{name}");
        assert_eq!(answer["sniffed_type"].as_str(), *sniffed, "{name}");
        assert_eq!(answer["renderable"], *renderable, "{name}");
        let size = mcpl_testkit::fixture(name).len();
        assert_eq!(answer["decoded_bytes"], size, "{name}");
        let found = answer["width"].as_u64().zip(answer["height"].as_u64());
        assert_eq!(found, *dimensions, "{name}");
    }
}

#[test]
fn classify_reads_the_bundled_example_and_every_input_shape() {
    let example = workspace_root().join("examples/tool-result.json");
    let output = mcpl(&["classify", example.to_str().unwrap()], b"");
    assert_eq!(output.status.code(), Some(0));
    let answers: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    let kinds: Vec<&str> = answers
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "text",
            "inline-image",
            "inline-image",
            "inline-image",
            "inline-audio",
            "embedded-text",
            "embedded-blob",
            "reference",
            "reference",
            "invalid"
        ]
    );
    // Classification output never carries a uri.
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        !text.contains("s3cret") && !text.contains("file:///"),
        "{text}"
    );

    // `-` is standard input too.
    let text = json!({"type": "text", "text": "hi"});
    let output = mcpl(&["classify", "-"], json!([text]).to_string().as_bytes());
    assert_eq!(output.status.code(), Some(0));
}

#[rstest]
#[case::blocks(json!([{"type": "text", "text": "hi"}]))]
#[case::tool_result(json!({"content": [{"type": "text", "text": "hi"}], "isError": false}))]
#[case::push_params(json!({"payload": {"content": [{"type": "text", "text": "hi"}]}}))]
#[case::response(json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi"}]}}))]
#[case::notification(json!({"jsonrpc": "2.0", "method": "push/event",
    "params": {"payload": {"content": [{"type": "text", "text": "hi"}]}}}))]
#[case::injection(json!({"content": "an injection as a plain string"}))]
#[case::one_block(json!({"type": "text", "text": "hi"}))]
fn classify_reads_every_input_shape(#[case] document: Value) {
    let answers = classify_stdin(&document);
    assert_eq!(answers.len(), 1, "{document}");
    assert_eq!(answers[0]["kind"], "text", "{document}");
}

/// Arrays nested 100,000 deep.
static TOO_DEEP: LazyLock<Vec<u8>> =
    LazyLock::new(|| format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes());

/// Unusable input exits 2 with one `mcpl: ` line on standard error, never a panic.
#[rstest]
#[case::empty(b"", "mcpl: stdin: empty input")]
#[case::blank(b" \n\t ", "mcpl: stdin: empty input")]
#[case::not_json(b"hello", "mcpl: stdin: not JSON: expected value at line 1 column 1")]
#[case::truncated(b"[{\"type\": \"te", "mcpl: stdin: not JSON: EOF while parsing")]
#[case::trailing(b"[] []", "mcpl: stdin: not JSON: trailing characters")]
#[case::too_deep(
    &TOO_DEEP,
    "mcpl: stdin: JSON nested too deeply: recursion limit exceeded"
)]
#[case::a_number(
    b"42",
    "mcpl: stdin: no content blocks found: the document is a number"
)]
#[case::empty_object(
    b"{}",
    "mcpl: stdin: no content blocks found: the document is an empty object"
)]
#[case::no_content(
    b"{\"isError\": true}",
    "mcpl: stdin: no content blocks found: an object with keys isError"
)]
#[case::content_not_array(b"{\"content\": 5}", "mcpl: stdin: no content blocks found")]
#[case::invalid_utf8(b"[\"\xff\"]", "mcpl: stdin: not JSON: invalid unicode code point")]
fn unusable_input_exits_2_with_one_line(#[case] input: &[u8], #[case] message: &str) {
    let output = mcpl(&["classify"], input);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with(message), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[test]
fn a_missing_file_is_a_failure_not_bad_input() {
    let output = mcpl(&["classify", "/nonexistent/input.json"], b"");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr.starts_with("mcpl: /nonexistent/input.json: cannot read:"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1);
}

/// A route name is typed by a person: every command that takes `--route` refuses a name no
/// route has, naming the routes, and never falls back to another route. A model spec's kind is
/// a route name too, and a route without a backend is not a model.
#[test]
fn an_unknown_route_is_refused_where_it_is_typed() {
    let config = std::env::temp_dir().join(format!("mcpl-cli-route-{}.json", std::process::id()));
    std::fs::write(&config, r#"{"mcpServers": {}}"#).unwrap();
    let config = config.to_str().unwrap();
    for args in [
        vec!["project", "--route", "nowhere"],
        vec!["demo", "--route", "Anthropic"],
        vec!["run", "--config", config, "--route", "openai"],
    ] {
        let output = mcpl(&args, b"[]");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        for id in mcpl_lanes::RouteId::ALL {
            assert!(stderr.contains(id.name()), "{args:?}: {stderr}");
        }
        assert!(output.stdout.is_empty(), "{args:?}");
    }
    for model in ["nowhere:m", "text-only:m"] {
        let output = mcpl(&["run", "--config", config, "--model", model], b"");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(2), "{model}: {stderr}");
        assert!(
            stderr.starts_with(&format!(
                "mcpl: unknown model {model}; models: scripted:FILE, anthropic:MODEL, \
                 openai-chat:MODEL, openai-responses:MODEL, gemini:MODEL"
            )),
            "{model}: {stderr}"
        );
    }
    let _ = std::fs::remove_file(config);
}

mod conformance;
mod demo;
#[cfg(unix)]
mod environment;
mod leaks;
mod messages;
mod project;
mod read_result;
mod report;
mod run;
#[cfg(feature = "tls")]
mod tls;
mod toolset;
