//! Resume text from real PDF, DOCX and TXT files (read in place from the shared real-data
//! directory, never copied into the repository) and from hand-built fixtures in
//! `fixtures/documents/` (see `make_fixtures.py` there), plus every error path.
#![cfg(test)]

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use job_capabilities::documents::DocumentKind::{Docx, Pdf, Txt};
use job_capabilities::documents::{
    DocumentError, DocumentKind, MAX_DOCUMENT_BYTES, extract_text, normalize_text, read_resume_text,
};
use zip::write::SimpleFileOptions;

/// Asserts that an error (or result) matches a pattern, showing it if not.
macro_rules! assert_variant {
    ($value:expr, $($pattern:tt)+) => {{
        let value = &$value;
        assert!(matches!(value, $($pattern)+), "unexpected: {value:?}");
    }};
}

/// The shared real resumes; their licences and sources are next to them.
fn real_docs() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/realdata/docs");
    assert!(
        dir.is_dir(),
        "real resumes not found at {}; these tests read the shared real-data directory \
         (../shared/realdata/docs beside the workspace) in place",
        dir.display()
    );
    dir
}

fn real(relative: &str) -> PathBuf {
    real_docs().join(relative)
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/documents")
        .join(name)
}

fn read_ok(path: &Path) -> String {
    read_resume_text(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// Each phrase occurs, each after the end of the one before.
fn assert_in_order(text: &str, phrases: &[&str]) {
    let mut from = 0;
    for phrase in phrases {
        match text[from..].find(phrase) {
            Some(at) => from += at + phrase.len(),
            None => panic!("{phrase:?} not found after byte {from} in:\n{text}"),
        }
    }
}

fn assert_has_line(text: &str, line: &str) {
    assert!(
        text.lines().any(|l| l == line),
        "no line equal to {line:?} in:\n{text}"
    );
}

/// What normalization promises, checked on a real extraction.
fn assert_clean(text: &str) {
    assert!(!text.is_empty());
    assert_eq!(text, text.trim(), "leading or trailing whitespace");
    assert!(
        !text.contains("\n\n\n"),
        "more than one blank line in a row"
    );
    for line in text.lines() {
        assert_eq!(line, line.trim(), "untrimmed line {line:?}");
        assert!(!line.contains("  "), "double space in {line:?}");
        for c in line.chars() {
            assert!(
                !matches!(c, '\t' | '\r' | '\u{a0}' | '\u{ad}' | '\u{2010}'),
                "{c:?} left in {line:?}"
            );
            assert!(
                !('\u{e000}'..='\u{f8ff}').contains(&c),
                "private-use {c:?} left in {line:?}"
            );
            assert!(!c.is_control(), "control {c:?} left in {line:?}");
        }
    }
    assert_eq!(
        normalize_text(text),
        text,
        "normalization is not idempotent"
    );
}

/// Error messages are one line and name the file.
fn assert_message_names(err: &DocumentError, path: &Path) {
    let message = err.to_string();
    assert!(!message.contains('\n'), "multi-line message: {message}");
    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(message.contains(name), "{message:?} does not name {name}");
    assert_eq!(err.path(), Some(path));
}

/// The error reading `path` gives, checked to be one line naming the file.
fn read_err(path: &Path) -> DocumentError {
    let err = read_resume_text(path).expect_err("expected an error");
    assert_message_names(&err, path);
    err
}

/// A file with `bytes` in a fresh temporary directory (kept alive by the guard).
fn temp_file(name: &str, bytes: impl AsRef<[u8]>) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

fn docx_bytes(parts: &[(&str, &str)]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, content) in parts {
        zip.start_file(*name, SimpleFileOptions::default()).unwrap();
        zip.write_all(content.as_bytes()).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

fn word_xml(body: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"><w:body>{body}</w:body></w:document>"#
    )
}

// ---------------------------------------------------------------- real resumes

#[test]
fn open_resume_pdf_keeps_reading_order_and_whole_lines() {
    let text = read_ok(&real("open-resume/openresume-resume.pdf"));
    assert_clean(&text);
    assert_eq!(text.lines().next(), Some("John Doe"));
    assert_has_line(
        &text,
        "hello@openresume.com 123-456-7890 NYC, NY linkedin.com/in/john-doe",
    );
    assert_has_line(&text, "WORK EXPERIENCE");
    assert_has_line(&text, "Software Engineer May 2023 - Present");
    assert_in_order(
        &text,
        &[
            "John Doe",
            "Software engineer obsessed with building exceptional products that people love",
            "WORK EXPERIENCE",
            "ABC Company",
            "• Lead a cross-functional team of 5 engineers",
            "DEF Organization",
            "Software Engineer Intern Summer 2022",
            "XYZ University",
            "Research Assistant Summer 2021",
            "EDUCATION",
            "Bachelor of Science in Computer Science - 3.8 GPA Sep 2019 - May 2023",
            "PROJECT",
            "OpenResume Spring 2023",
            "SKILLS",
            "• Tech: React Hooks, GraphQL, Node.js, SQL, Postgres, NoSql, Redis, REST API, Git",
        ],
    );
}

#[test]
fn laverne_pdf_loses_its_tab_cr_nbsp_space_artefacts() {
    let path = real("open-resume/laverne-resume.pdf");
    // The raw extraction really has the artefacts the normalization is for.
    let raw = pdf_extract::extract_text_from_mem(&std::fs::read(&path).unwrap()).unwrap();
    assert!(raw.contains("Leo\t\r \u{a0}Leopard"));
    assert!(raw.contains("555-\u{ad}\u{2010}5555"));

    let text = read_ok(&path);
    assert_clean(&text);
    assert!(!text.contains("--"), "doubled hyphens in:\n{text}");
    assert_has_line(&text, "Leo Leopard");
    assert_has_line(&text, "lleopard@laverne.edu");
    assert_has_line(&text, "(909) 555-5555");
    assert_has_line(
        &text,
        "University of La Verne, La Verne, CA Expected Graduation: June 2016",
    );
    assert_in_order(
        &text,
        &[
            "Leo Leopard",
            "555 La Verne Way, La Verne, CA",
            "OBJECTIVE",
            "To obtain an on-campus position serving my fellow students",
            "EDUCATION",
            "Bachelor of Arts, Business Administration",
            "HONORS/AWARDS",
            "Dean’s List Fall 2013 – Spring 2014",
            "ON CAMPUS INVOLVEMENT",
            "• Co-designed 17 minute audio-visual presentation",
            "VOLUNTEER EXPERIENCE",
            "YMCA, Pomona, CA Summer 2013, 2014",
            "SKILLS",
            "Language: Fluent in Spanish",
        ],
    );
}

#[test]
fn omkar_pdf_drops_icon_font_glyphs_across_three_pages() {
    let path = real("pyresparser/OmkarResume.pdf");
    let raw = pdf_extract::extract_text_from_mem(&std::fs::read(&path).unwrap()).unwrap();
    assert!(
        raw.contains("\u{f0e0} omkarpathak27@gmail.com"),
        "icon glyph expected in raw text"
    );

    let text = read_ok(&path);
    assert_clean(&text);
    assert_eq!(text.lines().next(), Some("Omkar Pathak"));
    assert_has_line(
        &text,
        "(+91) 8087996634 | omkarpathak27@gmail.com | www.omkarpathak.in | OmkarPathak | omkar-pathak-94473811b",
    );
    assert_has_line(
        &text,
        "“Make the change that you want to see in the world.”",
    );
    assert_in_order(
        &text,
        &[
            "SOFTWARE ENGINEER · FULL STACK PYTHON DEVELOPER",
            "Experience",
            "Schlumberger Pune, Maharashtra, India",
            "DATA ENGINEER July 2018 - Present",
            "Projects",
            "Pyresparser API/Python Package",
            "NOVEMBER 3, 2019 OMKAR PATHAK · RÉSUMÉ 1",
            "Education",
            "Marathwada Mitra Mandal’s College of Engineering",
            "Skills",
            "Programming Languages: Python, C, PHP, C++, Shell Script",
            "Honors & Awards",
            "NOVEMBER 3, 2019 OMKAR PATHAK · RÉSUMÉ 2",
            "Publications",
            "Interests",
        ],
    );
    assert_eq!(
        text.lines().last(),
        Some("NOVEMBER 3, 2019 OMKAR PATHAK · RÉSUMÉ 3")
    );
}

#[test]
fn hr_helper_docx_gives_one_line_per_paragraph() {
    let text = read_ok(&real("hr-helper/sample_resume.docx"));
    assert_clean(&text);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "JANE SMITH",
            "Data Scientist | jane.smith@example.com | New York, NY",
            "Summary",
            "Data scientist with 4 years of experience in machine learning and statistical modeling. Skilled in Python, R, and cloud-based ML platforms.",
            "Experience",
            "Senior Data Scientist | DataCo | 2022 - Present",
            "- Built recommendation engine increasing user engagement by 25%",
            "- Developed NLP pipeline for sentiment analysis of customer feedback",
            "Education",
            "M.S. Data Science | Columbia University | 2020",
            "B.S. Mathematics | NYU | 2018",
            "Skills",
            "Python, R, TensorFlow, PyTorch, SQL, AWS SageMaker, Spark",
        ]
    );
}

#[test]
fn hr_helper_pdf_keeps_sections_in_order() {
    let text = read_ok(&real("hr-helper/sample_resume.pdf"));
    assert_clean(&text);
    assert_eq!(text.lines().next(), Some("ALEX JOHNSON"));
    assert_has_line(&text, "alex.johnson@example.com | +1 (555) 987-6543");
    assert_in_order(
        &text,
        &[
            "ALEX JOHNSON",
            "Full Stack Developer",
            "SUMMARY",
            "Full stack developer with 6 years of experience",
            "EXPERIENCE",
            "Lead Developer | AppFactory | 2021 - Present",
            "- Architected and built SaaS platform serving 50K users",
            "EDUCATION",
            "B.S. Computer Engineering | MIT | 2018",
            "SKILLS",
            "React, Node.js, Python, Django, PostgreSQL, Docker, AWS",
        ],
    );
}

#[test]
fn hr_helper_txt_is_read_verbatim() {
    let path = real("hr-helper/sample_resume.txt");
    let text = read_ok(&path);
    assert_clean(&text);
    assert_eq!(text, std::fs::read_to_string(&path).unwrap().trim_end());
    assert_in_order(
        &text,
        &[
            "JOHN DOE",
            "john.doe@example.com",
            "SUMMARY",
            "EXPERIENCE",
            "EDUCATION",
            "SKILLS",
        ],
    );
}

#[test]
fn kinds_are_recognised_by_content_and_by_extension() {
    for (file, sniffed, by_name) in [
        ("open-resume/openresume-resume.pdf", Some(Pdf), Some(Pdf)),
        ("open-resume/laverne-resume.pdf", Some(Pdf), Some(Pdf)),
        ("pyresparser/OmkarResume.pdf", Some(Pdf), Some(Pdf)),
        ("hr-helper/sample_resume.pdf", Some(Pdf), Some(Pdf)),
        ("hr-helper/sample_resume.docx", Some(Docx), Some(Docx)),
        ("hr-helper/sample_resume.txt", None, Some(Txt)),
    ] {
        let path = real(file);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(DocumentKind::sniff(&bytes), sniffed, "{file}");
        assert_eq!(DocumentKind::from_path(&path), by_name, "{file}");
    }
    for (name, kind) in [
        ("A.PDF", Some(Pdf)),
        ("b.DocX", Some(Docx)),
        ("c.md", Some(Txt)),
        ("d.TEXT", Some(Txt)),
        ("e.doc", None),
        ("noextension", None),
    ] {
        assert_eq!(DocumentKind::from_path(Path::new(name)), kind, "{name}");
    }
    // Another ZIP archive is not a Word document.
    assert_eq!(DocumentKind::sniff(&docx_bytes(&[("a.txt", "x")])), None);
}

#[test]
fn content_wins_over_a_misleading_extension() {
    let pdf = real("hr-helper/sample_resume.pdf");
    let (_dir, pdf_as_txt) = temp_file("resume.txt", std::fs::read(&pdf).unwrap());
    assert_eq!(read_ok(&pdf_as_txt), read_ok(&pdf));

    let docx = std::fs::read(real("hr-helper/sample_resume.docx")).unwrap();
    let (_dir, docx_without_extension) = temp_file("resume", docx);
    assert!(read_ok(&docx_without_extension).starts_with("JANE SMITH\n"));
}

// ---------------------------------------------------------------- hand-built PDFs

#[test]
fn password_protected_pdf_is_encrypted() {
    let path = fixture("encrypted.pdf");
    let bytes = std::fs::read(&path).unwrap();
    // The fixture is a real encrypted PDF: its user password opens it, and nothing else.
    let load = |password: &str| {
        let options = pdf_extract::LoadOptions::with_password(password);
        pdf_extract::Document::load_mem_with_options(&bytes, options)
    };
    let doc = load("open-sesame").unwrap();
    let mut opened = String::new();
    pdf_extract::output_doc(&doc, &mut pdf_extract::PlainTextOutput::new(&mut opened)).unwrap();
    assert!(opened.contains("Jane Fixture"), "{opened:?}");
    assert!(load("wrong").is_err());

    let err = read_err(&path);
    assert_variant!(err, DocumentError::Encrypted { .. });
    assert!(err.to_string().contains("is password-protected"), "{err}");
    assert_variant!(
        extract_text(&bytes, Pdf),
        Err(DocumentError::Encrypted { path: None })
    );
}

#[test]
fn pdf_that_only_restricts_permissions_opens_without_a_password() {
    let text = read_ok(&fixture("permissions-only.pdf"));
    assert_eq!(text, "Jane Fixture\nHand-built test resume");
}

#[test]
fn image_only_pdf_is_empty_and_says_it_needs_ocr() {
    let err = read_err(&fixture("scanned.pdf"));
    assert_variant!(err, DocumentError::Empty { kind: Pdf, .. });
    let message = err.to_string();
    assert!(
        message.contains("no text layer; scanned documents need OCR"),
        "{message}"
    );
}

#[test]
fn truncated_or_garbled_pdf_is_unreadable() {
    let bytes = std::fs::read(real("open-resume/openresume-resume.pdf")).unwrap();
    for cut in [16, bytes.len() / 2, bytes.len() - 64] {
        let err = extract_text(&bytes[..cut], Pdf).unwrap_err();
        assert_variant!(err, DocumentError::Unreadable { kind: Pdf, .. });
        assert!(err.to_string().contains("damaged or incomplete"), "{err}");
    }
    let err = extract_text(b"%PDF-1.7\nthis is not a PDF body", Pdf).unwrap_err();
    assert_variant!(err, DocumentError::Unreadable { kind: Pdf, .. });

    let (_dir, path) = temp_file("not-really.pdf", "plain words in a .pdf");
    let err = read_err(&path);
    assert_variant!(err, DocumentError::Unreadable { kind: Pdf, .. });
    assert!(err.to_string().contains("no PDF header"), "{err}");
}

// ---------------------------------------------------------------- DOCX

#[test]
fn empty_docx_is_empty() {
    let err = read_err(&fixture("empty.docx"));
    assert_variant!(err, DocumentError::Empty { kind: Docx, .. });
}

#[test]
fn corrupt_zip_named_docx_is_unreadable() {
    let body = word_xml("<w:p><w:r><w:t>x</w:t></w:r></w:p>");
    let mut bytes = docx_bytes(&[("word/document.xml", &body)]);
    bytes.truncate(bytes.len() / 2); // the central directory is gone
    let (_dir, path) = temp_file("resume.docx", bytes);
    let err = read_err(&path);
    assert_variant!(err, DocumentError::Unreadable { kind: Docx, .. });
    assert!(err.to_string().contains("not a valid DOCX"), "{err}");
}

#[test]
fn zip_without_word_document_is_unreadable() {
    let (_dir, path) = temp_file("archive.docx", docx_bytes(&[("notes/readme.txt", "hi")]));
    let err = read_err(&path);
    assert_variant!(
        err,
        DocumentError::Unreadable { kind: Docx, reason, .. }
            if reason.contains("word/document.xml")
    );
}

#[test]
fn docx_markup_becomes_plain_lines() {
    let header = r#"<w:hdr xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:p><w:r><w:t>Jane Roe · jane@example.com</w:t></w:r></w:p></w:hdr>"#;
    let body = word_xml(concat!(
        // Tab-stop definitions are not tabs; split runs join; entities and char refs resolve.
        r#"<w:p><w:pPr><w:tabs><w:tab w:val="left" w:pos="720"/></w:tabs></w:pPr>"#,
        r#"<w:r><w:t>Sen</w:t></w:r><w:r><w:t xml:space="preserve">ior R&amp;D </w:t></w:r>"#,
        r#"<w:r><w:t>Engin&#233;er</w:t><w:tab/><w:t>2020 &lt;&gt; 2024</w:t></w:r></w:p>"#,
        // A line break inside a paragraph; a non-breaking hyphen.
        r#"<w:p><w:r><w:t>Line one</w:t><w:br/><w:t>on</w:t><w:noBreakHyphen/><w:t>call</w:t></w:r></w:p>"#,
        // Deleted revisions and field codes are not text.
        r#"<w:p><w:del><w:r><w:delText>removed</w:delText></w:r></w:del><w:r><w:instrText> PAGE </w:instrText><w:t>Kept</w:t></w:r></w:p>"#,
        // A text box appears once although Word stores a fallback copy.
        r#"<w:p><w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:txbxContent><w:p><w:r><w:t>Box text</w:t></w:r></w:p></w:txbxContent></mc:Choice>"#,
        r#"<mc:Fallback><w:txbxContent><w:p><w:r><w:t>Box text</w:t></w:r></w:p></w:txbxContent></mc:Fallback></mc:AlternateContent></w:r></w:p>"#,
        r#"<w:p/><w:p/><w:p/><w:p><w:r><w:t>Last</w:t></w:r></w:p>"#,
    ));
    let bytes = docx_bytes(&[("word/header1.xml", header), ("word/document.xml", &body)]);
    assert_eq!(DocumentKind::sniff(&bytes), Some(Docx));
    let text = extract_text(&bytes, Docx).unwrap();
    assert_eq!(
        text,
        "Jane Roe · jane@example.com\n\
         Senior R&D Enginéer 2020 <> 2024\n\
         Line one\n\
         on-call\n\
         Kept\n\
         Box text\n\
         \n\
         Last"
    );
}

#[test]
fn legacy_doc_is_unsupported_and_says_what_to_do() {
    let mut bytes = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1".to_vec();
    bytes.resize(2048, 0);
    let (_dir, path) = temp_file("resume.doc", &bytes);
    let err = read_err(&path);
    assert_variant!(err, DocumentError::UnsupportedFormat { .. });
    assert!(err.to_string().contains("save it as .docx or PDF"), "{err}");
    // The same bytes read as DOCX: an OLE file is not one.
    assert_variant!(
        extract_text(&bytes, Docx),
        Err(DocumentError::Unreadable { kind: Docx, .. })
    );
}

// ---------------------------------------------------------------- text and files

#[test]
fn random_binary_named_txt_is_unreadable() {
    let mut state = 0x2545_f491_u32;
    let bytes: Vec<u8> = (0..4096)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state.to_le_bytes()[0]
        })
        .collect();
    let (_dir, path) = temp_file("resume.txt", bytes);
    assert_variant!(read_err(&path), DocumentError::Unreadable { kind: Txt, .. });
}

#[test]
fn legacy_encoded_and_utf16_text_files_are_read() {
    let latin = b"Ren\xE9e M\xFCller\r\n\x93Senior\x94 engineer \x96 Z\xFCrich\r\n";
    let (_dir, path) = temp_file("cv.txt", latin);
    assert_eq!(read_ok(&path), "Renée Müller\n“Senior” engineer – Zürich");

    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend(
        "# Zoë\r\n\r\nData engineer"
            .encode_utf16()
            .flat_map(u16::to_le_bytes),
    );
    let (_dir, path) = temp_file("cv.md", utf16);
    assert_eq!(read_ok(&path), "# Zoë\n\nData engineer");
}

#[test]
fn whitespace_only_text_is_empty() {
    let (_dir, path) = temp_file("blank.txt", "\u{feff}  \r\n\t\n");
    assert_variant!(read_err(&path), DocumentError::Empty { kind: Txt, .. });
}

#[test]
fn missing_file_is_io_naming_the_path() {
    let path = real_docs().join("no-such-resume.pdf");
    let err = read_err(&path);
    assert_variant!(
        err,
        DocumentError::Io { path: reported, source }
            if reported == &path && source.kind() == std::io::ErrorKind::NotFound
    );
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");

    let dir = tempfile::tempdir().unwrap();
    assert_variant!(read_err(dir.path()), DocumentError::Io { .. });
}

#[test]
fn unknown_extension_without_magic_is_unsupported() {
    let (_dir, path) = temp_file("resume.xyz", "Jane Doe, engineer");
    let err = read_err(&path);
    assert_variant!(err, DocumentError::UnsupportedFormat { .. });
    assert!(err.to_string().contains("'.xyz'"), "{err}");
    assert!(err.to_string().contains("PDF, DOCX or plain-text"), "{err}");
}

#[test]
fn oversized_input_is_refused_before_extraction() {
    let too_big = vec![b'a'; usize::try_from(MAX_DOCUMENT_BYTES).unwrap() + 1];
    assert_variant!(
        extract_text(&too_big, Txt),
        Err(DocumentError::TooLarge { path: None, .. })
    );

    let (_dir, path) = temp_file("huge.pdf", "");
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(MAX_DOCUMENT_BYTES * 2).unwrap(); // sparse: nothing is written
    let err = read_err(&path);
    assert_variant!(err, DocumentError::TooLarge { .. });
    assert!(
        err.to_string().contains("40.0 MB; the limit is 20 MB"),
        "{err}"
    );
}
