//! No fabrication: a rewritten bullet may say only what its sources (the chunks it names)
//! or the user's own answers say. The check is deterministic and refuses a bullet that
//! introduces
//!
//! - a **number** its sources do not contain ("40%" where the resume says nothing of 40),
//! - a **skill** the job description asks for but the sources never mention (the
//!   classic keyword-stuffing lie: "Kubernetes" pasted into a Docker bullet),
//! - a **name**: a capitalized word that is not the bullet's first and appears nowhere in
//!   the sources (an employer, a product, a certification),
//! - a **title** word ("Senior", "Manager", "Director", ...) the sources do not hold,
//!
//! and a bullet that names no source it was given. A refused bullet is dropped with its
//! reason and never shown as fact.

use std::collections::BTreeSet;

use crate::analysis::JdAnalysis;
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

/// Why a bullet was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fabrication {
    /// It names no chunk it was given.
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

/// Checks `bullet` against `sources` (the texts of the chunks it cites, and the user's
/// answers): `Ok` when it introduces nothing they do not say. The skills checked are the
/// description's hard skills and weighted keywords (soft skills are phrasing, not facts).
///
/// ```
/// use jd_optimizer::analysis::JdAnalysis;
/// use jd_optimizer::fabrication::{check_bullet, Fabrication};
/// let jd = JdAnalysis { hard_skills: vec!["Kubernetes".into(), "Docker".into()], ..Default::default() }.normalized();
/// let sources = ["Moved 12 services to Docker at Acme"];
/// assert!(check_bullet("Containerized 12 services with Docker at Acme", &sources, &jd).is_ok());
/// assert_eq!(
///     check_bullet("Containerized 12 services with Docker on Kubernetes", &sources, &jd),
///     Err(Fabrication::Skill("Kubernetes".into()))
/// );
/// assert_eq!(
///     check_bullet("Containerized 40 services with Docker", &sources, &jd),
///     Err(Fabrication::Number("40".into()))
/// );
/// ```
pub fn check_bullet<S: AsRef<str>>(
    bullet: &str,
    sources: &[S],
    analysis: &JdAnalysis,
) -> Result<(), Fabrication> {
    let source_text = sources
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join("\n");

    let source_numbers: BTreeSet<String> = numbers(&source_text).into_iter().collect();
    for number in numbers(bullet) {
        if !source_numbers.contains(&number) {
            return Err(Fabrication::Number(number));
        }
    }

    let skills = analysis
        .hard_skills
        .iter()
        .map(String::as_str)
        .chain(analysis.keyword_weights.keys().map(String::as_str))
        .filter(|k| !analysis.is_soft_skill(k));
    for skill in skills {
        if find_keyword(bullet, skill) == Found::Exactly
            && find_keyword(&source_text, skill) == Found::No
        {
            return Err(Fabrication::Skill(skill.to_owned()));
        }
    }

    let source_words: BTreeSet<String> = words(&source_text).into_iter().collect();
    let source_stems: BTreeSet<String> = source_words.iter().map(|w| stem(w)).collect();
    let known = |word: &str| source_words.contains(word) || source_stems.contains(&stem(word));

    // A sentence's first word is capitalized by grammar: only a title is checked there.
    for sentence in sentences(bullet) {
        for (i, word) in bullet_words(sentence).into_iter().enumerate() {
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

/// The sentences of a bullet: cut after `.`, `;`, `:` or `!` followed by a space (so
/// "Node.js" and "2.1" stay whole).
fn sentences(bullet: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = bullet.as_bytes();
    for (i, c) in bullet.char_indices() {
        if matches!(c, '.' | ';' | ':' | '!' | '?') && bytes.get(i + 1) == Some(&b' ') {
            out.push(&bullet[start..=i]);
            start = i + 1;
        }
    }
    out.push(&bullet[start..]);
    out
}

/// The bullet's words as written (case kept), technical punctuation inside.
fn bullet_words(bullet: &str) -> Vec<String> {
    bullet
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '+' | '#' | '.' | '/' | '-')))
        .map(|w| w.trim_matches(|c| matches!(c, '.' | '/' | '-')))
        .filter(|w| w.chars().any(char::is_alphabetic))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jd() -> JdAnalysis {
        JdAnalysis {
            hard_skills: vec!["Python".into(), "AWS".into(), "Terraform".into()],
            soft_skills: vec!["leadership".into()],
            ..JdAnalysis::default()
        }
        .normalized()
    }

    #[test]
    fn rewording_what_the_sources_say_passes() {
        let sources = ["- Wrote Python jobs that cut the AWS bill by 30% (team of 4)"];
        let bullet = "Reduced AWS spend 30% by writing Python automation with a team of 4";
        assert_eq!(check_bullet(bullet, &sources, &jd()), Ok(()));
    }

    #[test]
    fn soft_skills_are_phrasing_not_facts() {
        let sources = ["Mentored 3 engineers"];
        let bullet = "Showed leadership by mentoring 3 engineers";
        assert_eq!(check_bullet(bullet, &sources, &jd()), Ok(()));
    }

    #[test]
    fn a_new_employer_or_title_is_refused() {
        let sources = ["Built Python services"];
        assert_eq!(
            check_bullet("Built Python services at Google", &sources, &jd()),
            Err(Fabrication::Name("Google".into()))
        );
        assert_eq!(
            check_bullet(
                "Built Python services as principal engineer",
                &sources,
                &jd()
            ),
            Err(Fabrication::Title("principal".into()))
        );
        assert_eq!(
            check_bullet("Senior engineer building Python services", &sources, &jd()),
            Err(Fabrication::Title("Senior".into()))
        );
    }

    #[test]
    fn a_new_sentence_may_start_with_a_capital() {
        let sources = ["Cut the AWS bill by 30% with Python jobs; saved a team of 4 a day a week"];
        let bullet = "Cut the AWS bill by 30% with Python jobs. Saved a team of 4 a day a week";
        assert_eq!(check_bullet(bullet, &sources, &jd()), Ok(()));
        let invented = "Cut the AWS bill by 30%. Praised by Google";
        assert_eq!(
            check_bullet(invented, &sources, &jd()),
            Err(Fabrication::Name("Google".into()))
        );
    }

    #[test]
    fn user_answers_count_as_sources() {
        let sources = [
            "Built Python services",
            "I wrote the Terraform modules for our AWS accounts",
        ];
        assert_eq!(
            check_bullet(
                "Built Python services on AWS provisioned with Terraform",
                &sources,
                &jd()
            ),
            Ok(())
        );
    }
}
