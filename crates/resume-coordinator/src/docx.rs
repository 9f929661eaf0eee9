//! The resume's Word document: written by job-capabilities' [`build_docx`], then read
//! back before it is offered ([`check_docx`]): its text by [`verify_docx`], and its
//! paragraphs, in order and with their styles (the name as `Title`, section headings as
//! `Heading1`, roles as `Heading2`, bullets as list paragraphs), against the resume's
//! [`Paragraph`]s. Sent as base64.

use std::io::{Cursor, Read};

pub use job_capabilities::documents::{DocxError, build_docx, document_xml, verify_docx};

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

/// The paragraphs of a DOCX's `word/document.xml`, in order: each paragraph's style id
/// (if any) and its text.
///
/// ```
/// use resume_coordinator::docx::{build_docx, read_paragraphs};
/// let bytes = build_docx("# Ada\n## Experience\n- Wrote a program").unwrap();
/// let paragraphs = read_paragraphs(&bytes).unwrap();
/// assert_eq!(paragraphs[1], (Some("Heading1".to_owned()), "Experience".to_owned()));
/// ```
pub fn read_paragraphs(bytes: &[u8]) -> Result<Vec<(Option<String>, String)>, DocxCheckError> {
    let unreadable = |e: &dyn std::fmt::Display| DocxCheckError::Unreadable(e.to_string());
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| unreadable(&e))?;
    let mut xml = String::new();
    archive
        .by_name("word/document.xml")
        .map_err(|e| unreadable(&e))?
        .take(64 * 1024 * 1024)
        .read_to_string(&mut xml)
        .map_err(|e| unreadable(&e))?;
    let mut out = Vec::new();
    let mut rest = xml.as_str();
    while let Some(start) = find_tag(rest, "w:p") {
        let after = &rest[start..];
        let end = after
            .find("</w:p>")
            .map_or(after.len(), |e| e + "</w:p>".len());
        let paragraph = &after[..end];
        let style = paragraph.find("<w:pStyle w:val=\"").and_then(|i| {
            let value = &paragraph[i + "<w:pStyle w:val=\"".len()..];
            value.find('"').map(|q| value[..q].to_owned())
        });
        let mut text = String::new();
        let mut runs = paragraph;
        while let Some(open) = find_tag(runs, "w:t") {
            let inner = &runs[open..];
            let Some(gt) = inner.find('>') else { break };
            if inner[..gt].ends_with('/') {
                runs = &inner[gt + 1..];
                continue;
            }
            let content = &inner[gt + 1..];
            let close = content.find("</w:t>").unwrap_or(content.len());
            text.push_str(&unescape(&content[..close]));
            runs = &content[close..];
        }
        out.push((style, text));
        rest = &after[end..];
    }
    Ok(out)
}

/// The position of the next `<tag>` or `<tag ...>` element.
fn find_tag(text: &str, tag: &str) -> Option<usize> {
    let open = format!("<{tag}");
    let mut from = 0;
    while let Some(i) = text[from..].find(&open) {
        let at = from + i;
        match text[at + open.len()..].chars().next() {
            Some('>' | ' ' | '/') => return Some(at),
            _ => from = at + open.len(),
        }
    }
    None
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// Whether a paragraph style id is the one `style` is written with.
fn styled(style: Style, id: Option<&str>) -> bool {
    match style {
        Style::Title => id == Some("Title"),
        Style::Heading => id == Some("Heading1"),
        Style::Subheading => id == Some("Heading2"),
        Style::Bullet => id.is_some_and(|id| id.starts_with("List")),
        Style::Plain => id.is_none() || id == Some("Normal"),
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
    let found = read_paragraphs(bytes)?;
    let mut next = 0;
    for want in expected {
        let at = found[next..].iter().position(|(style, text)| {
            styled(want.style, style.as_deref()) && same_text(&want.text, text)
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
