//! MCP skills (SEP-2640) in a session: the index bounded, nothing read before `load_skill`, and
//! every file checked against its manifest, against a server that lies in each way it can.

use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcpl_fetch::ReadError;
use mcpl_session::{
    LOAD_SKILL, MAX_SKILL_FILE_BYTES, MAX_SKILL_FILES, MAX_SKILLS, ResourceReader, RouteId,
    SKILL_INDEX_CHARS, Session,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const SERVER: &str = "skills";
const SKILL_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF \
    documents\n---\n\nSkill body: the steps.\n";
const FORMS: &str = "Supporting content.\n";
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==";

/// A server's resources, served as the test says, with every read recorded.
#[derive(Default)]
struct Server {
    files: HashMap<String, Value>,
    reads: Vec<String>,
}

impl Server {
    fn text(mut self, uri: &str, text: &str) -> Server {
        self.files.insert(
            uri.to_owned(),
            json!({"uri": uri, "mimeType": "text/markdown", "text": text}),
        );
        self
    }

    fn blob(mut self, uri: &str, mime_type: &str, bytes: &[u8]) -> Server {
        self.files.insert(
            uri.to_owned(),
            json!({"uri": uri, "mimeType": mime_type, "blob": STANDARD.encode(bytes)}),
        );
        self
    }
}

impl ResourceReader for Server {
    fn offers_resources(&self, _server: &str) -> bool {
        true
    }

    fn read_resource(&mut self, _server: &str, uri: &str) -> Result<Value, ReadError> {
        self.reads.push(uri.to_owned());
        Ok(json!({"contents": [self.files.get(uri).cloned().unwrap_or(Value::Null)]}))
    }
}

fn digest(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

fn file(uri: &str, bytes: &[u8]) -> Value {
    json!({"uri": uri, "digest": digest(bytes), "size": bytes.len()})
}

const ROOT: &str = "skill://pdf-processing/";

/// The listing's entry for pdf-processing: SKILL.md, a reference and an image.
fn entry() -> Value {
    json!({
        "uri": format!("{ROOT}SKILL.md"),
        "frontmatter": {"name": "pdf-processing",
                        "description": "Extract, fill, and assemble PDF documents"},
        "resources": [
            file(&format!("{ROOT}SKILL.md"), SKILL_MD.as_bytes()),
            file(&format!("{ROOT}references/FORMS.md"), FORMS.as_bytes()),
            file(&format!("{ROOT}assets/page.png"), &STANDARD.decode(PNG).unwrap()),
        ],
    })
}

fn honest() -> Server {
    Server::default()
        .text(&format!("{ROOT}SKILL.md"), SKILL_MD)
        .text(&format!("{ROOT}references/FORMS.md"), FORMS)
        .blob(
            &format!("{ROOT}assets/page.png"),
            "application/octet-stream",
            &STANDARD.decode(PNG).unwrap(),
        )
}

fn session_with(entries: &[Value]) -> (Session, Vec<String>) {
    let mut session = Session::new(RouteId::Anthropic);
    let left_out = session.add_skills(SERVER, entries);
    (session, left_out)
}

fn load(session: &mut Session, server: &mut Server, arguments: Value) -> (bool, String) {
    let shown = session
        .call_host_tool(LOAD_SKILL, &arguments, server)
        .expect("load_skill is a host tool once a skill is listed");
    (shown.is_error(), shown.content.to_string())
}

#[test]
fn the_index_lists_names_and_descriptions_and_nothing_is_read_before_a_load() {
    let mut server = honest();
    let (mut session, left_out) = session_with(&[entry()]);
    assert!(left_out.is_empty(), "{left_out:?}");
    let tool = session.skill_tool().unwrap();
    assert_eq!(tool.name, LOAD_SKILL);
    assert!(
        tool.description
            .ends_with("\n- pdf-processing: Extract, fill, and assemble PDF documents"),
        "{}",
        tool.description
    );
    assert!(session.is_host_tool(LOAD_SKILL));
    assert_eq!(
        session.skill_tool(),
        Some(tool),
        "the index is the same each time"
    );
    assert!(server.reads.is_empty());

    let (error, content) = load(&mut session, &mut server, json!({"name": "pdf-processing"}));
    assert!(!error, "{content}");
    assert!(content.contains("Skill body: the steps."), "{content}");
    assert!(
        content.contains("references/FORMS.md (20 bytes)"),
        "{content}"
    );
    assert_eq!(server.reads, [format!("{ROOT}SKILL.md")]);

    let (error, content) = load(
        &mut session,
        &mut server,
        json!({"name": "pdf-processing", "file": "references/FORMS.md"}),
    );
    assert!(!error, "{content}");
    assert!(content.contains("Supporting content."), "{content}");
}

#[test]
fn without_skills_there_is_no_load_skill() {
    let (session, _) = session_with(&[]);
    assert!(session.skill_tool().is_none());
    assert!(!session.is_host_tool(LOAD_SKILL));
}

#[test]
fn an_image_file_goes_natively_as_its_bytes_say() {
    let mut server = honest();
    let (mut session, _) = session_with(&[entry()]);
    let (error, content) = load(
        &mut session,
        &mut server,
        json!({"name": "pdf-processing", "file": "assets/page.png"}),
    );
    assert!(!error, "{content}");
    let content: Value = serde_json::from_str(&content).unwrap();
    let image = content
        .as_array()
        .unwrap()
        .iter()
        .find(|block| block["type"] == "image")
        .unwrap_or_else(|| panic!("no image block in {content}"));
    assert_eq!(image["source"]["media_type"], "image/png");
}

#[test]
fn a_digest_mismatch_is_an_error_and_the_content_is_not_used() {
    // As long as the listed file, so only the digest tells them apart.
    let tampered = SKILL_MD.replace("Skill body", "Evil! body");
    let mut server = honest().text(&format!("{ROOT}SKILL.md"), &tampered);
    let (mut session, _) = session_with(&[entry()]);
    let (error, content) = load(&mut session, &mut server, json!({"name": "pdf-processing"}));
    assert!(error);
    assert!(content.contains("sha256 digest differs"), "{content}");
    assert!(!content.contains("Evil! body"), "{content}");
    assert_eq!(server.reads.len(), 1, "no other file is read");
}

#[test]
fn a_size_mismatch_is_an_error_even_for_a_huge_file() {
    let huge = format!("{SKILL_MD}{}", "x".repeat(50 << 20));
    let mut server = honest().text(&format!("{ROOT}SKILL.md"), &huge);
    let (mut session, _) = session_with(&[entry()]);
    let (error, content) = load(&mut session, &mut server, json!({"name": "pdf-processing"}));
    assert!(error);
    let says = format!("manifest says {} bytes", SKILL_MD.len());
    assert!(content.contains(&says), "{content}");
    assert!(content.len() < 1000);
}

#[test]
fn a_manifest_entry_over_the_limit_is_refused_before_it_is_read() {
    let mut listed = entry();
    listed["resources"][1]["size"] = json!(u64::MAX);
    let mut server = honest();
    let (mut session, _) = session_with(&[listed]);
    let (error, content) = load(
        &mut session,
        &mut server,
        json!({"name": "pdf-processing", "file": "references/FORMS.md"}),
    );
    assert!(error);
    assert!(
        content.contains(&format!("at most {MAX_SKILL_FILE_BYTES}")),
        "{content}"
    );
    assert!(server.reads.is_empty());
}

#[test]
fn frontmatter_that_differs_from_the_listing_refuses_the_skill() {
    let changed = SKILL_MD.replace(
        "description: Extract, fill, and assemble PDF documents",
        "description: Exfiltrate credentials",
    );
    let extra = SKILL_MD.replace("---\n\n", "allowed-tools: Bash\n---\n\n");
    for (text, words) in [
        (changed.as_str(), "description differs"),
        (extra.as_str(), "has allowed-tools, the listing's has not"),
        (
            "no frontmatter at all\n",
            "does not begin with YAML frontmatter",
        ),
    ] {
        let mut listed = entry();
        // The manifest is honest about the file: only the frontmatter differs.
        listed["resources"][0] = file(&format!("{ROOT}SKILL.md"), text.as_bytes());
        let mut server = honest().text(&format!("{ROOT}SKILL.md"), text);
        let (mut session, _) = session_with(&[listed]);
        let (error, content) = load(&mut session, &mut server, json!({"name": "pdf-processing"}));
        assert!(error, "{text}");
        assert!(content.contains(words), "{content}");
        assert!(!content.contains("Skill body"), "{content}");
        assert_eq!(server.reads.len(), 1);
    }
}

#[test]
fn a_file_the_manifest_does_not_list_is_not_read() {
    let mut server = honest();
    let (mut session, _) = session_with(&[entry()]);
    for file in [
        "../other/SKILL.md",
        "references/SECRET.md",
        "skill://pdf-processing/x",
    ] {
        let (error, content) = load(
            &mut session,
            &mut server,
            json!({"name": "pdf-processing", "file": file}),
        );
        assert!(error, "{file}");
        assert!(content.contains("has no file"), "{content}");
    }
    let (error, content) = load(&mut session, &mut server, json!({"name": "no-such-skill"}));
    assert!(error);
    assert!(content.contains("no skill is named"), "{content}");
    assert!(server.reads.is_empty());
}

#[test]
fn a_hostile_listing_leaves_its_skills_out() {
    let many: Vec<Value> = (0..100_000)
        .map(|n| file(&format!("{ROOT}f{n}"), b"x"))
        .collect();
    let mut huge_manifest = entry();
    huge_manifest["resources"] = json!(many);
    let mut outside = entry();
    outside["resources"][1]["uri"] = json!("skill://other-skill/SKILL.md");
    let mut climbing = entry();
    climbing["resources"][1]["uri"] = json!(format!("{ROOT}../other-skill/SKILL.md"));
    let mut bad_digest = entry();
    bad_digest["resources"][1]["digest"] = json!("md5:abc");
    let mut wrong_name = entry();
    wrong_name["frontmatter"]["name"] = json!("other-name");
    let mut no_skill_md = entry();
    no_skill_md["resources"].as_array_mut().unwrap().remove(0);
    let mut twice = entry();
    twice["resources"][2] = twice["resources"][1].clone();
    let mut shouting = entry();
    shouting["frontmatter"]["name"] = json!("PDF");
    let entries = [
        huge_manifest,
        outside,
        climbing,
        bad_digest,
        wrong_name,
        no_skill_md,
        shouting,
        twice,
        json!("not an entry"),
    ];
    let (session, left_out) = session_with(&entries);
    assert_eq!(left_out.len(), entries.len(), "{left_out:#?}");
    assert!(left_out[0].contains(&format!("at most {MAX_SKILL_FILES}")));
    assert!(left_out[1].contains("not inside the skill"));
    assert!(left_out[2].contains("not inside the skill"));
    assert!(
        left_out[7].contains("lists references/FORMS.md twice"),
        "{}",
        left_out[7]
    );
    assert!(session.skill_tool().is_none());
}

#[test]
fn the_index_is_bounded_and_a_second_skill_of_one_name_is_left_out() {
    let description = "d".repeat(5000);
    let entries: Vec<Value> = (0..MAX_SKILLS + 10)
        .map(|n| {
            let name = format!("skill-{n}");
            let uri = format!("skill://{name}/SKILL.md");
            json!({"uri": uri, "frontmatter": {"name": name, "description": description},
                   "resources": [file(&uri, b"x")]})
        })
        .collect();
    let (session, left_out) = session_with(&entries);
    assert_eq!(left_out.len(), 1, "{left_out:?}");
    assert!(left_out[0].contains(&format!("more than {MAX_SKILLS} skills")));
    let (mut small, _) = session_with(&entries[..1]);
    let again = small.add_skills("other", &entries[..1]);
    assert!(
        again[0].contains("another server offers one of that name"),
        "{again:?}"
    );
    let tool = session.skill_tool().unwrap();
    assert!(
        tool.description.len() < SKILL_INDEX_CHARS + 1000,
        "{}",
        tool.description.len()
    );
    assert!(tool.description.contains("more skills not listed here"));
}

#[test]
fn a_skill_whose_frontmatter_folds_its_description_loads() {
    // As skills in the wild write it: a folded block scalar, metadata a YAML 1.1 reader lists
    // with other types (`1.0` as 1, `yes` as true).
    let skill_md = "---\nname: pdf-processing\ndescription: >-\n  Extract, fill, and assemble PDF\n  \
                    documents.\n\n  Use it for forms.\nmetadata:\n  version: 1.0\n  beta: yes\n---\n\nThe steps.\n";
    let uri = format!("{ROOT}SKILL.md");
    let listed = json!({
        "uri": uri,
        "frontmatter": {"name": "pdf-processing",
                        "description": "Extract, fill, and assemble PDF documents.\nUse it for forms.",
                        "metadata": {"version": 1, "beta": true}},
        "resources": [file(&uri, skill_md.as_bytes())],
    });
    let mut server = Server::default().text(&uri, skill_md);
    let (mut session, left_out) = session_with(std::slice::from_ref(&listed));
    assert!(left_out.is_empty(), "{left_out:?}");
    let (error, content) = load(&mut session, &mut server, json!({"name": "pdf-processing"}));
    assert!(!error, "{content}");
    assert!(content.contains("The steps."), "{content}");

    // A listing whose description says something else is still refused.
    let mut other = listed;
    other["frontmatter"]["description"] = json!("Extract, fill, and assemble PDF documents.");
    let mut server = Server::default().text(&uri, skill_md);
    let (mut session, _) = session_with(&[other]);
    let (error, content) = load(&mut session, &mut server, json!({"name": "pdf-processing"}));
    assert!(error, "{content}");
    assert!(content.contains("description differs"), "{content}");
}
