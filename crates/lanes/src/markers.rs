//! Every exact string a lane shows a model, in one place, and the two ways lanes print server
//! values: size labels and sanitised labels.

/// An inline image or audio block whose data is withheld because it also claims a disposition or
/// carries a uri (RFC-005 vector 2), and an embedded resource that claims a disposition.
pub const WITHHELD: &str =
    "[inline content withheld: nonconformant bulk disposition on inline data]";
/// An image block whose `data` is empty.
pub const IMAGE_NO_DATA: &str = "[Image: no data]";
/// An audio block whose `data` is empty.
pub const AUDIO_NO_DATA: &str = "[Audio: no data]";
/// A `resource` block with no string uri at its top level or under `resource`.
pub const NO_LINK: &str = "[Reference not shown: it arrived without a link.]";
/// An embedded blob with no media type.
pub const RESOURCE_NO_TYPE: &str = "[Resource not shown: its data arrived without a media type.]";
/// An embedded resource with both `text` and `blob`, or neither.
pub const RESOURCE_UNREADABLE: &str =
    "[Resource not shown: its contents arrived as neither text nor data, or as both.]";
/// An image, of any kind, in a system-position injection.
pub const SYSTEM_IMAGE: &str = "[image block not shown: the system prompt carries text only.]";
/// An audio block, of any kind, in a system-position injection.
pub const SYSTEM_AUDIO: &str = "[audio block not shown: the system prompt carries text only.]";
/// What a reference stub ends with until the reference is fetched.
pub const FETCH_HINT: &str = "fetch with fetch_reference";
/// What stands in any text a lane shows for a hidden uri (see [`crate::HiddenUris`]).
pub use mcpl_redact::WITHHELD_LINK;
/// What stands for a hidden uri in a key of structured content: numbered, so that two keys
/// never become one (`[withheld link 1]`, `[withheld link 2]`, ...).
pub fn withheld_link_numbered(n: usize) -> String {
    format!("[withheld link {n}]")
}
/// The longest server string a marker or stub shows, in characters, `…` included.
pub const LABEL_MAX_CHARS: usize = 120;

/// `[image: <mime>, <size>, ref <img ref>]`: a stored copy's placeholder for an image.
pub fn image_placeholder(mime: &str, size: u64, image_ref: &str) -> String {
    format!("[image: {mime}, {}, ref {image_ref}]", size_label(size))
}

/// `[document: <mime>, <size>, ref <doc_ref>]`: a native document's line in the stored copy.
pub fn document_placeholder(mime: &str, size: u64, doc_ref: &str) -> String {
    format!("[document: {mime}, {}, ref {doc_ref}]", size_label(size))
}

/// `[Image not shown: its bytes are not PNG, JPEG, GIF or WebP (<type>, <size>).]`
pub fn image_not_renderable(what: &str, size: u64) -> String {
    format!(
        "[Image not shown: its bytes are not PNG, JPEG, GIF or WebP ({}, {}).]",
        sanitize(what),
        size_label(size)
    )
}

/// `[Image not shown: <size> is over the <limit> this host sends inline per image.]`
pub fn image_over_limit(size: u64, limit: u64) -> String {
    format!(
        "[Image not shown: {} is over the {} this host sends inline per image.]",
        size_label(size),
        limit_label(limit)
    )
}

/// `[audio: <mime>, <size>]`: audio wherever a lane shows it as text.
pub fn audio_line(mime: &str, size: u64) -> String {
    format!("[audio: {}, {}]", sanitize(mime), size_label(size))
}

/// `[Resource not shown: this host can't display its data (<mime>, <size>).]`
pub fn resource_other_type(mime: &str, size: u64) -> String {
    format!(
        "[Resource not shown: this host can't display its data ({}, {}).]",
        sanitize(mime),
        size_label(size)
    )
}

/// `[Resource not shown: this host can't display its data (<mime>, <size>) because <reason>.]`:
/// a PDF that does not go natively where the route takes documents, with why
/// ([`crate::PdfRefusal`]: `it is encrypted`, `its pages could not be counted`, ...).
pub fn resource_not_native(mime: &str, size: u64, reason: &str) -> String {
    format!(
        "[Resource not shown: this host can't display its data ({}, {}) because {reason}.]",
        sanitize(mime),
        size_label(size)
    )
}

/// `[unrecognized content block: <reason>]`
pub fn unrecognized(reason: &str) -> String {
    format!("[unrecognized content block: {}]", sanitize(reason))
}

/// `unknown reference: <id> — it may have been evicted; ids are never reused`
pub fn unknown_reference(id: &str) -> String {
    let shown = if id.is_empty() {
        "(missing ref_id)"
    } else {
        id
    };
    format!(
        "unknown reference: {} — it may have been evicted; ids are never reused",
        sanitize(shown)
    )
}

/// `[tool result withheld: <reason>; it held <n> blocks: <kinds>]`: what remains of a result a
/// host policy withholds. It names kinds only, so nothing of any block's fields survives.
pub fn withheld_result(reason: &str, kinds: &str, blocks: usize) -> String {
    let noun = if blocks == 1 { "block" } else { "blocks" };
    if blocks == 0 {
        format!("[tool result withheld: {}]", sanitize(reason))
    } else {
        format!(
            "[tool result withheld: {}; it held {blocks} {noun}: {kinds}]",
            sanitize(reason)
        )
    }
}

/// A size as lanes print it: `<n>B` below 1024, `~<round(n/1024)>KB` below 1 MiB, `~<x.y>MB`
/// below 1 GiB, else `~<x.y>GB` (12 is `12B`, 12,288 is `~12KB`, 4,233,704 is `~4.0MB`).
pub fn size_label(bytes: u64) -> String {
    match unit(bytes) {
        (n, "B") => format!("{n}B"),
        (n, unit) => format!("~{n}{unit}"),
    }
}

/// A limit as the over-limit line prints it: a size label without the `~` (`5.0MB`).
pub fn limit_label(bytes: u64) -> String {
    let (n, unit) = unit(bytes);
    format!("{n}{unit}")
}

fn unit(bytes: u64) -> (String, &'static str) {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    const GIB: u64 = 1024 * MIB;
    // JavaScript's Math.round: halves round up.
    let round = |n: u64, d: u64| (n + d / 2) / d;
    if bytes < KIB {
        (bytes.to_string(), "B")
    } else if bytes < MIB {
        (round(bytes, KIB).to_string(), "KB")
    } else if bytes < GIB {
        (tenths(bytes, MIB), "MB")
    } else {
        (tenths(bytes, GIB), "GB")
    }
}

/// `bytes / unit` to one decimal place, halves rounding up, as JavaScript's `toFixed(1)` prints
/// ordinary sizes.
fn tenths(bytes: u64, unit: u64) -> String {
    let tenths = (u128::from(bytes) * 10 + u128::from(unit) / 2) / u128::from(unit);
    format!("{}.{}", tenths / 10, tenths % 10)
}

/// Makes a server string safe to show inside a one-line marker or stub: removes C0 and C1
/// controls, DEL, and bidirectional marks, embeddings, overrides and isolates; caps the result
/// at [`LABEL_MAX_CHARS`] characters, keeping 119 and adding `…`.
pub fn sanitize(label: &str) -> String {
    let mut kept = String::with_capacity(label.len().min(4 * LABEL_MAX_CHARS));
    sanitize_into(&mut kept, label);
    kept
}

/// [`sanitize`], appending to `out`.
pub(crate) fn sanitize_into(out: &mut String, label: &str) {
    // Most labels are short printable ASCII, kept whole.
    if label.len() <= LABEL_MAX_CHARS && label.bytes().all(|b| (b' '..b'\x7F').contains(&b)) {
        out.push_str(label);
        return;
    }
    let start = out.len();
    for (count, c) in label.chars().filter(|&c| !is_stripped(c)).enumerate() {
        if count == LABEL_MAX_CHARS {
            // One character too many: cut back to 119 and mark the cut.
            let cut = out[start..]
                .char_indices()
                .nth(LABEL_MAX_CHARS - 1)
                .map_or(out.len(), |(i, _)| start + i);
            out.truncate(cut);
            out.push('…');
            return;
        }
        out.push(c);
    }
}

fn is_stripped(c: char) -> bool {
    mcpl_redact::internal::is_control_or_format(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_as_the_spec_shows() {
        assert_eq!(size_label(12), "12B");
        assert_eq!(size_label(1023), "1023B");
        assert_eq!(size_label(1024), "~1KB");
        assert_eq!(size_label(12_288), "~12KB");
        assert_eq!(size_label(1536), "~2KB");
        assert_eq!(size_label(4_233_704), "~4.0MB");
        assert_eq!(size_label(5 * 1024 * 1024 + 1), "~5.0MB");
        assert_eq!(size_label(3 << 30), "~3.0GB");
        assert_eq!(limit_label(5 * 1024 * 1024), "5.0MB");
        assert_eq!(limit_label(64 * 1024), "64KB");
    }

    #[test]
    fn labels_are_cleaned_and_capped() {
        assert_eq!(sanitize("bad\u{0}\u{7}\u{85}\u{202e}name"), "badname");
        let long = "a".repeat(255);
        let shown = sanitize(&long);
        assert_eq!(shown.chars().count(), 120);
        assert!(shown.ends_with("a…"));
        assert_eq!(sanitize(&"a".repeat(120)), "a".repeat(120));
        let feathers = sanitize(&"🪶".repeat(200));
        assert_eq!(feathers.chars().count(), 120);
    }

    #[rstest::rstest]
    #[case::plain("name.csv".to_owned())]
    #[case::controls("bad\u{0}\u{202e}name".to_owned())]
    #[case::at_the_bound("a".repeat(120))]
    #[case::over_the_bound("a".repeat(121))]
    #[case::control_past_the_bound("é".repeat(119) + "\u{7f}ab")]
    #[case::wide("🪶".repeat(200))]
    fn labels_appended_read_as_labels_alone(#[case] label: String) {
        let mut out = "[ref_1_0000] é — ".to_owned();
        sanitize_into(&mut out, &label);
        assert_eq!(out, format!("[ref_1_0000] é — {}", sanitize(&label)));
    }

    #[test]
    fn markers_read_exactly() {
        assert_eq!(
            image_over_limit(5 * 1024 * 1024 + 1, 5 * 1024 * 1024),
            "[Image not shown: ~5.0MB is over the 5.0MB this host sends inline per image.]"
        );
        assert_eq!(
            resource_other_type("application/pdf", 12_288),
            "[Resource not shown: this host can't display its data (application/pdf, ~12KB).]"
        );
        assert_eq!(
            resource_not_native("application/pdf", 2_500, "it is encrypted"),
            "[Resource not shown: this host can't display its data (application/pdf, ~2KB) because it is encrypted.]"
        );
        assert_eq!(
            unknown_reference("ref_9_zzzz"),
            "unknown reference: ref_9_zzzz — it may have been evicted; ids are never reused"
        );
    }
}
