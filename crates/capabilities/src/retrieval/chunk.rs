//! Documents cut into retrievable pieces that keep their section: a resume into its
//! summary, experience, education, skills... and a job description into about,
//! responsibilities, requirements, benefits. Headings are found by their look (a short
//! line in capitals, ending in a colon, or a few words naming a section) and named by
//! their words; each section is cut
//! at bullets and paragraphs into chunks of at most [`MAX_CHUNK_CHARS`].

use serde::{Deserialize, Serialize};

/// The longest chunk, in characters; a longer paragraph is cut at sentence ends (or,
/// failing those, at spaces).
pub const MAX_CHUNK_CHARS: usize = 700;

/// What part of a document a chunk comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SectionKind {
    /// Before the first heading: a resume's name and contact lines, a posting's title.
    Header,
    /// A resume's summary, profile or objective.
    Summary,
    /// Work history.
    Experience,
    /// Education.
    Education,
    /// Skills, technologies.
    Skills,
    /// Projects.
    Projects,
    /// Certifications, licences, awards.
    Certifications,
    /// A posting's "about us".
    About,
    /// What the job does.
    Responsibilities,
    /// What the job asks for (qualifications, must and nice to have).
    Requirements,
    /// What the job offers.
    Benefits,
    /// A heading not recognized.
    Other,
}

impl SectionKind {
    /// The snake_case name, as stored in metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            SectionKind::Header => "header",
            SectionKind::Summary => "summary",
            SectionKind::Experience => "experience",
            SectionKind::Education => "education",
            SectionKind::Skills => "skills",
            SectionKind::Projects => "projects",
            SectionKind::Certifications => "certifications",
            SectionKind::About => "about",
            SectionKind::Responsibilities => "responsibilities",
            SectionKind::Requirements => "requirements",
            SectionKind::Benefits => "benefits",
            SectionKind::Other => "other",
        }
    }

    /// The kind a heading names, by its words.
    fn of_heading(heading: &str) -> SectionKind {
        let h = heading.to_lowercase();
        let has = |words: &[&str]| words.iter().any(|w| h.contains(w));
        if has(&[
            "responsibilit",
            "what you'll do",
            "what you will do",
            "the role",
            "your role",
            "duties",
            "day to day",
            "day-to-day",
        ]) {
            SectionKind::Responsibilities
        } else if has(&[
            "requirement",
            "qualification",
            "what you bring",
            "must have",
            "must-have",
            "nice to have",
            "nice-to-have",
            "you have",
            "about you",
            "what we're looking",
            "what we are looking",
            "who you are",
        ]) {
            SectionKind::Requirements
        } else if has(&[
            "benefit",
            "perks",
            "what we offer",
            "compensation",
            "we offer",
        ]) {
            SectionKind::Benefits
        } else if has(&[
            "about us",
            "about the company",
            "who we are",
            "the company",
            "about the team",
        ]) {
            SectionKind::About
        } else if has(&["summary", "profile", "objective", "about me"]) {
            SectionKind::Summary
        } else if has(&["experience", "employment", "work history", "career"]) {
            SectionKind::Experience
        } else if has(&["education", "academic", "degree"]) {
            SectionKind::Education
        } else if has(&["skill", "technolog", "tech stack", "competenc", "tools"]) {
            SectionKind::Skills
        } else if has(&["project"]) {
            SectionKind::Projects
        } else if has(&["certif", "licen", "award"]) {
            SectionKind::Certifications
        } else {
            SectionKind::Other
        }
    }
}

/// One retrievable piece of a document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// `{document}#{position}`.
    pub id: String,
    /// The document it comes from.
    pub document: String,
    /// Its place in the document, from 0.
    pub position: usize,
    /// The section it is in.
    pub section: SectionKind,
    /// The section's heading as written (empty for the header).
    pub heading: String,
    /// The text.
    pub text: String,
}

/// Whether a line looks like a heading: short, not a bullet, and in capitals, ending in a
/// colon, marked with `#`, or a few words naming a known section.
fn is_heading(line: &str) -> bool {
    let line = line.trim();
    let words = line.split_whitespace().count();
    if line.is_empty() || line.chars().count() > 48 || words > 6 || is_bullet(line) {
        return false;
    }
    let letters: Vec<char> = line.chars().filter(|c| c.is_alphabetic()).collect();
    let capitals = !letters.is_empty() && letters.iter().all(|c| c.is_uppercase());
    let colon = line.ends_with(':');
    let markdown = line.starts_with('#');
    // "Skills", "Work experience": a few words naming a section, nothing else on the line;
    // a posting's longer question-headings too ("What you will do", "Who you are").
    let lowered = line.to_lowercase();
    let question = ["what ", "who ", "about "]
        .iter()
        .any(|start| lowered.starts_with(start));
    let names_a_section = (words <= 3 || (words <= 5 && question))
        && !line.contains([',', '.', '(', '|'])
        && !line.chars().any(|c| c.is_ascii_digit())
        && SectionKind::of_heading(line) != SectionKind::Other;
    (capitals && letters.len() >= 4) || colon || markdown || names_a_section
}

fn is_bullet(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with(['-', '*', '•', '–', '·', '▪'])
        || line.split_once(['.', ')']).is_some_and(|(n, _)| {
            !n.is_empty() && n.len() <= 2 && n.chars().all(|c| c.is_ascii_digit())
        })
}

/// Cuts `text` into pieces of at most [`MAX_CHUNK_CHARS`], at sentence ends where it can.
fn split_long(text: &str) -> Vec<String> {
    if text.chars().count() <= MAX_CHUNK_CHARS {
        return vec![text.to_owned()];
    }
    let mut pieces = Vec::new();
    let mut current = String::new();
    for word in text.split_whitespace() {
        if current.chars().count() + word.chars().count() + 1 > MAX_CHUNK_CHARS
            && !current.is_empty()
        {
            // Back up to the last sentence end in the piece, when there is one late enough.
            let cut = current
                .match_indices(". ")
                .map(|(i, _)| i + 1)
                .filter(|&i| i > MAX_CHUNK_CHARS / 2)
                .last();
            match cut {
                Some(at) => {
                    let rest = current[at..].trim().to_owned();
                    current.truncate(at);
                    pieces.push(std::mem::take(&mut current));
                    current = rest;
                }
                None => pieces.push(std::mem::take(&mut current)),
            }
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(word);
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// Cuts `text` (the document `document`) into section-typed chunks: sections at headings,
/// then pieces at blank lines and at new non-bullet lines after bullets (a new role in a
/// work history), bullets gathered up to [`MAX_CHUNK_CHARS`].
///
/// ```
/// use job_capabilities::retrieval::{SectionKind, chunk_document};
/// let resume = "Ada Lovelace\nada@example.com\n\nEXPERIENCE\nAnalyst, Engines Ltd (1842-1843)\n- Wrote the first program\n\nSKILLS\nMathematics, notation";
/// let chunks = chunk_document("resume-1", resume);
/// let kinds: Vec<SectionKind> = chunks.iter().map(|c| c.section).collect();
/// assert_eq!(kinds, [SectionKind::Header, SectionKind::Experience, SectionKind::Skills]);
/// assert_eq!(chunks[1].id, "resume-1#1");
/// ```
pub fn chunk_document(document: &str, text: &str) -> Vec<Chunk> {
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut section = SectionKind::Header;
    let mut heading = String::new();
    let mut piece: Vec<String> = Vec::new();
    let mut in_bullets = false;
    let mut flush = |piece: &mut Vec<String>, section: SectionKind, heading: &str| {
        let text = piece.join("\n").trim().to_owned();
        piece.clear();
        if text.is_empty() {
            return;
        }
        for part in split_long(&text) {
            let position = chunks.len();
            chunks.push(Chunk {
                id: format!("{document}#{position}"),
                document: document.to_owned(),
                position,
                section,
                heading: heading.to_owned(),
                text: part,
            });
        }
    };
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            flush(&mut piece, section, &heading);
            in_bullets = false;
            continue;
        }
        if is_heading(trimmed) {
            flush(&mut piece, section, &heading);
            heading = trimmed
                .trim_start_matches('#')
                .trim()
                .trim_end_matches(':')
                .to_owned();
            section = SectionKind::of_heading(&heading);
            in_bullets = false;
            continue;
        }
        let bullet = is_bullet(trimmed);
        let size: usize = piece.iter().map(|l| l.chars().count() + 1).sum();
        // After bullets, a line that is no bullet starts a new entry (the next role),
        // unless it carries the bullet on: indented, or going on in lowercase.
        let carries_on = line.starts_with(char::is_whitespace)
            || trimmed.starts_with(|c: char| c.is_lowercase());
        let new_entry = in_bullets && !bullet && !carries_on;
        if new_entry || (size + trimmed.chars().count() > MAX_CHUNK_CHARS && !piece.is_empty()) {
            flush(&mut piece, section, &heading);
        }
        in_bullets = bullet || (in_bullets && carries_on);
        piece.push(trimmed.to_owned());
    }
    flush(&mut piece, section, &heading);
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESUME: &str = "Jane Doe\njane@example.com | Berlin\n\nSUMMARY\nBackend engineer with eight years in payments.\n\nEXPERIENCE\nSenior Engineer, Acme (2019-2024)\n- Built the billing platform in Rust\n- Led four engineers\nEngineer, Globex (2015-2019)\n- Go services on Kubernetes\n\nEducation:\nBSc Computer Science, TU Berlin\n\nSkills\nRust, Go, PostgreSQL";

    #[test]
    fn a_resume_is_cut_by_section_and_by_role() {
        let chunks = chunk_document("r", RESUME);
        let summary: Vec<(SectionKind, &str)> = chunks
            .iter()
            .map(|c| (c.section, c.text.lines().next().unwrap_or_default()))
            .collect();
        assert_eq!(
            summary,
            [
                (SectionKind::Header, "Jane Doe"),
                (
                    SectionKind::Summary,
                    "Backend engineer with eight years in payments."
                ),
                (SectionKind::Experience, "Senior Engineer, Acme (2019-2024)"),
                (SectionKind::Experience, "Engineer, Globex (2015-2019)"),
                (SectionKind::Education, "BSc Computer Science, TU Berlin"),
                (SectionKind::Skills, "Rust, Go, PostgreSQL"),
            ]
        );
        assert_eq!(
            chunks[2].text,
            "Senior Engineer, Acme (2019-2024)\n- Built the billing platform in Rust\n- Led four engineers"
        );
        assert_eq!(chunks[3].heading, "EXPERIENCE");
        assert!(
            chunks
                .iter()
                .enumerate()
                .all(|(i, c)| c.position == i && c.id == format!("r#{i}"))
        );
    }

    #[test]
    fn a_wrapped_bullet_stays_whole() {
        let text = "EXPERIENCE\nLead, Fernhill (2023-)\n- Rewrote the ingestion service in Rust,\n  cutting p99 latency to 25 ms.\n- Introduced SLOs\nEngineer, Parcelwise (2020-2023)\n- Built Go services";
        let chunks = chunk_document("w", text);
        let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Lead, Fernhill (2023-)\n- Rewrote the ingestion service in Rust,\ncutting p99 latency to 25 ms.\n- Introduced SLOs",
                "Engineer, Parcelwise (2020-2023)\n- Built Go services"
            ]
        );
    }

    /// The kinds of the sections a job description is cut into, in order.
    fn sections_of(jd: &str) -> Vec<SectionKind> {
        chunk_document("jd", jd).iter().map(|c| c.section).collect()
    }

    #[test]
    fn a_job_description_is_cut_into_its_parts() {
        let jd = "Staff Engineer at Northwind\n\nAbout us:\nWe move freight.\n\nWhat you'll do:\n- Own the routing service\n- Mentor engineers\n\nRequirements:\n- 8+ years of backend work\n- Rust or Go\n\nWhat we offer:\n- Remote within Europe";
        assert_eq!(
            sections_of(jd),
            [
                SectionKind::Header,
                SectionKind::About,
                SectionKind::Responsibilities,
                SectionKind::Requirements,
                SectionKind::Benefits
            ]
        );
    }

    #[test]
    fn question_headings_of_a_few_more_words_open_sections() {
        let jd = "SRE at Quayside\n\nWho we are\nWe move money.\n\nWhat you will do\n- Run Kubernetes\n\nWhat we're looking for\n- 5+ years in SRE";
        assert_eq!(
            sections_of(jd),
            [
                SectionKind::Header,
                SectionKind::About,
                SectionKind::Responsibilities,
                SectionKind::Requirements
            ]
        );
    }

    #[test]
    fn a_long_paragraph_is_cut_at_sentence_ends_under_the_limit() {
        let sentence = "This sentence about distributed systems is part of a long paragraph. ";
        let text = format!("SUMMARY\n{}", sentence.repeat(30));
        let chunks = chunk_document("long", &text);
        assert!(chunks.len() >= 3, "{}", chunks.len());
        for chunk in &chunks {
            assert!(
                chunk.text.chars().count() <= MAX_CHUNK_CHARS,
                "{}",
                chunk.text.len()
            );
            assert!(chunk.text.ends_with('.'), "{:?}", chunk.text);
            assert_eq!(chunk.section, SectionKind::Summary);
        }
    }
}
