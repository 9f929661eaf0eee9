//! PDF text through `pdf-extract`, with encryption detected first and panics caught.

use std::panic::{AssertUnwindSafe, catch_unwind};

use pdf_extract::{Document, PlainTextOutput, output_doc_page};

use super::{DocumentError, DocumentKind, contains};

/// Whether `%PDF-` occurs in the first 1024 bytes, where readers look for it.
pub(super) fn has_pdf_header(bytes: &[u8]) -> bool {
    contains(&bytes[..bytes.len().min(1024)], b"%PDF-")
}

/// The raw text of a PDF, page after page, not yet normalized.
pub(super) fn extract(bytes: &[u8]) -> Result<String, DocumentError> {
    let unreadable = |reason: String| DocumentError::unreadable(DocumentKind::Pdf, reason);
    if !has_pdf_header(bytes) {
        return Err(unreadable(
            "it has no PDF header (%PDF-); the file is damaged or not a PDF".to_owned(),
        ));
    }
    // An /Encrypt entry anywhere means a trailer may name an encryption dictionary.
    let mentions_encrypt = contains(bytes, b"/Encrypt");

    let doc = match catch_unwind(AssertUnwindSafe(|| Document::load_mem(bytes))) {
        Ok(Ok(doc)) => doc,
        Ok(Err(err)) if mentions_encrypt => {
            tracing::debug!(error = %err, "encrypted PDF failed to load");
            return Err(DocumentError::Encrypted { path: None });
        }
        Ok(Err(err)) => {
            return Err(unreadable(format!(
                "the file is damaged or incomplete ({err})"
            )));
        }
        Err(_) if mentions_encrypt => {
            tracing::warn!("the PDF parser panicked on an encrypted PDF");
            return Err(DocumentError::Encrypted { path: None });
        }
        Err(_) => {
            tracing::warn!("the PDF parser panicked while loading a document");
            return Err(unreadable(
                "the PDF parser failed on this file; it is probably damaged".to_owned(),
            ));
        }
    };

    // lopdf opens a PDF whose user password is empty (one that only restricts printing
    // or copying) and removes /Encrypt from the trailer; one still there needs a password.
    if doc.trailer.has(b"Encrypt") || doc.is_encrypted() {
        return Err(DocumentError::Encrypted { path: None });
    }
    if doc.was_encrypted() {
        tracing::info!("PDF restricts permissions but opens without a password; reading it");
    }

    let pages = doc.get_pages();
    let mut text = String::new();
    let mut failed = Vec::new();
    let mut first_failure = None;
    {
        let mut output = PlainTextOutput::new(&mut text);
        for &page in pages.keys() {
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                output_doc_page(&doc, &mut output, page)
            }));
            let failure = match outcome {
                Ok(Ok(())) => continue,
                Ok(Err(err)) => err.to_string(),
                Err(_) => "the PDF parser panicked".to_owned(),
            };
            tracing::warn!(page, reason = %failure, "could not extract the text of a PDF page");
            failed.push(page);
            first_failure.get_or_insert(failure);
        }
    }
    if let Some(reason) = first_failure
        && failed.len() == pages.len()
    {
        return Err(unreadable(format!(
            "no page could be read; the file is probably damaged ({reason})"
        )));
    }
    if !failed.is_empty() {
        tracing::warn!(
            ?failed,
            pages = pages.len(),
            "some PDF pages were skipped; the text is incomplete"
        );
    }
    Ok(text)
}
