//! Grounding: generated text may say only what its sources say. The check is
//! deterministic and refuses text that introduces
//!
//! - a **number** its sources do not contain ("40%" where the resume says nothing of 40),
//! - a **skill** of a given list (a job's requirements) the sources never mention (the
//!   classic keyword-stuffing lie: "Kubernetes" pasted into a Docker bullet),
//! - a **name**: a capitalized word that does not open a sentence and appears nowhere in
//!   the sources (an employer, a product, a certification),
//! - a **title** word ("Senior", "Manager", "Director", ...) the sources do not hold.
//!
//! The JD optimizer checks every rewritten bullet with it; the job-agent chat checks its
//! resume suggestions, cover letters and emails.

use std::collections::BTreeSet;

use crate::text::{Found, find_keyword, numbers, stem, words};

/// Words that make a job title.
const TITLE_WORDS: &[&str] = &[
    "senior",
    "staff",
    "principal",
    "manager",
    "director",
    "head",
    "vp",
    "vice",
    "chief",
    "cto",
    "ceo",
    "cfo",
    "architect",
    "lead",
    "supervisor",
    "intern",
    "junior",
];

/// Capitalized words that are not names: sentence words any bullet may start a clause
/// with, and units.
const COMMON_CAPITALIZED: &[&str] = &["i", "a", "an", "the", "and", "q1", "q2", "q3", "q4"];

/// Why a text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fabrication {
    /// It names no source it was given.
    #[error("cites no source it was given ({0})")]
    NoSource(String),
    /// A number the sources do not contain.
    #[error("introduces the number {0}, which its sources do not contain")]
    Number(String),
    /// A skill the sources do not mention.
    #[error("introduces the skill \"{0}\", which its sources do not mention")]
    Skill(String),
    /// A name the sources do not contain.
    #[error("introduces the name \"{0}\", which its sources do not contain")]
    Name(String),
    /// A title word the sources do not contain.
    #[error("introduces the title \"{0}\", which its sources do not contain")]
    Title(String),
}

/// Checks `text` against `sources` (what the candidate's resume, profile or answers say):
/// `Ok` when it introduces no number, none of `skills`, no name and no title word they do
/// not hold.
///
/// ```
/// use job_capabilities::grounding::{check_claims, Fabrication};
/// let sources = ["Moved 12 services to Docker at Acme"];
/// let skills = ["Kubernetes", "Docker"];
/// assert!(check_claims("Containerized 12 services with Docker at Acme", &sources, &skills).is_ok());
/// assert_eq!(
///     check_claims("Containerized 12 services with Docker on Kubernetes", &sources, &skills),
///     Err(Fabrication::Skill("Kubernetes".into()))
/// );
/// assert_eq!(
///     check_claims("Containerized 40 services with Docker", &sources, &skills),
///     Err(Fabrication::Number("40".into()))
/// );
/// ```
pub fn check_claims<S: AsRef<str>, K: AsRef<str>>(
    text: &str,
    sources: &[S],
    skills: &[K],
) -> Result<(), Fabrication> {
    let source_text = sources
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join("\n");

    let source_numbers: BTreeSet<String> = numbers(&source_text).into_iter().collect();
    for number in numbers(text) {
        if !source_numbers.contains(&number) {
            return Err(Fabrication::Number(number));
        }
    }

    for skill in skills.iter().map(AsRef::as_ref) {
        if find_keyword(text, skill) == Found::Exactly
            && find_keyword(&source_text, skill) == Found::No
        {
            return Err(Fabrication::Skill(skill.to_owned()));
        }
    }

    let source_words: BTreeSet<String> = words(&source_text).into_iter().collect();
    let source_stems: BTreeSet<String> = source_words.iter().map(|w| stem(w)).collect();
    let known = |word: &str| source_words.contains(word) || source_stems.contains(&stem(word));

    // A sentence's first word is capitalized by grammar: only a title is checked there.
    for sentence in sentences(text) {
        for (i, word) in text_words(sentence).into_iter().enumerate() {
            let lower = word.to_lowercase();
            let title = TITLE_WORDS.contains(&lower.as_str()) && !source_words.contains(&lower);
            if title && (i > 0 || lower != "lead") {
                return Err(Fabrication::Title(word));
            }
            let capitalized = word.chars().next().is_some_and(char::is_uppercase);
            if i > 0
                && capitalized
                && !COMMON_CAPITALIZED.contains(&lower.as_str())
                && !known(&lower)
            {
                return Err(Fabrication::Name(word));
            }
        }
    }
    Ok(())
}

/// The sentences of a text: cut after `.`, `;`, `:` or `!` followed by a space (so
/// "Node.js" and "2.1" stay whole).
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        if matches!(c, '.' | ';' | ':' | '!' | '?') && bytes.get(i + 1) == Some(&b' ') {
            out.push(&text[start..=i]);
            start = i + 1;
        }
    }
    out.push(&text[start..]);
    out
}

/// The text's words as written (case kept), technical punctuation inside.
fn text_words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '+' | '#' | '.' | '/' | '-')))
        .map(|w| w.trim_matches(|c| matches!(c, '.' | '/' | '-')))
        .filter(|w| w.chars().any(char::is_alphabetic))
        .map(str::to_owned)
        .collect()
}
