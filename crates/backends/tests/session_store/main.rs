//! One behaviour suite for every `SessionStore`: the in-memory reference, SQLite in memory
//! SQLite on a file and PostgreSQL must agree. Then what only SQLite has: reopening a
//! file, concurrent appends, corrupt cells and schema versions; and what PostgreSQL adds:
//! two instances appending and answering at once, and session leases.
#![cfg(test)]

#[path = "../pg/mod.rs"]
mod pg;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use agent_backends::SqliteSessionStore;
use agent_runtime::sessions::{
    GateAnswer, InMemorySessionStore, NewSession, OpenGate, SessionOutcome, SessionStatus,
    SessionStore, StoreError,
};
use serde_json::{Value, json};
use sqlx::Connection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use tempfile::TempDir;

fn new_session(id: &str, product: &str) -> NewSession {
    NewSession {
        id: id.to_owned(),
        product: product.to_owned(),
        token_hash: format!("hash-of-{id}"),
        tenant: None,
        request: json!({
            "cv": "Ünïcödé “quotes” \n and newlines",
            "n": 3,
            "f": 1.5,
            "nested": {"list": [1, null, true, "x"]},
        }),
    }
}

/// A gate to open, its kind its name.
fn gate<'a>(id: &'a str, name: &'a str, payload: &'a Value) -> OpenGate<'a> {
    OpenGate {
        id,
        name,
        kind: name,
        payload,
    }
}

/// What the tests announce a gate's change with.
fn note() -> Value {
    json!({"type": "gate_changed"})
}

/// Sessions created this far apart have different `created_at`s.
async fn tick() {
    tokio::time::sleep(Duration::from_millis(3)).await;
}

/// Runs a suite function against the three stores, one test each.
macro_rules! suite {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use super::*;

            #[tokio::test]
            async fn in_memory_reference() {
                super::$name(&InMemorySessionStore::new()).await;
            }

            #[tokio::test]
            async fn sqlite_in_memory() {
                let store = SqliteSessionStore::in_memory().await.unwrap();
                super::$name(&store).await;
            }

            #[tokio::test]
            async fn sqlite_file() {
                let dir = TempDir::new().unwrap();
                let store = SqliteSessionStore::open(dir.path().join("sessions.db"))
                    .await
                    .unwrap();
                super::$name(&store).await;
                store.close().await;
            }

            #[tokio::test]
            async fn postgres() {
                let fixture = crate::pg::Fixture::new().await;
                super::$name(&fixture.store).await;
                fixture.cleanup().await;
            }
        }
    )*};
}

mod gates;
mod postgres;
mod sessions;
mod sqlite;

async fn concurrent_appends(store: Arc<dyn SessionStore>) {
    store.create(new_session("busy", "resume")).await.unwrap();
    store.create(new_session("quiet", "resume")).await.unwrap();
    let mut tasks = Vec::new();
    for task in 0..200u64 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let seq = store
                .append_event("busy", &json!({"task": task}))
                .await
                .unwrap();
            (task, seq)
        }));
    }
    // Another session's appends interleave without affecting the count.
    for i in 1..=5u64 {
        assert_eq!(store.append_event("quiet", &json!(i)).await.unwrap(), i);
    }
    let mut returned = Vec::new();
    for task in tasks {
        returned.push(task.await.unwrap());
    }
    let seqs: BTreeSet<u64> = returned.iter().map(|(_, seq)| *seq).collect();
    assert_eq!(seqs.len(), 200, "duplicate numbers");
    assert_eq!(seqs, (1..=200).collect::<BTreeSet<_>>());

    let events = store.events_after("busy", 0).await.unwrap();
    assert_eq!(
        events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=200).collect::<Vec<_>>()
    );
    // Each task's event is stored under the number it was given.
    for (task, seq) in returned {
        assert_eq!(events[seq as usize - 1].event, json!({"task": task}));
    }
    assert_eq!(store.events_after("quiet", 0).await.unwrap().len(), 5);
}
