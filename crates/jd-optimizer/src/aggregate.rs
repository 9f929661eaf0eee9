//! The result aggregator (spec 003 section 4.5), no model call: the kept attempt
//! becomes the state's and the result's, with what the run cost and which budget or
//! degrade applied.

use agent_runtime::CostSnapshot;

use crate::agents::gap::gap_diff;
use crate::agents::scorer::{original_rule_score, rule_score};
use crate::cache::CacheStats;
use crate::records::{AttemptKind, AttemptScore, GapSource, KEEP_MARGIN, ScoringLane};
use crate::result::{BudgetReport, OptimizationResult};
use crate::router::kept_line;
use crate::state::OptimizationState;

/// Assembles the result from the state and what the session's meter counted
/// (`metered`), and makes the state's bullets the kept ones (the process's cache counts
/// are the caller's to add). The kept attempt is the one
/// scoring most above the resume as it is, on the same scale; the resume's own bullets
/// when none does. A run stopped before any scoring keeps its rewrite only when the rules
/// score it above the resume's own bullets; one stopped before the gap analysis gets the
/// deterministic gap diff; neither costs a model call.
pub fn finalize(state: &mut OptimizationState, metered: &CostSnapshot) -> OptimizationResult {
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
        token_usage: metered
            .usage_by_step
            .iter()
            .map(|(agent, usage)| (agent.clone(), usage.total_tokens()))
            .collect(),
        total_tokens_used: metered.total_tokens(),
        model_calls: metered.calls,
        budget: BudgetReport {
            limits: state.config.budget,
            tokens_used: metered.total_tokens(),
            model_calls: metered.calls,
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
