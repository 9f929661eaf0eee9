//! What an optimization tells its watchers as it runs (the SSE events of
//! `POST /api/optimize`, the progress lines of the CLI).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::records::{BudgetLimit, Degrade, RouteKey, ScoreBreakdown, ScoringLane};

/// Where an optimization session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OptimizationStatus {
    /// Created, its run not started.
    Pending,
    /// Running.
    Processing,
    /// Finished with a result.
    Completed,
    /// Failed.
    Failed,
}

/// One step of an optimization, serialized with a `type` field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OptimizeEvent {
    /// A node started.
    NodeStarted {
        /// `jd_analysis`, `resume_retrieval`, `bullet_rewriting`, `ats_scoring`,
        /// `targeted_repair`, `gap_analysis`, `result_aggregation`.
        node: String,
    },
    /// A node finished.
    NodeFinished {
        /// The node.
        node: String,
        /// Tokens its model calls used.
        tokens: u64,
        /// Its model calls.
        calls: u64,
        /// How long it ran, in milliseconds.
        elapsed_ms: u64,
    },
    /// A cache lookup.
    Cache {
        /// `jd_analysis` or `retrieval`.
        what: String,
        /// Whether it hit.
        hit: bool,
    },
    /// A set of bullets was scored (attempt 0 is the resume as it was).
    Scored {
        /// The attempt.
        attempt: u32,
        /// Overall, 0 to 1.
        score: f64,
        /// The resume's own bullets scored the same way, 0 to 1.
        baseline: f64,
        /// Per category.
        breakdown: ScoreBreakdown,
        /// Which lane scored it.
        lane: ScoringLane,
        /// The rules' confidence.
        confidence: f64,
    },
    /// Rewritten bullets the fabrication check refused.
    BulletsDropped {
        /// How many.
        count: usize,
        /// Each one's reason.
        reasons: Vec<String>,
    },
    /// The router's decision after scoring.
    Routed {
        /// Where to.
        next: RouteKey,
        /// Why.
        reason: String,
    },
    /// Budget pressure degraded the run.
    Degraded {
        /// How.
        mode: Degrade,
        /// Why.
        reason: String,
    },
    /// A budget limit was reached; the run goes straight to aggregation.
    BudgetReached {
        /// Which limit.
        limit: BudgetLimit,
        /// In words.
        message: String,
    },
    /// Something went wrong and the run went on (a fallback taken).
    Warning {
        /// The agent.
        agent: String,
        /// What happened.
        message: String,
    },
    /// The session's status changed (`processing`, `completed`, `failed`).
    Status {
        /// The new status.
        status: OptimizationStatus,
    },
    /// The result is ready (the `OptimizationCompleted` domain event).
    OptimizationCompleted {
        /// The final score, 0 to 1.
        score: f64,
        /// Tokens of every model call.
        tokens_used: u64,
        /// Model calls.
        model_calls: u64,
    },
}

impl OptimizeEvent {
    /// One line for a terminal.
    ///
    /// ```
    /// use jd_optimizer::OptimizeEvent;
    /// let line = OptimizeEvent::NodeStarted { node: "jd_analysis".into() }.line();
    /// assert_eq!(line, "▶ jd_analysis");
    /// ```
    pub fn line(&self) -> String {
        match self {
            OptimizeEvent::NodeStarted { node } => format!("▶ {node}"),
            OptimizeEvent::NodeFinished {
                node,
                tokens,
                calls,
                elapsed_ms,
            } => format!("✓ {node}: {calls} call(s), {tokens} tokens, {elapsed_ms} ms"),
            OptimizeEvent::Cache { what, hit } => {
                format!("  cache {}: {what}", if *hit { "hit" } else { "miss" })
            }
            OptimizeEvent::Scored {
                attempt,
                score,
                baseline,
                lane,
                confidence,
                breakdown,
            } => format!(
                "  score (attempt {attempt}): {:.1} by {lane:?}, the resume as it is {:.1} on that scale (rules' confidence {confidence:.2}; keywords {:.2}, skills {:.2}, experience {:.2}, formatting {:.2})",
                score * 100.0,
                baseline * 100.0,
                breakdown.keywords,
                breakdown.skills,
                breakdown.experience,
                breakdown.formatting
            ),
            OptimizeEvent::BulletsDropped { count, reasons } => {
                format!("  {count} bullet(s) dropped: {}", reasons.join("; "))
            }
            OptimizeEvent::Routed { next, reason } => format!("  → {}: {reason}", next.as_str()),
            OptimizeEvent::Degraded { mode, reason } => format!("  degraded ({mode:?}): {reason}"),
            OptimizeEvent::BudgetReached { message, .. } => format!("  budget reached: {message}"),
            OptimizeEvent::Warning { agent, message } => format!("  warning ({agent}): {message}"),
            OptimizeEvent::Status { status } => format!("status: {status:?}"),
            OptimizeEvent::OptimizationCompleted {
                score,
                tokens_used,
                model_calls,
            } => format!(
                "done: score {:.1}, {tokens_used} tokens in {model_calls} call(s)",
                score * 100.0
            ),
        }
    }
}
