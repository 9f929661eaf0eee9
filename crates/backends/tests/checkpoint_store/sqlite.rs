//! What only SQLite has: storage size, sharing the sessions' database, reopening,
//! concurrent writers, corrupt rows and schema migration.

use super::*;

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
        quadratic += checkpoint.state.as_str().len() as i64;
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
