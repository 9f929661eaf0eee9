//! Budgets and degrade modes (spec 003 sections 4.6.2 and 4.6.3): a reached limit goes
//! straight to aggregation with a warning; pressure skips the gap model, shortens the
//! rewrite, scores by rules only; the result always says which applied.
#![cfg(test)]

mod common;

use common::{Script, gap_answer, optimizer, pair, run, sre_analysis, sre_rewrite};
use jd_optimizer::records::{BudgetLimit, Degrade, GapSource, ScoringLane};
use jd_optimizer::{Budget, OptimizeEvent};

fn script() -> Script {
    Script::new()
        .json("analyzer", sre_analysis())
        .json("rewriter", sre_rewrite())
        .json("gap", gap_answer())
}

#[tokio::test]
async fn a_reached_call_limit_goes_straight_to_aggregation() {
    let (optimizer, model) = optimizer(&script());
    let mut request = pair("senior-sre");
    request.config.budget = Budget {
        max_calls: 1,
        ..Budget::default()
    };
    let (outcome, events) = run(&optimizer, &request).await;
    let done = outcome.unwrap();
    assert_eq!(model.call_count(), 1);
    assert_eq!(
        done.nodes,
        [
            "jd_analysis",
            "resume_retrieval",
            "bullet_rewriting",
            "result_aggregation"
        ]
    );
    let stop = done.result.budget.stop.clone().unwrap();
    assert_eq!(
        (stop.limit, stop.at_node.as_str()),
        (BudgetLimit::Calls, "bullet_rewriting")
    );
    assert!(
        done.result
            .warnings
            .iter()
            .any(|w| w.starts_with("budget reached"))
    );
    assert!(events.iter().any(|e| matches!(
        e,
        OptimizeEvent::BudgetReached {
            limit: BudgetLimit::Calls,
            ..
        }
    )));
    // Aggregation still scores (by rules) and reports the gaps, at no model cost.
    assert_eq!(done.result.scoring_lane, ScoringLane::Rules);
    assert_eq!(done.result.gap_source, GapSource::Deterministic);
}

#[tokio::test]
async fn a_budget_too_small_for_a_full_rewrite_shortens_it_then_scores_by_rules_and_skips_the_gap_model()
 {
    let (optimizer, model) = optimizer(&script());
    let mut request = pair("senior-sre");
    // 400 tokens go to the analysis; 1,000 more pay for a short rewrite, not a full one,
    // and what is left does not pay for the gap model.
    request.config.budget = Budget {
        max_tokens: 1_400,
        ..Budget::default()
    };
    let (outcome, _) = run(&optimizer, &request).await;
    let done = outcome.unwrap();
    assert_eq!(
        model.call_count(),
        2,
        "analysis and a short rewrite, nothing more"
    );
    // A short rewrite still covers whole chunks: the one experience chunk's 5 bullets.
    let rewrite = &model.requests()[1];
    let prompt = rewrite.messages[0].text();
    assert!(
        prompt.contains("[C2.1]") && prompt.contains("[C2.5]") && !prompt.contains("[C3."),
        "{prompt}"
    );
    assert!(prompt.ends_with("Rewrite the marked bullets."), "{prompt}");
    assert_eq!(rewrite.max_tokens, Some(430));
    assert_eq!(
        done.result.budget.degrades,
        [Degrade::SkipGapModel, Degrade::ShortRewrite]
    );
    assert_eq!(done.result.gap_source, GapSource::Deterministic);
    assert!(done.result.budget.stop.is_none());
}

#[tokio::test]
async fn no_budget_left_for_model_scoring_degrades_to_rules() {
    // A thin analysis makes the rules unsure (the full model scorer is wanted), but
    // two calls leave no room for it.
    let script = Script::new()
        .json("analyzer", serde_json::json!({"hard_skills": {"Kubernetes": 0.9}, "soft_skills": [], "responsibilities": [], "qualifications": []}))
        .json("rewriter", sre_rewrite());
    let (optimizer, model) = optimizer(&script);
    let mut request = pair("senior-sre");
    request.config.budget = Budget {
        max_calls: 2,
        ..Budget::default()
    };
    let (outcome, events) = run(&optimizer, &request).await;
    let done = outcome.unwrap();
    assert_eq!(model.call_count(), 2);
    assert!(
        done.result
            .budget
            .degrades
            .contains(&Degrade::RuleScoringOnly)
    );
    assert_eq!(done.result.scoring_lane, ScoringLane::Rules);
    assert!(events.iter().any(|e| matches!(
        e,
        OptimizeEvent::Degraded {
            mode: Degrade::RuleScoringOnly,
            ..
        }
    )));
}

#[tokio::test]
async fn the_wall_time_budget_cuts_a_slow_call_and_keeps_what_was_gathered() {
    let script = script();
    let slow = agent_llm::testing::LatencyModel::new(
        script.model(),
        std::time::Duration::from_millis(400),
    );
    let optimizer = jd_optimizer::JdOptimizer::new(
        std::sync::Arc::new(slow),
        agent_llm::testing::dry_run_router(),
    );
    let mut request = pair("senior-sre");
    request.config.budget = Budget {
        max_wall_ms: 600,
        ..Budget::default()
    };
    let (outcome, _) = run(&optimizer, &request).await;
    let done = outcome.unwrap();
    let stop = done.result.budget.stop.clone().unwrap();
    assert_eq!(stop.limit, BudgetLimit::WallTime);
    assert!(
        done.state.jd_analysis.is_some(),
        "the analysis made in time is kept"
    );
    assert!(done.result.budget.wall_ms < 2_000);
}

#[tokio::test]
async fn a_job_description_never_analysed_fails_the_run_with_the_reason() {
    let (optimizer, model) = optimizer(&script());
    let mut request = pair("senior-sre");
    request.config.budget = Budget {
        max_calls: 0,
        ..Budget::default()
    };
    let (outcome, _) = run(&optimizer, &request).await;
    let Err(jd_optimizer::OptimizeError::Failed { reason, state, .. }) = outcome else {
        panic!("a run with no analysis must fail")
    };
    assert!(
        reason.contains("the job description was not analysed")
            && reason.contains("0 model calls made of 0 allowed"),
        "{reason}"
    );
    assert!(state.jd_analysis.is_none() && state.final_result.is_none());
    assert_eq!(model.call_count(), 0);
}
