//! [`PgLeases`]: who runs each session, in the deployment's PostgreSQL database, timed by
//! the database's clock so instances whose clocks differ still agree on expiry.

use std::time::Duration;

use agent_runtime::sessions::{SessionLeases, StoreError};
use async_trait::async_trait;
use sqlx::Postgres;

use crate::PgSessionStore;
use crate::sql::store_error;

/// Session leases in PostgreSQL (get them with [`PgSessionStore::leases`]): a row per
/// leased session with its holder and expiry. Taking a lease is one `INSERT ... ON
/// CONFLICT DO UPDATE ... WHERE` the lease is free, expired or already the taker's, so of
/// instances racing for a session exactly one wins.
#[derive(Debug, Clone)]
pub struct PgLeases {
    db: PgSessionStore,
}

impl PgSessionStore {
    /// Session leases in this store's database, sharing its connections.
    pub fn leases(&self) -> PgLeases {
        PgLeases { db: self.clone() }
    }
}

/// A lease's length in microseconds, for `make_interval`.
fn micros(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX)
}

#[async_trait]
impl SessionLeases for PgLeases {
    async fn acquire(
        &self,
        session: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let taken: Option<String> = sqlx::query_scalar(
            "INSERT INTO session_leases (session_id, holder, expires_at) \
             VALUES ($1, $2, clock_timestamp() + $3 * interval '1 microsecond') \
             ON CONFLICT (session_id) DO UPDATE \
               SET holder = excluded.holder, expires_at = excluded.expires_at \
               WHERE session_leases.holder = excluded.holder \
                  OR session_leases.expires_at <= clock_timestamp() \
             RETURNING holder",
        )
        .bind(session)
        .bind(holder)
        .bind(micros(ttl))
        .fetch_optional(self.db.pool())
        .await
        .map_err(store_error::<Postgres>)?;
        Ok(taken.is_some())
    }

    async fn renew(&self, session: &str, holder: &str, ttl: Duration) -> Result<bool, StoreError> {
        let renewed = sqlx::query(
            "UPDATE session_leases \
             SET expires_at = clock_timestamp() + $3 * interval '1 microsecond' \
             WHERE session_id = $1 AND holder = $2",
        )
        .bind(session)
        .bind(holder)
        .bind(micros(ttl))
        .execute(self.db.pool())
        .await
        .map_err(store_error::<Postgres>)?;
        Ok(renewed.rows_affected() == 1)
    }

    async fn release(&self, session: &str, holder: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM session_leases WHERE session_id = $1 AND holder = $2")
            .bind(session)
            .bind(holder)
            .execute(self.db.pool())
            .await
            .map_err(store_error::<Postgres>)?;
        Ok(())
    }
}
