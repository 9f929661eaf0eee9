//! The optimizer's caches (spec 003 section 7.6.1): a JD analysis per tenant and JD hash
//! (24 h), a retrieval per tenant, resume and JD hash (12 h), interview outputs per
//! session and tone (7 days). Every key starts `tenant:{tenant_id}:`. The values live in
//! any runtime [`Cache`]: in process by default, Redis (agent-backends) when a deployment
//! shares them. A cache that fails is a miss, logged, never a failed run.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_runtime::cache::{Cache, InMemoryCache};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// How long a JD analysis is kept.
pub const JD_TTL: Duration = Duration::from_secs(24 * 3600);
/// How long a retrieval is kept.
pub const RETRIEVAL_TTL: Duration = Duration::from_secs(12 * 3600);
/// How long interview outputs are kept.
pub const INTERVIEW_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// What is cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheKind {
    /// JD analyses.
    JdAnalysis,
    /// Retrievals.
    Retrieval,
    /// Interview questions and cover letters.
    Interview,
}

/// The key of a JD analysis: `tenant:{tenant}:jd:{jd_hash}`.
///
/// ```
/// assert_eq!(jd_optimizer::cache::jd_key("acme", "ab12"), "tenant:acme:jd:ab12");
/// ```
pub fn jd_key(tenant: &str, jd_hash: &str) -> String {
    format!("tenant:{tenant}:jd:{jd_hash}")
}

/// The key of a retrieval: `tenant:{tenant}:retrieval:{resume_id}:{jd_hash}`.
pub fn retrieval_key(tenant: &str, resume_id: &str, jd_hash: &str) -> String {
    format!("tenant:{tenant}:retrieval:{resume_id}:{jd_hash}")
}

/// The key of interview outputs: `tenant:{tenant}:interview:{session}:{tone}`.
pub fn interview_key(tenant: &str, session: &str, tone: &str) -> String {
    format!("tenant:{tenant}:interview:{session}:{tone}")
}

/// Hits and misses by kind since the process started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CacheStats {
    /// JD analyses found.
    pub jd_hits: u64,
    /// JD analyses not found.
    pub jd_misses: u64,
    /// Retrievals found.
    pub retrieval_hits: u64,
    /// Retrievals not found.
    pub retrieval_misses: u64,
    /// Interview outputs found.
    pub interview_hits: u64,
    /// Interview outputs not found.
    pub interview_misses: u64,
}

fn rate(hits: u64, misses: u64) -> Option<f64> {
    let total = hits + misses;
    (total > 0).then(|| hits as f64 / total as f64)
}

impl CacheStats {
    /// The JD analyses' hit rate (none before the first lookup).
    pub fn jd_hit_rate(&self) -> Option<f64> {
        rate(self.jd_hits, self.jd_misses)
    }

    /// The retrievals' hit rate.
    pub fn retrieval_hit_rate(&self) -> Option<f64> {
        rate(self.retrieval_hits, self.retrieval_misses)
    }

    /// The interview outputs' hit rate.
    pub fn interview_hit_rate(&self) -> Option<f64> {
        rate(self.interview_hits, self.interview_misses)
    }

    fn count(&mut self, kind: CacheKind, hit: bool) {
        let slot = match (kind, hit) {
            (CacheKind::JdAnalysis, true) => &mut self.jd_hits,
            (CacheKind::JdAnalysis, false) => &mut self.jd_misses,
            (CacheKind::Retrieval, true) => &mut self.retrieval_hits,
            (CacheKind::Retrieval, false) => &mut self.retrieval_misses,
            (CacheKind::Interview, true) => &mut self.interview_hits,
            (CacheKind::Interview, false) => &mut self.interview_misses,
        };
        *slot += 1;
    }
}

/// Typed, counted access to a [`Cache`]. Cheap to clone; clones share the counts.
#[derive(Clone)]
pub struct OptimizerCache {
    cache: Arc<dyn Cache>,
    stats: Arc<Mutex<CacheStats>>,
}

impl std::fmt::Debug for OptimizerCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OptimizerCache")
            .field("backend", &self.cache.backend())
            .field("stats", &self.stats())
            .finish()
    }
}

impl Default for OptimizerCache {
    /// In process.
    fn default() -> Self {
        OptimizerCache::new(Arc::new(InMemoryCache::default()))
    }
}

impl OptimizerCache {
    /// Values in `cache`.
    pub fn new(cache: Arc<dyn Cache>) -> Self {
        OptimizerCache {
            cache,
            stats: Arc::default(),
        }
    }

    /// Where the values live.
    pub fn backend(&self) -> &'static str {
        self.cache.backend()
    }

    /// Hits and misses so far.
    pub fn stats(&self) -> CacheStats {
        *self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value under `key`, counted as a hit or a miss of `kind`. A value that does not
    /// read as a `T` (written by another version) and a failing cache are misses.
    pub async fn get<T: DeserializeOwned>(&self, kind: CacheKind, key: &str) -> Option<T> {
        let value = match self.cache.get(key).await {
            Ok(value) => value,
            Err(error) => {
                tracing::warn!(key, %error, "cache read failed; treated as a miss");
                None
            }
        };
        let typed = value.and_then(|v| match serde_json::from_value(v) {
            Ok(typed) => Some(typed),
            Err(error) => {
                tracing::warn!(key, %error, "cached value unreadable; treated as a miss");
                None
            }
        });
        self.stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .count(kind, typed.is_some());
        typed
    }

    /// Stores `value` under `key` for `ttl`; a failure is logged and otherwise ignored.
    pub async fn put<T: Serialize>(&self, key: &str, value: &T, ttl: Duration) {
        let value = match serde_json::to_value(value) {
            Ok(value) => value,
            Err(error) => {
                tracing::warn!(key, %error, "value not cached: it does not serialize");
                return;
            }
        };
        if let Err(error) = self.cache.put(key, &value, ttl).await {
            tracing::warn!(key, %error, "cache write failed");
        }
    }
}
