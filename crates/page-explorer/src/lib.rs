//! The page explorer (spec 002): drives a real headless browser ([`browser`]) and serializes
//! what a page shows for a model ([`dom`]).
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
pub mod browser;
pub mod collect;
pub mod dom;
pub mod durable;
pub mod filters;
pub mod guard;
pub mod listing;
pub mod memory;
pub mod orchestrator;
pub mod paginate;
pub mod phase1;
pub mod report;
pub mod search;
mod selectors;
pub mod site_server;

pub use browser::{Browser, BrowserError, ChromiumBrowser, LaunchOptions};
pub use collect::{
    ApplyType, CollectCheckpoints, CollectEnd, CollectError, CollectOptions, CollectStep,
    CollectedJob, Collection, DetailSelectors, ListingSelectors, PageError, collect,
    collect_checkpointed, resume_collection,
};
pub use dom::{
    Changes, DEFAULT_BUDGET_TOKENS, Element, ElementKind, ElementState, Observation, observe,
};
pub use filters::{AppliedFilters, FilterError, apply_filters};
pub use guard::{ActionRecord, Breakers, LoopGuard, Stop};
pub use listing::infer_listing;
pub use memory::{
    ChangeObservation, Classification, Edge, MemoryStore, NavAction, PageChange, PageNode,
    PathStep, Pattern, PatternStatus, Transition,
};
pub use orchestrator::{
    Exploration, ExploreError, ExploreOptions, ExploreStop, PageScreenshot, explore,
};
pub use paginate::{Advance, PaginationKind, Paginator, StopReason};
pub use phase1::{
    BehaviorSummary, KeyElements, PageSummary, Phase1Output, SelectorCheck, Unverified,
};
pub use report::ExploreEvent;
