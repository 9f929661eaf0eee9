//! Fields a page shows without a selector for them, read without a model: a title that
//! carries its company ("Rust Engineer — Acme", "Rust Engineer at Acme") is split, a
//! title that repeats a company already read is cut back to the title, and the text of
//! the job's panel or page gives its description. The Extractor, when run, corrects and
//! completes what is read here.

use super::CollectedJob;

/// Separators a listing puts between a title and its company, strongest first.
const SEPARATORS: &[&str] = &[" — ", " – ", " | ", " · ", " @ ", " at ", " - "];

/// Words that make a phrase a job title, not a company name.
const ROLE_WORDS: &[&str] = &[
    "engineer",
    "developer",
    "manager",
    "designer",
    "scientist",
    "analyst",
    "architect",
    "lead",
    "intern",
    "director",
    "specialist",
    "consultant",
    "administrator",
];

/// The most words a company name is taken to have.
const MAX_COMPANY_WORDS: usize = 5;

/// Whether `phrase` reads as a company name: a few words, the first capitalized, none a
/// role word.
fn looks_like_company(phrase: &str) -> bool {
    let words: Vec<&str> = phrase.split_whitespace().collect();
    !words.is_empty()
        && words.len() <= MAX_COMPANY_WORDS
        && words[0].chars().next().is_some_and(char::is_uppercase)
        && !words.iter().any(|w| {
            let w = w
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            ROLE_WORDS.contains(&w.as_str())
        })
}

/// The title and company of a title that carries its company after a separator, when it
/// does.
///
/// ```
/// use page_explorer::collect::split_title_company;
/// assert_eq!(
///     split_title_company("Rust Engineer — Acme"),
///     Some(("Rust Engineer".into(), "Acme".into()))
/// );
/// assert_eq!(
///     split_title_company("Site Reliability Engineer at Hooli"),
///     Some(("Site Reliability Engineer".into(), "Hooli".into()))
/// );
/// assert_eq!(split_title_company("Head of Engineering at scale"), None);
/// assert_eq!(split_title_company("Rust Engineer"), None);
/// ```
pub fn split_title_company(title: &str) -> Option<(String, String)> {
    SEPARATORS.iter().find_map(|separator| {
        let (head, tail) = title.rsplit_once(separator)?;
        let (head, tail) = (head.trim(), tail.trim());
        (!head.is_empty() && looks_like_company(tail)).then(|| (head.to_owned(), tail.to_owned()))
    })
}

/// `title` without a trailing separator and `company` ("Rust Engineer at Acme" with the
/// company Acme is "Rust Engineer").
fn without_company(title: &str, company: &str) -> Option<String> {
    let company = company.trim();
    SEPARATORS.iter().find_map(|separator| {
        let suffix = format!("{separator}{company}");
        let cut = title.len().checked_sub(suffix.len())?;
        let tail = title.get(cut..)?;
        let kept = title.get(..cut)?.trim();
        (tail.eq_ignore_ascii_case(&suffix) && !kept.is_empty()).then(|| kept.to_owned())
    })
}

/// The description the text of a job's panel or page gives: that text without the title,
/// the company and the apply control's words, when something of a few words is left.
pub(crate) fn description_from(text: &str, job: &CollectedJob) -> Option<String> {
    let mut rest = text.trim();
    let heads = [
        format!("{} at {}", job.title, job.company),
        format!("{} — {}", job.title, job.company),
        job.title.clone(),
        job.company.clone(),
    ];
    loop {
        let before = rest;
        for head in heads.iter().filter(|h| !h.trim().is_empty()) {
            if let (Some(start), Some(after)) = (rest.get(..head.len()), rest.get(head.len()..))
                && start.eq_ignore_ascii_case(head)
            {
                rest = after.trim_start_matches([' ', '.', ',', ':', '-']);
            }
        }
        if rest == before {
            break;
        }
    }
    // The apply control's words ("Apply to Rust Engineer", "Apply now") end many panels.
    if let Some(at) = rest.rfind("Apply")
        && rest[at..].split_whitespace().count() <= 8
    {
        rest = rest[..at].trim_end();
    }
    let rest = rest.trim();
    (rest.split_whitespace().count() >= 3).then(|| rest.chars().take(1_000).collect())
}

/// Fills what the job's own words show: the company out of its title, the title without
/// its company, the description from its panel or page. Fields already read stay.
pub(crate) fn complete(job: &mut CollectedJob) {
    if job.company.trim().is_empty() {
        if let Some((title, company)) = split_title_company(&job.title) {
            job.title = title;
            job.company = company;
        }
    } else if let Some(title) = without_company(&job.title, &job.company) {
        job.title = title;
    }
    if job.description.is_none() {
        job.description = description_from(&job.details_text, job);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::ApplyType;

    fn job(title: &str, company: &str, details: &str) -> CollectedJob {
        CollectedJob {
            title: title.into(),
            company: company.into(),
            location: String::new(),
            salary_text: String::new(),
            url: String::new(),
            apply_url: String::new(),
            apply_type: ApplyType::Unknown,
            posted_date: None,
            source_page: String::new(),
            description: None,
            details_text: details.into(),
        }
    }

    #[test]
    fn a_panel_title_with_its_company_is_split_and_its_text_described() {
        let mut panel = job(
            "Rust Engineer at Acme",
            "",
            "Rust Engineer at Acme Build the billing platform in Rust. Apply to Rust Engineer",
        );
        complete(&mut panel);
        assert_eq!(
            (panel.title.as_str(), panel.company.as_str()),
            ("Rust Engineer", "Acme")
        );
        assert_eq!(
            panel.description.as_deref(),
            Some("Build the billing platform in Rust.")
        );
    }

    #[test]
    fn a_company_read_already_is_cut_from_the_title_and_kept() {
        let mut read = job("Rust Engineer — Acme", "Acme", "");
        complete(&mut read);
        assert_eq!(
            (read.title.as_str(), read.company.as_str()),
            ("Rust Engineer", "Acme")
        );
        assert_eq!(read.description, None);
        let mut plain = job("Engineering Manager", "", "Lead");
        complete(&mut plain);
        assert_eq!(
            (plain.title.as_str(), plain.company.as_str()),
            ("Engineering Manager", "")
        );
    }
}
