//! Writing a minimal Word document from Markdown-like text (a title, headings, bullets)
//! with Word's own paragraph styles and a real bulleted list (Word's numbering, not a
//! typed "•"), and reading it back to check that what must be in it is: a document is
//! offered only once it reads back.

use super::{DocxParagraph, docx_paragraphs, normalize_text, strip_bullet};
use std::io::{Cursor, Write};
use zip::CompressionMethod;
use zip::ZipWriter;
use zip::write::SimpleFileOptions;

/// Why the DOCX could not be made or did not read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocxError {
    /// Writing the archive failed.
    #[error("cannot write the DOCX: {0}")]
    Write(String),
    /// The document could not be read back.
    #[error("the DOCX does not read back: {0}")]
    Unreadable(String),
    /// A paragraph that must be in the document is not, in its order and style.
    #[error("the DOCX read back has no {style:?} paragraph {text:?} in its place")]
    Misplaced {
        /// The style it should have.
        style: DocxStyle,
        /// Its text.
        text: String,
    },
}

/// How a paragraph is written in a DOCX (and how [`build_docx`]'s Markdown-like input
/// asks for it): the document's title, a section heading, a subheading, a list item, or
/// a plain paragraph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DocxStyle {
    /// `Title` (`# `).
    Title,
    /// `Heading1` (`## `).
    Heading1,
    /// `Heading2` (`### `).
    Heading2,
    /// A `ListBullet` item of the bulleted list (`- `).
    ListItem,
    /// A paragraph with no style.
    Plain,
}

impl DocxStyle {
    /// The Markdown-like prefix [`build_docx`] reads as this style.
    pub fn markdown_prefix(self) -> &'static str {
        match self {
            DocxStyle::Title => "# ",
            DocxStyle::Heading1 => "## ",
            DocxStyle::Heading2 => "### ",
            DocxStyle::ListItem => "- ",
            DocxStyle::Plain => "",
        }
    }

    /// Whether `paragraph`, read back from a DOCX, is written in this style.
    pub fn matches(self, paragraph: &DocxParagraph) -> bool {
        let style = paragraph.style.as_deref();
        match self {
            DocxStyle::Title => style == Some("Title"),
            DocxStyle::Heading1 => style == Some("Heading1"),
            DocxStyle::Heading2 => style == Some("Heading2"),
            DocxStyle::ListItem => paragraph.list_item,
            DocxStyle::Plain => !paragraph.list_item && matches!(style, None | Some("Normal")),
        }
    }
}

/// Reads the DOCX back and checks that every `expected` paragraph is in it, in order,
/// each in its style with its text (runs of white space, a typed leading "•" and a
/// heading's trailing colon aside): what a product checks before it offers a document.
///
/// ```
/// use job_capabilities::documents::{DocxStyle, build_docx, check_docx_paragraphs};
/// let bytes = build_docx("# Ada\nada@example.com\n## Experience\n- Wrote a program").unwrap();
/// let expected = [(DocxStyle::Title, "Ada"), (DocxStyle::Heading1, "Experience"), (DocxStyle::ListItem, "Wrote a program")];
/// check_docx_paragraphs(&bytes, &expected).unwrap();
/// assert!(check_docx_paragraphs(&bytes, &[(DocxStyle::Heading2, "Experience")]).is_err());
/// ```
pub fn check_docx_paragraphs<T: AsRef<str>>(
    bytes: &[u8],
    expected: &[(DocxStyle, T)],
) -> Result<(), DocxError> {
    let squash = |text: &str| {
        let text = text.trim();
        let text = text.strip_prefix('•').unwrap_or(text);
        normalize_text(text.trim_end_matches(':'))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let found = docx_paragraphs(bytes).map_err(|e| DocxError::Unreadable(e.to_string()))?;
    let mut next = 0;
    for (style, text) in expected {
        let want = squash(text.as_ref());
        let at = found[next..]
            .iter()
            .position(|p| style.matches(p) && squash(&p.text) == want);
        match at {
            Some(i) => next += i + 1,
            None => {
                return Err(DocxError::Misplaced {
                    style: *style,
                    text: text.as_ref().to_owned(),
                });
            }
        }
    }
    Ok(())
}

const CONTENT_TYPES: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/><Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/><Override PartName="/word/numbering.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.numbering+xml"/></Types>"#;

const RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#;

const DOCUMENT_RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/numbering" Target="numbering.xml"/></Relationships>"#;

/// The bulleted list every `ListBullet` paragraph belongs to: numbering definition 1, a
/// "•" at the first level.
const NUMBERING: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:numbering xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:abstractNum w:abstractNumId="0"><w:multiLevelType w:val="singleLevel"/><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="bullet"/><w:lvlText w:val="•"/><w:lvlJc w:val="left"/><w:pPr><w:ind w:left="360" w:hanging="240"/></w:pPr></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num></w:numbering>"#;

/// The paragraph styles the document uses: `Title`, `Heading1` and `Heading2` (with
/// outline levels, so readers and ATS parsers see the structure) and `ListBullet`, Word's
/// "List Bullet", tied to the bulleted list of [`NUMBERING`].
const STYLES: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/><w:pPr><w:spacing w:after="60"/></w:pPr><w:rPr><w:sz w:val="22"/></w:rPr></w:style><w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/><w:basedOn w:val="Normal"/><w:next w:val="Normal"/><w:pPr><w:spacing w:after="120"/></w:pPr><w:rPr><w:b/><w:sz w:val="36"/></w:rPr></w:style><w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/><w:next w:val="Normal"/><w:pPr><w:keepNext/><w:spacing w:before="240" w:after="80"/><w:outlineLvl w:val="0"/></w:pPr><w:rPr><w:b/><w:sz w:val="28"/></w:rPr></w:style><w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/><w:basedOn w:val="Normal"/><w:next w:val="Normal"/><w:pPr><w:keepNext/><w:spacing w:before="120" w:after="40"/><w:outlineLvl w:val="1"/></w:pPr><w:rPr><w:b/><w:sz w:val="24"/></w:rPr></w:style><w:style w:type="paragraph" w:styleId="ListBullet"><w:name w:val="List Bullet"/><w:basedOn w:val="Normal"/><w:pPr><w:numPr><w:numId w:val="1"/></w:numPr><w:ind w:left="360" w:hanging="240"/></w:pPr></w:style></w:styles>"#;

/// Escapes text for XML content and attributes.
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

fn paragraph(text: &str, style: Option<&str>) -> String {
    let props = style
        .map(|style| format!("<w:pPr><w:pStyle w:val=\"{style}\"/></w:pPr>"))
        .unwrap_or_default();
    format!(
        "<w:p>{props}<w:r><w:t xml:space=\"preserve\">{}</w:t></w:r></w:p>",
        xml_escape(text)
    )
}

/// `word/document.xml` for Markdown-like text: `#` in the `Title` style, `##` and `###`
/// as `Heading1` and `Heading2`, list items as `ListBullet` paragraphs of the bulleted
/// list (Word draws the bullet), other lines as plain paragraphs.
pub fn document_xml(markdown: &str) -> String {
    let mut body = String::new();
    for line in markdown.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(title) = line.strip_prefix("# ") {
            body.push_str(&paragraph(title.trim(), Some("Title")));
        } else if let Some(heading) = line.strip_prefix("## ") {
            body.push_str(&paragraph(heading.trim(), Some("Heading1")));
        } else if let Some(sub) = line.strip_prefix("### ") {
            body.push_str(&paragraph(sub.trim(), Some("Heading2")));
        } else if line.starts_with(['-', '*', '•']) {
            body.push_str(&paragraph(strip_bullet(line), Some("ListBullet")));
        } else {
            body.push_str(&paragraph(line, None));
        }
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\"><w:body>{body}<w:sectPr/></w:body></w:document>"
    )
}

/// The DOCX bytes of Markdown-like text (see [`document_xml`]).
///
/// ```
/// use job_capabilities::documents::{DocxStyle, build_docx, check_docx_paragraphs};
/// let bytes = build_docx("# Ada\n## Experience\n- Built the engine").unwrap();
/// check_docx_paragraphs(&bytes, &[(DocxStyle::ListItem, "Built the engine")]).unwrap();
/// ```
pub fn build_docx(markdown: &str) -> Result<Vec<u8>, DocxError> {
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    let parts = [
        ("[Content_Types].xml", CONTENT_TYPES.to_owned()),
        ("_rels/.rels", RELS.to_owned()),
        ("word/_rels/document.xml.rels", DOCUMENT_RELS.to_owned()),
        ("word/styles.xml", STYLES.to_owned()),
        ("word/numbering.xml", NUMBERING.to_owned()),
        ("word/document.xml", document_xml(markdown)),
    ];
    for (name, content) in parts {
        zip.start_file(name, options)
            .map_err(|e| DocxError::Write(e.to_string()))?;
        zip.write_all(content.as_bytes())
            .map_err(|e| DocxError::Write(e.to_string()))?;
    }
    let cursor = zip.finish().map_err(|e| DocxError::Write(e.to_string()))?;
    Ok(cursor.into_inner())
}

#[cfg(test)]
mod tests {
    use super::super::{DocumentKind, extract_text};
    use super::*;

    #[test]
    fn a_docx_reads_back_with_its_headings_and_bullets() {
        let markdown =
            "# Jo <Doe> & Co\n\n## Experience\n\n- Cut costs by 30% \"fast\"\n- Led 4 people\n";
        let bytes = build_docx(markdown).unwrap();
        let expected = [
            (DocxStyle::Title, "Jo <Doe> & Co"),
            (DocxStyle::Heading1, "Experience"),
            (DocxStyle::ListItem, "Cut costs by 30% \"fast\""),
            (DocxStyle::ListItem, "Led 4 people"),
        ];
        check_docx_paragraphs(&bytes, &expected).unwrap();
        let error = check_docx_paragraphs(&bytes, &[(DocxStyle::Plain, "Not there")]).unwrap_err();
        assert!(matches!(error, DocxError::Misplaced { .. }));
        // In order: a paragraph found before the one the last matched is not in its place.
        let reversed = [expected[3], expected[2]];
        assert!(check_docx_paragraphs(&bytes, &reversed).is_err());
    }

    #[test]
    fn headings_and_bullets_carry_their_styles() {
        let xml = document_xml(
            "# Jo Doe\n## Experience\n### Acme (2020-2024)\n- Led 4 people\nPlain line",
        );
        for (style, text) in [
            ("Title", "Jo Doe"),
            ("Heading1", "Experience"),
            ("Heading2", "Acme (2020-2024)"),
            ("ListBullet", "Led 4 people"),
        ] {
            let paragraph = format!(
                "<w:p><w:pPr><w:pStyle w:val=\"{style}\"/></w:pPr><w:r><w:t xml:space=\"preserve\">{text}</w:t></w:r></w:p>"
            );
            assert!(xml.contains(&paragraph), "{style}: {xml}");
        }
        assert!(xml.contains("<w:p><w:r><w:t xml:space=\"preserve\">Plain line</w:t></w:r></w:p>"));
        // The list style is Word's bulleted list, and the text reads back as a list item.
        assert!(STYLES.contains("<w:numPr><w:numId w:val=\"1\"/></w:numPr>"));
        assert!(NUMBERING.contains("<w:num w:numId=\"1\">"));
        let bytes = build_docx("# Jo\n- Led 4 people").unwrap();
        let text = extract_text(&bytes, DocumentKind::Docx).unwrap();
        assert_eq!(text, "Jo\n• Led 4 people");
        // Every style used is defined, and the styles part is wired in.
        for style in ["Title", "Heading1", "Heading2", "ListBullet"] {
            assert!(
                STYLES.contains(&format!("w:styleId=\"{style}\"")),
                "{style}"
            );
        }
        let bytes = build_docx("# Jo\n## A\n- b").unwrap();
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        for part in [
            "word/styles.xml",
            "word/numbering.xml",
            "word/_rels/document.xml.rels",
            "[Content_Types].xml",
        ] {
            assert!(archive.by_name(part).is_ok(), "{part}");
        }
    }
}
