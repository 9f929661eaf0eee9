//! A gate carries an idle timeout: a session whose user stops answering ends `expired`
//! with an event, and frees its run slot for the next session.
#![cfg(test)]

mod common;

use agent_runtime::sessions::InProcessRunQueue;
use agent_server::{AgentServer, InMemorySessionStore, ServerConfig};
use common::{TestServer, fixtures, named, sample_body};
use resume_coordinator::ResumeProduct;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_session_expires_and_frees_its_run_slot() {
    let product = Arc::new(
        ResumeProduct::dry_run(fixtures())
            .unwrap()
            .with_gate_timeout(Duration::from_millis(800)),
    );
    // One run at a time: the second session waits in the queue for the first's slot.
    let server = AgentServer::new(Arc::new(InMemorySessionStore::new()))
        .with_product(product)
        .with_run_queue(Arc::new(InProcessRunQueue::default()))
        .with_config(ServerConfig {
            max_concurrent_runs: Some(1),
            ..ServerConfig::default()
        });
    let server = TestServer::spawn(server).await;
    let abandoned = server.start(sample_body()).await;
    let mut stream = server.stream(&abandoned, None).await;
    let first = stream.until("gate_open").await;
    let gate = first.last().unwrap().data["gate_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(gate, "coordinator:research_validation:1");
    let waiting = server.start(sample_body()).await;
    // While the first holds the only slot, the second does not start.
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(server.status(&waiting).await["events"], 0);

    // Nobody answers: the gate closes as expired and the session ends expired.
    let rest = stream.rest().await;
    let closed = named(&rest, "gate_closed");
    assert_eq!(closed.len(), 1, "{rest:?}");
    assert_eq!(closed[0].data["gate_id"], gate.as_str());
    assert_eq!(closed[0].data["reason"], "expired");
    let last = rest.last().unwrap();
    assert_eq!(last.event, "session_expired", "{rest:?}");
    assert!(
        last.data["reason"].as_str().unwrap().contains(&gate),
        "{}",
        last.data
    );
    let status = server.status(&abandoned).await;
    assert_eq!(status["status"], "expired");
    assert_eq!(status["pending_gates"], serde_json::json!([]));
    // An expired session takes no answer.
    assert_eq!(
        server
            .respond(&abandoned, &gate, serde_json::json!({"approved": true}))
            .await,
        409
    );

    // The slot is free: the second session runs and reaches its first gate.
    let mut next = server.stream(&waiting, None).await;
    let opened = next.until("gate_open").await;
    assert_eq!(opened.last().unwrap().event, "gate_open");
    assert!(named(&opened, "stage_start").len() >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_inside_an_agents_tool_expires_the_whole_session() {
    // The Craftsman asks for a section review inside its tool; without the session
    // ending, the agent would go on (or ask again) after the tool's error.
    let product = Arc::new(
        ResumeProduct::dry_run(fixtures())
            .unwrap()
            .with_gate_timeout(Duration::from_millis(300)),
    );
    let server = TestServer::with_product(product).await;
    let session = server.start(sample_body()).await;
    let mut stream = server.stream(&session, None).await;
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        if event.event == "gate_open" {
            let name = event.data["name"].as_str().unwrap();
            if !name.starts_with("section_review_") {
                let answer = common::approve_all(name, &event.data["payload"]);
                let gate = event.data["gate_id"].as_str().unwrap();
                assert_eq!(server.respond(&session, gate, answer).await, 200);
            }
        }
        events.push(event);
    }
    let opened: Vec<&str> = named(&events, "gate_open")
        .iter()
        .map(|e| e.data["gate_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        opened.last().copied(),
        Some("craftsman:section_review_summary:1")
    );
    assert_eq!(named(&events, "gate_closed")[0].data["reason"], "expired");
    assert_eq!(events.last().unwrap().event, "session_expired");
    // Nothing was asked again after the gate expired.
    assert_eq!(
        opened
            .iter()
            .filter(|g| g.contains("section_review"))
            .count(),
        1
    );
    assert_eq!(server.status(&session).await["status"], "expired");
}
