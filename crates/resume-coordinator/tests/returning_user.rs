//! A returning user: a finished session's evidence is kept under the start request's
//! `user_id`, and that user's next session is given it as `M*` evidence; another user's
//! is not.
#![cfg(test)]

mod common;

use std::sync::Arc;

use agent_runtime::documents::{DocumentStore, InMemoryDocumentStore};
use common::{TestServer, approve_all, fixtures, named, sample_body};
use resume_coordinator::ResumeProduct;
use serde_json::{Value, json};

/// Where the product keeps a user's master resume, as a JSON document per user id.
const MASTER_RESUMES: &str = "resume.master";

async fn master_resume(documents: &InMemoryDocumentStore, user: &str) -> Value {
    documents.get(MASTER_RESUMES, user).await.unwrap().unwrap()
}

fn evidence_ids(events: &[common::SseEvent]) -> Vec<String> {
    let intake = named(events, "intake_complete");
    intake[0].data["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

fn as_user(user: &str) -> Value {
    let mut body = sample_body();
    body["user_id"] = json!(user);
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_returning_users_earlier_evidence_reaches_their_next_session_only() {
    let documents = Arc::new(InMemoryDocumentStore::default());
    let product = ResumeProduct::dry_run(fixtures())
        .unwrap()
        .with_documents(documents.clone());
    let server = TestServer::with_product(Arc::new(product)).await;

    // A first session: nothing earlier; its answers are kept when it finishes.
    let first = server.start(as_user("ada")).await;
    let events = server.drive(&first, approve_all).await;
    assert_eq!(events.last().unwrap().event, "session_complete");
    assert!(!evidence_ids(&events).iter().any(|id| id.starts_with('M')));
    let master = master_resume(&documents, "ada").await;
    assert_eq!(master["sessions"], json!([first.id]));
    let answers: Vec<Value> = master["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["source"] == "interview")
        .cloned()
        .collect();
    assert!(!answers.is_empty(), "{master:#}");
    assert!(answers.iter().all(|a| a["question"].is_string()));

    // The same user again: the answers come back as M* items, the resume's own lines not
    // repeated.
    let second = server.start(as_user("ada")).await;
    let events = server.drive(&second, approve_all).await;
    assert_eq!(events.last().unwrap().event, "session_complete");
    let intake = &named(&events, "intake_complete")[0].data["evidence"];
    let earlier: Vec<&Value> = intake
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["id"].as_str().unwrap().starts_with('M'))
        .collect();
    assert_eq!(earlier.len(), answers.len(), "{intake:#}");
    assert!(
        earlier[0]["text"]
            .as_str()
            .unwrap()
            .starts_with(answers[0]["text"].as_str().unwrap()),
        "{intake:#}"
    );
    let master = master_resume(&documents, "ada").await;
    assert_eq!(master["sessions"], json!([second.id, first.id]));

    // Another user starts with nothing of Ada's.
    let other = server.start(as_user("bob")).await;
    let events = server.drive(&other, approve_all).await;
    assert!(!evidence_ids(&events).iter().any(|id| id.starts_with('M')));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_id_that_is_not_an_id_is_refused() {
    let server = TestServer::with_product(common::dry_run_product()).await;
    let response = server
        .client
        .post(server.url("/api/resume/start"))
        .json(&as_user("../../etc/passwd"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    assert!(body.to_string().contains("user_id"), "{body}");
}
