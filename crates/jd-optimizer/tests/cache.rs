//! The caches are scoped by tenant: a JD analysed for one tenant is reused by that
//! tenant only, under keys `tenant:{tenant_id}:...`.
#![cfg(test)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_runtime::cache::{Cache, CacheError, InMemoryCache};
use async_trait::async_trait;
use common::{Script, gap_answer, optimizer, pair, run, sre_analysis, sre_rewrite};
use jd_optimizer::cache::OptimizerCache;
use serde_json::Value;

/// An in-process cache that remembers the keys it was asked for.
#[derive(Default)]
struct KeyLog {
    inner: InMemoryCache,
    keys: Mutex<Vec<String>>,
}

#[async_trait]
impl Cache for KeyLog {
    async fn get(&self, key: &str) -> Result<Option<Value>, CacheError> {
        self.keys.lock().unwrap().push(format!("get {key}"));
        self.inner.get(key).await
    }
    async fn put(&self, key: &str, value: &Value, ttl: Duration) -> Result<(), CacheError> {
        self.keys
            .lock()
            .unwrap()
            .push(format!("put {key} {}h", ttl.as_secs() / 3600));
        self.inner.put(key, value, ttl).await
    }
    async fn remove(&self, key: &str) -> Result<bool, CacheError> {
        self.inner.remove(key).await
    }
    fn backend(&self) -> &'static str {
        "log"
    }
}

#[tokio::test]
async fn a_jd_analysis_is_reused_by_its_tenant_only() {
    let script = Script::new()
        .json("analyzer", sre_analysis())
        .json("analyzer", sre_analysis())
        .json("rewriter", sre_rewrite())
        .json("rewriter", sre_rewrite())
        .json("rewriter", sre_rewrite())
        .json("gap", gap_answer())
        .json("gap", gap_answer())
        .json("gap", gap_answer());
    let log = Arc::new(KeyLog::default());
    let (optimizer, model) = optimizer(&script);
    let optimizer = optimizer.with_cache(OptimizerCache::new(log.clone()));

    let acme = pair("senior-sre").for_tenant("acme");
    let first = run(&optimizer, &acme).await.0.unwrap();
    let again = run(&optimizer, &acme).await.0.unwrap();
    let other = run(&optimizer, &pair("senior-sre").for_tenant("globex"))
        .await
        .0
        .unwrap();

    assert_eq!(first.result.cache.jd_analysis, Some(false));
    assert_eq!(again.result.cache.jd_analysis, Some(true));
    assert_eq!(other.result.cache.jd_analysis, Some(false));
    assert!(!again.result.token_usage.contains_key("jd_analyzer"));
    assert_eq!(
        again.result.cache_stats.jd_hit_rate(),
        Some(0.5),
        "the process's rate so far"
    );
    let analyses = model
        .requests()
        .iter()
        .filter(|r| common::agent_of(r) == "analyzer")
        .count();
    assert_eq!(analyses, 2, "acme once, globex once");

    let keys = log.keys.lock().unwrap().clone();
    assert!(
        keys.iter()
            .all(|k| k.split(' ').nth(1).unwrap().starts_with("tenant:"))
    );
    let hash = keys[0].rsplit(':').next().unwrap().to_owned();
    assert_eq!(
        keys[..2],
        [
            format!("get tenant:acme:jd:{hash}"),
            format!("put tenant:acme:jd:{hash} 24h")
        ]
    );
    assert!(keys.contains(&format!("get tenant:globex:jd:{hash}")));
    let stats = optimizer.cache().stats();
    assert_eq!((stats.jd_hits, stats.jd_misses), (1, 2));
    assert!((stats.jd_hit_rate().unwrap() - 1.0 / 3.0).abs() < 1e-9);
}
