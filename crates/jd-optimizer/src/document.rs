//! The optimized resume as a document: the user's resume line for line, in its order,
//! with each rewritten bullet in place of the bullet it replaces and every other line
//! (name, contact line, headings, role lines with their dates, other bullets, skills,
//! education, any other section) as written. Written as Markdown and as a DOCX with
//! Word's heading and list styles, which is read back and checked line by line before it
//! is offered.

use job_capabilities::documents::{
    DocumentKind, DocxError, DocxStyle, build_docx, check_docx_paragraphs, extract_text,
    normalize_text,
};

use crate::bullets::{bullet_slots, bullet_texts, is_dated_heading};
use crate::records::RewrittenBullet;
use crate::scoring::score_by_rules;
use crate::state::OptimizationState;
use crate::text::is_bullet;
use job_capabilities::documents::strip_bullet;

/// Section names written as headings.
const HEADINGS: &[&str] = &[
    "summary",
    "profile",
    "experience",
    "work experience",
    "professional experience",
    "employment",
    "projects",
    "skills",
    "technical skills",
    "education",
    "certifications",
    "languages",
    "publications",
    "awards",
    "volunteering",
    "interests",
];

/// A line longer than this is text, never a role heading.
const MAX_ROLE_LINE_CHARS: usize = 140;

fn is_heading(line: &str) -> bool {
    let bare = line.trim_end_matches(':').trim();
    HEADINGS.contains(&bare.to_lowercase().as_str())
        || (bare.len() >= 4
            && bare.chars().any(char::is_alphabetic)
            && bare
                .chars()
                .filter(|c| c.is_alphabetic())
                .all(char::is_uppercase))
}

/// What a line of the resume is in the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// The first line: the name, as the document's title.
    Title,
    /// A section name (`Experience`).
    Section,
    /// A line that heads a list of bullets inside a section: a role with its employer
    /// and dates, a project, a degree.
    Entry,
    /// A list item.
    Bullet,
    /// Any other line (the contact line, a skills list, a paragraph).
    Text,
}

/// A line of the optimized resume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentLine {
    /// What it is.
    pub kind: LineKind,
    /// The line as the resume writes it (a list item without its marker).
    pub original: String,
    /// The line as the document writes it: its rewrite, or the original.
    pub text: String,
    /// The rewrite's id (`B2`) when the line was replaced.
    pub rewrite: Option<String>,
}

/// A rewritten bullet that could not be put in place of its line (the resume's text no
/// longer holds the bullet it replaces).
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// Rewrites with no line to replace.
    #[error("rewritten bullets with no line of the resume to replace: {}", .0.join(", "))]
    Unplaced(Vec<String>),
    /// Writing or reading back the DOCX.
    #[error(transparent)]
    Docx(#[from] DocxError),
}

impl LineKind {
    /// How the line is written in the document.
    pub fn style(self) -> DocxStyle {
        match self {
            LineKind::Title => DocxStyle::Title,
            LineKind::Section => DocxStyle::Heading1,
            LineKind::Entry => DocxStyle::Heading2,
            LineKind::Bullet => DocxStyle::ListItem,
            LineKind::Text => DocxStyle::Plain,
        }
    }
}

/// The resume's lines with each rewrite in place of the bullet it replaces.
///
/// Rewrites are placed by their slot ([`crate::bullets`]): slots are the resume's bullets
/// in order, so they are matched to its lines walking forward.
pub fn document_lines(
    resume_text: &str,
    state: &OptimizationState,
) -> Result<Vec<DocumentLine>, DocumentError> {
    let slots = bullet_slots(state);
    let lines: Vec<&str> = resume_text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut next_slot = 0;
    let mut placed: Vec<&str> = Vec::new();
    let mut in_section = false;
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        let bare = strip_bullet(line);
        let kind = if i == 0 {
            LineKind::Title
        } else if is_bullet(line) {
            LineKind::Bullet
        } else if is_heading(line) {
            in_section = true;
            LineKind::Section
        } else if in_section
            && line.chars().count() <= MAX_ROLE_LINE_CHARS
            && (lines.get(i + 1).is_some_and(|next| is_bullet(next)) || is_dated_heading(line))
        {
            LineKind::Entry
        } else {
            LineKind::Text
        };
        let mut rewrite: Option<&RewrittenBullet> = None;
        if matches!(kind, LineKind::Bullet | LineKind::Text)
            && let Some(offset) = slots[next_slot..].iter().position(|s| s.text == bare)
        {
            let slot = &slots[next_slot + offset];
            next_slot += offset + 1;
            rewrite = state
                .optimized_bullets
                .iter()
                .find(|b| b.replaces == slot.id);
            placed.push(&slot.id);
        }
        out.push(DocumentLine {
            kind,
            original: bare.to_owned(),
            text: rewrite.map_or_else(|| bare.to_owned(), |r| r.text.clone()),
            rewrite: rewrite.map(|r| r.id.clone()),
        });
    }
    let unplaced: Vec<String> = state
        .optimized_bullets
        .iter()
        .filter(|b| !placed.contains(&b.replaces.as_str()))
        .map(|b| format!("{} ({})", b.id, b.replaces))
        .collect();
    if unplaced.is_empty() {
        Ok(out)
    } else {
        Err(DocumentError::Unplaced(unplaced))
    }
}

/// The optimized resume as Markdown: the name as its title (`#`), section names as
/// headings (`##`), role and other entry lines as subheadings (`###`), list items as
/// `- ` items, every other line as it is; rewritten bullets in place of theirs.
pub fn optimized_markdown(
    resume_text: &str,
    state: &OptimizationState,
) -> Result<String, DocumentError> {
    Ok(markdown_of(&document_lines(resume_text, state)?))
}

fn markdown_of(lines: &[DocumentLine]) -> String {
    let mut out = String::new();
    for line in lines {
        let text = match line.kind {
            LineKind::Section => line.text.trim_end_matches(':').trim(),
            _ => line.text.as_str(),
        };
        out.push_str(line.kind.style().markdown_prefix());
        out.push_str(text);
        out.push('\n');
    }
    out
}

/// A DOCX that read back with every line of the resume in it, in its order and style,
/// kept or replaced by its rewrite.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedDocx {
    /// The document.
    pub bytes: Vec<u8>,
    /// Lines of the resume found in it.
    pub lines: usize,
    /// Of those, lines replaced by a rewrite.
    pub rewritten: usize,
    /// The rules' score of the bullets read back from it (0 to 1): the kept attempt's
    /// rules score when every bullet is in place.
    pub score: f64,
}

/// Writes the optimized resume as a DOCX, reads it back, checks that every line of the
/// resume is in it, in its order and style (as written, or as its rewrite), and scores
/// the bullets read back.
pub fn optimized_docx(
    resume_text: &str,
    state: &OptimizationState,
) -> Result<CheckedDocx, DocumentError> {
    let lines = document_lines(resume_text, state)?;
    let bytes = build_docx(&markdown_of(&lines))?;
    let expected: Vec<(DocxStyle, &str)> = lines
        .iter()
        .map(|l| (l.kind.style(), l.text.as_str()))
        .collect();
    check_docx_paragraphs(&bytes, &expected)?;
    let read_back = extract_text(&bytes, DocumentKind::Docx)
        .map_err(|e| DocxError::Unreadable(e.to_string()))?;
    let bullets: Vec<String> = bullet_texts(&bullet_slots(state), &state.optimized_bullets)
        .into_iter()
        .filter(|b| read_back.contains(&normalize_text(b)))
        .collect();
    let analysis = state.jd_analysis.clone().unwrap_or_default();
    let score = score_by_rules(&analysis, &bullets, state.config.score_threshold).overall();
    Ok(CheckedDocx {
        bytes,
        lines: lines.len(),
        rewritten: lines.iter().filter(|l| l.rewrite.is_some()).count(),
        score,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optimized_markdown_puts_each_rewrite_in_place_of_its_bullet() {
        use crate::document::optimized_markdown;
        use crate::records::RewrittenBullet;
        use crate::state::OptimizationState;
        let resume = "Ada\nada@example.com\n\nExperience\nAnalyst, Engines (1842)\n- Wrote notes\n- Ran numbers\n\nSkills\nMaths";
        let mut state = OptimizationState::of_resume(resume);
        state.optimized_bullets = vec![RewrittenBullet {
            id: "B1".into(),
            replaces: "C1.1".into(),
            original: "Wrote notes".into(),
            text: "Wrote the first program".into(),
            sources: vec!["C1".into()],
        }];
        let markdown = optimized_markdown(resume, &state).unwrap();
        assert_eq!(
            markdown,
            "# Ada\nada@example.com\n## Experience\n### Analyst, Engines (1842)\n- Wrote the first program\n- Ran numbers\n## Skills\nMaths\n"
        );
    }

    const RESUME: &str = "Mara Lindqvist\n+46 70 123 45 67 · mara@example.org · linkedin.com/in/mara · Stockholm\n\nEXPERIENCE\nStaff Engineer — Nordpay AB, Stockholm | Jan 2019 – Present\n• Led the move of 40 services to Kubernetes\n• Cut p99 latency from 900 to 120 ms\nEngineer — Fjord Labs, Oslo | 2015 – 2018\n• Built the billing system in Go\n\nPROJECTS\nledgerkit (open source)\n• A double-entry ledger library with 1,200 stars\n\nLANGUAGES\nSwedish (native), English (fluent)\n\nEDUCATION\nM.Sc. Computer Science, KTH, 2015\n";

    fn state() -> OptimizationState {
        OptimizationState::of_resume(RESUME)
    }

    #[test]
    fn a_docx_keeps_every_line_in_order_and_style_with_the_rewrite_in_place() {
        let mut state = state();
        let slots = bullet_slots(&state);
        let slot = slots
            .iter()
            .find(|s| s.text == "Built the billing system in Go")
            .unwrap();
        state.optimized_bullets = vec![RewrittenBullet {
            id: "B1".into(),
            replaces: slot.id.clone(),
            original: slot.text.clone(),
            text: "Built the billing system in Go, serving every invoice".into(),
            sources: vec![slot.chunk_id.clone()],
        }];
        let lines = document_lines(RESUME, &state).unwrap();
        let kinds: Vec<LineKind> = lines.iter().map(|l| l.kind).collect();
        use LineKind::*;
        assert_eq!(
            kinds,
            [
                Title, Text, Section, Entry, Bullet, Bullet, Entry, Bullet, Section, Entry, Bullet,
                Section, Text, Section, Entry
            ]
        );
        assert_eq!(
            lines[7].text,
            "Built the billing system in Go, serving every invoice"
        );
        assert_eq!(lines[7].rewrite.as_deref(), Some("B1"));
        let docx = optimized_docx(RESUME, &state).unwrap();
        assert_eq!((docx.lines, docx.rewritten), (15, 1));
        let text = extract_text(&docx.bytes, DocumentKind::Docx).unwrap();
        for line in [
            "+46 70 123 45 67 · mara@example.org · linkedin.com/in/mara · Stockholm",
            "Staff Engineer — Nordpay AB, Stockholm | Jan 2019 – Present",
            "Engineer — Fjord Labs, Oslo | 2015 – 2018",
            "• Led the move of 40 services to Kubernetes",
            "Swedish (native), English (fluent)",
            "M.Sc. Computer Science, KTH, 2015",
        ] {
            assert!(text.contains(line), "{line}: {text}");
        }
        assert!(!text.contains("Built the billing system in Go\n"));
    }

    #[test]
    fn without_list_markers_role_lines_stay_headings_and_only_sentences_are_rewritable() {
        let resume = "Ada Byron\nada@example.org\n\nExperience\nAnalyst, Engines Ltd (2018 - 2021)\nWrote the first published program for the engine\nTranslated the memoir on the engine\n\nEducation\nPrivate tutoring in mathematics, 2015\n";
        let state = OptimizationState::of_resume(resume);
        let slots: Vec<String> = bullet_slots(&state).into_iter().map(|s| s.text).collect();
        assert!(slots.iter().all(|s| !s.contains("2018")), "{slots:?}");
        assert!(slots.contains(&"Translated the memoir on the engine".to_owned()));
        let kinds: Vec<LineKind> = document_lines(resume, &state)
            .unwrap()
            .iter()
            .map(|l| l.kind)
            .collect();
        use LineKind::*;
        assert_eq!(
            kinds,
            [Title, Text, Section, Entry, Text, Text, Section, Entry]
        );
    }

    #[test]
    fn a_rewrite_whose_bullet_is_gone_is_an_error_not_a_silent_loss() {
        let mut state = state();
        state.optimized_bullets = vec![RewrittenBullet {
            id: "B1".into(),
            replaces: "C9.1".into(),
            original: "Never written".into(),
            text: "Invented".into(),
            sources: vec![],
        }];
        let error = optimized_docx(RESUME, &state).unwrap_err();
        assert!(matches!(error, DocumentError::Unplaced(ref ids) if ids == &["B1 (C9.1)"]));
    }
}
