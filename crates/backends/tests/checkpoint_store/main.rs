//! One behaviour suite for every `CheckpointStore`: agent-runtime's in-memory and file
//! stores (the references), the SQLite store, on a file and in memory, and the
//! PostgreSQL store must agree. Then what only SQLite has: storage size, sharing the sessions' database, reopening,
//! concurrent writers, corrupt rows, schema migration, and a graph run on it.
#![cfg(test)]

#[path = "../pg/mod.rs"]
mod pg;

mod graph_run;
mod sqlite;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_backends::{SqliteCheckpointStore, SqliteSessionStore};
use agent_runtime::checkpoint::{
    CHECKPOINT_SCHEMA_VERSION, Checkpoint, CheckpointError, CheckpointStore, FileCheckpointStore,
    InMemoryCheckpointStore, JsonText, SnapshotPolicy,
};
use agent_runtime::sessions::{NewSession, OpenGate, SessionStore};
use serde_json::{Value, json};
use sqlx::Connection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use tempfile::TempDir;

fn message(i: usize) -> Value {
    json!({
        "role": if i.is_multiple_of(2) { "user" } else { "assistant" },
        "content": format!("message number {i}: {}", "lorem ipsum dolor sit amet ".repeat(3)),
    })
}

fn history_state(len: usize) -> Value {
    json!({
        "messages": (0..len).map(message).collect::<Vec<_>>(),
        "turn": len,
        "summary": "fixed",
    })
}

/// Checkpoint `n` of a chat whose history grows by one message per checkpoint (the
/// same value every time: taken at a fixed time).
fn turn(run_id: &str, n: usize) -> Checkpoint {
    let at = chrono::DateTime::from_timestamp(1_750_000_000 + n as i64, 123_456_789).unwrap();
    Checkpoint::new(run_id, n as u64, "turn", text(history_state(n)))
        .with_completed((0..n).map(|_| "turn"))
        .with_next("turn")
        .at(at)
}

fn cp(run_id: &str, seq: u64, node: &str, state: Value) -> Checkpoint {
    Checkpoint::new(run_id, seq, node, text(state))
}

/// `value` as a checkpoint's state.
fn text(value: Value) -> JsonText {
    JsonText::of(&value).unwrap()
}

async fn save_all(store: &dyn CheckpointStore, checkpoints: &[Checkpoint]) {
    for checkpoint in checkpoints {
        store.save(checkpoint).await.unwrap();
    }
}

// ---------------------------------------------------------------------------------------
// The suite, written once.

async fn save_latest_and_list_in_order(store: &dyn CheckpointStore) {
    assert!(!store.exists("run-a").await.unwrap());
    assert_eq!(store.latest("run-a").await.unwrap(), None);
    assert!(store.list("run-a").await.unwrap().is_empty());

    let originals = vec![
        cp(
            "run-a",
            0,
            "__start__",
            json!({"log": [], "x": 0, "tmp": true}),
        )
        .with_next("parse"),
        cp(
            "run-a",
            1,
            "parse",
            json!({"log": ["p"], "x": 1, "tmp": true}),
        )
        .with_completed(["parse"])
        .with_next("score"),
        // A field removed, one replaced, an array appended to.
        cp(
            "run-a",
            2,
            "score",
            json!({"log": ["p", "s"], "x": {"n": 2}}),
        )
        .with_completed(["parse", "score"])
        .with_next("notify"),
        // Not an object: stored in full.
        cp("run-a", 5, "notify", json!(["a", "list", 3]))
            .with_completed(["parse", "score", "notify"])
            .with_next("report"),
        cp("run-a", 9, "report", json!({"done": "Ünïcödé “quotes” \n"}))
            .with_completed(["parse", "score", "notify", "report"]),
    ];
    // Another run, interleaved, stays apart.
    let other = cp("run-b", 1, "parse", json!({"log": ["other"]})).with_next("score");
    store.save(&originals[0]).await.unwrap();
    store.save(&other).await.unwrap();
    save_all(store, &originals[1..]).await;

    assert!(store.exists("run-a").await.unwrap());
    assert_eq!(store.list("run-a").await.unwrap(), originals);
    let latest = store.latest("run-a").await.unwrap().unwrap();
    assert_eq!(Some(&latest), originals.last());
    assert!(latest.is_finished());
    assert_eq!(latest.schema_version, CHECKPOINT_SCHEMA_VERSION);
    assert_eq!(
        store.list("run-b").await.unwrap(),
        std::slice::from_ref(&other)
    );
    assert_eq!(store.latest("run-b").await.unwrap(), Some(other));
    assert!(!store.exists("run-c").await.unwrap());
}

async fn out_of_order_saves_are_refused(store: &dyn CheckpointStore) {
    let first = cp("run-o", 1, "a", json!({"n": [1]})).with_next("b");
    let second = cp("run-o", 2, "b", json!({"n": [1, 2]})).with_next("c");
    save_all(store, &[first.clone(), second.clone()]).await;
    for seq in [2, 1] {
        let stale = cp("run-o", seq, "x", json!({"n": []})).with_next("c");
        match store.save(&stale).await {
            Err(CheckpointError::OutOfOrder {
                run_id,
                seq: refused,
                latest,
            }) => assert_eq!((run_id.as_str(), refused, latest), ("run-o", seq, 2)),
            other => panic!("expected OutOfOrder for seq {seq}, got {other:?}"),
        }
    }
    assert_eq!(store.list("run-o").await.unwrap(), [first, second]);
    let third = cp("run-o", 3, "c", json!({"n": [1, 2, 3]}));
    store.save(&third).await.unwrap();
    assert_eq!(store.latest("run-o").await.unwrap(), Some(third));
}

async fn journal_records_replaces_and_reads(store: &dyn CheckpointStore) {
    assert!(store.journal("run-j").await.unwrap().is_empty());
    store
        .record_journal("run-j", "email", json!("msg-1"))
        .await
        .unwrap();
    store
        .record_journal("run-j", "upload", json!({"id": [1, 2], "ok": true}))
        .await
        .unwrap();
    store
        .record_journal("run-j", "email", json!("msg-2"))
        .await
        .unwrap();
    store
        .record_journal("run-k", "email", json!(null))
        .await
        .unwrap();
    let expected: BTreeMap<String, Value> = [
        ("email".to_owned(), json!("msg-2")),
        ("upload".to_owned(), json!({"id": [1, 2], "ok": true})),
    ]
    .into();
    assert_eq!(store.journal("run-j").await.unwrap(), expected);
    assert_eq!(
        store.journal("run-k").await.unwrap(),
        [("email".to_owned(), Value::Null)].into()
    );
    // A journal alone is not a checkpointed run.
    assert!(!store.exists("run-j").await.unwrap());
    assert_eq!(store.latest("run-j").await.unwrap(), None);
}

async fn prune_keeps_the_newest_and_what_they_need(store: &dyn CheckpointStore) {
    let originals: Vec<Checkpoint> = (1..=40).map(|n| turn("long", n)).collect();
    save_all(store, &originals).await;
    store.record_journal("long", "k", json!(1)).await.unwrap();

    assert_eq!(store.prune("long", 50).await.unwrap(), 0);
    assert_eq!(store.prune("long", 40).await.unwrap(), 0);
    // Checkpoint 36 is a delta: it must load on its own afterwards.
    assert_eq!(store.prune("long", 5).await.unwrap(), 35);
    assert_eq!(store.list("long").await.unwrap(), originals[35..]);
    assert_eq!(
        store.latest("long").await.unwrap().as_ref(),
        originals.last()
    );
    assert_eq!(store.prune("long", 5).await.unwrap(), 0);
    assert_eq!(store.journal("long").await.unwrap().len(), 1);

    // Saving goes on from the pruned history.
    let next = turn("long", 41);
    store.save(&next).await.unwrap();
    assert_eq!(store.latest("long").await.unwrap(), Some(next.clone()));
    assert_eq!(store.prune("long", 1).await.unwrap(), 5);
    assert_eq!(store.list("long").await.unwrap(), [next]);

    // Keeping none removes the run, journal included.
    store.save(&turn("long", 42)).await.unwrap();
    assert_eq!(store.prune("long", 0).await.unwrap(), 2);
    assert!(!store.exists("long").await.unwrap());
    assert_eq!(store.latest("long").await.unwrap(), None);
    assert!(store.journal("long").await.unwrap().is_empty());
    assert_eq!(store.prune("nothing-here", 3).await.unwrap(), 0);
    assert_eq!(store.prune("nothing-here", 0).await.unwrap(), 0);
    // The run id can be used again.
    store.save(&turn("long", 1)).await.unwrap();
    assert_eq!(store.list("long").await.unwrap(), [turn("long", 1)]);
}

async fn retention_by_age_removes_runs_whose_newest_checkpoint_is_old(store: &dyn CheckpointStore) {
    let two_days_ago = chrono::Utc::now() - chrono::Duration::days(2);
    let at = |c: Checkpoint| c.at(two_days_ago);
    save_all(
        store,
        &[
            at(cp("old", 1, "a", json!({"l": [1]})).with_next("b")),
            at(cp("old", 2, "b", json!({"l": [1, 2]})).with_next("c")),
            at(cp("fresh", 1, "a", json!({"l": [1]})).with_next("b")),
            cp("fresh", 2, "b", json!({"l": [1, 2]})).with_next("c"),
        ],
    )
    .await;
    store.record_journal("old", "k", json!(1)).await.unwrap();
    store.record_journal("fresh", "k", json!(1)).await.unwrap();
    // A journal written just now, without checkpoints: not stale.
    store.record_journal("young", "k", json!(1)).await.unwrap();

    let day = Duration::from_secs(86_400);
    assert_eq!(store.prune_older_than(day).await.unwrap(), 1);
    assert!(!store.exists("old").await.unwrap());
    assert!(store.journal("old").await.unwrap().is_empty());
    assert_eq!(store.list("fresh").await.unwrap().len(), 2);
    assert_eq!(store.journal("fresh").await.unwrap().len(), 1);
    assert_eq!(store.journal("young").await.unwrap().len(), 1);
    assert_eq!(store.prune_older_than(Duration::MAX).await.unwrap(), 0);
    assert_eq!(store.prune_older_than(day).await.unwrap(), 0);
}

async fn progress_and_session_round_trip(store: &dyn CheckpointStore) {
    let originals: Vec<Checkpoint> = (1..=12)
        .map(|n| {
            let mut c = turn("durable", n);
            if n % 3 != 0 {
                c = c.with_progress(
                    JsonText::of(&json!({"agents": {"writer#1": {"rounds": n}}})).unwrap(),
                );
            }
            if n > 2 {
                c.session = Some(
                    JsonText::of(&json!({"events": n, "gates": [format!("g{n}")], "usd": 0.5}))
                        .unwrap(),
                );
            }
            c
        })
        .collect();
    save_all(store, &originals).await;
    assert_eq!(store.list("durable").await.unwrap(), originals);
    let latest = store.latest("durable").await.unwrap().unwrap();
    assert_eq!(latest.progress, None);
    assert_eq!(latest.session, originals[11].session);
    assert_eq!(Some(&latest), originals.last());
}

/// 60 checkpoints of a durable agent, its transcript growing a message a round, a node
/// boundary (no progress) every 20th: stored as edits of the progress before.
async fn a_growing_progress_loads_back_identical(store: &dyn CheckpointStore) {
    let progress = |rounds: usize| {
        let messages: Vec<Value> = (0..rounds)
            .map(|n| json!({"role": "assistant", "text": format!("round {n}: «{}»", "word ".repeat(30))}))
            .collect();
        JsonText::of(&json!({
            "start_state": {"resume": "Résumé ".repeat(300)},
            "agents": {"writer#1": {"run": {"request": {"messages": messages}, "rounds": rounds}}},
            "steps": {"page": rounds / 3},
        }))
        .unwrap()
    };
    let originals: Vec<Checkpoint> = (1..=60usize)
        .map(|n| {
            let cp = turn("durable", n);
            match n % 20 {
                0 => cp,
                round => cp.with_progress(progress(round)),
            }
        })
        .collect();
    save_all(store, &originals).await;
    assert_eq!(store.list("durable").await.unwrap(), originals);
    assert_eq!(
        store.latest("durable").await.unwrap().as_ref(),
        originals.last()
    );
    assert_eq!(store.prune("durable", 4).await.unwrap(), 56);
    assert_eq!(store.list("durable").await.unwrap(), originals[56..]);
}

async fn a_growing_history_loads_back_identical(store: &dyn CheckpointStore) {
    let originals: Vec<Checkpoint> = (1..=200).map(|n| turn("chat", n)).collect();
    save_all(store, &originals).await;
    assert_eq!(store.list("chat").await.unwrap(), originals);
    assert_eq!(
        store.latest("chat").await.unwrap().as_ref(),
        originals.last()
    );
}

/// A store under test and what it lives in.
struct Fixture {
    store: Box<dyn CheckpointStore>,
    _dir: Option<TempDir>,
}

impl Fixture {
    fn in_memory() -> Self {
        let store = InMemoryCheckpointStore::with_retention(100_000, 1_000);
        Fixture {
            store: Box::new(store),
            _dir: None,
        }
    }

    fn file() -> Self {
        let dir = TempDir::new().unwrap();
        let store = FileCheckpointStore::new(dir.path().join("checkpoints"));
        Fixture {
            store: Box::new(store),
            _dir: Some(dir),
        }
    }

    async fn sqlite() -> Self {
        let dir = TempDir::new().unwrap();
        let store = SqliteCheckpointStore::open(dir.path().join("agent.db"))
            .await
            .unwrap();
        Fixture {
            store: Box::new(store),
            _dir: Some(dir),
        }
    }

    async fn sqlite_in_memory() -> Self {
        let store = SqliteCheckpointStore::in_memory().await.unwrap();
        Fixture {
            store: Box::new(store),
            _dir: None,
        }
    }
}

/// One test per store for each case of the suite.
macro_rules! suite {
    ($($case:ident),* $(,)?) => {$(
        mod $case {
            use super::*;

            #[tokio::test]
            async fn in_memory() {
                super::$case(&*Fixture::in_memory().store).await;
            }

            #[tokio::test]
            async fn file() {
                super::$case(&*Fixture::file().store).await;
            }

            #[tokio::test]
            async fn sqlite_file() {
                super::$case(&*Fixture::sqlite().await.store).await;
            }

            #[tokio::test]
            async fn sqlite_in_memory() {
                super::$case(&*Fixture::sqlite_in_memory().await.store).await;
            }

            #[tokio::test]
            async fn postgres() {
                let fixture = pg::Fixture::new().await;
                super::$case(&fixture.store.checkpoints()).await;
                fixture.cleanup().await;
            }
        }
    )*};
}

suite!(
    save_latest_and_list_in_order,
    out_of_order_saves_are_refused,
    journal_records_replaces_and_reads,
    prune_keeps_the_newest_and_what_they_need,
    retention_by_age_removes_runs_whose_newest_checkpoint_is_old,
    progress_and_session_round_trip,
    a_growing_progress_loads_back_identical,
    a_growing_history_loads_back_identical,
);
