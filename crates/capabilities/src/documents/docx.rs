//! DOCX text: `word/document.xml` (and page headers and footers) walked with `quick-xml`.

use std::io::{Cursor, Read};

use quick_xml::Reader;
use quick_xml::escape::resolve_xml_entity;
use quick_xml::events::{BytesRef, Event};
use zip::ZipArchive;
use zip::result::ZipError;

use super::{DocumentError, DocumentKind, contains};

/// The part holding the body of a Word document.
const BODY: &str = "word/document.xml";

/// The most XML read from one part once decompressed: a guard against ZIP bombs.
const MAX_PART_BYTES: u64 = 64 * 1024 * 1024;

/// Magic bytes of an OLE compound file: legacy `.doc`, or a password-protected `.docx`.
const OLE_MAGIC: &[u8] = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1";

fn unreadable(reason: impl Into<String>) -> DocumentError {
    DocumentError::unreadable(DocumentKind::Docx, reason)
}

/// The raw text of a DOCX, not yet normalized: page headers, then the body, then page
/// footers, one line per paragraph.
pub(super) fn extract(bytes: &[u8]) -> Result<String, DocumentError> {
    if bytes.starts_with(OLE_MAGIC) {
        // Office stores a password-protected .docx inside an OLE file with this stream.
        let encryption_info: Vec<u8> = "EncryptionInfo"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        if contains(bytes, &encryption_info) {
            return Err(DocumentError::Encrypted { path: None });
        }
        return Err(unreadable(
            "it is a legacy Word .doc file, not DOCX; save it as .docx or PDF",
        ));
    }
    let mut archive = ZipArchive::new(Cursor::new(bytes)).map_err(|err| {
        unreadable(format!(
            "it is not a valid DOCX (ZIP) archive; the file is damaged or mislabelled ({err})"
        ))
    })?;

    let mut headers = Vec::new();
    let mut footers = Vec::new();
    for name in archive.file_names() {
        if let Some(number) = part_number(name, "word/header") {
            headers.push((number, name.to_owned()));
        } else if let Some(number) = part_number(name, "word/footer") {
            footers.push((number, name.to_owned()));
        }
    }
    headers.sort();
    footers.sort();

    let body = match read_part(&mut archive, BODY) {
        Err(ZipError::FileNotFound) => {
            return Err(unreadable(format!(
                "the archive has no {BODY}, so it is not a Word document"
            )));
        }
        other => part_text(BODY, other)?,
    };

    let mut sections: Vec<String> = Vec::new();
    let mut add = |text: String| {
        let text = text.trim_end_matches('\n').to_owned();
        if !text.trim().is_empty() && !sections.contains(&text) {
            sections.push(text);
        }
    };
    for (_, name) in &headers {
        add(optional_part_text(&mut archive, name));
    }
    add(body);
    for (_, name) in &footers {
        add(optional_part_text(&mut archive, name));
    }
    Ok(sections.join("\n"))
}

/// `3` for `word/header3.xml` when `prefix` is `word/header`; `0` without a number.
fn part_number(name: &str, prefix: &str) -> Option<u32> {
    let digits = name.strip_prefix(prefix)?.strip_suffix(".xml")?;
    if digits.is_empty() {
        Some(0)
    } else {
        digits.parse().ok()
    }
}

/// A part's bytes, at most [`MAX_PART_BYTES`] plus one.
fn read_part(archive: &mut ZipArchive<Cursor<&[u8]>>, name: &str) -> Result<Vec<u8>, ZipError> {
    let part = archive.by_name(name)?;
    let mut xml = Vec::new();
    part.take(MAX_PART_BYTES + 1).read_to_end(&mut xml)?;
    Ok(xml)
}

/// The XML of a part that was read (or failed to be), as an error the user understands.
fn part_xml(name: &str, read: Result<Vec<u8>, ZipError>) -> Result<String, DocumentError> {
    let xml = match read {
        Ok(xml) => xml,
        Err(
            ZipError::UnsupportedArchive(ZipError::PASSWORD_REQUIRED) | ZipError::InvalidPassword,
        ) => {
            return Err(DocumentError::Encrypted { path: None });
        }
        Err(err) => {
            return Err(unreadable(format!(
                "its {name} cannot be unpacked; the file is damaged ({err})"
            )));
        }
    };
    if xml.len() as u64 > MAX_PART_BYTES {
        return Err(unreadable(format!(
            "its {name} unpacks to more than {} MB",
            MAX_PART_BYTES / (1024 * 1024)
        )));
    }
    String::from_utf8(xml).map_err(|_| unreadable(format!("its {name} is not UTF-8 XML")))
}

/// The text of a part that was read (or failed to be), as an error the user understands.
fn part_text(name: &str, read: Result<Vec<u8>, ZipError>) -> Result<String, DocumentError> {
    let xml = part_xml(name, read)?;
    xml_text(&xml).map_err(|reason| unreadable(format!("its {name} is not valid XML ({reason})")))
}

/// The text of a page header or footer; a broken one is logged and left out.
fn optional_part_text(archive: &mut ZipArchive<Cursor<&[u8]>>, name: &str) -> String {
    part_text(name, read_part(archive, name)).unwrap_or_else(|err| {
        tracing::warn!(part = name, error = %err, "skipping an unreadable DOCX part");
        String::new()
    })
}

/// Why WordprocessingML could not be read.
#[derive(Debug, thiserror::Error)]
enum XmlError {
    /// The XML is malformed.
    #[error("at byte {position}: {source}")]
    Syntax {
        /// Where the reader stopped.
        position: u64,
        /// What the reader found.
        source: quick_xml::Error,
    },
    /// Text could not be decoded.
    #[error(transparent)]
    Encoding(#[from] quick_xml::encoding::EncodingError),
    /// A character reference is not a character.
    #[error(transparent)]
    Reference(#[from] quick_xml::Error),
}

/// The text of WordprocessingML: `w:t` runs, a newline at the end of each `w:p`, a tab for
/// `w:tab`, a newline for `w:br` and `w:cr`. Elements are matched by local name, so
/// DrawingML (`a:t`, `a:p`) and math (`m:t`) text count too. Left out: tab-stop
/// definitions (`w:tabs`), deleted revisions and field codes (they are not `w:t`), and
/// `mc:Fallback` copies of text boxes, which repeat the `mc:Choice` text.
fn xml_text(xml: &str) -> Result<String, XmlError> {
    let mut reader = Reader::from_str(xml);
    let mut out = String::with_capacity(xml.len() / 4);
    let mut in_text = false;
    let mut tab_stops = 0usize;
    let mut fallback = 0usize;
    // A list paragraph (numbered, or in a list style) reads as "• item", once.
    let mut list_marked = false;
    loop {
        let event = next_event(&mut reader)?;
        match event {
            Event::Start(start) => match start.local_name().as_ref() {
                b"Fallback" => fallback += 1,
                _ if fallback > 0 => {}
                b"t" => in_text = true,
                b"tabs" => tab_stops += 1,
                b"p" => list_marked = false,
                b"numPr" if !list_marked => {
                    out.push_str("• ");
                    list_marked = true;
                }
                name => push_empty_element(&mut out, name, tab_stops),
            },
            Event::Empty(empty) if fallback == 0 => {
                let name = empty.local_name();
                if name.as_ref() == b"pStyle" && !list_marked && is_list_style(&empty) {
                    out.push_str("• ");
                    list_marked = true;
                }
                push_empty_element(&mut out, name.as_ref(), tab_stops);
                if name.as_ref() == b"p" {
                    out.push('\n');
                }
            }
            Event::End(end) => match end.local_name().as_ref() {
                b"Fallback" => fallback = fallback.saturating_sub(1),
                _ if fallback > 0 => {}
                b"t" => in_text = false,
                b"tabs" => tab_stops = tab_stops.saturating_sub(1),
                b"p" => out.push('\n'),
                _ => {}
            },
            Event::Text(text) if in_text && fallback == 0 => {
                let text = text.xml10_content()?;
                out.push_str(&text);
            }
            Event::CData(data) if in_text && fallback == 0 => {
                let data = data.xml10_content()?;
                out.push_str(&data);
            }
            Event::GeneralRef(reference) if in_text && fallback == 0 => {
                push_reference(&mut out, &reference)?;
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(out)
}

/// The value of an element's `w:val` attribute.
fn val_of(element: &quick_xml::events::BytesStart<'_>) -> Option<String> {
    element
        .attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == b"val")
        .map(|a| String::from_utf8_lossy(&a.value).into_owned())
}

/// Whether a `w:pStyle` names a list style (`ListBullet`, `ListNumber`, `ListParagraph`).
fn is_list_style(style: &quick_xml::events::BytesStart<'_>) -> bool {
    val_of(style).is_some_and(|v| v.starts_with("List"))
}

/// A paragraph of a Word document's body: its style and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocxParagraph {
    /// The paragraph style's id (`Title`, `Heading1`, `ListBullet`), if it has one.
    pub style: Option<String>,
    /// Whether it is a list item (numbered, or in a list style).
    pub list_item: bool,
    /// Its text, runs joined (a tab as a tab, a break as a space), trimmed.
    pub text: String,
}

/// The paragraphs of a DOCX's body (`word/document.xml`), in order, with their styles:
/// what a document's structure is checked against.
///
/// ```
/// use job_capabilities::documents::{build_docx, docx_paragraphs};
/// let bytes = build_docx("# Ada\n## Experience\n- Wrote a program").unwrap();
/// let paragraphs = docx_paragraphs(&bytes).unwrap();
/// let styles: Vec<_> = paragraphs.iter().map(|p| p.style.as_deref().unwrap_or("")).collect();
/// assert_eq!(styles, ["Title", "Heading1", "ListBullet"]);
/// assert!(paragraphs[2].list_item && paragraphs[2].text == "Wrote a program");
/// ```
pub fn docx_paragraphs(bytes: &[u8]) -> Result<Vec<DocxParagraph>, DocumentError> {
    let mut archive = ZipArchive::new(Cursor::new(bytes))
        .map_err(|err| unreadable(format!("it is not a valid DOCX (ZIP) archive ({err})")))?;
    let xml = part_xml(BODY, read_part(&mut archive, BODY))?;
    paragraphs_of(&xml)
        .map_err(|reason| unreadable(format!("its {BODY} is not valid XML ({reason})")))
}

fn paragraphs_of(xml: &str) -> Result<Vec<DocxParagraph>, XmlError> {
    let mut reader = Reader::from_str(xml);
    let mut out = Vec::new();
    let mut current: Option<DocxParagraph> = None;
    let mut in_text = false;
    loop {
        let event = next_event(&mut reader)?;
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => match e.local_name().as_ref() {
                b"p" => {
                    let paragraph = DocxParagraph {
                        style: None,
                        list_item: false,
                        text: String::new(),
                    };
                    if matches!(event, Event::Empty(_)) {
                        out.push(paragraph);
                    } else {
                        current = Some(paragraph);
                    }
                }
                b"t" => in_text = matches!(event, Event::Start(_)),
                b"pStyle" => {
                    if let Some(p) = current.as_mut() {
                        p.list_item |= is_list_style(e);
                        p.style = val_of(e);
                    }
                }
                b"numPr" => {
                    if let Some(p) = current.as_mut() {
                        p.list_item = true;
                    }
                }
                b"tab" => {
                    if let Some(p) = current.as_mut() {
                        p.text.push('\t');
                    }
                }
                b"br" | b"cr" => {
                    if let Some(p) = current.as_mut() {
                        p.text.push(' ');
                    }
                }
                _ => {}
            },
            Event::End(e) => match e.local_name().as_ref() {
                b"t" => in_text = false,
                b"p" => {
                    if let Some(mut p) = current.take() {
                        p.text = p.text.trim().to_owned();
                        out.push(p);
                    }
                }
                _ => {}
            },
            Event::Text(text) if in_text => {
                if let Some(p) = current.as_mut() {
                    p.text.push_str(&text.xml10_content()?);
                }
            }
            Event::GeneralRef(reference) if in_text => {
                if let Some(p) = current.as_mut() {
                    push_reference(&mut p.text, &reference)?;
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(out)
}

/// The reader's next event, or where and why the XML is malformed.
fn next_event<'a>(reader: &mut Reader<&'a [u8]>) -> Result<Event<'a>, XmlError> {
    reader.read_event().map_err(|source| XmlError::Syntax {
        position: reader.error_position(),
        source,
    })
}

/// The text an element without content (or the start of one) stands for.
fn push_empty_element(out: &mut String, local_name: &[u8], tab_stops: usize) {
    match local_name {
        b"tab" if tab_stops == 0 => out.push('\t'),
        b"br" | b"cr" => out.push('\n'),
        b"noBreakHyphen" => out.push('-'),
        _ => {}
    }
}

/// A character reference (`&#233;`) or one of the five XML entities; others are dropped.
fn push_reference(out: &mut String, reference: &BytesRef<'_>) -> Result<(), XmlError> {
    if let Some(c) = reference.resolve_char_ref()? {
        out.push(c);
        return Ok(());
    }
    let name = reference.decode()?;
    match resolve_xml_entity(&name) {
        Some(text) => out.push_str(text),
        None => tracing::debug!(entity = %name, "dropping an unknown XML entity in a DOCX"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body as Word writes a bulleted list: `ListParagraph` with the numbering in the
    /// paragraph, and a typed item without any list.
    const WORD_LIST: &str = r#"<w:document xmlns:w="w"><w:body><w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Experience</w:t></w:r></w:p><w:p><w:pPr><w:pStyle w:val="ListParagraph"/><w:numPr><w:ilvl w:val="0"/><w:numId w:val="3"/></w:numPr></w:pPr><w:r><w:t>Led 4 people</w:t></w:r></w:p><w:p><w:pPr><w:numPr><w:numId w:val="3"/></w:numPr></w:pPr><w:r><w:t>Cut costs</w:t></w:r></w:p><w:p><w:r><w:t>Plain</w:t></w:r></w:p></w:body></w:document>"#;

    #[test]
    fn word_list_items_read_as_bullets_once() {
        assert_eq!(
            xml_text(WORD_LIST).unwrap(),
            "Experience\n• Led 4 people\n• Cut costs\nPlain\n"
        );
    }

    #[test]
    fn paragraphs_come_with_their_styles_and_list_marks() {
        let paragraphs = paragraphs_of(WORD_LIST).unwrap();
        let seen: Vec<(Option<&str>, bool, &str)> = paragraphs
            .iter()
            .map(|p| (p.style.as_deref(), p.list_item, p.text.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                (Some("Heading1"), false, "Experience"),
                (Some("ListParagraph"), true, "Led 4 people"),
                (None, true, "Cut costs"),
                (None, false, "Plain"),
            ]
        );
    }
}
