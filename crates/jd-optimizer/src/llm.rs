//! The agents' model calls: structured output on the model of a tier, re-asked once on
//! invalid output, metered through the session's meter, counted per agent in the state,
//! and bounded by what is left of the wall-time budget.

use std::sync::Arc;
use std::time::Duration;

use agent_llm::{ChatModel, ExtractError, Limit, LlmError, ModelRouter, ModelTier};
use agent_runtime::graph::NodeContext;
use agent_runtime::{CostMeter, CostSnapshot, MeterLabels, Session};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::budget::{Spent, limit_reached};
use crate::events::OptimizeEvent;
use crate::records::BudgetLimit;
use crate::state::OptimizationState;

/// The context every node runs with.
pub type Node = NodeContext<OptimizationState, OptimizeEvent>;

/// One structured-output call.
#[derive(Debug, Clone)]
pub struct Ask {
    /// The agent asking (`jd_analyzer`, ...): its tokens are counted under this name.
    pub agent: &'static str,
    /// The model tier.
    pub tier: ModelTier,
    /// The system prompt.
    pub system: String,
    /// The user prompt.
    pub prompt: String,
    /// Sampling temperature.
    pub temperature: f32,
    /// The answer's token limit.
    pub max_tokens: u32,
    /// Whether the system prompt says what each field of the answer holds: then the
    /// schema is sent without the answer type's field descriptions, which would say it
    /// again on every call.
    pub fields_in_system: bool,
}

/// A call that gave no value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    /// A budget limit is reached (or was, during the call); nothing more may be spent.
    #[error("budget reached: {message}")]
    Budget {
        /// Which limit.
        limit: BudgetLimit,
        /// In words.
        message: String,
    },
    /// The answer did not fit the schema, twice.
    #[error("invalid output after {attempts} attempt(s): {message}")]
    InvalidOutput {
        /// Calls made.
        attempts: u32,
        /// The validation error.
        message: String,
    },
    /// The model failed (after the provider's own retries).
    #[error("model error: {0}")]
    Model(String),
    /// The run was cancelled.
    #[error("cancelled")]
    Cancelled,
}

impl CallError {
    /// The `error_type` recorded in the state.
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::Budget { .. } => "budget",
            CallError::InvalidOutput { .. } => "invalid_output",
            CallError::Model(_) => "model_error",
            CallError::Cancelled => "cancelled",
        }
    }
}

/// A call's outcome with what it used.
#[derive(Debug)]
pub struct Called<T> {
    /// The value, or why there is none.
    pub outcome: Result<T, CallError>,
    /// Tokens of every attempt (0 when the call was cut off).
    pub tokens: u64,
    /// Calls made, re-asks included.
    pub calls: u64,
}

/// What the optimization on `ctx` has spent: its session's meter (see
/// [`JdOptimizer::equip`](crate::JdOptimizer::equip)) and the time since it started.
pub fn spent(ctx: &Node) -> Spent {
    let metered = metered(ctx.session());
    Spent::of(&metered, ctx.read(OptimizationState::elapsed_ms))
}

/// What `session`'s meter has counted so far (nothing for a session without one).
pub fn metered<S, E>(session: &Session<S, E>) -> CostSnapshot {
    session.meter().map(CostMeter::snapshot).unwrap_or_default()
}

/// Makes the agents' calls on one chat model, picking models by tier.
#[derive(Clone)]
pub struct AgentCaller {
    model: Arc<dyn ChatModel>,
    router: ModelRouter,
}

impl std::fmt::Debug for AgentCaller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentCaller")
            .field("router", &self.router)
            .finish_non_exhaustive()
    }
}

impl AgentCaller {
    /// Calls through `model`, on the model `router` names for each tier.
    pub fn new(model: Arc<dyn ChatModel>, router: ModelRouter) -> Self {
        AgentCaller { model, router }
    }

    /// What this caller's calls are counted under in the process metrics.
    pub fn meter_labels(&self) -> MeterLabels {
        MeterLabels::product("jd_optimizer").with_router(&self.router)
    }

    /// The same caller on the model `wrap` makes of this one's (a latency or fault
    /// wrapper, a recorder).
    pub fn map_model(&self, wrap: impl FnOnce(Arc<dyn ChatModel>) -> Arc<dyn ChatModel>) -> Self {
        AgentCaller {
            model: wrap(Arc::clone(&self.model)),
            router: self.router.clone(),
        }
    }

    /// Gives `session` this caller's model and tiers: the sessions an optimization or a
    /// preparation runs in must have them, since every call is the session's.
    pub fn equip<S, E>(&self, session: Session<S, E>) -> Session<S, E> {
        session
            .with_model(Arc::clone(&self.model))
            .with_router(self.router.clone())
    }

    /// Asks for a `T`. Refused before calling when a budget limit is reached; the call
    /// is cut at what is left of the wall time; the session's meter counts every attempt
    /// under the agent's name, whatever the outcome.
    pub async fn ask<T>(&self, ctx: &Node, ask: Ask) -> Result<T, CallError>
    where
        T: JsonSchema + DeserializeOwned,
    {
        let spent = spent(ctx);
        let budget = ctx.read(|s| s.config.budget);
        if let Some((limit, message)) = limit_reached(&budget, &spent) {
            return Err(CallError::Budget { limit, message });
        }
        let left = Duration::from_millis(budget.max_wall_ms.saturating_sub(spent.elapsed_ms));
        Self::call(ctx, ask, left).await.outcome
    }

    /// Makes one structured-output call (re-asked once on invalid output) as the
    /// runtime's one metered call on `ctx`'s session (its model, tiers and meter, the
    /// meter counting the call under the agent's name), cut after `left`, stopped when
    /// the run is cancelled; says what it used.
    pub async fn call<T, S, E>(ctx: &NodeContext<S, E>, ask: Ask, left: Duration) -> Called<T>
    where
        T: JsonSchema + DeserializeOwned,
    {
        let question = agent_runtime::Ask::new(ask.prompt)
            .system(ask.system)
            .tier(ask.tier)
            .step(ask.agent)
            .temperature(ask.temperature)
            .max_tokens(ask.max_tokens)
            .attempts(2);
        let question = if ask.fields_in_system {
            question.without_field_descriptions()
        } else {
            question
        };
        let Ok(outcome) = tokio::time::timeout(left, ctx.extract::<T>(question)).await else {
            // The call ran past its time; what it used is not known.
            return Called {
                outcome: Err(CallError::Budget {
                    limit: BudgetLimit::WallTime,
                    message: format!(
                        "a {} call ran past the time left ({:.1} s)",
                        ask.agent,
                        left.as_secs_f64()
                    ),
                }),
                tokens: 0,
                calls: 1,
            };
        };
        let (usage, attempts) = match &outcome {
            Ok(extracted) => (extracted.total_usage(), extracted.attempts),
            Err(error) => (error.usage.iter().copied().sum(), error.attempts),
        };
        Called {
            outcome: outcome.map(|e| e.value).map_err(call_error),
            tokens: usage.input_tokens + usage.output_tokens,
            calls: u64::from(attempts.max(1)),
        }
    }
}

fn call_error(error: ExtractError) -> CallError {
    match error.error {
        LlmError::InvalidResponse(message) => CallError::InvalidOutput {
            attempts: error.attempts,
            message,
        },
        LlmError::LimitExceeded(limit) => CallError::Budget {
            limit: match limit {
                Limit::Calls { .. } => BudgetLimit::Calls,
                Limit::WallTime { .. } => BudgetLimit::WallTime,
                Limit::Tokens { .. } | Limit::Usd { .. } => BudgetLimit::Tokens,
            },
            message: limit.to_string(),
        },
        LlmError::Cancelled => CallError::Cancelled,
        other => CallError::Model(other.to_string()),
    }
}
