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
use crate::listing::{PanelListing, read_panel};
use crate::paginate::{Advance, Paginator, StopReason};
use crate::selectors::{BODY_CHARS, RawListing, TEXT_JS, read_fields};

pub use crate::selectors::{DetailMode, DetailSelectors, ListingSelectors};

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
    /// How applying works, in the spec's words (`easy_apply`, `external`, `unknown`).
    pub apply_type: ApplyType,
    /// The date posted, as written.
    pub posted_date: Option<String>,
    /// The URL of the listing page the job was found on.
    pub source_page: String,
    /// A short description, when the Extractor gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The text the job was read from (its details panel or page, else its listing), for
    /// the Extractor; not written out.
    #[serde(skip)]
    pub details_text: String,
}

/// How applying to a job works: the spec's `applyType`, the one vocabulary of the
/// Collector, the Extractor and the output files.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ApplyType {
    /// On the board itself (an apply control on the board's own site).
    EasyApply,
    /// Elsewhere: another site, or by email.
    External,
    /// Not known (e.g. only the job's own page on the board is linked).
    #[default]
    Unknown,
}

impl ApplyType {
    /// The spec's spelling: `easy_apply`, `external` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            ApplyType::EasyApply => "easy_apply",
            ApplyType::External => "external",
            ApplyType::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for ApplyType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How to collect.
#[derive(Debug, Clone)]
pub struct CollectOptions {
    /// Where the listings are.
    pub listing: ListingSelectors,
    /// When given, these fields are read for each job, from its detail page or its panel
    /// (see [`detail_mode`](Self::detail_mode)).
    pub detail: Option<DetailSelectors>,
    /// Where the [`detail`](Self::detail) fields are read.
    pub detail_mode: DetailMode,
    /// At most this many jobs.
    pub max_jobs: usize,
    /// At most this many pages (or loads of more items).
    pub max_pages: usize,
    /// How long to wait for a page to settle.
    pub settle: Duration,
    /// Phase 1's pagination control, tried before the next control is detected again.
    pub pagination: Option<String>,
}

impl CollectOptions {
    /// Options for `listing` with no details read, 100 jobs, 10 pages and 5 s to settle.
    pub fn new(listing: ListingSelectors) -> Self {
        CollectOptions {
            listing,
            detail: None,
            detail_mode: DetailMode::Auto,
            max_jobs: 100,
            max_pages: 10,
            settle: Duration::from_secs(5),
            pagination: None,
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

/// Tracks what has been collected, to drop duplicates.
#[derive(Debug, Default)]
struct Seen {
    urls: HashSet<String>,
    keys: HashSet<(String, String, String)>,
}

impl Seen {
    /// Whether `job` (its apply URL, or its title, company and location) was seen already.
    fn contains(&self, job: &CollectedJob) -> bool {
        let (url, key) = Self::identity(job);
        (!url.is_empty() && self.urls.contains(&url)) || self.keys.contains(&key)
    }

    fn identity(job: &CollectedJob) -> (String, (String, String, String)) {
        let key = (
            normalize(&job.title),
            normalize(&job.company),
            normalize(&job.location),
        );
        (job.apply_url.trim_end_matches('/').to_owned(), key)
    }

    /// Records `job`; false when it was seen already.
    fn insert(&mut self, job: &CollectedJob) -> bool {
        if self.contains(job) {
            return false;
        }
        let (url, key) = Self::identity(job);
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
/// after it. When `options.detail` is given, each job's details are read as
/// `options.detail_mode` says: from its panel while its listing page is shown (clicking the
/// listing), or from its detail page once every listing page is read (leaving the browser
/// there).
pub async fn collect(
    browser: &dyn Browser,
    options: &CollectOptions,
) -> Result<Collection, BrowserError> {
    browser.wait_for_settle(options.settle).await?;
    let mut paginator = Paginator::new(options.listing.item.clone(), options.max_pages)
        .with_settle(options.settle)
        .with_known_next(options.pagination.clone());
    let mut seen = Seen::default();
    let mut jobs = Vec::new();
    let mut duplicates = 0;
    let mut last_panel: Option<RawListing> = None;
    // The jobs whose details are on their own page, read once every listing is.
    let mut detail_pages = Vec::new();
    let end = 'pages: loop {
        let page = browser.url().await?;
        let host = host_of(&page);
        let listings = extract_listings(browser, &options.listing).await?;
        for (index, raw) in listings.into_iter().enumerate() {
            let mut job = CollectedJob {
                apply_type: apply_type(&raw.link, host.as_deref(), false),
                title: raw.title,
                company: raw.company,
                location: raw.location,
                salary_text: raw.salary,
                apply_url: raw.link,
                posted_date: (!raw.posted.is_empty()).then_some(raw.posted),
                source_page: page.clone(),
                description: None,
                details_text: raw.body,
            };
            if job.title.is_empty() && job.apply_url.is_empty() {
                continue;
            }
            if seen.contains(&job) {
                duplicates += 1;
                continue;
            }
            if jobs.len() >= options.max_jobs {
                break 'pages CollectEnd::MaxJobs;
            }
            let panel = uses_panel(options.detail_mode, &job);
            if let Some(detail) = &options.detail
                && panel
            {
                let at = PanelListing {
                    selectors: &options.listing,
                    index,
                    page: &page,
                };
                match read_panel(browser, &at, detail, options.settle).await {
                    Ok(Some(found)) if last_panel.as_ref() == Some(&found) => {
                        tracing::warn!(title = %job.title, "the panel did not change: not read");
                    }
                    Ok(Some(found)) => {
                        last_panel = Some(found.clone());
                        apply_details(&mut job, found, host.as_deref());
                    }
                    Ok(None) => tracing::warn!(index, "the listing to click is gone"),
                    Err(error) => tracing::warn!(%error, "the panel could not be read"),
                }
            }
            if !seen.insert(&job) {
                duplicates += 1;
                continue;
            }
            if !panel {
                detail_pages.push(jobs.len());
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
        for index in detail_pages {
            let Some(job) = jobs.get_mut(index) else {
                continue;
            };
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

/// Whether the job's details come from its panel.
fn uses_panel(mode: DetailMode, job: &CollectedJob) -> bool {
    match mode {
        DetailMode::Auto => job.apply_url.is_empty(),
        DetailMode::Page => false,
        DetailMode::Panel => true,
    }
}

/// Reads the listings shown now.
async fn extract_listings(
    browser: &dyn Browser,
    selectors: &ListingSelectors,
) -> Result<Vec<RawListing>, BrowserError> {
    let js = format!(
        "(() => {{
            {TEXT_JS}
            const pick = (item, sel) => sel === null ? null : (sel === '' ? item : item.querySelector(sel));
            // A link that goes nowhere (`#`, `javascript:`) is a button in disguise.
            const real = a => {{
                const h = (a.getAttribute('href') || '').trim();
                return h !== '' && h !== '#' && !/^javascript:/i.test(h);
            }};
            const href = e => {{
                if (!e) return '';
                const links = e.matches('a[href]') ? [e] : Array.from(e.querySelectorAll('a[href]'));
                const up = e.closest('a[href]');
                if (up) links.push(up);
                const a = links.find(real);
                return a ? a.href : '';
            }};
            return Array.from(document.querySelectorAll({item})).map(item => ({{
                title: text(pick(item, {title})),
                link: href(pick(item, {link})),
                company: text(pick(item, {company})),
                location: text(pick(item, {location})),
                salary: text(pick(item, {salary})),
                posted: text(pick(item, {posted})),
                body: text(item).slice(0, {BODY_CHARS}),
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

/// Opens the job's link, when on the board's own site, and replaces its fields with those
/// found on the detail page.
async fn read_detail(
    browser: &dyn Browser,
    job: &mut CollectedJob,
    selectors: &DetailSelectors,
    settle: Duration,
) -> Result<(), BrowserError> {
    // Another site's page is the employer's, not one the selectors were made for.
    let own_site = host_of(&job.apply_url).is_some_and(|h| Some(h) == host_of(&job.source_page));
    if !job.apply_url.starts_with("http") || !own_site {
        return Ok(());
    }
    browser.open(&job.apply_url).await?;
    browser.wait_for_settle(settle).await?;
    let page = browser.url().await?;
    let found = read_fields(browser, selectors).await?;
    apply_details(job, found, host_of(&page).as_deref());
    Ok(())
}

/// Replaces the job's fields with those found (non-empty) in its details.
fn apply_details(job: &mut CollectedJob, found: RawListing, board_host: Option<&str>) {
    let replace = |field: &mut String, found: String| {
        if !found.is_empty() {
            *field = found;
        }
    };
    replace(&mut job.title, found.title);
    replace(&mut job.company, found.company);
    replace(&mut job.location, found.location);
    replace(&mut job.salary_text, found.salary);
    if !found.posted.is_empty() {
        job.posted_date = Some(found.posted);
    }
    if !found.link.is_empty() {
        job.apply_type = apply_type(&found.link, board_host, true);
        job.apply_url = found.link;
    }
    if !found.body.is_empty() {
        job.details_text = found.body;
    }
}

/// The host (and port) of an absolute URL.
fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let host = rest.split(['/', '?', '#']).next()?;
    Some(host.rsplit('@').next().unwrap_or(host).to_lowercase())
}

/// How applying at `url` works: `external` for `mailto:` or another host; on the board's
/// own host `easy_apply` when `url` was found as the apply control (`apply_control`), else
/// `unknown` (it is the job's own page there); `unknown` for no URL.
pub fn apply_type(url: &str, board_host: Option<&str>, apply_control: bool) -> ApplyType {
    let url = url.trim();
    if url.is_empty() {
        ApplyType::Unknown
    } else if url.to_lowercase().starts_with("mailto:") {
        ApplyType::External
    } else if board_host.is_some() && host_of(url).as_deref() == board_host {
        if apply_control {
            ApplyType::EasyApply
        } else {
            ApplyType::Unknown
        }
    } else {
        ApplyType::External
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
                job.apply_type.as_str().to_owned(),
                safe(job.posted_date.as_deref().unwrap_or("")),
                safe(&job.source_page),
            ])
            .map_err(csv_error)?;
    }
    writer.flush().map_err(io)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn apply_types() {
        let host = host_of("http://127.0.0.1:8080/index.html");
        let host = host.as_deref();
        assert_eq!(apply_type("mailto:a@b.c", host, false), ApplyType::External);
        let own = "http://127.0.0.1:8080/jobs/1.html";
        assert_eq!(apply_type(own, host, false), ApplyType::Unknown);
        assert_eq!(apply_type(own, host, true), ApplyType::EasyApply);
        let other = "https://careers.example.com/1";
        assert_eq!(apply_type(other, host, true), ApplyType::External);
        assert_eq!(apply_type("", host, true), ApplyType::Unknown);
        assert_eq!(
            serde_json::to_value(ApplyType::EasyApply).unwrap(),
            "easy_apply"
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
            apply_type: ApplyType::External,
            posted_date: None,
            source_page: String::new(),
            description: None,
            details_text: String::new(),
        };
        let mut seen = Seen::default();
        assert!(seen.insert(&job("Rust", "https://x/1")));
        assert!(!seen.insert(&job("Other", "https://x/1/")));
        assert!(!seen.insert(&job(" rust ", "https://x/2")));
        assert!(seen.insert(&job("Go", "https://x/3")));
    }
}
