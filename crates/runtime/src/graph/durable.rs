//! Checkpointed runs: a checkpoint after every node (and inside nodes, after every round
//! of a durable agent run), and resume after a crash.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::Instrument as _;

use super::checkpointer::{Checkpointer, Restore, SessionNow, Snapshot};
use super::compiled::{CompiledGraph, Target};
use super::node_context::NodeProgress;
use super::run::{Advance, RunOptions, RunResult, Runner, Stop, StopKind};
use super::{Journal, START};
use crate::checkpoint::{Checkpoint, CheckpointError, CheckpointStore, JsonText};
use crate::{Session, SessionMarks};

impl<S, E> CompiledGraph<S, E>
where
    S: Serialize + DeserializeOwned + Clone + Send + 'static,
    E: 'static,
{
    /// Runs the graph like [`run`](Self::run), writing a [`Checkpoint`] through `store`
    /// before the first node (seq 0, node `START`), after every completed node, each naming
    /// the node to run next, and after every round of an agent run with
    /// [`NodeContext::run_agent`](super::NodeContext::run_agent) inside a node. Side effects recorded with
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
    /// use agent_runtime::graph::{NodeContext, RunOptions, RunStatus, StateGraph, node_fn};
    ///
    /// let graph = StateGraph::sequence([
    ///     ("a", node_fn(|ctx: &NodeContext<Vec<String>>| Box::pin(async move { ctx.update(|s| s.push("a".into())); Ok(()) }))),
    ///     ("b", node_fn(|ctx: &NodeContext<Vec<String>>| Box::pin(async move { ctx.update(|s| s.push("b".into())); Ok(()) }))),
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
        let session = Session::new(options.run_id(), state);
        self.run_checkpointed_in(&session, store, options).await
    }

    /// Starts the run, or resumes it when `store` already holds its checkpoints: the one
    /// call a durable product makes, whether its process is new or restarted after a
    /// crash. The run id is the one in `options`, or else the session's id (a server
    /// session runs its graph under the session id). A new run goes as
    /// [`run_checkpointed_in`](Self::run_checkpointed_in), an existing one as
    /// [`resume_in`](Self::resume_in), so a finished run is returned without running
    /// anything again.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_runtime::Session;
    /// use agent_runtime::checkpoint::InMemoryCheckpointStore;
    /// use agent_runtime::graph::{NodeContext, RunOptions, StateGraph, node_fn};
    ///
    /// let graph = StateGraph::sequence([(
    ///     "count",
    ///     node_fn(|ctx: &NodeContext<u32>| Box::pin(async move { ctx.update(|n| *n += 1); Ok(()) })),
    /// )])
    /// .compile()?;
    /// let store = Arc::new(InMemoryCheckpointStore::new());
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let session = Session::new("trip-1", 0);
    /// let first = graph.run_durable(&session, store.clone(), RunOptions::new()).await?;
    /// // Called again (a restarted process): the finished run is not run twice.
    /// let again = graph.run_durable(&Session::new("trip-1", 0), store, RunOptions::new()).await?;
    /// assert_eq!((first.state, again.state), (1, 1));
    /// # Ok::<(), agent_runtime::checkpoint::CheckpointError>(())
    /// # }).unwrap();
    /// # Ok::<(), agent_runtime::graph::GraphError>(())
    /// ```
    pub async fn run_durable(
        &self,
        session: &Session<S, E>,
        store: Arc<dyn CheckpointStore>,
        mut options: RunOptions,
    ) -> Result<RunResult<S>, CheckpointError> {
        let run_id = options
            .run_id
            .take()
            .unwrap_or_else(|| session.id().to_owned());
        if store.exists(&run_id).await? {
            tracing::info!(run_id, "resuming the run from its last checkpoint");
            self.resume_in(session, &run_id, store, options).await
        } else {
            // Checked just now: a fresh run, without asking the store a second time.
            self.start_checkpointed(session, store, options.with_run_id(run_id))
                .await
        }
    }

    /// Like [`run_checkpointed`](Self::run_checkpointed), on `session`'s state (see
    /// [`run_in`](Self::run_in)). Every checkpoint also records the session's
    /// [`SessionMarks`] (events emitted, gate ids, metered usage), which
    /// [`resume_in`](Self::resume_in) restores.
    pub async fn run_checkpointed_in(
        &self,
        session: &Session<S, E>,
        store: Arc<dyn CheckpointStore>,
        mut options: RunOptions,
    ) -> Result<RunResult<S>, CheckpointError> {
        if store.exists(options.run_id()).await? {
            return Err(CheckpointError::RunExists(options.run_id().to_owned()));
        }
        self.start_checkpointed(session, store, options).await
    }

    /// Starts the checkpointed run of `options`' run id, which has no checkpoint yet.
    async fn start_checkpointed(
        &self,
        session: &Session<S, E>,
        store: Arc<dyn CheckpointStore>,
        mut options: RunOptions,
    ) -> Result<RunResult<S>, CheckpointError> {
        let run_id = options.take_run_id();
        let span = tracing::info_span!("graph.run", run_id = &*run_id, checkpointed = true);
        async move {
            let journal = Journal::persistent(run_id.clone(), store.clone(), Default::default());
            let mut runner =
                Runner::new(self, session.clone(), run_id.clone(), journal, options, 0);
            if let Some(stop) = runner.enter() {
                return Ok(runner.finish(Some(stop)));
            }
            let first = Checkpoint::new(&*run_id, 0, START, JsonText::null());
            let first = match self.target_name(runner.next) {
                Some(next) => first.with_next(&**next),
                None => first,
            };
            let checkpointer = Arc::new(Checkpointer::new(
                store,
                first,
                snapshot(session),
                restore(session),
            ));
            checkpointer.save_first().await?;
            let runner = runner.durable(Arc::clone(&checkpointer), None);
            Ok(self.drive(runner, &checkpointer).await)
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
        let checkpoint = latest(run_id, &*store).await?;
        let state = state_of(&checkpoint)?;
        let session = Session::new(run_id, state);
        self.continue_from(&session, checkpoint, store, options)
            .await
    }

    /// Like [`resume`](Self::resume), into `session`: its state is replaced by the
    /// checkpoint's and its [`SessionMarks`] are restored (event count, gate ids, the
    /// meter's totals), so events replayed by work done again keep their ordinals, gates
    /// keep their ids, and limits count the whole run. A node that was interrupted inside
    /// an agent run continues that run from its last saved round
    /// ([`NodeContext::run_agent`](super::NodeContext::run_agent)).
    pub async fn resume_in(
        &self,
        session: &Session<S, E>,
        run_id: &str,
        store: Arc<dyn CheckpointStore>,
        options: RunOptions,
    ) -> Result<RunResult<S>, CheckpointError> {
        let checkpoint = latest(run_id, &*store).await?;
        let state = state_of(&checkpoint)?;
        session.state().update(|s| *s = state);
        self.continue_from(session, checkpoint, store, options)
            .await
    }

    async fn continue_from(
        &self,
        session: &Session<S, E>,
        checkpoint: Checkpoint,
        store: Arc<dyn CheckpointStore>,
        options: RunOptions,
    ) -> Result<RunResult<S>, CheckpointError> {
        let run_id = checkpoint.run_id.clone();
        let incompatible = |reason: String| CheckpointError::Incompatible {
            run_id: run_id.clone(),
            reason,
        };
        let read_marks = |marks: &JsonText, seq: u64| {
            marks.parse::<SessionMarks>().map_err(|e| {
                incompatible(format!(
                    "checkpoint {seq} has unreadable session marks: {e}"
                ))
            })
        };
        let next = match &checkpoint.next {
            None => Target::End,
            Some(name) => Target::Node(self.index_of(name).ok_or_else(|| {
                incompatible(format!(
                    "checkpoint {} resumes at unknown node {name:?}",
                    checkpoint.seq
                ))
            })?),
        };
        let restored = match &checkpoint.progress {
            Some(progress) => Some(NodeProgress::from_checkpoint(progress).map_err(|e| {
                incompatible(format!(
                    "checkpoint {} has unreadable node progress: {e}",
                    checkpoint.seq
                ))
            })?),
            None => None,
        };
        // Inside a node, the node runs again from its start: the state and the marks it
        // started with (its agent runs, restored in turn, move them on).
        let marks_at_start = match &restored {
            Some(progress) => progress.start().map_err(|e| {
                incompatible(format!(
                    "checkpoint {} has unreadable node start marks: {e}",
                    checkpoint.seq
                ))
            })?,
            None => None,
        };
        match (
            &restored,
            marks_at_start.as_ref().or(checkpoint.session.as_ref()),
        ) {
            (Some(progress), marks) => {
                let state: Option<S> = progress.start_state().map_err(|e| {
                    incompatible(format!(
                        "checkpoint {} has a node start state that does not fit: {e}",
                        checkpoint.seq
                    ))
                })?;
                if let Some(state) = state {
                    session.state().update(|s| *s = state);
                }
                if let Some(marks) = marks {
                    session.restore_marks(&read_marks(marks, checkpoint.seq)?);
                }
            }
            (None, Some(marks)) => session.restore_marks(&read_marks(marks, checkpoint.seq)?),
            (None, None) => {}
        }
        let run_id: Arc<str> = Arc::from(run_id.as_str());
        let span = tracing::info_span!("graph.run", run_id = &*run_id, resumed_at = checkpoint.seq);
        async move {
            let entries = store.journal(&run_id).await?;
            tracing::info!(
                seq = checkpoint.seq,
                node = %checkpoint.node,
                next = ?checkpoint.next,
                inside_node = restored.is_some(),
                journal_entries = entries.len(),
                "resuming from checkpoint"
            );
            let journal = Journal::persistent(run_id.clone(), store.clone(), entries);
            let steps = checkpoint.steps_completed();
            let errors = checkpoint.errors.clone();
            let checkpointer = Arc::new(Checkpointer::new(
                store,
                checkpoint,
                snapshot(session),
                restore(session),
            ));
            let mut runner = Runner::new(self, session.clone(), run_id, journal, options, steps)
                .durable(Arc::clone(&checkpointer), restored);
            runner.next = next;
            runner.errors = errors;
            Ok(self.drive(runner, &checkpointer).await)
        }
        .instrument(span)
        .await
    }

    /// Runs nodes, writing a checkpoint after each completed one.
    async fn drive(
        &self,
        mut runner: Runner<'_, S, E>,
        checkpointer: &Checkpointer,
    ) -> RunResult<S> {
        loop {
            match runner.advance().await {
                Advance::Completed { node } => {
                    let name = &self.nodes[node].name;
                    let next = self.target_name(runner.next).map(|n| &**n);
                    if let Err(e) = checkpointer
                        .save_completed(name, next, &runner.errors)
                        .await
                    {
                        let reason = format!(
                            "checkpoint after node {name:?} (step {}) failed: {e}",
                            runner.step
                        );
                        return runner.finish(Some(Stop::failed(StopKind::Checkpoint, reason)));
                    }
                }
                Advance::Finished => return runner.finish(None),
                Advance::Stopped(stop) => return runner.finish(Some(stop)),
            }
        }
    }
}

/// The run's latest checkpoint.
async fn latest(run_id: &str, store: &dyn CheckpointStore) -> Result<Checkpoint, CheckpointError> {
    store
        .latest(run_id)
        .await?
        .ok_or_else(|| CheckpointError::NotFound(run_id.to_owned()))
}

/// The checkpoint's state as `S`.
fn state_of<S: DeserializeOwned>(checkpoint: &Checkpoint) -> Result<S, CheckpointError> {
    checkpoint
        .state
        .parse::<S>()
        .map_err(|e| CheckpointError::Incompatible {
            run_id: checkpoint.run_id.clone(),
            reason: format!(
                "the state of checkpoint {} does not fit this graph's state type: {e}",
                checkpoint.seq
            ),
        })
}

/// Puts a saved state back into `session`.
fn restore<S, E>(session: &Session<S, E>) -> Restore
where
    S: DeserializeOwned + Send + 'static,
    E: 'static,
{
    let session = session.clone();
    Box::new(move |saved| {
        let state: S = saved.parse()?;
        session.state().update(|s| *s = state);
        Ok(())
    })
}

/// Takes `session`'s marks and state for a checkpoint; a state of the version given is
/// not serialized again.
fn snapshot<S, E>(session: &Session<S, E>) -> Snapshot
where
    S: Serialize + Send + 'static,
    E: 'static,
{
    let session = session.clone();
    Box::new(move |known| {
        let (state, version) = session.state().read_versioned(|s, version| {
            let state = match known == Some(version) {
                true => None,
                false => Some(JsonText::of(s)?),
            };
            Ok::<_, serde_json::Error>((state, version))
        })?;
        Ok(SessionNow {
            state,
            version,
            marks: session.marks(),
        })
    })
}
