//! Helpers shared by the checkpoint tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_runtime::checkpoint::{Checkpoint, CheckpointStore, JsonText};
use agent_runtime::graph::{
    CompiledGraph, END, FnNode, NodeContext, RunOptions, RunResult, START, StateGraph, node_fn,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "agent-runtime-{tag}-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub fn names(&self) -> Vec<String> {
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
pub struct Counter {
    pub x: i64,
    pub loops: i64,
}

pub fn bump(loops: i64) -> FnNode<Counter> {
    node_fn(move |ctx: &NodeContext<Counter>| {
        Box::pin(async move {
            ctx.update(|s| {
                s.x += 1;
                s.loops += loops;
            });
            Ok(())
        })
    })
}

pub fn workload_c() -> CompiledGraph<Counter> {
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
pub async fn run_c(store: Arc<dyn CheckpointStore>, options: RunOptions) -> RunResult<Counter> {
    let result = workload_c()
        .run_checkpointed(Counter::default(), store, options)
        .await;
    result.unwrap()
}

/// A checkpoint with an empty state.
pub fn cp(run_id: &str, seq: u64, node: &str) -> Checkpoint {
    Checkpoint::new(run_id, seq, node, text(json!({})))
}

/// `value` as a checkpoint's state.
pub fn text(value: Value) -> JsonText {
    JsonText::of(&value).unwrap()
}

/// A checkpoint's state read back.
pub fn state_value(checkpoint: &Checkpoint) -> Value {
    checkpoint.state.to_value().unwrap()
}

pub async fn save(store: &dyn CheckpointStore, checkpoint: Checkpoint) {
    store.save(&checkpoint).await.unwrap();
}

pub fn only_file(dir: &Path, seq: u64) -> PathBuf {
    let marker = format!("--{seq:010}-");
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_str().unwrap().contains(&marker))
        .unwrap()
}
