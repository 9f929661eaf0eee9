//! What an exploration is asked to do and what it gives back: its options, the
//! screenshots of the pages it saw, its result and the errors that stop it.

use std::time::Duration;

use agent_runtime::CostSnapshot;
use serde::{Deserialize, Serialize};

use crate::browser::BrowserError;
use crate::dom::DEFAULT_BUDGET_TOKENS;
use crate::guard::Breakers;
use crate::memory::MemoryStore;
use crate::phase1::Phase1Output;

use super::ExploreStop;

/// How to explore.
#[derive(Debug, Clone)]
pub struct ExploreOptions {
    /// What the Explorer is asked to find out.
    pub task: String,
    /// The circuit breakers (actions, consecutive errors, pages, time, repeats).
    pub breakers: Breakers,
    /// Each observation's token budget.
    pub budget_tokens: usize,
    /// How long to wait for the page to settle after an action.
    pub settle: Duration,
    /// Take a screenshot of each new page.
    pub screenshots: bool,
    /// Model calls the Explorer may make on one page before it is stopped.
    pub rounds_per_page: u32,
    /// How many of its recent actions the Explorer is reminded of in a fresh context.
    pub recent_actions: usize,
    /// How many times a `done` (or a final answer) before any browser action is refused,
    /// the Explorer told to explore first; the last refusal stops exploring
    /// ([`ExploreStop::DoneRefused`]).
    pub done_refusals: u32,
}

impl ExploreOptions {
    /// Options for `task` with the default breakers, an 8,000-token budget, 5 s to settle,
    /// screenshots, 30 model calls per page, the last 8 actions recalled and 2 refusals of
    /// a `done` before any action.
    pub fn new(task: impl Into<String>) -> Self {
        ExploreOptions {
            task: task.into(),
            breakers: Breakers::default(),
            budget_tokens: DEFAULT_BUDGET_TOKENS,
            settle: Duration::from_secs(5),
            screenshots: true,
            rounds_per_page: 30,
            recent_actions: 8,
            done_refusals: 2,
        }
    }
}

/// A PNG of a page, taken when the page was first entered (kept as base64 in JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageScreenshot {
    /// The page id.
    pub page_id: String,
    /// The URL shown.
    pub url: String,
    /// The PNG bytes.
    #[serde(with = "base64_bytes")]
    pub png: Vec<u8>,
}

/// What exploring produced. Whatever stopped it, everything learned is here.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Exploration {
    /// The Phase 1 output (its `stopped` says why exploring ended early, if it did).
    pub output: Phase1Output,
    /// The memory store as exploring left it.
    pub memory: MemoryStore,
    /// One screenshot per page.
    pub screenshots: Vec<PageScreenshot>,
    /// Browser actions taken.
    pub actions: usize,
    /// Whether the Explorer's `done` was taken.
    pub completed: bool,
    /// Why exploring stopped early, if it did.
    pub stop: Option<ExploreStop>,
    /// What the model calls cost.
    pub cost: CostSnapshot,
}

/// Exploring could not start.
#[derive(Debug, thiserror::Error)]
pub enum ExploreError {
    /// The starting page did not open.
    #[error("opening {url}: {source}")]
    Open {
        /// The URL.
        url: String,
        /// Why.
        source: BrowserError,
    },
}

/// Bytes as a base64 string.
mod base64_bytes {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}
