//! Checkpointed graph runs: saving after every node, resuming after a crash without
//! repeating journaled side effects, refused runs, file naming and corruption, and the
//! reads a durable run makes to learn whether it is new.
#![cfg(test)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_runtime::checkpoint::testing::{InterceptedStore, StoreCall};
use agent_runtime::checkpoint::{
    CHECKPOINT_SCHEMA_VERSION, Checkpoint, CheckpointError, CheckpointStore, FileCheckpointStore,
    InMemoryCheckpointStore,
};
use agent_runtime::graph::{
    CompiledGraph, END, Node, NodeContext, NodeError, RunOptions, RunStatus, START, StateGraph,
    node_fn,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

mod common;
use common::*;

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
    assert_eq!(state_value(&all[0]), json!({"x": 0, "loops": 0}));
    assert_eq!(
        (all[4].node.as_str(), all[4].next.as_deref()),
        ("n4", Some("n2"))
    );
    assert_eq!(all[4].completed, ["n1", "n2", "n3", "n4"]);
    assert_eq!(state_value(&all[4]), json!({"x": 4, "loops": 1}));
    let last = &all[12];
    assert!(last.is_finished());
    assert_eq!(last.completed.len(), 12);
    assert_eq!(state_value(last), json!({"x": 12, "loops": 3}));
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
    node_fn(move |ctx: &NodeContext<Job>| {
        let probe = probe.clone();
        Box::pin(async move {
            probe.runs[i].fetch_add(1, Ordering::SeqCst);
            ctx.update(|s| s.log.push(name.to_owned()));
            Ok(())
        })
    })
}

/// parse -> score -> notify -> report; `notify` sends an email through `once`.
fn job_graph(probe: &Arc<Probe>) -> CompiledGraph<Job> {
    let p = probe.clone();
    let notify = node_fn(move |ctx: &NodeContext<Job>| {
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
            ctx.update(|s| {
                s.receipt = Some(receipt);
                s.log.push("notify".to_owned());
            });
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

    let renamed = Checkpoint::new("renamed", 1, "old", text(json!({"x": 1, "loops": 0})));
    save(&*store, renamed.with_next("gone")).await;
    let incompatible = graph
        .resume("renamed", store.clone(), RunOptions::new())
        .await;
    assert!(
        matches!(incompatible, Err(CheckpointError::Incompatible { reason, .. }) if reason.contains("\"gone\""))
    );

    let wrong = Checkpoint::new("wrong-state", 1, "n1", text(json!({"y": true})));
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

/// A node that works through ten items, saving where it stands after each with
/// `save_step`; `crash_after` makes it fail (as a crash would) after that many items.
fn counting_graph(crash_after: Option<u32>, worked: Arc<AtomicUsize>) -> CompiledGraph<u32> {
    let count = node_fn(move |ctx: &NodeContext<u32>| {
        let worked = worked.clone();
        Box::pin(async move {
            let mut done: u32 = ctx.saved_step("done")?.unwrap_or(0);
            while done < 10 {
                if crash_after == Some(done) {
                    return Err(NodeError::fatal("crashed"));
                }
                worked.fetch_add(1, Ordering::SeqCst);
                done += 1;
                ctx.save_step("done", &done).await?;
            }
            ctx.update(|total| *total = done);
            Ok(())
        })
    });
    StateGraph::new()
        .add_node("count", count)
        .add_edge(START, "count")
        .add_edge("count", END)
        .compile()
        .unwrap()
}

#[tokio::test]
async fn a_node_resumed_inside_goes_on_from_the_step_it_saved() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let worked = Arc::new(AtomicUsize::new(0));
    let options = || RunOptions::new().with_run_id("steps");
    let crashed = counting_graph(Some(4), worked.clone())
        .run_checkpointed(0, store.clone(), options())
        .await
        .unwrap();
    assert_eq!(crashed.status, RunStatus::Failed);
    assert_eq!(worked.load(Ordering::SeqCst), 4);
    // Every step is a checkpoint inside the node.
    let inside = store.latest("steps").await.unwrap().unwrap();
    assert_eq!(inside.next.as_deref(), Some("count"));
    assert_eq!(
        inside.progress.unwrap().to_value().unwrap()["steps"]["done"],
        json!(4)
    );

    let resumed = counting_graph(None, worked.clone())
        .resume("steps", store.clone(), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(resumed.status, RunStatus::Success);
    assert_eq!(resumed.state, 10);
    assert_eq!(worked.load(Ordering::SeqCst), 10, "no item worked twice");

    // Without a store the steps are kept for the node run only.
    let fresh = counting_graph(None, Arc::new(AtomicUsize::new(0)))
        .run(0, RunOptions::new())
        .await;
    assert_eq!(fresh.state, 10);
}

#[tokio::test]
async fn run_durable_asks_the_store_once_whether_the_run_exists() {
    let (exists, latest) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (counted_exists, counted_latest) = (exists.clone(), latest.clone());
    let store = Arc::new(InterceptedStore::new(
        Arc::new(InMemoryCheckpointStore::new()),
        move |call| {
            let counter = match call {
                StoreCall::Exists { .. } => Some(&counted_exists),
                StoreCall::Latest { .. } => Some(&counted_latest),
                _ => None,
            };
            if let Some(counter) = counter {
                counter.fetch_add(1, Ordering::SeqCst);
            }
            Ok(())
        },
    ));
    let reads = || (exists.load(Ordering::SeqCst), latest.load(Ordering::SeqCst));
    let graph = counting_graph(None, Arc::new(AtomicUsize::new(0)));
    let session = agent_runtime::Session::<u32, ()>::new("durable", 0);
    let fresh = graph
        .run_durable(&session, store.clone(), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(fresh.state, 10);
    assert_eq!(
        reads(),
        (1, 0),
        "a fresh run asks once and reads nothing back"
    );

    // Called again (a restarted process): one question, then the run read back once.
    let again = graph
        .run_durable(
            &agent_runtime::Session::<u32, ()>::new("durable", 0),
            store.clone(),
            RunOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(again.state, 10);
    assert_eq!(reads(), (2, 1));
}
