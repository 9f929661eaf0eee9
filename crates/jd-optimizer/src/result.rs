//! The result aggregator (spec 003 section 4.5), no model call: everything the run
//! produced, with what it cost and which budget or degrade applied.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agents::gap::gap_diff;
use crate::agents::scorer::{original_rule_score, rule_score};
use crate::analysis::JdAnalysis;
use crate::cache::CacheStats;
use crate::config::Budget;
use crate::router::kept_line;
use crate::state::{
    AgentErrorRecord, AttemptKind, AttemptScore, BudgetStop, CacheUse, Degrade, DroppedBullet,
    GapReport, GapSource, KEEP_MARGIN, OptimizationState, RetrievalSource, RewrittenBullet,
    ScoreBreakdown, ScoringLane,
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

/// Assembles the result from the state and makes the state's bullets the kept ones
/// (the process's cache counts are the caller's to add). The kept attempt is the one
/// scoring most above the resume as it is, on the same scale; the resume's own bullets
/// when none does. A run stopped before any scoring keeps its rewrite only when the rules
/// score it above the resume's own bullets; one stopped before the gap analysis gets the
/// deterministic gap diff; neither costs a model call.
pub fn finalize(state: &mut OptimizationState) -> OptimizationResult {
    let analysis = state.jd_analysis.clone().unwrap_or_default();
    let kept = match state.kept_attempt() {
        Some(kept) => kept.clone(),
        None => {
            let rules = rule_score(state);
            let original = original_rule_score(state);
            let better = !state.optimized_bullets.is_empty()
                && rules.overall() > original.overall() + KEEP_MARGIN;
            AttemptScore {
                attempt: if better {
                    state.rewrite_attempts + state.repair_attempts
                } else {
                    0
                },
                kind: if better {
                    state.bullets_from.unwrap_or(AttemptKind::FullRewrite)
                } else {
                    AttemptKind::Original
                },
                score: if better {
                    rules.overall()
                } else {
                    original.overall()
                },
                breakdown: if better {
                    rules.breakdown
                } else {
                    original.breakdown
                },
                lane: ScoringLane::Rules,
                confidence: rules.confidence,
                rules_score: rules.overall(),
                baseline: original.overall(),
                bullets: if better {
                    state.optimized_bullets.clone()
                } else {
                    Vec::new()
                },
            }
        }
    };
    state.optimized_bullets = kept.bullets.clone();
    state.ats_score = Some(kept.score);
    state.score_breakdown = Some(kept.breakdown);
    state.bullets_from = Some(kept.kind);
    let (gap_report, gap_source) = match (&state.gap_report, state.gap_source) {
        (Some(report), Some(source)) => (report.clone(), source),
        _ => (
            gap_diff(&analysis, &state.candidate_text()),
            GapSource::Deterministic,
        ),
    };
    let kept_reason = kept_line(state);
    let mut warnings = state.warnings.clone();
    if kept.attempt == 0 {
        warnings.push(if state.rewrite_attempts == 0 {
            "no rewrite was made: the resume is offered as it is".to_owned()
        } else {
            kept_reason.clone()
        });
    }
    OptimizationResult {
        session_id: state.session_id.clone(),
        tenant_id: state.tenant_id.clone(),
        jd_analysis: analysis,
        optimized_bullets: kept.bullets.clone(),
        dropped_bullets: state.dropped_bullets.clone(),
        baseline_score: kept.baseline,
        ats_score: kept.score,
        kept_attempt: kept.attempt,
        kept_reason,
        score_breakdown: kept.breakdown,
        scoring_lane: kept.lane,
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
