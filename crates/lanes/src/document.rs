//! A PDF's page count, read by `lopdf` under a size limit, for the document checks of a lane and
//! the per-page price of the budget.

use mcpl_classify::Payload;

/// The most decoded bytes of a PDF whose pages are counted. A larger PDF (or one `lopdf`
/// cannot read) has no count, and whoever prices it uses a conservative bound instead.
pub const PDF_COUNT_LIMIT: u64 = 8 * 1024 * 1024;

/// The most bytes `lopdf` may inflate one object or cross-reference stream to while it reads
/// the page tree (its own default is 256 MiB): a compressed stream cannot balloon the host.
pub const PDF_STREAM_LIMIT: usize = 4 * 1024 * 1024;

/// How many pages the PDF in `data` (base64) has, or `None` when it is over
/// [`PDF_COUNT_LIMIT`], its base64 is not sound, or `lopdf` cannot read its page tree.
pub fn pdf_pages(data: &str) -> Option<u32> {
    let payload = Payload::new(data).ok()?;
    let len = payload.decoded_len();
    if len > PDF_COUNT_LIMIT {
        return None;
    }
    let bytes = payload.decode_prefix(usize::try_from(len).ok()?).ok()?;
    if !bytes.starts_with(b"%PDF-") {
        return None;
    }
    let options = lopdf::LoadOptions {
        max_decompressed_size: Some(PDF_STREAM_LIMIT),
        ..lopdf::LoadOptions::default()
    };
    let document = lopdf::Document::load_mem_with_options(&bytes, options).ok()?;
    u32::try_from(document.get_pages().len())
        .ok()
        .filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn pages_of_real_pdfs() {
        assert_eq!(
            pdf_pages(&b64(&mcpl_testkit::fixture("document.pdf"))),
            Some(1)
        );
        assert_eq!(
            pdf_pages(&b64(&mcpl_testkit::fixture("three-pages.pdf"))),
            Some(3)
        );
    }

    #[test]
    fn an_unreadable_pdf_has_no_count() {
        let pdf = mcpl_testkit::fixture("three-pages.pdf");
        for cut in [6, pdf.len() / 3, pdf.len() / 2] {
            // lopdf may rebuild a cut file's page tree from its objects; it never panics.
            let pages = pdf_pages(&b64(&pdf[..cut]));
            assert!(pages.is_none_or(|n| n <= 3), "{cut}: {pages:?}");
        }
        assert_eq!(pdf_pages(&b64(b"%PDF-1.4 nothing else")), None);
        assert_eq!(pdf_pages(&b64(b"GIF89a")), None);
        assert_eq!(pdf_pages("not base64!"), None);
        let mut big = b"%PDF-1.4\n".to_vec();
        big.resize(PDF_COUNT_LIMIT as usize + 1, b' ');
        assert_eq!(pdf_pages(&b64(&big)), None);
    }
}
