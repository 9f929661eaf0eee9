//! The resume's Word document: written by job-capabilities' [`build_docx`], then read
//! back before it is offered ([`check_docx`]): its text by [`verify_docx`], and its
//! paragraphs, in order and with their styles (the name as `Title`, section headings as
//! `Heading1`, roles as `Heading2`, bullets as list paragraphs), against the resume's
//! [`Paragraph`]s. Sent as base64.

pub use job_capabilities::documents::{
    DocxError, DocxParagraph, build_docx, document_xml, docx_paragraphs, verify_docx,
};

use crate::document::{Paragraph, Style};

/// Why a DOCX was not offered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocxCheckError {
    /// It could not be written, or its text does not read back.
    #[error(transparent)]
    Docx(#[from] DocxError),
    /// Its body could not be unpacked.
    #[error("the DOCX body cannot be read back: {0}")]
    Unreadable(String),
    /// A paragraph of the resume is not in it, in its place and style.
    #[error("the DOCX does not have {style:?} paragraph {text:?} in its place")]
    Missing {
        /// The style the paragraph should have.
        style: Style,
        /// Its text.
        text: String,
    },
}

/// Whether a paragraph (its style id, and whether it is a list item) is what `style` is
/// written as.
fn styled(style: Style, id: Option<&str>, list_item: bool) -> bool {
    match style {
        Style::Title => id == Some("Title"),
        Style::Heading => id == Some("Heading1"),
        Style::Subheading => id == Some("Heading2"),
        Style::Bullet => list_item,
        Style::Plain => !list_item && (id.is_none() || id == Some("Normal")),
    }
}

fn same_text(want: &str, got: &str) -> bool {
    let squash = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let got = got.trim();
    let got = got.strip_prefix('•').unwrap_or(got);
    squash(want) == squash(got)
}

/// Reads the DOCX back: every paragraph's text must be in it ([`verify_docx`]), and the
/// paragraphs must be there in order with their styles.
///
/// ```
/// use resume_coordinator::docx::{build_docx, check_docx};
/// use resume_coordinator::document::{paragraphs_of_markdown, markdown_of};
/// let paragraphs = paragraphs_of_markdown("# Ada\nada@example.com\n## Experience\n### Analyst (1842-1843)\n- Wrote a program");
/// let bytes = build_docx(&markdown_of(&paragraphs)).unwrap();
/// check_docx(&bytes, &paragraphs).unwrap();
/// let other = paragraphs_of_markdown("# Ada\n## Experience\n- Analyst (1842-1843)");
/// assert!(check_docx(&bytes, &other).is_err());
/// ```
pub fn check_docx(bytes: &[u8], expected: &[Paragraph]) -> Result<(), DocxCheckError> {
    let texts: Vec<String> = expected.iter().map(|p| p.text.clone()).collect();
    verify_docx(bytes, &texts)?;
    let found = docx_paragraphs(bytes).map_err(|e| DocxCheckError::Unreadable(e.to_string()))?;
    let mut next = 0;
    for want in expected {
        let at = found[next..].iter().position(|p| {
            styled(want.style, p.style.as_deref(), p.list_item) && same_text(&want.text, &p.text)
        });
        match at {
            Some(i) => next += i + 1,
            None => {
                return Err(DocxCheckError::Missing {
                    style: want.style,
                    text: want.text.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Standard base64 with padding.
///
/// ```
/// assert_eq!(resume_coordinator::docx::base64("Ma".as_bytes()), "TWE=");
/// assert_eq!(resume_coordinator::docx::base64(b"hello!"), "aGVsbG8h");
/// ```
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_pads() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
    }
}
