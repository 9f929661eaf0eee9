//! Typed model calls for the pipeline's steps: quality tiers, a concurrency bound, and
//! the run's cost meter (the session's: its totals, per model and per step, travel with
//! the run's checkpoints).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use agent_llm::{ModelTier, PricingTable, Usage};
use agent_runtime::graph::{NodeError, NodeErrorKind};
use agent_runtime::{
    Ask, CostLimits, CostMeter, CostSnapshot, EventSink, MeterLabels, unpriced_token_limit,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

use crate::events::HuntEvent;
use crate::settings::Settings;
use crate::state::HuntNode;

/// Which model a call needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quality {
    /// Fast and cheap, for answers that are extraction: the resume, preferences, job
    /// normalization, careers pages (`JH_HAIKU_MODEL`).
    Fast,
    /// High quality, for judgement: company finding, scoring (`JH_SONNET_MODEL`).
    Best,
}

/// A model call that did not give a value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmCallError {
    /// The hard cost limit was reached; the call was not made.
    #[error("cost limit reached: {0}")]
    CostLimit(String),
    /// The model failed, or its answer never fit the schema.
    #[error("{0}")]
    Failed(String),
}

/// A model answer with what it cost, as journaled.
#[derive(Debug, Serialize, Deserialize)]
struct Recorded<T> {
    value: T,
    model: String,
    usage: Usage,
    attempts: u32,
}

/// Makes the pipeline's model calls. Cheap to clone; clones share the meter and the
/// bound.
#[derive(Clone)]
pub struct PipelineLlm {
    fast_model: String,
    best_model: String,
    max_attempts: u32,
    meter: CostMeter,
    bound: Arc<Semaphore>,
    /// Calls per step whose answers were replayed from the journal (paid before a crash).
    replayed: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl std::fmt::Debug for PipelineLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipelineLlm")
            .field("fast_model", &self.fast_model)
            .field("best_model", &self.best_model)
            .field("meter", &self.meter)
            .finish_non_exhaustive()
    }
}

/// The output limit of a call's first attempt. Every answer of the pipeline fits in it; a
/// small model that runs on (repeating itself to the limit) is cut off early, and an answer
/// that really needs more room is asked again with twice as much (`extract_with`), up to
/// four times this.
pub const FIRST_ANSWER_TOKENS: u32 = 1536;

impl PipelineLlm {
    /// Calls priced by `pricing`, under the settings' limits, warning through `events`
    /// once the threshold is passed. The calls are those of the step's session (its
    /// model), and the meter is the run's session's (see [`meter`](Self::meter)): a
    /// resumed run's session restores what was spent.
    pub fn new(
        pricing: PricingTable,
        settings: &Settings,
        events: Arc<dyn EventSink<HuntEvent>>,
    ) -> Self {
        let threshold = settings.warn_cost_threshold_usd;
        let limits = CostLimits {
            warn_usd: Some(threshold),
            max_usd: Some(settings.max_cost_per_run_usd),
            ..CostLimits::default()
        };
        let labels = MeterLabels::product("job_hunter")
            .with_tier(ModelTier::Primary, &settings.sonnet_model)
            .with_tier(ModelTier::Light, &settings.haiku_model);
        let meter = CostMeter::with_pricing(limits, pricing)
            .with_labels(labels)
            .on_warn(move |snapshot| {
                tracing::warn!(
                    current_cost = snapshot.usd,
                    limit = threshold,
                    "cost passed the warning threshold"
                );
                events.emit(HuntEvent::CostWarning {
                    spent_usd: snapshot.usd,
                    threshold_usd: threshold,
                });
            });
        PipelineLlm {
            fast_model: settings.haiku_model.clone(),
            best_model: settings.sonnet_model.clone(),
            max_attempts: settings.llm_max_attempts,
            meter,
            bound: Arc::new(Semaphore::new(settings.max_concurrency.max(1))),
            replayed: Arc::default(),
        }
    }

    /// The model id used for `quality`.
    pub fn model_id(&self, quality: Quality) -> &str {
        match quality {
            Quality::Fast => &self.fast_model,
            Quality::Best => &self.best_model,
        }
    }

    /// The meter every call is recorded on, per model and per step.
    pub fn meter(&self) -> &CostMeter {
        &self.meter
    }

    /// What the run has spent so far.
    pub fn cost(&self) -> CostSnapshot {
        self.meter.snapshot()
    }

    /// The calls made through this caller since `start` (what the meter held when this
    /// process took the run over), without the answers replayed from the journal (paid
    /// before a crash).
    pub fn cost_since(&self, start: &CostSnapshot) -> CostSnapshot {
        let mut since = self.cost().since(start);
        let replayed = self
            .replayed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        since.calls -= replayed.values().sum::<u64>().min(since.calls);
        for (step, calls) in since.calls_by_step.iter_mut() {
            *calls -= replayed.get(step).copied().unwrap_or(0).min(*calls);
        }
        since.calls_by_step.retain(|_, calls| *calls > 0);
        since
    }

    /// The limit that allows no more calls, if one is reached.
    pub fn limit_reached(&self) -> Option<agent_llm::Limit> {
        self.meter.reached()
    }

    /// Asks for a `T`: at most `JH_MAX_CONCURRENCY` calls run at once, a call is refused
    /// once the hard limit is reached, invalid answers are re-asked up to
    /// `JH_LLM_MAX_ATTEMPTS` times, and every attempt's tokens are counted (on failure
    /// too).
    pub async fn extract<T>(
        &self,
        ctx: &HuntNode,
        step: &str,
        quality: Quality,
        system: &str,
        prompt: String,
    ) -> Result<T, LlmCallError>
    where
        T: JsonSchema + DeserializeOwned,
    {
        self.extract_recorded(ctx, step, quality, system, prompt)
            .await
            .map(|recorded| recorded.value)
    }

    /// [`extract`](Self::extract), journaled under `key` in the run's journal: a step
    /// re-run after a crash gets the answer recorded before the crash instead of paying
    /// for the call again (its tokens and cost are counted then, since the crash lost
    /// them with the step's unsaved state). Failed calls are not recorded.
    pub async fn extract_once<T>(
        &self,
        ctx: &HuntNode,
        key: &str,
        step: &str,
        quality: Quality,
        system: &str,
        prompt: String,
    ) -> Result<T, LlmCallError>
    where
        T: JsonSchema + Serialize + DeserializeOwned,
    {
        let mut made_here = false;
        let outcome = ctx
            .run()
            .once(key, || async {
                made_here = true;
                self.extract_recorded::<T>(ctx, step, quality, system, prompt)
                    .await
                    .map_err(|e| match e {
                        LlmCallError::CostLimit(reason) => NodeError::limit(reason),
                        LlmCallError::Failed(reason) => NodeError::recoverable(reason),
                    })
            })
            .await;
        match outcome {
            Ok(recorded) => {
                if !made_here {
                    tracing::debug!(step, key, "model answer replayed from the journal");
                    self.count_replayed(step, &recorded.model, recorded.usage, recorded.attempts);
                    *self
                        .replayed
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .entry(step.to_owned())
                        .or_default() += u64::from(recorded.attempts);
                }
                Ok(recorded.value)
            }
            Err(e) if e.kind() == NodeErrorKind::Limit => {
                Err(LlmCallError::CostLimit(e.message().to_owned()))
            }
            Err(e) => Err(LlmCallError::Failed(e.message().to_owned())),
        }
    }

    async fn extract_recorded<T>(
        &self,
        ctx: &HuntNode,
        step: &str,
        quality: Quality,
        system: &str,
        prompt: String,
    ) -> Result<Recorded<T>, LlmCallError>
    where
        T: JsonSchema + DeserializeOwned,
    {
        let _permit = self
            .bound
            .acquire()
            .await
            .map_err(|_| LlmCallError::Failed("the model-call bound was closed".into()))?;
        let model_id = self.model_id(quality).to_owned();
        let ask = Ask::new(prompt)
            .system(system)
            .model(model_id.clone())
            .step(step)
            .max_tokens(FIRST_ANSWER_TOKENS)
            .attempts(self.max_attempts);
        let started = std::time::Instant::now();
        // The session's one metered call: a reached limit refuses each attempt before it
        // is made, and each attempt's usage is recorded under the step. Asked on the
        // session, not the node, so cancelling the run does not turn the calls still to
        // make into failed items of a step that then completes: the graph drops the step
        // instead, and it runs again on resume with the answers it had in the journal.
        let outcome = ctx.session().extract::<T>(ask).await;
        let (usage, attempts, answered_by) = match &outcome {
            Ok(done) => (done.usage.clone(), done.attempts, done.model.clone()),
            Err(e) => (e.usage.clone(), e.attempts, model_id.clone()),
        };
        tracing::debug!(
            step,
            model = %answered_by,
            duration_ms = started.elapsed().as_millis() as u64,
            attempts,
            input_tokens = usage.iter().map(|u| u.input_tokens).sum::<u64>(),
            output_tokens = usage.iter().map(|u| u.output_tokens).sum::<u64>(),
            "llm call complete"
        );
        outcome
            .map(|done| Recorded {
                value: done.value,
                model: answered_by,
                usage: usage.iter().copied().sum(),
                attempts,
            })
            .map_err(|e| match e.error {
                agent_llm::LlmError::LimitExceeded(limit) => {
                    LlmCallError::CostLimit(limit.to_string())
                }
                _ => LlmCallError::Failed(e.to_string()),
            })
    }

    /// Counts an answer replayed from the journal (paid before a crash, and lost with the
    /// step's unsaved state) on the meter again: its usage, and each of its attempts as a
    /// call.
    fn count_replayed(&self, step: &str, model_id: &str, usage: Usage, attempts: u32) {
        let meter = self.meter.for_step(step);
        meter.record(model_id, usage);
        for _ in 1..attempts {
            meter.record(model_id, Usage::default());
        }
    }
}

/// One line on what the run spent ([`CostSnapshot::per_unit`]: tokens, the share of input
/// that repeated the previous call's prefix, USD in all and per job fetched) and the
/// limit; when a model has no price, the token limit that stands in for the USD one.
///
/// ```
/// use agent_llm::Usage;
/// use agent_runtime::{CostLimits, CostMeter};
/// let meter = CostMeter::new(CostLimits::default());
/// meter.record(
///     "my-local-model",
///     Usage { input_tokens: 100, output_tokens: 20, cache_read_input_tokens: 50, ..Usage::default() },
/// );
/// assert_eq!(
///     job_hunter::llm::describe_cost(&meter.snapshot(), 5.0, 2),
///     "cost: 170 tokens (150 in, 20 out), cost unknown (no price for my-local-model): 85 tokens per job fetched (the $5.00 limit stands as 5000000 tokens)"
/// );
/// ```
pub fn describe_cost(spent: &CostSnapshot, max_usd: f64, jobs_fetched: u64) -> String {
    let summary = spent.per_unit("job fetched", jobs_fetched);
    let limit = if spent.unpriced_models.is_empty() {
        format!("limit ${max_usd:.2}")
    } else {
        format!(
            "the ${max_usd:.2} limit stands as {} tokens",
            unpriced_token_limit(max_usd)
        )
    };
    format!("cost: {summary} ({limit})")
}
