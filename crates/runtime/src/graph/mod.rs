//! The state graph: one orchestration engine for pipelines and loops.
//!
//! A [`StateGraph<S, E>`] has named async nodes ([`Node`], or closures through
//! [`node_fn`]) that run with a [`NodeContext`]: the run and the [`Session`](crate::Session)
//! whose state `S` the graph routes on and checkpoints (events `E`, gates, bus, meter), so
//! the agents a node runs and their tools change the same state; plain edges, conditional edges (a router looks at the state
//! and returns a key), [`START`] and [`END`], and a step limit. [`StateGraph::compile`]
//! validates it (unknown nodes, missing edges, unreachable nodes, no path to `END`) and
//! resolves names to indices; the [`CompiledGraph`] then runs any number of times.
//!
//! A run ends [`Success`](RunStatus::Success) at `END`, [`Partial`](RunStatus::Partial)
//! when a cost, budget or wall-time limit stops it, and [`Failed`](RunStatus::Failed) on a
//! fatal node error, a node timeout, cancellation or the step limit; every [`RunResult`]
//! keeps the state. [`CompiledGraph::run_checkpointed`] writes a
//! [`Checkpoint`](crate::checkpoint::Checkpoint) after every node and
//! [`CompiledGraph::resume`] continues a crashed run where it stopped, while
//! [`RunContext::once`] keeps side effects from repeating.
//!
//! Every node runs inside a `graph.node` tracing span (fields `node`, `step`), within a
//! `graph.run` span (field `run_id`).
//!
//! ```
//! use agent_runtime::graph::{END, NodeContext, RunOptions, RunStatus, START, StateGraph, node_fn};
//!
//! #[derive(Debug, Clone, Default)]
//! struct Review { draft: String, score: u32, rounds: u32 }
//!
//! let graph = StateGraph::new()
//!     .add_node("write", node_fn(|ctx: &NodeContext<Review>| Box::pin(async move {
//!         ctx.update(|s| {
//!             s.rounds += 1;
//!             s.draft = format!("draft {}", s.rounds);
//!         });
//!         Ok(())
//!     })))
//!     .add_node("score", node_fn(|ctx: &NodeContext<Review>| Box::pin(async move {
//!         ctx.update(|s| s.score = 40 * s.rounds);
//!         Ok(())
//!     })))
//!     .add_edge(START, "write")
//!     .add_edge("write", "score")
//!     .add_conditional_edges(
//!         "score",
//!         |s: &Review| if s.score >= 75 { "good" } else { "retry" },
//!         [("good", END), ("retry", "write")],
//!     )
//!     .compile()?;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let result = graph.run(Review::default(), RunOptions::new()).await;
//! assert_eq!(result.status, RunStatus::Success);
//! assert_eq!(result.state.draft, "draft 2");
//! assert_eq!(result.node_names(), ["write", "score", "write", "score"]);
//! # });
//! # Ok::<(), agent_runtime::graph::GraphError>(())
//! ```

mod builder;
mod checkpointer;
mod compiled;
mod context;
mod durable;
mod node;
mod node_context;
mod run;

pub use builder::{DEFAULT_STEP_LIMIT, GraphError, StateGraph};
pub use compiled::CompiledGraph;
pub use context::{Journal, RunContext};
pub use node::{FnNode, Node, NodeError, NodeErrorKind, NodeFailure, node_fn};
pub use node_context::NodeContext;
pub use run::{LimitCheck, RunOptions, RunResult, RunStatus, StepRecord, StopKind};

/// The graph's entry: `add_edge(START, "first")`.
pub const START: &str = "__start__";

/// The graph's exit: `add_edge("last", END)`, or a conditional branch to `END`.
pub const END: &str = "__end__";
