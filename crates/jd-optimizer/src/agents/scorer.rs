//! The scorer (spec 003 sections 3.5 and 3.7.1): the rules first, then, by their
//! confidence, no model, a compact model call on the weak categories, or the full model
//! scorer (light tier, temperature 0; values clamped; 0.5 with a recorded error when the
//! model fails twice). The first scoring also scores the resume's own bullets (attempt
//! 0), by the rules, so the result shows what the rewrite gained.

use agent_llm::ModelTier;

use crate::agents::rewriter::breakdown_line;
use crate::budget::{COMPACT_SCORER, FULL_SCORER, NOTHING, Spent, affords};
use crate::deps::Deps;
use crate::events::OptimizeEvent;
use crate::llm::{Ask, CallError, Node};
use crate::scoring::{ModelScores, RuleScore, lane_for, merge_scores, score_by_rules};
use crate::state::{
    AttemptKind, AttemptScore, Category, Degrade, OptimizationState, ScoreBreakdown, ScoringLane,
};

/// The agent's name in token counts and errors.
pub const AGENT: &str = "ats_scorer";

/// The system prompt.
pub const SYSTEM: &str = "You are the ATS Scorer. Score the bullets against the job, 0.0 to 1.0, only in the categories asked: keywords (job keywords present), skills (required skills shown), experience (relevance to the duties), formatting (clear, concise, parseable). JSON only.";

/// The scorer's prompt for `categories`.
pub fn prompt(state: &OptimizationState, categories: &[Category], rules: &RuleScore) -> String {
    let analysis = state.jd_analysis.clone().unwrap_or_default();
    let mut prompt = format!(
        "Categories to score: {}\nKeywords: {}\nHard skills: {}\nDuties: {}\n",
        categories
            .iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        analysis
            .top_keywords(state.config.prompt_keywords)
            .join(", "),
        analysis.hard_skills.join(", "),
        analysis.responsibilities.join("; "),
    );
    if categories.len() < Category::ALL.len() {
        prompt.push_str(&format!(
            "Rule-based check: {}; keywords missing: {}\n",
            breakdown_line(&rules.breakdown),
            rules.missing_keywords.join(", ")
        ));
    }
    prompt.push_str("Bullets:\n");
    for bullet in &state.optimized_bullets {
        prompt.push_str(&format!("- {}\n", bullet.text));
    }
    prompt
}

/// The rules' score of the current bullets.
pub fn rule_score(state: &OptimizationState) -> RuleScore {
    let analysis = state.jd_analysis.clone().unwrap_or_default();
    let bullets: Vec<&str> = state
        .optimized_bullets
        .iter()
        .map(|b| b.text.as_str())
        .collect();
    score_by_rules(&analysis, &bullets, state.config.score_threshold)
}

/// Scores the resume's own bullets (of the chunks the rewriter saw), once.
fn score_baseline(ctx: &Node) {
    let baseline = ctx.update(|s| {
        if !s.attempts.is_empty() {
            return None;
        }
        let analysis = s.jd_analysis.clone().unwrap_or_default();
        let rules = score_by_rules(&analysis, &s.original_bullets(), s.config.score_threshold);
        let attempt = AttemptScore {
            attempt: 0,
            kind: AttemptKind::Original,
            score: rules.overall(),
            breakdown: rules.breakdown,
            lane: ScoringLane::Rules,
            confidence: rules.confidence,
        };
        s.attempts.push(attempt.clone());
        Some(attempt)
    });
    if let Some(a) = baseline {
        ctx.emit(scored_event(&a));
    }
}

fn scored_event(a: &AttemptScore) -> OptimizeEvent {
    OptimizeEvent::Scored {
        attempt: a.attempt,
        score: a.score,
        breakdown: a.breakdown,
        lane: a.lane,
        confidence: a.confidence,
    }
}

/// Scores the current bullets and records the attempt; returns the rules' verdict for
/// the router.
pub async fn run(ctx: &Node, deps: &Deps) -> RuleScore {
    score_baseline(ctx);
    let (rules, wanted, rules_only, spent, budget, threshold) = ctx.read(|s| {
        let rules = rule_score(s);
        let wanted = lane_for(rules.confidence, &s.config);
        (
            rules,
            wanted,
            s.degrades.contains(&Degrade::RuleScoringOnly),
            Spent::of(s),
            s.config.budget,
            s.config.score_threshold,
        )
    });
    let weak = rules.weak_categories(threshold);
    let need = match wanted {
        ScoringLane::FullModel => FULL_SCORER,
        _ => COMPACT_SCORER,
    };
    let mut lane = match wanted {
        ScoringLane::CompactModel if weak.is_empty() => ScoringLane::Rules,
        other => other,
    };
    if lane != ScoringLane::Rules && (rules_only || !affords(&budget, &spent, need, NOTHING)) {
        if !rules_only {
            crate::nodes::degrade(
                ctx,
                Degrade::RuleScoringOnly,
                "the budget left does not cover a model scoring",
            );
        }
        lane = ScoringLane::Rules;
    }
    let categories: Vec<Category> = match lane {
        ScoringLane::FullModel => Category::ALL.to_vec(),
        _ => weak,
    };
    let breakdown = match lane {
        ScoringLane::Rules | ScoringLane::Fallback => rules.breakdown,
        ScoringLane::CompactModel | ScoringLane::FullModel => {
            let prompt = ctx.read(|s| prompt(s, &categories, &rules));
            let ask = Ask {
                agent: AGENT,
                tier: ModelTier::Light,
                system: SYSTEM.to_owned(),
                prompt,
                temperature: 0.0,
                max_tokens: 200,
            };
            match deps.caller.ask::<ModelScores>(ctx, ask).await {
                Ok(model) => merge_scores(rules.breakdown, &model, &categories),
                Err(error) => {
                    let (fallback, fallback_lane, note) = match (&error, lane) {
                        (CallError::Budget { .. }, _) | (_, ScoringLane::CompactModel) => (
                            rules.breakdown,
                            ScoringLane::Rules,
                            "the rules' scores are kept",
                        ),
                        _ => (
                            ScoreBreakdown {
                                keywords: 0.5,
                                skills: 0.5,
                                experience: 0.5,
                                formatting: 0.5,
                            },
                            ScoringLane::Fallback,
                            "the score defaults to 0.5",
                        ),
                    };
                    if let CallError::Budget { limit, message } = &error {
                        crate::nodes::stop_for_budget(ctx, *limit, message.clone());
                    } else {
                        let message = format!("the model scorer failed ({error}); {note}");
                        ctx.update(|s| s.record_error(AGENT, error.kind(), message.clone(), true));
                        ctx.emit(OptimizeEvent::Warning {
                            agent: AGENT.into(),
                            message,
                        });
                    }
                    lane = fallback_lane;
                    fallback
                }
            }
        }
    };
    let attempt = ctx.update(|s| {
        let kind = s.bullets_from.unwrap_or(AttemptKind::FullRewrite);
        let score = if lane == ScoringLane::Fallback {
            0.5
        } else {
            breakdown.overall()
        };
        let attempt = AttemptScore {
            attempt: s.rewrite_attempts + s.repair_attempts,
            kind,
            score,
            breakdown,
            lane,
            confidence: rules.confidence,
        };
        s.ats_score = Some(score);
        s.score_breakdown = Some(breakdown);
        s.attempts.push(attempt.clone());
        attempt
    });
    ctx.emit(scored_event(&attempt));
    rules
}
