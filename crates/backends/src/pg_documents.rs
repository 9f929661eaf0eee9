//! [`PgDocumentStore`]: agent-runtime's [`DocumentStore`] in the deployment's PostgreSQL
//! database, as JSONB by namespace and key (the table and its queries are the SQLite
//! store's too: `document_tables`).

use agent_runtime::documents::{DocumentStore, DocumentUpdate};
use agent_runtime::sessions::StoreError;
use async_trait::async_trait;
use serde_json::Value;
use sqlx::Postgres;

use crate::PgSessionStore;
use crate::document_tables::DocumentTables;

/// Documents that outlive sessions (a returning user's master resume), in PostgreSQL:
/// get one with [`PgSessionStore::documents`]. An [`update`](DocumentStore::update) holds
/// a transaction-scoped advisory lock on its document, so updates from any instance take
/// turns, even on a document that does not exist yet.
#[derive(Debug, Clone)]
pub struct PgDocumentStore {
    tables: DocumentTables<Postgres>,
}

impl PgSessionStore {
    /// A document store in this store's database, sharing its connections.
    pub fn documents(&self) -> PgDocumentStore {
        PgDocumentStore {
            tables: DocumentTables::new(self.pool().clone()),
        }
    }
}

#[async_trait]
impl DocumentStore for PgDocumentStore {
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
