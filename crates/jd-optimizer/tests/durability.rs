//! What a run leaves behind and picks up: a failed run resumes from its last checkpoint
//! without asking again for what it had, and a second full rewrite sees the first one's
//! score.
#![cfg(test)]

mod common;

use std::sync::Arc;

use agent_runtime::checkpoint::{CheckpointStore, InMemoryCheckpointStore};
use agent_runtime::{CollectingSink, Session};
use common::{Script, agent_of, gap_answer, optimizer, pair, run, sre_analysis, sre_rewrite};
use jd_optimizer::OptimizeEvent;
use jd_optimizer::state::OptimizationState;
use serde_json::json;

fn session(
    optimizer: &jd_optimizer::JdOptimizer,
    id: &str,
) -> Session<OptimizationState, OptimizeEvent> {
    let request = pair("senior-sre");
    let state = optimizer.initial_state(&request, id).unwrap();
    optimizer
        .equip(Session::new(id, state))
        .with_events(Arc::new(CollectingSink::<OptimizeEvent>::default()))
        .with_meter(optimizer.meter(&request))
}

#[tokio::test]
async fn a_failed_run_resumes_from_its_last_checkpoint_without_analysing_again() {
    let store: Arc<dyn CheckpointStore> = Arc::new(InMemoryCheckpointStore::new());
    // The first run analyses, then its rewrite fails twice: the run fails.
    let failing = Script::new()
        .json("analyzer", sre_analysis())
        .answer("rewriter", "no")
        .answer("rewriter", "still no");
    let (first, _) = optimizer(&failing);
    let outcome = first
        .run_durable(&session(&first, "s1"), store.clone())
        .await;
    assert!(outcome.is_err());

    // The next run of the same session has no analysis to give: it must not be asked.
    let working = Script::new()
        .json("rewriter", sre_rewrite())
        .json("gap", gap_answer());
    let (second, model) = optimizer(&working);
    let done = second
        .run_durable(&session(&second, "s1"), store)
        .await
        .unwrap();
    assert!(model.requests().iter().all(|r| agent_of(r) != "analyzer"));
    assert!(done.state.jd_analysis.is_some());
    assert_eq!(done.result.rewrite_attempts, 1);
    assert_eq!(done.result.attempts.len(), 2);
}

#[tokio::test]
async fn a_second_full_rewrite_is_told_the_best_score_so_far() {
    let weak = json!({"bullets": [{"text": "Wrote modules for 60 accounts", "sources": ["C2"]}]});
    let script = Script::new()
        .json("analyzer", sre_analysis())
        .json("rewriter", weak)
        .json("rewriter", sre_rewrite())
        .json("gap", gap_answer());
    let (optimizer, model) = optimizer(&script);
    let mut request = pair("senior-sre");
    request.config.max_repair_attempts = 0;
    request.config.second_full_rewrite = true;
    // The resume as it is scores about 81: a higher bar asks for a second rewrite.
    request.config.score_threshold = 0.9;
    let (outcome, _) = run(&optimizer, &request).await;
    assert_eq!(outcome.unwrap().result.rewrite_attempts, 2);
    let rewrites: Vec<_> = model
        .requests()
        .into_iter()
        .filter(|r| agent_of(r) == "rewriter")
        .collect();
    assert!(!rewrites[0].messages[0].text().contains("so far scored"));
    let second = rewrites[1].messages[0].text();
    assert!(
        second.contains("The best version so far scored 81%"),
        "{second}"
    );
    assert!(second.contains("keywords"), "{second}");
}

#[tokio::test]
async fn a_session_without_the_optimizers_model_is_refused_before_anything_runs() {
    let (optimizer, model) = optimizer(&Script::new());
    let request = pair("senior-sre");
    let state = optimizer.initial_state(&request, "bare").unwrap();
    let bare = Session::new("bare", state);
    let refused = optimizer
        .run_in(&bare, tokio_util::sync::CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, jd_optimizer::OptimizeError::NoModel(id) if id == "bare"),
        "{refused}"
    );
    assert!(refused.to_string().contains("JdOptimizer::equip"));
    assert!(model.requests().is_empty());
}
