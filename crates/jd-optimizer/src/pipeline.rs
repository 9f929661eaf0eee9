//! [`JdOptimizer`]: an optimization request in, the graph run on a session of its own
//! (or a server's), the result out.

use std::sync::Arc;

use agent_llm::{ChatModel, ModelRouter, PricingTable};
use agent_runtime::checkpoint::{CheckpointError, CheckpointStore};
use agent_runtime::graph::{CompiledGraph, GraphError, RunOptions, RunResult, RunStatus};
use agent_runtime::{CostLimits, CostMeter, CostSnapshot, EventSink, Session};
use tokio_util::sync::CancellationToken;

use crate::aggregate::finalize;
use crate::cache::OptimizerCache;
use crate::deps::Deps;
use crate::events::OptimizeEvent;
use crate::index::ResumeIndex;
use crate::input::{InputError, OptimizeRequest, resume_chunks};
use crate::interview::Interviewer;
use crate::interview::memory::MemoryStore;
use crate::llm::{AgentCaller, metered};
use crate::nodes::build_graph;
use crate::records::Ids;
use crate::result::OptimizationResult;
use crate::state::OptimizationState;

/// Why an optimization gave no result.
#[derive(Debug, thiserror::Error)]
pub enum OptimizeError {
    /// The request was refused before any model call.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The run failed (the JD analysis or the first rewrite could not be had, the run
    /// was cancelled); the state it reached is kept.
    #[error("the optimization failed: {reason}")]
    Failed {
        /// Why.
        reason: String,
        /// The state when it stopped.
        state: Box<OptimizationState>,
        /// What the session's meter had counted when it stopped.
        spent: Box<CostSnapshot>,
    },
    /// The graph is malformed (a bug).
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// The checkpoints could not be read or written.
    #[error("the optimization's checkpoints: {0}")]
    Checkpoint(#[from] CheckpointError),
    /// The session given has no model to ask or no meter to count the budget on: nothing
    /// was run.
    #[error(
        "session {0} has no model to ask or no meter: give it the optimizer's with `JdOptimizer::equip`"
    )]
    NoModel(String),
}

/// A finished optimization.
#[derive(Debug, Clone)]
pub struct Optimization {
    /// The result.
    pub result: OptimizationResult,
    /// The final state.
    pub state: OptimizationState,
    /// What the calls spent: tokens, the repeated-prefix share, USD (0 for models with no
    /// price).
    pub spent: CostSnapshot,
    /// The nodes run, in order.
    pub nodes: Vec<String>,
}

/// Runs optimizations: the graph of spec 003 on a chat model, a resume index and caches.
///
/// ```
/// use jd_optimizer::{JdOptimizer, OptimizeRequest};
/// use agent_llm::{ModelRouter, ProviderKind, testing::ScriptedModel};
/// use std::sync::Arc;
///
/// let model = Arc::new(ScriptedModel::from_texts(Vec::<String>::new()));
/// let optimizer = JdOptimizer::new(model, ModelRouter::for_provider(ProviderKind::OpenAi));
/// let refused = optimizer.check(&OptimizeRequest::new("Built things", "too short"));
/// assert!(refused.unwrap_err().to_string().contains("too short"));
/// ```
#[derive(Debug, Clone)]
pub struct JdOptimizer {
    deps: Arc<Deps>,
    pricing: PricingTable,
}

impl JdOptimizer {
    /// Optimizations on `model`, tiers picked by `router`; no resume index (the raw
    /// sections are ranked by keywords), caches in process.
    pub fn new(model: Arc<dyn ChatModel>, router: ModelRouter) -> Self {
        JdOptimizer {
            deps: Arc::new(Deps {
                caller: AgentCaller::new(model, router),
                index: ResumeIndex::none(),
                cache: OptimizerCache::default(),
            }),
            pricing: PricingTable::default(),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut Deps)) -> Self {
        f(Arc::make_mut(&mut self.deps));
        self
    }

    /// Retrieves from `index`.
    pub fn with_index(self, index: ResumeIndex) -> Self {
        self.edit(|d| d.index = index)
    }

    /// Calls the model `wrap` makes of the current one (for example a
    /// [`LatencyModel`](agent_llm::testing::LatencyModel) simulating a slow provider).
    pub fn with_model(self, wrap: impl FnOnce(Arc<dyn ChatModel>) -> Arc<dyn ChatModel>) -> Self {
        self.edit(|d| d.caller = d.caller.map_model(wrap))
    }

    /// Caches in `cache`.
    pub fn with_cache(self, cache: OptimizerCache) -> Self {
        self.edit(|d| d.cache = cache)
    }

    /// Prices calls with `pricing`.
    pub fn with_pricing(mut self, pricing: PricingTable) -> Self {
        self.pricing = pricing;
        self
    }

    /// The caches (their hit counts).
    pub fn cache(&self) -> &OptimizerCache {
        &self.deps.cache
    }

    /// Gives `session` this optimizer's model and tiers, and a meter priced from its
    /// table when it has none (give the session [`meter`](Self::meter) for a request's
    /// limits as hard stops too). A session an optimization runs in
    /// ([`run_in`](Self::run_in), [`run_durable`](Self::run_durable)) must have them:
    /// every model call of the graph is the session's, and the budget is what its meter
    /// counts.
    pub fn equip<S, E>(&self, session: Session<S, E>) -> Session<S, E> {
        let session = self.deps.caller.equip(session);
        if session.meter().is_some() {
            return session;
        }
        session.with_meter(
            CostMeter::with_pricing(CostLimits::default(), self.pricing.clone())
                .with_labels(self.deps.caller.meter_labels()),
        )
    }

    /// The interview agents on this optimizer's model and caches, remembering profiles
    /// in `memory` when given.
    pub fn interviewer(&self, memory: Option<MemoryStore>) -> Interviewer {
        Interviewer::new(self.deps.caller.clone(), self.deps.cache.clone(), memory)
    }

    /// The compiled graph.
    pub fn graph(&self) -> Result<CompiledGraph<OptimizationState, OptimizeEvent>, GraphError> {
        build_graph(Arc::clone(&self.deps))
    }

    /// Checks a request before any model call.
    pub fn check(&self, request: &OptimizeRequest) -> Result<(), InputError> {
        request.check()
    }

    /// The first state of `request`'s optimization in session `session_id`.
    pub fn initial_state(
        &self,
        request: &OptimizeRequest,
        session_id: &str,
    ) -> Result<OptimizationState, InputError> {
        request.check()?;
        let ids = Ids {
            tenant_id: request.tenant_id.clone(),
            user_id: request.user_id.clone(),
            session_id: session_id.to_owned(),
            resume_id: request.resume_id(),
        };
        Ok(OptimizationState::new(
            ids,
            request.jd_text.clone(),
            resume_chunks(&request.resume_text),
            request.user_facts.clone(),
            request.config.clone(),
        ))
    }

    /// A meter for one optimization: its budget's token and call limits as hard stops
    /// behind the graph's own checks, prices from the optimizer's table.
    pub fn meter(&self, request: &OptimizeRequest) -> CostMeter {
        let limits = CostLimits {
            max_tokens: Some(request.config.budget.max_tokens),
            max_calls: Some(request.config.budget.max_calls),
            ..CostLimits::default()
        };
        CostMeter::with_pricing(limits, self.pricing.clone())
            .with_labels(self.deps.caller.meter_labels())
    }

    /// Runs one optimization in a session of its own, events to `events`.
    pub async fn optimize(
        &self,
        request: &OptimizeRequest,
        session_id: &str,
        events: Arc<dyn EventSink<OptimizeEvent>>,
        cancel: CancellationToken,
    ) -> Result<Optimization, OptimizeError> {
        let state = self.initial_state(request, session_id)?;
        let meter = self.meter(request);
        let session = self
            .equip(Session::new(session_id, state))
            .with_user(request.user_id.clone())
            .with_events(events)
            .with_cancellation(cancel.clone())
            .with_meter(meter.clone());
        self.run_in(&session, cancel).await
    }

    /// Runs the optimization whose state `session` holds, in memory.
    pub async fn run_in(
        &self,
        session: &Session<OptimizationState, OptimizeEvent>,
        cancel: CancellationToken,
    ) -> Result<Optimization, OptimizeError> {
        equipped(session)?;
        let graph = self.graph()?;
        let options = RunOptions::new()
            .with_run_id(session.id())
            .with_cancellation(cancel);
        let run = graph.run_in(session, options).await;
        finish(session, run)
    }

    /// Runs the optimization whose state `session` holds with a checkpoint after every
    /// node in `store` (a server's session), or resumes it from its last checkpoint
    /// there: a restarted server continues where it stopped.
    pub async fn run_durable(
        &self,
        session: &Session<OptimizationState, OptimizeEvent>,
        store: Arc<dyn CheckpointStore>,
    ) -> Result<Optimization, OptimizeError> {
        equipped(session)?;
        let graph = self.graph()?;
        let run = graph.run_durable(session, store, RunOptions::new()).await?;
        finish(session, run)
    }
}

/// Refuses a session that cannot ask a model or count what it spends, before anything
/// runs.
fn equipped(session: &Session<OptimizationState, OptimizeEvent>) -> Result<(), OptimizeError> {
    match (session.model(), session.meter()) {
        (Some(_), Some(_)) => Ok(()),
        _ => Err(OptimizeError::NoModel(session.id().to_owned())),
    }
}

/// The optimization a graph run gave: its result (aggregated here when a limit stopped
/// the run first), or why it failed.
fn finish(
    session: &Session<OptimizationState, OptimizeEvent>,
    run: RunResult<OptimizationState>,
) -> Result<Optimization, OptimizeError> {
    let nodes = run.node_names().iter().map(|n| (*n).to_owned()).collect();
    let metered = metered(session);
    let mut state = run.state;
    tracing::info!(
        session = session.id(),
        status = run.status.as_str(),
        tokens = metered.total_tokens(),
        calls = metered.calls,
        "optimization ended"
    );
    match run.status {
        RunStatus::Success => {}
        // Nothing can be offered without knowing what the job asks for.
        RunStatus::Partial if state.jd_analysis.is_none() => {
            let reason = run.reason.unwrap_or_else(|| "a limit was reached".into());
            return Err(OptimizeError::Failed {
                reason: format!("the job description was not analysed: {reason}"),
                state: Box::new(state),
                spent: Box::new(metered),
            });
        }
        // A limit of the meter stopped a node: what was gathered is aggregated.
        RunStatus::Partial => {
            if state.final_result.is_none() {
                let reason = run.reason.unwrap_or_else(|| "a limit was reached".into());
                state.warnings.push(format!("stopped early: {reason}"));
                state.final_result = Some(finalize(&mut state, &metered));
            }
        }
        RunStatus::Failed => {
            return Err(OptimizeError::Failed {
                reason: run.reason.unwrap_or_else(|| "unknown".into()),
                state: Box::new(state),
                spent: Box::new(metered),
            });
        }
    }
    let result = match state.final_result.clone() {
        Some(result) => result,
        None => finalize(&mut state, &metered),
    };
    record_metrics(&result);
    Ok(Optimization {
        result,
        state,
        spent: metered,
        nodes,
    })
}

/// The metrics of spec 003 section 7.4 for one optimization, as one structured event
/// (target `jd_optimizer::metrics`) that a tracing subscriber or the OTLP exporter
/// carries to whatever aggregates them.
fn record_metrics(result: &OptimizationResult) {
    let stats = &result.cache_stats;
    tracing::info!(
        target: "jd_optimizer::metrics",
        session = %result.session_id,
        tenant = %result.tenant_id,
        pipeline_total_latency_ms = result.budget.wall_ms,
        pipeline_tokens = result.total_tokens_used,
        pipeline_model_calls = result.model_calls,
        pipeline_rewrite_attempts = result.rewrite_attempts + result.repair_attempts,
        pipeline_final_ats_score = result.ats_score,
        agent_error_count = result.errors.len(),
        cache_jd_hit_rate = stats.jd_hit_rate().unwrap_or(0.0),
        cache_retrieval_hit_rate = stats.retrieval_hit_rate().unwrap_or(0.0),
        budget_stopped = result.budget.stop.is_some(),
        "optimization metrics"
    );
}
