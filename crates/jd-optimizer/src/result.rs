//! The result aggregator (spec 003 section 4.5), no model call: everything the run
//! produced, with what it cost and which budget or degrade applied.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agents::gap::gap_diff;
use crate::agents::scorer::rule_score;
use crate::analysis::JdAnalysis;
use crate::cache::CacheStats;
use crate::config::Budget;
use crate::state::{
    AgentErrorRecord, AttemptScore, BudgetStop, CacheUse, Degrade, DroppedBullet, GapReport,
    GapSource, OptimizationState, RetrievalSource, RewrittenBullet, ScoreBreakdown, ScoringLane,
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
    /// The rewritten bullets, each with the chunks it rewrites.
    pub optimized_bullets: Vec<RewrittenBullet>,
    /// Bullets refused by the fabrication check, with why.
    pub dropped_bullets: Vec<DroppedBullet>,
    /// The resume's own bullets, scored by the rules (0 to 1).
    pub baseline_score: f64,
    /// The final score (0 to 1).
    pub ats_score: f64,
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
    /// Points gained over the resume as it was (0 to 100 scale).
    pub fn gain_points(&self) -> f64 {
        (self.ats_score - self.baseline_score) * 100.0
    }
}

/// Assembles the result from the state (the process's cache counts are the caller's to
/// add). A run stopped before scoring is scored here by
/// the rules; one stopped before the gap analysis gets the deterministic gap diff; both
/// cost no model call.
pub fn aggregate(state: &OptimizationState) -> OptimizationResult {
    let analysis = state.jd_analysis.clone().unwrap_or_default();
    let originals = || {
        crate::scoring::score_by_rules(
            &analysis,
            &state.original_bullets(),
            state.config.score_threshold,
        )
    };
    // With no rewritten bullet, the resume offered is the resume as it was: so is its score.
    let (ats_score, score_breakdown, scoring_lane) = match (
        state.ats_score,
        state.score_breakdown,
        state.attempts.last(),
    ) {
        _ if state.optimized_bullets.is_empty() => {
            let rules = originals();
            (rules.overall(), rules.breakdown, ScoringLane::Rules)
        }
        (Some(score), Some(breakdown), Some(last)) => (score, breakdown, last.lane),
        _ => {
            let rules = rule_score(state);
            (rules.overall(), rules.breakdown, ScoringLane::Rules)
        }
    };
    let (gap_report, gap_source) = match (&state.gap_report, state.gap_source) {
        (Some(report), Some(source)) => (report.clone(), source),
        _ => (
            gap_diff(&analysis, &state.candidate_text()),
            GapSource::Deterministic,
        ),
    };
    let baseline_score = state
        .attempts
        .iter()
        .find(|a| a.attempt == 0)
        .map_or_else(|| originals().overall(), |a| a.score);
    let mut warnings = state.warnings.clone();
    if state.optimized_bullets.is_empty() {
        warnings.push(if state.rewrite_attempts == 0 {
            "no rewrite was made: the resume is scored as it is".to_owned()
        } else {
            "no rewritten bullet passed the fabrication check: the resume is scored as it is"
                .to_owned()
        });
    } else if ats_score + 0.005 < baseline_score {
        warnings.push(format!(
            "the rewritten bullets score {:.1} points below the resume's own ({:.1}): keep the original where it reads better",
            (baseline_score - ats_score) * 100.0,
            baseline_score * 100.0
        ));
    }
    OptimizationResult {
        session_id: state.session_id.clone(),
        tenant_id: state.tenant_id.clone(),
        jd_analysis: analysis,
        optimized_bullets: state.optimized_bullets.clone(),
        dropped_bullets: state.dropped_bullets.clone(),
        baseline_score,
        ats_score,
        score_breakdown,
        scoring_lane,
        attempts: state.attempts.clone(),
        gap_report,
        gap_source,
        rewrite_attempts: state.rewrite_attempts,
        repair_attempts: state.repair_attempts,
        retrieval_source: state.retrieval_source,
        token_usage: state.token_usage.clone(),
        total_tokens_used: state.total_tokens_used,
        model_calls: state.model_calls,
        budget: BudgetReport {
            limits: state.config.budget,
            tokens_used: state.total_tokens_used,
            model_calls: state.model_calls,
            wall_ms: state.elapsed_ms(),
            stop: state.budget_stop.clone(),
            degrades: state.degrades.iter().copied().collect(),
        },
        cache: state.cache.clone(),
        cache_stats: CacheStats::default(),
        errors: state.errors.clone(),
        warnings,
    }
}
