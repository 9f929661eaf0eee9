//! Nodes, the units of work of a graph, and the errors they return.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::NodeContext;
use crate::checkpoint::CheckpointError;
pub use crate::node_failure::{NodeErrorKind, NodeFailure};

/// One step of a graph: an async function of the node's context, which carries the run
/// (id, step, journal, cancellation) and the session whose state the graph checkpoints
/// (state, events, gates, bus, meter). Agents the node runs with
/// [`NodeContext::run_agent`] and their tools read and change that same state.
///
/// Implement it with `#[async_trait]` for a node that holds dependencies (a model, a
/// client), or build one from a closure with [`node_fn`].
///
/// ```
/// use agent_runtime::graph::{Node, NodeContext, NodeError};
///
/// struct Count;
///
/// #[async_trait::async_trait]
/// impl Node<u32> for Count {
///     async fn run(&self, ctx: &NodeContext<u32>) -> Result<(), NodeError> {
///         ctx.update(|n| *n += 1);
///         Ok(())
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait Node<S: Send, E = ()>: Send + Sync {
    /// Does the node's work. An error's [`NodeErrorKind`] decides how the run goes on
    /// (see [`NodeError`]).
    async fn run(&self, ctx: &NodeContext<S, E>) -> Result<(), NodeError>;
}

/// The boxed closure behind [`FnNode`].
type NodeClosure<S, E> =
    dyn for<'a> Fn(&'a NodeContext<S, E>) -> BoxFuture<'a, Result<(), NodeError>> + Send + Sync;

/// A node made from a closure by [`node_fn`]. Every `FnNode<S, E>` has the same type, so
/// closures can sit side by side in an array (see
/// [`StateGraph::sequence`](super::StateGraph::sequence)).
pub struct FnNode<S, E = ()> {
    f: Box<NodeClosure<S, E>>,
}

impl<S, E> fmt::Debug for FnNode<S, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnNode")
    }
}

/// Makes a node from a closure returning a boxed future. Name the context's type (its
/// state and, when not `()`, its event type); the future's lifetime is inferred:
///
/// ```
/// use agent_runtime::graph::{node_fn, NodeContext, NodeError};
///
/// struct State { x: i64 }
///
/// let add_one = node_fn(|ctx: &NodeContext<State>| Box::pin(async move {
///     ctx.update(|s| s.x += 1);
///     Ok::<_, NodeError>(())
/// }));
/// # let _ = add_one;
/// ```
///
/// (Inside `add_node`, where the return type is known, `Ok(())` is enough.)
pub fn node_fn<S, E, F>(f: F) -> FnNode<S, E>
where
    F: for<'a> Fn(&'a NodeContext<S, E>) -> BoxFuture<'a, Result<(), NodeError>>
        + Send
        + Sync
        + 'static,
{
    FnNode { f: Box::new(f) }
}

// Written by hand rather than through `#[async_trait]` so the closure's boxed future is
// returned as it is, instead of being boxed a second time.
impl<S: Send, E> Node<S, E> for FnNode<S, E> {
    fn run<'life0, 'life1, 'async_trait>(
        &'life0 self,
        ctx: &'life1 NodeContext<S, E>,
    ) -> BoxFuture<'async_trait, Result<(), NodeError>>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        Self: 'async_trait,
    {
        (self.f)(ctx)
    }
}

// Shared nodes: an `Arc<N>` (or `Arc<dyn Node<S, E>>`) is a node too, with no extra boxing.
impl<S: Send, E, N: Node<S, E> + ?Sized> Node<S, E> for Arc<N> {
    fn run<'life0, 'life1, 'async_trait>(
        &'life0 self,
        ctx: &'life1 NodeContext<S, E>,
    ) -> BoxFuture<'async_trait, Result<(), NodeError>>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        Self: 'async_trait,
    {
        N::run(&**self, ctx)
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
/// let limit = agent_llm::Limit::Usd { spent: 1.0, max: 1.0, stand_in_tokens: None };
/// let e: NodeError = LlmError::LimitExceeded(limit).into();
/// assert_eq!(e.kind(), NodeErrorKind::Limit);
/// assert_eq!(e.message(), "spent $1.0000 of a $1.0000 limit");
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
            agent_llm::LlmError::LimitExceeded(limit) => limit.into(),
            other => Self::fatal(other.to_string()),
        }
    }
}

impl From<agent_llm::Limit> for NodeError {
    /// A reached limit ends a graph run as partial, keeping its state.
    fn from(limit: agent_llm::Limit) -> Self {
        Self::limit(limit.to_string())
    }
}

impl From<CheckpointError> for NodeError {
    /// A store failure inside a node is fatal.
    fn from(error: CheckpointError) -> Self {
        Self::fatal(error.to_string())
    }
}
