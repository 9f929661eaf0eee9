//! A job posting cut down to what describes the role, before a model reads it.
//!
//! Postings carry much that says nothing of the job: the company's pitch, benefits and
//! perks, the hiring process, equal-opportunity and privacy notices, and the pay (which is
//! parsed from the posting itself, [`crate::salary`], never asked of a model).
//! [`compact_posting`] drops those sections and lines and keeps the role, its duties and
//! its requirements, in their order and words.

use crate::salary::parse_salary_text;

/// Words of a section heading whose section is not about the role.
const BOILERPLATE_HEADINGS: &[&str] = &[
    "benefit",
    "perk",
    "we offer",
    "what's in it for you",
    "what’s in it for you",
    "why join",
    "why you'll love",
    "why work",
    "our values",
    "our culture",
    "life at",
    "equal opportunit",
    "equal employment",
    "diversity",
    "inclusion",
    "privacy",
    "how to apply",
    "application process",
    "hiring process",
    "interview process",
    "compensation",
    "salary",
    "pay range",
    "legal",
    "disclaimer",
    "who we are",
    "our story",
    "our mission",
];

/// Words of an `About ...` heading that make it about the job, not the company.
const ROLE_WORDS: &[&str] = &[
    "role",
    "job",
    "position",
    "team",
    "you",
    "work",
    "opportunity",
];

/// Phrases of a line that is a notice, not the job, wherever it stands.
const BOILERPLATE_LINES: &[&str] = &[
    "equal opportunity",
    "equal employment",
    "regardless of race",
    "without regard to race",
    "reasonable accommodation",
    "e-verify",
    "privacy notice",
    "privacy policy",
    "recruitment agencies",
    "unsolicited resumes",
];

/// Whether a line of posting text reads as a heading: short, not a list item, and not
/// ending as a sentence does (a trailing colon is a heading's).
fn is_heading(line: &str) -> bool {
    let line = line.trim();
    !line.is_empty()
        && line.chars().count() <= 80
        && !line.starts_with("- ")
        && !line.ends_with(['.', '!', '?', ';', ','])
}

/// Whether a heading opens a section that is not about the role.
fn is_boilerplate_heading(heading: &str) -> bool {
    let heading = heading.trim().trim_end_matches(':').to_lowercase();
    if BOILERPLATE_HEADINGS.iter().any(|w| heading.contains(w)) {
        return true;
    }
    heading.starts_with("about")
        && !heading
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| ROLE_WORDS.contains(&w))
}

/// Whether a line is a notice or the pay, to be dropped wherever it stands.
fn is_boilerplate_line(line: &str) -> bool {
    let lower = line.to_lowercase();
    BOILERPLATE_LINES.iter().any(|p| lower.contains(p)) || parse_salary_text(line).is_some()
}

/// The lines of `text` (a posting as [`crate::html::html_to_text`] gives it, one block a
/// line) that describe the role: sections under a boilerplate heading and boilerplate
/// lines dropped. A posting whose every line would go is returned as it is.
///
/// ```
/// use job_capabilities::posting::compact_posting;
/// let posting = "About Acme\nAcme builds robots.\nThe role\nYou will build the scheduler in Rust.\n\
///     What we look for\n- 5+ years of backend work\n- Kafka\n\
///     The salary range is €95,000 - €120,000 per year.\nBenefits\n30 days of vacation.\n\
///     Acme is an equal opportunity employer.";
/// assert_eq!(
///     compact_posting(posting),
///     "The role\nYou will build the scheduler in Rust.\nWhat we look for\n- 5+ years of backend work\n- Kafka"
/// );
/// ```
pub fn compact_posting(text: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let mut in_boilerplate = false;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if is_heading(line) {
            in_boilerplate = is_boilerplate_heading(line);
            if !in_boilerplate {
                kept.push(line);
            }
            continue;
        }
        if in_boilerplate || is_boilerplate_line(line) {
            continue;
        }
        kept.push(line);
    }
    // A heading whose lines went is kept: a short line may as well be an item of a list
    // written without markers.
    if kept.is_empty() {
        return text.trim().to_owned();
    }
    kept.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn about_the_role_stays_and_about_the_company_goes() {
        assert!(!is_boilerplate_heading("About the role"));
        assert!(!is_boilerplate_heading("About you:"));
        assert!(!is_boilerplate_heading("About the team"));
        assert!(is_boilerplate_heading("About Northwind Robotics"));
        assert!(is_boilerplate_heading("About us"));
        assert!(is_boilerplate_heading("What we offer"));
        assert!(!is_boilerplate_heading("What you'll do"));
        assert!(!is_boilerplate_heading("Requirements"));
    }

    #[test]
    fn a_posting_of_only_notices_is_kept_whole() {
        let text = "Acme is an equal opportunity employer.";
        assert_eq!(compact_posting(text), text);
    }

    #[test]
    fn a_list_without_markers_is_kept() {
        let text = "Requirements\nRust\nKafka\nKubernetes\nBenefits\nA bike.\nPay\nThe salary range is $150,000 - $180,000 per year.";
        assert_eq!(
            compact_posting(text),
            "Requirements\nRust\nKafka\nKubernetes\nPay"
        );
    }
}
