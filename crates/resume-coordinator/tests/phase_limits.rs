//! The Strategist's phases are limited in code, not only in its prompt (each phase's
//! tools and the question counts are unit-tested in `src/strategist/tests.rs`): a phase
//! that ends without its output fails the session saying so, and a live model's calls
//! are reported as progress events.
#![cfg(test)]

mod common;

use agent_llm::capacity::{CapacityLimited, ModelCapacity};
use agent_llm::testing::ScriptedModel;
use agent_llm::{ModelRouter, ProviderKind};
use common::{TestServer, approve_all, fixtures, named, sample_body};
use resume_coordinator::{ResumeProduct, dry_run};
use serde_json::json;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phase_that_ends_without_its_output_fails_the_session_with_the_reason() {
    // The Strategist answers at once, calling no tool, and again when reminded.
    let model = Arc::new(ScriptedModel::from_texts([
        "The research is done.",
        "Yes, it is done.",
    ]));
    let product = Arc::new(ResumeProduct::new(
        model.clone(),
        ModelRouter::for_provider(ProviderKind::Local),
    ));
    let server = TestServer::with_product(product).await;
    let (error, _) = server.failure_before_any_gate(sample_body()).await;
    assert_eq!(error["stage"], "research");
    assert_eq!(
        error["error"],
        "the strategist ended its research phase after 1 round(s) without being able to analyze the job description, even when reminded"
    );
    let reminder = model.requests()[1].messages[0].text();
    assert!(
        reminder.ends_with("You ended this phase without doing its work. Call analyze_jd now.\n"),
        "{reminder}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_on_a_server_with_slots_reports_its_calls_as_progress() {
    let recorded = dry_run::recorded_model(&fixtures()).unwrap();
    let limited = CapacityLimited::new(recorded, ModelCapacity::new(1));
    let product = Arc::new(ResumeProduct::new(Arc::new(limited), dry_run::router()));
    let server = TestServer::with_product(product).await;
    let session = server.start(sample_body()).await;
    let events = server.drive(&session, approve_all).await;
    assert_eq!(events.last().unwrap().event, "session_complete");
    let progress = named(&events, "progress");
    let finished: Vec<u64> = progress
        .iter()
        .filter(|e| e.data["activity"] == "finished")
        .map(|e| e.data["model_calls"].as_u64().unwrap())
        .collect();
    // Every model call of the session is reported once finished, counted in order.
    assert!(finished.len() > 10, "{finished:?}");
    assert!(finished.windows(2).all(|w| w[0] < w[1]), "{finished:?}");
    assert!(
        progress
            .iter()
            .all(|e| ["strategist", "craftsman", "producer"]
                .contains(&e.data["agent"].as_str().unwrap())),
        "{progress:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_research_correction_becomes_a_note_the_later_phases_read() {
    let recorded = Arc::new(
        dry_run::recorded_model(&fixtures())
            .unwrap()
            .with_request_log(true),
    );
    let product = Arc::new(ResumeProduct::new(recorded.clone(), dry_run::router()));
    let server = TestServer::with_product(product).await;
    let session = server.start(sample_body()).await;
    let correction = "Northwind Freight moves containers by rail, not by sea.";
    let events = server
        .drive(&session, |name, payload| match name {
            "research_validation" => json!({"approved": false, "feedback": correction}),
            _ => approve_all(name, payload),
        })
        .await;
    assert_eq!(events.last().unwrap().event, "session_complete");
    // The blueprint is designed with the candidate's correction among the research notes.
    let note = format!("The candidate corrects the research: {correction}");
    let read = recorded
        .requests()
        .iter()
        .any(|r| r.messages.iter().any(|m| m.text().contains(&note)));
    assert!(read, "no later request carries the correction");
}
