//! Why exploring ended before the Explorer's `done` was taken: a typed reason, kept in the
//! [`Exploration`](super::Exploration) and, as its kind and text, in the Phase 1 output.

use serde::{Deserialize, Serialize};

/// Why exploring stopped early. Whatever it is, what was gathered is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExploreStop {
    /// The session was cancelled (Ctrl-C).
    #[error("cancelled")]
    Cancelled,
    /// A circuit breaker of the loop guard tripped (actions, errors, pages, time, repeats).
    #[error("{reason}")]
    Breaker {
        /// The breaker's words.
        reason: String,
    },
    /// The model calls reached the spending or token limit.
    #[error("cost limit: {reason}")]
    CostLimit {
        /// The meter's words.
        reason: String,
    },
    /// The Explorer's model call failed.
    #[error("the Explorer's model failed: {reason}")]
    ModelFailed {
        /// The error.
        reason: String,
    },
    /// The Explorer used up its model calls on one page without finishing.
    #[error("the Explorer made {rounds} model calls on [{page}] without finishing")]
    OutOfRounds {
        /// The model calls made.
        rounds: u32,
        /// The page it was on.
        page: String,
    },
    /// The page could not be read after an action.
    #[error("the page could not be read after {tool}: {reason}")]
    Unreadable {
        /// The action.
        tool: String,
        /// The browser's error.
        reason: String,
    },
    /// The Explorer kept calling `done` (or answering without a tool) before it had acted
    /// on the page at all; its `done` was refused this many times.
    #[error(
        "the Explorer called done {refusals} time(s) without having acted on the page; \
         its findings were not taken"
    )]
    DoneRefused {
        /// The refusals.
        refusals: u32,
    },
}

impl ExploreStop {
    /// The reason's kind in snake_case, e.g. `done_refused` (the Phase 1 output's
    /// `stopKind`).
    pub fn kind(&self) -> &'static str {
        match self {
            ExploreStop::Cancelled => "cancelled",
            ExploreStop::Breaker { .. } => "breaker",
            ExploreStop::CostLimit { .. } => "cost_limit",
            ExploreStop::ModelFailed { .. } => "model_failed",
            ExploreStop::OutOfRounds { .. } => "out_of_rounds",
            ExploreStop::Unreadable { .. } => "unreadable",
            ExploreStop::DoneRefused { .. } => "done_refused",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_words() {
        let stop = ExploreStop::DoneRefused { refusals: 2 };
        assert_eq!(stop.kind(), "done_refused");
        assert!(stop.to_string().contains("2 time(s) without having acted"));
        assert_eq!(ExploreStop::Cancelled.kind(), "cancelled");
        let breaker = ExploreStop::Breaker {
            reason: "50 actions".into(),
        };
        assert_eq!(breaker.to_string(), "50 actions");
        assert_eq!(breaker.kind(), "breaker");
    }
}
