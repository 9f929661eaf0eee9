//! The runtime's [`Cache`] on Redis: every instance of a deployment shares the values,
//! each stored as JSON under its key with `SET key value PX ttl`, expired by Redis.

use std::time::Duration;

use agent_runtime::cache::{Cache, CacheError};
use async_trait::async_trait;
use redis::AsyncCommands;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use serde_json::Value;

/// Values in Redis under the product's own keys (no prefix is added: a product's keys,
/// such as `tenant:{id}:...`, are stored as given). The connection reconnects by itself
/// after Redis restarts; a call made while Redis is down fails with [`CacheError`],
/// which a product reads as a miss.
#[derive(Clone)]
pub struct RedisCache {
    connection: ConnectionManager,
}

impl std::fmt::Debug for RedisCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RedisCache")
    }
}

fn failed(error: redis::RedisError) -> CacheError {
    CacheError(format!("redis: {error}"))
}

impl RedisCache {
    /// Connects to `url` (`redis://127.0.0.1:6379`), failing when Redis does not answer
    /// within a few seconds. Each call later times out after 2 s.
    pub async fn connect(url: &str) -> Result<Self, CacheError> {
        let client = redis::Client::open(url).map_err(failed)?;
        // A cache must answer fast or not at all: a few quick retries, short timeouts.
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(2)
            .set_max_delay(500)
            .set_connection_timeout(Duration::from_secs(2))
            .set_response_timeout(Duration::from_secs(2));
        let connection = ConnectionManager::new_with_config(client, config)
            .await
            .map_err(failed)?;
        Ok(RedisCache { connection })
    }
}

#[async_trait]
impl Cache for RedisCache {
    async fn get(&self, key: &str) -> Result<Option<Value>, CacheError> {
        let mut connection = self.connection.clone();
        let text: Option<String> = connection.get(key).await.map_err(failed)?;
        text.map(|t| {
            serde_json::from_str(&t)
                .map_err(|e| CacheError(format!("redis: the value of {key} is not JSON: {e}")))
        })
        .transpose()
    }

    async fn put(&self, key: &str, value: &Value, ttl: Duration) -> Result<(), CacheError> {
        let mut connection = self.connection.clone();
        let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let () = connection
            .pset_ex(key, value.to_string(), millis)
            .await
            .map_err(failed)?;
        Ok(())
    }

    async fn remove(&self, key: &str) -> Result<bool, CacheError> {
        let mut connection = self.connection.clone();
        let removed: u64 = connection.del(key).await.map_err(failed)?;
        Ok(removed > 0)
    }

    fn backend(&self) -> &'static str {
        "redis"
    }
}
