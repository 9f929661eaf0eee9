//! A cache of computed values with a time to live: what a product may compute once and
//! reuse for a while (a job description's analysis, a retrieval, a generated letter).
//!
//! [`Cache`] is the trait, keyed by plain strings whose scoping (a tenant prefix) is the
//! product's; [`InMemoryCache`] keeps entries in the process. agent-backends keeps them
//! in Redis (feature `redis`), shared by every instance of a deployment. A cache is an
//! optimization: a product treats a failing cache as a miss, never as a failed run.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::Value;

/// A cache that could not be read or written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cache: {0}")]
pub struct CacheError(pub String);

/// JSON values by key, each with a time to live. Object-safe: products take an
/// `Arc<dyn Cache>`.
#[async_trait]
pub trait Cache: Send + Sync {
    /// The value under `key`, unless there is none or it has expired.
    async fn get(&self, key: &str) -> Result<Option<Value>, CacheError>;

    /// Stores `value` under `key` for `ttl`, replacing what was there.
    async fn put(&self, key: &str, value: &Value, ttl: Duration) -> Result<(), CacheError>;

    /// Removes the value under `key`; whether there was one.
    async fn remove(&self, key: &str) -> Result<bool, CacheError>;

    /// Where the values live, for logs and reports (`memory`, `redis`).
    fn backend(&self) -> &'static str;
}

/// Entries in memory, lost with the process; expired ones are dropped when read and,
/// every 1,024 writes, all at once.
///
/// ```
/// use agent_runtime::cache::{Cache, InMemoryCache};
/// use std::time::Duration;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let cache = InMemoryCache::default();
/// cache.put("tenant:t1:jd:abc", &serde_json::json!({"skills": ["Rust"]}), Duration::from_secs(60)).await?;
/// assert_eq!(cache.get("tenant:t1:jd:abc").await?.unwrap()["skills"][0], "Rust");
/// assert_eq!(cache.get("tenant:t2:jd:abc").await?, None);
/// # Ok::<(), agent_runtime::cache::CacheError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Default)]
pub struct InMemoryCache {
    entries: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    values: HashMap<String, (Value, Instant)>,
    writes: u64,
}

/// Writes between sweeps of expired entries.
const SWEEP_EVERY: u64 = 1024;

impl InMemoryCache {
    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Entries held, expired ones not yet swept included.
    pub fn len(&self) -> usize {
        self.entries().values.len()
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl Cache for InMemoryCache {
    async fn get(&self, key: &str) -> Result<Option<Value>, CacheError> {
        let mut entries = self.entries();
        let now = Instant::now();
        match entries.values.get(key) {
            Some((value, expires)) if *expires > now => Ok(Some(value.clone())),
            Some(_) => {
                entries.values.remove(key);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    async fn put(&self, key: &str, value: &Value, ttl: Duration) -> Result<(), CacheError> {
        let now = Instant::now();
        let expires = now.checked_add(ttl).unwrap_or(now);
        let mut entries = self.entries();
        entries
            .values
            .insert(key.to_owned(), (value.clone(), expires));
        entries.writes += 1;
        if entries.writes.is_multiple_of(SWEEP_EVERY) {
            entries.values.retain(|_, (_, expires)| *expires > now);
        }
        Ok(())
    }

    async fn remove(&self, key: &str) -> Result<bool, CacheError> {
        Ok(self.entries().values.remove(key).is_some())
    }

    fn backend(&self) -> &'static str {
        "memory"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn entries_expire() {
        let cache = InMemoryCache::default();
        cache
            .put("k", &json!(1), Duration::from_millis(20))
            .await
            .unwrap();
        assert_eq!(cache.get("k").await.unwrap(), Some(json!(1)));
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(cache.get("k").await.unwrap(), None);
        assert!(cache.is_empty());
    }

    #[tokio::test]
    async fn put_replaces_and_remove_says_whether_there_was_one() {
        let cache = InMemoryCache::default();
        let hour = Duration::from_secs(3600);
        cache.put("k", &json!(1), hour).await.unwrap();
        cache.put("k", &json!(2), hour).await.unwrap();
        assert_eq!(cache.get("k").await.unwrap(), Some(json!(2)));
        assert!(cache.remove("k").await.unwrap());
        assert!(!cache.remove("k").await.unwrap());
    }
}
