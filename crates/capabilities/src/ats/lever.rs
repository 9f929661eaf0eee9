//! Lever postings API: `GET /v0/postings/{company}?mode=json` (a bare JSON array).

use chrono::DateTime;
use serde::Deserialize;

use super::{AtsError, AtsKind, Skipped, decode, join_locations, text};
use crate::html::html_to_text;
use crate::job::{PayInterval, RawJob, Salary, SalaryOrigin};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Posting {
    id: Option<String>,
    text: Option<String>,
    categories: Option<Categories>,
    /// Epoch milliseconds.
    created_at: Option<i64>,
    description_plain: Option<String>,
    description_body_plain: Option<String>,
    description: Option<String>,
    lists: Option<Vec<List>>,
    additional_plain: Option<String>,
    additional: Option<String>,
    hosted_url: Option<String>,
    apply_url: Option<String>,
    workplace_type: Option<String>,
    salary_range: Option<SalaryRange>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Categories {
    commitment: Option<String>,
    department: Option<String>,
    location: Option<String>,
    team: Option<String>,
    all_locations: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
struct List {
    text: Option<String>,
    /// HTML.
    content: Option<String>,
}

#[derive(Debug, Deserialize)]
struct SalaryRange {
    min: Option<f64>,
    max: Option<f64>,
    currency: Option<String>,
    interval: Option<String>,
}

/// Maps a Lever `GET /v0/postings/{company}?mode=json` body (a bare array) to jobs.
///
/// The title is `text`; the location is `categories.location` followed by the other
/// `categories.allLocations`, joined by `; `; the department is `categories.department`
/// (else `team`); the employment type is `categories.commitment`; `workplaceType`
/// `remote` means remote and `onsite`/`hybrid` not; `createdAt` (epoch ms) is
/// `posted_at`; `salaryRange` becomes a structured salary. The description is
/// `descriptionPlain` (else `descriptionBodyPlain`, else the `description` HTML as text),
/// then each of `lists[]` as its heading and its items, then `additionalPlain`,
/// separated by blank lines.
pub fn parse_lever(body: &[u8], company: &str) -> Result<Vec<RawJob>, AtsError> {
    let postings: Vec<Posting> = decode(AtsKind::Lever, body)?;
    let mut skipped = Skipped::default();
    let jobs = postings
        .into_iter()
        .filter_map(|posting| {
            let (title, url) = skipped.check(posting.text.clone(), posting.hosted_url.clone())?;
            let description = description(&posting);
            let categories = posting.categories;
            let (location, department, employment_type) = match categories {
                Some(c) => {
                    let others = c.all_locations.unwrap_or_default().into_iter().map(Some);
                    (
                        join_locations(std::iter::once(c.location).chain(others)),
                        text(c.department).or_else(|| text(c.team)),
                        text(c.commitment),
                    )
                }
                None => (None, None, None),
            };
            Some(RawJob {
                source: AtsKind::Lever.source(),
                external_id: text(posting.id),
                company: company.to_owned(),
                title,
                location,
                remote: posting.workplace_type.as_deref().and_then(remote),
                department,
                employment_type,
                url,
                apply_url: text(posting.apply_url),
                description,
                posted_at: posting.created_at.and_then(DateTime::from_timestamp_millis),
                salary: posting.salary_range.and_then(salary),
            })
        })
        .collect();
    skipped.report(AtsKind::Lever);
    Ok(jobs)
}

fn description(posting: &Posting) -> String {
    let plain = |value: &Option<String>| text(value.clone());
    let html = |value: &Option<String>| {
        value
            .as_deref()
            .map(html_to_text)
            .and_then(|t| text(Some(t)))
    };
    let mut sections: Vec<String> = Vec::new();
    sections.extend(
        plain(&posting.description_plain)
            .or_else(|| plain(&posting.description_body_plain))
            .or_else(|| html(&posting.description)),
    );
    for list in posting.lists.iter().flatten() {
        let section = [plain(&list.text), html(&list.content)]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("\n");
        if !section.is_empty() {
            sections.push(section);
        }
    }
    sections.extend(plain(&posting.additional_plain).or_else(|| html(&posting.additional)));
    sections.join("\n\n")
}

fn remote(workplace_type: &str) -> Option<bool> {
    match workplace_type.trim().to_ascii_lowercase().as_str() {
        "remote" => Some(true),
        "onsite" | "on-site" | "hybrid" => Some(false),
        _ => None,
    }
}

/// `salaryRange` as a salary; `None` without a currency, without figures, or for an
/// interval that is not a period (`one-time`).
fn salary(range: SalaryRange) -> Option<Salary> {
    let interval = range.interval?.to_ascii_lowercase();
    let interval = if interval.contains("year") || interval.contains("annual") {
        PayInterval::Year
    } else if interval.contains("month") {
        PayInterval::Month
    } else if interval.contains("week") {
        PayInterval::Week
    } else if interval.contains("day") {
        PayInterval::Day
    } else if interval.contains("hour") {
        PayInterval::Hour
    } else {
        return None;
    };
    let currency = text(range.currency)?.to_ascii_uppercase();
    (range.min.is_some() || range.max.is_some()).then_some(Salary {
        min: range.min,
        max: range.max,
        currency,
        interval,
        origin: SalaryOrigin::Structured,
    })
}

#[cfg(test)]
mod tests {

    use super::*;

    fn range(interval: &str) -> SalaryRange {
        SalaryRange {
            min: Some(50.0),
            max: Some(70.0),
            currency: Some("usd".into()),
            interval: Some(interval.into()),
        }
    }

    #[test]
    fn salary_intervals() {
        for (name, interval) in [
            ("per-year-salary", PayInterval::Year),
            ("per-month-salary", PayInterval::Month),
            ("per-week-salary", PayInterval::Week),
            ("per-day-wage", PayInterval::Day),
            ("per-hour-wage", PayInterval::Hour),
        ] {
            let salary = salary(range(name)).unwrap();
            assert_eq!(
                (salary.interval, salary.currency.as_str()),
                (interval, "USD"),
                "{name}"
            );
            assert_eq!(salary.origin, SalaryOrigin::Structured);
        }
        assert_eq!(salary(range("one-time")), None);
        let no_figures = SalaryRange {
            min: None,
            max: None,
            ..range("per-year-salary")
        };
        assert_eq!(salary(no_figures), None);
    }

    #[test]
    fn workplace_types() {
        assert_eq!(remote("remote"), Some(true));
        assert_eq!(remote("onsite"), Some(false));
        assert_eq!(remote("hybrid"), Some(false));
        assert_eq!(remote("unspecified"), None);
    }

    #[test]
    fn description_falls_back_to_html() {
        let body = br#"[{"text": "Engineer", "hostedUrl": "https://jobs.lever.co/acme/1",
            "description": "<p>Build &amp; ship.</p>",
            "lists": [{"text": "You", "content": "<li>Rust</li>"}, {"text": "", "content": ""}],
            "additional": "<div>Equal opportunity.</div>"}]"#;
        let jobs = parse_lever(body, "Acme").unwrap();
        assert_eq!(
            jobs[0].description,
            "Build & ship.\n\nYou\n- Rust\n\nEqual opportunity."
        );
        assert_eq!((jobs[0].remote, jobs[0].posted_at), (None, None));
    }
}
