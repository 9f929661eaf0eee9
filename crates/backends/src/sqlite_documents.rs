//! [`SqliteDocumentStore`]: agent-runtime's [`DocumentStore`] in the deployment's SQLite
//! database, beside its sessions and checkpoints (the table and its queries are the
//! PostgreSQL store's too: `document_tables`).

use agent_runtime::documents::{DocumentStore, DocumentUpdate};
use agent_runtime::sessions::StoreError;
use async_trait::async_trait;
use serde_json::Value;
use sqlx::Sqlite;

use crate::SqliteSessionStore;
use crate::document_tables::DocumentTables;

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
    tables: DocumentTables<Sqlite>,
}

impl SqliteSessionStore {
    /// A document store in this store's database, sharing its connections.
    pub fn documents(&self) -> SqliteDocumentStore {
        SqliteDocumentStore {
            tables: DocumentTables::new(self.pool().clone()),
        }
    }
}

#[async_trait]
impl DocumentStore for SqliteDocumentStore {
    async fn get(&self, namespace: &str, key: &str) -> Result<Option<Value>, StoreError> {
        self.tables.get(namespace, key).await
    }

    async fn put(&self, namespace: &str, key: &str, value: &Value) -> Result<(), StoreError> {
        self.tables.put(namespace, key, value).await
    }

    async fn list(&self, namespace: &str) -> Result<Vec<(String, Value)>, StoreError> {
        self.tables.list(namespace).await
    }

    async fn delete(&self, namespace: &str, key: &str) -> Result<bool, StoreError> {
        self.tables.delete(namespace, key).await
    }

    async fn update(
        &self,
        namespace: &str,
        key: &str,
        update: DocumentUpdate,
    ) -> Result<Value, StoreError> {
        self.tables.update(namespace, key, update).await
    }
}
