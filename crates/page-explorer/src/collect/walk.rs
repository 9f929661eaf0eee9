//! The walk over a board: listing page after listing page, then the jobs' own pages, with
//! every failed step recorded and retried, a stop after too many failures in a row, and,
//! when it runs in a graph node, where it stands saved after every page
//! ([`NodeContext::save_step`]).

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use agent_runtime::graph::NodeContext;

use super::progress::{Progress, Stage};
use super::read::{apply_details, apply_type, extract_listings, host_of, read_detail, uses_panel};
use super::{CollectEnd, CollectOptions, CollectStep, CollectedJob, Collection, PageError};
use crate::browser::{Browser, BrowserError};
use crate::listing::{PanelListing, read_panel};
use crate::paginate::{Advance, PaginationKind, Paginator};
use crate::selectors::RawListing;

/// How long to wait before retrying a failed step, per failure in a row.
const RETRY_PAUSE: Duration = Duration::from_millis(500);

/// Runs a step (a future, made again for each try) until it succeeds, through
/// [`Walk::retried`]; `?` on the halt. A macro rather than a method taking an async
/// closure: the walk runs in a graph node, whose future must be `Send`, which the compiler
/// cannot prove for an async closure borrowing the walk's references.
macro_rules! attempt {
    ($walk:expr, $step:expr, $url:expr, $try:expr) => {
        loop {
            let outcome = $try.await;
            if let Some(value) = $walk.retried($step, $url, outcome).await? {
                break value;
            }
        }
    };
}

/// The key of the walk's progress among its node's saved steps.
pub(crate) const WALK_STEP: &str = "walk";

/// Why a walk stopped before its end: too many failures in a row, or a checkpoint that
/// could not be written.
pub(crate) struct Halt(pub(crate) CollectEnd);

/// One collection under way.
pub(crate) struct Walk<'a> {
    browser: &'a dyn Browser,
    options: &'a CollectOptions,
    /// Where to go on from, and what a checkpoint taken now resumes.
    resume_at: Stage,
    jobs: Vec<CollectedJob>,
    pages: usize,
    duplicates: usize,
    errors: Vec<PageError>,
    /// The jobs (by index) whose own page is still to be read.
    detail_pending: VecDeque<usize>,
    seen: Seen,
    /// The jobs carried over from the checkpoint resumed: met again, they are skipped
    /// without counting as duplicates.
    carried: Seen,
    resumed_jobs: usize,
    /// The listings read on the page shown, so that a listing that grows in place (load
    /// more, infinite scroll) is not read twice.
    read_here: HashSet<(String, String, String)>,
    /// The details panel last read, to notice one that did not change.
    last_panel: Option<RawListing>,
    /// Failed steps in a row.
    failures: usize,
    /// The graph node the walk runs in, which keeps its progress: none for a walk kept
    /// in memory only.
    node: Option<&'a NodeContext<Progress>>,
}

impl<'a> Walk<'a> {
    /// A walk starting on the page shown now, kept in memory.
    pub(crate) fn fresh(browser: &'a dyn Browser, options: &'a CollectOptions) -> Self {
        Walk {
            browser,
            options,
            resume_at: Stage::Listings {
                url: None,
                in_place: false,
            },
            jobs: Vec::new(),
            pages: 1,
            duplicates: 0,
            errors: Vec::new(),
            detail_pending: VecDeque::new(),
            seen: Seen::default(),
            carried: Seen::default(),
            resumed_jobs: 0,
            read_here: HashSet::new(),
            last_panel: None,
            failures: 0,
            node: None,
        }
    }

    /// A walk in graph node `node`, going on from `progress`; its jobs were collected
    /// before this process when `carried_over`.
    pub(crate) fn in_node(
        browser: &'a dyn Browser,
        options: &'a CollectOptions,
        node: &'a NodeContext<Progress>,
        mut progress: Progress,
        carried_over: bool,
    ) -> Self {
        let jobs = progress.take_jobs();
        let mut seen = Seen::default();
        for job in &jobs {
            seen.insert(job);
        }
        let mut walk = Walk::fresh(browser, options);
        walk.node = Some(node);
        if carried_over {
            walk.carried = seen.clone();
            walk.resumed_jobs = jobs.len();
        }
        walk.seen = seen;
        walk.jobs = jobs;
        walk.resume_at = progress.stage;
        walk.pages = progress.pages;
        walk.duplicates = progress.duplicates;
        walk.errors = progress.errors;
        walk.detail_pending = progress.detail_pending;
        walk
    }

    /// Walks to the end (or to a halt) and returns what was collected.
    pub(crate) async fn run(mut self) -> Collection {
        let end = match self.detail_stage().await {
            Ok(end) | Err(Halt(end)) => end,
        };
        self.into_collection(end)
    }

    /// Reads the listing pages, from where the walk stands (nothing when they are read),
    /// and says how the listing ended; then the walk stands before the detail pages. A
    /// halt is saved where it stopped, for a resume.
    pub(crate) async fn listing_stage(&mut self) -> Result<CollectEnd, Halt> {
        let (url, in_place) = match self.resume_at.clone() {
            Stage::Listings { url, in_place } => (url, in_place),
            Stage::Details { end } | Stage::Done { end } => return Ok(end),
        };
        let end = match self.listings(url, in_place).await {
            Ok(end) => end,
            Err(halt) => return Err(self.halted(halt).await),
        };
        self.resume_at = Stage::Details { end };
        Ok(end)
    }

    /// Reads the detail pages left (after the listing pages, if they are not read yet)
    /// and ends the walk: its end, or a halt saved where it stopped.
    pub(crate) async fn detail_stage(&mut self) -> Result<CollectEnd, Halt> {
        let end = self.listing_stage().await?;
        if matches!(self.resume_at, Stage::Done { .. }) {
            return Ok(end);
        }
        if let Err(halt) = self.details(end).await {
            return Err(self.halted(halt).await);
        }
        self.resume_at = Stage::Done { end };
        Ok(end)
    }

    /// A halt on failures is saved where the walk stopped, with the failures recorded.
    async fn halted(&mut self, halt: Halt) -> Halt {
        if halt.0 != CollectEnd::CheckpointFailed {
            let _ = self.save().await;
        }
        halt
    }

    /// Reads the listing pages from `url` (the page shown when `None`) on.
    async fn listings(
        &mut self,
        url: Option<String>,
        mut in_place: bool,
    ) -> Result<CollectEnd, Halt> {
        let (browser, options) = (self.browser, self.options);
        let settle = options.settle;
        let mut shown = match url {
            // Not opened again when shown already: a listing that grows in place keeps
            // the search and filters the caller set up on it.
            Some(url) => {
                attempt!(self, CollectStep::Open, &url, async {
                    if browser.url().await? != url {
                        browser.open(&url).await?;
                    }
                    browser.wait_for_settle(settle).await
                });
                url
            }
            None => {
                attempt!(self, CollectStep::Open, "", browser.wait_for_settle(settle));
                attempt!(self, CollectStep::Open, "", browser.url())
            }
        };
        self.resume_at = Stage::Listings {
            url: Some(shown.clone()),
            in_place,
        };
        let seen_already = if in_place { 1 } else { self.pages };
        let mut paginator = Paginator::new(options.listing.item.clone(), options.max_pages)
            .with_settle(settle)
            .with_known_next(options.pagination.clone())
            .with_pages_seen(seen_already);
        loop {
            let listings = attempt!(
                self,
                CollectStep::Listings,
                &shown,
                extract_listings(browser, &options.listing)
            );
            let page = attempt!(self, CollectStep::Listings, &shown, browser.url());
            if self.take_listings(listings, &page).await? {
                return Ok(CollectEnd::MaxJobs);
            }
            // A move that failed half way may have left the page: a page of its own is
            // opened again before the retry, so that no page is skipped.
            let mut retry = false;
            let addressable = !in_place;
            let advance = attempt!(self, CollectStep::NextPage, &page, async {
                if std::mem::replace(&mut retry, true) && addressable {
                    browser.open(&page).await?;
                    browser.wait_for_settle(settle).await?;
                }
                paginator.advance(browser).await
            });
            self.pages = self.pages.max(paginator.pages());
            match advance {
                Advance::Moved {
                    kind,
                    url,
                    new_items,
                } => {
                    tracing::info!(?kind, %url, new_items, "next page of listings");
                    let grew = matches!(
                        kind,
                        PaginationKind::LoadMore { .. } | PaginationKind::InfiniteScroll
                    );
                    if !grew {
                        self.read_here.clear();
                    }
                    in_place = grew;
                    self.resume_at = Stage::Listings {
                        url: Some(url.clone()),
                        in_place: grew,
                    };
                    self.save().await?;
                    shown = url;
                }
                Advance::Stopped(reason) => return Ok(CollectEnd::Pages(reason)),
            }
        }
    }

    /// Takes the listings read on `page`; true once `max_jobs` jobs are collected.
    async fn take_listings(&mut self, listings: Vec<RawListing>, page: &str) -> Result<bool, Halt> {
        let host = host_of(page);
        for (index, raw) in listings.into_iter().enumerate() {
            let read = (raw.title.clone(), raw.link.clone(), raw.body.clone());
            if !self.read_here.insert(read) {
                continue;
            }
            let mut job = CollectedJob {
                apply_type: apply_type(&raw.link, host.as_deref(), false),
                title: raw.title,
                company: raw.company,
                location: raw.location,
                salary_text: raw.salary,
                url: raw.link.clone(),
                apply_url: raw.link,
                posted_date: (!raw.posted.is_empty()).then_some(raw.posted),
                source_page: page.to_owned(),
                description: None,
                details_text: raw.body,
            };
            if (job.title.is_empty() && job.url.is_empty()) || self.carried.contains(&job) {
                continue;
            }
            super::fields::complete(&mut job);
            if self.seen.contains(&job) {
                self.duplicates += 1;
                continue;
            }
            if self.jobs.len() >= self.options.max_jobs {
                return Ok(true);
            }
            let panel = uses_panel(self.options.detail_mode, &job);
            if panel {
                self.read_panel(&mut job, index, page).await?;
            }
            if !self.seen.insert(&job) {
                self.duplicates += 1;
                continue;
            }
            if !panel && self.options.detail.is_some() {
                self.detail_pending.push_back(self.jobs.len());
            }
            self.jobs.push(job);
        }
        Ok(self.jobs.len() >= self.options.max_jobs)
    }

    /// Reads the job's details from the panel its listing (the `index`-th on `page`) fills.
    async fn read_panel(
        &mut self,
        job: &mut CollectedJob,
        index: usize,
        page: &str,
    ) -> Result<(), Halt> {
        let Some(detail) = &self.options.detail else {
            return Ok(());
        };
        let at = PanelListing {
            selectors: &self.options.listing,
            index,
            page,
        };
        match read_panel(self.browser, &at, detail, self.options.settle).await {
            Ok(Some(found)) if self.last_panel.as_ref() == Some(&found) => {
                tracing::warn!(title = %job.title, "the panel did not change: not read");
            }
            Ok(Some(found)) => {
                self.last_panel = Some(found.clone());
                apply_details(job, found, host_of(page).as_deref());
            }
            Ok(None) => tracing::warn!(index, "the listing to click is gone"),
            Err(error) => return self.record(CollectStep::Details, page, &error),
        }
        self.failures = 0;
        Ok(())
    }

    /// Reads the jobs' own pages still to be read, after every listing is.
    async fn details(&mut self, end: CollectEnd) -> Result<(), Halt> {
        let Some(detail) = &self.options.detail else {
            return Ok(());
        };
        if self.detail_pending.is_empty() {
            return Ok(());
        }
        tracing::info!(
            jobs = self.jobs.len(),
            ?end,
            "listings collected; reading the jobs' pages"
        );
        self.resume_at = Stage::Details { end };
        self.save().await?;
        // The jobs that failed since the last success: read again on resume when the
        // failures end the walk, gone past when a success follows.
        let mut streak = Vec::new();
        while let Some(&index) = self.detail_pending.front() {
            if let Some(job) = self.jobs.get_mut(index) {
                let url = job.url.clone();
                match read_detail(self.browser, job, detail, self.options.settle).await {
                    Ok(()) => {
                        self.failures = 0;
                        streak.clear();
                    }
                    Err(error) => {
                        if let Err(halt) = self.record(CollectStep::Details, &url, &error) {
                            for failed in streak.into_iter().rev() {
                                self.detail_pending.push_front(failed);
                            }
                            return Err(halt);
                        }
                        streak.push(index);
                    }
                }
            }
            self.detail_pending.pop_front();
            self.save().await?;
        }
        Ok(())
    }

    /// Takes one try of `step`: its value, or `None` once the failure is recorded and
    /// paused after (longer after each failure in a row), for the caller to try again; a
    /// halt once failures in a row reach the limit. See [`attempt!`].
    async fn retried<T>(
        &mut self,
        step: CollectStep,
        url: &str,
        outcome: Result<T, BrowserError>,
    ) -> Result<Option<T>, Halt> {
        match outcome {
            Ok(value) => {
                self.failures = 0;
                Ok(Some(value))
            }
            Err(error) => {
                self.record(step, url, &error)?;
                tokio::time::sleep(RETRY_PAUSE * self.failures as u32).await;
                Ok(None)
            }
        }
    }

    /// Records a failed step; a halt when it makes too many in a row.
    fn record(&mut self, step: CollectStep, url: &str, error: &BrowserError) -> Result<(), Halt> {
        tracing::warn!(?step, url, %error, "a collecting step failed");
        self.errors.push(PageError {
            step,
            url: url.to_owned(),
            error: error.to_string(),
        });
        self.failures += 1;
        if self.failures >= self.options.max_consecutive_errors.max(1) {
            tracing::warn!(
                failures = self.failures,
                "too many failures in a row: stopping"
            );
            return Err(Halt(CollectEnd::TooManyErrors));
        }
        Ok(())
    }

    /// Where the walk stands.
    pub(crate) fn progress(&self) -> Progress {
        Progress {
            stage: self.resume_at.clone(),
            jobs: self.jobs.clone(),
            details_texts: self
                .jobs
                .iter()
                .map(|job| job.details_text.clone())
                .collect(),
            pages: self.pages,
            duplicates: self.duplicates,
            errors: self.errors.clone(),
            detail_pending: self.detail_pending.clone(),
        }
    }

    /// Saves where the walk stands in its node's checkpoints, when it runs in a node.
    async fn save(&mut self) -> Result<(), Halt> {
        let Some(node) = self.node else {
            return Ok(());
        };
        if let Err(error) = node.save_step(WALK_STEP, &self.progress()).await {
            tracing::warn!(%error, "the collection's checkpoint could not be written: stopping");
            self.errors.push(PageError {
                step: CollectStep::Checkpoint,
                url: String::new(),
                error: error.message().to_owned(),
            });
            return Err(Halt(CollectEnd::CheckpointFailed));
        }
        Ok(())
    }

    /// How many jobs came from before this process.
    pub(crate) fn resumed_jobs(&self) -> usize {
        self.resumed_jobs
    }

    pub(crate) fn into_collection(self, end: CollectEnd) -> Collection {
        Collection {
            jobs: self.jobs,
            pages: self.pages,
            duplicates: self.duplicates,
            end,
            errors: self.errors,
            resumed_jobs: self.resumed_jobs,
        }
    }
}

/// Tracks what has been collected, to drop duplicates.
#[derive(Debug, Default, Clone)]
pub(crate) struct Seen {
    urls: HashSet<String>,
    keys: HashSet<(String, String, String)>,
}

impl Seen {
    /// Whether `job` (its own page, else its apply URL, or its title, company and
    /// location) was seen already.
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
        let url = if job.url.is_empty() {
            &job.apply_url
        } else {
            &job.url
        };
        (url.trim_end_matches('/').to_owned(), key)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::ApplyType;

    #[test]
    fn duplicates_by_url_or_by_title_company_location() {
        let job = |title: &str, url: &str| CollectedJob {
            title: title.into(),
            company: "Acme".into(),
            location: String::new(),
            salary_text: String::new(),
            url: url.into(),
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
