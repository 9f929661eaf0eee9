//! The scorer (spec 003 sections 3.5 and 3.7.1): the rules first, then, by their
//! confidence, no model, a compact model call on the weak categories, or the full model
//! scorer (light tier, temperature 0; values clamped; the rules' scores kept, with a
//! recorded error, when the model fails twice). Every attempt is scored on the same
//! bullets: the resume's own, each replaced by the attempt's rewrite when it has one. The
//! first scoring also scores the resume's own bullets (attempt 0) by the rules, and the
//! first model scoring of a category scores them beside the rewrite in the same call, so
//! every attempt is compared with the resume as it is on one scale; the best is kept.

use agent_llm::ModelTier;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::budget::{COMPACT_SCORER, COMPARED_SCORER, FULL_SCORER, NOTHING, affords};
use crate::bullets::{bullet_slots, bullet_texts, current_bullets};
use crate::deps::Deps;
use crate::events::OptimizeEvent;
use crate::llm::{Ask, CallError, Node, spent};
use crate::records::{AttemptKind, AttemptScore, Category, Degrade, ScoreBreakdown, ScoringLane};
use crate::scoring::{ModelScores, RuleScore, lane_for, merge_scores, score_by_rules};
use crate::state::OptimizationState;

/// The agent's name in token counts and errors.
pub const AGENT: &str = "ats_scorer";

/// The system prompt.
pub const SYSTEM: &str = "You are the ATS Scorer. Score the bullets against the job, 0.0 to 1.0, in the categories asked and no other.";

/// The scorer's answer when the resume's own bullets are scored beside the rewrite's
/// (the first model scoring of these categories in a run): both on one scale.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ComparedScores {
    /// The resume's own bullets.
    pub original: ModelScores,
    /// The rewritten bullets.
    pub rewrite: ModelScores,
}

fn bullet_list(bullets: &[String]) -> String {
    bullets.iter().map(|b| format!("- {b}\n")).collect()
}

/// What the model is told a category measures.
fn meaning(category: Category) -> &'static str {
    match category {
        Category::Keywords => "keywords (the job's keywords present)",
        Category::Skills => "skills (the required skills shown)",
        Category::Experience => "experience (relevance to the duties)",
        Category::Formatting => "formatting (clear, concise, parseable)",
    }
}

/// The scorer's prompt for `categories` on `bullets` (the attempt's); with `original`
/// (the resume's own bullets), both sets to be scored. It sends what the categories
/// asked need, once each: the keywords and skills for keywords and skills, the duties
/// for experience, and (for some of the categories only) the rules' scores of those.
pub fn prompt(
    state: &OptimizationState,
    categories: &[Category],
    rules: &RuleScore,
    bullets: &[String],
    original: Option<&[String]>,
) -> String {
    let analysis = state.jd_analysis.clone().unwrap_or_default();
    let asked = |c: Category| categories.contains(&c);
    let mut prompt = format!(
        "Categories to score: {}\n",
        categories
            .iter()
            .map(|c| meaning(*c))
            .collect::<Vec<_>>()
            .join(", "),
    );
    if asked(Category::Keywords) || asked(Category::Skills) {
        prompt.push_str(&analysis.keywords_and_other_skills(state.config.prompt_keywords));
    }
    if asked(Category::Experience) {
        prompt.push_str(&format!(
            "Duties: {}\n",
            analysis.responsibilities.join("; ")
        ));
    }
    if categories.len() < Category::ALL.len() {
        let scores: Vec<String> = categories
            .iter()
            .map(|c| format!("{} {:.0}%", c.as_str(), rules.breakdown.get(*c) * 100.0))
            .collect();
        prompt.push_str(&format!("Rule-based check: {}\n", scores.join(", ")));
    }
    match original {
        Some(original) => prompt.push_str(&both_sets(original, bullets)),
        None => prompt.push_str(&format!("Bullets:\n{}", bullet_list(bullets))),
    }
    prompt
}

/// The resume's own bullets and the rewrite's, each bullet sent once: the rewrite as the
/// numbered bullets it replaces (when both sets have one bullet per slot), else in full.
fn both_sets(original: &[String], rewrite: &[String]) -> String {
    if original.len() != rewrite.len() {
        return format!(
            "original (the resume as it is):\n{}rewrite:\n{}",
            bullet_list(original),
            bullet_list(rewrite)
        );
    }
    let numbered: String = original
        .iter()
        .enumerate()
        .map(|(at, b)| format!("{}. {b}\n", at + 1))
        .collect();
    let changed: String = original
        .iter()
        .zip(rewrite)
        .enumerate()
        .filter(|(_, (before, after))| before != after)
        .map(|(at, (_, after))| format!("{}. {after}\n", at + 1))
        .collect();
    format!(
        "original (the resume as it is):\n{numbered}rewrite (the original with these bullets replaced):\n{changed}"
    )
}

/// The rules' score of the current bullets (every slot, with the current rewrites).
pub fn rule_score(state: &OptimizationState) -> RuleScore {
    let analysis = state.jd_analysis.clone().unwrap_or_default();
    score_by_rules(
        &analysis,
        &current_bullets(state),
        state.config.score_threshold,
    )
}

/// The rules' score of the resume's own bullets.
pub fn original_rule_score(state: &OptimizationState) -> RuleScore {
    let analysis = state.jd_analysis.clone().unwrap_or_default();
    let original = bullet_texts(&bullet_slots(state), &[]);
    score_by_rules(&analysis, &original, state.config.score_threshold)
}

/// Scores the resume's own bullets (of the chunks the rewriter saw), once, by the rules.
fn score_baseline(ctx: &Node) {
    let baseline = ctx.update(|s| {
        if !s.attempts.is_empty() {
            return None;
        }
        let rules = original_rule_score(s);
        let attempt = AttemptScore {
            attempt: 0,
            kind: AttemptKind::Original,
            score: rules.overall(),
            breakdown: rules.breakdown,
            lane: ScoringLane::Rules,
            confidence: rules.confidence,
            rules_score: rules.overall(),
            baseline: rules.overall(),
            bullets: Vec::new(),
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
        baseline: a.baseline,
        breakdown: a.breakdown,
        lane: a.lane,
        confidence: a.confidence,
    }
}

/// The model's values for the resume's own bullets as [`ModelScores`].
fn original_model(state: &OptimizationState) -> ModelScores {
    let value = |c: Category| state.original_model_scores.get(&c).copied();
    ModelScores {
        keywords: value(Category::Keywords),
        skills: value(Category::Skills),
        experience: value(Category::Experience),
        formatting: value(Category::Formatting),
    }
}

/// Asks the model scorer about `categories` of the current bullets, and of the resume's
/// own bullets in the same call when the model has not scored those categories of them
/// yet. Returns the attempt's breakdown and the original's, both merged over the rules'.
async fn model_scores(
    ctx: &Node,
    deps: &Deps,
    categories: &[Category],
    rules: &RuleScore,
    original_rules: &RuleScore,
) -> Result<(ScoreBreakdown, ScoreBreakdown), CallError> {
    let (bullets, original, missing) = ctx.read(|s| {
        let missing = categories
            .iter()
            .any(|c| !s.original_model_scores.contains_key(c));
        (
            current_bullets(s),
            bullet_texts(&bullet_slots(s), &[]),
            missing,
        )
    });
    let ask = |prompt: String, max_tokens: u32| Ask {
        agent: AGENT,
        tier: ModelTier::Light,
        system: SYSTEM.to_owned(),
        prompt,
        temperature: 0.0,
        max_tokens,
        fields_in_system: true,
    };
    let rewrite = if missing {
        let prompt = ctx.read(|s| prompt(s, categories, rules, &bullets, Some(&original)));
        let answer = deps
            .caller
            .ask::<ComparedScores>(ctx, ask(prompt, 320))
            .await?;
        ctx.update(|s| {
            for &category in categories {
                if let Some(value) = answer.original.get(category) {
                    let value = if value.is_finite() {
                        value.clamp(0.0, 1.0)
                    } else {
                        0.5
                    };
                    s.original_model_scores.entry(category).or_insert(value);
                }
            }
        });
        answer.rewrite
    } else {
        let prompt = ctx.read(|s| prompt(s, categories, rules, &bullets, None));
        deps.caller
            .ask::<ModelScores>(ctx, ask(prompt, 200))
            .await?
    };
    let original = ctx.read(original_model);
    Ok((
        merge_scores(rules.breakdown, &rewrite, categories),
        merge_scores(original_rules.breakdown, &original, categories),
    ))
}

/// Scores the current bullets and the resume's own the same way, records the attempt,
/// and keeps the best attempt so far (the resume as it is unless one scores above it):
/// its bullets and score become the state's. Returns the rules' verdict on the kept
/// bullets, for the router.
pub async fn run(ctx: &Node, deps: &Deps) -> RuleScore {
    score_baseline(ctx);
    // A repair that changed nothing (it failed, or every patch was refused) is no new
    // attempt: the kept one stands.
    let unchanged = ctx.read(|s| {
        s.attempts
            .iter()
            .any(|a| a.attempt > 0 && a.bullets == s.optimized_bullets)
    });
    if unchanged {
        return ctx.read(rule_score);
    }
    let (rules, original_rules, wanted, rules_only, budget, threshold, compared) = ctx.read(|s| {
        let rules = rule_score(s);
        let wanted = lane_for(rules.confidence, &s.config);
        (
            rules,
            original_rule_score(s),
            wanted,
            s.degrades.contains(&Degrade::RuleScoringOnly),
            s.config.budget,
            s.config.score_threshold,
            s.original_model_scores.is_empty(),
        )
    });
    let spent = spent(ctx);
    let weak = rules.weak_categories(threshold);
    let need = match (wanted, compared) {
        (_, true) => COMPARED_SCORER,
        (ScoringLane::FullModel, false) => FULL_SCORER,
        _ => COMPACT_SCORER,
    };
    let mut lane = match wanted {
        ScoringLane::CompactModel if weak.is_empty() => ScoringLane::Rules,
        other => other,
    };
    if lane != ScoringLane::Rules && (rules_only || !affords(&budget, &spent, need, NOTHING)) {
        if !rules_only {
            crate::guards::degrade(
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
    let (breakdown, baseline) = if lane == ScoringLane::Rules {
        (rules.breakdown, original_rules.breakdown)
    } else {
        match model_scores(ctx, deps, &categories, &rules, &original_rules).await {
            Ok(scores) => scores,
            Err(error) => {
                if let CallError::Budget { limit, message } = &error {
                    crate::guards::stop_for_budget(ctx, *limit, message.clone());
                } else {
                    let message =
                        format!("the model scorer failed ({error}); the rules' scores are kept");
                    ctx.update(|s| s.record_error(AGENT, error.kind(), message.clone(), true));
                    ctx.emit(OptimizeEvent::Warning {
                        agent: AGENT.into(),
                        message,
                    });
                }
                lane = ScoringLane::Rules;
                (rules.breakdown, original_rules.breakdown)
            }
        }
    };
    let (attempt, kept) = ctx.update(|s| {
        let attempt = AttemptScore {
            attempt: s.rewrite_attempts + s.repair_attempts,
            kind: s.bullets_from.unwrap_or(AttemptKind::FullRewrite),
            score: breakdown.overall(),
            breakdown,
            lane,
            confidence: rules.confidence,
            rules_score: rules.overall(),
            baseline: baseline.overall(),
            bullets: s.optimized_bullets.clone(),
        };
        s.attempts.push(attempt.clone());
        let kept = s.kept_attempt().cloned().unwrap_or_else(|| attempt.clone());
        s.optimized_bullets = kept.bullets.clone();
        s.ats_score = Some(kept.score);
        s.score_breakdown = Some(kept.breakdown);
        s.bullets_from = Some(kept.kind);
        (attempt, kept.attempt)
    });
    ctx.emit(scored_event(&attempt));
    if kept == attempt.attempt {
        rules
    } else {
        ctx.read(rule_score)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::JdAnalysis;
    use crate::config::OptimizeConfig;
    use crate::records::Ids;

    #[test]
    fn the_prompt_sends_what_the_asked_categories_need_once() {
        let mut state = OptimizationState::new(
            Ids {
                tenant_id: "t".into(),
                user_id: "u".into(),
                session_id: "s".into(),
                resume_id: "r".into(),
            },
            "jd".into(),
            Vec::new(),
            Vec::new(),
            OptimizeConfig::default(),
        );
        state.jd_analysis = Some(
            JdAnalysis {
                hard_skills: vec!["Go".into(), "Kafka".into()],
                responsibilities: vec!["Run the platform".into()],
                ..JdAnalysis::default()
            }
            .normalized(),
        );
        let bullets = ["Ran 14 clusters".to_owned()];
        let rules = score_by_rules(state.jd_analysis.as_ref().unwrap(), &bullets, 0.75);
        let keywords = prompt(&state, &[Category::Keywords], &rules, &bullets, None);
        assert!(
            keywords.contains("Keywords (heaviest first): Go, Kafka"),
            "{keywords}"
        );
        assert!(!keywords.contains("Duties"), "{keywords}");
        assert!(
            !keywords.contains("skills "),
            "only the asked category's score: {keywords}"
        );
        assert_eq!(keywords.matches("Kafka").count(), 1, "{keywords}");
        let experience = prompt(&state, &[Category::Experience], &rules, &bullets, None);
        assert!(
            experience.contains("Duties: Run the platform"),
            "{experience}"
        );
        assert!(!experience.contains("Keywords"), "{experience}");
    }
}
