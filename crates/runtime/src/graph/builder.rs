//! The graph builder and its validation.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use super::compiled::{CompiledGraph, CompiledNode, Route, Router, Target};
use super::{END, Node, START};

/// The default maximum number of node runs in one run.
pub const DEFAULT_STEP_LIMIT: u64 = 100;

/// What is wrong with a graph; returned by [`StateGraph::compile`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// Two nodes have the same name.
    #[error("node {0:?} is added twice")]
    DuplicateNode(String),
    /// A node is named like a reserved name (`START`, `END`) or is empty.
    #[error("{0:?} cannot be used as a node name")]
    InvalidName(String),
    /// An edge names a node that was never added.
    #[error("edge {from:?} -> {to:?} names unknown node {node:?}")]
    UnknownNode {
        /// The unknown name.
        node: String,
        /// The edge's source.
        from: String,
        /// The edge's target.
        to: String,
    },
    /// An edge leaves `END` or enters `START`.
    #[error("edge {from:?} -> {to:?} is not allowed: {reason}")]
    InvalidEdge {
        /// The edge's source.
        from: String,
        /// The edge's target.
        to: String,
        /// Why.
        reason: &'static str,
    },
    /// Nothing leaves `START`.
    #[error("the graph has no entry: add an edge from START")]
    NoEntry,
    /// A node has no outgoing edge (every node must lead somewhere, `END` included).
    #[error("node {0:?} has no outgoing edge")]
    NoOutgoingEdge(String),
    /// A node (or `START`) has two plain edges, or two sets of conditional edges.
    #[error("{0:?} has more than one outgoing edge; use conditional edges to branch")]
    MultipleEdges(String),
    /// A node (or `START`) has both a plain edge and conditional edges.
    #[error("{0:?} has both a plain edge and conditional edges")]
    MixedEdges(String),
    /// A set of conditional edges is empty or repeats a key.
    #[error("conditional edges of {from:?}: {reason}")]
    InvalidBranches {
        /// The edges' source.
        from: String,
        /// Why.
        reason: String,
    },
    /// A node cannot be reached from `START`.
    #[error("node {0:?} cannot be reached from START")]
    Unreachable(String),
    /// No path leads from a node to `END`, so a run through it could never finish.
    #[error("no path leads from node {0:?} to END")]
    NoPathToEnd(String),
    /// The step limit is zero.
    #[error("the step limit must be at least 1")]
    ZeroStepLimit,
}

struct PendingBranches<S> {
    from: String,
    router: Router<S>,
    branches: Vec<(String, String)>,
}

/// A graph of named async nodes over a state `S`, with plain and conditional edges,
/// `START` and `END`, and a step limit; [`compile`](Self::compile) validates it.
///
/// The graph of the orchestration benchmark: six nodes, a loop back from `n4` to `n2`
/// while `loops < 3`.
///
/// ```
/// use agent_runtime::graph::{END, NodeContext, RunOptions, RunStatus, START, StateGraph, node_fn};
///
/// #[derive(Debug, Clone, Default)]
/// struct S { x: i64, loops: i64 }
///
/// let mut graph = StateGraph::new();
/// for name in ["n1", "n2", "n3", "n5", "n6"] {
///     graph = graph.add_node(name, node_fn(|ctx: &NodeContext<S>| Box::pin(async move {
///         ctx.update(|s| s.x += 1);
///         Ok(())
///     })));
/// }
/// let graph = graph
///     .add_node("n4", node_fn(|ctx: &NodeContext<S>| Box::pin(async move {
///         ctx.update(|s| {
///             s.x += 1;
///             s.loops += 1;
///         });
///         Ok(())
///     })))
///     .add_edge(START, "n1")
///     .add_edge("n1", "n2")
///     .add_edge("n2", "n3")
///     .add_edge("n3", "n4")
///     .add_conditional_edges(
///         "n4",
///         |s: &S| if s.loops < 3 { "again" } else { "done" },
///         [("again", "n2"), ("done", "n5")],
///     )
///     .add_edge("n5", "n6")
///     .add_edge("n6", END)
///     .compile()?;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let result = graph.run(S::default(), RunOptions::new()).await;
/// assert_eq!(result.status, RunStatus::Success);
/// assert_eq!((result.state.x, result.state.loops), (12, 3));
/// assert_eq!(result.steps.len(), 12);
/// # });
/// # Ok::<(), agent_runtime::graph::GraphError>(())
/// ```
pub struct StateGraph<S, E = ()> {
    nodes: Vec<(String, Arc<dyn Node<S, E>>)>,
    edges: Vec<(String, String)>,
    branches: Vec<PendingBranches<S>>,
    step_limit: u64,
    last_then: Option<String>,
}

impl<S, E> fmt::Debug for StateGraph<S, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateGraph")
            .field(
                "nodes",
                &self.nodes.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("edges", &self.edges)
            .field("step_limit", &self.step_limit)
            .finish_non_exhaustive()
    }
}

impl<S: Send + 'static, E: 'static> Default for StateGraph<S, E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Send + 'static, E: 'static> StateGraph<S, E> {
    /// An empty graph with the default step limit ([`DEFAULT_STEP_LIMIT`]).
    pub fn new() -> Self {
        Self {
            nodes: Vec::new(),
            edges: Vec::new(),
            branches: Vec::new(),
            step_limit: DEFAULT_STEP_LIMIT,
            last_then: None,
        }
    }

    /// A sequential pipeline: `START -> first -> ... -> last -> END`.
    ///
    /// ```
    /// use agent_runtime::graph::{NodeContext, RunOptions, StateGraph, node_fn};
    ///
    /// let pipeline = StateGraph::sequence([
    ///     ("parse", node_fn(|ctx: &NodeContext<Vec<&str>>| Box::pin(async move { ctx.update(|s| s.push("parse")); Ok(()) }))),
    ///     ("score", node_fn(|ctx: &NodeContext<Vec<&str>>| Box::pin(async move { ctx.update(|s| s.push("score")); Ok(()) }))),
    /// ])
    /// .compile()?;
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let result = pipeline.run(Vec::new(), RunOptions::new()).await;
    /// assert_eq!(result.state, ["parse", "score"]);
    /// # });
    /// # Ok::<(), agent_runtime::graph::GraphError>(())
    /// ```
    ///
    /// Nodes of different types can be chained with [`then`](Self::then).
    pub fn sequence<I, K, N>(steps: I) -> Self
    where
        I: IntoIterator<Item = (K, N)>,
        K: Into<String>,
        N: Node<S, E> + 'static,
    {
        let mut graph = steps
            .into_iter()
            .fold(Self::new(), |graph, (name, node)| graph.then(name, node));
        if let Some(last) = graph.last_then.clone() {
            graph = graph.add_edge(last, END);
        }
        graph
    }

    /// Adds a node and a plain edge to it from the node added by the previous `then`
    /// (from `START` for the first). Finish with `.add_edge(last, END)`.
    pub fn then(self, name: impl Into<String>, node: impl Node<S, E> + 'static) -> Self {
        let name = name.into();
        let from = self.last_then.clone().unwrap_or_else(|| START.to_owned());
        let mut graph = self
            .add_node(name.clone(), node)
            .add_edge(from, name.clone());
        graph.last_then = Some(name);
        graph
    }

    /// Adds a named node.
    pub fn add_node(mut self, name: impl Into<String>, node: impl Node<S, E> + 'static) -> Self {
        self.nodes.push((name.into(), Arc::new(node)));
        self
    }

    /// Adds a plain edge. `from` may be [`START`], `to` may be [`END`]. A node has at most
    /// one plain edge; branch with [`add_conditional_edges`](Self::add_conditional_edges).
    pub fn add_edge(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.edges.push((from.into(), to.into()));
        self
    }

    /// Adds conditional edges: after `from` runs, `router` looks at the state and returns
    /// a key, and the run goes on at the target of that key in `branches` (a node or
    /// [`END`]). A key the branches do not list ends the run as failed.
    ///
    /// The router may return `&'static str` (no allocation per step) or `String`.
    pub fn add_conditional_edges<R, K, I, A, B>(
        mut self,
        from: impl Into<String>,
        router: R,
        branches: I,
    ) -> Self
    where
        R: Fn(&S) -> K + Send + Sync + 'static,
        K: AsRef<str>,
        I: IntoIterator<Item = (A, B)>,
        A: Into<String>,
        B: Into<String>,
    {
        let branches: Vec<(String, String)> = branches
            .into_iter()
            .map(|(key, target)| (key.into(), target.into()))
            .collect();
        let keys: Vec<String> = branches.iter().map(|(k, _)| k.clone()).collect();
        let router: Router<S> = Box::new(move |state: &S| {
            let key = router(state);
            let key = key.as_ref();
            keys.iter()
                .position(|k| k == key)
                .ok_or_else(|| key.to_owned())
        });
        self.branches.push(PendingBranches {
            from: from.into(),
            router,
            branches,
        });
        self
    }

    /// Sets the maximum number of node runs in one run (default
    /// [`DEFAULT_STEP_LIMIT`]); reaching it ends the run as failed. It counts across
    /// resumes.
    pub fn with_step_limit(mut self, limit: u64) -> Self {
        self.step_limit = limit;
        self
    }

    /// Validates the graph and resolves every name to an index.
    ///
    /// Fails on: a duplicate or reserved node name, an edge naming an unknown node, an
    /// edge out of `END` or into `START`, no edge from `START`, a node without outgoing
    /// edge, a node with two outgoing edges or with both a plain and conditional edges,
    /// empty or repeated branch keys, a node unreachable from `START`, a node from which
    /// `END` cannot be reached, and a zero step limit.
    pub fn compile(self) -> Result<CompiledGraph<S, E>, GraphError> {
        if self.step_limit == 0 {
            return Err(GraphError::ZeroStepLimit);
        }
        let mut index: HashMap<&str, usize> = HashMap::with_capacity(self.nodes.len());
        for (i, (name, _)) in self.nodes.iter().enumerate() {
            if name.is_empty() || name == START || name == END {
                return Err(GraphError::InvalidName(name.clone()));
            }
            if index.insert(name.as_str(), i).is_some() {
                return Err(GraphError::DuplicateNode(name.clone()));
            }
        }
        let source = |from: &str, to: &str| -> Result<Option<usize>, GraphError> {
            if from == END {
                return Err(invalid_edge(from, to, "END has no outgoing edges"));
            }
            if from == START {
                return Ok(None);
            }
            match index.get(from) {
                Some(&i) => Ok(Some(i)),
                None => Err(unknown(from, from, to)),
            }
        };
        let target = |from: &str, to: &str| -> Result<Target, GraphError> {
            if to == START {
                return Err(invalid_edge(from, to, "START has no incoming edges"));
            }
            if to == END {
                return Ok(Target::End);
            }
            match index.get(to) {
                Some(&i) => Ok(Target::Node(i)),
                None => Err(unknown(to, from, to)),
            }
        };

        // routes[0] is START's, routes[i + 1] node i's.
        let mut routes: Vec<Option<Route<S>>> = (0..=self.nodes.len()).map(|_| None).collect();
        for (from, to) in &self.edges {
            let slot = source(from, to)?.map_or(0, |i| i + 1);
            let to = target(from, to)?;
            match routes[slot] {
                None => routes[slot] = Some(Route::Direct(to)),
                Some(_) => return Err(GraphError::MultipleEdges(from.clone())),
            }
        }
        for pending in self.branches {
            let from = pending.from;
            if pending.branches.is_empty() {
                return Err(GraphError::InvalidBranches {
                    from,
                    reason: "no branches given".to_owned(),
                });
            }
            let slot = source(&from, &pending.branches[0].1)?.map_or(0, |i| i + 1);
            let mut keys = Vec::with_capacity(pending.branches.len());
            let mut targets = Vec::with_capacity(pending.branches.len());
            for (key, to) in pending.branches {
                if keys.contains(&key) {
                    return Err(GraphError::InvalidBranches {
                        from,
                        reason: format!("key {key:?} is listed twice"),
                    });
                }
                targets.push(target(&from, &to)?);
                keys.push(key);
            }
            match routes[slot] {
                None => {
                    routes[slot] = Some(Route::Branch {
                        router: pending.router,
                        keys,
                        targets,
                    });
                }
                Some(Route::Direct(_)) => return Err(GraphError::MixedEdges(from)),
                Some(Route::Branch { .. }) => return Err(GraphError::MultipleEdges(from)),
            }
        }

        let mut routes = routes.into_iter();
        let entry = routes.next().flatten().ok_or(GraphError::NoEntry)?;
        let mut nodes = Vec::with_capacity(self.nodes.len());
        for ((name, node), route) in self.nodes.into_iter().zip(routes) {
            let Some(route) = route else {
                return Err(GraphError::NoOutgoingEdge(name));
            };
            nodes.push(CompiledNode {
                name: Arc::from(name),
                node,
                route,
            });
        }
        check_paths(&entry, &nodes)?;
        Ok(CompiledGraph {
            nodes,
            entry,
            step_limit: self.step_limit,
        })
    }
}

fn unknown(node: &str, from: &str, to: &str) -> GraphError {
    GraphError::UnknownNode {
        node: node.to_owned(),
        from: from.to_owned(),
        to: to.to_owned(),
    }
}

fn invalid_edge(from: &str, to: &str, reason: &'static str) -> GraphError {
    GraphError::InvalidEdge {
        from: from.to_owned(),
        to: to.to_owned(),
        reason,
    }
}

/// Every node must be reachable from START, and END reachable from every node.
fn check_paths<S, E>(entry: &Route<S>, nodes: &[CompiledNode<S, E>]) -> Result<(), GraphError> {
    let n = nodes.len();
    let mut reached = vec![false; n];
    let mut stack: Vec<usize> = entry.node_targets().collect();
    while let Some(i) = stack.pop() {
        if !std::mem::replace(&mut reached[i], true) {
            stack.extend(nodes[i].route.node_targets());
        }
    }
    if let Some(i) = reached.iter().position(|r| !r) {
        return Err(GraphError::Unreachable(nodes[i].name.to_string()));
    }

    // Walk backwards from END.
    let mut incoming: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut ends = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        if node.route.targets().any(|t| t == Target::End) {
            ends.push(i);
        }
        for t in node.route.node_targets() {
            incoming[t].push(i);
        }
    }
    let mut finishes = vec![false; n];
    while let Some(i) = ends.pop() {
        if !std::mem::replace(&mut finishes[i], true) {
            ends.extend(incoming[i].iter().copied());
        }
    }
    match finishes.iter().position(|f| !f) {
        Some(i) => Err(GraphError::NoPathToEnd(nodes[i].name.to_string())),
        None => Ok(()),
    }
}
