//! A profile read from a resume's text, without a model: the name (the first short line
//! of words), the email address, the skills (a "Skills" line or section), the years of
//! experience stated, and the current title (a line naming a role near the top).

use job_capabilities::documents::strip_bullet;

use crate::models::UserProfile;

/// Words that make a line a job title.
const ROLE_WORDS: &[&str] = &[
    "engineer",
    "developer",
    "scientist",
    "analyst",
    "manager",
    "designer",
    "architect",
    "consultant",
    "administrator",
    "specialist",
    "lead",
    "director",
    "sre",
    "devops",
];

fn is_name(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    (2..=4).contains(&words.len())
        && words.iter().all(|w| {
            w.chars().next().is_some_and(char::is_uppercase)
                && w.chars()
                    .all(|c| c.is_alphabetic() || matches!(c, '-' | '\'' | '.'))
        })
}

fn email_in(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '|' | ',' | ';' | '<' | '>' | '(' | ')'))
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .find(|w| {
            let Some((local, domain)) = w.split_once('@') else {
                return false;
            };
            !local.is_empty() && domain.contains('.') && !domain.starts_with('.')
        })
        .map(str::to_owned)
}

fn years_in(text: &str) -> Option<u32> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    words.windows(2).find_map(|pair| {
        let number = pair[0].trim_end_matches('+');
        (pair[1].starts_with("year") && number.chars().all(|c| c.is_ascii_digit()))
            .then(|| number.parse().ok())
            .flatten()
    })
}

/// Headings that end a skills section when written as a line of their own, in any case.
const SECTION_HEADINGS: &[&str] = &[
    "experience",
    "work experience",
    "professional experience",
    "employment",
    "employment history",
    "work history",
    "education",
    "projects",
    "certifications",
    "languages",
    "interests",
    "summary",
    "profile",
    "awards",
    "publications",
    "references",
    "volunteering",
];

/// Whether a line is a heading: all capitals, or one of [`SECTION_HEADINGS`].
fn is_heading(line: &str) -> bool {
    let capitals = line.len() < 40
        && line
            .chars()
            .filter(|c| c.is_alphabetic())
            .all(char::is_uppercase);
    let named = SECTION_HEADINGS.contains(&line.trim_end_matches(':').to_lowercase().as_str());
    !line.is_empty() && (capitals || named)
}

/// The skills of a "Skills" line, or of the section under a "Skills" heading up to the
/// next heading or blank line. `lines` are the resume's, blank ones included.
fn skills_in(lines: &[&str]) -> Vec<String> {
    let mut skills = Vec::new();
    let mut in_section = false;
    for line in lines {
        let trimmed = line.trim();
        let lower = trimmed.to_lowercase();
        let labelled = lower.starts_with("skills") || lower.starts_with("technical skills");
        if labelled {
            in_section = true;
            if let Some((_, rest)) = trimmed.split_once(':') {
                skills.extend(split_skills(rest));
            }
            continue;
        }
        if in_section {
            if trimmed.is_empty() || is_heading(trimmed) {
                if !skills.is_empty() {
                    break;
                }
                continue;
            }
            let item = strip_bullet(trimmed);
            let item = item.split_once(':').map_or(item, |(_, rest)| rest);
            skills.extend(split_skills(item));
        }
    }
    skills.dedup();
    skills
}

fn split_skills(text: &str) -> Vec<String> {
    text.split([',', ';', '|', '•'])
        .map(|s| s.trim().trim_end_matches('.').to_owned())
        .filter(|s| !s.is_empty() && s.split_whitespace().count() <= 4)
        .collect()
}

/// The profile a resume's text gives (its text kept as the evidence).
pub fn profile_from_resume(text: &str) -> UserProfile {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let name = lines
        .iter()
        .take(3)
        .map(|l| l.trim())
        .find(|l| is_name(l))
        .unwrap_or_default()
        .to_owned();
    let title = lines
        .iter()
        .take(8)
        .map(|l| strip_bullet(l.trim()))
        .find(|l| {
            let lower = l.to_lowercase();
            l.split_whitespace().count() <= 6
                && ROLE_WORDS.iter().any(|r| {
                    lower
                        .split_whitespace()
                        .any(|w| w.trim_matches(|c: char| !c.is_alphanumeric()) == *r)
                })
        });
    UserProfile {
        name,
        email: email_in(text).unwrap_or_default(),
        skills: skills_in(&text.lines().collect::<Vec<_>>()),
        titles: title.map(|t| vec![t.to_owned()]).unwrap_or_default(),
        years_experience: years_in(text),
        resume_text: text.to_owned(),
        ..UserProfile::default()
    }
}

/// The hex SHA-256 of a resume's text.
pub fn resume_digest(text: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Takes a resume into `profile`: what the resume says fills in what the profile lacks
/// (name, email, skills, titles, years), what the user said stays; the text becomes the
/// profile's evidence, `source` (a file name, `pasted text`) where it came from.
///
/// ```
/// use job_agent_chat::models::UserProfile;
/// use job_agent_chat::take_resume;
/// let mut profile = UserProfile { skills: vec!["Go".into()], ..UserProfile::default() };
/// take_resume(&mut profile, "Ada Lovelace\nada@example.com\nSkills: Rust, Kafka", "cv.txt");
/// assert_eq!((profile.name.as_str(), profile.email.as_str()), ("Ada Lovelace", "ada@example.com"));
/// assert_eq!(profile.skills, ["Go"], "what the user said stays");
/// assert_eq!(profile.resume_source, "cv.txt");
/// ```
pub fn take_resume(profile: &mut UserProfile, text: &str, source: &str) {
    let read = profile_from_resume(text);
    let keep = |mine: &mut String, read: String| {
        if mine.is_empty() {
            *mine = read;
        }
    };
    keep(&mut profile.name, read.name);
    keep(&mut profile.email, read.email);
    if profile.skills.is_empty() {
        profile.skills = read.skills;
    }
    if profile.titles.is_empty() {
        profile.titles = read.titles;
    }
    profile.years_experience = profile.years_experience.or(read.years_experience);
    profile.resume_digest = resume_digest(text);
    profile.resume_text = read.resume_text;
    profile.resume_source = source.to_owned();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_resume_gives_its_name_email_skills_and_years() {
        let text = "Ada Lovelace\nSenior Backend Engineer\nada@example.com | Berlin\n\nSUMMARY\n8 years building payment systems.\n\nSKILLS\n- Languages: Rust, Go, Python\n- PostgreSQL, Kafka\n\nEXPERIENCE\n- Built things";
        let profile = profile_from_resume(text);
        assert_eq!(profile.name, "Ada Lovelace");
        assert_eq!(profile.email, "ada@example.com");
        assert_eq!(profile.titles, ["Senior Backend Engineer"]);
        assert_eq!(
            profile.skills,
            ["Rust", "Go", "Python", "PostgreSQL", "Kafka"]
        );
        assert_eq!(profile.years_experience, Some(8));
    }

    #[test]
    fn a_skills_section_ends_at_a_blank_line_or_a_title_case_heading() {
        let spaced = "Ada Lovelace\n\nSkills\nRust, Go\n\nAcme Corp\nBuilt things";
        assert_eq!(profile_from_resume(spaced).skills, ["Rust", "Go"]);
        let packed = "Ada Lovelace\nSkills\nRust, Go\nWork Experience\nAcme Corp, Berlin";
        assert_eq!(profile_from_resume(packed).skills, ["Rust", "Go"]);
    }
}
