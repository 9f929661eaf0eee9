//! Checkpointed runs: a checkpoint after every node, and resume after a crash.

use std::sync::Arc;

use chrono::Utc;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::Instrument as _;

use super::compiled::{CompiledGraph, Target};
use super::run::{Advance, RunOptions, RunResult, Runner, Stop, StopKind, unknown_entry};
use super::{Journal, START};
use crate::checkpoint::{CHECKPOINT_SCHEMA_VERSION, Checkpoint, CheckpointError, CheckpointStore};

impl<S> CompiledGraph<S>
where
    S: Serialize + DeserializeOwned + Send,
{
    /// Runs the graph like [`run`](Self::run), writing a [`Checkpoint`] through `store`
    /// before the first node (seq 0, node `START`) and after every completed node (seq =
    /// the node's step), each naming the node to run next. Side effects recorded with
    /// [`RunContext::once`](super::RunContext::once) are written through the store as
    /// they happen.
    ///
    /// Fails up front with [`CheckpointError::RunExists`] when the store already holds
    /// checkpoints for the run id (use [`resume`](Self::resume)), or with the store's
    /// error if the first checkpoint cannot be written. A checkpoint that cannot be
    /// written later ends the run as failed ([`StopKind::Checkpoint`]) with its state.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_runtime::checkpoint::{CheckpointStore, InMemoryCheckpointStore};
    /// use agent_runtime::graph::{RunOptions, RunStatus, StateGraph, node_fn};
    ///
    /// let graph = StateGraph::sequence([
    ///     ("a", node_fn(|s: &mut Vec<String>, _| Box::pin(async move { s.push("a".into()); Ok(()) }))),
    ///     ("b", node_fn(|s: &mut Vec<String>, _| Box::pin(async move { s.push("b".into()); Ok(()) }))),
    /// ])
    /// .compile()?;
    /// let store = Arc::new(InMemoryCheckpointStore::new());
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let options = RunOptions::new().with_run_id("run-1");
    /// let done = graph.run_checkpointed(Vec::new(), store.clone(), options).await?;
    /// assert_eq!(done.status, RunStatus::Success);
    ///
    /// let last = store.latest("run-1").await?.unwrap();
    /// assert_eq!((last.seq, last.completed.clone(), last.next), (2, vec!["a".into(), "b".into()], None));
    ///
    /// // Resuming a finished run reruns nothing.
    /// let again = graph.resume("run-1", store.clone(), RunOptions::new()).await?;
    /// assert!(again.is_success() && again.steps.is_empty());
    /// assert_eq!(again.state, ["a", "b"]);
    /// # Ok::<(), agent_runtime::checkpoint::CheckpointError>(())
    /// # }).unwrap();
    /// # Ok::<(), agent_runtime::graph::GraphError>(())
    /// ```
    pub async fn run_checkpointed(
        &self,
        state: S,
        store: Arc<dyn CheckpointStore>,
        mut options: RunOptions,
    ) -> Result<RunResult<S>, CheckpointError> {
        let run_id = options.take_run_id();
        if store.exists(&run_id).await? {
            return Err(CheckpointError::RunExists(run_id.to_string()));
        }
        let span = tracing::info_span!("graph.run", run_id = &*run_id, checkpointed = true);
        async move {
            let journal = Journal::persistent(run_id.clone(), store.clone(), Default::default());
            let mut runner = Runner::new(self, run_id.clone(), journal, options, Target::End, 0);
            let next = match self.entry.next(&state) {
                Ok(target) => target,
                Err(key) => return Ok(runner.finish(state, Some(unknown_entry(&key)))),
            };
            runner.next = next;
            let mut checkpoint = Checkpoint {
                run_id: run_id.to_string(),
                seq: 0,
                node: START.to_owned(),
                completed: Vec::new(),
                next: self.target_name(next).map(|n| n.to_string()),
                state: serde_json::to_value(&state)?,
                schema_version: CHECKPOINT_SCHEMA_VERSION,
                at: Utc::now(),
                errors: Vec::new(),
            };
            store.save(&checkpoint).await?;
            Ok(self.drive(state, &*store, runner, &mut checkpoint).await)
        }
        .instrument(span)
        .await
    }

    /// Continues run `run_id` from its latest checkpoint: restores the state, the
    /// journal, the step count and the recorded failures, and runs on at the checkpoint's
    /// `next` node, so completed nodes are not run again (a node interrupted mid-way runs
    /// again from its start; its [`once`](super::RunContext::once) effects do not). A run
    /// whose latest checkpoint reached `END` is returned as a success without running
    /// anything.
    ///
    /// The run id in `options` is ignored. Fails with [`CheckpointError::NotFound`] when
    /// the run has no checkpoint, with [`CheckpointError::Incompatible`] when the
    /// checkpoint names a node this graph does not have or its state does not
    /// deserialize into `S`, and with the store's error when it cannot be read.
    pub async fn resume(
        &self,
        run_id: &str,
        store: Arc<dyn CheckpointStore>,
        options: RunOptions,
    ) -> Result<RunResult<S>, CheckpointError> {
        let mut checkpoint = store
            .latest(run_id)
            .await?
            .ok_or_else(|| CheckpointError::NotFound(run_id.to_owned()))?;
        let state: S =
            serde_json::from_value(std::mem::take(&mut checkpoint.state)).map_err(|e| {
                CheckpointError::Incompatible {
                    run_id: run_id.to_owned(),
                    reason: format!(
                        "the state of checkpoint {} does not fit this graph's state type: {e}",
                        checkpoint.seq
                    ),
                }
            })?;
        let next =
            match &checkpoint.next {
                None => Target::End,
                Some(name) => Target::Node(self.index_of(name).ok_or_else(|| {
                    CheckpointError::Incompatible {
                        run_id: run_id.to_owned(),
                        reason: format!(
                            "checkpoint {} resumes at unknown node {name:?}",
                            checkpoint.seq
                        ),
                    }
                })?),
            };
        let run_id: Arc<str> = Arc::from(run_id);
        let span = tracing::info_span!("graph.run", run_id = &*run_id, resumed_at = checkpoint.seq);
        async move {
            let entries = store.journal(&run_id).await?;
            tracing::info!(
                seq = checkpoint.seq,
                node = %checkpoint.node,
                next = ?checkpoint.next,
                journal_entries = entries.len(),
                "resuming from checkpoint"
            );
            let journal = Journal::persistent(run_id.clone(), store.clone(), entries);
            let mut runner = Runner::new(self, run_id, journal, options, next, checkpoint.seq);
            runner.errors = std::mem::take(&mut checkpoint.errors);
            Ok(self.drive(state, &*store, runner, &mut checkpoint).await)
        }
        .instrument(span)
        .await
    }

    /// Runs nodes, writing a checkpoint after each completed one.
    async fn drive(
        &self,
        mut state: S,
        store: &dyn CheckpointStore,
        mut runner: Runner<'_, S>,
        checkpoint: &mut Checkpoint,
    ) -> RunResult<S> {
        loop {
            match runner.advance(&mut state).await {
                Advance::Completed { node } => {
                    let name = &self.nodes[node].name;
                    checkpoint.seq = runner.step;
                    checkpoint.node.clear();
                    checkpoint.node.push_str(name);
                    checkpoint.completed.push(name.to_string());
                    checkpoint.next = self.target_name(runner.next).map(|n| n.to_string());
                    checkpoint.at = Utc::now();
                    checkpoint.schema_version = CHECKPOINT_SCHEMA_VERSION;
                    if checkpoint.errors.len() != runner.errors.len() {
                        checkpoint.errors.clone_from(&runner.errors);
                    }
                    let saved = match serde_json::to_value(&state) {
                        Ok(value) => {
                            checkpoint.state = value;
                            store.save(checkpoint).await
                        }
                        Err(e) => Err(CheckpointError::from(e)),
                    };
                    if let Err(e) = saved {
                        let reason =
                            format!("checkpoint {} after node {name:?} failed: {e}", runner.step);
                        return runner
                            .finish(state, Some(Stop::failed(StopKind::Checkpoint, reason)));
                    }
                }
                Advance::Finished => return runner.finish(state, None),
                Advance::Stopped(stop) => return runner.finish(state, Some(stop)),
            }
        }
    }
}
