//! The optimized resume as a document: the resume's own text with the bullets of each
//! rewritten chunk replaced by their rewrites (everything else as written), as a DOCX
//! that is read back, checked and scored again before it is offered.

use job_capabilities::documents::{DocumentKind, DocxError, build_docx, extract_text, verify_docx};

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
];

fn is_heading(line: &str) -> bool {
    let bare = line.trim_end_matches(':');
    HEADINGS.contains(&bare.to_lowercase().as_str())
        || (bare.len() >= 4
            && bare.chars().any(char::is_alphabetic)
            && bare
                .chars()
                .filter(|c| c.is_alphabetic())
                .all(char::is_uppercase))
}

/// The optimized resume as Markdown: the first line as its title, section names as
/// headings, and in each chunk with rewritten bullets (by their first source) those
/// bullets in place of its own.
///
/// ```
/// use jd_optimizer::{document::optimized_markdown, input::{Ids, resume_chunks}};
/// use jd_optimizer::state::{OptimizationState, RewrittenBullet};
/// let resume = "Ada\n\nExperience\nAnalyst, Engines (1842)\n- Wrote notes\n\nSkills\nMaths";
/// let ids = Ids { tenant_id: "t".into(), user_id: "u".into(), session_id: "s".into(), resume_id: "r".into() };
/// let mut state = OptimizationState::new(ids, String::new(), resume_chunks(resume), vec![], Default::default());
/// state.optimized_bullets = vec![RewrittenBullet { id: "B1".into(), text: "Wrote the first program".into(), sources: vec!["C1".into()] }];
/// let markdown = optimized_markdown(resume, &state);
/// assert_eq!(markdown, "# Ada\n## Experience\nAnalyst, Engines (1842)\n- Wrote the first program\n## Skills\nMaths\n");
/// ```
pub fn optimized_markdown(resume_text: &str, state: &OptimizationState) -> String {
    let mut out = String::new();
    let mut emitted: Vec<&str> = Vec::new();
    let mut title_done = false;
    for line in resume_text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if !title_done {
            out.push_str(&format!("# {line}\n"));
            title_done = true;
            continue;
        }
        if is_bullet(line) {
            let bare = strip_bullet(line);
            let owner = state
                .resume_sections
                .iter()
                .find(|c| c.content.lines().any(|l| strip_bullet(l.trim()) == bare));
            let rewritten: Vec<&str> = owner.map_or_else(Vec::new, |chunk| {
                state
                    .optimized_bullets
                    .iter()
                    .filter(|b| b.sources.first() == Some(&chunk.id))
                    .map(|b| b.text.as_str())
                    .collect()
            });
            if let (Some(chunk), false) = (owner, rewritten.is_empty()) {
                if !emitted.contains(&chunk.id.as_str()) {
                    emitted.push(&chunk.id);
                    for bullet in rewritten {
                        out.push_str(&format!("- {bullet}\n"));
                    }
                }
                continue;
            }
            out.push_str(&format!("- {bare}\n"));
        } else if is_heading(line) {
            out.push_str(&format!("## {}\n", line.trim_end_matches(':')));
        } else {
            out.push_str(&format!("{line}\n"));
        }
    }
    out
}

/// A DOCX that read back with every rewritten bullet in it.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedDocx {
    /// The document.
    pub bytes: Vec<u8>,
    /// The score of the bullets read back from it (0 to 1), by the rules.
    pub score: f64,
}

/// Writes the optimized resume as a DOCX, reads it back, checks that every rewritten
/// bullet is in it, and scores the bullets read back.
pub fn optimized_docx(
    resume_text: &str,
    state: &OptimizationState,
) -> Result<CheckedDocx, DocxError> {
    let bytes = build_docx(&optimized_markdown(resume_text, state))?;
    let expected: Vec<String> = state
        .optimized_bullets
        .iter()
        .map(|b| b.text.clone())
        .collect();
    verify_docx(&bytes, &expected)?;
    let text = extract_text(&bytes, DocumentKind::Docx)
        .map_err(|e| DocxError::Unreadable(e.to_string()))?;
    let bullets: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('•'))
        .map(|l| strip_bullet(l).to_owned())
        .collect();
    let analysis = state.jd_analysis.clone().unwrap_or_default();
    let score = score_by_rules(&analysis, &bullets, state.config.score_threshold).overall();
    Ok(CheckedDocx { bytes, score })
}
