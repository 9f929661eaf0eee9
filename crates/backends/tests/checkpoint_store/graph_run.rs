//! A graph run on the SQLite store.

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
    assert_eq!(last.state.parse::<Job>().unwrap(), resumed.state);
}
