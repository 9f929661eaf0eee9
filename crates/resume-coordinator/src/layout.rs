//! The structure of the resume as the candidate gave it, read with no model: the name,
//! the contact lines under it, and each section with its entries (a role, a degree, a
//! project: a heading such as "Senior Engineer, Acme (2019-2024)" with its own bullets)
//! and its plain lines. Every line keeps its evidence id (`R<n>`, numbered as intake
//! numbers them), so a bullet that cites `R7` can be put back where line 7 was.
//!
//! Sections are recognised by their headings (Markdown `#`, underlined, ALL CAPS, or a
//! usual resume heading such as "Work Experience" or "Education:"); entries by their
//! dates ("2019-2024", "Jan 2020 – Present", "(2017)") or by being the lines right above
//! a list of bullets.

use serde::{Deserialize, Serialize};

use crate::intake::strip_bullet;

/// One line of the resume, as given (bullet marker removed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    /// Its evidence id (`R5`).
    pub evidence: String,
    /// The text, trimmed, without its bullet marker.
    pub text: String,
    /// Whether it was a list item (`-`, `*`, `•`, `–`, `·`).
    pub bullet: bool,
}

/// A part of a section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Block {
    /// A role, degree or project: its heading lines (title, employer, place, dates) and
    /// the lines under it.
    Entry {
        /// The heading lines, in order.
        heading: Vec<Line>,
        /// The bullets and lines under the heading.
        items: Vec<Line>,
    },
    /// A line of the section outside any entry.
    Line(Line),
}

/// A section of the resume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutSection {
    /// The heading as given ("EXPERIENCE", "Work history"), without `#` or a final
    /// colon; empty for the lines of a resume that has no headings.
    pub heading: String,
    /// The heading's evidence id, when there is a heading line.
    pub evidence: Option<String>,
    /// Its entries and lines, in order.
    pub blocks: Vec<Block>,
}

impl LayoutSection {
    /// The evidence ids of every line of the section (heading included).
    pub fn line_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.evidence.iter().map(String::as_str).collect();
        for block in &self.blocks {
            match block {
                Block::Entry { heading, items } => {
                    ids.extend(heading.iter().chain(items).map(|l| l.evidence.as_str()));
                }
                Block::Line(line) => ids.push(&line.evidence),
            }
        }
        ids
    }

    /// Whether the section has entries (roles, degrees, projects).
    pub fn has_entries(&self) -> bool {
        self.blocks.iter().any(|b| matches!(b, Block::Entry { .. }))
    }
}

/// The resume's structure.
///
/// ```
/// use resume_coordinator::layout::{Block, ResumeLayout};
/// let layout = ResumeLayout::parse(
///     "Ada Lovelace\nada@example.com | London\n\nEXPERIENCE\nAnalyst, Babbage & Co (1842-1843)\n- Wrote the first program\n\nEducation\nPrivate tutoring in mathematics (1830)\n",
/// );
/// assert_eq!(layout.name, "Ada Lovelace");
/// assert_eq!(layout.contact[0].text, "ada@example.com | London");
/// assert_eq!(layout.sections[0].heading, "EXPERIENCE");
/// let Block::Entry { heading, items } = &layout.sections[0].blocks[0] else { panic!() };
/// assert_eq!(heading[0].text, "Analyst, Babbage & Co (1842-1843)");
/// assert_eq!(items[0].evidence, "R5");
/// assert_eq!(layout.sections[1].heading, "Education");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ResumeLayout {
    /// The candidate's name (the first line, or its part before a contact detail).
    pub name: String,
    /// The lines between the name and the first section (contact details, links, a
    /// headline), as given; a contact detail written on the name's line comes first.
    pub contact: Vec<Line>,
    /// The sections, in the resume's order.
    pub sections: Vec<LayoutSection>,
}

/// A raw line with its id.
struct Raw {
    evidence: String,
    text: String,
    bullet: bool,
    /// The Markdown heading marker (`#`) it had.
    markdown_heading: bool,
}

impl Raw {
    fn line(&self) -> Line {
        Line {
            evidence: self.evidence.clone(),
            text: self.text.clone(),
            bullet: self.bullet,
        }
    }
}

impl ResumeLayout {
    /// Reads the structure of `text`, numbering lines as intake does (`R1` is the first
    /// non-empty line).
    pub fn parse(text: &str) -> ResumeLayout {
        let mut raw: Vec<Raw> = Vec::new();
        for line in text.lines() {
            let stripped = strip_bullet(line);
            if stripped.is_empty() {
                continue;
            }
            let trimmed = line.trim();
            let markdown_heading = trimmed.starts_with('#');
            let plain = markdown_heading || is_rule(trimmed);
            let text = if markdown_heading {
                trimmed.trim_start_matches('#').trim().to_owned()
            } else if plain {
                trimmed.to_owned()
            } else {
                stripped.clone()
            };
            raw.push(Raw {
                evidence: format!("R{}", raw.len() + 1),
                bullet: !plain && stripped != trimmed,
                text,
                markdown_heading,
            });
        }
        let Some((first, rest)) = raw.split_first() else {
            return ResumeLayout::default();
        };
        let (name, on_name_line) = split_name(&first.text);
        let mut contact: Vec<Line> = on_name_line
            .map(|text| Line {
                evidence: first.evidence.clone(),
                text,
                bullet: false,
            })
            .into_iter()
            .collect();
        let headings: Vec<bool> = rest
            .iter()
            .enumerate()
            .map(|(i, line)| is_heading(line, rest.get(i + 1)))
            .collect();
        let first_heading = headings.iter().position(|h| *h);
        let header_end = first_heading.unwrap_or_else(|| {
            rest.iter()
                .position(|line| line.bullet || !looks_like_contact(&line.text))
                .unwrap_or(rest.len())
        });
        contact.extend(
            rest[..header_end]
                .iter()
                .filter(|l| !is_rule(&l.text))
                .map(Raw::line),
        );
        let mut sections = Vec::new();
        let mut i = header_end;
        while i < rest.len() {
            let (heading, evidence, start) = if headings[i] {
                (
                    heading_text(&rest[i].text),
                    Some(rest[i].evidence.clone()),
                    i + 1,
                )
            } else {
                (String::new(), None, i)
            };
            let end = (start..rest.len())
                .find(|j| headings[*j])
                .unwrap_or(rest.len());
            let body: Vec<&Raw> = rest[start..end]
                .iter()
                .filter(|l| !is_rule(&l.text))
                .collect();
            sections.push(LayoutSection {
                heading,
                evidence,
                blocks: blocks(&body),
            });
            i = end;
        }
        ResumeLayout {
            name,
            contact,
            sections,
        }
    }
}

impl LayoutSection {
    /// The section's entries (roles with their dates) as the evidence id of their first
    /// heading line and the heading as one line: what a section's writer is told so that
    /// each bullet can cite the role it belongs to.
    pub fn entry_headings(&self) -> Vec<(String, String)> {
        self.blocks
            .iter()
            .filter_map(|block| match block {
                Block::Entry { heading, .. } => heading
                    .first()
                    .map(|first| (first.evidence.clone(), joined(heading))),
                Block::Line(_) => None,
            })
            .collect()
    }
}

/// An entry's heading lines as one line, joined by " | ".
pub fn joined(heading: &[Line]) -> String {
    heading
        .iter()
        .map(|l| l.text.as_str())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The name, and the contact details written after it on the same line ("Ada Lovelace |
/// ada@example.com"), if any.
fn split_name(first: &str) -> (String, Option<String>) {
    if !looks_like_contact(first) {
        return (first.to_owned(), None);
    }
    let cut = first
        .char_indices()
        .find(|(_, c)| matches!(c, '|' | '•' | '·' | ',' | '—' | '–' | '/' | '\t'))
        .map(|(i, _)| i);
    match cut {
        Some(i) if !looks_like_contact(&first[..i]) && !first[..i].trim().is_empty() => {
            let rest = first[i..]
                .trim_start_matches(['|', '•', '·', ',', '—', '–', '/', '\t', ' '])
                .trim();
            (first[..i].trim().to_owned(), Some(rest.to_owned()))
        }
        _ => (first.to_owned(), None),
    }
}

/// An email address, a phone number, a link or a handle.
fn looks_like_contact(text: &str) -> bool {
    let lower = text.to_lowercase();
    let digits = text.chars().filter(char::is_ascii_digit).count();
    lower.contains('@')
        || lower.contains("http")
        || lower.contains("www.")
        || lower.contains("linkedin")
        || lower.contains("github")
        || (digits >= 7 && !is_dated(text))
}

/// A line of `-`, `=` or `_` only (an underline or a rule).
fn is_rule(text: &str) -> bool {
    text.len() >= 3
        && text
            .chars()
            .all(|c| matches!(c, '-' | '=' | '_' | '—' | '─'))
}

/// The words that name the usual sections of a resume.
const SECTION_WORDS: &[&str] = &[
    "summary",
    "profile",
    "about",
    "objective",
    "overview",
    "experience",
    "employment",
    "work history",
    "career",
    "education",
    "skills",
    "competencies",
    "expertise",
    "technologies",
    "projects",
    "certifications",
    "certificates",
    "licenses",
    "languages",
    "publications",
    "awards",
    "honors",
    "honours",
    "volunteer",
    "volunteering",
    "interests",
    "references",
    "training",
    "courses",
    "achievements",
    "accomplishments",
    "qualifications",
    "highlights",
    "activities",
    "patents",
    "memberships",
    "affiliations",
    "talks",
    "open source",
];

/// A heading without its Markdown marker and final colon.
fn heading_text(text: &str) -> String {
    text.trim_end_matches(':').trim().to_owned()
}

fn is_heading(line: &Raw, next: Option<&Raw>) -> bool {
    if line.bullet {
        return false;
    }
    if line.markdown_heading {
        return true;
    }
    if next.is_some_and(|n| !n.bullet && is_rule(&n.text)) && !is_rule(&line.text) {
        return true;
    }
    let text = heading_text(&line.text);
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.is_empty()
        || words.len() > 5
        || text.chars().any(|c| c.is_ascii_digit())
        || line
            .text
            .trim_end_matches(':')
            .contains([':', '.', '|', '@', '(', ','])
    {
        return false;
    }
    let letters: Vec<char> = text.chars().filter(|c| c.is_alphabetic()).collect();
    let all_caps = letters.len() >= 3 && letters.iter().all(|c| c.is_uppercase());
    if all_caps && words.len() <= 4 {
        return true;
    }
    let lower = text.to_lowercase();
    let capitalized = words
        .iter()
        .all(|w| w.chars().next().is_some_and(|c| !c.is_lowercase()) || w.len() <= 3);
    capitalized && SECTION_WORDS.iter().any(|word| lower.contains(word))
}

const MONTHS: &[&str] = &[
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// Whether a line carries dates as a role or a degree does: a range of years ("2019 -
/// 2024", "2020–present"), a month and year, a year in brackets, or a year at its end.
///
/// ```
/// use resume_coordinator::layout::is_dated;
/// assert!(is_dated("Senior Engineer, Acme (2019-2024)"));
/// assert!(is_dated("Acme — Berlin, Jan 2020 – Present"));
/// assert!(is_dated("BSc Computer Science, University of Porto, 2017"));
/// assert!(!is_dated("Shipped the 2021 redesign used by 2 million people"));
/// ```
pub fn is_dated(text: &str) -> bool {
    let lower = text.to_lowercase();
    let tokens: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .collect();
    let is_year = |t: &str| {
        t.len() == 4
            && t.chars().all(|c| c.is_ascii_digit())
            && (t.starts_with("19") || t.starts_with("20"))
    };
    let ongoing = |t: &str| matches!(t, "present" | "current" | "now" | "today");
    for (i, token) in tokens.iter().enumerate() {
        if !is_year(token) {
            continue;
        }
        let before = i.checked_sub(1).map(|j| tokens[j]);
        let after = tokens.get(i + 1).copied();
        if before.is_some_and(|t| is_year(t) || MONTHS.iter().any(|m| t.starts_with(m)))
            || after.is_some_and(|t| is_year(t) || ongoing(t))
            || (before == Some("to") || after == Some("to"))
            || after.is_none()
        {
            return true;
        }
    }
    // A year in brackets: "(2017)".
    lower
        .match_indices('(')
        .any(|(i, _)| lower[i..].split(')').next().is_some_and(tokens_have_year))
}

fn tokens_have_year(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_digit())
        .any(|t| t.len() == 4 && (t.starts_with("19") || t.starts_with("20")))
}

/// A paragraph rather than a heading: many words, or a sentence.
fn is_paragraph(text: &str) -> bool {
    let words = text.split_whitespace().count();
    words > 20 || (words > 10 && text.ends_with('.'))
}

/// The blocks of a section's lines.
fn blocks(lines: &[&Raw]) -> Vec<Block> {
    let marked = lines.iter().any(|l| l.bullet);
    let mut out: Vec<Block> = Vec::new();
    // Whether the last block is an entry that takes the lines that follow.
    let mut open = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if marked && line.bullet {
            push_item(&mut out, open, line.line());
            i += 1;
            continue;
        }
        if !marked {
            // No list markers: a dated line starts an entry, the lines after are its own.
            if !is_paragraph(&line.text) && is_dated(&line.text) {
                out.push(Block::Entry {
                    heading: vec![line.line()],
                    items: Vec::new(),
                });
                open = true;
            } else {
                push_item(&mut out, open, line.line());
            }
            i += 1;
            continue;
        }
        // A run of lines without markers, up to the next bullet.
        let end = (i..lines.len())
            .find(|j| lines[*j].bullet)
            .unwrap_or(lines.len());
        let run = &lines[i..end];
        let followed_by_bullets = end < lines.len();
        let mut group: Vec<Line> = Vec::new();
        let mut groups: Vec<(Vec<Line>, bool)> = Vec::new();
        for line in run {
            if is_paragraph(&line.text) {
                if !group.is_empty() {
                    groups.push((std::mem::take(&mut group), true));
                }
                groups.push((vec![line.line()], false));
                continue;
            }
            group.push(line.line());
            if is_dated(&line.text) {
                groups.push((std::mem::take(&mut group), true));
            }
        }
        if !group.is_empty() {
            groups.push((group, true));
        }
        // Lines after a dated line join its heading when bullets follow them ("Acme,
        // 2019-2024" then "Senior Engineer").
        if followed_by_bullets && groups.len() >= 2 {
            let last = groups.len() - 1;
            let dated = groups[last].0.iter().any(|l| is_dated(&l.text));
            if !dated && groups[last].1 && groups[last - 1].1 && groups[last].0.len() <= 2 {
                let (tail, _) = groups.remove(last);
                groups[last - 1].0.extend(tail);
            }
        }
        let count = groups.len();
        for (n, (group, headable)) in groups.into_iter().enumerate() {
            let dated = group.iter().any(|l| is_dated(&l.text));
            let last = n + 1 == count;
            if headable && (dated || (last && followed_by_bullets)) {
                out.push(Block::Entry {
                    heading: group,
                    items: Vec::new(),
                });
                open = true;
            } else {
                for line in group {
                    push_item(&mut out, open && !headable, line);
                }
                open = open && !headable;
            }
        }
        i = end;
    }
    out
}

/// Adds a line to the open entry, or to the section.
fn push_item(out: &mut Vec<Block>, open: bool, line: Line) {
    if open && let Some(Block::Entry { items, .. }) = out.last_mut() {
        items.push(line);
        return;
    }
    out.push(Block::Line(line));
}
