//! [`SqliteDocumentStore`]: agent-runtime's [`DocumentStore`] in the deployment's SQLite
//! database, beside its sessions and checkpoints.

use agent_runtime::documents::{DocumentStore, DocumentUpdate};
use agent_runtime::sessions::StoreError;
use async_trait::async_trait;
use serde_json::Value;
use sqlx::SqliteConnection;

use crate::SqliteSessionStore;
use crate::sqlite_rows::{backend, json_text, now};
use crate::sqlite_schema::timestamp;

/// Documents in a SQLite database (table `documents`), sharing a [`SqliteSessionStore`]'s
/// connections. An [`update`](DocumentStore::update) holds the database's write lock from
/// its read to its write.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use agent_backends::SqliteSessionStore;
/// use agent_runtime::documents::DocumentStore;
/// use serde_json::json;
///
/// let documents = SqliteSessionStore::in_memory().await?.documents();
/// documents.put("resume.master", "ada", &json!({"evidence": []})).await?;
/// assert_eq!(documents.get("resume.master", "ada").await?, Some(json!({"evidence": []})));
/// # Ok::<(), agent_runtime::sessions::StoreError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct SqliteDocumentStore {
    db: SqliteSessionStore,
}

impl SqliteSessionStore {
    /// A document store in this store's database, sharing its connections.
    pub fn documents(&self) -> SqliteDocumentStore {
        SqliteDocumentStore { db: self.clone() }
    }
}

async fn read_value(
    conn: &mut SqliteConnection,
    namespace: &str,
    key: &str,
) -> Result<Option<Value>, StoreError> {
    let text: Option<String> =
        sqlx::query_scalar("SELECT value FROM documents WHERE namespace = ?1 AND key = ?2")
            .bind(namespace)
            .bind(key)
            .fetch_optional(conn)
            .await
            .map_err(backend)?;
    text.map(|text| {
        serde_json::from_str(&text)
            .map_err(|e| StoreError::Corrupt(format!("document {namespace}/{key}: {e}")))
    })
    .transpose()
}

async fn write_value(
    conn: &mut SqliteConnection,
    namespace: &str,
    key: &str,
    value: &Value,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO documents (namespace, key, value, updated_at) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, \
         updated_at = excluded.updated_at",
    )
    .bind(namespace)
    .bind(key)
    .bind(json_text(value)?)
    .bind(timestamp(now()))
    .execute(conn)
    .await
    .map_err(backend)?;
    Ok(())
}

#[async_trait]
impl DocumentStore for SqliteDocumentStore {
    async fn get(&self, namespace: &str, key: &str) -> Result<Option<Value>, StoreError> {
        let mut tx = self.db.read().await?;
        let value = read_value(&mut tx, namespace, key).await?;
        tx.commit().await.map_err(backend)?;
        Ok(value)
    }

    async fn put(&self, namespace: &str, key: &str, value: &Value) -> Result<(), StoreError> {
        let mut tx = self.db.write().await?;
        write_value(&mut tx, namespace, key, value).await?;
        tx.commit().await.map_err(backend)
    }

    async fn list(&self, namespace: &str) -> Result<Vec<(String, Value)>, StoreError> {
        let mut tx = self.db.read().await?;
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT key, value FROM documents WHERE namespace = ?1 ORDER BY key")
                .bind(namespace)
                .fetch_all(&mut *tx)
                .await
                .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        rows.into_iter()
            .map(|(key, text)| {
                let value = serde_json::from_str(&text)
                    .map_err(|e| StoreError::Corrupt(format!("document {namespace}/{key}: {e}")))?;
                Ok((key, value))
            })
            .collect()
    }

    async fn delete(&self, namespace: &str, key: &str) -> Result<bool, StoreError> {
        let mut tx = self.db.write().await?;
        let deleted = sqlx::query("DELETE FROM documents WHERE namespace = ?1 AND key = ?2")
            .bind(namespace)
            .bind(key)
            .execute(&mut *tx)
            .await
            .map_err(backend)?
            .rows_affected();
        tx.commit().await.map_err(backend)?;
        Ok(deleted > 0)
    }

    async fn update(
        &self,
        namespace: &str,
        key: &str,
        update: DocumentUpdate,
    ) -> Result<Value, StoreError> {
        let mut tx = self.db.write().await?;
        let current = read_value(&mut tx, namespace, key).await?;
        let value = update(current);
        write_value(&mut tx, namespace, key, &value).await?;
        tx.commit().await.map_err(backend)?;
        Ok(value)
    }
}
