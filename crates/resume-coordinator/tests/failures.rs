//! Sessions that fail: a model error, a garbled resume.
#![cfg(test)]

mod common;

use agent_llm::testing::{FaultyModel, ScriptedModel};
use agent_llm::{LlmError, ModelRouter, ProviderKind};
use agent_server::testing::SseEvent;
use common::{TestServer, approve_all, fixture_text, named, sample_body};
use resume_coordinator::ResumeProduct;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn scripted(model: &Arc<ScriptedModel>) -> Arc<ResumeProduct> {
    Arc::new(ResumeProduct::new(
        model.clone(),
        ModelRouter::for_provider(ProviderKind::Local),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_refuses_the_call_fails_the_session_with_pipeline_error() {
    // Refused for a reason that would come back (not an outage: the session is not
    // parked to wait for it).
    let model = Arc::new(ScriptedModel::from_results([Err(LlmError::Auth {
        status: 401,
        message: "invalid api key".into(),
    })]));
    let server = TestServer::with_product(scripted(&model)).await;
    let session = server.start(sample_body()).await;
    let events = server
        .drive(&session, |name, _| panic!("gate {name}"))
        .await;
    let tail: Vec<&str> = events
        .iter()
        .rev()
        .take(2)
        .map(|e| e.event.as_str())
        .collect();
    assert_eq!(tail, ["session_failed", "pipeline_error"]);
    let error = &named(&events, "pipeline_error")[0].data;
    assert_eq!(error["stage"], "research");
    assert!(
        error["error"].as_str().unwrap().contains("invalid api key"),
        "{error}"
    );
    assert_eq!(model.call_count(), 1);
    let status = server.status(&session).await;
    assert_eq!(status["status"], "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbled_or_empty_resume_is_refused_before_any_model_call() {
    let model = Arc::new(ScriptedModel::from_texts(["never used"]));
    let server = TestServer::with_product(scripted(&model)).await;
    let cases = [
        (
            "%%%% #### @@@@ &&&& **** !!!! ~~~~ ^^^^ ab cd ef gh ij kl mn op qr st uv wx yz ab",
            "unreadable",
        ),
        (
            "\u{fffd}\u{fffd}\u{fffd}PK\u{3}\u{4}\u{14}\u{0}\u{6}\u{0}\u{8}\u{0}!\u{0}\u{fffd}\u{fffd}",
            "unreadable",
        ),
        ("   \n\n ", "empty"),
    ];
    for (resume, problem) in cases {
        let session = server
            .start(json!({"resume_text": resume, "job_description": fixture_text("job.txt")}))
            .await;
        let events = server
            .drive(&session, |name, _| panic!("gate {name}"))
            .await;
        let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
        assert_eq!(names, ["stage_start", "pipeline_error", "session_failed"]);
        assert_eq!(events[1].data["stage"], "intake");
        let error = events[1].data["error"].as_str().unwrap();
        assert!(error.contains(problem), "{error}");
        assert_eq!(events[2].data["error"], error);
    }
    assert_eq!(model.call_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_start_bodies_are_refused_with_422() {
    let model = Arc::new(ScriptedModel::from_texts(["never used"]));
    let server = TestServer::with_product(scripted(&model)).await;
    let response = server
        .client
        .post(server.url("/api/resume/start"))
        .json(&json!({"resume_text": "Jane"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_request");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("job_description")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_out_of_reach_parks_the_session_which_completes_once_it_answers() {
    // The first calls find no model (connection refused, after the agent's retries):
    // the session is parked, not failed, and taken up again until the model answers.
    let recorded = resume_coordinator::dry_run::recorded_model(&common::fixtures()).unwrap();
    let model = Arc::new(
        FaultyModel::new(recorded).fail_first(3, LlmError::Transport("connection refused".into())),
    );
    let product = Arc::new(ResumeProduct::new(
        model.clone(),
        resume_coordinator::dry_run::router(),
    ));
    let server = TestServer::with_product(product).await;
    let session = server.start(sample_body()).await;

    // Followed as a client does: answering gates, reconnecting with the last id when the
    // stream ends without a terminal event (the session parked).
    let mut events: Vec<SseEvent> = Vec::new();
    let terminal = |event: &SseEvent| event.event.starts_with("session_");
    while !events.last().is_some_and(terminal) {
        let last = events.last().map(|event| event.id);
        let mut stream = server.stream(&session, last).await;
        while let Some(event) = stream.next().await {
            if event.event == "gate_open" {
                let name = event.data["name"].as_str().unwrap();
                let gate = event.data["gate_id"].as_str().unwrap();
                let answer = approve_all(name, &event.data["payload"]);
                assert_eq!(server.respond(&session, gate, answer).await, 200, "{gate}");
            }
            events.push(event);
        }
    }
    assert!(model.injected_faults() >= 3);
    let kinds: Vec<&str> = events.iter().map(|event| event.event.as_str()).collect();
    assert_eq!(kinds.last(), Some(&"session_complete"), "{kinds:?}");
    assert!(!kinds.contains(&"pipeline_error"), "{kinds:?}");
    let ids: Vec<u64> = events.iter().map(|event| event.id).collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());
    assert_eq!(server.status(&session).await["status"], "complete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_works_past_its_timeout_fails_the_session_naming_it() {
    // Every recorded answer comes after 300 ms; an agent may work 100 ms.
    let product =
        ResumeProduct::dry_run_with_latency(common::fixtures(), Duration::from_millis(300))
            .unwrap()
            .with_agent_timeout(Duration::from_millis(100));
    let server = TestServer::with_product(Arc::new(product)).await;
    let (error, session) = server.failure_before_any_gate(sample_body()).await;
    assert_eq!(error["stage"], "research");
    assert_eq!(error["error"], "the strategist timed out after 100ms");
    assert_eq!(server.status(&session).await["status"], "failed");
}
