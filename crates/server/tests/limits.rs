//! The limits that protect a server under load: starts beyond
//! `ServerConfig::max_live_sessions` and streams beyond `max_streams_per_session` are
//! refused with 503 and `retry-after`, and a client that reads slower than its session
//! emits is dropped (it reconnects with `Last-Event-ID`) while the others get every event;
//! a tenant beyond `max_sessions_per_tenant` gets 429, an event above `max_event_bytes` is
//! stored as `event_too_large`, an answer above `max_answer_bytes` is 413; the
//! checkpoint stores remember a run for every session the default limit keeps live.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_runtime::sessions::{InMemorySessionStore, InProcessFanout, NewSession, SessionStore};
use agent_server::{AgentServer, Product, ServerConfig, SessionHandle};
use common::{EchoError, PATIENCE, SseReader, TestServer};
use serde_json::{Value, json};
use tokio::sync::watch;

/// A product that waits until the test lets it go, then emits `count` events of `size`
/// bytes each, one a millisecond, and completes.
struct Flood {
    go: watch::Receiver<bool>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct FloodStart {
    count: usize,
    size: usize,
}

#[async_trait::async_trait]
impl Product for Flood {
    type Start = FloodStart;
    type Event = Value;
    type Output = Value;
    type Error = EchoError;

    fn name(&self) -> &str {
        "flood"
    }

    async fn run(
        &self,
        handle: SessionHandle<Value>,
        start: FloodStart,
    ) -> Result<Value, EchoError> {
        let mut go = self.go.clone();
        go.wait_for(|go| *go)
            .await
            .map_err(|e| EchoError(e.to_string()))?;
        let filler = "x".repeat(start.size);
        for n in 0..start.count {
            handle.emit(&json!({"type": "chunk", "n": n, "filler": filler}));
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Ok(json!({"emitted": start.count}))
    }
}

fn flood_server(
    config: ServerConfig,
    fanout_capacity: usize,
) -> (AgentServer, watch::Sender<bool>) {
    let (go, waiting) = watch::channel(false);
    let server = AgentServer::new(Arc::new(InMemorySessionStore::new()))
        .with_fanout(Arc::new(InProcessFanout::with_capacity(fanout_capacity)))
        .with_config(config)
        .with_product(Arc::new(Flood { go: waiting }));
    (server, go)
}

/// Polls `attempt` until it answers 200 or 201; every other answer must be a 503.
async fn until_taken<F, Fut>(what: &str, attempt: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = reqwest::Response>,
{
    tokio::time::timeout(PATIENCE, async {
        loop {
            let response = attempt().await;
            if response.status().is_success() {
                break;
            }
            assert_eq!(response.status(), 503);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_stream_is_dropped_and_resumes_while_the_others_get_every_event() {
    // The fan-out holds 256 events (a quarter of a second here) for a client behind.
    let (server, go) = flood_server(ServerConfig::default(), 256);
    let http = TestServer::spawn(server).await;
    // 40 MB of events: more than the sockets between the server and a client that does
    // not read can hold, and the fan-out's 256 after that.
    let (count, size) = (1280u64, 32 * 1024);
    let session = http
        .start("flood", json!({"count": count, "size": size}))
        .await;
    let slow = http.stream_response(&session, None).await;
    assert_eq!(slow.status(), 200);
    let mut fast = http.stream(&session, None).await.with_patience(PATIENCE);
    go.send(true).unwrap();

    let events = fast.rest().await;
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_eq!(
        ids,
        (1..=count + 1).collect::<Vec<_>>(),
        "the fast client missed events"
    );
    assert_eq!(events.last().unwrap().event, "session_complete");

    // The slow client's stream ended part-way, without the terminal event...
    let seen = SseReader::new(slow).with_patience(PATIENCE).rest().await;
    let last = seen.last().map_or(0, |e| e.id);
    assert_eq!(
        seen.iter().map(|e| e.id).collect::<Vec<_>>(),
        (1..=last).collect::<Vec<_>>()
    );
    assert!(
        last < count,
        "the slow client was not dropped (read up to {last})"
    );
    // ...and it picks up where it was, with nothing missed or repeated.
    let rest = SseReader::new(http.stream_response(&session, Some(last)).await)
        .with_patience(PATIENCE)
        .rest()
        .await;
    assert_eq!(
        rest.iter().map(|e| e.id).collect::<Vec<_>>(),
        (last + 1..=count + 1).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_beyond_the_live_session_limit_get_503_with_retry_after() {
    let config = ServerConfig {
        max_live_sessions: Some(2),
        ..ServerConfig::default()
    };
    let (server, go) = flood_server(config, 16);
    let http = TestServer::spawn(server).await;
    let body = json!({"count": 1, "size": 1});
    let first = http.start("flood", body.clone()).await;
    http.start("flood", body.clone()).await;

    let refused = http
        .client
        .post(http.url("/api/flood/start"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    let error: Value = refused.json().await.unwrap();
    assert_eq!(error["error"]["code"], "too_many_sessions");

    // Once the running sessions end, starts are taken again.
    go.send(true).unwrap();
    http.stream(&first, None).await.rest().await;
    let start = || {
        http.client
            .post(http.url("/api/flood/start"))
            .json(&body)
            .send()
    };
    until_taken("no start was taken after the sessions ended", || async {
        start().await.unwrap()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_beyond_the_per_session_limit_get_503_with_retry_after() {
    let config = ServerConfig {
        max_streams_per_session: 2,
        keep_alive: Duration::from_millis(50),
        ..ServerConfig::default()
    };
    let (server, _go) = flood_server(config, 16);
    let http = TestServer::spawn(server).await;
    let session = http.start("flood", json!({"count": 1, "size": 1})).await;
    let one = http.stream_response(&session, None).await;
    let two = http.stream_response(&session, None).await;
    assert_eq!((one.status().as_u16(), two.status().as_u16()), (200, 200));

    let three = http.stream_response(&session, None).await;
    assert_eq!(three.status(), 503);
    assert_eq!(three.headers()["retry-after"], "1");
    let error: Value = three.json().await.unwrap();
    assert_eq!(error["error"]["code"], "too_many_streams");

    // A stream the client closes gives its place back (noticed at the next keep-alive).
    drop(one);
    until_taken("a closed stream kept its place", || {
        http.stream_response(&session, None)
    })
    .await;
}

/// Sessions a restarted server resumes are not refused by the live-session limit: they
/// were accepted already.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resumed_sessions_run_beyond_the_live_session_limit() {
    let store = Arc::new(InMemorySessionStore::new());
    for id in ["a", "b", "c"] {
        store
            .create(NewSession {
                id: id.to_owned(),
                product: "flood".to_owned(),
                token_hash: "h".to_owned(),
                tenant: None,
                request: json!({"count": 1, "size": 1}),
            })
            .await
            .unwrap();
    }
    let (go, waiting) = watch::channel(true);
    let server = AgentServer::new(store.clone())
        .with_config(ServerConfig {
            max_live_sessions: Some(1),
            ..ServerConfig::default()
        })
        .with_product(Arc::new(Flood { go: waiting }));
    assert_eq!(server.resume_unfinished().await.unwrap(), 3);
    tokio::time::timeout(PATIENCE, async {
        for id in ["a", "b", "c"] {
            while !store.get(id).await.unwrap().unwrap().status.is_finished() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    })
    .await
    .expect("the resumed sessions did not all finish");
    drop(go);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_beyond_its_session_limit_gets_429_and_others_go_on() {
    let config = ServerConfig {
        max_sessions_per_tenant: Some(1),
        ..ServerConfig::default()
    };
    let (server, go) = flood_server(config, 16);
    let server = server.with_auth(
        agent_server::auth::Auth::open()
            .with_api_keys("sk-acme:acme, sk-globex:globex")
            .unwrap(),
    );
    let http = TestServer::spawn(server).await.with_credential("sk-acme");
    let body = json!({"count": 1, "size": 1});
    let first = http.start("flood", body.clone()).await;
    let start = |key: &'static str| {
        http.client
            .post(http.url("/api/flood/start"))
            .bearer_auth(key)
            .json(&body)
            .send()
    };
    let refused = start("sk-acme").await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "1");
    let error: Value = refused.json().await.unwrap();
    assert_eq!(error["error"]["code"], "tenant_session_limit");
    assert_eq!(start("sk-globex").await.unwrap().status(), 201);

    // Once acme's session ends, its place is given back.
    go.send(true).unwrap();
    http.stream(&first, None).await.rest().await;
    tokio::time::timeout(PATIENCE, async {
        while start("sk-acme").await.unwrap().status() != 201 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("acme's place was not given back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_above_the_limit_is_stored_as_event_too_large() {
    let config = ServerConfig {
        max_event_bytes: 1024,
        ..ServerConfig::default()
    };
    let (server, go) = flood_server(config, 16);
    let http = TestServer::spawn(server).await;
    let big = http.start("flood", json!({"count": 1, "size": 4096})).await;
    go.send(true).unwrap();
    let events = http
        .stream(&big, None)
        .await
        .until("session_complete")
        .await;
    assert_eq!(events[0].event, "event_too_large");
    assert_eq!(events[0].data["original_type"], "chunk");
    assert!(events[0].data["bytes"].as_u64().unwrap() > 4096);
    assert_eq!(events[0].data["limit"], 1024);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_above_the_limit_is_413() {
    let server = AgentServer::new(Arc::new(InMemorySessionStore::new()))
        .with_config(ServerConfig {
            max_answer_bytes: 100,
            ..ServerConfig::default()
        })
        .with_product(Arc::new(common::Echo::new("coordinator")));
    let http = TestServer::spawn(server).await;
    let started = http.start("coordinator", json!({"text": "hi"})).await;
    let (status, body) = http
        .respond(&started, "coordinator:approve:1", json!("x".repeat(200)))
        .await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (413, &json!("answer_too_large"))
    );
    assert_eq!(body["error"]["field"], "answer");
    assert_eq!(
        http.respond_when_open(&started, "coordinator:approve:1", json!("yes"))
            .await,
        200
    );
}

/// The checkpoint stores remember the encoder of as many runs as a server keeps live by
/// default: with more live runs saving in turn, each would be forgotten between its saves
/// and every checkpoint written in full.
#[test]
fn the_stores_remember_every_run_a_default_server_keeps_live() {
    let live = ServerConfig::default().max_live_sessions;
    assert!(
        live.is_some_and(|live| live <= agent_runtime::checkpoint::RECENT_RUNS),
        "max_live_sessions {live:?} against RECENT_RUNS {}",
        agent_runtime::checkpoint::RECENT_RUNS
    );
}
