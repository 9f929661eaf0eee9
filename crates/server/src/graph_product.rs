//! [`GraphProduct`]: a product that is one graph, hosted without writing a [`Product`].

use agent_runtime::GateSpec;
use agent_runtime::graph::{CompiledGraph, NodeError, RunOptions};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::product::{Product, SessionHandle};

/// A [`Product`] that is a graph: each start request becomes the graph's first state, the
/// graph runs durably on the server's checkpoints ([`CompiledGraph::run_durable`]: after a
/// restart, [`AgentServer::resume_unfinished`](crate::AgentServer::resume_unfinished)
/// goes on where each session was), and the final state is the session's result. A run
/// that does not succeed fails the session with its reason.
///
/// A product that needs more (checking or admitting start requests, a page, work
/// around the graph) implements [`Product`] itself, as this type does.
///
/// ```
/// use agent_runtime::graph::{CompiledGraph, NodeContext, StateGraph, node_fn};
/// use agent_server::GraphProduct;
/// #[derive(Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct Count { n: u32 }
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Start { from: u32 }
/// let graph: CompiledGraph<Count, ()> = StateGraph::sequence([(
///     "add",
///     node_fn(|ctx: &NodeContext<Count>| Box::pin(async move { ctx.update(|c| c.n += 1); Ok(()) })),
/// )])
/// .compile()?;
/// let product = GraphProduct::new("count", graph, |start: Start| Count { n: start.from });
/// # let _ = product;
/// # Ok::<(), agent_runtime::graph::GraphError>(())
/// ```
pub struct GraphProduct<Start, S, E> {
    name: String,
    graph: CompiledGraph<S, E>,
    first_state: Box<dyn Fn(Start) -> S + Send + Sync>,
    gates: Vec<GateSpec>,
}

impl<Start, S, E> GraphProduct<Start, S, E> {
    /// The product `name` (its URL segment) running `graph` from the state `first_state`
    /// makes of a start request.
    pub fn new(
        name: impl Into<String>,
        graph: CompiledGraph<S, E>,
        first_state: impl Fn(Start) -> S + Send + Sync + 'static,
    ) -> Self {
        GraphProduct {
            name: name.into(),
            graph,
            first_state: Box::new(first_state),
            gates: Vec::new(),
        }
    }

    /// Declares the gates the graph's nodes ask at (see [`Product::gates`]).
    pub fn with_gates(mut self, gates: impl IntoIterator<Item = GateSpec>) -> Self {
        self.gates.extend(gates);
        self
    }
}

#[async_trait::async_trait]
impl<Start, S, E> Product for GraphProduct<Start, S, E>
where
    Start: DeserializeOwned + JsonSchema + Send + 'static,
    S: Serialize + DeserializeOwned + JsonSchema + Clone + Send + Sync + 'static,
    E: Serialize + JsonSchema + Send + Sync + 'static,
{
    type Start = Start;
    type Event = E;
    type Output = S;
    type Error = NodeError;

    fn name(&self) -> &str {
        &self.name
    }

    fn gates(&self) -> Vec<GateSpec> {
        self.gates.clone()
    }

    async fn run(&self, handle: SessionHandle<E>, start: Start) -> Result<S, NodeError> {
        let session = handle.session((self.first_state)(start));
        let run = self
            .graph
            .run_durable(&session, handle.checkpoints(), RunOptions::new())
            .await?;
        match run.reason {
            None => Ok(run.state),
            Some(why) => Err(NodeError::fatal(why)),
        }
    }
}
