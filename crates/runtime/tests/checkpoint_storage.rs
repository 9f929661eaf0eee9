//! How checkpoints are stored: deltas for growing histories (linear storage), pruning,
//! retention, and the in-memory store's bounds.
#![cfg(test)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_runtime::checkpoint::{
    Checkpoint, CheckpointStore, FileCheckpointStore, InMemoryCheckpointStore, JsonText,
};
use agent_runtime::graph::RunOptions;
use serde_json::{Value, json};

mod common;
use common::*;

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
        let cp = Checkpoint::new("chat", n as u64, "turn", text(state))
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
        let next = Checkpoint::new("chat", len as u64, "turn", text(state))
            .with_completed((0..len).map(|_| "turn"))
            .with_next("turn");
        file_store.save(&next).await.unwrap();
        cp = Some(next);
    }
    let last = cp.unwrap();
    assert_eq!(state_value(&last), history_state(n));
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

/// A node's progress as a durable agent saves it after round `rounds`, its fields in the
/// order the runtime writes them: the node's start, its agent runs (a finished one, then
/// the one running with its whole transcript so far), the node's own steps.
fn progress(rounds: usize) -> JsonText {
    #[derive(serde::Serialize)]
    struct Progress {
        start_state: Value,
        agents: Value,
        steps: Value,
    }
    JsonText::of(&Progress {
        start_state: json!({"resume": "Résumé · 履歴書 ".repeat(200)}),
        agents: json!({
            "reviewer#1": {"run": {"request": {"messages": [message(0)]}, "rounds": 1}},
            "writer#1": {
                "run": {
                    "request": {"messages": (0..rounds).map(message).collect::<Vec<_>>()},
                    "rounds": rounds,
                },
            },
        }),
        steps: json!({"pages": rounds / 10}),
    })
    .unwrap()
}

/// 100 checkpoints, an agent round each, a node boundary (no progress) every 25th.
fn agent_rounds() -> Vec<Checkpoint> {
    (1..=100usize)
        .map(|n| {
            let cp = Checkpoint::new("agent", n as u64, "write", text(json!({"turn": n / 25})))
                .with_next("write");
            match n % 25 {
                0 => cp,
                round => cp.with_progress(progress(round)),
            }
        })
        .collect()
}

#[tokio::test]
async fn a_growing_progress_is_stored_as_its_rounds_and_loads_back_identical() {
    let dir = TempDir::new("progress");
    let file_store = FileCheckpointStore::new(&dir.0);
    let memory_store = InMemoryCheckpointStore::with_retention(10, 10);
    let originals = agent_rounds();
    let mut in_full = 0;
    for cp in &originals {
        in_full += cp.progress.as_ref().map_or(0, |p| p.as_str().len() as u64);
        file_store.save(cp).await.unwrap();
        memory_store.save(cp).await.unwrap();
    }
    // Each round's record holds the round's message and the counters, not the
    // transcript: about 85 kB stored (a record's metadata, the round, and the node's
    // first progress in full) where the progress alone is 610 kB in full.
    let stored = dir_bytes(&dir.0);
    assert!(
        stored * 5 < in_full,
        "{stored} B stored, {in_full} B of progress in full"
    );

    assert_eq!(file_store.list("agent").await.unwrap(), originals);
    let fresh = FileCheckpointStore::new(&dir.0);
    assert_eq!(
        fresh.latest("agent").await.unwrap().as_ref(),
        originals.last()
    );
    // The memory store kept the last 10, the oldest of them rewritten in full.
    assert_eq!(memory_store.list("agent").await.unwrap(), originals[90..]);
    assert_eq!(
        memory_store.latest("agent").await.unwrap().as_ref(),
        originals.last()
    );

    // Pruning rewrites the oldest kept record, a progress edit, in full.
    assert_eq!(file_store.prune("agent", 3).await.unwrap(), 97);
    assert_eq!(fresh.list("agent").await.unwrap(), originals[97..]);
    let next = Checkpoint::new("agent", 101, "write", text(json!({"turn": 4})))
        .with_next("write")
        .with_progress(progress(1));
    file_store.save(&next).await.unwrap();
    assert_eq!(fresh.latest("agent").await.unwrap(), Some(next));
}

#[tokio::test]
async fn prune_keeps_the_latest_checkpoints_and_what_they_need() {
    let dir = TempDir::new("prune");
    let file_store = FileCheckpointStore::new(&dir.0);
    let memory_store = InMemoryCheckpointStore::with_retention(1_000, 10);
    let mut originals = Vec::new();
    for n in 1..=40usize {
        let cp =
            Checkpoint::new("long", n as u64, "turn", text(history_state(n))).with_next("turn");
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
    let next = Checkpoint::new("long", 41, "turn", text(history_state(41)));
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
        save(
            &store,
            Checkpoint::new("a", seq, "n", text(state)).with_next("n"),
        )
        .await;
    }
    let kept = store.list("a").await.unwrap();
    assert_eq!(kept.iter().map(|c| c.seq).collect::<Vec<_>>(), [8, 9, 10]);
    assert_eq!(
        state_value(&kept[0]),
        json!({"items": (0..8).collect::<Vec<_>>()})
    );

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
