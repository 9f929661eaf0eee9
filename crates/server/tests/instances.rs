#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Two server instances sharing one set of sessions (one store, leases, event fan-out and
//! session control, in-process here; PostgreSQL and NATS in a deployment): a session
//! started on one is streamed, answered and cancelled through the other.

mod common;

use std::sync::Arc;

use agent_runtime::sessions::{
    InMemorySessionStore, InProcessControl, InProcessFanout, InProcessLeases, SessionStore,
};
use agent_server::AgentServer;
use common::{Echo, TestServer, names};
use serde_json::json;

const FIRST: &str = "coordinator:approve:1";
const SECOND: &str = "coordinator:approve:2";

/// Two instances on shared coordination, each with its own echo product.
async fn two_instances() -> (Arc<InMemorySessionStore>, [Arc<Echo>; 2], [TestServer; 2]) {
    let store = Arc::new(InMemorySessionStore::new());
    let leases = Arc::new(InProcessLeases::default());
    let fanout = Arc::new(InProcessFanout::default());
    let control = Arc::new(InProcessControl::default());
    let instance = |echo: Arc<Echo>| {
        AgentServer::new(store.clone())
            .with_product(echo)
            .with_leases(leases.clone())
            .with_fanout(fanout.clone())
            .with_control(control.clone())
    };
    let echoes = [Arc::new(Echo::new("echo")), Arc::new(Echo::new("echo"))];
    let a = TestServer::spawn(instance(echoes[0].clone())).await;
    let b = TestServer::spawn(instance(echoes[1].clone())).await;
    (store, echoes, [a, b])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_started_on_one_instance_is_streamed_and_answered_on_the_other() {
    let (store, echoes, [a, b]) = two_instances().await;
    let session = a.start("echo", json!({"text": "hi"})).await;

    // Streamed from b while it runs on a.
    let mut stream = b.stream(&session, None).await;
    let opened = stream.until("gate_open").await;
    assert_eq!(names(&opened), [(1, "started"), (2, "gate_open")]);
    assert_eq!(echoes[0].runs.lock().unwrap().len(), 1);
    assert!(echoes[1].runs.lock().unwrap().is_empty(), "b runs nothing");

    // Answered on b: passed to a, which runs it; the answer is stored before b replies.
    assert_eq!(
        b.respond(&session, FIRST, json!("yes")).await,
        (200, json!({"ok": true}))
    );
    assert_eq!(
        store.gates(&session.id).await.unwrap()[0].answer,
        Some(json!("yes"))
    );
    let next = stream.until("gate_open").await;
    assert_eq!(
        names(&next),
        [(3, "gate_answered"), (4, "approved"), (5, "gate_open")]
    );
    // A second answer to the same gate is refused on either instance, as a's refusal.
    let (code, body) = b.respond(&session, FIRST, json!("again")).await;
    assert_eq!(
        (code, &body["error"]["code"]),
        (409, &json!("already_answered"))
    );
    // b's status shows the pending gate it does not run.
    let status = b.status(&session).await;
    assert_eq!(status["pending_gates"][0]["id"], SECOND);

    // The second gate on a; b's stream sees the session through to its end.
    assert_eq!(a.respond(&session, SECOND, json!("ok")).await.0, 200);
    let rest = stream.rest().await;
    assert_eq!(
        names(&rest),
        [
            (6, "gate_answered"),
            (7, "confirmed"),
            (8, "session_complete")
        ]
    );
    // Once it has ended, neither takes an answer.
    let (code, body) = b.respond(&session, SECOND, json!(2)).await;
    assert_eq!(
        (code, &body["error"]["code"]),
        (409, &json!("session_not_running"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_cancelled_through_the_instance_that_does_not_run_it() {
    let (store, _echoes, [a, b]) = two_instances().await;
    let session = a.start("echo", json!({"text": "stop me"})).await;
    let mut stream = a.stream(&session, None).await;
    stream.until("gate_open").await;

    let response = b
        .client
        .post(b.url(&format!("/api/echo/{}/cancel", session.id)))
        .bearer_auth(&session.token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["status"], "cancelled", "{body}");
    let rest = stream.rest().await;
    assert_eq!(
        rest.last().map(|e| e.event.as_str()),
        Some("session_cancelled")
    );
    let record = store.get(&session.id).await.unwrap().unwrap();
    assert_eq!(record.error.as_deref(), Some("cancelled by its user"));
    // A gate answer after that is refused.
    let (code, _) = b.respond(&session, FIRST, json!("late")).await;
    assert_eq!(code, 409);
}
