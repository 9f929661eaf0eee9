//! The V2 router (spec 003 section 4.6.1): after scoring, proceed to the gap analysis,
//! repair the weak bullets, or (only when configured) rewrite everything again; a budget
//! limit goes straight to aggregation.

use crate::budget::{COMPACT_SCORER, FULL_REWRITE, REPAIR, Spent, affords};
use crate::records::{AttemptKind, Route, RouteKey};
use crate::state::OptimizationState;

/// The attempt kept so far, in words: which one, and its score beside the resume's own
/// on the same scale.
pub fn kept_line(state: &OptimizationState) -> String {
    let Some(kept) = state.kept_attempt() else {
        return "nothing scored yet".to_owned();
    };
    if kept.attempt == 0 {
        let best = state
            .attempts
            .iter()
            .filter(|a| a.attempt > 0)
            .max_by(|a, b| a.gain().total_cmp(&b.gain()));
        return match best {
            Some(best) => format!(
                "the resume's own bullets are kept: no attempt scored above them (the best, attempt {}, {:.1} against {:.1} on the same scale)",
                best.attempt,
                best.score * 100.0,
                best.baseline * 100.0
            ),
            None => "the resume's own bullets are kept: nothing was rewritten".to_owned(),
        };
    }
    format!(
        "attempt {} is kept: {:.1} against the resume's own {:.1} on the same scale",
        kept.attempt,
        kept.score * 100.0,
        kept.baseline * 100.0
    )
}

/// Where the run goes after a scoring, and why. `repairable` says whether a repair has
/// bullets of the kept attempt it could honestly improve
/// ([`crate::repair::repair_targets`]).
///
/// `spent` is what the session's meter has counted so far. In order: a reached budget
/// limit; a kept score at the threshold; a repair that gained
/// less than `plateau_points` over the best before it (a plateau); a repair while repairs
/// are left, there is something to repair and the budget pays for it; a second full
/// rewrite when configured and affordable; otherwise the gap analysis with the best
/// attempt so far (the resume as it is when none scored above it).
pub fn decide_route(state: &OptimizationState, spent: &Spent, repairable: bool) -> Route {
    let config = &state.config;
    let route = |next: RouteKey, reason: String| Route { next, reason };
    if let Some(stop) = &state.budget_stop {
        return route(RouteKey::BudgetReached, stop.message.clone());
    }
    let kept = kept_line(state);
    let score = state.ats_score.unwrap_or(0.0);
    if score >= config.score_threshold {
        return route(
            RouteKey::ProceedToGap,
            format!(
                "score {:.1} reaches the threshold {:.1}; {kept}",
                score * 100.0,
                config.score_threshold * 100.0
            ),
        );
    }
    if let [before @ .., last] = state.attempts.as_slice()
        && last.kind == AttemptKind::TargetedRepair
    {
        let best_before = before.iter().map(|a| a.gain()).fold(0.0, f64::max);
        let gain = (last.gain() - best_before) * 100.0;
        if gain < config.plateau_points {
            return route(
                RouteKey::ProceedToGap,
                format!(
                    "plateau: the repair gained {gain:.1} points over the best before it (less than {:.1}); {kept}",
                    config.plateau_points
                ),
            );
        }
    }
    if state.repair_attempts < config.max_repair_attempts && repairable {
        if affords(&config.budget, spent, REPAIR, COMPACT_SCORER) {
            return route(
                RouteKey::TargetedRepair,
                format!(
                    "score {:.1} is under {:.1}: repairing the weak bullets of the best so far",
                    score * 100.0,
                    config.score_threshold * 100.0
                ),
            );
        }
        return route(
            RouteKey::ProceedToGap,
            format!("the budget left does not cover a repair; {kept}"),
        );
    }
    if config.second_full_rewrite
        && state.rewrite_attempts < 2
        && affords(&config.budget, spent, FULL_REWRITE, COMPACT_SCORER)
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
    let why = if state.optimized_bullets.is_empty() {
        "no rewrite to repair"
    } else if state.repair_attempts < config.max_repair_attempts {
        "no bullet a repair could honestly improve"
    } else {
        "attempts exhausted"
    };
    route(RouteKey::ProceedToGap, format!("{why}: {kept}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::OptimizeConfig;
    use crate::records::Ids;
    use crate::records::{
        AttemptScore, BudgetLimit, BudgetStop, RewrittenBullet, ScoreBreakdown, ScoringLane,
    };

    fn state(scores: &[(AttemptKind, f64)]) -> OptimizationState {
        let ids = Ids {
            tenant_id: "t".into(),
            user_id: "u".into(),
            session_id: "s".into(),
            resume_id: "r".into(),
        };
        let mut state = OptimizationState::new(
            ids,
            String::new(),
            Vec::new(),
            Vec::new(),
            OptimizeConfig::default(),
        );
        let baseline = scores.first().map_or(0.0, |(_, score)| *score);
        for (i, (kind, score)) in scores.iter().enumerate() {
            let bullets = if *kind == AttemptKind::Original {
                Vec::new()
            } else {
                vec![RewrittenBullet {
                    id: "B1".into(),
                    replaces: "C1.1".into(),
                    original: "Built things".into(),
                    text: format!("Built things, attempt {i}"),
                    sources: vec!["C1".into()],
                }]
            };
            state.attempts.push(AttemptScore {
                attempt: i as u32,
                kind: *kind,
                score: *score,
                breakdown: ScoreBreakdown::default(),
                lane: ScoringLane::Rules,
                confidence: 0.9,
                rules_score: *score,
                baseline,
                bullets,
            });
            match kind {
                AttemptKind::FullRewrite => state.rewrite_attempts += 1,
                AttemptKind::TargetedRepair => state.repair_attempts += 1,
                AttemptKind::Original => {}
            }
            let kept = state.kept_attempt().unwrap().clone();
            state.ats_score = Some(kept.score);
            state.optimized_bullets = kept.bullets;
        }
        state
    }

    #[test]
    fn a_rewrite_below_the_original_is_not_kept_and_the_reason_says_so() {
        let s = state(&[
            (AttemptKind::Original, 0.77),
            (AttemptKind::FullRewrite, 0.768),
        ]);
        assert_eq!(s.kept_attempt().unwrap().attempt, 0);
        let route = decide_route(&s, &Spent::default(), false);
        assert_eq!(route.next, RouteKey::ProceedToGap);
        assert!(
            route.reason.contains("the resume's own bullets are kept")
                && route.reason.contains("76.8 against 77.0"),
            "{}",
            route.reason
        );
    }

    #[test]
    fn the_best_attempt_is_kept_not_the_last() {
        let mut s = state(&[
            (AttemptKind::Original, 0.5),
            (AttemptKind::FullRewrite, 0.7),
            (AttemptKind::TargetedRepair, 0.65),
        ]);
        assert_eq!(s.kept_attempt().unwrap().attempt, 1);
        assert_eq!(s.ats_score, Some(0.7));
        s.config.max_repair_attempts = 3;
        let route = decide_route(&s, &Spent::default(), true);
        assert!(route.reason.starts_with("plateau"), "{}", route.reason);
        assert!(
            route.reason.contains("attempt 1 is kept"),
            "{}",
            route.reason
        );
    }

    #[test]
    fn a_score_at_the_threshold_proceeds() {
        let s = state(&[
            (AttemptKind::Original, 0.5),
            (AttemptKind::FullRewrite, 0.75),
        ]);
        assert_eq!(
            decide_route(&s, &Spent::default(), true).next,
            RouteKey::ProceedToGap
        );
    }

    #[test]
    fn a_low_score_with_something_to_repair_is_repaired() {
        let s = state(&[
            (AttemptKind::Original, 0.5),
            (AttemptKind::FullRewrite, 0.6),
        ]);
        let route = decide_route(&s, &Spent::default(), true);
        assert_eq!(route.next, RouteKey::TargetedRepair);
        assert!(route.reason.contains("60.0 is under 75.0"));
    }

    #[test]
    fn nothing_to_repair_proceeds_with_the_best_so_far() {
        let s = state(&[
            (AttemptKind::Original, 0.5),
            (AttemptKind::FullRewrite, 0.6),
        ]);
        let route = decide_route(&s, &Spent::default(), false);
        assert_eq!(route.next, RouteKey::ProceedToGap);
        assert!(
            route
                .reason
                .contains("no bullet a repair could honestly improve")
        );
    }

    #[test]
    fn a_repair_that_gains_less_than_a_point_is_a_plateau() {
        let mut s = state(&[
            (AttemptKind::Original, 0.5),
            (AttemptKind::FullRewrite, 0.6),
            (AttemptKind::TargetedRepair, 0.605),
        ]);
        s.config.max_repair_attempts = 3;
        let route = decide_route(&s, &Spent::default(), true);
        assert_eq!(route.next, RouteKey::ProceedToGap);
        assert!(route.reason.starts_with("plateau"), "{}", route.reason);
        s.attempts.last_mut().unwrap().score = 0.65;
        assert_eq!(
            decide_route(&s, &Spent::default(), true).next,
            RouteKey::TargetedRepair
        );
    }

    #[test]
    fn repairs_spent_proceed_unless_a_second_full_rewrite_is_configured() {
        let mut s = state(&[
            (AttemptKind::Original, 0.5),
            (AttemptKind::FullRewrite, 0.6),
            (AttemptKind::TargetedRepair, 0.65),
        ]);
        let route = decide_route(&s, &Spent::default(), true);
        assert_eq!(route.next, RouteKey::ProceedToGap);
        assert!(route.reason.starts_with("attempts exhausted"));
        s.config.second_full_rewrite = true;
        assert_eq!(
            decide_route(&s, &Spent::default(), true).next,
            RouteKey::FullRewrite
        );
        s.rewrite_attempts = 2;
        assert_eq!(
            decide_route(&s, &Spent::default(), true).next,
            RouteKey::ProceedToGap
        );
    }

    #[test]
    fn a_budget_stop_goes_to_aggregation_whatever_the_score() {
        let mut s = state(&[
            (AttemptKind::Original, 0.5),
            (AttemptKind::FullRewrite, 0.2),
        ]);
        s.budget_stop = Some(BudgetStop {
            limit: BudgetLimit::Tokens,
            at_node: "ats_scoring".into(),
            message: "7100 tokens used of 7000 allowed".into(),
        });
        assert_eq!(
            decide_route(&s, &Spent::default(), true).next,
            RouteKey::BudgetReached
        );
    }

    #[test]
    fn a_repair_the_budget_cannot_pay_for_is_not_attempted() {
        let s = state(&[
            (AttemptKind::Original, 0.5),
            (AttemptKind::FullRewrite, 0.6),
        ]);
        let spent = Spent {
            tokens: 6_500,
            ..Spent::default()
        };
        let route = decide_route(&s, &spent, true);
        assert_eq!(route.next, RouteKey::ProceedToGap);
        assert!(route.reason.contains("budget"));
    }
}
