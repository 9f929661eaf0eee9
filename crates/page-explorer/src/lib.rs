//! The page explorer (spec 002): learns how a job board works by exploring it in a real
//! headless browser with a model, then collects its jobs.
//!
//! - Phase 1, [`explore`] (durable, resumable by run id: [`durable::explore_durable`]):
//!   the Explorer, Classifier, ChangeAnalyzer and Summarizer agents ([`agents`]) act on the
//!   board through a [`Browser`] and leave an [`Exploration`]: its [`Phase1Output`], the
//!   [`memory`] of pages and transitions, and [`ExploreEvent`]s as it goes.
//! - Phase 2, [`collect()`] (checkpointed: [`collect_checkpointed`], [`resume_collection`]):
//!   the listing pages walked with a [`Paginator`], each job's details read, a
//!   [`Collection`] of [`CollectedJob`]s.
//! - [`ChromiumBrowser`] is the real browser; [`observe`] serializes what a page shows
//!   for a model ([`Observation`]).
//!
//! ```no_run
//! # async fn run() -> Result<(), page_explorer::BrowserError> {
//! use page_explorer::{Browser as _, ChromiumBrowser, LaunchOptions, observe};
//! let browser = ChromiumBrowser::launch(LaunchOptions::default()).await?;
//! browser.open("http://127.0.0.1:8080/").await?;
//! let seen = observe(&browser, None, page_explorer::DEFAULT_BUDGET_TOKENS).await;
//! browser.close().await;
//! tracing::info!("{}", seen?.text);
//! # Ok(()) }
//! ```

pub mod agents;
pub mod collect;
pub mod durable;
pub mod listing;
pub mod memory;
pub mod search;
pub mod site_server;

mod browser;
mod dom;
mod filters;
mod guard;
mod orchestrator;
mod paginate;
mod phase1;
mod phase1_results;
mod report;
mod selectors;

pub use browser::{Browser, BrowserError, ChromiumBrowser, LaunchOptions};
pub use collect::{
    CollectCheckpoints, CollectEnd, CollectOptions, CollectedJob, Collection, DetailSelectors,
    ListingSelectors, collect, collect_checkpointed, resume_collection,
};
pub use dom::{DEFAULT_BUDGET_TOKENS, Element, ElementKind, ElementState, Observation, observe};
pub use filters::{AppliedFilters, FilterError, apply_filters};
pub use guard::Breakers;
pub use listing::infer_listing;
pub use orchestrator::{
    Exploration, ExploreError, ExploreOptions, ExploreStop, PageScreenshot, explore,
};
pub use paginate::{Advance, PaginationKind, Paginator, StopReason};
pub use phase1::{
    BehaviorSummary, KeyElements, PageSummary, Phase1Output, SelectorCheck, Unverified,
};
pub use phase1_results::{ReadPhase1, phase1_results, phase1_results_tool, read_phase1_result};
pub use report::ExploreEvent;
