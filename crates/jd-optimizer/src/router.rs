//! The V2 router (spec 003 section 4.6.1): after scoring, proceed to the gap analysis,
//! repair the weak bullets, or (only when configured) rewrite everything again; a budget
//! limit goes straight to aggregation.

use crate::budget::{COMPACT_SCORER, FULL_REWRITE, REPAIR, Spent, affords};
use crate::state::{AttemptKind, OptimizationState, Route, RouteKey};

/// Where the run goes after a scoring, and why. `repairable` says whether a repair has
/// bullets it could honestly improve ([`crate::repair::repair_targets`]).
///
/// In order: a reached budget limit; a score at the threshold; a repair that gained less
/// than `plateau_points` (a plateau); a repair while repairs are left, there is something
/// to repair and the budget pays for it; a second full rewrite when configured and
/// affordable; otherwise the gap analysis with the best bullets so far.
pub fn decide_route(state: &OptimizationState, repairable: bool) -> Route {
    let config = &state.config;
    let route = |next: RouteKey, reason: String| Route { next, reason };
    if let Some(stop) = &state.budget_stop {
        return route(RouteKey::BudgetReached, stop.message.clone());
    }
    let score = state.ats_score.unwrap_or(0.0);
    if score >= config.score_threshold {
        return route(
            RouteKey::ProceedToGap,
            format!(
                "score {:.1} reaches the threshold {:.1}",
                score * 100.0,
                config.score_threshold * 100.0
            ),
        );
    }
    let scored: Vec<_> = state.attempts.iter().filter(|a| a.attempt > 0).collect();
    if let [.., before, last] = scored.as_slice()
        && last.kind == AttemptKind::TargetedRepair
    {
        let gain = (last.score - before.score) * 100.0;
        if gain < config.plateau_points {
            return route(
                RouteKey::ProceedToGap,
                format!(
                    "plateau: the repair gained {gain:.1} points (less than {:.1})",
                    config.plateau_points
                ),
            );
        }
    }
    let spent = Spent::of(state);
    if state.repair_attempts < config.max_repair_attempts && repairable {
        if affords(&config.budget, &spent, REPAIR, COMPACT_SCORER) {
            return route(
                RouteKey::TargetedRepair,
                format!(
                    "score {:.1} is under {:.1}: repairing the weak bullets",
                    score * 100.0,
                    config.score_threshold * 100.0
                ),
            );
        }
        return route(
            RouteKey::ProceedToGap,
            "the budget left does not cover a repair".to_owned(),
        );
    }
    if config.second_full_rewrite
        && state.rewrite_attempts < 2
        && affords(&config.budget, &spent, FULL_REWRITE, COMPACT_SCORER)
    {
        return route(
            RouteKey::FullRewrite,
            format!(
                "score {:.1} is under {:.1}: a second full rewrite is allowed",
                score * 100.0,
                config.score_threshold * 100.0
            ),
        );
    }
    let reason = if state.repair_attempts < config.max_repair_attempts {
        "no bullet a repair could honestly improve: proceeding with the best so far"
    } else {
        "attempts exhausted: proceeding with the best so far"
    };
    route(RouteKey::ProceedToGap, reason.to_owned())
}
