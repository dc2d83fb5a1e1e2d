//! What a PDF is found to be before it goes natively: its pages, counted by `lopdf` under a size
//! limit, and whether it is encrypted. A PDF goes natively only when its pages were counted,
//! they are within the route's pages per document, it is within its bytes per document, and it
//! is not encrypted (decision 0109); otherwise [`PdfRefusal`] says why, in the words its marker
//! shows.

use std::fmt;

use mcpl_classify::{Media, Payload};

use crate::route::RequestLimits;

/// The most decoded bytes of a PDF whose pages are counted. A larger PDF has no count, so it
/// does not go natively.
pub const PDF_COUNT_LIMIT: u64 = 8 * 1024 * 1024;

/// The most bytes `lopdf` may inflate one object or cross-reference stream to while it reads
/// the page tree (its own default is 256 MiB): a compressed stream cannot balloon the host.
pub const PDF_STREAM_LIMIT: usize = 4 * 1024 * 1024;

/// Why a PDF does not go natively. Its [`fmt::Display`] is the reason its marker gives, after
/// "because".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PdfRefusal {
    /// Its base64 is empty or not sound.
    NotBase64,
    /// It is over the route's bytes per document.
    OverBytes {
        /// The route's most decoded bytes of one document.
        limit: u64,
    },
    /// It is over [`PDF_COUNT_LIMIT`], so its pages were not counted.
    OverCountLimit,
    /// `lopdf` could not read it or find its page tree.
    Uncounted,
    /// It is encrypted (its trailer has `/Encrypt`): providers refuse such PDFs.
    Encrypted,
    /// Its page tree holds no page.
    NoPages,
    /// It has more pages than the route takes in one document.
    OverPages {
        /// Its pages.
        pages: u32,
        /// The route's most pages of one document.
        limit: u32,
    },
}

impl fmt::Display for PdfRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PdfRefusal::NotBase64 => f.write_str("its base64 is not valid"),
            PdfRefusal::OverBytes { limit } => write!(
                f,
                "it is over the {} this route takes per document",
                crate::markers::limit_label(*limit)
            ),
            PdfRefusal::OverCountLimit => write!(
                f,
                "it is over the {} whose pages this host counts",
                crate::markers::limit_label(PDF_COUNT_LIMIT)
            ),
            PdfRefusal::Uncounted => f.write_str("its pages could not be counted"),
            PdfRefusal::Encrypted => f.write_str("it is encrypted"),
            PdfRefusal::NoPages => f.write_str("it has no pages"),
            PdfRefusal::OverPages { pages, limit } => write!(
                f,
                "it has {pages} pages, over the {limit} this route takes per document"
            ),
        }
    }
}

/// The pages of the PDF in `media` when it may go natively on a route with these limits: its
/// base64 is sound, it is within the bytes and pages per document, its pages were counted and
/// it is not encrypted.
pub fn native_pages(media: &Media<'_>, limits: &RequestLimits) -> Result<u32, PdfRefusal> {
    if media.is_empty() || media.base64.is_some() {
        return Err(PdfRefusal::NotBase64);
    }
    if let Some(limit) = limits.document_bytes
        && !media.within(limit)
    {
        return Err(PdfRefusal::OverBytes { limit });
    }
    let pages = pdf_pages(media.data)?;
    match limits.document_pages {
        Some(limit) if pages > limit => Err(PdfRefusal::OverPages { pages, limit }),
        _ => Ok(pages),
    }
}

/// How many pages the PDF in `data` (base64) has, or why they were not counted: it is over
/// [`PDF_COUNT_LIMIT`], its base64 is not sound, `lopdf` cannot read its page tree, the tree
/// holds no page, or it is encrypted.
///
/// The count is the larger of the pages `lopdf` walks and the `/Count` the tree's root claims,
/// so a tree it walks only in part is not counted short.
pub fn pdf_pages(data: &str) -> Result<u32, PdfRefusal> {
    let payload = Payload::new(data).map_err(|_| PdfRefusal::NotBase64)?;
    let len = payload.decoded_len();
    if len > PDF_COUNT_LIMIT {
        return Err(PdfRefusal::OverCountLimit);
    }
    let len = usize::try_from(len).map_err(|_| PdfRefusal::OverCountLimit)?;
    let bytes = payload
        .decode_prefix(len)
        .map_err(|_| PdfRefusal::NotBase64)?;
    if !bytes.starts_with(b"%PDF-") {
        return Err(PdfRefusal::Uncounted);
    }
    // A trailer or cross-reference stream that names `/Encrypt` is never compressed, so the
    // bytes show it whatever `lopdf` makes of the file (it opens one with an empty password
    // and then drops the entry).
    if names_encrypt(&bytes) {
        return Err(PdfRefusal::Encrypted);
    }
    let options = lopdf::LoadOptions {
        max_decompressed_size: Some(PDF_STREAM_LIMIT),
        ..lopdf::LoadOptions::default()
    };
    let document = lopdf::Document::load_mem_with_options(&bytes, options)
        .map_err(|_| PdfRefusal::Uncounted)?;
    if document.was_encrypted() || document.trailer.has(b"Encrypt") {
        return Err(PdfRefusal::Encrypted);
    }
    let claimed = page_tree_count(&document).ok_or(PdfRefusal::Uncounted)?;
    let walked = u32::try_from(document.page_iter().count()).unwrap_or(u32::MAX);
    match walked.max(claimed) {
        0 => Err(PdfRefusal::NoPages),
        pages => Ok(pages),
    }
}

/// The `/Count` of the page tree's root (0 when it has none that reads as a count), or `None`
/// when the catalog leads to no page tree `lopdf` walks: a root object with `/Kids`.
fn page_tree_count(document: &lopdf::Document) -> Option<u32> {
    let root = document
        .catalog()
        .ok()?
        .get(b"Pages")
        .ok()?
        .as_reference()
        .ok()?;
    let root = document.get_dictionary(root).ok()?;
    root.get_deref(b"Kids", document).ok()?.as_array().ok()?;
    let count = root
        .get_deref(b"Count", document)
        .ok()
        .and_then(|count| count.as_i64().ok())
        .unwrap_or(0);
    Some(u32::try_from(count.max(0)).unwrap_or(u32::MAX))
}

/// Whether the bytes hold the name `/Encrypt`, or a longer one it begins (`/EncryptMetadata`,
/// which only an encryption dictionary holds).
fn names_encrypt(bytes: &[u8]) -> bool {
    memchr::memmem::find(bytes, b"/Encrypt").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn pages_of(fixture: &str) -> Result<u32, PdfRefusal> {
        pdf_pages(&b64(&mcpl_testkit::fixture(fixture)))
    }

    #[test]
    fn pages_of_real_pdfs() {
        assert_eq!(pages_of("document.pdf"), Ok(1));
        assert_eq!(pages_of("three-pages.pdf"), Ok(3));
        // Object streams and a cross-reference stream.
        assert_eq!(pages_of("three-pages-object-streams.pdf"), Ok(3));
        assert_eq!(pages_of("150-pages.pdf"), Ok(150));
    }

    #[test]
    fn a_pdf_without_a_page_tree_lopdf_walks_is_not_counted() {
        // qpdf and pypdf count its 150 pages; lopdf finds no page tree.
        assert_eq!(
            pages_of("150-pages-direct-tree.pdf"),
            Err(PdfRefusal::Uncounted)
        );
        assert_eq!(pages_of("no-pages.pdf"), Err(PdfRefusal::NoPages));
    }

    #[test]
    fn an_encrypted_pdf_is_found_whether_lopdf_opens_it_or_not() {
        for fixture in [
            "encrypted.pdf",
            "encrypted-empty-password.pdf",
            "encrypted-aes128-empty-password.pdf",
        ] {
            assert_eq!(pages_of(fixture), Err(PdfRefusal::Encrypted), "{fixture}");
            // The trailer's name spelled with an escape (`#79` is `y`) hides it from the bytes;
            // lopdf still reads it, and opens the file or not.
            let pdf = mcpl_testkit::fixture(fixture);
            let at = memchr::memmem::rfind(&pdf, b"/Encrypt ").expect("a trailer names it");
            let hidden = [&pdf[..at], b"/Encr#79pt", &pdf[at + 8..]].concat();
            assert!(!names_encrypt(&hidden));
            assert_eq!(
                pdf_pages(&b64(&hidden)),
                Err(PdfRefusal::Encrypted),
                "{fixture}"
            );
        }
    }

    #[test]
    fn the_bytes_name_encrypt() {
        assert!(names_encrypt(b"trailer << /Encrypt 7 0 R >>"));
        assert!(names_encrypt(b"<</Encrypt<</Filter/Standard>>>>"));
        assert!(names_encrypt(b"/Encrypt"));
        assert!(names_encrypt(b"<< /EncryptMetadata false >>"));
        assert!(!names_encrypt(b"Encrypt"));
        assert!(!names_encrypt(b"/Encr#79pt 7 0 R"));
    }

    #[test]
    fn an_unreadable_pdf_has_no_count() {
        let pdf = mcpl_testkit::fixture("three-pages.pdf");
        for cut in [6, pdf.len() / 3, pdf.len() / 2] {
            // lopdf may rebuild a cut file's page tree from its objects; it never panics.
            let pages = pdf_pages(&b64(&pdf[..cut]));
            assert!(
                pages.is_err() || pages.is_ok_and(|n| n <= 3),
                "{cut}: {pages:?}"
            );
        }
        assert_eq!(pdf_pages(&b64(b"%PDF-")), Err(PdfRefusal::Uncounted));
        assert_eq!(
            pdf_pages(&b64(b"%PDF-1.4 nothing else")),
            Err(PdfRefusal::Uncounted)
        );
        assert_eq!(pdf_pages(&b64(b"GIF89a")), Err(PdfRefusal::Uncounted));
        assert_eq!(pdf_pages("not base64!"), Err(PdfRefusal::NotBase64));
        let mut big = b"%PDF-1.4\n".to_vec();
        big.resize(PDF_COUNT_LIMIT as usize + 1, b' ');
        assert_eq!(pdf_pages(&b64(&big)), Err(PdfRefusal::OverCountLimit));
    }

    #[test]
    fn a_pdf_is_held_to_the_route_before_it_is_read() {
        let anthropic = crate::RouteId::Anthropic.request_limits();
        let inspect = |data: &str| native_pages(&Media::inspect(data, None), &anthropic);
        let mut big = b"%PDF-1.4\n".to_vec();
        big.resize(24_000_001, b' ');
        assert_eq!(
            inspect(&b64(&big)),
            Err(PdfRefusal::OverBytes { limit: 24_000_000 })
        );
        let pages = b64(&mcpl_testkit::fixture("150-pages.pdf"));
        assert_eq!(
            inspect(&pages),
            Err(PdfRefusal::OverPages {
                pages: 150,
                limit: 100
            })
        );
        let gemini = crate::RouteId::Gemini.request_limits();
        assert_eq!(
            native_pages(&Media::inspect(&pages, None), &gemini),
            Ok(150)
        );
        let pdf = b64(&mcpl_testkit::fixture("document.pdf"));
        assert_eq!(inspect(&pdf), Ok(1));
        assert_eq!(inspect(&pdf[1..]), Err(PdfRefusal::NotBase64));
    }

    #[test]
    fn reasons_read_as_words() {
        let reasons = [
            (PdfRefusal::NotBase64, "its base64 is not valid"),
            (
                PdfRefusal::OverBytes { limit: 24_000_000 },
                "it is over the 22.9MB this route takes per document",
            ),
            (
                PdfRefusal::OverCountLimit,
                "it is over the 8.0MB whose pages this host counts",
            ),
            (PdfRefusal::Uncounted, "its pages could not be counted"),
            (PdfRefusal::Encrypted, "it is encrypted"),
            (PdfRefusal::NoPages, "it has no pages"),
            (
                PdfRefusal::OverPages {
                    pages: 150,
                    limit: 100,
                },
                "it has 150 pages, over the 100 this route takes per document",
            ),
        ];
        for (refusal, words) in reasons {
            assert_eq!(refusal.to_string(), words);
        }
    }
}
