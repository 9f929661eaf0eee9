//! Checkpoint stores and checkpointed graph runs: saving, resuming after a crash, the
//! journal, corruption, deltas, pruning and retention.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_runtime::checkpoint::{
    CHECKPOINT_SCHEMA_VERSION, Checkpoint, CheckpointError, CheckpointStore, FileCheckpointStore,
    InMemoryCheckpointStore,
};
use agent_runtime::graph::{
    CompiledGraph, END, FnNode, Node, NodeError, RunOptions, RunResult, RunStatus, START,
    StateGraph, node_fn,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "agent-runtime-{tag}-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct Counter {
    x: i64,
    loops: i64,
}

fn bump(loops: i64) -> FnNode<Counter> {
    node_fn(move |s: &mut Counter, _| {
        Box::pin(async move {
            s.x += 1;
            s.loops += loops;
            Ok(())
        })
    })
}

fn workload_c() -> CompiledGraph<Counter> {
    StateGraph::new()
        .add_node("n1", bump(0))
        .add_node("n2", bump(0))
        .add_node("n3", bump(0))
        .add_node("n4", bump(1))
        .add_node("n5", bump(0))
        .add_node("n6", bump(0))
        .add_edge(START, "n1")
        .add_edge("n1", "n2")
        .add_edge("n2", "n3")
        .add_edge("n3", "n4")
        .add_conditional_edges(
            "n4",
            |s: &Counter| if s.loops < 3 { "again" } else { "done" },
            [("again", "n2"), ("done", "n5")],
        )
        .add_edge("n5", "n6")
        .add_edge("n6", END)
        .compile()
        .unwrap()
}

/// Runs workload C with checkpoints.
async fn run_c(store: Arc<dyn CheckpointStore>, options: RunOptions) -> RunResult<Counter> {
    let result = workload_c()
        .run_checkpointed(Counter::default(), store, options)
        .await;
    result.unwrap()
}

/// A checkpoint with an empty state.
fn cp(run_id: &str, seq: u64, node: &str) -> Checkpoint {
    Checkpoint::new(run_id, seq, node, json!({}))
}

async fn save(store: &dyn CheckpointStore, checkpoint: Checkpoint) {
    store.save(&checkpoint).await.unwrap();
}

#[tokio::test]
async fn a_checkpointed_run_saves_after_every_node_naming_the_next() {
    let store = Arc::new(InMemoryCheckpointStore::with_retention(100, 10));
    let options = RunOptions::new().with_run_id("c-run");
    let result = run_c(store.clone(), options).await;
    assert_eq!(result.status, RunStatus::Success);
    assert_eq!(result.state, Counter { x: 12, loops: 3 });

    let all = store.list("c-run").await.unwrap();
    assert_eq!(
        all.iter().map(|c| c.seq).collect::<Vec<_>>(),
        (0..=12).collect::<Vec<_>>()
    );
    assert_eq!(
        (all[0].node.as_str(), all[0].next.as_deref()),
        (START, Some("n1"))
    );
    assert_eq!(all[0].state, json!({"x": 0, "loops": 0}));
    assert_eq!(
        (all[4].node.as_str(), all[4].next.as_deref()),
        ("n4", Some("n2"))
    );
    assert_eq!(all[4].completed, ["n1", "n2", "n3", "n4"]);
    assert_eq!(all[4].state, json!({"x": 4, "loops": 1}));
    let last = &all[12];
    assert!(last.is_finished());
    assert_eq!(last.completed.len(), 12);
    assert_eq!(last.state, json!({"x": 12, "loops": 3}));
    assert!(
        all.iter()
            .all(|c| c.schema_version == CHECKPOINT_SCHEMA_VERSION && c.run_id == "c-run")
    );
}

/// Per-node execution counts and the number of emails "sent".
#[derive(Default)]
struct Probe {
    runs: [AtomicUsize; 4],
    emails: AtomicUsize,
    /// 0: behave, 1: fail fatally once after the email, 2: hang after the email.
    mode: AtomicUsize,
    hanging: tokio::sync::Notify,
}

impl Probe {
    fn runs(&self) -> [usize; 4] {
        self.runs.each_ref().map(|r| r.load(Ordering::SeqCst))
    }
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct Job {
    log: Vec<String>,
    receipt: Option<String>,
}

fn step(probe: &Arc<Probe>, i: usize, name: &'static str) -> impl Node<Job> + use<> {
    let probe = probe.clone();
    node_fn(move |s: &mut Job, _| {
        let probe = probe.clone();
        Box::pin(async move {
            probe.runs[i].fetch_add(1, Ordering::SeqCst);
            s.log.push(name.to_owned());
            Ok(())
        })
    })
}

/// parse -> score -> notify -> report; `notify` sends an email through `once`.
fn job_graph(probe: &Arc<Probe>) -> CompiledGraph<Job> {
    let p = probe.clone();
    let notify = node_fn(move |s: &mut Job, ctx| {
        let probe = p.clone();
        Box::pin(async move {
            probe.runs[2].fetch_add(1, Ordering::SeqCst);
            let receipt: String = ctx
                .once("digest-email", || async {
                    let n = probe.emails.fetch_add(1, Ordering::SeqCst) + 1;
                    Ok::<_, NodeError>(format!("msg-{n}"))
                })
                .await?;
            match probe.mode.swap(0, Ordering::SeqCst) {
                1 => return Err(NodeError::fatal("process crashed")),
                2 => {
                    probe.hanging.notify_one();
                    std::future::pending::<()>().await;
                }
                _ => {}
            }
            s.receipt = Some(receipt);
            s.log.push("notify".to_owned());
            Ok(())
        })
    });
    StateGraph::new()
        .then("parse", step(probe, 0, "parse"))
        .then("score", step(probe, 1, "score"))
        .then("notify", notify)
        .then("report", step(probe, 3, "report"))
        .add_edge("report", END)
        .compile()
        .unwrap()
}

#[tokio::test]
async fn a_failed_node_resumes_without_rerunning_completed_nodes_or_its_side_effect() {
    let dir = TempDir::new("crash");
    let store: Arc<dyn CheckpointStore> = Arc::new(FileCheckpointStore::new(&dir.0));
    let probe = Arc::new(Probe::default());
    probe.mode.store(1, Ordering::SeqCst);
    let graph = job_graph(&probe);

    let options = RunOptions::new().with_run_id("job-1");
    let crashed = graph
        .run_checkpointed(Job::default(), store.clone(), options)
        .await
        .unwrap();
    assert_eq!(crashed.status, RunStatus::Failed);
    assert_eq!(probe.runs(), [1, 1, 1, 0]);
    assert_eq!(probe.emails.load(Ordering::SeqCst), 1);
    let latest = store.latest("job-1").await.unwrap().unwrap();
    assert_eq!((latest.seq, latest.next.as_deref()), (2, Some("notify")));
    assert_eq!(
        store.journal("job-1").await.unwrap()["digest-email"],
        json!("msg-1")
    );

    // A new process: a new graph value over the same store.
    let resumed = job_graph(&probe)
        .resume("job-1", store.clone(), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(resumed.status, RunStatus::Success);
    assert_eq!(
        probe.runs(),
        [1, 1, 2, 1],
        "parse and score are not run again"
    );
    assert_eq!(
        probe.emails.load(Ordering::SeqCst),
        1,
        "the email is not sent again"
    );
    assert_eq!(resumed.state.log, ["parse", "score", "notify", "report"]);
    assert_eq!(resumed.state.receipt.as_deref(), Some("msg-1"));
    assert_eq!(resumed.node_names(), ["notify", "report"]);
    assert_eq!(
        resumed.steps.iter().map(|s| s.step).collect::<Vec<_>>(),
        [3, 4]
    );
    assert_eq!(resumed.run_id, "job-1");
}

#[tokio::test]
async fn a_run_dropped_mid_node_resumes_and_its_recorded_side_effect_is_not_repeated() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let probe = Arc::new(Probe::default());
    probe.mode.store(2, Ordering::SeqCst);
    let graph = Arc::new(job_graph(&probe));

    let (g, s) = (graph.clone(), store.clone());
    let task = tokio::spawn(async move {
        g.run_checkpointed(Job::default(), s, RunOptions::new().with_run_id("job-2"))
            .await
    });
    probe.hanging.notified().await;
    // The effect's result was persisted before the node went on.
    assert_eq!(
        store.journal("job-2").await.unwrap()["digest-email"],
        json!("msg-1")
    );
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());

    let resumed = job_graph(&probe)
        .resume("job-2", store.clone(), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(resumed.status, RunStatus::Success);
    assert_eq!(probe.runs(), [1, 1, 2, 1]);
    assert_eq!(probe.emails.load(Ordering::SeqCst), 1);
    assert_eq!(resumed.state.receipt.as_deref(), Some("msg-1"));
}

#[tokio::test]
async fn resuming_a_finished_run_returns_it_without_running_anything() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let probe = Arc::new(Probe::default());
    let graph = job_graph(&probe);
    let done = graph
        .run_checkpointed(
            Job::default(),
            store.clone(),
            RunOptions::new().with_run_id("done"),
        )
        .await
        .unwrap();
    assert!(done.is_success());
    let again = graph
        .resume("done", store.clone(), RunOptions::new())
        .await
        .unwrap();
    assert!(again.is_success());
    assert!(again.steps.is_empty());
    assert_eq!(again.state, done.state);
    assert_eq!(probe.runs(), [1, 1, 1, 1]);
}

#[tokio::test]
async fn unknown_existing_and_incompatible_runs_are_refused() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let graph = workload_c();
    let missing = graph.resume("nope", store.clone(), RunOptions::new()).await;
    assert!(matches!(missing, Err(CheckpointError::NotFound(id)) if id == "nope"));

    let options = || RunOptions::new().with_run_id("taken");
    run_c(store.clone(), options()).await;
    let again = graph
        .run_checkpointed(Counter::default(), store.clone(), options())
        .await;
    assert!(matches!(again, Err(CheckpointError::RunExists(id)) if id == "taken"));

    let renamed = Checkpoint::new("renamed", 1, "old", json!({"x": 1, "loops": 0}));
    save(&*store, renamed.with_next("gone")).await;
    let incompatible = graph
        .resume("renamed", store.clone(), RunOptions::new())
        .await;
    assert!(
        matches!(incompatible, Err(CheckpointError::Incompatible { reason, .. }) if reason.contains("\"gone\""))
    );

    let wrong = Checkpoint::new("wrong-state", 1, "n1", json!({"y": true}));
    save(&*store, wrong.with_next("n2")).await;
    let wrong = graph
        .resume("wrong-state", store.clone(), RunOptions::new())
        .await;
    assert!(matches!(wrong, Err(CheckpointError::Incompatible { .. })));

    let dir = TempDir::new("ids");
    let files = FileCheckpointStore::new(&dir.0);
    for bad in ["", "../escape", "a--b", ".hidden", "with space"] {
        let err = files.save(&cp(bad, 1, "n")).await.unwrap_err();
        assert!(
            matches!(err, CheckpointError::InvalidRunId { .. }),
            "{bad:?}: {err}"
        );
    }
}

#[tokio::test]
async fn seqs_must_increase_within_a_run() {
    let dir = TempDir::new("order");
    let stores: [Arc<dyn CheckpointStore>; 2] = [
        Arc::new(InMemoryCheckpointStore::new()),
        Arc::new(FileCheckpointStore::new(&dir.0)),
    ];
    for store in stores {
        save(&*store, cp("r", 2, "a").with_next("b")).await;
        let err = store.save(&cp("r", 2, "b")).await.unwrap_err();
        let expected = (2, 2);
        assert!(
            matches!(err, CheckpointError::OutOfOrder { seq, latest, .. } if (seq, latest) == expected)
        );
    }
}

#[tokio::test]
async fn files_are_named_by_run_seq_and_node_and_written_atomically() {
    let dir = TempDir::new("names");
    let store = Arc::new(FileCheckpointStore::new(&dir.0));
    let probe = Arc::new(Probe::default());
    let options = RunOptions::new().with_run_id("run_20250201-1200");
    job_graph(&probe)
        .run_checkpointed(Job::default(), store.clone(), options)
        .await
        .unwrap();
    assert_eq!(
        dir.names(),
        [
            "run_20250201-1200--0000000000-__start__.json",
            "run_20250201-1200--0000000001-parse.json",
            "run_20250201-1200--0000000002-score.json",
            "run_20250201-1200--0000000003-notify.json",
            "run_20250201-1200--0000000004-report.json",
            "run_20250201-1200--journal.json",
        ],
        "one file per checkpoint, the journal, and no temporary file left behind"
    );
    assert_eq!(
        FileCheckpointStore::file_name("r", 7, "fetch page/2"),
        "r--0000000007-fetch_page_2.json"
    );

    // Another run in the same directory is kept apart.
    save(&*store, cp("run_20250201", 9, "x")).await;
    assert_eq!(store.list("run_20250201-1200").await.unwrap().len(), 5);
    assert_eq!(store.list("run_20250201").await.unwrap().len(), 1);
    assert!(store.exists("run_20250201").await.unwrap());
    assert!(!store.exists("run_2025").await.unwrap());
}

fn only_file(dir: &Path, seq: u64) -> PathBuf {
    let marker = format!("--{seq:010}-");
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_str().unwrap().contains(&marker))
        .unwrap()
}

#[tokio::test]
async fn a_corrupt_or_newer_checkpoint_file_is_a_clear_error_naming_it() {
    let dir = TempDir::new("corrupt");
    let store = Arc::new(FileCheckpointStore::new(&dir.0));
    let options = RunOptions::new().with_run_id("broken");
    run_c(store.clone(), options).await;
    let last = only_file(&dir.0, 12);

    std::fs::write(&last, b"{\"schema_version\": 1, \"run_id\": \"bro").unwrap();
    let err = store.latest("broken").await.unwrap_err();
    let CheckpointError::Corrupt { ident, .. } = &err else {
        panic!("{err}")
    };
    assert!(ident.ends_with("broken--0000000012-n6.json"), "{ident}");
    assert!(err.to_string().contains(ident.as_str()), "{err}");
    let resumed = workload_c()
        .resume("broken", store.clone(), RunOptions::new())
        .await;
    assert!(matches!(resumed, Err(CheckpointError::Corrupt { .. })));

    std::fs::write(&last, br#"{"schema_version": 1, "something": "else"}"#).unwrap();
    assert!(matches!(
        store.latest("broken").await,
        Err(CheckpointError::Corrupt { .. })
    ));

    let mut newer: Value =
        serde_json::from_slice(&std::fs::read(only_file(&dir.0, 11)).unwrap()).unwrap();
    newer["schema_version"] = json!(99);
    newer["seq"] = json!(12);
    std::fs::write(&last, serde_json::to_vec(&newer).unwrap()).unwrap();
    let err = store.latest("broken").await.unwrap_err();
    assert!(
        matches!(
            err,
            CheckpointError::SchemaVersion {
                found: 99,
                supported: CHECKPOINT_SCHEMA_VERSION,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("upgrade"), "{err}");
}

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

fn quadratic_step(len: usize) -> u64 {
    serde_json::to_vec(&history_state(len)).unwrap().len() as u64
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

#[tokio::test]
async fn growing_histories_are_stored_as_deltas_and_load_back_identical() {
    let dir = TempDir::new("delta");
    let file_store = FileCheckpointStore::new(&dir.0);
    let memory_store = InMemoryCheckpointStore::with_retention(1_000, 10);
    let mut quadratic = 0u64;
    let mut originals = Vec::new();
    for n in 1..=200usize {
        let state = history_state(n);
        quadratic += quadratic_step(n);
        let cp = Checkpoint::new("chat", n as u64, "turn", state)
            .with_completed((0..n).map(|_| "turn"))
            .with_next("turn");
        file_store.save(&cp).await.unwrap();
        memory_store.save(&cp).await.unwrap();
        originals.push(cp);
    }
    // About 116 kB against 2.65 MB for full snapshots: 4.4 times the final state of
    // 26 kB. The deltas alone are 2.5 times it (each carries ~200 B of metadata with its
    // ~130 B message), and the snapshots cost at most as much as the deltas before them.
    let (stored, last) = (dir_bytes(&dir.0), quadratic_step(200));
    assert!(
        stored * 20 < quadratic,
        "{stored} B stored, {quadratic} B in full"
    );
    assert!(stored < 5 * last, "{stored} B stored, final state {last} B");

    for store in [&file_store as &dyn CheckpointStore, &memory_store] {
        assert_eq!(store.list("chat").await.unwrap(), originals);
        assert_eq!(
            store.latest("chat").await.unwrap().as_ref(),
            originals.last()
        );
    }
}

/// Saves `n` checkpoints of a history growing by one message each to a file store and
/// returns the bytes stored over the bytes of the final state, checking the last
/// checkpoint loads back identical (from a fresh store, which rebuilds it from files).
#[allow(clippy::print_stderr)]
async fn storage_ratio(n: usize) -> f64 {
    let dir = TempDir::new("ratio");
    let file_store = FileCheckpointStore::new(&dir.0);
    let mut messages = Vec::with_capacity(n);
    let mut cp = None;
    for len in 1..=n {
        messages.push(message(len - 1));
        let state = json!({"messages": messages, "turn": len, "summary": "fixed"});
        let next = Checkpoint::new("chat", len as u64, "turn", state)
            .with_completed((0..len).map(|_| "turn"))
            .with_next("turn");
        file_store.save(&next).await.unwrap();
        cp = Some(next);
    }
    let last = cp.unwrap();
    assert_eq!(last.state, history_state(n));
    let fresh = FileCheckpointStore::new(&dir.0);
    assert_eq!(fresh.latest("chat").await.unwrap(), Some(last));
    let (stored, final_state) = (dir_bytes(&dir.0), quadratic_step(n));
    let ratio = stored as f64 / final_state as f64;
    eprintln!("n={n}: {stored} B stored, final state {final_state} B, ratio {ratio:.2}");
    ratio
}

#[tokio::test]
async fn storage_stays_linear_in_the_history_over_2000_checkpoints() {
    // About 4.7 and 5.0. Were storage quadratic, the ratio would grow with n (fourfold
    // from 500 to 2,000 for snapshots at a fixed interval; a snapshot every 256
    // checkpoints already makes it 7.2 at 2,000).
    let (at_500, at_2000) = (storage_ratio(500).await, storage_ratio(2_000).await);
    assert!(
        at_2000 < 1.5 * at_500,
        "ratio {at_500:.2} at 500, {at_2000:.2} at 2000"
    );
    assert!(at_2000 < 5.5, "ratio {at_2000:.2} at 2000");
}

#[tokio::test]
async fn prune_keeps_the_latest_checkpoints_and_what_they_need() {
    let dir = TempDir::new("prune");
    let file_store = FileCheckpointStore::new(&dir.0);
    let memory_store = InMemoryCheckpointStore::with_retention(1_000, 10);
    let mut originals = Vec::new();
    for n in 1..=40usize {
        let cp = Checkpoint::new("long", n as u64, "turn", history_state(n)).with_next("turn");
        file_store.save(&cp).await.unwrap();
        memory_store.save(&cp).await.unwrap();
        originals.push(cp);
    }
    file_store
        .record_journal("long", "k", json!(1))
        .await
        .unwrap();
    let kind = |seq| {
        let stored: Value =
            serde_json::from_slice(&std::fs::read(only_file(&dir.0, seq)).unwrap()).unwrap();
        stored["body"]["kind"].clone()
    };
    assert_eq!(kind(36), "delta");
    for store in [&file_store as &dyn CheckpointStore, &memory_store] {
        // Checkpoint 36 is a delta on 35: pruning rewrites it in full.
        assert_eq!(store.prune("long", 5).await.unwrap(), 35);
        assert_eq!(store.list("long").await.unwrap(), originals[35..]);
        assert_eq!(store.prune("long", 5).await.unwrap(), 0);
    }
    assert_eq!(kind(36), "full");
    assert_eq!(dir.names().len(), 6);

    // Saving goes on from the pruned history.
    let next = Checkpoint::new("long", 41, "turn", history_state(41));
    file_store.save(&next).await.unwrap();
    assert_eq!(file_store.latest("long").await.unwrap(), Some(next));

    assert_eq!(file_store.prune("long", 0).await.unwrap(), 6);
    assert!(
        dir.names().is_empty(),
        "the journal goes too: {:?}",
        dir.names()
    );
    assert_eq!(file_store.latest("long").await.unwrap(), None);
}

#[tokio::test]
async fn retention_by_age_removes_runs_whose_newest_checkpoint_is_old() {
    let dir = TempDir::new("age");
    let stores: [Arc<dyn CheckpointStore>; 2] = [
        Arc::new(InMemoryCheckpointStore::new()),
        Arc::new(FileCheckpointStore::new(&dir.0)),
    ];
    let two_days_ago = chrono::Utc::now() - chrono::Duration::days(2);
    for store in stores {
        save(&*store, cp("old", 1, "a").at(two_days_ago).with_next("b")).await;
        save(&*store, cp("old", 2, "b").at(two_days_ago)).await;
        store.record_journal("old", "k", json!(1)).await.unwrap();
        save(&*store, cp("fresh", 1, "a").at(two_days_ago).with_next("b")).await;
        save(&*store, cp("fresh", 2, "b")).await;

        let day = Duration::from_secs(86_400);
        assert_eq!(store.prune_older_than(day).await.unwrap(), 1);
        assert!(store.latest("old").await.unwrap().is_none());
        assert!(store.journal("old").await.unwrap().is_empty());
        assert_eq!(store.list("fresh").await.unwrap().len(), 2);
        assert_eq!(store.prune_older_than(Duration::MAX).await.unwrap(), 0);
    }
}

#[tokio::test]
async fn the_in_memory_store_keeps_the_latest_per_run_and_evicts_least_recent_runs() {
    let store = InMemoryCheckpointStore::with_retention(3, 2);
    for seq in 1..=10 {
        let state = json!({"items": (0..seq).collect::<Vec<_>>()});
        save(&store, Checkpoint::new("a", seq, "n", state).with_next("n")).await;
    }
    let kept = store.list("a").await.unwrap();
    assert_eq!(kept.iter().map(|c| c.seq).collect::<Vec<_>>(), [8, 9, 10]);
    assert_eq!(kept[0].state, json!({"items": (0..8).collect::<Vec<_>>()}));

    save(&store, cp("b", 1, "n")).await;
    save(&store, cp("a", 11, "n")).await;
    save(&store, cp("c", 1, "n")).await;
    assert_eq!(store.run_count(), 2);
    assert!(
        store.exists("a").await.unwrap(),
        "written to recently, kept"
    );
    assert!(
        !store.exists("b").await.unwrap(),
        "least recently written, evicted"
    );
}

#[tokio::test]
async fn the_in_memory_store_stays_bounded_over_20000_runs() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    for _ in 0..20_000 {
        assert_eq!(run_c(store.clone(), RunOptions::new()).await.state.x, 12);
    }
    assert_eq!(store.run_count(), 1_000);
    assert_eq!(store.checkpoint_count(), 8_000);
}

/// Times WORKLOAD.md part C with the in-memory store. A measurement, not an assertion:
/// `cargo test --release -p agent-runtime --test checkpoints -- --ignored --nocapture`.
#[test]
#[ignore = "benchmark; run in release with --ignored --nocapture"]
#[allow(clippy::print_stderr)]
fn bench_workload_c_with_the_in_memory_store() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let runs = 20_000u32;
        let start = std::time::Instant::now();
        for _ in 0..runs {
            assert_eq!(run_c(store.clone(), RunOptions::new()).await.state.x, 12);
        }
        let elapsed = start.elapsed();
        eprintln!(
            "workload C, in-memory checkpoints: {:.3} us/transition, {:.2} us/run ({runs} runs in {elapsed:?}; {} runs, {} checkpoints held)",
            elapsed.as_secs_f64() * 1e6 / f64::from(runs * 12),
            elapsed.as_secs_f64() * 1e6 / f64::from(runs),
            store.run_count(),
            store.checkpoint_count(),
        );
    });
}
