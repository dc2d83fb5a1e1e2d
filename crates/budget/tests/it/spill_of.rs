//! A spill made from a result's copies (`write_spill_of`) writes exactly what a second pass over
//! the result (`write_spill`) writes, and skips that pass only where its text is the stored copy
//! with each payload's attachment line in place: no data a spill shows that the stored copy
//! leaves out. A url found for the session no longer stops it: the copies are made by a pass that
//! learned nothing (decision 0104).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_budget::{
    LocalSpillStore, MAX_ATTACHMENT_FILES, Manifest, PricedRoute, REST_FILE, SpillStore,
    write_spill, write_spill_of,
};
use mcpl_lanes::ToolResult;
use proptest::prelude::*;
use rstest::rstest;
use serde_json::{Value, json};

use crate::{TempDir, fit, with_projector};

const TINY_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==";

/// Projects `result` with a fresh host, then spills it the one way or the other; the stored
/// copy, whether it spills as stored, and the spill text and manifest as written.
fn project_then_spill(result: &Value, from_copies: bool) -> (String, bool, String) {
    let (stored, flag, text, _) = project_then_spill_whole(result, from_copies);
    (stored, flag, text)
}

/// [`project_then_spill`], with the manifest as written too.
fn project_then_spill_whole(result: &Value, from_copies: bool) -> (String, bool, String, String) {
    let spilled = project_then_spill_with_files(result, from_copies, MAX_ATTACHMENT_FILES);
    (
        spilled.stored,
        spilled.spills_as_stored,
        spilled.text,
        spilled.manifest,
    )
}

/// What [`project_then_spill_with_files`] gives: the stored copy, whether it spills as stored,
/// the spill text and manifest as written, and its rest file when it has one.
struct Spilled {
    stored: String,
    spills_as_stored: bool,
    text: String,
    manifest: String,
    rest: Option<String>,
    /// Each file of the spill's folder, by name, with its bytes.
    files: Vec<(String, Vec<u8>)>,
}

/// [`project_then_spill_whole`] into a store that writes at most `files` attachment files, with
/// the rest file too.
fn project_then_spill_with_files(result: &Value, from_copies: bool, files: usize) -> Spilled {
    let dir = TempDir::new("spill-of");
    let mut store = LocalSpillStore::new(&dir.0)
        .unwrap()
        .with_attachment_files(files);
    let read = mcpl_lanes::ResultView::of_value(result);
    let result = ToolResult::from_view(&read);
    let (copies, spill) = with_projector(&PricedRoute::ANTHROPIC, |projector| {
        let copies = projector.tool_result(&result);
        let spill = match from_copies {
            true => write_spill_of(projector, &result, &copies, &mut store),
            false => write_spill(projector, &result, &mut store),
        };
        (copies, spill.unwrap())
    });
    // Each spill has its own folder and id; what differs besides them counts.
    let conversation = store.conversation().to_owned();
    let same = |text: String| {
        text.replace(&dir.0.display().to_string(), "DIR")
            .replace(&spill.id.to_string(), "ID")
            .replace(&conversation, "CONVERSATION")
    };
    let text = same(std::fs::read_to_string(&spill.path).unwrap());
    let manifest = std::fs::read_to_string(dir.0.join(spill.id.manifest_name())).unwrap();
    let read: Manifest = serde_json::from_str(&manifest).unwrap();
    assert_eq!(read.bytes, std::fs::metadata(&spill.path).unwrap().len());
    assert_eq!(read.attachments.len(), spill.attachments.len());
    // A file for each attachment the spill names, and the rest file when a line names it.
    let folder = dir.0.join(spill.id.to_string());
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&folder)
        .map(|entries| {
            entries
                .map(|entry| {
                    let entry = entry.unwrap();
                    let name = entry.file_name().to_string_lossy().into_owned();
                    (name, std::fs::read(entry.path()).unwrap())
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let rest = std::fs::read_to_string(folder.join(REST_FILE)).ok();
    assert_eq!(
        files.len(),
        spill.attachments.len() + usize::from(rest.is_some())
    );
    assert_eq!(
        rest.is_some(),
        text.contains(&format!("/{REST_FILE}, line 1 ("))
    );
    // The text's length counts the folder's path, whose length differs between folders.
    let manifest = same(manifest).replace(
        &format!(",\"bytes\":{}}}", read.bytes),
        &format!(",\"bytes\":{}}}", text.len()),
    );
    Spilled {
        stored: copies.stored.into_owned(),
        spills_as_stored: copies.spills_as_stored,
        text,
        manifest,
        rest,
        files,
    }
}

fn content(blocks: Value) -> Value {
    json!({ "content": blocks })
}

#[rstest]
#[case::texts(content(json!([{"type": "text", "text": "one"}, {"type": "text", "text": "two"}])), true)]
#[case::empty_content(content(json!([])), true)]
#[case::null_content(json!({"content": null}), true)]
#[case::links_and_embedded(content(json!([
    {"type": "text", "text": "see https://h.example/r/1?sig=abc for it"},
    {"type": "resource", "resource": {"uri": "https://h.example/r/1?sig=abc", "mimeType": "text/plain", "text": "body"}},
    {"type": "resource_link", "uri": "https://h.example/l/2", "name": "file2.csv", "mimeType": "text/csv"},
])), true)]
#[case::a_claimed_url_in_text_and_a_plain_one(content(json!([
    {"type": "text", "text": "https://h.example/r/1?sig=abc, or https://plain.example/page"},
    {"type": "resource_link", "uri": "https://h.example/r/1?sig=abc"},
])), true)]
#[case::an_invalid_block(content(json!([{"type": "text"}, 3, "loose"])), true)]
#[case::an_image_with_no_data(content(json!([{"type": "image", "data": "", "mimeType": "image/png"}])), true)]
#[case::an_image(content(json!([{"type": "text", "text": "a"}, {"type": "image", "data": TINY_PNG, "mimeType": "image/png"}])), true)]
#[case::a_blob(content(json!([{"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AAEC", "mimeType": "application/octet-stream"}}])), true)]
#[case::audio_data_that_is_not_base64(content(json!([{"type": "audio", "data": "not base64!", "mimeType": "audio/wav"}])), true)]
#[case::structured_beside_text(json!({"content": [{"type": "text", "text": "t"}], "structuredContent": {"a": 1}}), false)]
#[case::structured_alone(json!({"structuredContent": {"a": [1, 2]}}), true)]
#[case::structured_holding_an_image(json!({"structuredContent": {"a": {"type": "image", "data": TINY_PNG, "mimeType": "image/png"}}}), false)]
#[case::data_content(json!({"content": {"type": "image", "data": TINY_PNG, "mimeType": "image/png"}, "x": 1}), false)]
#[case::a_credential_shaped_url_in_text(content(json!([{"type": "text", "text": "go to https://x.example/a?token=s3cr3t-value now"}])), true)]
#[case::a_credential_shaped_url_in_a_label(content(json!([{"type": "resource_link", "uri": "https://h.example/l/3", "name": "https://y.example/?api_key=k3y-value-123"}])), true)]
fn a_spill_of_the_copies_is_the_spill_of_a_second_pass(
    #[case] result: Value,
    #[case] spills_as_stored: bool,
) {
    let (stored, flag, of_copies, manifest) = project_then_spill_whole(&result, true);
    let (_, _, second_pass, second_manifest) = project_then_spill_whole(&result, false);
    assert_eq!(flag, spills_as_stored);
    assert_eq!(of_copies, second_pass);
    assert_eq!(manifest, second_manifest);
    // With no payload to attach, the spill is the stored copy itself.
    if spills_as_stored && !of_copies.contains("[attachment: ") {
        assert_eq!(of_copies, stored);
    }
}

/// A server can send a million payloads of a few bytes in one result; each was a file, so
/// one result took a million inodes and most of a minute. A spill writes at most its store's
/// `attachment_files` files (`MAX_ATTACHMENT_FILES` at most; a few here, for speed). The
/// payloads after them go into one more file, `REST_FILE`, a line each: the base64 of what its
/// own file would hold, decoded, and redacted when it is text. Each one's line in the text names
/// that file and the line. Both ways of spilling write the same text and manifest.
#[test]
fn a_spill_writes_at_most_its_files_and_the_payloads_after_them_into_one_more() {
    const FILES: usize = 4;
    let hidden_uri = "https://h.example/r/1?sig=abc";
    let told = format!("see {hidden_uri} now");
    let mut blocks = vec![json!({"type": "resource", "resource": {
        "uri": hidden_uri, "mimeType": "text/plain", "text": "body"}})];
    let image = json!({"type": "image", "data": TINY_PNG, "mimeType": "image/png"});
    blocks.extend(std::iter::repeat_n(image, FILES + 2));
    blocks.push(json!({"type": "text", "text": "the last text"}));
    blocks.push(json!({"type": "resource", "resource": {
        "uri": "file:///told.txt", "mimeType": "text/plain", "blob": STANDARD.encode(&told)}}));
    let result = content(Value::Array(blocks));

    let spilled = project_then_spill_with_files(&result, true, FILES);
    let second_pass = project_then_spill_with_files(&result, false, FILES);
    assert!(
        spilled.spills_as_stored,
        "a result of blocks spills as stored"
    );
    assert!(spilled.text == second_pass.text && spilled.manifest == second_pass.manifest);
    assert_eq!(spilled.rest, second_pass.rest);
    let of_copies = spilled.text;
    let manifest: Manifest = serde_json::from_str(&spilled.manifest).unwrap();
    assert_eq!(manifest.attachments.len(), FILES);
    assert!(of_copies.contains(&format!("[attachment: DIR/ID/{FILES}.png (image/png, ")));
    for (line, what) in [
        (1, "image/png, 67B"),
        (2, "image/png, 67B"),
        (3, "text/plain, "),
    ] {
        let named = format!("[attachment: DIR/ID/{REST_FILE}, line {line} ({what}");
        assert!(of_copies.contains(&named), "{named} in {of_copies}");
    }
    assert!(!of_copies.contains(", line 4 ("));
    assert!(of_copies.contains("the last text"));

    // The rest file itself.
    let rest = spilled.rest.expect("a rest file");
    let lines: Vec<Vec<u8>> = rest
        .lines()
        .map(|line| STANDARD.decode(line).unwrap())
        .collect();
    let png = STANDARD.decode(TINY_PNG).unwrap();
    assert_eq!(lines[..2], [png.clone(), png]);
    assert_eq!(lines.len(), 3);
    let kept = String::from_utf8(lines[2].clone()).unwrap();
    assert!(kept.starts_with("see ") && kept.ends_with(" now"), "{kept}");
    assert!(!kept.contains("sig=abc"), "{kept}");
}

/// More references than the registry keeps: a second pass gave every one a new id (the first
/// pass's oldest were evicted before it reached them), so the stored copy named ids that no
/// longer resolved. The spill now is the stored copy, and its newest ids resolve.
#[rstest]
fn a_spill_names_the_ids_the_stored_copy_names_past_the_registrys_capacity(
    #[values(false, true)] with_an_image: bool,
) {
    let mut blocks: Vec<Value> = (0..2_500)
        .map(|i| {
            json!({"type": "resource_link", "uri": format!("https://h.example/l/{i}"),
                   "name": format!("file{i}.csv"), "mimeType": "text/csv"})
        })
        .collect();
    if with_an_image {
        blocks.insert(
            0,
            json!({"type": "image", "data": TINY_PNG, "mimeType": "image/png"}),
        );
    }
    let result = content(Value::Array(blocks));
    let (stored, flag, spilled) = project_then_spill(&result, true);
    assert!(flag);
    // The stored copy, the image's placeholder aside.
    let (stored_tail, spilled_tail) = match with_an_image {
        true => (
            stored.split_once('\n').unwrap().1,
            spilled.split_once('\n').unwrap().1,
        ),
        false => (stored.as_str(), spilled.as_str()),
    };
    assert_eq!(spilled_tail, stored_tail);

    let dir = TempDir::new("spill-of-ids");
    let mut store = LocalSpillStore::new(&dir.0).unwrap();
    let fitted = fit(
        &result,
        &PricedRoute::ANTHROPIC,
        2_000,
        Some(&mut store as &mut dyn SpillStore),
    );
    let spill = fitted.spill.as_ref().expect("a spill");
    let text = std::fs::read_to_string(&spill.path).unwrap();
    // The fitted copy keeps the newest links; each id it names is one the spill names too.
    let ids = |text: &str| -> Vec<String> {
        text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|word| word.starts_with("ref_"))
            .map(str::to_owned)
            .collect()
    };
    let kept = ids(&fitted.copies.stored);
    assert!(kept.len() > 10, "{}", fitted.copies.stored);
    let spilled = ids(&text);
    assert_eq!(spilled.len(), 2_500);
    for id in &kept {
        assert!(spilled.contains(id), "{id} is not in the spill");
    }
}

/// A block a spilled result may hold: texts (some with a uri the result hides), payloads of
/// every kind (sound, not base64, empty, nested in a resource) and links.
fn block() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[a-z ]{0,30}".prop_map(|text| json!({"type": "text", "text": text})),
        Just(json!({"type": "text", "text": "see https://h.example/r/1?sig=abc"})),
        Just(json!({"type": "image", "data": TINY_PNG, "mimeType": "image/png"})),
        Just(json!({"type": "image", "data": TINY_PNG, "mimeType": "image/jpeg"})),
        Just(json!({"type": "image", "data": "", "mimeType": "image/png"})),
        "[a-z!]{1,12}".prop_map(|data| json!({"type": "audio", "data": data, "mimeType": "audio/wav"})),
        "[A-Za-z0-9]{0,6}".prop_map(|name| json!({"type": "resource", "resource": {
            "uri": format!("file:///{name}.bin"), "blob": "AAEC", "mimeType": "application/x-thing"}})),
        prop::collection::vec(any::<u8>(), 1..40).prop_map(|bytes| json!({"type": "resource",
            "resource": {"uri": "file:///b.bin", "blob": STANDARD.encode(bytes),
            "mimeType": "application/octet-stream"}})),
        Just(json!({"type": "resource", "resource": {"uri": "https://h.example/r/1?sig=abc",
            "mimeType": "text/plain", "text": "body"}})),
        "[a-z]{1,8}".prop_map(|name| json!({"type": "resource_link",
            "uri": format!("https://h.example/l/{name}"), "name": name})),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The spill written from the copies, its text streamed from the stored copy with each line
    /// made again, is byte for byte the spill a second pass writes whole: text and manifest,
    /// into a store of any few attachment files, so payloads past them go into its rest file,
    /// the same in both.
    #[test]
    fn a_streamed_spill_is_the_spill_of_a_second_pass(
        blocks in prop::collection::vec(block(), 0..24),
        files in prop_oneof![Just(MAX_ATTACHMENT_FILES), 0..4usize],
    ) {
        let result = content(Value::Array(blocks));
        let streamed = project_then_spill_with_files(&result, true, files);
        let second_pass = project_then_spill_with_files(&result, false, files);
        prop_assert!(streamed.spills_as_stored);
        prop_assert_eq!(streamed.text, second_pass.text);
        prop_assert_eq!(streamed.manifest, second_pass.manifest);
        prop_assert_eq!(streamed.rest, second_pass.rest);
        // Each payload in its own file, the same bytes under the same name.
        prop_assert_eq!(streamed.files, second_pass.files);
    }
}
