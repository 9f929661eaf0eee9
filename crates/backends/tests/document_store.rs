//! One behaviour suite for agent-runtime's `DocumentStore`: the in-memory store and the
//! SQLite one (a file, reopened) and the PostgreSQL one, written from two instances.
#![cfg(test)]

mod pg;

use std::sync::Arc;

use agent_backends::SqliteSessionStore;
use agent_runtime::documents::{DocumentStore, InMemoryDocumentStore};
use serde_json::{Value, json};

/// Increments the counter document `key` `times` times at once, through the stores in turn.
async fn increment_at_once(stores: &[Arc<dyn DocumentStore>], key: &'static str, times: usize) {
    let increments = (0..times).map(|i| {
        let store = stores[i % stores.len()].clone();
        tokio::spawn(async move {
            store
                .update(
                    "counter",
                    key,
                    Box::new(|now: Option<Value>| {
                        json!(now.and_then(|v| v.as_i64()).unwrap_or(0) + 1)
                    }),
                )
                .await
                .unwrap()
        })
    });
    for increment in increments {
        increment.await.unwrap();
    }
}

async fn behaves(store: Arc<dyn DocumentStore>) {
    assert_eq!(store.get("resume.master", "ada").await.unwrap(), None);
    store
        .put("resume.master", "ada", &json!({"n": 1}))
        .await
        .unwrap();
    store
        .put("resume.master", "bob", &json!({"n": 7}))
        .await
        .unwrap();
    store
        .put("other", "ada", &json!("elsewhere"))
        .await
        .unwrap();
    assert_eq!(
        store.get("resume.master", "ada").await.unwrap(),
        Some(json!({"n": 1}))
    );
    assert_eq!(
        store.get("other", "ada").await.unwrap(),
        Some(json!("elsewhere"))
    );
    store
        .put("resume.master", "ada", &json!({"n": 2}))
        .await
        .unwrap();
    assert_eq!(
        store.get("resume.master", "ada").await.unwrap(),
        Some(json!({"n": 2}))
    );

    // Concurrent updates of one document all land.
    increment_at_once(std::slice::from_ref(&store), "shared", 20).await;
    assert_eq!(
        store.get("counter", "shared").await.unwrap(),
        Some(json!(20))
    );

    // A namespace lists its own documents, by key, in byte order.
    store
        .put("resume.master", "Zed", &json!({"n": 3}))
        .await
        .unwrap();
    let listed = store.list("resume.master").await.unwrap();
    assert_eq!(
        listed,
        vec![
            ("Zed".to_owned(), json!({"n": 3})),
            ("ada".to_owned(), json!({"n": 2})),
            ("bob".to_owned(), json!({"n": 7})),
        ]
    );
    assert_eq!(store.list("nothing here").await.unwrap(), vec![]);
    assert!(store.delete("resume.master", "Zed").await.unwrap());

    assert!(store.delete("resume.master", "bob").await.unwrap());
    assert!(!store.delete("resume.master", "bob").await.unwrap());
    assert_eq!(store.get("resume.master", "bob").await.unwrap(), None);
}

#[tokio::test]
async fn in_memory_documents() {
    behaves(Arc::new(InMemoryDocumentStore::default())).await;
}

#[tokio::test]
async fn sqlite_documents_persist_beside_the_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.db");
    let sessions = SqliteSessionStore::open(&path).await.unwrap();
    behaves(Arc::new(sessions.documents())).await;
    sessions.close().await;
    let reopened = SqliteSessionStore::open(&path).await.unwrap().documents();
    assert_eq!(
        reopened.get("resume.master", "ada").await.unwrap(),
        Some(json!({"n": 2}))
    );
    assert_eq!(
        reopened.get("counter", "shared").await.unwrap(),
        Some(json!(20))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_documents_are_shared_by_instances() {
    let fixture = pg::Fixture::new().await;
    behaves(Arc::new(fixture.store.documents())).await;
    let other = fixture.second_instance().await.documents();
    assert_eq!(
        other.get("resume.master", "ada").await.unwrap(),
        Some(json!({"n": 2}))
    );
    // Updates from two instances at once all land.
    let stores: [Arc<dyn DocumentStore>; 2] =
        [Arc::new(fixture.store.documents()), Arc::new(other)];
    increment_at_once(&stores, "two instances", 20).await;
    assert_eq!(
        stores[0].get("counter", "two instances").await.unwrap(),
        Some(json!(20))
    );
    fixture.cleanup().await;
}
