//! The demo's skills (SEP-2640): `skills/list` lists two, each with its files' sizes and
//! sha256 digests, and `resources/read` serves their files. `chart-reading` has an image file.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::media;

/// Where the demo's skills are: `skill://mcpl-demo/<name>/<path>`.
const ROOT: &str = "skill://mcpl-demo";

/// One skill: its name, its description, and its files (path, MIME type, bytes).
type DemoSkill = (
    &'static str,
    &'static str,
    [(&'static str, &'static str, &'static [u8]); 2],
);

const SKILLS: [DemoSkill; 2] = [
    (
        "chart-reading",
        "Read a chart image and say what its trend is.",
        [
            ("SKILL.md", "text/markdown", CHART_SKILL.as_bytes()),
            ("examples/chart.png", "image/png", media::PNG),
        ],
    ),
    (
        "csv-report",
        "Summarise the demo's report.csv by region.",
        [
            ("SKILL.md", "text/markdown", CSV_SKILL.as_bytes()),
            ("references/columns.md", "text/markdown", COLUMNS.as_bytes()),
        ],
    ),
];

const CHART_SKILL: &str = "---\nname: chart-reading\ndescription: Read a chart image and say \
    what its trend is.\n---\n\n# Reading a chart\n\n1. Look at examples/chart.png (load it with \
    its file name).\n2. Name the axes, then say the trend in one sentence.\n";

const CSV_SKILL: &str = "---\nname: csv-report\ndescription: Summarise the demo's report.csv \
    by region.\n---\n\n# Summarising report.csv\n\nRead references/columns.md for the columns, \
    then give one line per region.\n";

const COLUMNS: &str = "# Columns\n\n- region: where the sale was\n- total: its amount\n";

/// The `skills/list` result: every skill with its frontmatter and manifest.
pub(crate) fn list() -> Value {
    let skills: Vec<Value> = SKILLS
        .iter()
        .map(|(name, description, files)| {
            let resources: Vec<Value> = files
                .iter()
                .map(|(path, _, bytes)| {
                    json!({"uri": format!("{ROOT}/{name}/{path}"), "size": bytes.len(),
                       "digest": digest(bytes)})
                })
                .collect();
            json!({"uri": format!("{ROOT}/{name}/SKILL.md"),
                   "frontmatter": {"name": name, "description": description},
                   "resources": resources})
        })
        .collect();
    json!({"skills": skills})
}

/// `sha256:` and the hex digits of the bytes' sha256, as a skill's manifest gives it.
fn digest(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// The `resources/read` contents of a skill file, when `uri` names one.
pub(crate) fn read(uri: &str) -> Option<Value> {
    SKILLS.iter().find_map(|(name, _, files)| {
        let (_, mime_type, bytes) = files
            .iter()
            .find(|(path, _, _)| uri == format!("{ROOT}/{name}/{path}"))?;
        Some(match std::str::from_utf8(bytes) {
            Ok(text) if mime_type.starts_with("text/") => {
                json!({"uri": uri, "mimeType": mime_type, "text": text})
            }
            _ => json!({"uri": uri, "mimeType": mime_type, "blob": media::base64(bytes)}),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_file_is_served_as_its_manifest_says() {
        let listed = list();
        for skill in listed["skills"].as_array().unwrap() {
            for file in skill["resources"].as_array().unwrap() {
                let contents = read(file["uri"].as_str().unwrap()).unwrap();
                let bytes = match contents.get("text") {
                    Some(text) => text.as_str().unwrap().as_bytes().to_vec(),
                    None => {
                        use base64::Engine;
                        let blob = contents["blob"].as_str().unwrap();
                        base64::engine::general_purpose::STANDARD
                            .decode(blob)
                            .unwrap()
                    }
                };
                assert_eq!(bytes.len() as u64, file["size"].as_u64().unwrap());
                assert_eq!(digest(&bytes), file["digest"]);
            }
        }
        assert!(read("skill://mcpl-demo/csv-report/../chart-reading/SKILL.md").is_none());
    }
}
