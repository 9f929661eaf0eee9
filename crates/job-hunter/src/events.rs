//! Progress events of a run, for a progress display or a log.

use serde::{Deserialize, Serialize};

use crate::models::CompanyOutcome;

/// What a run reports as it goes. Send them anywhere with an
/// [`EventSink`](agent_runtime::EventSink): a closure, a channel, a `CollectingSink`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum HuntEvent {
    /// A step began.
    StepStarted {
        /// The step.
        step: String,
    },
    /// A step ended well; `summary` says what it did.
    StepFinished {
        /// The step.
        step: String,
        /// What it did, in a few words.
        summary: String,
    },
    /// A step was skipped because a checkpoint shows it done.
    StepSkipped {
        /// The step.
        step: String,
    },
    /// Searching one company ended.
    CompanyFinished {
        /// The company.
        company: String,
        /// How it ended.
        outcome: CompanyOutcome,
    },
    /// Work units of a step are done (jobs processed, batches scored).
    Progress {
        /// The step.
        step: String,
        /// Units done.
        done: usize,
        /// Units in all.
        total: usize,
    },
    /// The cost passed the warning threshold (sent once).
    CostWarning {
        /// USD spent so far.
        spent_usd: f64,
        /// The threshold.
        threshold_usd: f64,
    },
    /// Something the user should know (web search not configured, a company skipped).
    Notice {
        /// The message.
        message: String,
    },
}
