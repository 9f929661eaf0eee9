//! Whether the candidate's material meets a qualification the description lists, where a
//! text can tell: years of experience (from the resume's date ranges), a degree level,
//! a certification. Other qualifications are not judged here.

use chrono::Datelike;

use crate::text::{Found, find_keyword, words};

/// What the resume shows against one qualification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The resume shows it.
    Met,
    /// The resume does not show it; why, in words.
    Missing(String),
    /// A text check cannot tell.
    Unknown,
}

/// Degree levels, lowest first, with the words that name them.
const DEGREES: &[(u8, &[&str])] = &[
    (
        1,
        &[
            "bachelor",
            "bachelor's",
            "bachelors",
            "b.sc",
            "bsc",
            "b.s",
            "b.a",
            "ba",
            "bs",
            "b.eng",
            "beng",
            "undergraduate",
        ],
    ),
    (
        2,
        &[
            "master", "master's", "masters", "m.sc", "msc", "m.s", "ms", "m.a", "mba", "m.eng",
            "meng",
        ],
    ),
    (3, &["phd", "ph.d", "doctorate", "doctoral"]),
];

fn degree_level(text: &str) -> Option<u8> {
    let words = words(text);
    DEGREES
        .iter()
        .rev()
        .find(|(_, names)| {
            words
                .iter()
                .any(|w| names.contains(&w.trim_end_matches('.')))
        })
        .map(|(level, _)| *level)
}

/// The years a qualification asks for: the first number before "years" or "yrs"
/// ("5+ years", "3-5 years": the lower bound).
fn years_asked(text: &str) -> Option<u32> {
    let lower = text.to_lowercase();
    let at = lower.find("year").or_else(|| lower.find("yrs"))?;
    let before = &lower[..at];
    let digits: String = before
        .trim_end()
        .trim_end_matches(['+', ' '])
        .chars()
        .rev()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit() || *c == '-' || *c == '–')
        .collect::<String>()
        .chars()
        .rev()
        .collect();
    digits
        .split(['-', '–'])
        .find(|d| !d.is_empty())
        .and_then(|d| d.parse().ok())
}

/// The span of years the resume's date ranges cover (`2014 - 2018`, `2018 - present`),
/// from the earliest start to the latest end.
pub fn years_shown(resume: &str) -> Option<u32> {
    let now = chrono::Utc::now().year();
    let mut starts = Vec::new();
    let mut ends = Vec::new();
    for line in resume.lines() {
        let lower = line.to_lowercase();
        let years: Vec<i32> = lower
            .split(|c: char| !c.is_ascii_digit())
            .filter(|t| t.len() == 4)
            .filter_map(|t| t.parse().ok())
            .filter(|y| (1950..=now).contains(y))
            .collect();
        let open = ["present", "current", "now", "today"]
            .iter()
            .any(|w| lower.contains(w));
        match (years.as_slice(), open) {
            ([start], true) => {
                starts.push(*start);
                ends.push(now);
            }
            ([start, end, ..], _) if end >= start => {
                starts.push(*start);
                ends.push(*end);
            }
            _ => {}
        }
    }
    let span = ends.iter().max()? - starts.iter().min()?;
    u32::try_from(span).ok()
}

/// What `resume` (all the candidate's material) shows against `qualification`.
pub fn check(qualification: &str, resume: &str) -> Verdict {
    let lower = qualification.to_lowercase();
    if let Some(asked) = years_asked(qualification) {
        return match years_shown(resume) {
            Some(shown) if shown >= asked => Verdict::Met,
            Some(shown) => Verdict::Missing(format!(
                "{qualification} (the resume's dates cover about {shown} years)"
            )),
            None => Verdict::Missing(format!(
                "{qualification} (the resume gives no dates to count years from)"
            )),
        };
    }
    let asks_degree = lower.contains("degree") || degree_level(qualification).is_some();
    if asks_degree {
        let asked = degree_level(qualification).unwrap_or(1);
        return match degree_level(resume) {
            Some(shown) if shown >= asked => Verdict::Met,
            Some(_) => {
                Verdict::Missing(format!("{qualification} (the resume shows a lower degree)"))
            }
            None if lower.contains("equivalent") || lower.contains("or experience") => {
                Verdict::Unknown
            }
            None => Verdict::Missing(format!("{qualification} (the resume names no degree)")),
        };
    }
    if lower.contains("certif") {
        // The certification's own name: the capitalized words of the qualification.
        let name: Vec<&str> = qualification
            .split_whitespace()
            .filter(|w| w.chars().next().is_some_and(char::is_uppercase))
            .filter(|w| !w.to_lowercase().starts_with("certif"))
            .collect();
        if name.is_empty() {
            return Verdict::Unknown;
        }
        let found = name.iter().all(|w| {
            find_keyword(resume, w.trim_matches(|c: char| !c.is_alphanumeric())) != Found::No
        });
        return if found && resume.to_lowercase().contains("certif") {
            Verdict::Met
        } else {
            Verdict::Missing(format!(
                "{qualification} (the resume names no such certification)"
            ))
        };
    }
    Verdict::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_reads_years_and_degrees_from_the_resume() {
        use crate::qualifications::{Verdict, check};
        let resume = "Engineer, Acme (2019 - 2023)\nB.Sc. Computer Science, 2019";
        assert!(matches!(
            check("6+ years of backend experience", resume),
            Verdict::Missing(_)
        ));
        assert_eq!(
            check("2+ years of backend experience", resume),
            Verdict::Met
        );
        assert!(matches!(
            check("Master's degree in CS", resume),
            Verdict::Missing(_)
        ));
        assert_eq!(
            check("Bachelor's degree or equivalent", resume),
            Verdict::Met
        );
        assert_eq!(check("Strong communication", resume), Verdict::Unknown);
    }

    #[test]
    fn years_come_from_the_earliest_start_to_the_latest_end() {
        let resume = "Lead, Acme (2018 - 2022)\nEngineer, Beta (2012 - 2018)\nM.Sc. 2012";
        assert_eq!(years_shown(resume), Some(10));
        assert_eq!(years_asked("3-5 years in SRE"), Some(3));
        assert_eq!(years_asked("8+ years in ML"), Some(8));
        assert_eq!(years_asked("Python"), None);
    }

    #[test]
    fn a_certification_is_met_only_when_named() {
        let resume = "AWS Certified Solutions Architect, 2021";
        assert_eq!(check("AWS certification", resume), Verdict::Met);
        assert!(matches!(
            check("CKA certification", resume),
            Verdict::Missing(_)
        ));
    }

    #[test]
    fn a_phd_meets_a_masters() {
        assert_eq!(
            check("MSc or PhD in ML", "PhD, Physics, 2015"),
            Verdict::Met
        );
    }
}
