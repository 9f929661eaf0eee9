//! The resume's Word document: written by job-capabilities' `build_docx`, then read
//! back before it is offered ([`check_docx`]): its paragraphs, in order and with their
//! styles (the name as `Title`, section headings as `Heading1`, roles as `Heading2`,
//! bullets as list items), against the resume's [`Paragraph`]s. Sent as base64.

use job_capabilities::documents::{DocxError, check_docx_paragraphs};

use crate::document::{Paragraph, Style};

/// Reads the DOCX back: every paragraph must be in it, in order, with its style and
/// text ([`check_docx_paragraphs`]).
pub fn check_docx(bytes: &[u8], expected: &[Paragraph]) -> Result<(), DocxError> {
    let expected: Vec<(Style, &str)> = expected
        .iter()
        .map(|p| (p.style, p.text.as_str()))
        .collect();
    check_docx_paragraphs(bytes, &expected)
}

#[cfg(test)]
mod tests {
    #[test]
    fn check_docx_accepts_the_documents_own_paragraphs_and_refuses_others() {
        use crate::document::{markdown_of, paragraphs_of_markdown};
        use crate::docx::check_docx;
        use job_capabilities::documents::build_docx;
        let paragraphs = paragraphs_of_markdown(
            "# Ada\nada@example.com\n## Experience\n### Analyst (1842-1843)\n- Wrote a program",
        );
        let bytes = build_docx(&markdown_of(&paragraphs)).unwrap();
        check_docx(&bytes, &paragraphs).unwrap();
        let other = paragraphs_of_markdown("# Ada\n## Experience\n- Analyst (1842-1843)");
        assert!(check_docx(&bytes, &other).is_err());
    }
}
