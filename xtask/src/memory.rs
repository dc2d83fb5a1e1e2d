//! `cargo xtask memory`: the peak resident memory of `mcpl project` (release build) on each
//! input the memory target names (issues 18 and 31): the three standard workloads (written to
//! files by mcpl-testkit's `write_workloads` example); a result of a million tiny text blocks,
//! the same with `annotations` on each (an audience and a priority, decision 0152), the same for
//! the user alone (kept as a flag, decision 0155), and a million text blocks of one url each
//! (read as one run, decisions 0153 and 0154); seven 200 MB texts: long lines, short lines, one
//! line of many escapes, many small text blocks, and three with no place the first windows could
//! cut (decision 0141): one line of CJK letters, one line of `\u00e9` escapes, and words that
//! hold percent escapes; a 60 MB line of base64 (decision 0143); a 10 MB result of small text
//! blocks with a few escapes each, where what redaction holds for a window is most of the peak
//! (decision 0157); a 40 MB result of structured content, small rows (decision 0142); a 40 MB
//! result of small images, each spilled as a file of its own (decision 0147); and a 40 MB result
//! of resource links with signed urls, whose hidden-uri patterns and secrets' automaton were most
//! of a run's memory (decisions 0151, 0158, 0164 and 0165). One line per input: its size, the
//! peak (`VmHWM` from `/proc/<pid>/status`, read every 5 ms while the run lasts, so this recipe
//! needs Linux), peak ÷ input, and whether the target, twice the input plus 20 MiB, holds. It
//! fails when a run fails or an input is over its target.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The headroom the target allows above twice the input.
const HEADROOM: u64 = 20 << 20;
/// The tiny-block input's block count.
const TINY_BLOCKS: usize = 1_000_000;
/// The big text input's size.
const TEXT_BYTES: usize = 200_000_000;
/// The base64 line's size: about the most one message may hold by default (the client's
/// `DEFAULT_MAX_MESSAGE_BYTES`, 64 MiB). Twice that is still over its target (decision 0143).
const BASE64_BYTES: usize = 60_000_000;
/// The structured content input's size.
const STRUCTURED_BYTES: usize = 40_000_000;
/// The small payloads input's size: about 90,000 images of 445 bytes of JSON each.
const PAYLOAD_BYTES: usize = 40_000_000;
/// The escaped blocks input's size: small enough that what redaction holds for each window of
/// text it decodes, not the input, is most of the peak (decision 0157).
const ESCAPED_BYTES: usize = 10_000_000;
/// What each block of `text-small-blocks` says after its number.
const SENTENCE: &str = "the quick brown fox jumps over the lazy dog";
/// What each block of `escaped-blocks` says after its number: a few escapes to decode (a
/// percent-encoding, an HTML reference, a JSON escape) and a link.
const ESCAPED_SENTENCE: &str = r"see name%20with%2Fslash &amp; caf\\u00e9 at https://h.example/x";
/// The signed links input's size: about 250,000 links of 160 bytes of JSON each.
const LINK_BYTES: usize = 40_000_000;

pub(crate) fn memory(root: &Path) -> Result<(), String> {
    crate::cargo(root, &["build", "--release", "-p", "mcpl-cli"])?;
    let scratch = std::env::temp_dir().join(format!("mcpl-memory-{}", std::process::id()));
    let inputs = scratch.join("inputs");
    let dir = inputs.display().to_string();
    crate::cargo(
        root,
        &[
            "run",
            "--release",
            "--quiet",
            "-p",
            "mcpl-testkit",
            "--example",
            "write_workloads",
            "--",
            &dir,
        ],
    )?;
    let mut files: Vec<PathBuf> = ["w1-mixed-10mb", "w2-100k-blocks", "w3-one-big-image"]
        .iter()
        .map(|name| inputs.join(format!("{name}.json")))
        .collect();
    files.push(write_input(
        &inputs,
        "tiny-1m-blocks",
        &tiny_blocks(TINY_BLOCKS, ""),
    )?);
    files.push(write_input(
        &inputs,
        "tiny-annotated",
        &tiny_blocks(TINY_BLOCKS, ANNOTATIONS),
    )?);
    files.push(write_input(
        &inputs,
        "tiny-user-blocks",
        &tiny_blocks(TINY_BLOCKS, USER_ANNOTATIONS),
    )?);
    files.push(write_input(
        &inputs,
        "tiny-url-blocks",
        &url_blocks(TINY_BLOCKS),
    )?);
    files.push(write_input(
        &inputs,
        "text-long-lines",
        &big_text(TEXT_BYTES, &long_line()),
    )?);
    files.push(write_input(
        &inputs,
        "text-short-lines",
        &big_text(TEXT_BYTES, "a short line\\n"),
    )?);
    files.push(write_input(
        &inputs,
        "text-escapes",
        &big_text(TEXT_BYTES, r#"\"q\" \\ \t\u00e9\ud83d\ude00 "#),
    )?);
    files.push(write_input(
        &inputs,
        "text-small-blocks",
        &small_blocks(TEXT_BYTES, SENTENCE),
    )?);
    files.push(write_input(
        &inputs,
        "escaped-blocks",
        &small_blocks(ESCAPED_BYTES, ESCAPED_SENTENCE),
    )?);
    files.push(write_input(
        &inputs,
        "text-cjk-run",
        &one_run(
            TEXT_BYTES,
            "\u{4e2d}\u{6587}\u{5b57}\u{7b26}\u{6d4b}\u{8bd5}",
        ),
    )?);
    files.push(write_input(
        &inputs,
        "text-u-escapes",
        &one_run(TEXT_BYTES, r"\u00e9"),
    )?);
    files.push(write_input(
        &inputs,
        "text-escaped-words",
        &one_run(TEXT_BYTES, "name%20with%2Fslash "),
    )?);
    files.push(write_input(
        &inputs,
        "text-base64-line",
        &base64_line(BASE64_BYTES),
    )?);
    files.push(write_input(
        &inputs,
        "structured-rows",
        &structured_rows(STRUCTURED_BYTES),
    )?);
    files.push(write_input(
        &inputs,
        "small-payloads",
        &small_payloads(PAYLOAD_BYTES),
    )?);
    files.push(write_input(
        &inputs,
        "signed-links",
        &signed_links(LINK_BYTES),
    )?);
    let mcpl = root.join("target").join("release").join("mcpl");
    println!("peak resident memory of mcpl project (target: at most 2 x input + 20 MiB)");
    println!(
        "{:<18} {:>10} {:>10} {:>8} {:>8}  target",
        "input", "input MiB", "peak MiB", "x input", "seconds"
    );
    let mut result = Ok(());
    let mut over = Vec::new();
    for file in &files {
        let size = std::fs::metadata(file)
            .map_err(|e| format!("{}: {e}", file.display()))?
            .len();
        let (peak, took) = match measure(&mcpl, file, &scratch.join("spill")) {
            Ok(measured) => measured,
            Err(error) => {
                result = Err(error);
                break;
            }
        };
        let name = file
            .file_stem()
            .map_or(String::new(), |s| s.to_string_lossy().into_owned());
        let within = peak <= 2 * size + HEADROOM;
        println!(
            "{name:<18} {:>10.1} {:>10.1} {:>8.2} {:>8.1}  {}",
            mib(size),
            mib(peak),
            peak as f64 / size as f64,
            took.as_secs_f64(),
            if within { "within" } else { "over" }
        );
        if !within {
            over.push(name);
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    result?;
    match over.is_empty() {
        true => Ok(()),
        false => Err(format!("over the memory target: {}", over.join(", "))),
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

fn write_input(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, String> {
    let path = dir.join(format!("{name}.json"));
    std::fs::File::create(&path)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// The annotations each block of `tiny-annotated` carries: what MCP's annotations hold.
const ANNOTATIONS: &str =
    r#", "annotations": {"audience": ["user", "assistant"], "priority": 0.5}"#;

/// The annotations each block of `tiny-user-blocks` carries: a block for the user alone.
const USER_ANNOTATIONS: &str = r#", "annotations": {"audience": ["user"], "priority": 0.5}"#;

/// One result of `count` text blocks of a few bytes each, each with `more` (JSON members,
/// after a comma) after its text.
fn tiny_blocks(count: usize, more: &str) -> Vec<u8> {
    let mut json = String::from(r#"{"content": ["#);
    for i in 0..count {
        if i > 0 {
            json.push(',');
        }
        json.push_str(&format!(
            r#"{{"type": "text", "text": "b{}"{more}}}"#,
            i % 1000
        ));
    }
    json.push_str("]}");
    json.into_bytes()
}

/// One result of `count` text blocks of one url each, as a tool that lists links writes them.
fn url_blocks(count: usize) -> Vec<u8> {
    let mut json = String::from(r#"{"content": ["#);
    for i in 0..count {
        if i > 0 {
            json.push(',');
        }
        json.push_str(&format!(
            r#"{{"type": "text", "text": "https://a.example/files/{i}"}}"#
        ));
    }
    json.push_str("]}");
    json.into_bytes()
}

/// One result of a single text block of about `bytes` bytes: `line` (JSON string text, escapes
/// written as such) again and again, each time after its number.
fn big_text(bytes: usize, line: &str) -> Vec<u8> {
    let mut json = String::with_capacity(bytes + line.len() + 64);
    json.push_str(r#"{"content": [{"type": "text", "text": ""#);
    let mut number = 0u64;
    while json.len() < bytes {
        number += 1;
        json.push_str(&number.to_string());
        json.push_str(line);
    }
    json.push_str(r#""}]}"#);
    json.into_bytes()
}

/// One result of a single text block of about `bytes` bytes: `unit` (JSON string text) again
/// and again, with nothing between.
fn one_run(bytes: usize, unit: &str) -> Vec<u8> {
    let mut json = String::with_capacity(bytes + unit.len() + 64);
    json.push_str(r#"{"content": [{"type": "text", "text": ""#);
    while json.len() < bytes {
        json.push_str(unit);
    }
    json.push_str(r#""}]}"#);
    json.into_bytes()
}

/// A line of about 10,000 characters of prose, with its line break escaped.
fn long_line() -> String {
    let mut line = ": the quick brown fox jumps over the lazy dog".repeat(220);
    line.push_str("\\n");
    line
}

/// One result of about `bytes` bytes of small text blocks, each `block <i>: ` then `sentence`.
fn small_blocks(bytes: usize, sentence: &str) -> Vec<u8> {
    let mut json = String::with_capacity(bytes + 64);
    json.push_str(r#"{"content": ["#);
    let mut i = 0u64;
    while json.len() < bytes {
        if i > 0 {
            json.push(',');
        }
        json.push_str(&format!(
            r#"{{"type": "text", "text": "block {i}: {sentence}"}}"#
        ));
        i += 1;
    }
    json.push_str("]}");
    json.into_bytes()
}

/// One result of a single text block of about `bytes` bytes: one line of base64 characters
/// drawn at random, as a file's bytes sent as base64 read, with no place to cut (decision 0143).
fn base64_line(bytes: usize) -> Vec<u8> {
    let mut json = Vec::with_capacity(bytes + 64);
    json.extend_from_slice(br#"{"content": [{"type": "text", "text": ""#);
    let mut draw = Base64Draw::default();
    while json.len() < bytes {
        draw.ten_more(&mut json);
    }
    json.extend_from_slice(br#""}]}"#);
    json
}

/// Base64 characters drawn at random (SplitMix64), ten from each draw, the same every run.
struct Base64Draw {
    state: u64,
}

impl Default for Base64Draw {
    fn default() -> Base64Draw {
        Base64Draw {
            state: 0x9E37_79B9_7F4A_7C15,
        }
    }
}

impl Base64Draw {
    fn ten_more(&mut self, out: &mut Vec<u8>) {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        for k in 0..10 {
            out.push(ALPHABET[(z >> (6 * k)) as usize & 63]);
        }
    }
}

/// One result of about `bytes` bytes of small payloads: images of 300 bytes each (400 base64
/// characters drawn at random), a type claimed and none found, so each is written to the spill
/// as an attachment of its own (decision 0147).
fn small_payloads(bytes: usize) -> Vec<u8> {
    let mut json = Vec::with_capacity(bytes + 512);
    json.extend_from_slice(br#"{"content": ["#);
    let mut draw = Base64Draw::default();
    let mut first = true;
    while json.len() < bytes {
        if !first {
            json.push(b',');
        }
        first = false;
        json.extend_from_slice(br#"{"type": "image", "data": ""#);
        for _ in 0..40 {
            draw.ten_more(&mut json);
        }
        json.extend_from_slice(br#"", "mimeType": "image/png"}"#);
    }
    json.extend_from_slice(b"]}");
    json
}

/// One result of about `bytes` bytes of resource links, each to an object in a bucket by a url
/// signed with 64 hex digits drawn at random (decision 0151).
fn signed_links(bytes: usize) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut json = Vec::with_capacity(bytes + 512);
    json.extend_from_slice(br#"{"content": ["#);
    let mut draw = Base64Draw::default();
    let mut digits = Vec::with_capacity(80);
    let mut i = 0u64;
    while json.len() < bytes {
        if i > 0 {
            json.push(b',');
        }
        digits.clear();
        for _ in 0..7 {
            draw.ten_more(&mut digits);
        }
        let signature: String = digits[..64]
            .iter()
            .map(|&c| char::from(HEX[usize::from(c) & 15]))
            .collect();
        json.extend_from_slice(
            format!(
                r#"{{"type": "resource_link", "uri": "https://b.s3.amazonaws.com/k/{i}.txt?X-Amz-Signature={signature}", "name": "f{i}"}}"#
            )
            .as_bytes(),
        );
        i += 1;
    }
    json.extend_from_slice(b"]}");
    json
}

/// One result of one short text block and about `bytes` bytes of structured content: a list of
/// small rows, each an id, a name and a url (decision 0142).
fn structured_rows(bytes: usize) -> Vec<u8> {
    let mut json = String::with_capacity(bytes + 128);
    json.push_str(
        r#"{"content": [{"type": "text", "text": "the rows"}], "structuredContent": {"rows": ["#,
    );
    let mut i = 0u64;
    while json.len() < bytes {
        if i > 0 {
            json.push(',');
        }
        json.push_str(&format!(
            r#"{{"id": {i}, "name": "row {i} of the quick brown fox", "url": "https://x.example/{i}"}}"#
        ));
        i += 1;
    }
    json.push_str("]}}");
    json.into_bytes()
}

/// Runs `mcpl project FILE` and returns its peak resident memory and how long it took.
fn measure(mcpl: &Path, file: &Path, spill: &Path) -> Result<(u64, Duration), String> {
    let mut child = Command::new(mcpl)
        .arg("project")
        .arg("--spill-dir")
        .arg(spill)
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", mcpl.display()))?;
    let started = Instant::now();
    let mut peak = 0;
    loop {
        if let Some(now) = crate::hostile::peak_resident(child.id()) {
            peak = peak.max(now);
        }
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(Some(status)) => {
                return Err(format!("mcpl project {} failed ({status})", file.display()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(error) => return Err(format!("waiting for mcpl project: {error}")),
        }
    }
    if peak == 0 {
        return Err("no VmHWM in /proc/<pid>/status: this recipe needs Linux".to_owned());
    }
    Ok((peak, started.elapsed()))
}

#[cfg(test)]
mod tests {
    use super::{
        ANNOTATIONS, ESCAPED_SENTENCE, SENTENCE, big_text, long_line, one_run, signed_links,
        small_blocks, tiny_blocks, url_blocks,
    };

    #[test]
    fn the_made_inputs_are_results_of_the_asked_size() {
        let tiny: serde_json::Value = serde_json::from_slice(&tiny_blocks(1001, "")).unwrap();
        let blocks = tiny["content"].as_array().unwrap();
        assert_eq!(blocks.len(), 1001);
        assert_eq!(blocks[1000]["text"], "b0");
        let annotated: serde_json::Value =
            serde_json::from_slice(&tiny_blocks(3, ANNOTATIONS)).unwrap();
        assert_eq!(
            annotated["content"][2]["annotations"]["audience"],
            serde_json::json!(["user", "assistant"])
        );
        for line in [
            long_line().as_str(),
            "a short line\\n",
            r#"\"q\" \\ \t\u00e9\ud83d\ude00 "#,
        ] {
            let text = big_text(30_000, line);
            assert!((30_000..45_000).contains(&text.len()), "{}", text.len());
            let text: serde_json::Value = serde_json::from_slice(&text).unwrap();
            assert!(
                text["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .starts_with("1")
            );
        }
        for unit in ["\u{4e2d}\u{6587}", r"\u00e9", "name%20with%2Fslash "] {
            let run = one_run(30_000, unit);
            assert!((30_000..30_100).contains(&run.len()), "{}", run.len());
            let run: serde_json::Value = serde_json::from_slice(&run).unwrap();
            assert!(run["content"][0]["text"].as_str().unwrap().len() > 9_000);
        }
        let escaped: serde_json::Value =
            serde_json::from_slice(&small_blocks(300, ESCAPED_SENTENCE)).unwrap();
        assert_eq!(
            escaped["content"][1]["text"],
            r"block 1: see name%20with%2Fslash &amp; caf\u00e9 at https://h.example/x"
        );
        let blocks = small_blocks(30_000, SENTENCE);
        assert!((30_000..30_200).contains(&blocks.len()), "{}", blocks.len());
        let blocks: serde_json::Value = serde_json::from_slice(&blocks).unwrap();
        assert!(blocks["content"].as_array().unwrap().len() > 300);
        let urls: serde_json::Value = serde_json::from_slice(&url_blocks(3)).unwrap();
        assert_eq!(urls["content"][2]["text"], "https://a.example/files/2");
        let links = signed_links(30_000);
        assert!((30_000..30_300).contains(&links.len()), "{}", links.len());
        let links: serde_json::Value = serde_json::from_slice(&links).unwrap();
        let links = links["content"].as_array().unwrap();
        assert!(links.len() > 150);
        let uri = links[7]["uri"].as_str().unwrap();
        let (path, signature) = uri.split_once("?X-Amz-Signature=").unwrap();
        assert_eq!(path, "https://b.s3.amazonaws.com/k/7.txt");
        assert!(signature.len() == 64 && signature.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(
            links[8]["uri"].as_str().unwrap().split_once('=').unwrap().1,
            signature
        );
    }
}
