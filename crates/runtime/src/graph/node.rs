//! Nodes, the units of work of a graph, and the errors they return.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::RunContext;
use crate::checkpoint::CheckpointError;

/// One step of a graph: an async function of the state and the run's context.
///
/// Implement it with `#[async_trait]` for a node that holds dependencies (a model, a
/// client), or build one from a closure with [`node_fn`].
///
/// ```
/// use agent_runtime::graph::{Node, NodeError, RunContext};
///
/// struct Count;
///
/// #[async_trait::async_trait]
/// impl Node<u32> for Count {
///     async fn run(&self, state: &mut u32, _ctx: &RunContext) -> Result<(), NodeError> {
///         *state += 1;
///         Ok(())
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait Node<S: Send>: Send + Sync {
    /// Does the node's work on `state`. An error's [`NodeErrorKind`] decides how the run
    /// goes on (see [`NodeError`]).
    async fn run(&self, state: &mut S, ctx: &RunContext) -> Result<(), NodeError>;
}

/// The boxed closure behind [`FnNode`].
type NodeClosure<S> =
    dyn for<'a> Fn(&'a mut S, &'a RunContext) -> BoxFuture<'a, Result<(), NodeError>> + Send + Sync;

/// A node made from a closure by [`node_fn`]. Every `FnNode<S>` has the same type, so
/// closures can sit side by side in an array (see
/// [`StateGraph::sequence`](super::StateGraph::sequence)).
pub struct FnNode<S> {
    f: Box<NodeClosure<S>>,
}

impl<S> fmt::Debug for FnNode<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnNode")
    }
}

/// Makes a node from a closure returning a boxed future.
///
/// Only the state type needs naming; the context's type and the future's lifetime are
/// inferred:
///
/// ```
/// use agent_runtime::graph::{node_fn, NodeError};
///
/// struct State { x: i64 }
///
/// let add_one = node_fn(|state: &mut State, _ctx| Box::pin(async move {
///     state.x += 1;
///     Ok::<_, NodeError>(())
/// }));
/// # let _ = add_one;
/// ```
///
/// (Inside `add_node`, where the return type is known, `Ok(())` is enough.)
pub fn node_fn<S, F>(f: F) -> FnNode<S>
where
    F: for<'a> Fn(&'a mut S, &'a RunContext) -> BoxFuture<'a, Result<(), NodeError>>
        + Send
        + Sync
        + 'static,
{
    FnNode { f: Box::new(f) }
}

// Written by hand rather than through `#[async_trait]` so the closure's boxed future is
// returned as it is, instead of being boxed a second time.
impl<S: Send> Node<S> for FnNode<S> {
    fn run<'life0, 'life1, 'life2, 'async_trait>(
        &'life0 self,
        state: &'life1 mut S,
        ctx: &'life2 RunContext,
    ) -> BoxFuture<'async_trait, Result<(), NodeError>>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        'life2: 'async_trait,
        Self: 'async_trait,
    {
        (self.f)(state, ctx)
    }
}

// Shared nodes: an `Arc<N>` (or `Arc<dyn Node<S>>`) is a node too, with no extra boxing.
impl<S: Send, N: Node<S> + ?Sized> Node<S> for Arc<N> {
    fn run<'life0, 'life1, 'life2, 'async_trait>(
        &'life0 self,
        state: &'life1 mut S,
        ctx: &'life2 RunContext,
    ) -> BoxFuture<'async_trait, Result<(), NodeError>>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        'life2: 'async_trait,
        Self: 'async_trait,
    {
        N::run(&**self, state, ctx)
    }
}

/// How a node failure affects the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeErrorKind {
    /// The run cannot go on: it ends [`Failed`](super::RunStatus::Failed).
    Fatal,
    /// Worth reporting, not worth stopping for: the failure is recorded in
    /// [`RunResult::errors`](super::RunResult::errors) and the run follows the node's
    /// outgoing edge as if it had succeeded.
    Recoverable,
    /// A cost, budget or other limit was reached: the run ends
    /// [`Partial`](super::RunStatus::Partial), keeping the state gathered so far.
    Limit,
}

impl NodeErrorKind {
    /// `"fatal"`, `"recoverable"` or `"limit"`.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeErrorKind::Fatal => "fatal",
            NodeErrorKind::Recoverable => "recoverable",
            NodeErrorKind::Limit => "limit",
        }
    }
}

impl fmt::Display for NodeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a node returns when it fails; its [`kind`](NodeError::kind) decides what the run
/// does next.
///
/// ```
/// use agent_runtime::graph::{NodeError, NodeErrorKind};
/// use agent_llm::LlmError;
///
/// let e = NodeError::recoverable("one job board did not answer");
/// assert_eq!(e.kind(), NodeErrorKind::Recoverable);
///
/// // A model call refused by a cost limit ends the run as partial.
/// let e: NodeError = LlmError::LimitExceeded("cost limit of $1.00 reached".into()).into();
/// assert_eq!(e.kind(), NodeErrorKind::Limit);
/// assert_eq!(e.message(), "cost limit of $1.00 reached");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct NodeError {
    kind: NodeErrorKind,
    message: String,
}

impl NodeError {
    /// An error of the given kind.
    pub fn new(kind: NodeErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// The run cannot go on; it ends `Failed`.
    pub fn fatal(message: impl Into<String>) -> Self {
        Self::new(NodeErrorKind::Fatal, message)
    }

    /// Recorded in the run's `errors`; the run goes on along the graph.
    pub fn recoverable(message: impl Into<String>) -> Self {
        Self::new(NodeErrorKind::Recoverable, message)
    }

    /// A limit was reached; the run ends `Partial` with its state.
    pub fn limit(message: impl Into<String>) -> Self {
        Self::new(NodeErrorKind::Limit, message)
    }

    /// How the failure affects the run.
    pub fn kind(&self) -> NodeErrorKind {
        self.kind
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<agent_llm::LlmError> for NodeError {
    /// `LimitExceeded` becomes a [`Limit`](NodeErrorKind::Limit) error; everything else,
    /// cancellation included, is [`Fatal`](NodeErrorKind::Fatal) (the model layer has
    /// already retried what can be retried).
    fn from(error: agent_llm::LlmError) -> Self {
        match error {
            agent_llm::LlmError::LimitExceeded(message) => Self::limit(message),
            other => Self::fatal(other.to_string()),
        }
    }
}

impl From<CheckpointError> for NodeError {
    /// A store failure inside a node is fatal.
    fn from(error: CheckpointError) -> Self {
        Self::fatal(error.to_string())
    }
}

/// A node failure recorded in a run's result (and in its checkpoints).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeFailure {
    /// The node that failed.
    pub node: String,
    /// Its step number in the run (1 for the first node run).
    pub step: u64,
    /// How the failure affected the run.
    pub kind: NodeErrorKind,
    /// The error message.
    pub message: String,
}
