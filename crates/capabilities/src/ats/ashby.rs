//! Ashby posting API: `GET /posting-api/job-board/{name}?includeCompensation=true`.

use serde::Deserialize;

use super::{AtsError, AtsKind, Skipped, decode, join_locations, text, timestamp};
use crate::html::html_to_text;
use crate::job::{PayInterval, RawJob, Salary, SalaryOrigin};

#[derive(Debug, Deserialize)]
struct Board {
    jobs: Vec<Job>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Job {
    id: Option<String>,
    title: Option<String>,
    location: Option<String>,
    secondary_locations: Option<Vec<SecondaryLocation>>,
    department: Option<String>,
    team: Option<String>,
    employment_type: Option<String>,
    is_listed: Option<bool>,
    is_remote: Option<bool>,
    workplace_type: Option<String>,
    job_url: Option<String>,
    apply_url: Option<String>,
    description_plain: Option<String>,
    description_html: Option<String>,
    published_at: Option<String>,
    compensation: Option<Compensation>,
}

/// A secondary location: `{"location": "...", "address": {...}}`, or a bare string.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum SecondaryLocation {
    Text(String),
    Object { location: Option<String> },
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Compensation {
    summary_components: Option<Vec<Component>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Component {
    compensation_type: Option<String>,
    /// `1 YEAR`, `1 HOUR`, ...
    interval: Option<String>,
    currency_code: Option<String>,
    min_value: Option<f64>,
    max_value: Option<f64>,
}

/// Maps an Ashby `GET /posting-api/job-board/{name}?includeCompensation=true` body to
/// jobs.
///
/// Jobs with `isListed: false` are skipped. The location is `location` followed by the
/// `secondaryLocations`, joined by `; `; the department is `department` (else `team`);
/// `remote` is `isRemote`, else read from `workplaceType`; the page is `jobUrl` and
/// `applyUrl` the application; the description is `descriptionPlain`, else
/// `descriptionHtml` as text; `posted_at` is `publishedAt`. A `Salary` component of
/// `compensation.summaryComponents` becomes a structured salary.
pub fn parse_ashby(body: &[u8], company: &str) -> Result<Vec<RawJob>, AtsError> {
    let board: Board = decode(AtsKind::Ashby, body)?;
    let mut skipped = Skipped::default();
    let mut unlisted = 0_usize;
    let mut jobs = Vec::with_capacity(board.jobs.len());
    for job in board.jobs {
        if job.is_listed == Some(false) {
            unlisted += 1;
            continue;
        }
        let Some((title, url)) = skipped.check(job.title, job.job_url) else {
            continue;
        };
        let secondary =
            job.secondary_locations.unwrap_or_default().into_iter().map(
                |location| match location {
                    SecondaryLocation::Text(text) => Some(text),
                    SecondaryLocation::Object { location } => location,
                },
            );
        let description = text(job.description_plain)
            .or_else(|| job.description_html.as_deref().map(html_to_text))
            .unwrap_or_default();
        jobs.push(RawJob {
            source: AtsKind::Ashby.source(),
            external_id: text(job.id),
            company: company.to_owned(),
            title,
            location: join_locations(std::iter::once(job.location).chain(secondary)),
            remote: job
                .is_remote
                .or_else(|| job.workplace_type.as_deref().and_then(remote)),
            department: text(job.department).or_else(|| text(job.team)),
            employment_type: text(job.employment_type),
            url,
            apply_url: text(job.apply_url),
            description,
            posted_at: timestamp(AtsKind::Ashby, job.published_at.as_deref()),
            salary: job.compensation.and_then(salary),
        });
    }
    if unlisted > 0 {
        tracing::debug!(unlisted, "unlisted Ashby jobs skipped");
    }
    skipped.report(AtsKind::Ashby);
    Ok(jobs)
}

fn remote(workplace_type: &str) -> Option<bool> {
    match workplace_type.trim().to_ascii_lowercase().as_str() {
        "remote" => Some(true),
        "onsite" | "on-site" | "hybrid" => Some(false),
        _ => None,
    }
}

/// The first `Salary` summary component with a period of one unit, a currency and a
/// figure.
fn salary(compensation: Compensation) -> Option<Salary> {
    compensation
        .summary_components?
        .into_iter()
        .filter(|c| {
            c.compensation_type
                .as_deref()
                .is_some_and(|t| t.eq_ignore_ascii_case("salary"))
        })
        .find_map(|c| {
            let interval = interval(c.interval.as_deref()?)?;
            let currency = text(c.currency_code)?.to_ascii_uppercase();
            (c.min_value.is_some() || c.max_value.is_some()).then_some(Salary {
                min: c.min_value,
                max: c.max_value,
                currency,
                interval,
                origin: SalaryOrigin::Structured,
            })
        })
}

/// `1 YEAR`, `1 MONTH`, `1 WEEK`, `1 DAY`, `1 HOUR` (other counts are not a period we
/// can state).
fn interval(value: &str) -> Option<PayInterval> {
    let mut words = value.split_whitespace();
    let (count, unit) = match (words.next()?, words.next(), words.next()) {
        (unit, None, None) => ("1", unit),
        (count, Some(unit), None) => (count, unit),
        _ => return None,
    };
    if count != "1" {
        return None;
    }
    match unit.to_ascii_uppercase().trim_end_matches('S') {
        "YEAR" => Some(PayInterval::Year),
        "MONTH" => Some(PayInterval::Month),
        "WEEK" => Some(PayInterval::Week),
        "DAY" => Some(PayInterval::Day),
        "HOUR" => Some(PayInterval::Hour),
        _ => None,
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn intervals() {
        assert_eq!(interval("1 YEAR"), Some(PayInterval::Year));
        assert_eq!(interval("1 HOUR"), Some(PayInterval::Hour));
        assert_eq!(interval("1 month"), Some(PayInterval::Month));
        assert_eq!(interval("2 WEEK"), None);
        assert_eq!(interval("ONE TIME"), None);
    }

    #[test]
    fn unlisted_and_html_only_jobs() {
        let body = br#"{"jobs":[
            {"title": "Hidden", "isListed": false, "jobUrl": "https://jobs.ashbyhq.com/acme/1"},
            {"title": "Designer", "jobUrl": "https://jobs.ashbyhq.com/acme/2",
             "descriptionHtml": "<p>Make &amp; shape.</p>", "workplaceType": "OnSite",
             "secondaryLocations": [{"location": "Berlin", "address": {}}, "Paris"], "location": "London",
             "compensation": {"summaryComponents": [
                {"compensationType": "EquityPercentage", "interval": "NONE", "minValue": 0.1, "maxValue": 0.2},
                {"compensationType": "Salary", "interval": "1 YEAR", "currencyCode": "EUR", "minValue": 80000, "maxValue": null}
             ]}}
        ]}"#;
        let jobs = parse_ashby(body, "Acme").unwrap();
        assert_eq!(jobs.len(), 1);
        let job = &jobs[0];
        assert_eq!(job.description, "Make & shape.");
        assert_eq!(job.remote, Some(false));
        assert_eq!(job.location.as_deref(), Some("London; Berlin; Paris"));
        let salary = job.salary.as_ref().unwrap();
        assert_eq!((salary.min, salary.max), (Some(80000.0), None));
        assert_eq!(
            (salary.currency.as_str(), salary.interval),
            ("EUR", PayInterval::Year)
        );
    }
}
