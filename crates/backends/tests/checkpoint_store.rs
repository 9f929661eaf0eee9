//! One behaviour suite for every `CheckpointStore`: agent-runtime's in-memory and file
//! stores (the references), the SQLite store, on a file and in memory, and the
//! PostgreSQL store must agree. Then what only SQLite has: storage size, sharing the sessions' database, reopening,
//! concurrent writers, corrupt rows, schema migration, and a graph run on it.
#![cfg(test)]

mod pg;

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
    Checkpoint::new(run_id, n as u64, "turn", history_state(n))
        .with_completed((0..n).map(|_| "turn"))
        .with_next("turn")
        .at(at)
}

fn cp(run_id: &str, seq: u64, node: &str, state: Value) -> Checkpoint {
    Checkpoint::new(run_id, seq, node, state)
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

// ---------------------------------------------------------------------------------------
// What only SQLite has.

async fn raw(path: &Path) -> SqliteConnection {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .busy_timeout(Duration::from_secs(10));
    SqliteConnection::connect_with(&options).await.unwrap()
}

async fn execute(path: &Path, statements: &[&str]) {
    let mut conn = raw(path).await;
    for statement in statements {
        sqlx::query(statement).execute(&mut conn).await.unwrap();
    }
    conn.close().await.unwrap();
}

/// The bytes of the stored records of a run, and how many are full snapshots.
async fn stored(path: &Path, run_id: &str) -> (i64, i64) {
    let mut conn = raw(path).await;
    let sizes = sqlx::query_as(
        "SELECT COALESCE(SUM(LENGTH(record)), 0), COALESCE(SUM(full_record), 0) FROM checkpoints \
         WHERE run_id = ?1",
    )
    .bind(run_id)
    .fetch_one(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    sizes
}

fn new_session(id: &str) -> NewSession {
    NewSession {
        id: id.to_owned(),
        product: "resume".to_owned(),
        token_hash: format!("hash-of-{id}"),
        tenant: None,
        request: json!({"cv": "..."}),
    }
}

#[tokio::test]
async fn a_growing_history_is_stored_far_below_the_quadratic_sum() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("agent.db");
    let store = SqliteCheckpointStore::open(&path).await.unwrap();
    let mut quadratic = 0;
    let mut originals = Vec::new();
    for n in 1..=200 {
        let checkpoint = turn("chat", n);
        quadratic += serde_json::to_string(&checkpoint.state).unwrap().len() as i64;
        store.save(&checkpoint).await.unwrap();
        originals.push(checkpoint);
    }
    let last = serde_json::to_string(&history_state(200)).unwrap().len() as i64;
    let (bytes, fulls) = stored(&path, "chat").await;
    // As the file store: about 4.4 times the final state, against 100 times for full
    // snapshots, with a handful of snapshots spaced geometrically.
    assert!(
        bytes * 20 < quadratic,
        "{bytes} B stored, {quadratic} B in full"
    );
    assert!(bytes < 5 * last, "{bytes} B stored, final state {last} B");
    assert!((2..12).contains(&fulls), "{fulls} full snapshots");

    // A fresh store on the file reads the same back.
    let fresh = SqliteCheckpointStore::open(&path).await.unwrap();
    assert_eq!(fresh.list("chat").await.unwrap(), originals);
    assert_eq!(
        fresh.latest("chat").await.unwrap().as_ref(),
        originals.last()
    );

    // A policy of full snapshots only is the quadratic sum.
    let every = SqliteCheckpointStore::open(&path)
        .await
        .unwrap()
        .with_snapshot_policy(SnapshotPolicy::Every(1));
    assert_eq!(every.snapshot_policy(), SnapshotPolicy::Every(1));
    for n in 1..=50 {
        every.save(&turn("full", n)).await.unwrap();
    }
    assert_eq!(stored(&path, "full").await.1, 50);
}

#[tokio::test]
async fn a_thousand_runs_saving_in_turn_each_write_deltas() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("agent.db");
    let store = SqliteCheckpointStore::open(&path).await.unwrap();
    let runs: Vec<String> = (0..1_000).map(|n| format!("run-{n}")).collect();
    // Every run saves once before any saves again, as a server's live sessions do: the
    // store must still hold each run's encoder at its next save.
    for n in 1..=3 {
        let saves = runs.iter().map(|run| {
            let store = &store;
            async move { store.save(&turn(run, n)).await.unwrap() }
        });
        futures::future::join_all(saves).await;
    }
    let mut conn = raw(&path).await;
    let (records, fulls): (i64, i64) =
        sqlx::query_as("SELECT COUNT(*), SUM(full_record) FROM checkpoints")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    conn.close().await.unwrap();
    assert_eq!(records, 3_000);
    assert_eq!(fulls, 1_000, "only each run's first checkpoint is full");
}

#[tokio::test]
async fn sessions_and_checkpoints_share_one_database() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("agent.db");
    let sessions = SqliteSessionStore::open(&path).await.unwrap();
    let checkpoints = sessions.checkpoints();
    assert_eq!(checkpoints.path(), Some(path.as_path()));
    assert!(format!("{checkpoints:?}").contains("agent.db"));

    sessions.create(new_session("s1")).await.unwrap();
    for n in 1..=5 {
        sessions
            .append_event("s1", &json!({"turn": n}))
            .await
            .unwrap();
        checkpoints.save(&turn("s1", n)).await.unwrap();
    }
    checkpoints
        .record_journal("s1", "email", json!("sent"))
        .await
        .unwrap();

    // A second pair of stores on the file sees both.
    let other = SqliteCheckpointStore::open(&path).await.unwrap();
    assert_eq!(other.latest("s1").await.unwrap(), Some(turn("s1", 5)));
    assert_eq!(other.journal("s1").await.unwrap()["email"], json!("sent"));
    let other_sessions = other.sessions();
    assert_eq!(other_sessions.event_count("s1").await.unwrap(), 5);

    // Removing a run leaves the session alone, and the reverse.
    assert_eq!(checkpoints.prune("s1", 0).await.unwrap(), 5);
    assert_eq!(sessions.event_count("s1").await.unwrap(), 5);
    checkpoints.save(&turn("s2", 1)).await.unwrap();
    sessions.create(new_session("s2")).await.unwrap();
    assert!(checkpoints.exists("s2").await.unwrap());

    // One in-memory database serves both too.
    let memory = SqliteSessionStore::in_memory().await.unwrap();
    let memory_checkpoints = memory.checkpoints();
    memory.create(new_session("m")).await.unwrap();
    memory_checkpoints.save(&turn("m", 1)).await.unwrap();
    assert_eq!(
        memory_checkpoints
            .sessions()
            .get("m")
            .await
            .unwrap()
            .unwrap()
            .id,
        "m"
    );
    assert_eq!(memory_checkpoints.path(), None);
    assert!(format!("{memory_checkpoints:?}").contains(":memory:"));
}

#[tokio::test]
async fn reopening_the_file_keeps_everything_and_writing_goes_on() {
    let dir = TempDir::new().unwrap();
    // Parent directories are created.
    let path = dir.path().join("nested/agent.db");
    let store = SqliteCheckpointStore::open(&path).await.unwrap();
    let originals: Vec<Checkpoint> = (1..=30).map(|n| turn("chat", n)).collect();
    save_all(&store, &originals).await;
    store.record_journal("chat", "a", json!(1)).await.unwrap();
    store.record_journal("other", "b", json!(2)).await.unwrap();
    drop(store);

    let store = SqliteCheckpointStore::open(&path).await.unwrap();
    assert_eq!(store.list("chat").await.unwrap(), originals);
    assert_eq!(store.journal("chat").await.unwrap()["a"], json!(1));
    assert_eq!(store.journal("other").await.unwrap()["b"], json!(2));
    // The order is checked against the database, not what this store wrote.
    assert!(matches!(
        store.save(&turn("chat", 30)).await,
        Err(CheckpointError::OutOfOrder { latest: 30, .. })
    ));
    let more: Vec<Checkpoint> = (31..=40).map(|n| turn("chat", n)).collect();
    save_all(&store, &more).await;
    store.sessions().close().await;

    let store = SqliteCheckpointStore::open(&path).await.unwrap();
    let all: Vec<Checkpoint> = originals.into_iter().chain(more).collect();
    assert_eq!(store.list("chat").await.unwrap(), all);
}

#[tokio::test]
async fn two_stores_writing_one_run_in_turn_stay_consistent() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("agent.db");
    let a = SqliteCheckpointStore::open(&path).await.unwrap();
    let b = SqliteCheckpointStore::open(&path).await.unwrap();
    let originals: Vec<Checkpoint> = (1..=20).map(|n| turn("chat", n)).collect();
    for (i, checkpoint) in originals.iter().enumerate() {
        // Each store's cached base goes stale whenever the other one writes.
        let store = if i % 3 == 0 { &b } else { &a };
        store.save(checkpoint).await.unwrap();
    }
    assert_eq!(a.list("chat").await.unwrap(), originals);
    assert_eq!(b.latest("chat").await.unwrap().as_ref(), originals.last());
    // The other store pruned: this one's base is still the latest checkpoint.
    assert_eq!(b.prune("chat", 2).await.unwrap(), 18);
    a.save(&turn("chat", 21)).await.unwrap();
    assert_eq!(
        b.list("chat").await.unwrap(),
        [19, 20, 21].map(|n| turn("chat", n))
    );
}

fn assert_corrupt<T: std::fmt::Debug>(result: Result<T, CheckpointError>, needles: &[&str]) {
    match result {
        Err(CheckpointError::Corrupt { ident, reason }) => {
            let message = format!("{ident}: {reason}");
            for needle in needles {
                assert!(message.contains(needle), "{message:?} lacks {needle:?}");
            }
        }
        other => panic!("expected Corrupt mentioning {needles:?}, got {other:?}"),
    }
}

#[tokio::test]
async fn unreadable_records_are_corrupt_naming_the_run_and_seq() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("agent.db");
    // One full snapshot, then deltas.
    let store = SqliteCheckpointStore::open(&path)
        .await
        .unwrap()
        .with_snapshot_policy(SnapshotPolicy::Every(100));
    for run in ["bad-json", "no-base", "swapped", "newer"] {
        save_all(&store, &(1..=6).map(|n| turn(run, n)).collect::<Vec<_>>()).await;
    }
    store
        .record_journal("bad-json", "email", json!(1))
        .await
        .unwrap();
    let newer = format!(
        "UPDATE checkpoints SET record = replace(record, '\"schema_version\":{CHECKPOINT_SCHEMA_VERSION}', \
         '\"schema_version\":99') WHERE run_id = 'newer' AND seq = 6"
    );
    execute(
        &path,
        &[
            "UPDATE checkpoints SET record = '{not json' WHERE run_id = 'bad-json' AND seq = 4",
            "UPDATE checkpoint_journal SET value = 'nope' WHERE run_id = 'bad-json'",
            "DELETE FROM checkpoints WHERE run_id = 'no-base' AND seq = 1",
            "UPDATE checkpoints SET record = (SELECT record FROM checkpoints \
             WHERE run_id = 'swapped' AND seq = 2) WHERE run_id = 'swapped' AND seq = 3",
            &newer,
        ],
    )
    .await;

    assert_corrupt(
        store.latest("bad-json").await,
        &["\"bad-json\"", "seq 4", "agent.db"],
    );
    assert_corrupt(store.list("bad-json").await, &["\"bad-json\" seq 4"]);
    assert_corrupt(
        store.journal("bad-json").await,
        &["\"bad-json\"", "\"email\"", "JSON"],
    );
    // Pruning does not remove what the records kept need when those cannot be read.
    assert_corrupt(store.prune("bad-json", 3).await, &["seq 4"]);
    assert_corrupt(store.list("no-base").await, &["\"no-base\" seq 2"]);
    assert_corrupt(
        store.latest("no-base").await,
        &["\"no-base\" seq 2", "full snapshot"],
    );
    assert_corrupt(
        store.latest("swapped").await,
        &["\"swapped\" seq 3", "columns"],
    );
    assert!(matches!(
        store.latest("newer").await,
        Err(CheckpointError::SchemaVersion { found: 99, .. })
    ));
    // Other runs and writes are unaffected.
    assert_eq!(store.exists("bad-json").await.ok(), Some(true));
    store.save(&turn("fine", 1)).await.unwrap();
    assert_eq!(store.latest("fine").await.unwrap(), Some(turn("fine", 1)));
}

#[tokio::test]
async fn an_older_database_is_migrated_and_a_newer_one_refused() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("agent.db");
    // A database as the first schema left it: sessions only.
    let sessions = SqliteSessionStore::open(&path).await.unwrap();
    sessions.create(new_session("s1")).await.unwrap();
    for n in 1..=2 {
        sessions.append_event("s1", &json!({"n": n})).await.unwrap();
    }
    let gate = OpenGate {
        id: "g1",
        name: "review",
        kind: "review",
        payload: &json!({}),
    };
    sessions
        .open_gate("s1", &gate, &json!({"type": "gate_open"}))
        .await
        .unwrap();
    sessions.close().await;
    execute(
        &path,
        &[
            "DROP TABLE checkpoints",
            "DROP TABLE checkpoint_journal",
            "ALTER TABLE gates DROP COLUMN kind",
            "ALTER TABLE gates DROP COLUMN closed",
            "ALTER TABLE gates DROP COLUMN closed_at",
            "ALTER TABLE sessions DROP COLUMN resume_attempts",
            "ALTER TABLE sessions DROP COLUMN resume_events",
            "ALTER TABLE sessions DROP COLUMN tenant",
            "PRAGMA user_version = 1",
        ],
    )
    .await;

    let store = SqliteCheckpointStore::open(&path).await.unwrap();
    store.save(&turn("run", 1)).await.unwrap();
    let sessions = store.sessions();
    assert!(sessions.get("s1").await.unwrap().is_some());
    // The events (two, and the gate's announcement) go on from the ones stored before,
    // and the old gate reads as its kind.
    assert_eq!(sessions.event_count("s1").await.unwrap(), 3);
    assert_eq!(
        sessions.append_event("s1", &json!({"n": 4})).await.unwrap(),
        4
    );
    assert_eq!(sessions.gates("s1").await.unwrap()[0].kind, "review");
    sessions.close().await;
    let mut conn = raw(&path).await;
    let version: i64 = sqlx::query_scalar("PRAGMA user_version")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(version, 9);
    sqlx::query("PRAGMA user_version = 10")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    assert_corrupt(
        SqliteCheckpointStore::open(&path).await,
        &["agent.db", "schema version 10", "newer"],
    );
}

// ---------------------------------------------------------------------------------------
// A graph run on the SQLite store.

mod graph_run {
    use super::*;
    use agent_runtime::graph::{
        CompiledGraph, END, NodeContext, NodeError, RunOptions, RunStatus, StateGraph, node_fn,
    };
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
    struct Job {
        log: Vec<String>,
        receipt: Option<String>,
    }

    #[derive(Default)]
    struct Probe {
        runs: AtomicUsize,
        emails: AtomicUsize,
        crash: AtomicUsize,
    }

    fn step(name: &'static str) -> impl agent_runtime::graph::Node<Job> + use<> {
        node_fn(move |ctx: &NodeContext<Job>| {
            Box::pin(async move {
                ctx.update(|s| s.log.push(name.to_owned()));
                Ok(())
            })
        })
    }

    /// parse -> notify -> report; `notify` sends an email through `once`, then crashes
    /// the first time.
    fn job_graph(probe: &Arc<Probe>) -> CompiledGraph<Job> {
        let p = probe.clone();
        let notify = node_fn(move |ctx: &NodeContext<Job>| {
            let probe = p.clone();
            Box::pin(async move {
                probe.runs.fetch_add(1, Ordering::SeqCst);
                let receipt: String = ctx
                    .once("digest-email", || async {
                        let n = probe.emails.fetch_add(1, Ordering::SeqCst) + 1;
                        Ok::<_, NodeError>(format!("msg-{n}"))
                    })
                    .await?;
                if probe.crash.swap(0, Ordering::SeqCst) == 1 {
                    return Err(NodeError::fatal("process crashed"));
                }
                ctx.update(|s| {
                    s.receipt = Some(receipt);
                    s.log.push("notify".to_owned());
                });
                Ok(())
            })
        });
        StateGraph::new()
            .then("parse", step("parse"))
            .then("notify", notify)
            .then("report", step("report"))
            .add_edge("report", END)
            .compile()
            .unwrap()
    }

    #[tokio::test]
    async fn a_crashed_run_resumes_from_the_sqlite_store_without_repeating_its_email() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("agent.db");
        let sessions = SqliteSessionStore::open(&path).await.unwrap();
        let store: Arc<dyn CheckpointStore> = Arc::new(sessions.checkpoints());
        let probe = Arc::new(Probe::default());
        probe.crash.store(1, Ordering::SeqCst);

        let crashed = job_graph(&probe)
            .run_checkpointed(
                Job::default(),
                store.clone(),
                RunOptions::new().with_run_id("job-1"),
            )
            .await
            .unwrap();
        assert_eq!(crashed.status, RunStatus::Failed);
        let latest = store.latest("job-1").await.unwrap().unwrap();
        assert_eq!(latest.next.as_deref(), Some("notify"));
        assert_eq!(
            store.journal("job-1").await.unwrap()["digest-email"],
            json!("msg-1")
        );
        let again = job_graph(&probe)
            .run_checkpointed(
                Job::default(),
                store.clone(),
                RunOptions::new().with_run_id("job-1"),
            )
            .await;
        assert!(matches!(again, Err(CheckpointError::RunExists(_))));
        drop(store);
        sessions.close().await;

        // A new process: a new store on the file, a new graph.
        let store: Arc<dyn CheckpointStore> =
            Arc::new(SqliteCheckpointStore::open(&path).await.unwrap());
        let resumed = job_graph(&probe)
            .resume("job-1", store.clone(), RunOptions::new())
            .await
            .unwrap();
        assert!(resumed.is_success(), "{:?}", resumed.reason);
        assert_eq!(probe.runs.load(Ordering::SeqCst), 2);
        assert_eq!(probe.emails.load(Ordering::SeqCst), 1, "no second email");
        assert_eq!(resumed.state.log, ["parse", "notify", "report"]);
        assert_eq!(resumed.state.receipt.as_deref(), Some("msg-1"));
        assert_eq!(resumed.node_names(), ["notify", "report"]);

        let all = store.list("job-1").await.unwrap();
        assert!(all.windows(2).all(|w| w[0].seq < w[1].seq));
        let last = all.last().unwrap();
        assert!(last.is_finished());
        assert_eq!(last.completed, ["parse", "notify", "report"]);
        assert_eq!(Job::deserialize(&*last.state).unwrap(), resumed.state);
    }
}
