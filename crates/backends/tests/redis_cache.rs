//! The runtime's cache on the real Redis (`REDIS_URL`, by default `redis://127.0.0.1:6379`;
//! `cargo xtask test` starts it): values by key, replaced, removed, expired by Redis.
//! Fails, never skips, when Redis is not there.
#![cfg(test)]

use std::time::Duration;

use agent_backends::RedisCache;
use agent_runtime::cache::Cache;
use serde_json::json;

fn url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

async fn cache() -> RedisCache {
    RedisCache::connect(&url())
        .await
        .unwrap_or_else(|e| panic!("Redis must run at {} for this suite: {e}", url()))
}

/// A key of this test run alone.
fn key(name: &str) -> String {
    format!(
        "tenant:test-{}-{}:{name}",
        std::process::id(),
        chrono::Utc::now().timestamp_nanos_opt().unwrap()
    )
}

#[tokio::test]
async fn values_are_kept_by_key_replaced_and_removed() {
    let cache = cache().await;
    let key = key("jd:abc");
    assert_eq!(cache.get(&key).await.unwrap(), None);
    cache
        .put(&key, &json!({"skills": ["Rust"]}), Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(
        cache.get(&key).await.unwrap(),
        Some(json!({"skills": ["Rust"]}))
    );
    cache
        .put(&key, &json!(2), Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(cache.get(&key).await.unwrap(), Some(json!(2)));
    assert!(cache.remove(&key).await.unwrap());
    assert!(!cache.remove(&key).await.unwrap());
    assert_eq!(cache.backend(), "redis");
}

#[tokio::test]
async fn redis_expires_values_after_their_time_to_live() {
    let cache = cache().await;
    let key = key("retrieval:r1:abc");
    cache
        .put(&key, &json!("soon gone"), Duration::from_millis(150))
        .await
        .unwrap();
    assert!(cache.get(&key).await.unwrap().is_some());
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(cache.get(&key).await.unwrap(), None);
}

#[tokio::test]
async fn two_connections_share_the_values() {
    let (a, b) = (cache().await, cache().await);
    let key = key("interview:s1:formal");
    a.put(&key, &json!({"letter": "hi"}), Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(b.get(&key).await.unwrap(), Some(json!({"letter": "hi"})));
    b.remove(&key).await.unwrap();
}

#[tokio::test]
async fn a_value_that_is_not_json_is_an_error_naming_the_key() {
    let cache = cache().await;
    let key = key("broken");
    let client = redis::Client::open(url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let () = redis::AsyncCommands::set_ex(&mut connection, &key, "{not json", 60)
        .await
        .unwrap();
    let error = cache.get(&key).await.unwrap_err();
    assert!(error.to_string().contains(&key), "{error}");
    cache.remove(&key).await.unwrap();
}

#[tokio::test]
async fn a_dead_server_is_a_clear_error() {
    let error = RedisCache::connect("redis://127.0.0.1:1")
        .await
        .unwrap_err();
    assert!(error.to_string().starts_with("cache: redis:"), "{error}");
}
