//! A session's lifecycle beyond completing: cancelled by its user, a gate that expires,
//! a server that shuts down and parks its sessions, a session that never gets anywhere,
//! and the OpenAPI document of the routes.
#![cfg(test)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_runtime::sessions::{InMemorySessionStore, SessionStatus, SessionStore};
use agent_server::{AgentServer, ServerConfig};
use common::{Echo, PATIENCE, TestServer, names};
use serde_json::{Value, json};

const FIRST: &str = "coordinator:approve:1";

async fn cancel(server: &TestServer, session: &common::Started) -> (u16, Value) {
    let response = server
        .client
        .post(server.url(&format!("{}/cancel", session.status_url)))
        .bearer_auth(&session.token)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_session_ends_at_once_closes_its_gates_and_takes_no_answer() {
    let store = Arc::new(InMemorySessionStore::new());
    let server = TestServer::spawn(
        AgentServer::new(store.clone())
            .with_checkpoints(store.checkpoints())
            .with_product(Arc::new(Echo::new("echo"))),
    )
    .await;
    let session = server.start("echo", json!({"text": "x"})).await;
    let mut stream = server.stream(&session, None).await;
    stream.until("gate_open").await;

    let asked = Instant::now();
    let (status, body) = cancel(&server, &session).await;
    assert_eq!(
        (status, body["status"].as_str()),
        (200, Some("cancelled")),
        "{body}"
    );
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(body["error"], "cancelled by its user");

    let rest = stream.rest().await;
    assert_eq!(
        names(&rest).iter().map(|(_, n)| *n).collect::<Vec<_>>(),
        ["gate_closed", "session_cancelled"]
    );
    assert_eq!(
        rest[0].data,
        json!({"type": "gate_closed", "gate_id": FIRST, "reason": "cancelled"})
    );
    assert_eq!(server.status(&session).await["status"], "cancelled");
    let (status, body) = server.respond(&session, FIRST, json!("yes")).await;
    assert_eq!(status, 409, "{body}");
    let gates = store.gates(&session.id).await.unwrap();
    assert_eq!(gates[0].closed.as_deref(), Some("cancelled"));
    // Once ended, it cannot be cancelled again.
    assert_eq!(cancel(&server, &session).await.0, 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_that_expires_is_closed_in_the_store_and_the_session_ends_expired() {
    let store = Arc::new(InMemorySessionStore::new());
    let server = TestServer::spawn(
        AgentServer::new(store.clone())
            .with_checkpoints(store.checkpoints())
            .with_product(Arc::new(Echo::new("echo"))),
    )
    .await;
    let session = server
        .start("echo", json!({"text": "x", "mode": "expire"}))
        .await;
    let events = tokio::time::timeout(PATIENCE, server.stream(&session, None).await.rest())
        .await
        .unwrap();
    let kinds: Vec<&str> = names(&events).iter().map(|(_, n)| *n).collect();
    assert_eq!(
        kinds,
        ["started", "gate_open", "gate_closed", "session_expired"]
    );
    assert_eq!(events[2].data["reason"], "expired");
    // A run that ends after its gate expired was abandoned: it ends `expired`, its
    // error as the reason.
    assert!(
        events[3].data["reason"]
            .as_str()
            .unwrap()
            .contains("timed out"),
        "{}",
        events[3].data
    );
    assert_eq!(server.status(&session).await["status"], "expired");
    let gates = store.gates(&session.id).await.unwrap();
    assert_eq!(gates[0].closed.as_deref(), Some("expired"));
    assert!(!gates[0].is_pending());
    assert!(
        server.status(&session).await["pending_gates"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_eq!(server.respond(&session, FIRST, json!("late")).await.0, 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_shuts_down_parks_its_sessions_and_the_next_one_resumes_them() {
    let store = Arc::new(InMemorySessionStore::new());
    let first = AgentServer::new(store.clone())
        .with_checkpoints(store.checkpoints())
        .with_product(Arc::new(Echo::new("echo")));
    let http = TestServer::spawn(first.clone()).await;
    let session = http.start("echo", json!({"text": "x"})).await;
    http.stream(&session, None).await.until("gate_open").await;

    tokio::time::timeout(PATIENCE, first.park_all())
        .await
        .unwrap();
    // Parked, not finished: the gate is still pending, no terminal event was written.
    let record = store.get(&session.id).await.unwrap().unwrap();
    assert!(!record.status.is_finished(), "{:?}", record.status);
    assert!(store.gates(&session.id).await.unwrap()[0].is_pending());
    let events = store.events_after(&session.id, 0).await.unwrap();
    assert_eq!(events.last().unwrap().event["type"], "gate_open");

    let second = AgentServer::new(store.clone())
        .with_checkpoints(store.checkpoints())
        .with_product(Arc::new(Echo::new("echo")));
    assert_eq!(second.resume_unfinished().await.unwrap(), 1);
    let http = TestServer::spawn(second).await;
    assert_eq!(
        http.respond_when_open(&session, FIRST, json!("yes")).await,
        200
    );
    assert_eq!(
        http.respond_when_open(&session, "coordinator:approve:2", json!("sure"))
            .await,
        200
    );
    let rest = http.stream(&session, None).await.rest().await;
    assert_eq!(rest.last().unwrap().event, "session_complete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_resumed_again_and_again_without_progress_is_given_up() {
    let store = Arc::new(InMemorySessionStore::new());
    // Echo's "hang" ignores cancellation: parking gives up on it quickly.
    let config = ServerConfig {
        max_resume_attempts: 2,
        park_timeout: Duration::from_millis(200),
        ..ServerConfig::default()
    };
    let server = |store: Arc<InMemorySessionStore>| {
        AgentServer::new(store.clone())
            .with_checkpoints(store.checkpoints())
            .with_config(config.clone())
            .with_product(Arc::new(Echo::new("echo")))
    };
    let first = server(store.clone());
    let http = TestServer::spawn(first.clone()).await;
    let session = http
        .start("echo", json!({"text": "x", "mode": "hang"}))
        .await;
    http.stream(&session, None).await.until("started").await;
    first.park_all().await;

    // Two restarts that find it where it was are allowed; the third gives up.
    for _ in 0..2 {
        let restarted = server(store.clone());
        assert_eq!(restarted.resume_unfinished().await.unwrap(), 1);
        restarted.park_all().await;
    }
    let last = server(store.clone());
    assert_eq!(last.resume_unfinished().await.unwrap(), 0);
    let record = store.get(&session.id).await.unwrap().unwrap();
    assert_eq!(record.status, SessionStatus::Failed);
    assert!(record.error.unwrap().contains("without progress"));
    let events = store.events_after(&session.id, 0).await.unwrap();
    assert_eq!(events.last().unwrap().event["type"], "session_failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_describes_the_routes_and_the_typed_contracts() {
    let http = TestServer::spawn(
        AgentServer::new(Arc::new(InMemorySessionStore::new()))
            .with_product(Arc::new(Echo::new("echo"))),
    )
    .await;
    let response = http
        .client
        .get(http.url("/api/echo/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let document: Value = response.json().await.unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    for path in [
        "/api/echo/start",
        "/api/echo/respond",
        "/api/echo/{session}",
        "/api/echo/{session}/stream",
        "/api/echo/{session}/cancel",
        "/api/echo/openapi.json",
    ] {
        assert!(document["paths"][path].is_object(), "{path} is missing");
    }
    let schemas = &document["components"]["schemas"];
    let start = schemas["StartRequest"]["$ref"].as_str().unwrap();
    let start = &schemas[start.trim_start_matches("#/components/schemas/")];
    assert_eq!(start["required"], json!(["text"]));
    assert!(schemas["Answer_approve"].is_object());
    assert_eq!(schemas["Event"]["oneOf"].as_array().unwrap().len(), 2);
    let unknown = http
        .client
        .get(http.url("/api/nope/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_sharing_leases_never_run_one_session_twice() {
    let store = Arc::new(InMemorySessionStore::new());
    let leases = Arc::new(agent_runtime::sessions::InProcessLeases::default());
    let first = AgentServer::new(store.clone())
        .with_checkpoints(store.checkpoints())
        .with_leases(leases.clone())
        .with_product(Arc::new(Echo::new("echo")));
    let http = TestServer::spawn(first).await;
    let session = http.start("echo", json!({"text": "x"})).await;
    http.stream(&session, None).await.until("gate_open").await;

    // Another instance over the same store: the session is leased, it does not run it.
    let second = AgentServer::new(store.clone())
        .with_checkpoints(store.checkpoints())
        .with_leases(leases.clone())
        .with_product(Arc::new(Echo::new("echo")));
    assert_eq!(second.resume_unfinished().await.unwrap(), 0);
    assert_eq!(http.respond(&session, FIRST, json!("yes")).await.0, 200);
}

/// Leases another instance takes over at once: every renewal fails.
struct TakenOver;

#[async_trait::async_trait]
impl agent_runtime::sessions::SessionLeases for TakenOver {
    async fn acquire(
        &self,
        _: &str,
        _: &str,
        _: Duration,
    ) -> Result<bool, agent_runtime::sessions::StoreError> {
        Ok(true)
    }

    async fn renew(
        &self,
        _: &str,
        _: &str,
        _: Duration,
    ) -> Result<bool, agent_runtime::sessions::StoreError> {
        Ok(false)
    }

    async fn release(&self, _: &str, _: &str) -> Result<(), agent_runtime::sessions::StoreError> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_loses_its_lease_parks_for_the_instance_that_took_it() {
    let store = Arc::new(InMemorySessionStore::new());
    let server = AgentServer::new(store.clone())
        .with_checkpoints(store.checkpoints())
        .with_config(ServerConfig {
            lease_ttl: Duration::from_millis(150),
            ..ServerConfig::default()
        })
        .with_leases(Arc::new(TakenOver))
        .with_product(Arc::new(Echo::new("echo")));
    let http = TestServer::spawn(server).await;
    let session = http.start("echo", json!({"text": "x"})).await;
    // The stream ends when the run has parked (no terminal event is written).
    let events = tokio::time::timeout(PATIENCE, http.stream(&session, None).await.rest())
        .await
        .unwrap();
    let kinds: Vec<&str> = names(&events).iter().map(|(_, n)| *n).collect();
    assert_eq!(kinds, ["started", "gate_open"]);
    let record = store.get(&session.id).await.unwrap().unwrap();
    assert!(!record.status.is_finished(), "{:?}", record.status);
    assert!(store.gates(&session.id).await.unwrap()[0].is_pending());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_session_runs_on_the_bus_the_deployment_makes_for_it() {
    use agent_runtime::bus::{AgentBus, InMemoryBus};
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let recorded = asked.clone();
    let store = Arc::new(InMemorySessionStore::new());
    let server = AgentServer::new(store.clone())
        .with_checkpoints(store.checkpoints())
        .with_product(Arc::new(Echo::new("echo")))
        .with_buses(Arc::new(move |session: &str| {
            recorded.lock().unwrap().push(session.to_owned());
            Arc::new(InMemoryBus::new()) as Arc<dyn AgentBus>
        }));
    let http = TestServer::spawn(server).await;
    let session = http.start("echo", json!({"text": "x"})).await;
    http.stream(&session, None).await.until("gate_open").await;
    assert_eq!(*asked.lock().unwrap(), std::slice::from_ref(&session.id));
}
