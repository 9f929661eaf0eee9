//! The Collector (spec 002, Phase 2): walks the job listings of a board across its pages
//! with the [`Paginator`](crate::Paginator), extracts each listing with Phase-1-style
//! selectors into a [`CollectedJob`], optionally reads more fields from each job's details,
//! drops duplicates and writes the result as JSON or CSV ([`write_json`], [`write_csv`]).
//!
//! A step that fails (a page that does not load, listings that cannot be read, a next page
//! that cannot be reached) is recorded in [`Collection::errors`] and retried; after
//! [`CollectOptions::max_consecutive_errors`] failures in a row the collection stops with
//! the jobs it has. [`collect_checkpointed`] keeps a checkpoint after every page, and
//! [`resume_collection`] goes on from the last one.

mod durable;
mod fields;
mod output;
mod progress;
mod read;
mod walk;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::browser::Browser;
use crate::paginate::StopReason;
use walk::Walk;

pub use crate::selectors::{DetailMode, DetailSelectors, ListingSelectors};
pub use durable::{collect_checkpointed, resume_collection};
pub use fields::split_title_company;
pub use output::{JobRecord, WriteError, write_csv, write_json};
pub use progress::{CollectCheckpoints, CollectError};
pub use read::apply_type;

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
    /// The job's own page: the listing's link (empty when the listing has none, as on a
    /// single-page board).
    #[serde(default)]
    pub url: String,
    /// Where to apply: an absolute URL (`mailto:` for email): the apply control of the
    /// job's panel or page, else its own page.
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
    /// Stop after this many failed steps in a row (each failure is retried until then).
    pub max_consecutive_errors: usize,
}

impl CollectOptions {
    /// Options for `listing` with no details read, 100 jobs, 10 pages, 5 s to settle and
    /// a stop after 3 failures in a row.
    pub fn new(listing: ListingSelectors) -> Self {
        CollectOptions {
            listing,
            detail: None,
            detail_mode: DetailMode::Auto,
            max_jobs: 100,
            max_pages: 10,
            settle: Duration::from_secs(5),
            pagination: None,
            max_consecutive_errors: 3,
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
    /// [`CollectOptions::max_consecutive_errors`] steps failed in a row; the failures are
    /// in [`Collection::errors`]. A checkpointed collection can be resumed.
    TooManyErrors,
    /// A checkpoint could not be written, so the collection stopped rather than go on
    /// with nothing to resume from.
    CheckpointFailed,
}

/// A step of collecting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollectStep {
    /// Opening (or settling) a listing page.
    Open,
    /// Reading the listings shown.
    Listings,
    /// Going on to the next page (or loading more).
    NextPage,
    /// Reading a job's details, from its panel or its own page.
    Details,
    /// Writing a checkpoint.
    Checkpoint,
}

/// A step that failed, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageError {
    /// What was being done.
    pub step: CollectStep,
    /// The page (empty when not known).
    pub url: String,
    /// What went wrong.
    pub error: String,
}

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let step = match self.step {
            CollectStep::Open => "opening",
            CollectStep::Listings => "reading the listings of",
            CollectStep::NextPage => "going on from",
            CollectStep::Details => "reading the details at",
            CollectStep::Checkpoint => "writing the checkpoint",
        };
        if self.url.is_empty() {
            write!(f, "{step}: {}", self.error)
        } else {
            write!(f, "{step} {}: {}", self.url, self.error)
        }
    }
}

/// What [`collect`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Collection {
    /// The jobs, each once, in the order found.
    pub jobs: Vec<CollectedJob>,
    /// How many listing pages (or loads of more items) were seen.
    pub pages: usize,
    /// Listings skipped as duplicates: the same job listed again (not the same listing
    /// read again after more loaded).
    pub duplicates: usize,
    /// Why collecting ended.
    pub end: CollectEnd,
    /// The steps that failed, in order (retried ones included).
    #[serde(default)]
    pub errors: Vec<PageError>,
    /// How many of the jobs were carried over from the checkpoint resumed.
    #[serde(default)]
    pub resumed_jobs: usize,
}

/// Collects the jobs listed on the page shown now (open the board first) and on the pages
/// after it. When `options.detail` is given, each job's details are read as
/// `options.detail_mode` says: from its panel while its listing page is shown (clicking the
/// listing), or from its detail page once every listing page is read (leaving the browser
/// there). Never fails: what went wrong is in [`Collection::errors`], and
/// [`Collection::end`] says why it stopped.
///
/// ```no_run
/// # async fn run(browser: &dyn page_explorer::Browser) {
/// use page_explorer::{CollectOptions, ListingSelectors, collect};
/// let listing = ListingSelectors { item: "li.job".into(), title: "a".into(), link: "a".into(), ..ListingSelectors::default() };
/// let found = collect(browser, &CollectOptions::new(listing)).await;
/// tracing::info!(jobs = found.jobs.len(), errors = found.errors.len(), "collected");
/// # }
/// ```
pub async fn collect(browser: &dyn Browser, options: &CollectOptions) -> Collection {
    Walk::fresh(browser, options).run().await
}
