//! The Collector and Extractor (spec 002, Phase 2): walks the job listings of a board across
//! its pages with the [`Paginator`], extracts each listing with Phase-1-style selectors into a
//! [`CollectedJob`], optionally reads more fields from each job's detail page, drops
//! duplicates and writes the result as JSON or CSV.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::browser::{Browser, BrowserError};
use crate::paginate::{Advance, Paginator, StopReason};

/// Where the parts of each listing are: CSS selectors, all but `item` relative to the item
/// (an empty selector means the item itself).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListingSelectors {
    /// Each listing.
    pub item: String,
    /// The job title.
    pub title: String,
    /// The link to the job (its detail page or where to apply).
    pub link: String,
    /// The company.
    pub company: Option<String>,
    /// The location.
    pub location: Option<String>,
    /// The salary, as written.
    pub salary: Option<String>,
    /// The date posted, as written.
    pub posted_date: Option<String>,
}

/// Fields read from a job's detail page: CSS selectors over the whole document. A field
/// found there replaces the one read from the listing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetailSelectors {
    /// The job title.
    pub title: Option<String>,
    /// The company.
    pub company: Option<String>,
    /// The location.
    pub location: Option<String>,
    /// The salary, as written.
    pub salary: Option<String>,
    /// The date posted, as written.
    pub posted_date: Option<String>,
    /// The apply link or button (its `href`, or the `action` of its form).
    pub apply: Option<String>,
}

/// One job as collected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectedJob {
    /// The job title.
    pub title: String,
    /// The company (empty when unknown).
    pub company: String,
    /// The location (empty when unknown).
    pub location: String,
    /// The salary as written (empty when unknown).
    pub salary_text: String,
    /// Where to apply: an absolute URL (`mailto:` for email).
    pub apply_url: String,
    /// `"external"` (another site), `"internal"` (the board's own site) or `"email"`.
    pub apply_type: String,
    /// The date posted, as written.
    pub posted_date: Option<String>,
    /// The URL of the listing page the job was found on.
    pub source_page: String,
}

/// How to collect.
#[derive(Debug, Clone)]
pub struct CollectOptions {
    /// Where the listings are.
    pub listing: ListingSelectors,
    /// When given, each job's link is opened and these fields read from it.
    pub detail: Option<DetailSelectors>,
    /// At most this many jobs.
    pub max_jobs: usize,
    /// At most this many pages (or loads of more items).
    pub max_pages: usize,
    /// How long to wait for a page to settle.
    pub settle: Duration,
}

impl CollectOptions {
    /// Options for `listing` with no detail pages, 100 jobs, 10 pages and 5 s to settle.
    pub fn new(listing: ListingSelectors) -> Self {
        CollectOptions {
            listing,
            detail: None,
            max_jobs: 100,
            max_pages: 10,
            settle: Duration::from_secs(5),
        }
    }
}

/// Why collecting ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollectEnd {
    /// The paginator stopped.
    Pages(StopReason),
    /// `max_jobs` jobs were collected.
    MaxJobs,
}

/// What [`collect`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Collection {
    /// The jobs, each once, in the order found.
    pub jobs: Vec<CollectedJob>,
    /// How many listing pages (or loads of more items) were seen.
    pub pages: usize,
    /// Listings skipped as duplicates.
    pub duplicates: usize,
    /// Why collecting ended.
    pub end: CollectEnd,
}

/// What can go wrong writing a collection.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The file could not be written.
    #[error("writing {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The jobs could not be serialized.
    #[error("serializing the jobs: {0}")]
    Serialize(String),
}

/// One listing as read from the page.
#[derive(Debug, Deserialize)]
struct RawListing {
    title: String,
    link: String,
    company: String,
    location: String,
    salary: String,
    posted: String,
}

/// Tracks what has been collected, to drop duplicates.
#[derive(Debug, Default)]
struct Seen {
    urls: HashSet<String>,
    keys: HashSet<(String, String, String)>,
}

impl Seen {
    /// Records `job`; false when it (its apply URL, or its title, company and location) was
    /// seen already.
    fn insert(&mut self, job: &CollectedJob) -> bool {
        let key = (
            normalize(&job.title),
            normalize(&job.company),
            normalize(&job.location),
        );
        let url = job.apply_url.trim_end_matches('/').to_owned();
        if (!url.is_empty() && self.urls.contains(&url)) || self.keys.contains(&key) {
            return false;
        }
        if !url.is_empty() {
            self.urls.insert(url);
        }
        self.keys.insert(key);
        true
    }
}

fn normalize(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Collects the jobs listed on the page shown now (open the board first) and on the pages
/// after it, then, when `options.detail` is given, reads each job's detail page (leaving the
/// browser there).
pub async fn collect(
    browser: &dyn Browser,
    options: &CollectOptions,
) -> Result<Collection, BrowserError> {
    browser.wait_for_settle(options.settle).await?;
    let mut paginator =
        Paginator::new(options.listing.item.clone(), options.max_pages).with_settle(options.settle);
    let mut seen = Seen::default();
    let mut jobs = Vec::new();
    let mut duplicates = 0;
    let end = 'pages: loop {
        let page = browser.url().await?;
        let host = host_of(&page);
        for raw in extract_listings(browser, &options.listing).await? {
            let job = CollectedJob {
                apply_type: apply_type(&raw.link, host.as_deref()).to_owned(),
                title: raw.title,
                company: raw.company,
                location: raw.location,
                salary_text: raw.salary,
                apply_url: raw.link,
                posted_date: (!raw.posted.is_empty()).then_some(raw.posted),
                source_page: page.clone(),
            };
            if job.title.is_empty() && job.apply_url.is_empty() {
                continue;
            }
            if !seen.insert(&job) {
                duplicates += 1;
                continue;
            }
            if jobs.len() >= options.max_jobs {
                break 'pages CollectEnd::MaxJobs;
            }
            jobs.push(job);
        }
        if jobs.len() >= options.max_jobs {
            break CollectEnd::MaxJobs;
        }
        match paginator.advance(browser).await? {
            Advance::Moved {
                kind,
                url,
                new_items,
            } => {
                tracing::info!(?kind, %url, new_items, "next page of listings");
            }
            Advance::Stopped(reason) => break CollectEnd::Pages(reason),
        }
    };
    tracing::info!(jobs = jobs.len(), duplicates, ?end, "listings collected");
    if let Some(detail) = &options.detail {
        for job in &mut jobs {
            if let Err(error) = read_detail(browser, job, detail, options.settle).await {
                tracing::warn!(%error, url = %job.apply_url, "the detail page could not be read");
            }
        }
    }
    Ok(Collection {
        jobs,
        pages: paginator.pages(),
        duplicates,
        end,
    })
}

/// Reads the listings shown now.
async fn extract_listings(
    browser: &dyn Browser,
    selectors: &ListingSelectors,
) -> Result<Vec<RawListing>, BrowserError> {
    let js = format!(
        "(() => {{
            const text = e => e ? (e.innerText || e.textContent || '').replace(/\\s+/g, ' ').trim() : '';
            const pick = (item, sel) => sel === null ? null : (sel === '' ? item : item.querySelector(sel));
            const href = e => {{
                if (!e) return '';
                const a = e.matches('a[href]') ? e : (e.querySelector('a[href]') || e.closest('a[href]'));
                return a ? a.href : '';
            }};
            return Array.from(document.querySelectorAll({item})).map(item => ({{
                title: text(pick(item, {title})),
                link: href(pick(item, {link})),
                company: text(pick(item, {company})),
                location: text(pick(item, {location})),
                salary: text(pick(item, {salary})),
                posted: text(pick(item, {posted})),
            }}));
        }})()",
        item = Value::from(selectors.item.as_str()),
        title = Value::from(selectors.title.as_str()),
        link = Value::from(selectors.link.as_str()),
        company = Value::from(selectors.company.clone()),
        location = Value::from(selectors.location.clone()),
        salary = Value::from(selectors.salary.clone()),
        posted = Value::from(selectors.posted_date.clone()),
    );
    let value = browser.evaluate(&js).await?;
    serde_json::from_value(value)
        .map_err(|error| BrowserError::Protocol(format!("reading the listings: {error}")))
}

/// Opens the job's link and replaces its fields with those found on the detail page.
async fn read_detail(
    browser: &dyn Browser,
    job: &mut CollectedJob,
    selectors: &DetailSelectors,
    settle: Duration,
) -> Result<(), BrowserError> {
    if !job.apply_url.starts_with("http") {
        return Ok(());
    }
    browser.open(&job.apply_url).await?;
    browser.wait_for_settle(settle).await?;
    let page = browser.url().await?;
    let js = format!(
        "(() => {{
            const text = sel => {{
                if (sel === null) return '';
                const e = document.querySelector(sel);
                return e ? (e.innerText || e.textContent || '').replace(/\\s+/g, ' ').trim() : '';
            }};
            const apply = (() => {{
                const sel = {apply};
                if (sel === null) return '';
                const e = document.querySelector(sel);
                if (!e) return '';
                if (e.href) return e.href;
                const a = e.closest('a[href]');
                if (a) return a.href;
                return e.form && e.form.action ? e.form.action : '';
            }})();
            return {{ title: text({title}), company: text({company}), location: text({location}),
                      salary: text({salary}), posted: text({posted}), link: apply }};
        }})()",
        apply = Value::from(selectors.apply.clone()),
        title = Value::from(selectors.title.clone()),
        company = Value::from(selectors.company.clone()),
        location = Value::from(selectors.location.clone()),
        salary = Value::from(selectors.salary.clone()),
        posted = Value::from(selectors.posted_date.clone()),
    );
    let raw: RawListing = serde_json::from_value(browser.evaluate(&js).await?)
        .map_err(|error| BrowserError::Protocol(format!("reading the detail page: {error}")))?;
    let replace = |field: &mut String, found: String| {
        if !found.is_empty() {
            *field = found;
        }
    };
    replace(&mut job.title, raw.title);
    replace(&mut job.company, raw.company);
    replace(&mut job.location, raw.location);
    replace(&mut job.salary_text, raw.salary);
    if !raw.posted.is_empty() {
        job.posted_date = Some(raw.posted);
    }
    if !raw.link.is_empty() {
        job.apply_type = apply_type(&raw.link, host_of(&page).as_deref()).to_owned();
        job.apply_url = raw.link;
    }
    Ok(())
}

/// The host (and port) of an absolute URL.
fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let host = rest.split(['/', '?', '#']).next()?;
    Some(host.rsplit('@').next().unwrap_or(host).to_lowercase())
}

/// `"email"` for `mailto:`, `"internal"` on the board's own host, else `"external"`.
pub fn apply_type(url: &str, board_host: Option<&str>) -> &'static str {
    if url.to_lowercase().starts_with("mailto:") {
        "email"
    } else if board_host.is_some() && host_of(url).as_deref() == board_host {
        "internal"
    } else {
        "external"
    }
}

/// Writes the jobs as a pretty JSON array.
pub fn write_json(jobs: &[CollectedJob], path: &Path) -> Result<(), WriteError> {
    let text = serde_json::to_string_pretty(jobs)
        .map_err(|error| WriteError::Serialize(error.to_string()))?;
    std::fs::write(path, text).map_err(|source| WriteError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Writes the jobs as CSV with a header row. A cell that a spreadsheet would read as a
/// formula (starting with `=`, `+`, `-`, `@`) is written with a leading `'`.
pub fn write_csv(jobs: &[CollectedJob], path: &Path) -> Result<(), WriteError> {
    let io = |source: std::io::Error| WriteError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut writer = csv::Writer::from_path(path).map_err(|error| match error.into_kind() {
        csv::ErrorKind::Io(source) => io(source),
        other => WriteError::Serialize(format!("{other:?}")),
    })?;
    let safe = |cell: &str| {
        if cell.starts_with(['=', '+', '-', '@']) {
            format!("'{cell}")
        } else {
            cell.to_owned()
        }
    };
    let csv_error = |error: csv::Error| WriteError::Serialize(error.to_string());
    writer
        .write_record([
            "title",
            "company",
            "location",
            "salary_text",
            "apply_url",
            "apply_type",
            "posted_date",
            "source_page",
        ])
        .map_err(csv_error)?;
    for job in jobs {
        writer
            .write_record([
                safe(&job.title),
                safe(&job.company),
                safe(&job.location),
                safe(&job.salary_text),
                safe(&job.apply_url),
                job.apply_type.clone(),
                safe(job.posted_date.as_deref().unwrap_or("")),
                safe(&job.source_page),
            ])
            .map_err(csv_error)?;
    }
    writer.flush().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_types() {
        let host = host_of("http://127.0.0.1:8080/index.html");
        assert_eq!(apply_type("mailto:a@b.c", host.as_deref()), "email");
        assert_eq!(
            apply_type("http://127.0.0.1:8080/jobs/1.html", host.as_deref()),
            "internal"
        );
        assert_eq!(
            apply_type("https://careers.example.com/1", host.as_deref()),
            "external"
        );
    }

    #[test]
    fn duplicates_by_url_or_by_title_company_location() {
        let job = |title: &str, url: &str| CollectedJob {
            title: title.into(),
            company: "Acme".into(),
            location: String::new(),
            salary_text: String::new(),
            apply_url: url.into(),
            apply_type: "external".into(),
            posted_date: None,
            source_page: String::new(),
        };
        let mut seen = Seen::default();
        assert!(seen.insert(&job("Rust", "https://x/1")));
        assert!(!seen.insert(&job("Other", "https://x/1/")));
        assert!(!seen.insert(&job(" rust ", "https://x/2")));
        assert!(seen.insert(&job("Go", "https://x/3")));
    }
}
