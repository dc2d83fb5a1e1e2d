//! MCP skills (SEP-2640): the skills servers list with `skills/list`, shown to the model as a
//! bounded index in the description of the host tool `load_skill`, and loaded on demand through
//! it. Nothing is read before the model asks. Each file is read with `resources/read` and
//! checked against its manifest entry: its size, then its `sha256:` digest. A SKILL.md's YAML
//! frontmatter must equal the listing's field by field. Content that fails a check is not used:
//! the model gets an error result that says why. What passes goes through the tool-result lanes
//! like any result, so an image file is shown natively where its bytes say it is an image.

use base64::Engine;
use mcpl_classify::sniff;
use mcpl_fetch::ResourceReader;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::{Session, Shown, ToolSpec};

/// The host tool that loads a skill, or one of its files.
pub const LOAD_SKILL: &str = "load_skill";

/// The most skills one session keeps; later ones are left out of the index.
pub const MAX_SKILLS: usize = 1000;

/// The most files one skill's manifest may list. A longer manifest refuses the skill.
pub const MAX_SKILL_FILES: usize = 1000;

/// The largest skill file read (8 MiB). A larger manifest entry is refused before any read.
pub const MAX_SKILL_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// The most characters of skills the index in `load_skill`'s description lists.
pub const SKILL_INDEX_CHARS: usize = 8000;

/// The most characters of one skill's description in the index.
const INDEX_DESCRIPTION_CHARS: usize = 300;

/// The longest skill uri, and the longest frontmatter as JSON, a listing may carry.
const MAX_URI_BYTES: usize = 2048;
const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;

/// The most files of a skill a result names.
const LISTED_FILES: usize = 50;

/// The SKILL.md file every skill has at its root.
const SKILL_MD: &str = "SKILL.md";

/// What the model reads about `load_skill` before the index.
const LOAD_SKILL_DESCRIPTION: &str = "Load a skill a server offers when a task matches its \
    description: returns its instructions (SKILL.md), checked against the server's manifest, and \
    the names of its other files. Pass `file` (a path the skill lists) to read one of them. \
    Skills:";

/// The skills of a session's servers, in the order they were listed.
#[derive(Debug, Default)]
pub(crate) struct Skills {
    list: Vec<Skill>,
}

/// One skill a server listed, as its listing was checked.
#[derive(Debug)]
struct Skill {
    server: String,
    name: String,
    description: String,
    /// The listing's frontmatter, which SKILL.md's must equal.
    frontmatter: Map<String, Value>,
    /// The manifest: SKILL.md and every other file.
    files: Vec<SkillFile>,
}

/// One file of a skill's manifest.
#[derive(Debug)]
struct SkillFile {
    uri: String,
    /// The path below the skill's root (`SKILL.md`, `references/FORMS.md`).
    path: String,
    digest: [u8; 32],
    size: u64,
}

impl Session {
    /// Takes the skills `server` listed (the `skills` of its `skills/list` results). A skill
    /// whose entry is malformed, names files outside its root, lists more than
    /// [`MAX_SKILL_FILES`] files or takes a name already taken is left out; the lines say why.
    pub fn add_skills(&mut self, server: &str, listed: &[Value]) -> Vec<String> {
        let mut left_out = Vec::new();
        for entry in listed {
            if self.skills.list.len() >= MAX_SKILLS {
                left_out.push(format!(
                    "{server}: more than {MAX_SKILLS} skills; the rest are left out"
                ));
                break;
            }
            match Skill::from_listing(server, entry) {
                Ok(skill) if self.skills.list.iter().any(|s| s.name == skill.name) => left_out
                    .push(format!(
                        "{server}: skill {} is left out: another server offers one of that name",
                        skill.name
                    )),
                Ok(skill) => self.skills.list.push(skill),
                Err(why) => left_out.push(format!("{server}: a skill is left out: {why}")),
            }
        }
        left_out
    }

    /// Whether a server offers a skill, so `load_skill` is offered.
    pub fn has_skills(&self) -> bool {
        !self.skills.list.is_empty()
    }

    /// The `load_skill` tool with the index of skills in its description, or `None` when no
    /// server offers a skill. The index is bounded by [`SKILL_INDEX_CHARS`] and keeps the
    /// listing's order, so it is the same in every request.
    pub fn skill_tool(&self) -> Option<ToolSpec> {
        if !self.has_skills() {
            return None;
        }
        let mut index = String::new();
        for (shown, skill) in self.skills.list.iter().enumerate() {
            let line = format!("\n- {}: {}", skill.name, skill.description);
            if index.len() + line.len() > SKILL_INDEX_CHARS {
                let rest = self.skills.list.len() - shown;
                index.push_str(&format!(
                    "\n- and {rest} more skills not listed here; load one by its name"
                ));
                break;
            }
            index.push_str(&line);
        }
        Some(ToolSpec::new(
            LOAD_SKILL,
            format!("{LOAD_SKILL_DESCRIPTION}{index}"),
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "the skill's name, as listed"},
                    "file": {"type": "string",
                             "description": "a file of the skill other than SKILL.md"},
                },
                "required": ["name"],
            }),
        ))
    }

    /// `load_skill`: one file of a skill (its SKILL.md unless `file` names another), read
    /// through `reader` and checked against the manifest; then shown through the lanes within
    /// the budget of the skill's server and `cap`. A file that fails a check is not shown.
    pub fn load_skill(
        &mut self,
        arguments: &Value,
        reader: &mut dyn ResourceReader,
        cap: u64,
    ) -> Shown {
        let result = self.skill_file(arguments, reader);
        let (server, result) = match result {
            Ok(found) => found,
            Err(why) => return self.refusal(format!("{LOAD_SKILL}: {why}")),
        };
        let mut diagnostics = Vec::new();
        let budget = self.held_budget(self.policy(&server).budget.min(cap), &mut diagnostics);
        let mut shown = self.tool_result_within(&server, &result, budget);
        diagnostics.append(&mut shown.diagnostics);
        shown.diagnostics = diagnostics;
        shown
    }

    /// The checked file `arguments` ask for, as a tool result, with its skill's server.
    fn skill_file(
        &self,
        arguments: &Value,
        reader: &mut dyn ResourceReader,
    ) -> Result<(String, Value), String> {
        let name = arguments
            .get("name")
            .and_then(Value::as_str)
            .ok_or("the name is missing (a skill's name from this tool's description)")?;
        let skill = self
            .skills
            .list
            .iter()
            .find(|skill| skill.name == name)
            .ok_or_else(|| format!("no skill is named {name:?}; see this tool's description"))?;
        let path = arguments
            .get("file")
            .and_then(Value::as_str)
            .unwrap_or(SKILL_MD);
        let file = skill
            .files
            .iter()
            .find(|file| file.path == path)
            .ok_or_else(|| {
                format!(
                    "skill {name} has no file {path:?}; its files: {}",
                    skill.file_list()
                )
            })?;
        if file.size > MAX_SKILL_FILE_BYTES {
            return Err(format!(
                "{path} of skill {name} is {} bytes; the host reads at most {MAX_SKILL_FILE_BYTES}",
                file.size
            ));
        }
        if !reader.offers_resources(&skill.server) {
            return Err(format!(
                "server {} offers no resources to read",
                skill.server
            ));
        }
        let answer = reader
            .read_resource(&skill.server, &file.uri)
            .map_err(|error| format!("reading {path} of skill {name}: {error}"))?;
        let (bytes, mime_type) = read_contents(&answer, &file.uri)?;
        file.verify(&bytes)
            .map_err(|why| format!("{path} of skill {name} was not used: {why}"))?;
        let header = json!({"skill": name, "file": path, "bytes": file.size,
            "verified": "size and sha256 digest match the server's manifest"});
        let mut content = vec![json!({"type": "text", "text": header.to_string()})];
        if path == SKILL_MD {
            let text = std::str::from_utf8(&bytes)
                .map_err(|_| format!("SKILL.md of skill {name} is not UTF-8; not used"))?;
            compare_frontmatter(text, &skill.frontmatter)
                .map_err(|why| format!("SKILL.md of skill {name} was not loaded: {why}"))?;
            content.push(json!({"type": "text", "text": text}));
            if skill.files.len() > 1 {
                content.push(json!({"type": "text", "text": format!(
                    "Other files of skill {name} ({LOAD_SKILL} with `file` reads one): {}",
                    skill.file_list()
                )}));
            }
        } else {
            content.push(file_block(&file.uri, &bytes, mime_type));
        }
        Ok((skill.server.clone(), json!({"content": content})))
    }
}

impl Skill {
    /// A skill from one entry of a `skills/list` result, checked.
    fn from_listing(server: &str, entry: &Value) -> Result<Skill, String> {
        let uri = entry
            .get("uri")
            .and_then(Value::as_str)
            .ok_or("its entry has no uri")?;
        if uri.len() > MAX_URI_BYTES {
            return Err(format!("its uri is over {MAX_URI_BYTES} bytes"));
        }
        let root = uri
            .strip_suffix(SKILL_MD)
            .filter(|root| root.starts_with("skill://") && root.ends_with('/'))
            .ok_or_else(|| format!("its uri {uri:?} is not a skill://…/SKILL.md uri"))?;
        let frontmatter = entry
            .get("frontmatter")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("{uri} has no frontmatter"))?;
        if Value::Object(frontmatter.clone()).to_string().len() > MAX_FRONTMATTER_BYTES {
            return Err(format!(
                "{uri}'s frontmatter is over {MAX_FRONTMATTER_BYTES} bytes"
            ));
        }
        let name = frontmatter
            .get("name")
            .and_then(Value::as_str)
            .filter(|name| valid_name(name))
            .ok_or_else(|| format!("{uri}'s frontmatter has no valid name"))?;
        if root.trim_end_matches('/').rsplit('/').next() != Some(name) {
            return Err(format!("{uri} does not end in its name {name}"));
        }
        let description = frontmatter
            .get("description")
            .and_then(Value::as_str)
            .filter(|d| !d.trim().is_empty())
            .ok_or_else(|| format!("skill {name} has no description"))?;
        let resources = entry
            .get("resources")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("skill {name} has no resources"))?;
        if resources.len() > MAX_SKILL_FILES {
            return Err(format!(
                "skill {name} lists {} files; the host takes at most {MAX_SKILL_FILES}",
                resources.len()
            ));
        }
        let mut files: Vec<SkillFile> = Vec::with_capacity(resources.len());
        let mut paths = std::collections::HashSet::with_capacity(resources.len());
        for resource in resources {
            let file = SkillFile::from_listing(root, resource)
                .map_err(|why| format!("skill {name}: {why}"))?;
            if !paths.insert(file.path.clone()) {
                return Err(format!("skill {name} lists {} twice", file.path));
            }
            files.push(file);
        }
        if !files.iter().any(|file| file.path == SKILL_MD) {
            return Err(format!("skill {name}'s resources do not list its SKILL.md"));
        }
        Ok(Skill {
            server: server.to_owned(),
            name: name.to_owned(),
            description: index_description(description),
            frontmatter: frontmatter.clone(),
            files,
        })
    }

    /// Its files other than SKILL.md, with their sizes, for the model.
    fn file_list(&self) -> String {
        let mut others: Vec<String> = self
            .files
            .iter()
            .filter(|file| file.path != SKILL_MD)
            .take(LISTED_FILES)
            .map(|file| format!("{} ({} bytes)", file.path, file.size))
            .collect();
        let more = self.files.len().saturating_sub(LISTED_FILES + 1);
        if more > 0 {
            others.push(format!("and {more} more"));
        }
        if others.is_empty() {
            "none but SKILL.md".to_owned()
        } else {
            others.join(", ")
        }
    }
}

impl SkillFile {
    /// A manifest entry, checked: its uri under the skill's `root`, a `sha256:` digest of 64
    /// hex digits, a size.
    fn from_listing(root: &str, resource: &Value) -> Result<SkillFile, String> {
        let uri = resource
            .get("uri")
            .and_then(Value::as_str)
            .ok_or("a file has no uri")?;
        let path = uri
            .strip_prefix(root)
            .filter(|path| {
                uri.len() <= MAX_URI_BYTES
                    && !path.is_empty()
                    && !path.contains(['?', '#', '\\', '%'])
                    && path
                        .split('/')
                        .all(|segment| !matches!(segment, "" | "." | ".."))
            })
            .ok_or_else(|| format!("the file {uri:?} is not inside the skill's {root}"))?;
        let digest = resource
            .get("digest")
            .and_then(Value::as_str)
            .and_then(|d| d.strip_prefix("sha256:"))
            .and_then(hex_digest)
            .ok_or_else(|| format!("{path} has no sha256:<64 hex digits> digest"))?;
        let size = resource
            .get("size")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("{path} has no size"))?;
        Ok(SkillFile {
            uri: uri.to_owned(),
            path: path.to_owned(),
            digest,
            size,
        })
    }

    /// Whether `bytes` are this file: its size first, then its digest.
    fn verify(&self, bytes: &[u8]) -> Result<(), String> {
        if bytes.len() as u64 != self.size {
            return Err(format!(
                "the server's manifest says {} bytes, the read gave {}",
                self.size,
                bytes.len()
            ));
        }
        if Sha256::digest(bytes).as_slice() != self.digest {
            return Err("its sha256 digest differs from the server's manifest".to_owned());
        }
        Ok(())
    }
}

/// A `resources/read` answer's bytes for `uri` (its content of that uri, or its only content),
/// with its MIME type. A blob longer than [`MAX_SKILL_FILE_BYTES`] could decode to is refused
/// undecoded.
fn read_contents(answer: &Value, uri: &str) -> Result<(Vec<u8>, Option<String>), String> {
    let contents = answer
        .get("contents")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let entry = contents
        .iter()
        .find(|c| c.get("uri").and_then(Value::as_str) == Some(uri))
        .or(match contents {
            [only] => Some(only),
            _ => None,
        })
        .ok_or_else(|| format!("the server's answer has no contents for {uri}"))?;
    let mime_type = entry
        .get("mimeType")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(text) = entry.get("text").and_then(Value::as_str) {
        return Ok((text.as_bytes().to_vec(), mime_type));
    }
    let blob = entry
        .get("blob")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("the server's contents for {uri} have no text or blob"))?;
    if blob.len() as u64 > MAX_SKILL_FILE_BYTES / 3 * 4 + 4 {
        return Err(format!("{uri} is over {MAX_SKILL_FILE_BYTES} bytes"));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .map_err(|_| format!("the server's blob for {uri} is not base64"))?;
    Ok((bytes, mime_type))
}

/// A skill file other than SKILL.md as a content block. Its bytes decide: an image by its
/// magic bytes is an image block (whatever the server labelled it), which the lanes check
/// again; text without magic bytes is text; anything else is an embedded resource.
fn file_block(uri: &str, bytes: &[u8], mime_type: Option<String>) -> Value {
    let sniffed = sniff(bytes);
    let base64 = || base64::engine::general_purpose::STANDARD.encode(bytes);
    if let Some(image) = sniffed.filter(|kind| kind.is_renderable_image()) {
        return json!({"type": "image", "data": base64(), "mimeType": image.mime()});
    }
    if sniffed.is_none()
        && let Ok(text) = std::str::from_utf8(bytes)
    {
        return json!({"type": "text", "text": text});
    }
    let mime_type = sniffed
        .map(|kind| kind.mime().to_owned())
        .or(mime_type)
        .unwrap_or_else(|| "application/octet-stream".to_owned());
    json!({"type": "resource", "resource": {"uri": uri, "mimeType": mime_type, "blob": base64()}})
}

/// Whether `name` follows the Agent Skills naming rules: 1 to 64 lowercase letters, digits and
/// hyphens, no hyphen first, last or twice in a row.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// A description as the index shows it: on one line, at most [`INDEX_DESCRIPTION_CHARS`].
fn index_description(description: &str) -> String {
    let line = description.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(INDEX_DESCRIPTION_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// 64 hex digits as 32 bytes.
fn hex_digest(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut digest = [0; 32];
    for (byte, pair) in digest.iter_mut().zip(hex.chunks_exact(2)) {
        let pair = std::str::from_utf8(pair).ok()?;
        *byte = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(digest)
}

/// Compares SKILL.md's frontmatter with the listing's, field by field: the same fields, each
/// with the same value. The first field that differs is named.
fn compare_frontmatter(text: &str, listed: &Map<String, Value>) -> Result<(), String> {
    let parsed = frontmatter(text)?;
    for (key, value) in listed {
        match parsed.get(key) {
            None => return Err(format!("its frontmatter has no {key}, the listing's has")),
            Some(found) if !same_value(found, value) => {
                return Err(format!(
                    "its frontmatter's {key} differs from the listing's"
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(key) = parsed.keys().find(|key| !listed.contains_key(*key)) {
        return Err(format!("its frontmatter has {key}, the listing's has not"));
    }
    Ok(())
}

/// Whether a value SKILL.md's frontmatter gives is the listing's: equal as JSON, or the same
/// number (`1.0` and `1`), or a bool or null that an older YAML (1.1) spells as a word (`yes`,
/// `off`). The listing was made by a YAML reader the host does not know, so spellings that
/// readers disagree on are not a difference.
fn same_value(found: &Value, listed: &Value) -> bool {
    match (found, listed) {
        (Value::Number(a), Value::Number(b)) => a == b || a.as_f64() == b.as_f64(),
        (Value::String(word), Value::Bool(b)) => yaml11_bool(word) == Some(*b),
        (Value::String(word), Value::Null) => word.is_empty(),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_value(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, a)| b.get(key).is_some_and(|b| same_value(a, b)))
        }
        _ => found == listed,
    }
}

/// A bool as YAML 1.1 spells it in words.
fn yaml11_bool(word: &str) -> Option<bool> {
    match word {
        "yes" | "Yes" | "YES" | "on" | "On" | "ON" | "y" | "Y" => Some(true),
        "no" | "No" | "NO" | "off" | "Off" | "OFF" | "n" | "N" => Some(false),
        _ => None,
    }
}

/// A block scalar (`|` or `>`) being read: its field, style, chomping and lines so far.
struct Block {
    key: String,
    folded: bool,
    /// `-` strips the final line breaks, `+` keeps them all, none keeps one.
    chomp: Option<char>,
    /// The content's indentation: given after the indicator, or the first line's.
    indent: Option<usize>,
    lines: Vec<String>,
}

impl Block {
    /// The block scalar a field's value opens (`|`, `>-`, `|+2`, ...), if it is one.
    fn open(key: &str, value: &str) -> Option<Block> {
        let mut chars = value.chars();
        let folded = match chars.next()? {
            '|' => false,
            '>' => true,
            _ => return None,
        };
        let (mut chomp, mut indent) = (None, None);
        for c in chars {
            match c {
                '-' | '+' if chomp.is_none() => chomp = Some(c),
                '1'..='9' if indent.is_none() => indent = Some(c as usize - '0' as usize),
                _ => return None,
            }
        }
        Some(Block {
            key: key.to_owned(),
            folded,
            chomp,
            indent,
            lines: Vec::new(),
        })
    }

    /// Takes one line of the block (an empty one, or one indented at least as its content).
    fn push(&mut self, line: &str) -> Result<(), String> {
        if line.trim().is_empty() {
            self.lines.push(String::new());
            return Ok(());
        }
        let spaces = line.len() - line.trim_start_matches(' ').len();
        let indent = *self.indent.get_or_insert(spaces);
        if spaces < indent || line[..indent].contains('\t') {
            return Err(format!(
                "its frontmatter's {} is indented unevenly",
                self.key
            ));
        }
        self.lines.push(line[indent..].to_owned());
        Ok(())
    }

    /// The scalar's text, folded or literal, chomped as its indicator says (YAML 1.2, 8.1).
    fn finish(self) -> (String, Value) {
        let kept = self.lines.iter().rposition(|line| !line.is_empty());
        let (body, trailing) = match kept {
            Some(last) => (&self.lines[..=last], self.lines.len() - last - 1),
            None => (&self.lines[..0], self.lines.len()),
        };
        let mut text = String::new();
        let mut previous: Option<bool> = None;
        let mut empty = 0;
        for line in body {
            if line.is_empty() {
                empty += 1;
                continue;
            }
            let more = line.starts_with([' ', '\t']);
            match previous {
                None => text.push_str(&"\n".repeat(empty)),
                Some(was_more) if self.folded && !was_more && !more && empty == 0 => {
                    text.push(' ');
                }
                Some(was_more) if self.folded && !was_more && !more => {
                    text.push_str(&"\n".repeat(empty));
                }
                Some(_) => text.push_str(&"\n".repeat(empty + 1)),
            }
            text.push_str(line);
            previous = Some(more);
            empty = 0;
        }
        match (self.chomp, previous.is_some()) {
            (Some('-'), _) => {}
            (Some('+'), true) => text.push_str(&"\n".repeat(trailing + 1)),
            (Some('+'), false) => text.push_str(&"\n".repeat(trailing)),
            (_, true) => text.push('\n'),
            (_, false) => {}
        }
        (self.key, Value::String(text))
    }
}

/// The YAML frontmatter at the head of a SKILL.md, read strictly: between `---` lines, `key:
/// value` fields whose values are scalars (plain, which may go on over indented lines,
/// single- or double-quoted, or block scalars, `|` and `>`), or maps or lists of scalars on the
/// indented lines that follow. Anything else (flow collections, anchors, deeper nesting) is
/// refused: the skill cannot be compared, so it is not loaded.
fn frontmatter(text: &str) -> Result<Map<String, Value>, String> {
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err("it does not begin with YAML frontmatter (a --- line)".to_owned());
    }
    let mut fields = Map::new();
    let mut open: Option<(String, Value)> = None;
    // Whether the open field's value is a plain scalar, which indented lines go on.
    let mut plain = false;
    let mut block: Option<Block> = None;
    for line in lines {
        let line = line.trim_end();
        if let Some(reading) = block.as_mut() {
            if line.is_empty() || line.starts_with([' ', '\t']) {
                reading.push(line)?;
                continue;
            }
            open = block.take().map(Block::finish);
        }
        if line == "---" {
            if let Some((key, value)) = open.take() {
                fields.insert(key, value);
            }
            return Ok(fields);
        }
        if line.trim_start().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            let Some((_, parent)) = open.as_mut() else {
                return Err("its frontmatter has an indented line under no field".to_owned());
            };
            match parent {
                // A plain scalar goes on: YAML folds the line break to a space.
                Value::String(text) if plain => {
                    let more = line.trim_start();
                    text.push(' ');
                    match scalar(more)? {
                        Value::String(unquoted) => text.push_str(&unquoted),
                        _ => text.push_str(more),
                    }
                }
                _ => nested(parent, line.trim_start())?,
            }
            continue;
        }
        if let Some((key, value)) = open.take() {
            fields.insert(key, value);
        }
        let (key, value) = field(line, true)?;
        if fields.contains_key(&key) {
            return Err(format!("its frontmatter has {key} twice"));
        }
        plain = false;
        match value {
            Field::Block(opened) => block = Some(opened),
            Field::Nested => open = Some((key, Value::Null)),
            Field::Scalar { value, quoted } => {
                plain = !quoted;
                open = Some((key, value));
            }
        }
    }
    Err("its frontmatter has no closing --- line".to_owned())
}

/// What a `key: value` line opens.
enum Field {
    /// No value on the line: a map or a list follows, indented.
    Nested,
    /// A scalar, and whether it was quoted (a plain one may go on over indented lines).
    Scalar { value: Value, quoted: bool },
    /// A block scalar, whose lines follow.
    Block(Block),
}

/// One `key: value` line: the key and what its value opens. Block scalars are read only where
/// `blocks` says (at the top level); elsewhere their indicator is YAML the host does not read.
fn field(line: &str, blocks: bool) -> Result<(String, Field), String> {
    let (key, value) = line
        .split_once(':')
        .ok_or_else(|| format!("its frontmatter line {line:?} is not key: value"))?;
    if key.is_empty()
        || !key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(format!("its frontmatter key {key:?} is not a plain name"));
    }
    if !value.is_empty() && !value.starts_with(' ') {
        return Err(format!("its frontmatter line {line:?} is not key: value"));
    }
    let value = value.trim();
    if value.is_empty() {
        return Ok((key.to_owned(), Field::Nested));
    }
    if blocks && let Some(opened) = Block::open(key, value) {
        return Ok((key.to_owned(), Field::Block(opened)));
    }
    let quoted = value.starts_with(['"', '\'']);
    Ok((
        key.to_owned(),
        Field::Scalar {
            value: scalar(value)?,
            quoted,
        },
    ))
}

/// An indented line under a field: a list item (`- value`) or a map field (`key: value`).
fn nested(parent: &mut Value, line: &str) -> Result<(), String> {
    if let Some(item) = line.strip_prefix("- ").or((line == "-").then_some("")) {
        if parent.is_null() {
            *parent = Value::Array(Vec::new());
        }
        let Value::Array(items) = parent else {
            return Err("its frontmatter mixes a list into a map".to_owned());
        };
        items.push(scalar(item.trim())?);
        return Ok(());
    }
    let (key, value) = field(line, false)?;
    if parent.is_null() {
        *parent = Value::Object(Map::new());
    }
    let Value::Object(map) = parent else {
        return Err("its frontmatter mixes a map into a list".to_owned());
    };
    let Field::Scalar { value, .. } = value else {
        return Err("its frontmatter nests deeper than the host reads".to_owned());
    };
    if map.insert(key.clone(), value).is_some() {
        return Err(format!("its frontmatter has {key} twice"));
    }
    Ok(())
}

/// A YAML scalar as JSON: a quoted one is a string; a plain one is `true`, `false`, null, a
/// number or a string, as YAML's core schema reads it.
fn scalar(value: &str) -> Result<Value, String> {
    let unsupported = || format!("its frontmatter value {value:?} is YAML the host does not read");
    if value.starts_with('"') {
        let text: String = serde_json::from_str(value).map_err(|_| unsupported())?;
        return Ok(Value::String(text));
    }
    if let Some(inner) = value.strip_prefix('\'') {
        let inner = inner.strip_suffix('\'').ok_or_else(unsupported)?;
        if inner.replace("''", "").contains('\'') {
            return Err(unsupported());
        }
        return Ok(Value::String(inner.replace("''", "'")));
    }
    if value.starts_with(['|', '>', '[', '{', '&', '*', '!', '%', '@', '`'])
        || value.contains(" #")
        || value.contains(": ")
    {
        return Err(unsupported());
    }
    Ok(match value {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" | "~" => Value::Null,
        _ => serde_json::from_str::<serde_json::Number>(value)
            .map_or_else(|_| Value::String(value.to_owned()), Value::Number),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_reads_scalars_maps_and_lists() {
        let text = "---\nname: pdf\ndescription: \"Fill: forms\"\nlicense: 'it''s MIT'\n\
                    metadata:\n  version: 1.5\n  author: a\nallowed-tools:\n  - Read\n---\nbody";
        let parsed = frontmatter(text).unwrap();
        assert_eq!(
            Value::Object(parsed),
            json!({"name": "pdf", "description": "Fill: forms", "license": "it's MIT",
                   "metadata": {"version": 1.5, "author": "a"}, "allowed-tools": ["Read"]})
        );
    }

    #[test]
    fn frontmatter_refuses_what_it_cannot_compare() {
        for text in [
            "no frontmatter",
            "---\nname: x\n",
            "---\ndescription: |x\n  block\n---\n",
            "---\ndescription: >\n    four\n  two\n---\n",
            "---\nname: [a, b]\n---\n",
            "---\nname: a\nname: b\n---\n",
            "---\nmetadata:\n  deep:\n    x: 1\n---\n",
            "---\n  orphan: 1\n---\n",
            "---\nkey:value\n---\n",
        ] {
            assert!(frontmatter(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn block_scalars_read_as_yaml_reads_them() {
        let cases = [
            ("|\n  one\n  two\n", "one\ntwo\n"),
            ("|-\n  one\n  two\n\n", "one\ntwo"),
            ("|+\n  one\n\n", "one\n\n"),
            (">\n  one\n  two\n\n  three\n", "one two\nthree\n"),
            (
                ">-\n  Converts a spec\n  to vitest.\n",
                "Converts a spec to vitest.",
            ),
            (
                ">\n\n folded\n line\n\n next\n line\n   * bullet\n\n   * list\n   * lines\n\n last\n line\n",
                "\nfolded line\nnext line\n  * bullet\n\n  * list\n  * lines\n\nlast line\n",
            ),
            ("|2\n    indented\n  flush\n", "  indented\nflush\n"),
            ("|\n  # not a comment\n", "# not a comment\n"),
            (">-\n", ""),
        ];
        for (value, expected) in cases {
            let text = format!("---\nname: a\ndescription: {value}license: MIT\n---\nbody");
            let parsed = frontmatter(&text).unwrap_or_else(|e| panic!("{value:?}: {e}"));
            assert_eq!(parsed["description"], json!(expected), "{value:?}");
            assert_eq!(parsed["license"], json!("MIT"), "{value:?}");
        }
        let text = "---\ndescription: A plain line\n  that goes on\nname: a\n---\n";
        let parsed = frontmatter(text).unwrap();
        assert_eq!(parsed["description"], json!("A plain line that goes on"));
    }

    #[test]
    fn spellings_yaml_readers_disagree_on_are_the_same_value() {
        let text = "---\nversion: 1.0\nbeta: yes\nempty:\nname: a\n---\n";
        let parsed = frontmatter(text).unwrap();
        let listed = json!({"version": 1, "beta": true, "empty": null, "name": "a"});
        assert!(same_value(&Value::Object(parsed.clone()), &listed));
        for differs in [
            json!({"version": 2, "beta": true, "empty": null, "name": "a"}),
            json!({"version": 1, "beta": false, "empty": null, "name": "a"}),
            json!({"version": 1, "beta": true, "empty": null, "name": "b"}),
            json!({"version": 1, "beta": true, "name": "a"}),
        ] {
            assert!(
                !same_value(&Value::Object(parsed.clone()), &differs),
                "{differs}"
            );
        }
    }

    #[test]
    fn names_follow_the_agent_skills_rules() {
        assert!(valid_name("pdf-processing"));
        for name in ["", "-a", "a-", "a--b", "A", "a b", &"a".repeat(65)] {
            assert!(!valid_name(name), "{name:?}");
        }
    }

    #[test]
    fn a_long_description_is_cut_on_one_line() {
        let long = format!("one\ntwo {}", "é".repeat(400));
        let shown = index_description(&long);
        assert!(shown.starts_with("one two "));
        assert_eq!(shown.chars().count(), INDEX_DESCRIPTION_CHARS + 1);
    }
}
