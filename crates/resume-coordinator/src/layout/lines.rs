//! How a line of a resume reads: a heading, a contact detail, a rule, dates, a
//! paragraph. No model: words, capitals, digits and punctuation.

use job_capabilities::text::{MONTHS, is_dated};

use super::Raw;

/// The name, and the contact details written after it on the same line ("Ada Lovelace |
/// ada@example.com"), if any.
pub(super) fn split_name(first: &str) -> (String, Option<String>) {
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
pub(super) fn looks_like_contact(text: &str) -> bool {
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
pub(super) fn is_rule(text: &str) -> bool {
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
pub(super) fn heading_text(text: &str) -> String {
    text.trim_end_matches(':').trim().to_owned()
}

pub(super) fn is_heading(line: &Raw, next: Option<&Raw>) -> bool {
    if line.bullet {
        return false;
    }
    if line.markdown_heading {
        return true;
    }
    if line.markdown_entry {
        return false;
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
    let lower = text.to_lowercase();
    let usual = SECTION_WORDS.iter().any(|word| lower.contains(word));
    let letters: Vec<char> = text.chars().filter(|c| c.is_alphabetic()).collect();
    let all_caps = letters.len() >= 3 && letters.iter().all(|c| c.is_uppercase());
    // An employer in capitals above its role's dates ("ACME CORP" then "Engineer,
    // 2019-2024") is an entry's heading, not a section's.
    let above_dates = next.is_some_and(|n| !n.bullet && is_dated(&n.text));
    if all_caps && words.len() <= 4 && (usual || !above_dates) {
        return true;
    }
    let capitalized = words
        .iter()
        .all(|w| w.chars().next().is_some_and(|c| !c.is_lowercase()) || w.len() <= 3);
    capitalized && usual
}

/// A paragraph rather than a heading: many words, or a sentence.
pub(super) fn is_paragraph(text: &str) -> bool {
    let words = text.split_whitespace().count();
    words > 20 || (words > 10 && text.ends_with('.'))
}

/// Whether a line holds nothing but dates ("2015 - 2017", "Jan 2020 – Present").
pub(super) fn dates_only(text: &str) -> bool {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .all(|w| {
            let w = w.to_lowercase();
            w.chars().all(|c| c.is_ascii_digit())
                || MONTHS.iter().any(|m| w.starts_with(m))
                || matches!(
                    w.as_str(),
                    "present" | "current" | "now" | "today" | "to" | "since"
                )
        })
}
