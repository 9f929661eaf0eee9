//! The HTTP host end to end: a real server on loopback, reqwest, and an SSE reader.
#![cfg(test)]

#[path = "../common/mod.rs"]
mod common;

mod restarts;
mod streams;

use agent_runtime::checkpoint::CheckpointStore;
use agent_runtime::sessions::{InMemorySessionStore, SessionStatus, SessionStore};
use agent_server::{AgentServer, ServerConfig};
use common::{Echo, SseEvent, TestServer, names};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const FIRST: &str = "coordinator:approve:1";
const SECOND: &str = "coordinator:approve:2";

fn echo_server() -> (Arc<InMemorySessionStore>, Arc<Echo>, AgentServer) {
    let store = Arc::new(InMemorySessionStore::new());
    let echo = Arc::new(Echo::new("echo"));
    let server = AgentServer::new(store.clone())
        .with_checkpoints(store.checkpoints())
        .with_product(echo.clone());
    (store, echo, server)
}

fn assert_error(body: &Value, code: &str) {
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_session_runs_from_start_to_complete() {
    let (store, _echo, server) = echo_server();
    let http = TestServer::spawn(server).await;
    let session = http.start("echo", json!({"text": "hi"})).await;
    assert_eq!(session.token.len(), 64);
    assert_eq!(
        session.stream_url,
        format!("/api/echo/{}/stream", session.id)
    );
    assert_eq!(session.status_url, format!("/api/echo/{}", session.id));
    // Only the hash of the token is stored.
    let record = store.get(&session.id).await.unwrap().unwrap();
    assert_ne!(record.token_hash, session.token);
    assert_eq!(record.request, json!({"text": "hi"}));

    let mut stream = http.stream(&session, None).await;
    let opened = stream.until("gate_open").await;
    assert_eq!(names(&opened), [(1, "started"), (2, "gate_open")]);
    assert_eq!(opened[0].data, json!({"type": "started", "text": "hi"}));
    assert_eq!(
        opened[1].data,
        json!({"type": "gate_open", "gate_id": FIRST, "name": "approve",
               "payload": {"question": "approve?", "text": "hi"}})
    );

    let status = http.status(&session).await;
    assert_eq!(status["status"], "waiting");
    assert_eq!(status["events"], 2);
    assert_eq!(status["pending_gates"].as_array().unwrap().len(), 1);
    assert_eq!(status["pending_gates"][0]["id"], FIRST);
    assert_eq!(status["pending_gates"][0]["name"], "approve");
    assert_eq!(
        status["pending_gates"][0]["payload"]["question"],
        "approve?"
    );
    assert!(status["pending_gates"][0]["since"].is_string());

    assert_eq!(
        http.respond(&session, FIRST, json!("yes")).await,
        (200, json!({"ok": true}))
    );
    let next = stream.until("gate_open").await;
    assert_eq!(
        names(&next),
        [(3, "gate_answered"), (4, "approved"), (5, "gate_open")]
    );
    assert_eq!(
        next[0].data,
        json!({"type": "gate_answered", "gate_id": FIRST})
    );
    assert_eq!(next[1].data["answer"], "yes");
    assert_eq!(next[2].data["gate_id"], SECOND);
    let status = http.status(&session).await;
    assert_eq!(status["stage"], "approved");
    assert_eq!(status["pending_gates"][0]["id"], SECOND);
    // The graph checkpointed its first node with the answer.
    let checkpoint = store
        .checkpoints()
        .latest(&session.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(checkpoint.state.to_value().unwrap()["first"], "yes");

    assert_eq!(
        http.respond(&session, SECOND, json!({"ok": 1})).await.0,
        200
    );
    let last = stream.rest().await;
    assert_eq!(
        names(&last),
        [
            (6, "gate_answered"),
            (7, "confirmed"),
            (8, "session_complete")
        ]
    );
    let result = json!({"text": "hi", "first": "yes", "second": {"ok": 1}});
    assert_eq!(
        last[2].data,
        json!({"type": "session_complete", "result": result})
    );

    let status = http.status(&session).await;
    assert_eq!(
        status,
        json!({
            "session_id": session.id, "product": "echo", "status": "complete",
            "stage": "approved", "pending_gates": [], "events": 8,
            "result": result, "error": null,
        })
    );
    // The answers are in the store.
    let gates = store.gates(&session.id).await.unwrap();
    assert_eq!(gates.len(), 2);
    assert_eq!(gates[0].answer, Some(json!("yes")));
    assert_eq!(gates[1].answer, Some(json!({"ok": 1})));

    // A finished session replays everything and ends; it takes no more answers.
    let mut again = http.stream(&session, None).await;
    let all = again.rest().await;
    assert_eq!(
        all.iter().map(|e| e.id).collect::<Vec<_>>(),
        (1..=8).collect::<Vec<_>>()
    );
    let (code, body) = http.respond(&session, SECOND, json!(2)).await;
    assert_eq!(code, 409);
    assert_error(&body, "session_not_running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_or_missing_token_is_refused_everywhere() {
    let (_store, _echo, server) = echo_server();
    let http = TestServer::spawn(server).await;
    let session = http.start("echo", json!({"text": "x"})).await;
    let mut stream = http.stream(&session, None).await;
    stream.until("gate_open").await;
    let wrong = "0".repeat(64);

    for token in [Some(wrong.as_str()), Some(""), None] {
        let mut stream = http.client.get(http.url(&session.stream_url));
        let mut status = http.client.get(http.url(&session.status_url));
        let mut respond = http.client.post(http.url("/api/echo/respond"));
        if let Some(token) = token {
            stream = stream.bearer_auth(token);
            status = status.bearer_auth(token);
            respond = respond.bearer_auth(token);
        }
        let respond = respond.json(&json!({"session_id": session.id, "gate": FIRST, "answer": 1}));
        for request in [stream, status, respond] {
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 401);
            assert_eq!(response.headers()["www-authenticate"], "Bearer");
            assert_error(&response.json().await.unwrap(), "unauthorized");
        }
    }
    // Wrong token in the query and in the body.
    let response = http
        .client
        .get(http.url(&format!("{}?token={wrong}", session.stream_url)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let response = http
        .client
        .post(http.url("/api/echo/respond"))
        .json(&json!({"session_id": session.id, "gate": FIRST, "answer": 1, "token": wrong}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    // The gate is still pending.
    assert_eq!(http.status(&session).await["pending_gates"][0]["id"], FIRST);

    // The right token in the query (EventSource) and in the body.
    let response = http
        .client
        .get(http.url(&format!("{}?token={}", session.stream_url, session.token)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut by_query = common::SseReader::new(response);
    assert_eq!(
        names(&by_query.until("gate_open").await),
        [(1, "started"), (2, "gate_open")]
    );
    let response = http
        .client
        .get(http.url(&format!("{}?token={}", session.status_url, session.token)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let response = http
        .client
        .post(http.url("/api/echo/respond"))
        .json(
            &json!({"session_id": session.id, "gate": FIRST, "answer": 1, "token": session.token}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_sessions_products_and_gates_are_404() {
    let store = Arc::new(InMemorySessionStore::new());
    let server = AgentServer::new(store)
        .with_product(Arc::new(Echo::new("echo")))
        .with_product(Arc::new(Echo::new("other")));
    let http = TestServer::spawn(server).await;
    let session = http.start("echo", json!({"text": "x"})).await;
    let mut stream = http.stream(&session, None).await;
    stream.until("gate_open").await;
    let auth = format!("Bearer {}", session.token);
    let get = |path: String| {
        http.client
            .get(http.url(&path))
            .header("authorization", auth.clone())
    };

    let unknown_id = "00000000-0000-4000-8000-000000000000";
    let cases = [
        (get(format!("/api/echo/{unknown_id}")), "unknown_session"),
        (
            get(format!("/api/echo/{unknown_id}/stream")),
            "unknown_session",
        ),
        (get(format!("/api/nope/{}", session.id)), "unknown_product"),
        (
            get(format!("/api/nope/{}/stream", session.id)),
            "unknown_product",
        ),
        // A session of another product is not found under this one.
        (get(format!("/api/other/{}", session.id)), "unknown_session"),
        (
            get(format!("/api/other/{}/stream", session.id)),
            "unknown_session",
        ),
        (get("/nowhere".to_owned()), "not_found"),
        (
            http.client
                .post(http.url("/api/nope/start"))
                .json(&json!({"text": "x"})),
            "unknown_product",
        ),
    ];
    for (request, code) in cases {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 404, "{code}");
        assert_error(&response.json().await.unwrap(), code);
    }

    let respond = |product: &str, body: Value| {
        http.client
            .post(http.url(&format!("/api/{product}/respond")))
            .header("authorization", auth.clone())
            .json(&body)
    };
    let cases = [
        (
            respond(
                "echo",
                json!({"session_id": unknown_id, "gate": FIRST, "answer": 1}),
            ),
            "unknown_session",
        ),
        (
            respond(
                "other",
                json!({"session_id": session.id, "gate": FIRST, "answer": 1}),
            ),
            "unknown_session",
        ),
        (
            respond(
                "nope",
                json!({"session_id": session.id, "gate": FIRST, "answer": 1}),
            ),
            "unknown_product",
        ),
        (
            respond(
                "echo",
                json!({"session_id": session.id, "gate": "coordinator:nope:1", "answer": 1}),
            ),
            "unknown_gate",
        ),
        // The second gate is not open yet.
        (
            respond(
                "echo",
                json!({"session_id": session.id, "gate": SECOND, "answer": 1}),
            ),
            "unknown_gate",
        ),
    ];
    for (request, code) in cases {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 404, "{code}");
        assert_error(&response.json().await.unwrap(), code);
    }
    // Wrong method: JSON too.
    let response = http
        .client
        .get(http.url("/api/echo/start"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    assert_error(&response.json().await.unwrap(), "method_not_allowed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_takes_one_answer() {
    let (_store, _echo, server) = echo_server();
    let http = TestServer::spawn(server).await;
    let session = http.start("echo", json!({"text": "x"})).await;
    let mut stream = http.stream(&session, None).await;
    stream.until("gate_open").await;
    assert_eq!(http.respond(&session, FIRST, json!("a")).await.0, 200);
    let (code, body) = http.respond(&session, FIRST, json!("b")).await;
    assert_eq!(code, 409);
    assert_error(&body, "already_answered");
    let events = stream.until("gate_open").await;
    assert_eq!(events[1].data["answer"], "a");
    // Exactly one gate_answered for the first gate.
    assert_eq!(
        events.iter().filter(|e| e.event == "gate_answered").count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_oversized_bodies_are_refused() {
    let store = Arc::new(InMemorySessionStore::new());
    let server = AgentServer::new(store)
        .with_product(Arc::new(Echo::new("echo")))
        .with_config(ServerConfig {
            max_body_bytes: 1024,
            ..ServerConfig::default()
        });
    let http = TestServer::spawn(server).await;
    let post = |path: &str, body: &str| {
        http.client
            .post(http.url(path))
            .header("content-type", "application/json")
            .body(body.to_owned())
    };
    let big = format!("{{\"text\": \"{}\"}}", "x".repeat(2048));
    let cases = [
        (post("/api/echo/start", "{\"text\": "), 400, "bad_request"),
        (post("/api/echo/start", ""), 400, "bad_request"),
        (post("/api/echo/start", "[1, 2]"), 422, "invalid_request"),
        (post("/api/echo/start", "\"text\""), 422, "invalid_request"),
        (
            post("/api/echo/start", "{\"text\": 3}"),
            422,
            "invalid_request",
        ),
        (post("/api/echo/start", &big), 413, "payload_too_large"),
    ];
    for (request, status, code) in cases {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), status, "{code}");
        assert_error(&response.json().await.unwrap(), code);
    }
    // A body that does not fit the start type is refused naming the field.
    let response = post("/api/echo/start", "{}").send().await.unwrap();
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["error"]["message"],
        "the start request does not fit: missing field `text`"
    );
    let response = post("/api/echo/start", r#"{"text": "x", "mode": 3}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["field"], "mode");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("the start request does not fit: at mode: invalid type: integer `3`"),
        "{body}"
    );

    let session = http.start("echo", json!({"text": "x"})).await;
    let respond = |body: String| {
        http.client
            .post(http.url("/api/echo/respond"))
            .bearer_auth(&session.token)
            .header("content-type", "application/json")
            .body(body)
    };
    let id = &session.id;
    let cases = [
        (respond("not json".into()), 400, "bad_request"),
        (respond("[]".into()), 422, "invalid_request"),
        (
            respond(format!(
                "{{\"session_id\": \"{id}\", \"gate\": \"{FIRST}\"}}"
            )),
            422,
            "invalid_request",
        ),
        (
            respond(format!(
                "{{\"session_id\": \"{id}\", \"gate\": 7, \"answer\": 1}}"
            )),
            422,
            "invalid_request",
        ),
        (
            respond(format!("{{\"gate\": \"{FIRST}\", \"answer\": 1}}")),
            422,
            "invalid_request",
        ),
        (
            respond(format!(
                "{{\"session_id\": \"{id}\", \"gate\": \"{FIRST}\", \"answer\": \"{}\"}}",
                "y".repeat(2048)
            )),
            413,
            "payload_too_large",
        ),
    ];
    for (request, status, code) in cases {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), status, "{code}");
        assert_error(&response.json().await.unwrap(), code);
    }
    // A bad Last-Event-ID.
    let response = http
        .client
        .get(http.url(&session.stream_url))
        .bearer_auth(&session.token)
        .header("last-event-id", "abc")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_or_panicking_product_fails_its_session() {
    let (_store, _echo, server) = echo_server();
    let http = TestServer::spawn(server).await;
    for (mode, error) in [
        ("fail", "asked to fail"),
        ("panic", "the run panicked: asked to panic"),
    ] {
        let session = http.start("echo", json!({"text": "x", "mode": mode})).await;
        let mut stream = http.stream(&session, None).await;
        let events = stream.rest().await;
        assert_eq!(
            names(&events),
            [(1, "started"), (2, "session_failed")],
            "{mode}"
        );
        assert_eq!(
            events[1].data,
            json!({"type": "session_failed", "error": error})
        );
        let status = http.status(&session).await;
        assert_eq!(status["status"], "failed");
        assert_eq!(status["error"], error);
        assert_eq!(status["result"], Value::Null);
        assert_eq!(status["events"], 2);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_product_admits_or_refuses_a_start_before_any_session_is_made() {
    let (store, echo, server) = echo_server();
    let server = TestServer::spawn(server).await;
    for (mode, status, code) in [
        ("refuse", 400, "refused"),
        ("over_quota", 429, "quota_exceeded"),
    ] {
        let response = server
            .client
            .post(server.url("/api/echo"))
            .json(&json!({"text": "hi", "mode": mode}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), status);
        assert_error(&response.json().await.unwrap(), code);
    }
    assert!(echo.runs.lock().unwrap().is_empty());
    assert!(store.unfinished("echo").await.unwrap().is_empty());
    // `POST /api/{product}` starts a session as `/start` does.
    let response = server
        .client
        .post(server.url("/api/echo"))
        .json(&json!({"text": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["stream_url"]
            .as_str()
            .unwrap()
            .starts_with("/api/echo/")
    );
}
