//! The `demo://` resources: the ones tools embed or link to, which `resources/read` serves.

use serde_json::{Map, Value, json};

use crate::media;

/// The markdown note the `embedded-text` tool embeds.
pub(crate) const README_URI: &str = "demo://notes/readme.md";
/// The CSV report the `resource-link` tool links to.
pub(crate) const REPORT_URI: &str = "demo://files/report.csv";
/// The PNG the `embedded-image` tool embeds.
pub(crate) const IMAGE_URI: &str = "demo://images/image.png";
/// The PDF the `pdf` tool embeds.
pub(crate) const PDF_URI: &str = "demo://docs/document.pdf";
/// The blob without a media type the `untyped-blob` tool embeds.
pub(crate) const UNTYPED_URI: &str = "demo://blobs/untyped";
/// The resource with both text and data the `text-and-blob` tool embeds.
pub(crate) const BOTH_URI: &str = "demo://notes/both.txt";

const README_MD: &str = "# Demo notes\n\n\
This note is an embedded text resource from the mcpl demo server.\n\n\
- It is markdown.\n- It has a `demo://` uri, which the host does not show.\n";

/// The report's size in bytes, which the resource link claims.
pub(crate) const REPORT_BYTES: usize = 1234;

/// What a resource holds.
enum Body {
    Text(String),
    Blob(&'static [u8]),
    /// Both at once, which MCP does not allow: the `text-and-blob` tool's odd resource.
    TextAndBlob(&'static str, &'static [u8]),
}

/// One `demo://` resource.
pub(crate) struct Resource {
    pub(crate) uri: &'static str,
    name: &'static str,
    mime_type: Option<&'static str>,
    body: Body,
}

impl Resource {
    /// Its contents as `resources/read` and an embedded resource carry them:
    /// `{"uri", "mimeType", "text" | "blob"}`.
    pub(crate) fn contents(&self) -> Value {
        let mut contents = Map::new();
        contents.insert("uri".into(), self.uri.into());
        if let Some(mime_type) = self.mime_type {
            contents.insert("mimeType".into(), mime_type.into());
        }
        match &self.body {
            Body::Text(text) => {
                contents.insert("text".into(), text.as_str().into());
            }
            Body::Blob(bytes) => {
                contents.insert("blob".into(), media::base64(bytes).into());
            }
            Body::TextAndBlob(text, bytes) => {
                contents.insert("text".into(), (*text).into());
                contents.insert("blob".into(), media::base64(bytes).into());
            }
        }
        Value::Object(contents)
    }

    /// Its entry in `resources/list`.
    pub(crate) fn listing(&self) -> Value {
        let size = match &self.body {
            Body::Text(text) => text.len(),
            Body::Blob(bytes) | Body::TextAndBlob(_, bytes) => bytes.len(),
        };
        let mut entry = json!({"uri": self.uri, "name": self.name});
        if let Some(mime_type) = self.mime_type {
            entry["mimeType"] = mime_type.into();
        }
        entry["size"] = size.into();
        entry
    }
}

/// Every resource, in the order `resources/list` gives them.
pub(crate) fn all() -> Vec<Resource> {
    vec![
        Resource {
            uri: README_URI,
            name: "readme.md",
            mime_type: Some("text/markdown"),
            body: Body::Text(README_MD.to_owned()),
        },
        Resource {
            uri: REPORT_URI,
            name: "report.csv",
            mime_type: Some("text/csv"),
            body: Body::Text(report_csv()),
        },
        Resource {
            uri: IMAGE_URI,
            name: "image.png",
            mime_type: Some("image/png"),
            body: Body::Blob(media::PNG),
        },
        Resource {
            uri: PDF_URI,
            name: "document.pdf",
            mime_type: Some("application/pdf"),
            body: Body::Blob(media::PDF),
        },
        Resource {
            uri: UNTYPED_URI,
            name: "untyped",
            mime_type: None,
            body: Body::Blob(media::ZIP),
        },
        Resource {
            uri: BOTH_URI,
            name: "both.txt",
            mime_type: Some("text/plain"),
            body: Body::TextAndBlob("This is plain text, not an image.\n", media::NOTE),
        },
    ]
}

/// The resource at `uri`, if the server has one.
pub(crate) fn find(uri: &str) -> Option<Resource> {
    all().into_iter().find(|resource| resource.uri == uri)
}

/// The resource at a uri this crate names; every such uri is in [`all`].
pub(crate) fn get(uri: &str) -> Resource {
    find(uri).unwrap_or_else(|| unreachable!("{uri} is not a demo resource"))
}

/// A CSV of exactly [`REPORT_BYTES`] bytes: a 24-byte header and 55 rows of 22 bytes.
fn report_csv() -> String {
    const REGIONS: [&str; 4] = ["NE", "NW", "SE", "SW"];
    let mut csv = String::from("id,region,units,revenue\n");
    for n in 1..=55u32 {
        let region = REGIONS[(n % 4) as usize];
        let units = n * 7 % 100;
        let cents = n * 1234 % 10_000;
        csv.push_str(&format!(
            "{n:04},{region},{units:04},{:05}.{:02}\n",
            units * 12 + cents / 100,
            cents % 100
        ));
    }
    csv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_is_as_long_as_its_link_claims() {
        assert_eq!(report_csv().len(), REPORT_BYTES);
    }
}
