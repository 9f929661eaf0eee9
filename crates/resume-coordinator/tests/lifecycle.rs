//! A resume session cancelled by its user, and one parked by a server that shuts down
//! and resumed by the next: neither reports a pipeline error, and the parked one completes
//! with every stage started once.
#![cfg(test)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_backends::SqliteSessionStore;
use agent_server::AgentServer;
use common::{
    TestServer, approve_all, dry_run_product, every_stage, named, numbered_in_order, sample_body,
    stages_started,
};
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_session_stops_at_once_and_reports_no_pipeline_error() {
    let server = TestServer::with_product(dry_run_product()).await;
    let session = server.start(sample_body()).await;
    let mut stream = server.stream(&session, None).await;
    let before = stream.until("gate_open").await;
    let gate = before.last().unwrap().data["gate_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let asked = Instant::now();
    let response = server
        .client
        .post(server.url(&format!("{}/cancel", session.status_url)))
        .bearer_auth(&session.token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "{:?}",
        asked.elapsed()
    );
    let status = server.status(&session).await;
    assert_eq!(status["status"], "cancelled");

    let mut rest = Vec::new();
    while let Some(event) = stream.next().await {
        rest.push(event);
    }
    let kinds: Vec<&str> = rest.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(kinds, ["gate_closed", "session_cancelled"]);
    let answer = serde_json::json!({"answers": {"q1": "late"}});
    assert_eq!(server.respond(&session, &gate, answer).await, 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_parked_at_shutdown_resumes_on_the_next_server_and_completes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let open = || async {
        let store = SqliteSessionStore::open(&path).await.unwrap();
        AgentServer::new(Arc::new(store)).with_product(dry_run_product())
    };
    let first = open().await;
    let http = TestServer::spawn(first.clone()).await;
    let session = http.start(sample_body()).await;
    let mut stream = http.stream(&session, None).await;
    // Answer the gates up to the blueprint review, then shut the server down.
    let last_id = loop {
        let event = stream.next().await.unwrap();
        if event.event != "gate_open" {
            continue;
        }
        let name = event.data["name"].as_str().unwrap().to_owned();
        if name == "architect_review" {
            break event.id;
        }
        let gate = event.data["gate_id"].as_str().unwrap();
        assert_eq!(
            http.respond(&session, gate, approve_all(&name, &event.data["payload"]))
                .await,
            200
        );
    };
    drop(stream);
    first.park_all().await;
    http.task.abort();

    let second = open().await;
    assert_eq!(second.resume_unfinished().await.unwrap(), 1);
    let http = TestServer::spawn(second).await;
    let status = http.status(&session).await;
    assert_eq!(
        status["pending_gates"][0]["name"], "architect_review",
        "{status}"
    );
    // The client goes on where it was.
    let gate = status["pending_gates"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        http.respond(
            &session,
            &gate,
            approve_all("architect_review", &Value::Null)
        )
        .await,
        200
    );
    let mut stream = http.stream(&session, Some(last_id)).await;
    while let Some(event) = stream.next().await {
        if event.event == "gate_open" && event.data["gate_id"] != gate.as_str() {
            let name = event.data["name"].as_str().unwrap().to_owned();
            let id = event.data["gate_id"].as_str().unwrap();
            assert_eq!(
                http.respond(&session, id, approve_all(&name, &event.data["payload"]))
                    .await,
                200
            );
        }
    }
    // Replayed from the start: complete, no error, every stage once, ids 1, 2, 3, ...
    let events = http.replay(&session).await;
    assert_eq!(events.last().unwrap().event, "session_complete");
    assert!(named(&events, "pipeline_error").is_empty());
    assert!(
        named(&events, "gate_closed").is_empty(),
        "parking closes no gate"
    );
    assert_eq!(stages_started(&events), every_stage());
    assert!(numbered_in_order(&events));
}
