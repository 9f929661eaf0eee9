//! Spec 003's error matrix (section 7.3), row by row, against scripted agents.
#![cfg(test)]

mod common;

use std::sync::Arc;

use agent_llm::{EmbeddingModel, EmbeddingRequest, EmbeddingResponse, LlmError};
use agent_runtime::vectors::{
    LexicalQuery, MetadataFilter, VectorHit, VectorQuery, VectorRecord, VectorStore,
    VectorStoreError,
};
use async_trait::async_trait;
use common::{
    Script, gap_answer, helm_analysis, optimizer, pair, rewrite_with_a_thin_bullet, run,
    sre_analysis, sre_rewrite,
};
use jd_optimizer::index::ResumeIndex;
use jd_optimizer::records::{GapSource, RetrievalSource, ScoringLane};
use jd_optimizer::{OptimizeError, OptimizeEvent, OptimizeRequest};
use serde_json::json;

#[tokio::test]
async fn a_job_description_too_short_or_without_words_is_refused_before_any_model_call() {
    let (optimizer, model) = optimizer(&Script::new());
    let resume = pair("senior-sre").resume_text;
    for jd in [
        "Rust engineer",
        "12345 !!!! ---- 12345 !!!! ---- 12345 !!!! ---- 12345 ////",
    ] {
        let (outcome, events) = run(&optimizer, &OptimizeRequest::new(&resume, jd)).await;
        let error = outcome.unwrap_err();
        assert!(matches!(error, OptimizeError::Input(_)), "{error}");
        assert!(events.is_empty());
    }
    assert_eq!(model.call_count(), 0);
}

#[tokio::test]
async fn invalid_analyzer_output_is_asked_again_once() {
    let script = Script::new()
        .answer("analyzer", "Sure! The skills are Kubernetes and AWS.")
        .json("analyzer", sre_analysis())
        .json("rewriter", sre_rewrite())
        .json("gap", gap_answer());
    let (optimizer, model) = optimizer(&script);
    let (outcome, _) = run(&optimizer, &pair("senior-sre")).await;
    let done = outcome.unwrap();
    assert_eq!(done.result.token_usage["jd_analyzer"], 800);
    let second = &model.requests()[1];
    assert!(
        second.messages.len() > 1,
        "the re-ask carries the invalid answer and the error"
    );
}

#[tokio::test]
async fn an_analysis_that_stays_invalid_fails_the_run_and_keeps_its_state() {
    let script = Script::new()
        .answer("analyzer", "no json here")
        .answer("analyzer", "still none");
    let (optimizer, model) = optimizer(&script);
    let (outcome, _) = run(&optimizer, &pair("senior-sre")).await;
    let OptimizeError::Failed { reason, state, .. } = outcome.unwrap_err() else {
        panic!("expected a failed run")
    };
    assert!(reason.contains("JD analysis failed"), "{reason}");
    assert_eq!(model.call_count(), 2);
    assert_eq!(state.errors[0].agent_name, "jd_analyzer");
    assert_eq!(state.errors[0].error_type, "invalid_output");
    assert!(!state.errors[0].recoverable);
    assert!(!state.resume_sections.is_empty(), "the inputs are kept");
}

#[tokio::test]
async fn a_model_that_keeps_failing_fails_the_run() {
    // No answer scripted: every call is a server error (after the provider's retries).
    let (optimizer, _) = optimizer(&Script::new());
    let (outcome, _) = run(&optimizer, &pair("senior-sre")).await;
    let OptimizeError::Failed { state, .. } = outcome.unwrap_err() else {
        panic!("expected a failed run")
    };
    assert_eq!(state.errors[0].error_type, "model_error");
}

#[tokio::test]
async fn a_rewrite_that_stays_invalid_fails_the_run_with_the_analysis_kept() {
    let script = Script::new()
        .json("analyzer", sre_analysis())
        .answer("rewriter", "Here are your bullets: great ones")
        .answer("rewriter", "[not, json");
    let (optimizer, _) = optimizer(&script);
    let (outcome, _) = run(&optimizer, &pair("senior-sre")).await;
    let OptimizeError::Failed { reason, state, .. } = outcome.unwrap_err() else {
        panic!("expected a failed run")
    };
    assert!(reason.contains("rewrite failed"), "{reason}");
    assert!(state.jd_analysis.is_some());
    assert_eq!(state.errors.last().unwrap().agent_name, "resume_rewriter");
}

/// An analysis so thin the rules cannot be confident: the full model scorer runs.
fn thin_analysis() -> serde_json::Value {
    json!({"hard_skills": {"Kubernetes": 0.9}, "soft_skills": [], "responsibilities": [],
           "qualifications": []})
}

fn one_bullet() -> serde_json::Value {
    json!({"bullets": [{"text": "Operated 14 Kubernetes clusters on AWS serving 2,500 pods across 3 regions", "sources": ["C2"]}]})
}

#[tokio::test]
async fn a_scorer_that_stays_invalid_leaves_the_rules_scores_with_the_error_recorded() {
    let script = Script::new()
        .json("analyzer", thin_analysis())
        .json("rewriter", one_bullet())
        .answer("scorer", "eighty percent")
        .answer("scorer", "0.8");
    let (optimizer, _) = optimizer(&script);
    let (outcome, events) = run(&optimizer, &pair("senior-sre")).await;
    let result = outcome.unwrap().result;
    assert_eq!(result.scoring_lane, ScoringLane::Rules);
    let scored = &result.attempts[1];
    assert_eq!(
        (scored.lane, scored.score),
        (ScoringLane::Rules, scored.rules_score)
    );
    assert_eq!(scored.baseline, result.attempts[0].score);
    let error = result
        .errors
        .iter()
        .find(|e| e.agent_name == "ats_scorer")
        .unwrap();
    assert!(error.recoverable && error.error_message.contains("the rules' scores are kept"));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, OptimizeEvent::Warning { agent, .. } if agent == "ats_scorer"))
    );
}

#[tokio::test]
async fn a_repair_that_stays_invalid_keeps_the_best_bullets_and_is_no_new_attempt() {
    let script = Script::new()
        .json("analyzer", helm_analysis())
        .json("rewriter", rewrite_with_a_thin_bullet())
        .answer("repair", "no JSON here")
        .answer("repair", "still none")
        .json("gap", gap_answer());
    let (optimizer, _) = optimizer(&script);
    let mut request = pair("senior-sre");
    request.config.score_threshold = 0.9;
    let (outcome, events) = run(&optimizer, &request).await;
    let result = outcome.unwrap().result;
    assert_eq!(result.repair_attempts, 1);
    // The original and the rewrite: the failed repair is not scored as a third attempt.
    assert_eq!(result.attempts.len(), 2, "{:?}", result.attempts);
    assert_eq!(result.kept_attempt, 1);
    assert_eq!(result.optimized_bullets, result.attempts[1].bullets);
    assert!(
        result
            .errors
            .iter()
            .any(|e| e.agent_name == "resume_rewriter")
    );
    assert!(events.iter().any(
        |e| matches!(e, OptimizeEvent::Warning { message, .. } if message.contains("the previous bullets are kept"))
    ));
}

#[tokio::test]
async fn scores_out_of_range_are_clamped() {
    let script = Script::new()
        .json("analyzer", thin_analysis())
        .json("rewriter", one_bullet())
        .json(
            "scorer",
            json!({"original": {"keywords": 0.5, "skills": 0.5, "experience": 0.5, "formatting": 0.5},
                   "rewrite": {"keywords": 1.7, "skills": -0.2, "experience": 0.9, "formatting": 0.8}}),
        );
    let (optimizer, _) = optimizer(&script);
    let (outcome, _) = run(&optimizer, &pair("senior-sre")).await;
    let result = outcome.unwrap().result;
    assert_eq!(result.scoring_lane, ScoringLane::FullModel);
    assert_eq!(
        (
            result.score_breakdown.keywords,
            result.score_breakdown.skills
        ),
        (1.0, 0.0)
    );
}

#[tokio::test]
async fn a_gap_analyzer_that_stays_invalid_gives_the_text_checks_gaps() {
    let script = Script::new()
        .json("analyzer", sre_analysis())
        .json("rewriter", sre_rewrite())
        .answer("gap", "you lack Go")
        .answer("gap", "really, Go");
    let (optimizer, _) = optimizer(&script);
    let (outcome, _) = run(&optimizer, &pair("senior-sre")).await;
    let result = outcome.unwrap().result;
    assert_eq!(result.gap_source, GapSource::Deterministic);
    assert_eq!(result.gap_report.missing_skills, ["Go"]);
    assert!(
        result
            .errors
            .iter()
            .any(|e| e.agent_name == "gap_analyzer" && e.recoverable)
    );
}

/// A vector store whose server is down.
struct DownStore;

#[async_trait]
impl VectorStore for DownStore {
    async fn upsert(&self, _: &str, _: &[VectorRecord]) -> Result<(), VectorStoreError> {
        Err(VectorStoreError::Backend("connection refused".into()))
    }
    async fn delete(&self, _: &str, _: &str, _: &[String]) -> Result<u64, VectorStoreError> {
        Err(VectorStoreError::Backend("connection refused".into()))
    }
    async fn delete_matching(
        &self,
        _: &str,
        _: &str,
        _: &MetadataFilter,
    ) -> Result<u64, VectorStoreError> {
        Err(VectorStoreError::Backend("connection refused".into()))
    }
    async fn query(&self, _: &str, _: &VectorQuery) -> Result<Vec<VectorHit>, VectorStoreError> {
        Err(VectorStoreError::Backend("connection refused".into()))
    }
    async fn lexical(&self, _: &str, _: &LexicalQuery) -> Result<Vec<VectorHit>, VectorStoreError> {
        Err(VectorStoreError::Backend("connection refused".into()))
    }
    async fn count(&self, _: &str, _: &str) -> Result<u64, VectorStoreError> {
        Err(VectorStoreError::Backend("connection refused".into()))
    }
}

/// Three-dimensional vectors from letter counts: enough to reach the store.
struct LetterEmbeddings;

#[async_trait]
impl EmbeddingModel for LetterEmbeddings {
    async fn embed(&self, request: EmbeddingRequest) -> Result<EmbeddingResponse, LlmError> {
        let vectors = request
            .inputs
            .iter()
            .map(|t| vec![t.len() as f32, t.matches('e').count() as f32 + 1.0, 1.0])
            .collect();
        Ok(EmbeddingResponse {
            model: "letters".into(),
            vectors,
            usage: Default::default(),
        })
    }
}

#[tokio::test]
async fn a_store_that_is_down_falls_back_to_the_raw_sections_with_a_warning() {
    let script = Script::new()
        .json("analyzer", sre_analysis())
        .json("rewriter", sre_rewrite())
        .json("gap", gap_answer());
    let (optimizer, _) = optimizer(&script);
    let optimizer = optimizer.with_index(ResumeIndex::new(
        Arc::new(LetterEmbeddings),
        Arc::new(DownStore),
    ));
    let (outcome, events) = run(&optimizer, &pair("senior-sre")).await;
    let done = outcome.unwrap();
    assert_eq!(done.result.retrieval_source, RetrievalSource::RawSections);
    assert!(!done.state.relevant_chunks.is_empty());
    assert!(
        done.result
            .warnings
            .iter()
            .any(|w| w.contains("vector store failed") && w.contains("connection refused"))
    );
    let error = done
        .result
        .errors
        .iter()
        .find(|e| e.agent_name == "resume_retriever")
        .unwrap();
    assert_eq!(error.error_type, "store_unavailable");
    assert!(
        events.iter().any(
            |e| matches!(e, OptimizeEvent::Warning { agent, .. } if agent == "resume_retriever")
        )
    );
}

/// Counts the embedding requests it answers.
#[derive(Default)]
struct CountingEmbeddings(std::sync::atomic::AtomicUsize);

#[async_trait]
impl EmbeddingModel for CountingEmbeddings {
    async fn embed(&self, request: EmbeddingRequest) -> Result<EmbeddingResponse, LlmError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        LetterEmbeddings.embed(request).await
    }
}

#[tokio::test]
async fn a_retrieval_embeds_its_query_once_and_the_resume_once() {
    let script = Script::new()
        .json("analyzer", sre_analysis())
        .json("rewriter", sre_rewrite())
        .json("gap", gap_answer());
    let (optimizer, _) = optimizer(&script);
    let embedder = Arc::new(CountingEmbeddings::default());
    let store = agent_backends::SqliteSessionStore::in_memory()
        .await
        .unwrap()
        .vectors();
    let optimizer = optimizer.with_index(ResumeIndex::new(embedder.clone(), Arc::new(store)));
    let (outcome, _) = run(&optimizer, &pair("senior-sre")).await;
    assert_eq!(
        outcome.unwrap().result.retrieval_source,
        RetrievalSource::Hybrid
    );
    // The query once (it probes the index, then searches), the resume's chunks once.
    assert_eq!(embedder.0.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_cancelled_run_fails_with_what_it_gathered() {
    let script = Script::new().json("analyzer", sre_analysis());
    let (optimizer, _) = optimizer(&script);
    let cancel = tokio_util::sync::CancellationToken::new();
    cancel.cancel();
    let outcome = optimizer
        .optimize(
            &pair("senior-sre"),
            "s",
            Arc::new(agent_runtime::CollectingSink::default()),
            cancel,
        )
        .await;
    assert!(matches!(outcome, Err(OptimizeError::Failed { .. })));
}
