//! Streams: a reconnect replays after `Last-Event-ID`, a stream opened early sees each
//! event once, an idle one gets keep-alive comments; and the page at the root.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_replays_after_last_event_id_then_goes_on_live() {
    let (_store, _echo, server) = echo_server();
    let http = TestServer::spawn(server).await;
    let session = http.start("echo", json!({"text": "x"})).await;
    let mut first = http.stream(&session, None).await;
    assert_eq!(
        names(&first.until("gate_open").await),
        [(1, "started"), (2, "gate_open")]
    );
    drop(first);
    assert_eq!(http.respond(&session, FIRST, json!("yes")).await.0, 200);
    // Wait until the second gate is open, so events 3..=5 are stored.
    while http.status(&session).await["pending_gates"][0]["id"] != SECOND {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let mut again = http.stream(&session, Some(2)).await;
    let replayed = again.until("gate_open").await;
    assert_eq!(
        names(&replayed),
        [(3, "gate_answered"), (4, "approved"), (5, "gate_open")]
    );
    // The same by query parameter (as a browser EventSource cannot set headers).
    let response = http
        .client
        .get(http.url(&format!(
            "{}?token={}&last_event_id=4",
            session.stream_url, session.token
        )))
        .send()
        .await
        .unwrap();
    let mut by_query = common::SseReader::new(response);
    assert_eq!(
        names(&by_query.until("gate_open").await),
        [(5, "gate_open")]
    );

    assert_eq!(http.respond(&session, SECOND, json!("sure")).await.0, 200);
    let live = again.rest().await;
    assert_eq!(
        names(&live),
        [
            (6, "gate_answered"),
            (7, "confirmed"),
            (8, "session_complete")
        ]
    );
    assert_eq!(names(&by_query.rest().await), names(&live));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_connected_before_events_sees_each_once_in_order() {
    // Many streams open while the session runs: each sees 1..=n exactly once.
    let (_store, _echo, server) = echo_server();
    let http = TestServer::spawn(server).await;
    let session = http.start("echo", json!({"text": "x"})).await;
    let mut streams = Vec::new();
    for _ in 0..5 {
        streams.push(http.stream(&session, None).await);
    }
    assert_eq!(http.respond_when_open(&session, FIRST, json!(1)).await, 200);
    streams.push(http.stream(&session, None).await);
    assert_eq!(
        http.respond_when_open(&session, SECOND, json!(2)).await,
        200
    );
    for mut stream in streams {
        let events = stream.rest().await;
        assert_eq!(
            events.iter().map(|e| e.id).collect::<Vec<_>>(),
            (1..=8).collect::<Vec<_>>()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_stream_gets_keep_alive_comments() {
    let store = Arc::new(InMemorySessionStore::new());
    let server = AgentServer::new(store)
        .with_product(Arc::new(Echo::new("echo")))
        .with_config(ServerConfig {
            keep_alive: Duration::from_millis(50),
            ..ServerConfig::default()
        });
    let http = TestServer::spawn(server).await;
    let session = http
        .start("echo", json!({"text": "x", "mode": "hang"}))
        .await;
    let mut stream = http.stream(&session, None).await;
    assert_eq!(
        stream.next().await.map(|e: SseEvent| e.event),
        Some("started".to_owned())
    );
    let comment = tokio::time::timeout(common::PATIENCE, stream.next_block())
        .await
        .unwrap()
        .unwrap();
    assert!(comment.starts_with(':'), "{comment:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_is_served_at_the_root() {
    let store = Arc::new(InMemorySessionStore::new());
    let none = TestServer::spawn(
        AgentServer::new(store.clone())
            .with_checkpoints(store.checkpoints())
            .with_product(Arc::new(Echo::new("echo"))),
    )
    .await;
    let response = none.client.get(none.url("/")).send().await.unwrap();
    assert_eq!(response.status(), 404);
    assert_error(&response.json().await.unwrap(), "not_found");

    let mut with_page = Echo::new("paged");
    with_page.page = Some("<!doctype html><title>echo</title>".to_owned());
    let mut second = Echo::new("second");
    second.page = Some("not this one".to_owned());
    let http = TestServer::spawn(
        AgentServer::new(store.clone())
            .with_checkpoints(store.checkpoints())
            .with_product(Arc::new(Echo::new("echo")))
            .with_product(Arc::new(with_page))
            .with_product(Arc::new(second)),
    )
    .await;
    let response = http.client.get(http.url("/")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/html; charset=utf-8"
    );
    assert_eq!(
        response.text().await.unwrap(),
        "<!doctype html><title>echo</title>"
    );
}
