//! Web search through the Brave Search API, against a local server.
#![cfg(test)]

use std::time::Duration;

use job_capabilities::http::{HttpError, PoliteClient, PolitePolicy};
use job_capabilities::search::{BraveSearch, SearchError, WebSearch, web_search_from_lookup};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "test-subscription-key";

fn fixture() -> serde_json::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/search/brave_web_search.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn brave(server: &MockServer) -> BraveSearch {
    let client = PoliteClient::new(PolitePolicy {
        min_interval_per_host: Duration::from_millis(1),
        ..PolitePolicy::default()
    });
    BraveSearch::new(KEY.into(), server.uri(), client)
}

#[tokio::test]
async fn results_are_mapped_and_the_request_carries_key_query_and_count() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/web/search"))
        .and(header("x-subscription-token", KEY))
        .and(header("accept", "application/json"))
        .and(query_param("q", "rust engineer jobs berlin"))
        .and(query_param("count", "5"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture()))
        .expect(1)
        .mount(&server)
        .await;
    let search = brave(&server);
    assert_eq!(search.provider(), "brave");
    let hits = search.search("rust engineer jobs berlin", 5).await.unwrap();

    let request = &server.received_requests().await.unwrap()[0];
    insta::assert_snapshot!("brave_request_query", request.url.query().unwrap());
    insta::assert_json_snapshot!("brave_hits", hits);
    assert_eq!(hits.len(), 4);
    assert_eq!(
        hits[0].snippet,
        "Acme Robotics is hiring a Senior Rust Engineer in Berlin to build the control plane for our fleet. Hybrid, €85k–€105k."
    );
    assert_eq!(
        hits[1].title,
        "Rust Developer Jobs in Berlin & Remote | RustJobs"
    );
}

#[tokio::test]
async fn the_count_is_capped_and_results_are_truncated_to_it() {
    let server = MockServer::start().await;
    Mock::given(path("/web/search"))
        .and(query_param("count", "20"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture()))
        .mount(&server)
        .await;
    Mock::given(path("/web/search"))
        .and(query_param("count", "2"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture()))
        .mount(&server)
        .await;
    let search = brave(&server);
    assert_eq!(search.search("rust", 50).await.unwrap().len(), 4);
    // A provider that returns more than asked for is cut to the count.
    let two = search.search("rust", 2).await.unwrap();
    assert_eq!(two.len(), 2);
    assert!(two[0].url.contains("greenhouse"));
    // Nothing to ask: no request.
    assert!(search.search("   ", 5).await.unwrap().is_empty());
    assert!(search.search("rust", 0).await.unwrap().is_empty());
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_response_without_web_results_is_empty() {
    let server = MockServer::start().await;
    Mock::given(path("/web/search"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "type": "search",
            "query": { "original": "zxqv nonsense", "more_results_available": false },
            "mixed": { "type": "mixed", "main": [], "top": [], "side": [] }
        })))
        .mount(&server)
        .await;
    assert!(
        brave(&server)
            .search("zxqv nonsense", 10)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_rejected_key_is_auth() {
    let server = MockServer::start().await;
    Mock::given(path("/web/search"))
        .respond_with(ResponseTemplate::new(401).set_body_json(serde_json::json!({
            "type": "ErrorResponse",
            "error": { "code": "SUBSCRIPTION_TOKEN_INVALID", "status": 401, "detail": "The provided subscription token is invalid." }
        })))
        .mount(&server)
        .await;
    let err = brave(&server).search("rust", 5).await.unwrap_err();
    assert_eq!(err, SearchError::Auth { status: 401 });
    assert!(!err.to_string().contains(KEY));

    let forbidden = MockServer::start().await;
    Mock::given(path("/web/search"))
        .respond_with(ResponseTemplate::new(403))
        .mount(&forbidden)
        .await;
    let err = brave(&forbidden).search("rust", 5).await.unwrap_err();
    assert_eq!(err, SearchError::Auth { status: 403 });
}

#[tokio::test]
async fn a_persistent_429_is_rate_limited_after_bounded_retries() {
    let server = MockServer::start().await;
    Mock::given(path("/web/search"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0"))
        .mount(&server)
        .await;
    let err = brave(&server).search("rust", 5).await.unwrap_err();
    assert_eq!(
        err,
        SearchError::RateLimited {
            retry_after: Some(Duration::ZERO)
        }
    );
    // The first try and the policy's two retries.
    assert_eq!(server.received_requests().await.unwrap().len(), 3);

    // Without Retry-After there is nothing to wait for: one request.
    let bare = MockServer::start().await;
    Mock::given(path("/web/search"))
        .respond_with(ResponseTemplate::new(429))
        .mount(&bare)
        .await;
    let err = brave(&bare).search("rust", 5).await.unwrap_err();
    assert_eq!(err, SearchError::RateLimited { retry_after: None });
    assert_eq!(bare.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn malformed_json_is_parse_and_other_statuses_are_http() {
    let server = MockServer::start().await;
    Mock::given(path("/web/search"))
        .and(query_param("q", "garbled"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            b"{\"type\":\"search\",\"web\":{\"results\":[{\"title\":".to_vec(),
            "application/json",
        ))
        .mount(&server)
        .await;
    Mock::given(path("/web/search"))
        .and(query_param("q", "wrong shape"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "type": "search",
            "web": { "type": "search", "results": [{ "title": "No url" }] }
        })))
        .mount(&server)
        .await;
    Mock::given(path("/web/search"))
        .and(query_param("q", "broken"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&server)
        .await;
    let search = brave(&server);
    let err = search.search("garbled", 5).await.unwrap_err();
    assert!(matches!(err, SearchError::Parse { .. }), "{err}");
    let err = search.search("wrong shape", 5).await.unwrap_err();
    match err {
        SearchError::Parse { message } => assert!(message.contains("web.results[0]"), "{message}"),
        other => panic!("expected Parse, got {other:?}"),
    }
    let err = search.search("broken", 5).await.unwrap_err();
    assert!(
        matches!(
            err,
            SearchError::Http(HttpError::Status { status: 500, .. })
        ),
        "{err}"
    );
}

#[test]
fn from_lookup_needs_a_key_and_reads_the_base() {
    assert!(BraveSearch::from_lookup(|_| None).is_none());
    assert!(BraveSearch::from_lookup(|_| Some(String::new())).is_none());
    assert!(web_search_from_lookup(|_| None).is_none());

    let default_base =
        BraveSearch::from_lookup(|name| (name == "BRAVE_API_KEY").then(|| "k-123".to_owned()))
            .unwrap();
    assert_eq!(
        default_base.base_url(),
        "https://api.search.brave.com/res/v1"
    );

    let custom = BraveSearch::from_lookup(|name| match name {
        "BRAVE_API_KEY" => Some(" k-123 ".to_owned()),
        "BRAVE_API_BASE" => Some("http://127.0.0.1:9999/res/v1/".to_owned()),
        _ => None,
    })
    .unwrap();
    assert_eq!(custom.base_url(), "http://127.0.0.1:9999/res/v1");

    let search =
        web_search_from_lookup(|name| (name == "BRAVE_API_KEY").then(|| "k-123".to_owned()))
            .unwrap();
    assert_eq!(search.provider(), "brave");
}

#[tokio::test]
async fn the_key_never_shows_in_debug_output() {
    let server = MockServer::start().await;
    let search = brave(&server);
    let debug = format!("{search:?}");
    assert!(!debug.contains(KEY), "{debug}");
    assert!(debug.contains("[redacted]"), "{debug}");
}

#[tokio::test]
async fn a_key_read_from_the_lookup_is_sent() {
    let server = MockServer::start().await;
    Mock::given(path("/res/v1/web/search"))
        .and(header("x-subscription-token", "from-env-key"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture()))
        .expect(1)
        .mount(&server)
        .await;
    let base = format!("{}/res/v1", server.uri());
    let search = BraveSearch::from_lookup(|name| match name {
        "BRAVE_API_KEY" => Some("from-env-key".to_owned()),
        "BRAVE_API_BASE" => Some(base.clone()),
        _ => None,
    })
    .unwrap();
    assert_eq!(search.search("rust", 3).await.unwrap().len(), 3);
}
