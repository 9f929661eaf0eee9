//! Group commit (one writer per database, ADR 0016) keeps the stores' promises: many
//! sessions writing at once get their events numbered without gaps, many sessions'
//! status changes made at once are each applied in order, many runs' checkpoints saved at
//! once are checked and stored together, a write that refuses does not cost its batch the
//! others, and a process killed with SIGKILL in the middle of batches loses nothing it
//! was told is stored.
#![cfg(test)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]

mod pg;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_backends::SqliteSessionStore;
use agent_runtime::checkpoint::{Checkpoint, CheckpointError, CheckpointStore, JsonText};
use agent_runtime::sessions::{NewSession, SessionStore, StoreError};
use serde_json::json;
use tempfile::TempDir;

fn new_session(id: &str) -> NewSession {
    NewSession {
        id: id.to_owned(),
        product: "load".to_owned(),
        token_hash: "h".to_owned(),
        tenant: None,
        request: json!({}),
    }
}

/// `sessions` sessions each get `per_session` events appended by as many tasks at once;
/// every session's events are then numbered 1..=per_session, each under the number its
/// writer was told.
async fn many_sessions_at_once(store: Arc<dyn SessionStore>, sessions: usize, per_session: u64) {
    let ids: Vec<String> = (0..sessions).map(|n| format!("s{n}")).collect();
    let created = ids.iter().map(|id| store.create(new_session(id)));
    for created in futures::future::join_all(created).await {
        created.unwrap();
    }
    let mut writers = Vec::new();
    for id in &ids {
        for n in 0..per_session {
            let (store, id) = (Arc::clone(&store), id.clone());
            writers.push(tokio::spawn(async move {
                let seq = store.append_event(&id, &json!({"n": n})).await.unwrap();
                (id, n, seq)
            }));
        }
    }
    let mut told: BTreeMap<String, BTreeMap<u64, u64>> = BTreeMap::new();
    for writer in writers {
        let (id, n, seq) = writer.await.unwrap();
        told.entry(id).or_default().insert(seq, n);
    }
    for id in &ids {
        let events = store.events_after(id, 0).await.unwrap();
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=per_session).collect::<Vec<_>>(), "session {id}");
        for event in events {
            assert_eq!(event.event, json!({"n": told[id][&event.seq]}), "{id}");
        }
        assert_eq!(store.event_count(id).await.unwrap(), per_session);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_sessions_writing_at_once_number_their_events_without_gaps_on_sqlite() {
    let dir = TempDir::new().unwrap();
    let store = SqliteSessionStore::open(dir.path().join("sessions.db"))
        .await
        .unwrap();
    many_sessions_at_once(Arc::new(store), 60, 40).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_sessions_writing_at_once_number_their_events_without_gaps_on_postgres() {
    let fixture = pg::Fixture::new().await;
    many_sessions_at_once(Arc::new(fixture.store.clone()), 60, 40).await;
    fixture.cleanup().await;
}

/// `sessions` sessions each go through the same status changes (one session's in order,
/// all sessions at once) with changes to an unknown session among them, and one session
/// gets two changes handed over together: every session ends with its last status and
/// the last stage it named, and only the unknown session's changes are refused.
async fn many_sessions_change_status_at_once(store: Arc<dyn SessionStore>, sessions: usize) {
    use agent_runtime::sessions::SessionStatus::{Running, Waiting};
    let ids: Vec<String> = (0..sessions).map(|n| format!("s{n}")).collect();
    for created in
        futures::future::join_all(ids.iter().map(|id| store.create(new_session(id)))).await
    {
        created.unwrap();
    }
    let steps = [
        (Running, Some("intake")),
        (Running, Some("research")),
        (Waiting, None),
        (Running, None),
    ];
    let mut changes = Vec::new();
    for (n, id) in ids.iter().enumerate() {
        let (store, id) = (Arc::clone(&store), id.clone());
        changes.push(tokio::spawn(async move {
            for (status, stage) in steps {
                store.set_status(&id, status, stage).await.unwrap();
            }
            // Unknown sessions' changes queued among the others.
            if n % 10 == 0 {
                assert_eq!(
                    store.set_status("ghost", Waiting, Some("gate")).await,
                    Err(StoreError::NotFound("ghost".into()))
                );
            }
        }));
    }
    for change in changes {
        change.await.unwrap();
    }
    for id in &ids {
        let record = store.get(id).await.unwrap().unwrap();
        assert_eq!(
            (record.status, record.stage.as_deref()),
            (Running, Some("research")),
            "{id}"
        );
    }
    // Two changes of one session handed over before either is answered: applied in order.
    let (first, second) = tokio::join!(
        store.set_status("s0", Waiting, Some("review")),
        store.set_status("s0", Running, None),
    );
    first.unwrap();
    second.unwrap();
    let record = store.get("s0").await.unwrap().unwrap();
    assert_eq!(
        (record.status, record.stage.as_deref()),
        (Running, Some("review"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_sessions_changing_status_at_once_are_stored_together_on_sqlite() {
    let dir = TempDir::new().unwrap();
    let store = SqliteSessionStore::open(dir.path().join("sessions.db"))
        .await
        .unwrap();
    many_sessions_change_status_at_once(Arc::new(store), 60).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_sessions_changing_status_at_once_are_stored_together_on_postgres() {
    let fixture = pg::Fixture::new().await;
    many_sessions_change_status_at_once(Arc::new(fixture.store.clone()), 60).await;
    fixture.cleanup().await;
}

/// Writes that refuse (an unknown session, a duplicate id) queued among good ones are
/// refused alone; the good ones are stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refused_write_leaves_the_rest_of_its_batch_stored() {
    let store = Arc::new(SqliteSessionStore::in_memory().await.unwrap());
    store.create(new_session("real")).await.unwrap();
    let mut writes = Vec::new();
    for n in 0..100u64 {
        let store = Arc::clone(&store);
        writes.push(tokio::spawn(async move {
            match n % 10 {
                3 => store.append_event("ghost", &json!(n)).await.err(),
                7 => store.create(new_session("real")).await.err(),
                _ => store.append_event("real", &json!(n)).await.err(),
            }
        }));
    }
    let mut refused = Vec::new();
    for write in writes {
        refused.extend(write.await.unwrap());
    }
    assert_eq!(refused.len(), 20, "{refused:?}");
    assert!(refused.contains(&StoreError::NotFound("ghost".into())));
    assert!(refused.contains(&StoreError::Conflict("real".into())));
    assert_eq!(store.event_count("real").await.unwrap(), 80);
}

/// While writes queue back to back the writer keeps its connection from batch to batch;
/// readers still read meanwhile (the file's other connections; the only connection of an
/// in-memory database is never kept), and once the writes stop the store closes.
async fn reads_go_on_beside_a_busy_writer_and_the_store_closes_after(store: SqliteSessionStore) {
    let store = Arc::new(store);
    store.create(new_session("busy")).await.unwrap();
    let writers: Vec<_> = (0..8u64)
        .map(|writer| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                for n in 0..150u64 {
                    store
                        .append_event("busy", &json!({"writer": writer, "n": n}))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    let mut read = 0;
    while !writers.iter().all(|writer| writer.is_finished()) {
        let events = tokio::time::timeout(Duration::from_secs(5), store.events_after("busy", 0))
            .await
            .expect("a read waited for the writer")
            .unwrap();
        assert!(events.len() >= read, "events went missing");
        read = events.len();
    }
    for writer in writers {
        writer.await.unwrap();
    }
    assert_eq!(store.event_count("busy").await.unwrap(), 1_200);
    let store = Arc::into_inner(store).expect("the writers are done");
    tokio::time::timeout(Duration::from_secs(5), store.close())
        .await
        .expect("the store did not close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reads_go_on_beside_a_busy_writer_on_a_file() {
    let dir = TempDir::new().unwrap();
    let store = SqliteSessionStore::open(dir.path().join("sessions.db"))
        .await
        .unwrap();
    reads_go_on_beside_a_busy_writer_and_the_store_closes_after(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reads_go_on_beside_a_busy_writer_in_memory() {
    let store = SqliteSessionStore::in_memory().await.unwrap();
    reads_go_on_beside_a_busy_writer_and_the_store_closes_after(store).await;
}

/// `runs` runs save their checkpoints 1..=`per_run` at once, each run's in order (one
/// writer per run), with a save at an old seq thrown in among them: those few are
/// refused as out of order, and every run loads back its last checkpoint with all of its
/// history.
async fn many_runs_checkpoint_at_once(store: Arc<dyn CheckpointStore>, runs: usize, per_run: u64) {
    let mut writers = Vec::new();
    for run in 0..runs {
        let store = Arc::clone(&store);
        writers.push(tokio::spawn(async move {
            let run_id = format!("run-{run}");
            let mut refused = 0;
            for seq in 1..=per_run {
                let state = json!({"log": (1..=seq).collect::<Vec<_>>()});
                let state = JsonText::of(&state).unwrap();
                let checkpoint = Checkpoint::new(&run_id, seq, "step", state).with_next("step");
                store.save(&checkpoint).await.unwrap();
                if seq == per_run / 2 {
                    let empty = JsonText::of(&json!({"log": []})).unwrap();
                    let stale = Checkpoint::new(&run_id, seq - 1, "step", empty);
                    match store.save(&stale).await {
                        Err(CheckpointError::OutOfOrder { .. }) => refused += 1,
                        other => panic!("a stale checkpoint was not refused: {other:?}"),
                    }
                }
            }
            refused
        }));
    }
    let mut refused = 0;
    for writer in writers {
        refused += writer.await.unwrap();
    }
    assert_eq!(refused, runs);
    for run in 0..runs {
        let latest = store.latest(&format!("run-{run}")).await.unwrap().unwrap();
        assert_eq!(latest.seq, per_run);
        assert_eq!(
            latest.state.as_str(),
            json!({"log": (1..=per_run).collect::<Vec<_>>()}).to_string()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_runs_checkpointing_at_once_are_stored_together_on_sqlite() {
    let dir = TempDir::new().unwrap();
    let sessions = SqliteSessionStore::open(dir.path().join("runs.db"))
        .await
        .unwrap();
    many_runs_checkpoint_at_once(Arc::new(sessions.checkpoints()), 50, 12).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_runs_checkpointing_at_once_are_stored_together_on_postgres() {
    let fixture = pg::Fixture::new().await;
    many_runs_checkpoint_at_once(Arc::new(fixture.store.checkpoints()), 50, 12).await;
    fixture.cleanup().await;
}

/// The environment variable that makes [`writes_until_killed`] run, naming its database.
const CHILD_DATABASE: &str = "GROUP_COMMIT_CHILD_DATABASE";

/// Sessions the child writes to at once, each with its own run of checkpoints.
const CHILD_WRITERS: usize = 24;

/// The child half of [`a_kill_mid_batch_loses_no_acknowledged_event_or_checkpoint`]:
/// writers append events and save checkpoints as fast as the store takes them, each
/// printing a line once its write is acknowledged, until the parent kills the process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the child process of a_kill_mid_batch_loses_no_acknowledged_event_or_checkpoint"]
async fn writes_until_killed() {
    let path = std::env::var(CHILD_DATABASE).expect("run by the kill test");
    let store = SqliteSessionStore::open(&path).await.unwrap();
    let checkpoints = store.checkpoints();
    let mut writers = Vec::new();
    for w in 0..CHILD_WRITERS {
        let (store, checkpoints) = (store.clone(), checkpoints.clone());
        writers.push(tokio::spawn(async move {
            let id = format!("w{w}");
            store.create(new_session(&id)).await.unwrap();
            for n in 1u64.. {
                let seq = store.append_event(&id, &json!({"n": n})).await.unwrap();
                println!("event {id} {seq} {n}");
                if n % 4 == 0 {
                    let state = JsonText::of(&json!({"n": n})).unwrap();
                    let checkpoint = Checkpoint::new(&id, n / 4, "step", state).with_next("step");
                    checkpoints.save(&checkpoint).await.unwrap();
                    println!("checkpoint {id} {}", n / 4);
                }
            }
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
}

/// A process writing through group commit is killed with SIGKILL while batches are being
/// committed; reopened, the database holds every event and checkpoint the process was
/// told is stored, under the number it was told, and each session's events are numbered
/// without gaps.
#[tokio::test]
async fn a_kill_mid_batch_loses_no_acknowledged_event_or_checkpoint() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("sessions.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["writes_until_killed", "--exact", "--ignored", "--nocapture"])
        .env(CHILD_DATABASE, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events: Vec<(String, u64, u64)> = Vec::new();
    let mut saved: BTreeMap<String, u64> = BTreeMap::new();
    let read = |line: String, events: &mut Vec<_>, saved: &mut BTreeMap<_, _>| {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["event", id, seq, n] => {
                events.push(((*id).to_owned(), seq.parse().unwrap(), n.parse().unwrap()))
            }
            ["checkpoint", id, seq] => {
                saved.insert((*id).to_owned(), seq.parse().unwrap());
            }
            _ => {}
        }
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while events.len() < 4000 && Instant::now() < deadline {
        match lines.next() {
            Some(line) => read(line.unwrap(), &mut events, &mut saved),
            None => panic!("the child stopped before it was killed"),
        }
    }
    assert!(events.len() >= 4000, "the child wrote too slowly");
    child.kill().unwrap();
    child.wait().unwrap();
    // What it printed before it died was acknowledged too.
    for line in lines {
        read(line.unwrap(), &mut events, &mut saved);
    }

    let store = SqliteSessionStore::open(&path).await.unwrap();
    let checkpoints = store.checkpoints();
    let mut sessions = BTreeSet::new();
    for (id, seq, n) in &events {
        let stored = store.events_after(id, seq - 1).await.unwrap();
        assert_eq!(
            stored.first().map(|e| &e.event),
            Some(&json!({"n": n})),
            "{id} #{seq}"
        );
        sessions.insert(id.clone());
    }
    for id in &sessions {
        let seqs: Vec<u64> = store
            .events_after(id, 0)
            .await
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect();
        let last = seqs.len() as u64;
        assert_eq!(seqs, (1..=last).collect::<Vec<_>>(), "{id}: a gap");
    }
    assert!(!saved.is_empty());
    for (id, seq) in &saved {
        let stored = checkpoints.list(id).await.unwrap();
        let kept = stored.iter().find(|c| c.seq == *seq);
        assert_eq!(
            kept.map(|c| c.state.to_value().unwrap()),
            Some(json!({"n": seq * 4})),
            "{id}: checkpoint {seq} lost"
        );
        let seqs: Vec<u64> = stored.iter().map(|c| c.seq).collect();
        assert_eq!(
            seqs,
            (1..=seqs.len() as u64).collect::<Vec<_>>(),
            "{id}: a gap"
        );
    }
}
