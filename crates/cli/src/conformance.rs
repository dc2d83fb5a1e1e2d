//! MCPL's bulk-reference conformance vectors (format `mcpl-bulk-references-1`), run against
//! this host: the lanes for `render`, the real [`Fetcher`] and a real HTTP server on loopback
//! for `fetch`, and the [`Registry`] for `registry`. `mcpl conformance FILE...` calls
//! [`run_conformance`].
//!
//! Each case gets a fresh origin server and a second server that only serves as a cross-origin
//! redirect target, both on 127.0.0.1; `$ORIGIN` becomes the first one's origin. The server is
//! registered with that origin, the token [`FIXTURE_TOKEN`] and the case's `maxBytes` as its
//! ceiling. The views checked are a tool result's stored and live copies and a push event's
//! content and history text. The JSON Schema step of the upstream runner (Ajv against SPEC
//! Appendix B.1, `schemaValid`) is about emitters and is not run here.
//!
//! This is the one checker of the vectors: the command runs it on files, and the tests run it
//! case by case through [`vector_cases`] and [`check_case`].

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_classify::{Block, Disposition, classify};
use mcpl_lanes::{
    ImageLedger, LiveCopy, Part, Projector, Registry, Route, ServerName, ToolResult, UriPolicy,
};
use serde_json::{Value, json};

use mcpl_fetch::{DigestCheck, Fetcher, FolderError, NoResources, Refusal, Saved};
use mcpl_host::config::{DEFAULT_FETCH_MAX_BYTES, FetchOptions};
use mcpl_loopback::{Answer, Loopback};

/// The format tag a vector file must carry.
pub const FORMAT: &str = "mcpl-bulk-references-1";
/// The fixture's bearer token.
pub const FIXTURE_TOKEN: &str = "fixture-secret";
/// The longest model-visible view allowed, in characters (agent-framework's adapter's bound).
pub const MAX_VIEW_CHARS: usize = 2048;
/// The largest `{"$repeat": s, "count": n}` expanded.
pub const MAX_REPEAT: u64 = 1 << 21;
/// The fixture server's name.
const SERVER: &str = "fixture-server";
/// How long the runner waits for the loopback servers to see a client's close.
const SETTLE: Duration = Duration::from_secs(2);

/// How many cases passed and failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
}

/// Why the vectors could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum ConformanceError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not a vector file this runner knows.
    #[error("{path}: {error}")]
    Vectors {
        /// The file.
        path: String,
        /// What is wrong.
        error: VectorsError,
    },
    /// The work folder could not be made.
    #[error("the fetch folder: {0}")]
    Folder(#[from] FolderError),
    /// A loopback server did not start.
    #[error("the loopback server did not start: {0}")]
    Loopback(std::io::Error),
    /// The report could not be written.
    #[error("writing the report: {0}")]
    Report(std::io::Error),
}

/// What is wrong with a vector file, or with a case in it.
#[derive(Debug, thiserror::Error)]
pub enum VectorsError {
    /// The file is not JSON.
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
    /// The file's `format` is not [`FORMAT`].
    #[error("format is {0}, not {format}", format = FORMAT)]
    Format(Value),
    /// The file has no `cases` array.
    #[error("no cases array")]
    NoCases,
    /// A case has no string `id`.
    #[error("cases[{0}] has no id")]
    NoId(usize),
    /// Two cases share an id.
    #[error("case id {0} appears twice")]
    DuplicateId(String),
    /// A case's `operation` is not `render`, `fetch` or `registry`.
    #[error("case {id}: operation is {operation}")]
    Operation {
        /// The case.
        id: String,
        /// The operation it names.
        operation: Value,
    },
    /// A case's `response.bodyBase64` is not base64.
    #[error("bodyBase64 is not base64: {0}")]
    BodyBase64(base64::DecodeError),
}

/// Runs every case of every file (`-` is standard input), writing `ok <id>` or
/// `FAIL <id>: <why>` per case and then `<N> passed, <M> failed`.
pub fn run_conformance(paths: &[PathBuf], out: &mut dyn Write) -> Result<Tally, ConformanceError> {
    let work = std::env::temp_dir().join(format!(
        "mcpl-conformance-{}-{:x}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let result = run_files(paths, &work, out);
    let _ = std::fs::remove_dir_all(&work);
    let tally = result?;
    writeln!(out, "{} passed, {} failed", tally.passed, tally.failed)
        .map_err(ConformanceError::Report)?;
    Ok(tally)
}

fn run_files(
    paths: &[PathBuf],
    work: &Path,
    out: &mut dyn Write,
) -> Result<Tally, ConformanceError> {
    let mut tally = Tally::default();
    let mut index = 0;
    for path in paths {
        for case in read_vectors(path)? {
            index += 1;
            let id = case["id"].as_str().unwrap_or_default().to_owned();
            let folder = work.join(index.to_string());
            match check_case(case, &folder)? {
                failures if failures.is_empty() => {
                    tally.passed += 1;
                    writeln!(out, "ok {id}")
                }
                failures => {
                    tally.failed += 1;
                    writeln!(out, "FAIL {id}: {}", failures.join("; "))
                }
            }
            .map_err(ConformanceError::Report)?;
        }
    }
    Ok(tally)
}

fn read_vectors(path: &Path) -> Result<Vec<Value>, ConformanceError> {
    let shown = path.display().to_string();
    let read = if path.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(path)
    };
    let text = read.map_err(|source| ConformanceError::Read {
        path: shown.clone(),
        source,
    })?;
    serde_json::from_str(&text)
        .map_err(VectorsError::NotJson)
        .and_then(vector_cases)
        .map_err(|error| ConformanceError::Vectors { path: shown, error })
}

/// The cases of a vector document, once its format, its case ids and its operations are
/// checked.
pub fn vector_cases(mut document: Value) -> Result<Vec<Value>, VectorsError> {
    if document["format"] != FORMAT {
        return Err(VectorsError::Format(document["format"].take()));
    }
    let Some(Value::Array(cases)) = document.get_mut("cases").map(Value::take) else {
        return Err(VectorsError::NoCases);
    };
    let mut ids = HashSet::new();
    for (n, case) in cases.iter().enumerate() {
        let id = case["id"].as_str().ok_or(VectorsError::NoId(n))?;
        if !ids.insert(id) {
            return Err(VectorsError::DuplicateId(id.to_owned()));
        }
        if !matches!(
            case["operation"].as_str(),
            Some("render" | "fetch" | "registry")
        ) {
            return Err(VectorsError::Operation {
                id: id.to_owned(),
                operation: case["operation"].clone(),
            });
        }
    }
    Ok(cases)
}

/// Expands a vector as the upstream runner does: `$ORIGIN` in every string becomes `origin`,
/// and `{"$repeat": s, "count": n}` (n at most [`MAX_REPEAT`]) becomes `s` repeated `n` times.
pub fn expand(value: &mut Value, origin: &str) {
    match value {
        Value::String(s) => {
            if s.contains("$ORIGIN") {
                *s = s.replace("$ORIGIN", origin);
            }
        }
        Value::Object(object) => {
            if let (Some(Value::String(unit)), Some(count)) = (
                object.get("$repeat"),
                object.get("count").and_then(Value::as_u64),
            ) {
                *value = Value::String(unit.repeat(count.min(MAX_REPEAT) as usize));
                return;
            }
            object.values_mut().for_each(|v| expand(v, origin));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| expand(v, origin)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Checks one case of [`vector_cases`] against this host, with fresh loopback servers and
/// `folder` as the fetcher's folder (made if missing, and left for the caller to remove);
/// answers why it failed, empty when it passed.
pub fn check_case(mut case: Value, folder: &Path) -> Result<Vec<String>, ConformanceError> {
    let target = Loopback::start(|_| Answer::bytes("text/plain", b"redirect target".to_vec()))
        .map_err(ConformanceError::Loopback)?;
    let answer = origin_answer(&case["response"], target.origin())?;
    let origin = Loopback::start(move |_| answer.clone()).map_err(ConformanceError::Loopback)?;
    expand(&mut case, origin.origin());
    let mut failures = Vec::new();
    let fixture = Fixture {
        origin: &origin,
        target: &target,
    };
    match case["operation"].as_str() {
        Some("render") => render_case(&case, &fixture, &mut failures),
        Some("fetch") => fetch_case(&case, &fixture, folder, &mut failures)?,
        _ => registry_case(&case, folder, &mut failures),
    }
    Ok(failures)
}

struct Fixture<'a> {
    origin: &'a Loopback,
    target: &'a Loopback,
}

/// What the origin server answers for a case's `response`.
fn origin_answer(response: &Value, target: &str) -> Result<Answer, ConformanceError> {
    if response["redirect"] == true {
        return Ok(Answer::redirect(&format!("{target}/payload")));
    }
    if let Some(stream) = response.get("stream") {
        let field = |name: &str| stream[name].as_u64().unwrap_or(0);
        return Ok(Answer::chunks(
            "application/octet-stream",
            vec![b'x'; field("chunkBytes") as usize],
            field("chunks"),
            Duration::from_millis(field("intervalMs")),
        ));
    }
    let body = match response["bodyBase64"].as_str() {
        Some(text) => STANDARD
            .decode(text)
            .map_err(|e| ConformanceError::Vectors {
                path: "(case response)".to_owned(),
                error: VectorsError::BodyBase64(e),
            })?,
        None => Vec::new(),
    };
    let content_type = response["contentType"]
        .as_str()
        .unwrap_or("application/octet-stream");
    Ok(if response["gzip"] == true {
        Answer::gzip(content_type, &body)
    } else {
        Answer::bytes(content_type, body)
    })
}

/// The lanes' state for one case.
struct Lanes {
    registry: Registry,
    ledger: ImageLedger,
    server: ServerName,
}

impl Lanes {
    fn new() -> Lanes {
        Lanes {
            registry: Registry::new(),
            ledger: ImageLedger::new(),
            server: ServerName::new(SERVER),
        }
    }

    /// Every model-visible view of the blocks: a tool result's stored and live copies and a
    /// push event's content and history text.
    fn render(&mut self, blocks: &Value) -> Views {
        let result = json!({ "content": blocks });
        let mut projector = Projector::new(
            &mut self.registry,
            &mut self.ledger,
            &Route::ANTHROPIC,
            &self.server,
            UriPolicy::Hidden,
        );
        let read = mcpl_lanes::ResultView::of_value(&result);
        let copies = projector.tool_result(&ToolResult::from_view(&read));
        let live = match &copies.live {
            LiveCopy::Stored => copies.stored.clone().into_owned(),
            LiveCopy::Native(parts) => parts_json(parts),
        };
        let mut views = Views {
            texts: vec![("tool result live", live)],
            history: vec![("tool result stored", copies.stored.into_owned())],
        };
        match projector.push(blocks) {
            Ok(view) => {
                views.texts.push(("push payload", parts_json(&view.parts)));
                views.history.push(("push history", view.stored));
            }
            Err(_) => views.texts.push(("push refusal", String::new())),
        }
        views
    }

    /// The ids of the records the blocks' references made, found by uri.
    fn records(&self, blocks: &Value) -> Vec<String> {
        references(blocks)
            .filter_map(|uri| self.registry.find_uri(&uri))
            .map(|record| record.id.to_string())
            .collect()
    }
}

fn references(blocks: &Value) -> impl Iterator<Item = String> + '_ {
    blocks
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| match classify(block) {
            Block::Reference(reference) => Some(reference.uri.to_owned()),
            _ => None,
        })
}

/// The views of one render.
#[derive(Debug, PartialEq, Eq)]
struct Views {
    /// Views that are not history.
    texts: Vec<(&'static str, String)>,
    /// The history texts (where `cleanLabel` applies).
    history: Vec<(&'static str, String)>,
}

impl Views {
    fn all(&self) -> impl Iterator<Item = &(&'static str, String)> {
        self.texts.iter().chain(&self.history)
    }
}

fn parts_json(parts: &[Part<'_>]) -> String {
    let parts: Vec<Value> = parts
        .iter()
        .map(|part| match part {
            Part::Text(text) => json!({"type": "text", "text": text}),
            Part::Image { sniffed, data, .. } => {
                json!({"type": "image", "mimeType": sniffed.mime(), "data": data})
            }
            Part::Audio { sniffed, data } => {
                json!({"type": "audio", "mimeType": sniffed.mime(), "data": data})
            }
            Part::Document { data, .. } => {
                json!({"type": "document", "mimeType": "application/pdf", "data": data})
            }
        })
        .collect();
    Value::Array(parts).to_string()
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn render_case(case: &Value, fixture: &Fixture<'_>, failures: &mut Vec<String>) {
    let mut lanes = Lanes::new();
    let views = lanes.render(&case["blocks"]);
    check_views(&views, case, &lanes, "", failures);
    check_parse(case, &lanes, failures);
    fixture.origin.settle(SETTLE);
    let dialed = fixture.origin.requests().len() + fixture.target.requests().len();
    if dialed != 0 {
        failures.push(format!("rendering made {dialed} requests"));
    }
}

/// The view checks: bounds, `hidden`, `includes`, `truncationMarked`, `stub`,
/// `stubOrInlineBase64`, `cleanLabel`.
fn check_views(views: &Views, case: &Value, lanes: &Lanes, when: &str, failures: &mut Vec<String>) {
    let expect = &case["expect"];
    let records = lanes.records(&case["blocks"]);
    for (name, text) in views.all() {
        let chars = text.chars().count();
        if chars > MAX_VIEW_CHARS {
            failures.push(format!("{name}{when} is {chars} characters"));
        }
        for hidden in strings(&expect["hidden"]) {
            if text.contains(hidden) {
                failures.push(format!("{name}{when} shows {}", shorten(hidden)));
            }
        }
        for included in strings(&expect["includes"]) {
            if !text.contains(included) {
                failures.push(format!("{name}{when} lacks {included:?}"));
            }
        }
        if expect["truncationMarked"] == true && !text.contains('…') {
            failures.push(format!("{name}{when} has no truncation mark"));
        }
        if expect["stub"] == true {
            for record in records.iter().filter(|r| !text.contains(r.as_str())) {
                failures.push(format!("{name}{when} lacks the stub {record}"));
            }
        }
        if let Some(payload) = expect["stubOrInlineBase64"].as_str() {
            let decoded = STANDARD
                .decode(payload)
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .unwrap_or_default();
            let shown = records.iter().any(|r| text.contains(r.as_str()))
                || (!decoded.is_empty() && text.contains(&decoded))
                || text.contains(payload);
            if !shown {
                failures.push(format!("{name}{when} shows neither a stub nor the payload"));
            }
        }
    }
    if expect["stub"] == true && records.is_empty() {
        failures.push("no reference record was made".to_owned());
    }
    if expect["cleanLabel"] == true {
        for (name, text) in &views.history {
            if text.chars().any(is_control_or_bidi) {
                failures.push(format!("{name}{when} holds a control or bidi character"));
            }
        }
    }
}

fn is_control_or_bidi(c: char) -> bool {
    c != '\n'
        && matches!(c, '\u{0}'..='\u{1F}' | '\u{7F}'..='\u{9F}' | '\u{200E}' | '\u{200F}'
            | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn shorten(text: &str) -> String {
    let mut shown: String = text.chars().take(40).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    format!("{shown:?}")
}

/// The parse checks: `kind` and `missingFields`.
fn check_parse(case: &Value, lanes: &Lanes, failures: &mut Vec<String>) {
    let expect = &case["expect"];
    if let Some(kind) = expect["kind"].as_str() {
        let found = classify(&case["blocks"][0]).kind_name();
        if found != kind {
            failures.push(format!("the first block is {found}, not {kind}"));
        }
    }
    if let Some(missing) = expect["missingFields"].as_array() {
        let records = lanes.records(&case["blocks"]);
        let Some(record) = records
            .first()
            .and_then(|id| lanes.registry.lookup(id).ok())
        else {
            failures.push("no record holds the reference".to_owned());
            return;
        };
        for field in missing.iter().filter_map(Value::as_str) {
            let claims = &record.claims;
            let absent = match field {
                "name" => claims.name.is_none(),
                "mimeType" => claims.mime_type.is_none(),
                "expiresAt" => claims.expires_at.is_none(),
                "sizeBytes" => claims.size_bytes.is_none(),
                "digest" => claims.digest.is_none(),
                "disposition" => claims.disposition.is_none(),
                _ => false,
            };
            if !absent {
                failures.push(format!("{field} was kept"));
            }
        }
        if record.claims.disposition != Some(Disposition::Never) {
            failures.push("the never disposition did not survive".to_owned());
        }
    }
}

fn fetch_case(
    case: &Value,
    fixture: &Fixture<'_>,
    folder: &Path,
    failures: &mut Vec<String>,
) -> Result<(), ConformanceError> {
    let expect = &case["expect"];
    let mut lanes = Lanes::new();
    let before = lanes.render(&case["blocks"]);
    check_views(&before, case, &lanes, " before the fetch", failures);
    check_parse(case, &lanes, failures);
    let mut fetcher = Fetcher::new(folder)?;
    fetcher.add_server(
        SERVER,
        &FetchOptions::default()
            .with_origin(fixture.origin.origin())
            .with_token(FIXTURE_TOKEN)
            .with_max_bytes(case["maxBytes"].as_u64().unwrap_or(DEFAULT_FETCH_MAX_BYTES)),
    );
    let Some(id) = lanes.records(&case["blocks"]).into_iter().next() else {
        failures.push("no reference record to fetch".to_owned());
        return Ok(());
    };
    let outcome = fetcher.fetch(&mut lanes.registry, &id, None, &mut NoResources);
    fixture.origin.settle(SETTLE);
    fixture.target.settle(SETTLE);
    let after = lanes.render(&case["blocks"]);
    check_views(&after, case, &lanes, " after the fetch", failures);

    let shown = match &outcome {
        Ok(saved) => serde_json::to_string(saved).unwrap_or_default(),
        Err(refusal) => refusal.to_string(),
    };
    for hidden in strings(&expect["hidden"]) {
        if shown.contains(hidden) {
            failures.push(format!("the fetch outcome shows {}", shorten(hidden)));
        }
    }
    let requests = fixture.origin.requests();
    let redirected = fixture.target.requests();
    let bearer = format!("Bearer {FIXTURE_TOKEN}");
    if let Some(first) = requests.first()
        && first.header("authorization") != Some(bearer.as_str())
    {
        failures.push("the first request did not carry the fixture bearer token".to_owned());
    }
    if redirected
        .iter()
        .any(|r| r.header("authorization").is_some())
    {
        failures.push("a request to the other origin carried an Authorization header".to_owned());
    }
    let saved_files = list_files(folder);
    let record = lanes.registry.lookup(&id).ok();
    let fetched = record.and_then(|r| r.fetched.as_ref());
    match &outcome {
        Err(_) => {
            if !saved_files.is_empty() {
                failures.push(format!("a failed fetch left {saved_files:?}"));
            }
            if fetched.is_some() {
                failures.push("a failed fetch marked the record fetched".to_owned());
            }
        }
        Ok(saved) => check_saved(saved, fetched, &saved_files, failures),
    }
    if let Some(ok) = expect["ok"].as_bool()
        && ok != outcome.is_ok()
    {
        failures.push(match &outcome {
            Ok(_) => "the fetch succeeded".to_owned(),
            Err(refusal) => format!("the fetch was refused: {refusal}"),
        });
    }
    if let Some(count) = expect["requests"].as_u64()
        && count != requests.len() as u64
    {
        failures.push(format!(
            "the origin saw {} requests, not {count}",
            requests.len()
        ));
    }
    if let Ok(saved) = &outcome {
        check_saved_payload(case, saved, fetched, &id, failures);
    } else {
        for key in [
            "decodedBase64",
            "savedMime",
            "digestVerified",
            "storageFromId",
        ] {
            if !expect[key].is_null() {
                failures.push(format!("{key}: nothing was saved"));
            }
        }
    }
    if expect["abortStream"] == true {
        let cut = fixture
            .origin
            .streams()
            .iter()
            .any(|s| s.client_closed && s.sent >= 1 && s.sent < s.total);
        if !cut {
            failures.push(format!(
                "the stream was not cut early: {:?}",
                fixture.origin.streams()
            ));
        }
    }
    if expect["redirectSafe"] == true {
        if requests.len() != 1 {
            failures.push(format!("the origin saw {} requests, not 1", requests.len()));
        }
        if redirected.len() > 1 {
            failures.push(format!(
                "the other origin saw {} requests",
                redirected.len()
            ));
        }
        if redirected.is_empty() && outcome.is_ok() {
            failures.push("a redirect was answered as a success".to_owned());
        }
    }
    if expect["unchanged"] == true && before != after {
        failures.push("the views changed after a refused fetch".to_owned());
    }
    Ok(())
}

/// A successful fetch saved exactly once, and the outcome, the record and the file agree.
fn check_saved(
    saved: &Saved,
    fetched: Option<&mcpl_lanes::Fetched>,
    files: &[PathBuf],
    failures: &mut Vec<String>,
) {
    if files.len() != 1 {
        failures.push(format!("a successful fetch left {files:?}"));
    }
    let Some(fetched) = fetched else {
        failures.push("the record was not marked fetched".to_owned());
        return;
    };
    let on_disk = std::fs::metadata(&saved.path).map(|m| m.len()).ok();
    if on_disk != Some(saved.bytes) || fetched.bytes != saved.bytes {
        failures.push(format!(
            "sizes disagree: outcome {}, record {}, file {on_disk:?}",
            saved.bytes, fetched.bytes
        ));
    }
    if fetched.path != saved.path
        || files.first().map(|p| p.display().to_string()) != Some(saved.path.clone())
    {
        failures.push("the record's, the outcome's and the file's paths disagree".to_owned());
    }
}

fn check_saved_payload(
    case: &Value,
    saved: &Saved,
    fetched: Option<&mcpl_lanes::Fetched>,
    id: &str,
    failures: &mut Vec<String>,
) {
    let expect = &case["expect"];
    let bytes = std::fs::read(&saved.path).unwrap_or_default();
    if let Some(expected) = expect["decodedBase64"].as_str()
        && STANDARD.decode(expected).ok().as_deref() != Some(bytes.as_slice())
    {
        failures.push("the saved bytes are not the decoded payload".to_owned());
    }
    if let Some(mime) = expect["savedMime"].as_str() {
        let file_type = mcpl_fetch::extension(mcpl_classify::sniff(&bytes), mime);
        let on_file = Path::new(&saved.path)
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default();
        if saved.mime_type != mime
            || fetched.map(|f| f.mime_type.as_str()) != Some(mime)
            || on_file != file_type
        {
            failures.push(format!(
                "saved as {} (record {:?}, file .{on_file}), not {mime}",
                saved.mime_type,
                fetched.map(|f| &f.mime_type)
            ));
        }
    }
    if expect["digestVerified"] == true
        && (saved.digest_verified != DigestCheck::Verified
            || !fetched.is_some_and(|f| f.digest_verified))
    {
        failures.push("the digest was not verified".to_owned());
    }
    if expect["storageFromId"] == true {
        let name = Path::new(&saved.path)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let label = case["blocks"][0]["name"].as_str().unwrap_or_default();
        let mut why = String::new();
        if !name.starts_with(&format!("{id}.")) {
            let _ = write!(why, "does not start with {id}.");
        }
        if name.contains(['/', '\\']) {
            why.push_str(" holds a separator");
        }
        if !label.is_empty() && name.contains(label) {
            why.push_str(" holds the server's name");
        }
        if !why.is_empty() {
            failures.push(format!("the saved name {name:?} {}", why.trim()));
        }
    }
}

/// Every file in the folder, partial ones included.
fn list_files(folder: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    files.sort();
    files
}

/// `registry`: a live reference keeps its id, an evicted or never-issued id is a defined miss
/// that says "unknown reference", a registration after eviction gets a new id, every id is
/// distinct, and the new record carries the block's uri.
fn registry_case(case: &Value, folder: &Path, failures: &mut Vec<String>) {
    let block = &case["blocks"][0];
    let registrations = case["registrations"].as_u64().unwrap_or(0) as usize;
    let Some(first_uri) = block["uri"].as_str().map(str::to_owned) else {
        failures.push("the block has no uri".to_owned());
        return;
    };
    let mut registry = Registry::new();
    let server = ServerName::new(SERVER);
    let register = |registry: &mut Registry, uri: &str| {
        let mut block = block.clone();
        block["uri"] = Value::from(uri);
        match classify(&block) {
            Block::Reference(reference) => Some(registry.register(&reference, &server).id.clone()),
            _ => None,
        }
    };
    let Some(first) = register(&mut registry, &first_uri) else {
        failures.push("the block is not a reference".to_owned());
        return;
    };
    if register(&mut registry, &first_uri).as_ref() != Some(&first) {
        failures.push("re-registering a live reference changed its id".to_owned());
    }
    let mut issued = vec![first.clone()];
    for n in 1..registrations {
        issued.extend(register(&mut registry, &format!("{first_uri}/{n}")));
    }
    let mut fetcher = match Fetcher::new(folder) {
        Ok(fetcher) => fetcher,
        Err(error) => {
            failures.push(format!("no fetcher: {error}"));
            return;
        }
    };
    for id in [first.as_str(), "ref_zzzz_0000"] {
        match fetcher.fetch(&mut registry, id, None, &mut NoResources) {
            Err(refusal @ Refusal::UnknownReference(_))
                if refusal.to_string().contains("unknown reference") => {}
            other => failures.push(format!("fetching {id} answered {other:?}")),
        }
        if registry.lookup(id).is_ok() {
            failures.push(format!("{id} still resolves"));
        }
    }
    let again = register(&mut registry, &first_uri);
    match &again {
        Some(again) if *again == first => {
            failures.push("a registration after eviction reused the evicted id".to_owned());
        }
        Some(again) => {
            issued.push(again.clone());
            let claims_uri = registry
                .lookup(again.as_str())
                .map(|r| r.claims.uri.clone());
            if claims_uri.as_deref() != Ok(first_uri.as_str()) {
                failures.push("the new record does not carry the block's uri".to_owned());
            }
        }
        None => failures.push("re-registration failed".to_owned()),
    }
    let distinct: HashSet<_> = issued.iter().collect();
    if distinct.len() != issued.len() {
        failures.push("an id was issued twice".to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_expand_as_upstream_does() {
        let mut case = json!({"uri": "$ORIGIN/payload", "hidden": ["$ORIGIN"],
            "name": {"$repeat": "ab", "count": 3}});
        expand(&mut case, "http://127.0.0.1:9");
        assert_eq!(
            case,
            json!({"uri": "http://127.0.0.1:9/payload", "hidden": ["http://127.0.0.1:9"],
                "name": "ababab"})
        );
    }
}
