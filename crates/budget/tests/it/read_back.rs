//! Reading a spill back by id: the parts add up to the spill text to its last byte, an image
//! comes back as an image block after its line, and a spill is read only in the conversation
//! that made it.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_budget::{
    Bound, LocalSpillStore, PricedRoute, Pricer, ReadBackError, SpillNotice, read_back,
};
use serde_json::{Value, json};

use crate::{TempDir, fit};

fn pricer(route: &PricedRoute) -> Pricer<'_> {
    Pricer::new(&Bound, route)
}

/// Reads a spill from `offset` to its end in parts of `max_tokens`; returns the parts.
fn read_all(store: &mut LocalSpillStore, id: &str, max_tokens: u64) -> Vec<mcpl_budget::ReadBack> {
    let mut parts = Vec::new();
    let mut offset = 0;
    loop {
        let part = read_back(
            store,
            id,
            offset,
            max_tokens,
            pricer(&PricedRoute::ANTHROPIC),
        )
        .unwrap_or_else(|error| panic!("{error}"));
        assert!(part.end > offset || part.end == part.total, "no progress");
        offset = part.end;
        let done = part.end == part.total;
        parts.push(part);
        if done {
            return parts;
        }
    }
}

fn texts(content: &[Value]) -> Vec<&str> {
    content
        .iter()
        .filter_map(|block| block["text"].as_str())
        .collect()
}

#[test]
fn the_notice_names_the_spill_by_id_and_the_parts_add_up_to_the_last_byte() {
    let dir = TempDir::new("read-back");
    // Many lines, some of several bytes a character, so parts end between code points.
    let text: String = (0..3000)
        .map(|i| format!("line {i}: ünïcödé ✓ 日本語 {}\n", "x".repeat(i % 17)))
        .collect();
    let result = json!({"content": [{"type": "text", "text": text}]});
    let mut store = LocalSpillStore::new(&dir.0)
        .unwrap()
        .with_notice(SpillNotice::ReadResult);
    let fitted = fit(&result, &PricedRoute::ANTHROPIC, 2_000, Some(&mut store));
    let spill = fitted.spill.expect("a spill");
    let id = spill.id.as_str();
    let notice = fitted
        .copies
        .stored
        .lines()
        .find(|line| line.starts_with("[… "))
        .expect("a notice");
    assert!(
        notice.ends_with(&format!(
            " images); read the rest with read_result(\"{id}\")]"
        )),
        "{notice}"
    );
    assert!(!notice.contains(&dir.0.display().to_string()), "{notice}");
    let parts = read_all(&mut store, id, 3_000);
    assert!(parts.len() > 3, "{} parts", parts.len());
    let mut whole = String::new();
    for part in &parts {
        assert!(part.text.len() < text.len());
        let shown = texts(&part.content);
        let (footer, body) = shown.split_last().unwrap();
        assert_eq!(body.concat(), part.text);
        let priced: u64 = shown
            .iter()
            .map(|t| mcpl_budget::TokenEstimator::count(&Bound, t))
            .sum();
        assert!(priced <= 3_000, "{priced} tokens");
        if part.end < part.total {
            assert_eq!(
                *footer,
                format!(
                    "[read_result: bytes {}–{} of {}; continue with read_result(\"{id}\", offset={})]",
                    part.start, part.end, part.total, part.end
                )
            );
        } else {
            assert_eq!(
                *footer,
                format!(
                    "[read_result: bytes {}–{} of {}; that is the end of {id}]",
                    part.start, part.end, part.total
                )
            );
        }
        whole.push_str(&part.text);
    }
    assert_eq!(
        whole.as_bytes(),
        std::fs::read(&spill.path).unwrap().as_slice()
    );
    assert_eq!(whole, text);
}

#[test]
fn an_image_comes_back_as_an_image_block_after_its_line() {
    let dir = TempDir::new("read-back-image");
    let png = STANDARD.encode(mcpl_testkit::fixture("image.png"));
    let result = json!({"content": [
        {"type": "text", "text": "before\n".repeat(2000)},
        {"type": "image", "data": png, "mimeType": "image/png"},
        {"type": "text", "text": "after\n".repeat(2000)},
    ]});
    let mut store = LocalSpillStore::new(&dir.0)
        .unwrap()
        .with_notice(SpillNotice::ReadResult);
    let spill = fit(&result, &PricedRoute::ANTHROPIC, 500, Some(&mut store))
        .spill
        .expect("a spill");
    let parts = read_all(&mut store, spill.id.as_str(), 100_000);
    assert_eq!(parts.len(), 1);
    let content = &parts[0].content;
    let at = content
        .iter()
        .position(|block| block["type"] == "image")
        .expect("an image block");
    assert_eq!(content[at]["data"], json!(png));
    assert_eq!(content[at]["mimeType"], "image/png");
    let line = content[at - 1]["text"].as_str().unwrap();
    assert!(
        line.ends_with(&format!(
            "[attachment: {}/1.png (image/png, 167B)]",
            spill.id
        )),
        "{line}"
    );
    // The text part still adds up to the spill text.
    assert_eq!(parts[0].text, std::fs::read_to_string(&spill.path).unwrap());
}

/// Each attachment's line in the manifest is the line in the spill text, in order, in both
/// wordings: for bytes of a known type, for a type only the server claimed, for none, and for
/// data that is not base64. Only the known type is recorded as a media type.
#[test]
fn the_manifest_s_lines_are_the_spill_text_s_lines() {
    for notice in [SpillNotice::Path, SpillNotice::ReadResult] {
        let dir = TempDir::new("manifest-lines");
        let png = STANDARD.encode(mcpl_testkit::fixture("image.png"));
        let unknown = STANDARD.encode([7u8, 1, 2, 3, 4, 5, 6, 7, 8]);
        let result = json!({"content": [
            {"type": "text", "text": "before\n".repeat(2000)},
            {"type": "image", "data": png, "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a.bin", "blob": unknown,
                "mimeType": "application/x-thing"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": unknown}},
            {"type": "image", "data": "not base64 at all!", "mimeType": "image/png"},
            {"type": "text", "text": "after\n".repeat(2000)},
        ]});
        let mut store = LocalSpillStore::new(&dir.0).unwrap().with_notice(notice);
        let spill = fit(&result, &PricedRoute::ANTHROPIC, 500, Some(&mut store))
            .spill
            .expect("a spill");
        let text = std::fs::read_to_string(&spill.path).unwrap();
        let manifest = std::fs::read(dir.0.join(spill.id.manifest_name())).unwrap();
        let manifest: mcpl_budget::Manifest = serde_json::from_slice(&manifest).unwrap();
        assert_eq!(manifest.bytes, text.len() as u64);
        assert_eq!(manifest.attachments.len(), spill.attachments.len());
        let mut from = 0;
        for (at, attachment) in manifest.attachments.iter().enumerate() {
            let found = text[from..].find(&attachment.line).map(|i| from + i);
            let found = found.unwrap_or_else(|| panic!("{} in the text", attachment.line));
            from = found + attachment.line.len();
            let place = match notice {
                SpillNotice::Path => spill.attachments[at].clone(),
                _ => attachment.name.clone(),
            };
            assert!(
                attachment
                    .line
                    .starts_with(&format!("[attachment: {place} (")),
                "{}",
                attachment.line
            );
        }
        let lines: Vec<&str> = manifest
            .attachments
            .iter()
            .map(|a| a.line.as_str())
            .collect();
        assert!(lines[0].contains("(image/png, 167B)"), "{lines:?}");
        assert!(lines[1].contains("(application/x-thing, 9B)"), "{lines:?}");
        assert!(lines[2].contains("(unknown type, 9B)"), "{lines:?}");
        assert!(
            lines[3].contains("(not valid base64, kept as sent, 18B)"),
            "{lines:?}"
        );
        let types: Vec<Option<&str>> = manifest
            .attachments
            .iter()
            .map(|a| a.media_type.as_deref())
            .collect();
        assert_eq!(types, [Some("image/png"), None, None, None]);
    }
}

#[test]
fn a_spill_is_read_only_in_the_conversation_that_made_it() {
    let dir = TempDir::new("read-back-other");
    let result = json!({"content": [{"type": "text", "text": "word ".repeat(5000)}]});
    let mut mine = LocalSpillStore::new(&dir.0)
        .unwrap()
        .with_conversation("conversation-a");
    let spill = fit(&result, &PricedRoute::ANTHROPIC, 500, Some(&mut mine))
        .spill
        .expect("a spill");
    let id = spill.id.as_str();
    let route = PricedRoute::ANTHROPIC;
    let mut theirs = LocalSpillStore::new(&dir.0)
        .unwrap()
        .with_conversation("conversation-b");
    let error = read_back(&mut theirs, id, 0, 1_000, pricer(&route)).unwrap_err();
    assert!(matches!(error, ReadBackError::OtherConversation(_)));
    assert_eq!(
        error.to_string(),
        format!("read_result: spill {id} was made in another conversation; it cannot be read here")
    );
    // The same conversation in another store over the same folder (another process) reads it.
    let mut again = LocalSpillStore::new(&dir.0)
        .unwrap()
        .with_conversation("conversation-a");
    assert!(read_back(&mut again, id, 0, 1_000, pricer(&route)).is_ok());
}

#[test]
fn odd_ids_and_offsets_are_refused_in_words() {
    let dir = TempDir::new("read-back-odd");
    let mut store = LocalSpillStore::new(&dir.0).unwrap();
    let route = PricedRoute::ANTHROPIC;
    let error = |store: &mut LocalSpillStore, id: &str, offset| {
        read_back(store, id, offset, 1_000, pricer(&route))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        error(&mut store, "../etc/passwd", 0),
        r#"read_result: "../etc/passwd" is not a spill id (an id is spill_ and 28 letters)"#
    );
    let unknown = "spill_aaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    assert_eq!(
        error(&mut store, unknown, 0),
        format!(
            "read_result: there is no spill {unknown} (it was never written, or it has expired)"
        )
    );
    let result = json!({"content": [{"type": "text", "text": "word ".repeat(5000)}]});
    let spill = fit(&result, &PricedRoute::ANTHROPIC, 500, Some(&mut store))
        .spill
        .expect("a spill");
    let id = spill.id.as_str();
    assert_eq!(
        error(&mut store, id, 25_001),
        format!("read_result: offset 25001 is past the end of spill {id} (25000 bytes)")
    );
    // At the very end: nothing more, and the footer says it is the end.
    let end = read_back(&mut store, id, 25_000, 1_000, pricer(&route)).unwrap();
    assert_eq!(end.text, "");
    assert_eq!(
        texts(&end.content),
        [format!("[read_result: bytes 25000–25000 of 25000; that is the end of {id}]").as_str()]
    );
}

#[test]
fn spill_ids_are_random_and_well_formed() {
    let ids: std::collections::BTreeSet<String> = (0..1000)
        .map(|_| mcpl_budget::SpillId::random().unwrap().as_str().to_owned())
        .collect();
    assert_eq!(ids.len(), 1000);
    for id in &ids {
        assert!(mcpl_budget::SpillId::parse(id).is_some(), "{id}");
        assert_eq!(id.len(), "spill_".len() + 28);
    }
}

#[test]
fn old_spill_files_are_removed_and_others_kept() {
    let dir = TempDir::new("read-back-gc");
    let mut store = LocalSpillStore::new(&dir.0).unwrap();
    let result = json!({"content": [{"type": "text", "text": "word ".repeat(5000)}]});
    fit(&result, &PricedRoute::ANTHROPIC, 500, Some(&mut store))
        .spill
        .expect("a spill");
    std::fs::write(dir.0.join("notes.txt"), "not a spill").unwrap();
    use mcpl_budget::SpillStore as _;
    assert_eq!(
        store
            .remove_older_than(std::time::Duration::from_secs(3600))
            .unwrap(),
        0
    );
    assert_eq!(
        store.remove_older_than(std::time::Duration::ZERO).unwrap(),
        2
    );
    let left: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, ["notes.txt"]);
}

#[test]
fn a_text_spill_made_when_a_result_is_cleared_reads_back_whole_and_is_named_by_its_wording() {
    let dir = TempDir::new("text-spill");
    let text = "a cleared result, ünïcödé, kept whole\n".repeat(50);
    let mut store = LocalSpillStore::new(&dir.0)
        .unwrap()
        .with_notice(SpillNotice::ReadResult);
    let spill = mcpl_budget::write_text_spill(&text, &mut store).unwrap();
    assert_eq!(
        spill.reference(),
        format!("read it with read_result(\"{}\")", spill.id)
    );
    let parts = read_all(&mut store, spill.id.as_str(), 100_000);
    let read: String = parts.iter().map(|part| part.text.as_str()).collect();
    assert_eq!(read, text);
    let mut store = LocalSpillStore::new(&dir.0)
        .unwrap()
        .with_notice(SpillNotice::Path);
    let spill = mcpl_budget::write_text_spill(&text, &mut store).unwrap();
    assert_eq!(
        spill.reference(),
        format!("the whole result is in {}", spill.path)
    );
    assert_eq!(std::fs::read_to_string(&spill.path).unwrap(), text);
}
