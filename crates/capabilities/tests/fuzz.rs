//! Fuzzing (proptest) every parser of outside input in job-capabilities: salary text,
//! places, careers-page HTML, resumes (PDF, DOCX, TXT: any bytes, and the recorded resumes
//! of `../shared/realdata` with bytes changed, cut and spliced) and the job boards' JSON
//! (any bytes, and the recorded bodies edited). No input panics; what cannot be read is a
//! typed error. The budget is `PROPTEST_CASES` (256 by default, what CI runs;
//! `PROPTEST_CASES=20000 cargo test -p job-capabilities --test fuzz` is the longer run).
#![cfg(test)]

use std::io::{Cursor, Write as _};
use std::path::Path;

use job_capabilities::ats::{parse_ashby, parse_greenhouse, parse_lever};
use job_capabilities::documents::{DocumentError, DocumentKind, extract_text};
use job_capabilities::html::html_to_text;
use job_capabilities::ranking::read_place;
use job_capabilities::salary::parse_salary_text;
use proptest::collection::vec;
use proptest::prelude::*;

/// A recorded file under `../shared/realdata`, read in place.
fn realdata(relative: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/realdata")
        .join(relative);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e} (read in place)", path.display()))
}

/// `seed` with up to `edits` bytes changed, then cut at a random length, then with a
/// random run of bytes spliced in.
fn mutated(seed: Vec<u8>, edits: usize) -> impl Strategy<Value = Vec<u8>> {
    let len = seed.len().max(1);
    (
        vec((0..len, any::<u8>()), 0..=edits),
        0..=len,
        0..=len,
        vec(any::<u8>(), 0..64),
    )
        .prop_map(move |(changes, cut, at, splice)| {
            let mut bytes = seed.clone();
            for (index, byte) in changes {
                if let Some(slot) = bytes.get_mut(index) {
                    *slot = byte;
                }
            }
            bytes.truncate(cut);
            let at = at.min(bytes.len());
            bytes.splice(at..at, splice);
            bytes
        })
}

/// A document read as `kind`: text, or one of the typed refusals.
fn read_document(bytes: &[u8], kind: DocumentKind) -> Result<(), TestCaseError> {
    match extract_text(bytes, kind) {
        Ok(text) => prop_assert!(!text.is_empty()),
        Err(
            DocumentError::Unreadable { .. }
            | DocumentError::Empty { .. }
            | DocumentError::Encrypted { .. }
            | DocumentError::TooLarge { .. },
        ) => {}
        Err(other) => prop_assert!(false, "unexpected error for {kind}: {other}"),
    }
    Ok(())
}

proptest! {
    #[test]
    fn salary_text(text in any::<String>()) {
        if let Some(salary) = parse_salary_text(&text)
            && let (Some(min), Some(max)) = (salary.min, salary.max)
        {
            prop_assert!(min <= max, "{text:?} read as {min} > {max}");
        }
    }

    #[test]
    fn salary_like_text(
        low in 0u32..500_000,
        high in 0u32..500_000,
        symbol in prop::sample::select(vec!["$", "€", "£", "USD ", "", "¥"]),
        suffix in prop::sample::select(vec!["k", "K", "", ".00", " per year", "/hr", " a month"]),
        noise in any::<String>(),
    ) {
        let text = format!("{noise} {symbol}{low}{suffix} - {symbol}{high}{suffix} {noise}");
        if let Some(salary) = parse_salary_text(&text)
            && let (Some(min), Some(max)) = (salary.min, salary.max)
        {
            prop_assert!(min <= max, "{text:?} read as {min} > {max}");
        }
    }

    #[test]
    fn places(text in any::<String>()) {
        let _ = read_place(&text);
    }

    #[test]
    fn careers_page_html(html in any::<String>()) {
        let _ = html_to_text(&html);
    }

    #[test]
    fn careers_page_html_cut_and_spliced(
        html in mutated(
            b"<html><body><h1>Jobs</h1><ul><li><a href='/j/1'>Rust Engineer</a> &amp; more</li>\
              <li>Remote &mdash; <b>Senior</b></li></ul><script>var x = '<li>';</script>\
              <table><tr><td>Go</td></tr></table></body></html>".to_vec(),
            16,
        )
    ) {
        let _ = html_to_text(&String::from_utf8_lossy(&html));
    }

    #[test]
    fn any_bytes_as_a_resume(bytes in vec(any::<u8>(), 0..4096)) {
        for kind in [DocumentKind::Txt, DocumentKind::Docx, DocumentKind::Pdf] {
            read_document(&bytes, kind)?;
        }
    }

    #[test]
    fn a_recorded_docx_damaged(bytes in mutated(realdata("docs/hr-helper/sample_resume.docx"), 32)) {
        read_document(&bytes, DocumentKind::Docx)?;
    }

    #[test]
    fn a_recorded_pdf_damaged(bytes in mutated(realdata("docs/hr-helper/sample_resume.pdf"), 32)) {
        read_document(&bytes, DocumentKind::Pdf)?;
    }

    #[test]
    fn a_recorded_text_resume_damaged(bytes in mutated(realdata("docs/hr-helper/sample_resume.txt"), 32)) {
        read_document(&bytes, DocumentKind::Txt)?;
    }

    #[test]
    fn job_board_bodies(bytes in vec(any::<u8>(), 0..2048)) {
        let _ = parse_greenhouse(&bytes, "acme");
        let _ = parse_lever(&bytes, "acme");
        let _ = parse_ashby(&bytes, "acme");
    }

    #[test]
    fn recorded_job_board_bodies_edited(
        greenhouse in mutated(realdata("ats/hunt/greenhouse.json"), 24),
        lever in mutated(realdata("ats/hunt/lever.json"), 24),
        ashby in mutated(realdata("ats/hunt/ashby.json"), 24),
    ) {
        let _ = parse_greenhouse(&greenhouse, "acme");
        let _ = parse_lever(&lever, "acme");
        let _ = parse_ashby(&ashby, "acme");
    }
}

/// A DOCX whose text part unpacks to more than the limit (a ZIP bomb of 65 MiB of XML
/// in a few hundred kilobytes) is refused by size, not read into memory whole.
#[test]
fn a_docx_bomb_is_refused() {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("word/document.xml", options).unwrap();
    zip.write_all(b"<w:document><w:body><w:p><w:r><w:t>")
        .unwrap();
    let filler = vec![b'a'; 1024 * 1024];
    for _ in 0..65 {
        zip.write_all(&filler).unwrap();
    }
    zip.write_all(b"</w:t></w:r></w:p></w:body></w:document>")
        .unwrap();
    let bytes = zip.finish().unwrap().into_inner();
    assert!(bytes.len() < 1024 * 1024, "{} bytes", bytes.len());
    let refused = extract_text(&bytes, DocumentKind::Docx).unwrap_err();
    assert!(
        refused.to_string().contains("unpacks to more than"),
        "{refused}"
    );
}

/// XML nested a million deep is read without recursion.
#[test]
fn a_deeply_nested_docx_is_read_or_refused() {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("word/document.xml", options).unwrap();
    zip.write_all(&b"<w:p>".repeat(1_000_000)).unwrap();
    let bytes = zip.finish().unwrap().into_inner();
    match extract_text(&bytes, DocumentKind::Docx) {
        Ok(_) | Err(DocumentError::Unreadable { .. } | DocumentError::Empty { .. }) => {}
        Err(other) => panic!("{other}"),
    }
}
