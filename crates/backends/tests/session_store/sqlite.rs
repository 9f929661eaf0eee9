//! What only SQLite has: reopening a file, concurrent appends, corrupt cells and schema
//! versions.

use super::*;

/// A raw connection to a store's file, to write what the store never would.
async fn raw(path: &std::path::Path) -> SqliteConnection {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .busy_timeout(Duration::from_secs(10));
    SqliteConnection::connect_with(&options).await.unwrap()
}

#[tokio::test]
async fn file_survives_reopening() {
    let dir = TempDir::new().unwrap();
    // Parent directories are created.
    let path = dir.path().join("nested/deeper/sessions.db");
    let store = SqliteSessionStore::open(&path).await.unwrap();
    assert_eq!(store.path(), Some(path.as_path()));
    assert!(format!("{store:?}").contains("sessions.db"));

    store.create(new_session("s1", "resume")).await.unwrap();
    tick().await;
    store.create(new_session("s2", "resume")).await.unwrap();
    store.create(new_session("s3", "resume")).await.unwrap();
    store
        .set_status("s1", SessionStatus::Waiting, Some("review"))
        .await
        .unwrap();
    store
        .finish(
            "s2",
            SessionOutcome::Complete(json!({"done": true})),
            &note(),
        )
        .await
        .unwrap();
    store
        .finish("s3", SessionOutcome::Failed("broke".into()), &note())
        .await
        .unwrap();
    for i in 1..=3 {
        store.append_event("s1", &json!({"i": i})).await.unwrap();
    }
    store
        .open_gate("s1", &gate("g2", "second", &json!(2)), &note())
        .await
        .unwrap();
    store
        .open_gate("s1", &gate("g1", "first", &json!(1)), &note())
        .await
        .unwrap();
    store
        .answer_gate("s1", "g2", &json!("yes"), &note())
        .await
        .unwrap();

    let records: Vec<_> = {
        let mut all = Vec::new();
        for id in ["s1", "s2", "s3"] {
            all.push(store.get(id).await.unwrap().unwrap());
        }
        all
    };
    let events = store.events_after("s1", 0).await.unwrap();
    let gates = store.gates("s1").await.unwrap();
    let unfinished = store.unfinished("resume").await.unwrap();
    drop(store);

    let store = SqliteSessionStore::open(&path).await.unwrap();
    for record in &records {
        assert_eq!(store.get(&record.id).await.unwrap().as_ref(), Some(record));
    }
    assert_eq!(store.events_after("s1", 0).await.unwrap(), events);
    assert_eq!(store.gates("s1").await.unwrap(), gates);
    assert_eq!(store.unfinished("resume").await.unwrap(), unfinished);
    assert_eq!(
        unfinished.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        vec!["s1"]
    );
    // Numbering carries on, after the three events and the three gate announcements.
    assert_eq!(store.append_event("s1", &json!({"i": 4})).await.unwrap(), 7);
    assert_eq!(
        store.create(new_session("s1", "resume")).await,
        Err(StoreError::Conflict("s1".into()))
    );
    assert_eq!(
        store
            .answer_gate("s1", "g2", &json!("again"), &note())
            .await,
        Ok(GateAnswer::AlreadyAnswered)
    );
    assert_eq!(
        store.answer_gate("s1", "g1", &json!("now"), &note()).await,
        Ok(GateAnswer::Accepted { announced: 8 })
    );
    store.close().await;

    // Twice, with a clean close this time.
    let store = SqliteSessionStore::open(&path).await.unwrap();
    assert_eq!(store.events_after("s1", 6).await.unwrap().len(), 2);
    assert_eq!(
        store.gates("s1").await.unwrap()[1].answer,
        Some(json!("now"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_on_file() {
    let dir = TempDir::new().unwrap();
    let store = SqliteSessionStore::open(dir.path().join("sessions.db"))
        .await
        .unwrap();
    concurrent_appends(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_in_memory() {
    let store = SqliteSessionStore::in_memory().await.unwrap();
    concurrent_appends(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_from_two_stores_on_one_file() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("sessions.db");
    let a = Arc::new(SqliteSessionStore::open(&path).await.unwrap());
    let b = Arc::new(SqliteSessionStore::open(&path).await.unwrap());
    a.create(new_session("s", "resume")).await.unwrap();
    let mut tasks = Vec::new();
    for task in 0..100u64 {
        let store = if task % 2 == 0 {
            Arc::clone(&a)
        } else {
            Arc::clone(&b)
        };
        tasks.push(tokio::spawn(async move {
            store.append_event("s", &json!(task)).await.unwrap()
        }));
    }
    let mut seqs = BTreeSet::new();
    for task in tasks {
        seqs.insert(task.await.unwrap());
    }
    assert_eq!(seqs, (1..=100).collect::<BTreeSet<_>>());
}

fn assert_corrupt(result: Result<impl std::fmt::Debug, StoreError>, needles: &[&str]) {
    match result {
        Err(StoreError::Corrupt(message)) => {
            for needle in needles {
                assert!(message.contains(needle), "{message:?} lacks {needle:?}");
            }
        }
        other => panic!("expected Corrupt mentioning {needles:?}, got {other:?}"),
    }
}

#[tokio::test]
async fn corrupt_cells_read_back_as_corrupt() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteSessionStore::open(&path).await.unwrap();
    store.create(new_session("s1", "resume")).await.unwrap();
    store.create(new_session("s2", "resume")).await.unwrap();
    store.append_event("s1", &json!({"ok": 1})).await.unwrap();
    store.append_event("s1", &json!({"ok": 2})).await.unwrap();
    store
        .open_gate("s1", &gate("g1", "gate", &json!({})), &note())
        .await
        .unwrap();

    let mut conn = raw(&path).await;
    for statement in [
        "UPDATE sessions SET request = '{not json' WHERE id = 's1'",
        "UPDATE sessions SET created_at = 'yesterday' WHERE id = 's2'",
        "UPDATE events SET event = 'nope' WHERE session_id = 's1' AND seq = 2",
        "UPDATE gates SET payload = '' WHERE session_id = 's1'",
    ] {
        sqlx::query(statement).execute(&mut conn).await.unwrap();
    }
    conn.close().await.unwrap();

    assert_corrupt(store.get("s1").await, &["\"s1\"", "request", "JSON"]);
    assert_corrupt(
        store.get("s2").await,
        &["\"s2\"", "created_at", "yesterday"],
    );
    assert_corrupt(store.unfinished("resume").await, &["request"]);
    assert_corrupt(
        store.events_after("s1", 0).await,
        &["\"s1\"", "event 2", "event"],
    );
    assert_corrupt(store.events_after("s1", 1).await, &["event 2"]);
    // Only reads that reach a bad cell fail.
    let after = store.events_after("s1", 2).await.unwrap();
    assert_eq!(
        after.iter().map(|e| (e.seq, &e.event)).collect::<Vec<_>>(),
        vec![(3, &note())]
    );
    assert_corrupt(store.gates("s1").await, &["\"s1\"", "g1", "payload"]);
    // Writes that do not read the bad cells still work.
    assert_eq!(store.append_event("s1", &json!({"ok": 3})).await, Ok(4));
}

#[tokio::test]
async fn wrong_cell_types_read_back_as_corrupt() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteSessionStore::open(&path).await.unwrap();
    store.create(new_session("s1", "resume")).await.unwrap();
    store.create(new_session("s2", "resume")).await.unwrap();
    let mut conn = raw(&path).await;
    sqlx::query("UPDATE sessions SET status = 'exploded' WHERE id = 's1'")
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query("UPDATE sessions SET product = X'C328FF' WHERE id = 's2'")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    assert_corrupt(store.get("s1").await, &["\"s1\"", "status", "exploded"]);
    assert_corrupt(store.get("s2").await, &["\"s2\"", "product"]);
}

#[tokio::test]
async fn newer_schema_version_is_refused() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteSessionStore::open(&path).await.unwrap();
    store.create(new_session("s1", "resume")).await.unwrap();
    store.close().await;

    let mut conn = raw(&path).await;
    let version: i64 = sqlx::query_scalar("PRAGMA user_version")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(version, 9, "the store stamps its schema version");
    sqlx::query("PRAGMA user_version = 99")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();

    assert_corrupt(
        SqliteSessionStore::open(&path).await,
        &["schema version 99", "newer", "sessions.db"],
    );

    // A fresh file stamped by a newer version is refused too.
    let fresh = dir.path().join("fresh.db");
    let mut conn = raw(&fresh).await;
    sqlx::query("PRAGMA user_version = 10")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    assert_corrupt(SqliteSessionStore::open(&fresh).await, &["version 10"]);
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_a_backend_error() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("sessions.db");
    std::fs::write(
        &path,
        "this is not SQLite, just some text that is long enough ".repeat(100),
    )
    .unwrap();
    match SqliteSessionStore::open(&path).await {
        Err(StoreError::Backend(message)) => assert!(message.contains("sessions.db"), "{message}"),
        other => panic!("expected a backend error, got {other:?}"),
    }
}

#[tokio::test]
async fn in_memory_stores_are_separate_and_debug() {
    let a = SqliteSessionStore::in_memory().await.unwrap();
    let b = SqliteSessionStore::in_memory().await.unwrap();
    a.create(new_session("s1", "resume")).await.unwrap();
    assert_eq!(b.get("s1").await, Ok(None));
    // Clones share the database.
    let a2 = a.clone();
    assert!(a2.get("s1").await.unwrap().is_some());
    assert_eq!(a.path(), None);
    assert!(format!("{a:?}").contains(":memory:"));
}
