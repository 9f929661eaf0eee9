//! The optimizer on agent-server: three products sharing one optimizer, one store of
//! completed optimizations and one quota.
//!
//! | route | product | start body | result |
//! |---|---|---|---|
//! | `POST /api/optimize` | [`OptimizeProduct`] | [`OptimizeRequest`] | [`OptimizationResult`] |
//! | `POST /api/interview-prep` | [`InterviewProduct`] | [`InterviewStart`] | [`InterviewPrep`] |
//! | `POST /api/cover-letter` | [`InterviewProduct`] (letter only) | [`InterviewStart`] | [`InterviewPrep`] |
//!
//! Each answers `201 {session_id, token, stream_url, status_url}`; the optimization's
//! stream shows each node as it runs, the score after each attempt and the result, with
//! `status` events (`processing`, then `completed` or `failed`; a session is `pending`
//! from its creation until its run's first event). A job description that cannot be
//! analysed is refused with 400 and a tenant past its daily quota with 429, before any
//! session is made. A request's budget is held under the deployment's ceiling.

use std::sync::Arc;

use agent_runtime::documents::DocumentStore;
use agent_runtime::graph::{
    CompiledGraph, GraphError, NodeContext, NodeError, RunOptions, StateGraph, node_fn,
};
use agent_server::{Product, Refusal, SessionHandle};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::events::OptimizationStatus;
use crate::interview::cover_letter::Tone;
use crate::interview::memory::MemoryStore;
use crate::interview::{InterviewError, InterviewPrep, InterviewRequest, Interviewer};
use crate::pipeline::{JdOptimizer, OptimizeError};
use crate::state::OptimizationState;
use crate::{Budget, OptimizationResult, OptimizeEvent, OptimizeRequest};

/// Where completed optimizations are kept for interview preparation.
const OPTIMIZATIONS: &str = "jd_optimizer.optimizations";
/// Where quotas are counted.
const QUOTAS: &str = "jd_optimizer.quota";

/// A daily quota of optimizations per tenant, counted atomically in a document store
/// (every instance of a deployment shares it).
#[derive(Clone)]
pub struct Quota {
    documents: Arc<dyn DocumentStore>,
    per_day: Option<u64>,
}

impl std::fmt::Debug for Quota {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Quota")
            .field("per_day", &self.per_day)
            .finish_non_exhaustive()
    }
}

impl Quota {
    /// At most `per_day` optimizations a day per tenant (UTC days); `None`, no limit.
    pub fn new(documents: Arc<dyn DocumentStore>, per_day: Option<u64>) -> Self {
        Quota { documents, per_day }
    }

    /// Takes one from `tenant`'s quota for today, or says why not.
    pub async fn take(&self, tenant: &str) -> Result<(), Refusal> {
        let Some(limit) = self.per_day else {
            return Ok(());
        };
        let day = chrono::Utc::now().format("%Y-%m-%d").to_string();
        let counted = self
            .documents
            .update(
                QUOTAS,
                &format!("{tenant}:{day}"),
                Box::new(move |now| {
                    let used = now.as_ref().and_then(|v| v["used"].as_u64()).unwrap_or(0);
                    let admitted = used < limit;
                    serde_json::json!({"used": used + u64::from(admitted), "admitted": admitted})
                }),
            )
            .await
            .map_err(|e| Refusal::BadRequest(format!("the quota could not be counted: {e}")))?;
        if counted["admitted"].as_bool() == Some(true) {
            Ok(())
        } else {
            Err(Refusal::QuotaExceeded(format!(
                "tenant {tenant} has used its {limit} optimizations for {day} (UTC); the quota resets at midnight UTC"
            )))
        }
    }
}

/// What the three products share.
#[derive(Clone)]
struct Shared {
    optimizer: JdOptimizer,
    documents: Arc<dyn DocumentStore>,
    quota: Quota,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("optimizer", &self.optimizer)
            .field("quota", &self.quota)
            .finish_non_exhaustive()
    }
}

/// The optimizer as the `optimize` product.
#[derive(Debug, Clone)]
pub struct OptimizeProduct {
    shared: Shared,
    ceiling: Budget,
}

impl OptimizeProduct {
    /// Optimizations by `optimizer`, completed ones kept in `documents` (for interview
    /// preparation, and memory profiles), `per_day` optimizations a day per tenant.
    pub fn new(
        optimizer: JdOptimizer,
        documents: Arc<dyn DocumentStore>,
        per_day: Option<u64>,
    ) -> Self {
        let quota = Quota::new(Arc::clone(&documents), per_day);
        OptimizeProduct {
            shared: Shared {
                optimizer,
                documents,
                quota,
            },
            ceiling: Budget::default(),
        }
    }

    /// The most one optimization may spend (the V2 budget by default): a request may
    /// ask for less, never more.
    pub fn with_budget_ceiling(mut self, ceiling: Budget) -> Self {
        self.ceiling = ceiling;
        self
    }

    /// The interview product on the same optimizer and store: questions (and a letter
    /// when asked) as `interview-prep`, or a letter alone as `cover-letter`.
    pub fn interview_product(&self, letter_only: bool) -> InterviewProduct {
        InterviewProduct {
            shared: self.shared.clone(),
            letter_only,
        }
    }
}

/// Why an optimization session failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SessionError(String);

#[async_trait]
impl Product for OptimizeProduct {
    type Start = OptimizeRequest;
    type Event = OptimizeEvent;
    type Output = OptimizationResult;
    type Error = SessionError;

    fn name(&self) -> &str {
        "optimize"
    }

    async fn admit(&self, start: &OptimizeRequest) -> Result<(), Refusal> {
        start
            .check()
            .map_err(|e| Refusal::BadRequest(e.to_string()))?;
        self.shared.quota.take(&start.tenant_id).await
    }

    async fn run(
        &self,
        handle: SessionHandle<OptimizeEvent>,
        mut start: OptimizeRequest,
    ) -> Result<OptimizationResult, SessionError> {
        start.config.budget = start.config.budget.within(&self.ceiling);
        let optimizer = &self.shared.optimizer;
        let state = optimizer
            .initial_state(&start, handle.id())
            .map_err(|e| SessionError(e.to_string()))?;
        let session = optimizer
            .equip(handle.session(state))
            .with_user(start.user_id.clone())
            .with_meter(optimizer.meter(&start));
        let status = |status| session.emit(OptimizeEvent::Status { status });
        if handle.replayed_events() == 0 {
            status(OptimizationStatus::Processing);
        }
        let outcome = optimizer.run_durable(&session, handle.checkpoints()).await;
        let done = match outcome {
            Ok(done) => done,
            Err(error) => {
                status(OptimizationStatus::Failed);
                let message = match &error {
                    OptimizeError::Failed { reason, .. } => reason.clone(),
                    other => other.to_string(),
                };
                return Err(SessionError(message));
            }
        };
        let kept = serde_json::to_value(&done.state).unwrap_or_default();
        if let Err(error) = self
            .shared
            .documents
            .put(OPTIMIZATIONS, handle.id(), &kept)
            .await
        {
            tracing::warn!(%error, "completed optimization not kept: interview preparation will not find it");
        }
        status(OptimizationStatus::Completed);
        Ok(done.result)
    }
}

/// The start of interview preparation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InterviewStart {
    /// The completed optimization's session.
    pub session_id: String,
    /// Its tenant (default `default`).
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    /// The letter's tone.
    #[serde(default)]
    pub tone: Tone,
    /// With `interview-prep`: a cover letter too.
    #[serde(default)]
    pub cover_letter: bool,
}

fn default_tenant() -> String {
    "default".to_owned()
}

/// What interview preparation tells its stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InterviewEvent {
    /// The optimization was found; the agents run.
    Preparing {
        /// The optimization.
        session_id: String,
    },
    /// Done.
    Prepared {
        /// Tokens used.
        tokens_used: u64,
        /// Whether it came from the cache.
        cached: bool,
    },
}

/// An interview preparation's run: what it prepares from, and what it prepared.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Preparation {
    /// The completed optimization.
    pub optimization: OptimizationState,
    /// What to prepare.
    pub request: InterviewRequest,
    /// What was prepared, once it is.
    pub prep: Option<InterviewPrep>,
}

/// The preparation's graph, as [`InterviewProduct`] runs it: one node that runs the
/// interviewer with the run's journal, so a run resumed from its checkpoints pays for no
/// answer twice.
pub fn preparation(
    interviewer: Interviewer,
) -> Result<CompiledGraph<Preparation, InterviewEvent>, GraphError> {
    let prepare = node_fn(move |ctx: &NodeContext<Preparation, InterviewEvent>| {
        let interviewer = interviewer.clone();
        Box::pin(async move {
            let (optimization, request) = ctx.read(|p| (p.optimization.clone(), p.request.clone()));
            ctx.emit(InterviewEvent::Preparing {
                session_id: optimization.session_id.clone(),
            });
            let prep = interviewer
                .prepare_in(&optimization, &request, ctx)
                .await
                .map_err(|e| NodeError::fatal(e.to_string()))?;
            ctx.emit(InterviewEvent::Prepared {
                tokens_used: prep.total_tokens_used,
                cached: prep.cached,
            });
            ctx.update(|p| p.prep = Some(prep));
            Ok(())
        })
    });
    StateGraph::sequence([("prepare", prepare)]).compile()
}

/// Interview questions and cover letters from completed optimizations.
#[derive(Debug, Clone)]
pub struct InterviewProduct {
    shared: Shared,
    letter_only: bool,
}

impl InterviewProduct {
    async fn optimization(&self, start: &InterviewStart) -> Result<OptimizationState, Refusal> {
        // Another tenant's optimization is answered as one that does not exist.
        let missing = || {
            Refusal::NotFound(format!(
                "no completed optimization {} for tenant {}",
                start.session_id, start.tenant_id
            ))
        };
        let value = self
            .shared
            .documents
            .get(OPTIMIZATIONS, &start.session_id)
            .await
            .map_err(|e| Refusal::BadRequest(format!("the optimization cannot be read: {e}")))?
            .ok_or_else(missing)?;
        let state: OptimizationState = serde_json::from_value(value).map_err(|_| missing())?;
        if state.tenant_id != start.tenant_id {
            return Err(missing());
        }
        Ok(state)
    }
}

#[async_trait]
impl Product for InterviewProduct {
    type Start = InterviewStart;
    type Event = InterviewEvent;
    type Output = InterviewPrep;
    type Error = InterviewError;

    fn name(&self) -> &str {
        if self.letter_only {
            "cover-letter"
        } else {
            "interview-prep"
        }
    }

    async fn admit(&self, start: &InterviewStart) -> Result<(), Refusal> {
        self.optimization(start).await.map(|_| ())
    }

    /// Runs the preparation as a durable one-node graph in the server's checkpoint
    /// store: every answer is journaled as it comes, so a restarted server finishes the
    /// session without paying for an answer twice, and a finished one is not redone.
    async fn run(
        &self,
        handle: SessionHandle<InterviewEvent>,
        start: InterviewStart,
    ) -> Result<InterviewPrep, InterviewError> {
        let optimization = self
            .optimization(&start)
            .await
            .map_err(|_| InterviewError::NotCompleted(start.session_id.clone()))?;
        let request = InterviewRequest {
            questions: !self.letter_only,
            cover_letter: self.letter_only || start.cover_letter,
            tone: start.tone,
        };
        let memory = MemoryStore::new(Arc::clone(&self.shared.documents));
        let interviewer = self.shared.optimizer.interviewer(Some(memory));
        let graph = preparation(interviewer).map_err(|e| InterviewError::Run(e.to_string()))?;
        let session = self.shared.optimizer.equip(handle.session(Preparation {
            optimization,
            request,
            prep: None,
        }));
        let run = graph
            .run_durable(&session, handle.checkpoints(), RunOptions::new())
            .await
            .map_err(|e| InterviewError::Run(e.to_string()))?;
        match run.state.prep {
            Some(prep) if run.is_success() => Ok(prep),
            _ => {
                let failure = run.errors.last().map(|f| f.message.clone());
                Err(InterviewError::Run(
                    failure.or(run.reason).unwrap_or_default(),
                ))
            }
        }
    }
}
