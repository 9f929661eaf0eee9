//! An optimization's result (spec 003 section 4.5): everything the run produced, with
//! what it cost and which budget or degrade applied; [`crate::aggregate`] makes it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::analysis::JdAnalysis;
use crate::cache::CacheStats;
use crate::config::Budget;
use crate::records::{
    AgentErrorRecord, AttemptScore, BudgetStop, CacheUse, Degrade, DroppedBullet, GapReport,
    GapSource, RetrievalSource, RewrittenBullet, ScoreBreakdown, ScoringLane,
};

/// What was spent against the budget, and what the budget did to the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BudgetReport {
    /// The limits.
    pub limits: Budget,
    /// Tokens used.
    pub tokens_used: u64,
    /// Model calls made.
    pub model_calls: u64,
    /// Wall time, in milliseconds.
    pub wall_ms: u64,
    /// The limit that stopped the run early, if one did.
    pub stop: Option<BudgetStop>,
    /// The degrade modes applied.
    pub degrades: Vec<Degrade>,
}

/// An optimization's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OptimizationResult {
    /// The session.
    pub session_id: String,
    /// The tenant.
    pub tenant_id: String,
    /// The job description's analysis.
    pub jd_analysis: JdAnalysis,
    /// The kept attempt's rewritten bullets, each with the resume's bullet it replaces
    /// and the chunks it draws on (none when the resume's own bullets are kept).
    pub optimized_bullets: Vec<RewrittenBullet>,
    /// Bullets refused by the fabrication check, with why.
    pub dropped_bullets: Vec<DroppedBullet>,
    /// The resume's own bullets, scored the same way as the kept attempt (0 to 1).
    pub baseline_score: f64,
    /// The kept attempt's score (0 to 1): never below `baseline_score`.
    pub ats_score: f64,
    /// The attempt kept (0: the resume's own bullets).
    pub kept_attempt: u32,
    /// Why it was kept, in words.
    pub kept_reason: String,
    /// The final score per category.
    pub score_breakdown: ScoreBreakdown,
    /// Which lane gave the final score.
    pub scoring_lane: ScoringLane,
    /// Every scoring, the baseline first.
    pub attempts: Vec<AttemptScore>,
    /// The gaps rewording cannot close.
    pub gap_report: GapReport,
    /// Who wrote the gap report.
    pub gap_source: GapSource,
    /// Full rewrites made.
    pub rewrite_attempts: u32,
    /// Targeted repairs made.
    pub repair_attempts: u32,
    /// How the resume's chunks were found.
    pub retrieval_source: RetrievalSource,
    /// Tokens per agent.
    pub token_usage: BTreeMap<String, u64>,
    /// Tokens of every model call.
    pub total_tokens_used: u64,
    /// Model calls made.
    pub model_calls: u64,
    /// The budget and what it did.
    pub budget: BudgetReport,
    /// This run's cache lookups (`true` a hit).
    pub cache: CacheUse,
    /// The process's cache counts when the run ended (hit rates by kind).
    pub cache_stats: CacheStats,
    /// Failures recorded (the run went on past the recoverable ones).
    pub errors: Vec<AgentErrorRecord>,
    /// What the user should know.
    pub warnings: Vec<String>,
}

impl OptimizationResult {
    /// Points gained over the resume as it was, on the kept attempt's scale (0 to 100).
    pub fn gain_points(&self) -> f64 {
        (self.ats_score - self.baseline_score) * 100.0
    }
}
