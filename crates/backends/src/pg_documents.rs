//! [`PgDocumentStore`]: agent-runtime's [`DocumentStore`] in the deployment's PostgreSQL
//! database, as JSONB by namespace and key.

use agent_runtime::documents::{DocumentStore, DocumentUpdate};
use agent_runtime::sessions::StoreError;
use async_trait::async_trait;
use serde_json::Value;
use sqlx::PgConnection;

use crate::PgSessionStore;
use crate::pg_schema::{backend, now};

/// Documents that outlive sessions (a returning user's master resume), in PostgreSQL:
/// get one with [`PgSessionStore::documents`]. An [`update`](DocumentStore::update) holds
/// a transaction-scoped advisory lock on its document, so updates from any instance take
/// turns, even on a document that does not exist yet.
#[derive(Debug, Clone)]
pub struct PgDocumentStore {
    db: PgSessionStore,
}

impl PgSessionStore {
    /// A document store in this store's database, sharing its connections.
    pub fn documents(&self) -> PgDocumentStore {
        PgDocumentStore { db: self.clone() }
    }
}

async fn write_value(
    conn: &mut PgConnection,
    namespace: &str,
    key: &str,
    value: &Value,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO documents (namespace, key, value, updated_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, \
         updated_at = excluded.updated_at",
    )
    .bind(namespace)
    .bind(key)
    .bind(value)
    .bind(now())
    .execute(conn)
    .await
    .map_err(backend)?;
    Ok(())
}

async fn read_value(
    conn: &mut PgConnection,
    namespace: &str,
    key: &str,
) -> Result<Option<Value>, StoreError> {
    sqlx::query_scalar("SELECT value FROM documents WHERE namespace = $1 AND key = $2")
        .bind(namespace)
        .bind(key)
        .fetch_optional(conn)
        .await
        .map_err(backend)
}

#[async_trait]
impl DocumentStore for PgDocumentStore {
    async fn get(&self, namespace: &str, key: &str) -> Result<Option<Value>, StoreError> {
        let mut conn = self.db.pool().acquire().await.map_err(backend)?;
        read_value(&mut conn, namespace, key).await
    }

    async fn put(&self, namespace: &str, key: &str, value: &Value) -> Result<(), StoreError> {
        let mut conn = self.db.pool().acquire().await.map_err(backend)?;
        write_value(&mut conn, namespace, key, value).await
    }

    async fn list(&self, namespace: &str) -> Result<Vec<(String, Value)>, StoreError> {
        sqlx::query_as(
            "SELECT key, value FROM documents WHERE namespace = $1 ORDER BY key COLLATE \"C\"",
        )
        .bind(namespace)
        .fetch_all(self.db.pool())
        .await
        .map_err(backend)
    }

    async fn delete(&self, namespace: &str, key: &str) -> Result<bool, StoreError> {
        let deleted = sqlx::query("DELETE FROM documents WHERE namespace = $1 AND key = $2")
            .bind(namespace)
            .bind(key)
            .execute(self.db.pool())
            .await
            .map_err(backend)?
            .rows_affected();
        Ok(deleted > 0)
    }

    async fn update(
        &self,
        namespace: &str,
        key: &str,
        update: DocumentUpdate,
    ) -> Result<Value, StoreError> {
        let mut tx = self.db.pool().begin().await.map_err(backend)?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(format!("document {}:{namespace}{key}", namespace.len()))
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
        let current = read_value(&mut tx, namespace, key).await?;
        let value = update(current);
        write_value(&mut tx, namespace, key, &value).await?;
        tx.commit().await.map_err(backend)?;
        Ok(value)
    }
}
