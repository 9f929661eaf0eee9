//! Running a compiled graph: options, results and the step driver.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::checkpointer::Checkpointer;
use super::compiled::{CompiledGraph, Target};
use super::node_context::{NodeContext, NodeProgress};
use super::{Journal, NodeErrorKind, NodeFailure, RunContext};
use crate::Session;
use crate::context::WaitClock;
use agent_llm::capacity::{CallEvent, CallObserver, observe_calls};

/// A hook called before every node; `Some(reason)` stops the run as
/// [`Partial`](RunStatus::Partial). A cost meter or a budget plugs in here.
pub type LimitCheck = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// How to run a graph: run id, cancellation, timeouts, budgets and limit hooks.
///
/// ```
/// use agent_runtime::graph::RunOptions;
/// use std::time::Duration;
/// use tokio_util::sync::CancellationToken;
///
/// let cancel = CancellationToken::new();
/// let options = RunOptions::new()
///     .with_run_id("run-2025-02-01")
///     .with_cancellation(cancel.clone())
///     .with_node_timeout(Duration::from_secs(120))
///     .with_wall_time_budget(Duration::from_secs(55))
///     .with_limit_check(|| None); // e.g. `move || meter.exceeded()`
/// # let _ = options;
/// ```
#[derive(Clone, Default)]
pub struct RunOptions {
    pub(crate) run_id: Option<String>,
    pub(crate) cancel: CancellationToken,
    pub(crate) node_timeout: Option<Duration>,
    pub(crate) wall_time: Option<Duration>,
    pub(crate) limit_checks: Vec<LimitCheck>,
}

impl fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunOptions")
            .field("run_id", &self.run_id)
            .field("node_timeout", &self.node_timeout)
            .field("wall_time", &self.wall_time)
            .field("limit_checks", &self.limit_checks.len())
            .finish_non_exhaustive()
    }
}

impl RunOptions {
    /// Defaults: a new UUID v4 run id, a fresh cancellation token, no node timeout, no
    /// wall-time budget, no limit hook.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the run id (the checkpoint key). Ignored by
    /// [`resume`](CompiledGraph::resume), which names the run itself.
    pub fn with_run_id(mut self, run_id: impl Into<String>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }

    /// Cancels the run when `token` fires: between nodes, or by dropping the running
    /// node's future. The run ends [`Failed`](RunStatus::Failed), keeping its state. (The
    /// cancellation token of the run's [`Session`] stops it the same way.)
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Bounds each node's run; a node that takes longer is dropped and the run ends
    /// [`Failed`](RunStatus::Failed) with a timeout reason. Needs a Tokio runtime with
    /// the time driver enabled.
    pub fn with_node_timeout(mut self, timeout: Duration) -> Self {
        self.node_timeout = Some(timeout);
        self
    }

    /// Bounds the run's wall time; checked between nodes, an exceeded budget ends the run
    /// [`Partial`](RunStatus::Partial) before the next node starts.
    pub fn with_wall_time_budget(mut self, budget: Duration) -> Self {
        self.wall_time = Some(budget);
        self
    }

    /// Adds a hook called before every node; `Some(reason)` ends the run
    /// [`Partial`](RunStatus::Partial). May be called several times; every hook is
    /// checked.
    pub fn with_limit_check<F>(mut self, check: F) -> Self
    where
        F: Fn() -> Option<String> + Send + Sync + 'static,
    {
        self.limit_checks.push(Arc::new(check));
        self
    }

    /// Adds an already shared hook (see [`with_limit_check`](Self::with_limit_check)).
    pub fn with_shared_limit_check(mut self, check: LimitCheck) -> Self {
        self.limit_checks.push(check);
        self
    }

    pub(crate) fn take_run_id(&mut self) -> Arc<str> {
        match self.run_id.take() {
            Some(id) => Arc::from(id),
            None => Arc::from(uuid::Uuid::new_v4().to_string()),
        }
    }

    /// The run id, chosen now (a new UUID v4) when none was set.
    pub(crate) fn run_id(&mut self) -> &str {
        self.run_id
            .get_or_insert_with(|| uuid::Uuid::new_v4().to_string())
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The run reached `END`.
    Success,
    /// A cost, budget or wall-time limit stopped the run; the state holds everything
    /// gathered so far.
    Partial,
    /// A node failed fatally or timed out, the run was cancelled, the step limit was
    /// reached, a router returned an unknown key or a checkpoint could not be written.
    Failed,
}

impl RunStatus {
    /// `"success"`, `"partial"` or `"failed"`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Success => "success",
            RunStatus::Partial => "partial",
            RunStatus::Failed => "failed",
        }
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a run stopped before `END` (the machine-readable twin of
/// [`RunResult::reason`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopKind {
    /// A node returned a fatal error. (`Failed`)
    NodeFailed,
    /// A node took longer than the node timeout. (`Failed`)
    NodeTimeout,
    /// The cancellation token fired. (`Failed`)
    Cancelled,
    /// The step limit was reached. (`Failed`)
    StepLimit,
    /// A router returned a key its branches do not list. (`Failed`)
    UnknownRoute,
    /// A checkpoint could not be written. (`Failed`)
    Checkpoint,
    /// A node returned a limit error or a limit hook fired. (`Partial`)
    Limit,
    /// The wall-time budget ran out. (`Partial`)
    WallTime,
}

/// One node run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRecord {
    /// The node's name.
    pub node: Arc<str>,
    /// Its step number in the run (1-based, counting across resumes).
    pub step: u64,
    /// How long the node ran.
    pub elapsed: Duration,
}

/// The outcome of a run: status, final state, the steps run and the failures recorded.
#[derive(Debug, Clone)]
pub struct RunResult<S> {
    /// The run's id.
    pub run_id: String,
    /// How the run ended.
    pub status: RunStatus,
    /// The state as the run left it (also on `Partial` and `Failed`).
    pub state: S,
    /// The nodes started by this call, in order, including one that failed (a resumed
    /// run lists only what it ran).
    pub steps: Vec<StepRecord>,
    /// Recoverable failures (kept across resumes, since checkpoints record them) and the
    /// failure that ended this call. A fatal failure happens after the last checkpoint,
    /// so the result of a later `resume` does not list it.
    pub errors: Vec<NodeFailure>,
    /// Why the run did not succeed, in words.
    pub reason: Option<String>,
    /// Why the run did not succeed, as a value.
    pub stop: Option<StopKind>,
}

impl<S> RunResult<S> {
    /// Whether the run reached `END`.
    pub fn is_success(&self) -> bool {
        self.status == RunStatus::Success
    }

    /// The names of the nodes run, in order.
    pub fn node_names(&self) -> Vec<&str> {
        self.steps.iter().map(|s| &*s.node).collect()
    }
}

/// What one call to [`Runner::advance`] did.
pub(crate) enum Advance {
    /// Node `node` completed (perhaps with a recoverable error) and the run goes on at
    /// `runner.next`, which may be `END`.
    Completed { node: usize },
    /// The run is at `END`.
    Finished,
    /// The run stops here.
    Stopped(Stop),
}

pub(crate) struct Stop {
    pub(crate) status: RunStatus,
    pub(crate) cause: StopKind,
    pub(crate) reason: String,
}

impl Stop {
    pub(crate) fn failed(cause: StopKind, reason: String) -> Self {
        Self {
            status: RunStatus::Failed,
            cause,
            reason,
        }
    }

    fn partial(cause: StopKind, reason: String) -> Self {
        Self {
            status: RunStatus::Partial,
            cause,
            reason,
        }
    }
}

enum Outcome {
    Done(Result<(), super::NodeError>),
    TimedOut(Duration),
    Cancelled,
}

/// Drives a run one node at a time; shared by plain and checkpointed runs.
pub(crate) struct Runner<'g, S, E> {
    graph: &'g CompiledGraph<S, E>,
    session: Session<S, E>,
    pub(crate) ctx: RunContext,
    checkpointer: Option<Arc<Checkpointer>>,
    /// What the next node had done before the crash, when resuming inside it.
    restored: Option<NodeProgress>,
    pub(crate) next: Target,
    /// Node runs so far, counting across resumes.
    pub(crate) step: u64,
    started: Instant,
    options: RunOptions,
    pub(crate) steps: Vec<StepRecord>,
    pub(crate) errors: Vec<NodeFailure>,
}

impl<'g, S, E> Runner<'g, S, E>
where
    S: Send + 'static,
    E: 'static,
{
    pub(crate) fn new(
        graph: &'g CompiledGraph<S, E>,
        session: Session<S, E>,
        run_id: Arc<str>,
        journal: Journal,
        options: RunOptions,
        step: u64,
    ) -> Self {
        Self {
            graph,
            session,
            ctx: RunContext::new(run_id, options.cancel.clone(), journal),
            checkpointer: None,
            restored: None,
            next: Target::End,
            step,
            started: Instant::now(),
            options,
            steps: Vec::with_capacity(16),
            errors: Vec::new(),
        }
    }

    /// Checkpoints inside nodes go through `checkpointer`; the first node run continues
    /// from `restored`.
    pub(crate) fn durable(
        mut self,
        checkpointer: Arc<Checkpointer>,
        restored: Option<NodeProgress>,
    ) -> Self {
        self.checkpointer = Some(checkpointer);
        self.restored = restored;
        self
    }

    /// Routes from `START`; an unknown key stops the run.
    pub(crate) fn enter(&mut self) -> Option<Stop> {
        match self.session.state().read(|s| self.graph.entry.next(s)) {
            Ok(target) => {
                self.next = target;
                None
            }
            Err(key) => Some(unknown_entry(&key)),
        }
    }

    /// Runs the next node, if the run may go on, and routes to the one after it.
    pub(crate) async fn advance(&mut self) -> Advance {
        let graph = self.graph;
        let index = match self.next {
            Target::End => return Advance::Finished,
            Target::Node(i) => i,
        };
        let node = &graph.nodes[index];
        if let Some(stop) = self.check_before(&node.name) {
            return Advance::Stopped(stop);
        }
        self.step += 1;
        let step = self.step;
        self.ctx.node = node.name.clone();
        self.ctx.step = step;
        let progress = self.restored.take().unwrap_or_default();
        let node_ctx = NodeContext::new(
            self.ctx.clone(),
            self.session.clone(),
            self.checkpointer.clone(),
            progress,
        );

        let span = tracing::info_span!("graph.node", node = &*node.name, step);
        let started = Instant::now();
        let future = node.node.run(&node_ctx).instrument(span);
        // The run stops when its own token fires or its session is cancelled.
        let (run_token, session_token) = (&self.ctx.cancel, self.session.cancellation());
        let cancelled = async {
            tokio::select! {
                () = run_token.cancelled() => {}
                () = session_token.cancelled() => {}
            }
        };
        // The node is polled first so a node that finishes at once never registers with
        // the cancellation token.
        let outcome = match self.options.node_timeout {
            None => tokio::select! {
                biased;
                r = future => Outcome::Done(r),
                () = cancelled => Outcome::Cancelled,
            },
            // The limit is on working time: waits in a model server's queue are left out,
            // as in agent loops.
            Some(limit) => {
                let clock = Arc::new(WaitClock::default());
                let future = observe_calls(queue_waits(&clock), future);
                tokio::select! {
                    biased;
                    r = future => Outcome::Done(r),
                    () = clock.work_for(limit) => Outcome::TimedOut(limit),
                    () = cancelled => Outcome::Cancelled,
                }
            }
        };
        self.steps.push(StepRecord {
            node: node.name.clone(),
            step,
            elapsed: started.elapsed(),
        });

        let name = &*node.name;
        match outcome {
            Outcome::Done(Ok(())) => {}
            Outcome::Done(Err(error)) => {
                self.errors.push(NodeFailure {
                    node: name.to_owned(),
                    step,
                    kind: error.kind(),
                    message: error.message().to_owned(),
                });
                match error.kind() {
                    NodeErrorKind::Recoverable => {
                        tracing::warn!(node = name, step, error = %error, "recoverable node error");
                    }
                    NodeErrorKind::Fatal => {
                        tracing::error!(node = name, step, error = %error, "node failed");
                        return Advance::Stopped(Stop::failed(
                            StopKind::NodeFailed,
                            format!("node {name:?} failed: {}", error.message()),
                        ));
                    }
                    NodeErrorKind::Limit => {
                        tracing::warn!(node = name, step, error = %error, "limit reached in node");
                        return Advance::Stopped(Stop::partial(
                            StopKind::Limit,
                            format!("limit reached in node {name:?}: {}", error.message()),
                        ));
                    }
                }
            }
            Outcome::TimedOut(limit) => {
                tracing::error!(node = name, step, timeout = ?limit, "node timed out");
                return Advance::Stopped(Stop::failed(
                    StopKind::NodeTimeout,
                    format!("node {name:?} timed out after {limit:?}"),
                ));
            }
            Outcome::Cancelled => {
                return Advance::Stopped(Stop::failed(
                    StopKind::Cancelled,
                    format!("cancelled while node {name:?} was running"),
                ));
            }
        }

        match self.session.state().read(|s| node.route.next(s)) {
            Ok(target) => {
                self.next = target;
                Advance::Completed { node: index }
            }
            Err(key) => Advance::Stopped(Stop::failed(
                StopKind::UnknownRoute,
                format!(
                    "the router after node {name:?} returned {key:?}, which is not one of {:?}",
                    node.route.keys()
                ),
            )),
        }
    }

    /// Cancellation, limit hooks, wall time and step limit, before a node starts.
    fn check_before(&self, name: &str) -> Option<Stop> {
        if self.options.cancel.is_cancelled() || self.session.cancellation().is_cancelled() {
            return Some(Stop::failed(
                StopKind::Cancelled,
                format!("cancelled before node {name:?}"),
            ));
        }
        for check in &self.options.limit_checks {
            if let Some(reason) = check() {
                return Some(Stop::partial(StopKind::Limit, reason));
            }
        }
        if let Some(budget) = self.options.wall_time {
            let elapsed = self.started.elapsed();
            if elapsed >= budget {
                return Some(Stop::partial(
                    StopKind::WallTime,
                    format!(
                        "wall-time budget of {budget:?} exhausted after {elapsed:?}, before node {name:?}"
                    ),
                ));
            }
        }
        if self.step >= self.graph.step_limit {
            return Some(Stop::failed(
                StopKind::StepLimit,
                format!(
                    "step limit of {} reached before node {name:?}",
                    self.graph.step_limit
                ),
            ));
        }
        None
    }

    /// The result of the run, with `stop` if it ended early.
    pub(crate) fn finish(self, stop: Option<Stop>) -> RunResult<S>
    where
        S: Clone,
    {
        let state = self.session.state().snapshot();
        let (status, cause, reason) = match stop {
            None => (RunStatus::Success, None, None),
            Some(stop) => (stop.status, Some(stop.cause), Some(stop.reason)),
        };
        match &reason {
            None => {
                tracing::info!(run_id = %self.ctx.run_id, steps = self.steps.len(), "graph run succeeded")
            }
            Some(reason) => {
                tracing::warn!(run_id = %self.ctx.run_id, status = status.as_str(), reason, "graph run stopped")
            }
        }
        RunResult {
            run_id: self.ctx.run_id.to_string(),
            status,
            state,
            steps: self.steps,
            errors: self.errors,
            reason,
            stop: cause,
        }
    }
}

impl<S, E> CompiledGraph<S, E>
where
    S: Clone + Send + 'static,
    E: 'static,
{
    /// Runs the graph from `START` on `state` until `END` or until something stops it,
    /// in a session of its own (id: the run id; events go nowhere). See
    /// [`run_in`](Self::run_in) to run in a session you made.
    ///
    /// Nothing is lost on the way: whatever the status, the result carries the state as
    /// the last node left it. See [`StateGraph`](super::StateGraph) for an example, and
    /// [`run_checkpointed`](Self::run_checkpointed) for a run that survives a crash.
    pub async fn run(&self, state: S, mut options: RunOptions) -> RunResult<S> {
        let session = Session::new(options.run_id(), state);
        self.run_in(&session, options).await
    }

    /// Runs the graph on `session`'s state: nodes read and change it, routers route on
    /// it, agents run in the nodes share it, and the result carries a copy of it.
    pub async fn run_in(&self, session: &Session<S, E>, mut options: RunOptions) -> RunResult<S> {
        let run_id = options.take_run_id();
        let span = tracing::info_span!("graph.run", run_id = &*run_id);
        let journal = Journal::in_memory(run_id.clone());
        async move {
            let mut runner = Runner::new(self, session.clone(), run_id, journal, options, 0);
            if let Some(stop) = runner.enter() {
                return runner.finish(Some(stop));
            }
            loop {
                match runner.advance().await {
                    Advance::Completed { .. } => {}
                    Advance::Finished => return runner.finish(None),
                    Advance::Stopped(stop) => return runner.finish(Some(stop)),
                }
            }
        }
        .instrument(span)
        .await
    }
}

pub(crate) fn unknown_entry(key: &str) -> Stop {
    Stop::failed(
        StopKind::UnknownRoute,
        format!("the router after START returned the unknown key {key:?}"),
    )
}

/// An observer putting the model calls' waits for a slot on `clock`.
fn queue_waits(clock: &Arc<WaitClock>) -> Arc<dyn CallObserver> {
    let clock = clock.clone();
    Arc::new(move |event: &CallEvent| match event {
        CallEvent::Queued => clock.enter(),
        CallEvent::Dequeued { .. } => clock.leave(),
        _ => {}
    })
}
