//! Documents that outlive a session: what a product keeps per user or per item across
//! sessions (a returning user's evidence, a profile), JSON by namespace and key.
//!
//! [`DocumentStore`] is the trait (agent-backends keeps documents in the deployment's
//! SQLite database); [`InMemoryDocumentStore`] is the in-process one for tests and
//! single-run tools. [`update`](DocumentStore::update) is atomic per key, so two sessions
//! of one user finishing at once both land.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::Value;

use crate::sessions::StoreError;

/// Makes a document's new value from its current one (`None` when there is none).
pub type DocumentUpdate = Box<dyn FnOnce(Option<Value>) -> Value + Send>;

/// Keeps JSON documents by namespace (a product's kind of record, e.g. `resume.master`)
/// and key (e.g. a user id). Object-safe: products take an `Arc<dyn DocumentStore>`.
#[async_trait]
pub trait DocumentStore: Send + Sync {
    /// The document, if there is one.
    async fn get(&self, namespace: &str, key: &str) -> Result<Option<Value>, StoreError>;

    /// Replaces (or creates) the document.
    async fn put(&self, namespace: &str, key: &str, value: &Value) -> Result<(), StoreError>;

    /// Every document of `namespace`, by key in ascending order.
    async fn list(&self, namespace: &str) -> Result<Vec<(String, Value)>, StoreError>;

    /// Removes the document; whether there was one.
    async fn delete(&self, namespace: &str, key: &str) -> Result<bool, StoreError>;

    /// Reads the document, makes its new value with `update` and writes it, with no other
    /// write to the same document in between; returns the new value.
    async fn update(
        &self,
        namespace: &str,
        key: &str,
        update: DocumentUpdate,
    ) -> Result<Value, StoreError>;
}

/// Documents in memory, lost with the process.
///
/// ```
/// use agent_runtime::documents::{DocumentStore, InMemoryDocumentStore};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use serde_json::json;
///
/// let store = InMemoryDocumentStore::default();
/// store.put("notes", "ada", &json!({"seen": 1})).await?;
/// let after = store
///     .update("notes", "ada", Box::new(|now| json!({"seen": now.map_or(0, |v| v["seen"].as_i64().unwrap_or(0)) + 1})))
///     .await?;
/// assert_eq!(after, json!({"seen": 2}));
/// assert_eq!(store.get("notes", "ada").await?, Some(json!({"seen": 2})));
/// # Ok::<(), agent_runtime::sessions::StoreError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Default)]
pub struct InMemoryDocumentStore {
    documents: Mutex<HashMap<(String, String), Value>>,
}

impl InMemoryDocumentStore {
    fn documents(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Value>> {
        // A panic while holding the lock leaves whole values behind: keep going.
        self.documents
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn id(namespace: &str, key: &str) -> (String, String) {
    (namespace.to_owned(), key.to_owned())
}

#[async_trait]
impl DocumentStore for InMemoryDocumentStore {
    async fn get(&self, namespace: &str, key: &str) -> Result<Option<Value>, StoreError> {
        Ok(self.documents().get(&id(namespace, key)).cloned())
    }

    async fn put(&self, namespace: &str, key: &str, value: &Value) -> Result<(), StoreError> {
        self.documents().insert(id(namespace, key), value.clone());
        Ok(())
    }

    async fn list(&self, namespace: &str) -> Result<Vec<(String, Value)>, StoreError> {
        let mut listed: Vec<(String, Value)> = self
            .documents()
            .iter()
            .filter(|((ns, _), _)| ns == namespace)
            .map(|((_, key), value)| (key.clone(), value.clone()))
            .collect();
        listed.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(listed)
    }

    async fn delete(&self, namespace: &str, key: &str) -> Result<bool, StoreError> {
        Ok(self.documents().remove(&id(namespace, key)).is_some())
    }

    async fn update(
        &self,
        namespace: &str,
        key: &str,
        update: DocumentUpdate,
    ) -> Result<Value, StoreError> {
        let mut documents = self.documents();
        let key = id(namespace, key);
        let value = update(documents.remove(&key));
        documents.insert(key, value.clone());
        Ok(value)
    }
}
