//! Cost and budget guards: a meter any chat or embedding model can report to (the
//! wrapper that does is [`MeteredModel`](crate::MeteredModel)), and what it has counted.

use agent_llm::{Limit, PricingTable, PromptLayout, Usage};

use crate::prefix_reuse::PrefixReuse;
use crate::process_metrics::MeterLabels;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Limits on what a run may spend. Every field is optional.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CostLimits {
    /// Emit one warning when the cost reaches this many USD.
    pub warn_usd: Option<f64>,
    /// Refuse further calls once the cost reaches this many USD.
    pub max_usd: Option<f64>,
    /// Refuse further calls once this many tokens (input and output) were used.
    pub max_tokens: Option<u64>,
    /// Refuse further calls after this many calls.
    pub max_calls: Option<u64>,
    /// Refuse further calls after this much wall time since the meter was made.
    pub max_wall: Option<Duration>,
}

/// What was spent so far.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CostSnapshot {
    /// Tokens of all calls.
    pub usage: Usage,
    /// Calls recorded.
    pub calls: u64,
    /// USD of the calls whose model has a price.
    pub usd: f64,
    /// Models with no known price (their tokens are counted, their cost is not).
    pub unpriced_models: Vec<String>,
    /// Time since the meter was made.
    pub elapsed: Duration,
    /// Tokens per model, as the providers named them.
    #[serde(default)]
    pub usage_by_model: BTreeMap<String, Usage>,
    /// Calls per step, for the calls recorded through a meter of [`CostMeter::for_step`].
    #[serde(default)]
    pub calls_by_step: BTreeMap<String, u64>,
    /// Tokens per step, for the calls recorded through a meter of
    /// [`CostMeter::for_step`].
    #[serde(default)]
    pub usage_by_step: BTreeMap<String, Usage>,
    /// How much of the input repeated the previous call of its loop from the start
    /// ([`CostMeter::record_prefix`]): the cached-prefix share.
    #[serde(default)]
    pub prefix_reuse: PrefixReuse,
}

impl CostSnapshot {
    /// Input tokens (cache reads and writes included) plus output tokens.
    pub fn total_tokens(&self) -> u64 {
        self.usage.total_tokens()
    }

    /// What was spent since `earlier`, a snapshot of the same meter: calls, tokens and
    /// USD, per model and per step (the models and steps of `earlier` and no call since
    /// are left out).
    ///
    /// ```
    /// use agent_llm::Usage;
    /// use agent_runtime::{CostLimits, CostMeter};
    /// let meter = CostMeter::new(CostLimits::default());
    /// meter.for_step("parse").record("m", Usage { input_tokens: 5, ..Default::default() });
    /// let before = meter.snapshot();
    /// meter.for_step("score").record("m", Usage { input_tokens: 7, ..Default::default() });
    /// let since = meter.snapshot().since(&before);
    /// assert_eq!((since.calls, since.usage.input_tokens), (1, 7));
    /// assert_eq!(since.calls_by_step.keys().collect::<Vec<_>>(), ["score"]);
    /// assert_eq!(since.usage_by_step["score"].input_tokens, 7);
    /// ```
    pub fn since(&self, earlier: &CostSnapshot) -> CostSnapshot {
        let mut calls_by_step = self.calls_by_step.clone();
        for (step, calls) in &mut calls_by_step {
            *calls -= earlier
                .calls_by_step
                .get(step)
                .copied()
                .unwrap_or(0)
                .min(*calls);
        }
        calls_by_step.retain(|_, calls| *calls > 0);
        CostSnapshot {
            usage: self.usage.saturating_sub(&earlier.usage),
            calls: self.calls - earlier.calls.min(self.calls),
            usd: (self.usd - earlier.usd).max(0.0),
            unpriced_models: self.unpriced_models.clone(),
            elapsed: self.elapsed.saturating_sub(earlier.elapsed),
            usage_by_model: usage_since(&self.usage_by_model, &earlier.usage_by_model),
            calls_by_step,
            usage_by_step: usage_since(&self.usage_by_step, &earlier.usage_by_step),
            prefix_reuse: self.prefix_reuse.saturating_sub(&earlier.prefix_reuse),
        }
    }
}

/// The usage per key in `now` beyond what `earlier` had; keys with none are left out.
fn usage_since(
    now: &BTreeMap<String, Usage>,
    earlier: &BTreeMap<String, Usage>,
) -> BTreeMap<String, Usage> {
    now.iter()
        .map(|(key, usage)| {
            let before = earlier.get(key).copied().unwrap_or_default();
            (key.clone(), usage.saturating_sub(&before))
        })
        .filter(|(_, usage)| *usage != Usage::default())
        .collect()
}

type WarnHook = Arc<dyn Fn(&CostSnapshot) + Send + Sync>;

struct Totals {
    usage: Usage,
    calls: u64,
    usd: f64,
    unpriced: BTreeSet<String>,
    warned: bool,
    by_model: BTreeMap<String, Usage>,
    by_step: BTreeMap<String, u64>,
    usage_by_step: BTreeMap<String, Usage>,
    prefix_reuse: PrefixReuse,
    /// The prompt of the last one-off call per step (`""` without a step).
    last_prompt_by_step: HashMap<String, PromptLayout>,
}

struct MeterInner {
    totals: Mutex<Totals>,
    limits: CostLimits,
    pricing: PricingTable,
    on_warn: Option<WarnHook>,
    started: Instant,
}

/// Counts tokens, calls and USD across every model call of a run, and enforces
/// [`CostLimits`]. Cheap to clone; clones share the counts.
///
/// ```
/// use agent_runtime::{CostLimits, CostMeter};
/// use agent_llm::Usage;
/// let meter = CostMeter::new(CostLimits { max_usd: Some(0.01), ..Default::default() });
/// meter.record("claude-haiku-4-5", Usage { input_tokens: 5_000, output_tokens: 1_000, ..Default::default() });
/// assert!((meter.snapshot().usd - 0.01).abs() < 1e-12);
/// assert!(meter.check().is_err()); // the next call is refused
/// ```
#[derive(Clone)]
pub struct CostMeter {
    inner: Arc<MeterInner>,
    /// The step the calls recorded through this handle are counted under.
    step: Option<Arc<str>>,
    /// What its calls are counted under in the process metrics.
    labels: Option<Arc<MeterLabels>>,
}

impl std::fmt::Debug for CostMeter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CostMeter")
            .field("limits", &self.inner.limits)
            .field("spent", &self.snapshot())
            .finish()
    }
}

impl CostMeter {
    /// A meter with the built-in price list.
    pub fn new(limits: CostLimits) -> Self {
        CostMeter::with_pricing(limits, PricingTable::default())
    }

    /// A meter with the built-in prices and those configured in the environment
    /// (`LLM_PRICE_<MODEL>`, `LLM_PRICING_FILE`: see [`PricingTable::from_lookup`]).
    pub fn from_env(limits: CostLimits) -> Result<Self, agent_llm::PricingConfigError> {
        Ok(CostMeter::with_pricing(limits, PricingTable::from_env()?))
    }

    /// A meter with these prices.
    pub fn with_pricing(limits: CostLimits, pricing: PricingTable) -> Self {
        CostMeter {
            inner: Arc::new(MeterInner {
                totals: Mutex::new(Totals {
                    usage: Usage::default(),
                    calls: 0,
                    usd: 0.0,
                    unpriced: BTreeSet::new(),
                    warned: false,
                    by_model: BTreeMap::new(),
                    by_step: BTreeMap::new(),
                    usage_by_step: BTreeMap::new(),
                    prefix_reuse: PrefixReuse::default(),
                    last_prompt_by_step: HashMap::new(),
                }),
                limits,
                pricing,
                on_warn: None,
                started: Instant::now(),
            }),
            step: None,
            labels: None,
        }
    }

    /// This meter (the same counts and limits), recording the calls made through the
    /// handle under `step` too ([`CostSnapshot::calls_by_step`]).
    ///
    /// ```
    /// use agent_llm::Usage;
    /// use agent_runtime::{CostLimits, CostMeter};
    /// let meter = CostMeter::new(CostLimits::default());
    /// meter.for_step("rank").record("m", Usage::default());
    /// meter.record("m", Usage::default());
    /// let spent = meter.snapshot();
    /// assert_eq!((spent.calls, spent.calls_by_step["rank"]), (2, 1));
    /// ```
    pub fn for_step(&self, step: &str) -> CostMeter {
        CostMeter {
            inner: Arc::clone(&self.inner),
            step: Some(Arc::from(step)),
            labels: self.labels.clone(),
        }
    }

    /// This meter, counting its calls in the process metrics
    /// ([`process_metrics`](crate::process_metrics)) under `labels`' product and tiers
    /// (without labels they are counted under an empty product).
    ///
    /// ```
    /// use agent_llm::{ModelRouter, ProviderKind};
    /// use agent_runtime::{CostLimits, CostMeter, MeterLabels};
    /// let router = ModelRouter::for_provider(ProviderKind::Anthropic);
    /// let meter = CostMeter::new(CostLimits::default())
    ///     .with_labels(MeterLabels::product("jd_optimizer").with_router(&router));
    /// # let _ = meter;
    /// ```
    pub fn with_labels(mut self, labels: MeterLabels) -> Self {
        self.labels = Some(Arc::new(labels));
        self
    }

    /// Calls `hook` once, when the cost first reaches `warn_usd`.
    pub fn on_warn(self, hook: impl Fn(&CostSnapshot) + Send + Sync + 'static) -> Self {
        match Arc::try_unwrap(self.inner) {
            Ok(mut inner) => {
                inner.on_warn = Some(Arc::new(hook));
                CostMeter {
                    inner: Arc::new(inner),
                    step: self.step,
                    labels: self.labels,
                }
            }
            Err(shared) => {
                tracing::warn!("warn hook set on a meter already shared; ignored");
                CostMeter {
                    inner: shared,
                    step: self.step,
                    labels: self.labels,
                }
            }
        }
    }

    fn totals(&self) -> MutexGuard<'_, Totals> {
        self.inner.totals.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Fails with the [`Limit`] reached, if any, so the next call must not be made.
    pub fn check(&self) -> Result<(), Limit> {
        match self.reached() {
            Some(limit) => Err(limit),
            None => Ok(()),
        }
    }

    /// Which limit is reached, if any.
    ///
    /// ```
    /// use agent_llm::{Limit, Usage};
    /// use agent_runtime::{CostLimits, CostMeter};
    /// let meter = CostMeter::new(CostLimits { max_tokens: Some(100), ..Default::default() });
    /// meter.record("claude-haiku-4-5", Usage { input_tokens: 150, ..Default::default() });
    /// assert_eq!(meter.reached(), Some(Limit::Tokens { used: 150, max: 100 }));
    /// ```
    pub fn reached(&self) -> Option<Limit> {
        let limits = &self.inner.limits;
        let totals = self.totals();
        let spent = totals.usd;
        if let Some(max) = limits.max_usd.filter(|max| spent >= *max) {
            return Some(Limit::Usd {
                spent,
                max,
                stand_in_tokens: None,
            });
        }
        if let Some(max) = limits.max_usd.filter(|_| !totals.unpriced.is_empty()) {
            let used = totals.usage.total_tokens();
            if used >= unpriced_token_limit(max) {
                return Some(Limit::Usd {
                    spent,
                    max,
                    stand_in_tokens: Some(used),
                });
            }
        }
        let used = totals.usage.total_tokens();
        if let Some(max) = limits.max_tokens.filter(|max| used >= *max) {
            return Some(Limit::Tokens { used, max });
        }
        if let Some(max) = limits.max_calls.filter(|max| totals.calls >= *max) {
            return Some(Limit::Calls {
                made: totals.calls,
                max,
            });
        }
        let elapsed = self.inner.started.elapsed();
        if let Some(max) = limits.max_wall.filter(|max| elapsed >= *max) {
            return Some(Limit::WallTime { elapsed, max });
        }
        None
    }

    /// Records one call's usage on `model`. An unknown model's tokens are counted and it
    /// is listed in [`CostSnapshot::unpriced_models`] (warned about once per process).
    pub fn record(&self, model: &str, usage: Usage) -> CostSnapshot {
        let cost = self.inner.pricing.cost(model, &usage);
        crate::process_metrics::model_call(
            self.labels.as_deref(),
            model,
            &usage,
            *cost.as_ref().unwrap_or(&0.0),
        );
        let (snapshot, warn_now) = {
            let mut totals = self.totals();
            totals.usage += usage;
            totals.calls += 1;
            *totals.by_model.entry(model.to_owned()).or_default() += usage;
            if let Some(step) = &self.step {
                *totals.by_step.entry(step.to_string()).or_default() += 1;
                *totals.usage_by_step.entry(step.to_string()).or_default() += usage;
            }
            match cost {
                Ok(usd) => totals.usd += usd,
                Err(unknown) => {
                    if totals.unpriced.insert(unknown.model.clone()) {
                        warn_unpriced(&unknown.model, self.inner.limits.max_usd);
                    }
                }
            }
            let crossed = self
                .inner
                .limits
                .warn_usd
                .is_some_and(|warn| totals.usd >= warn);
            let warn_now = crossed && !totals.warned;
            totals.warned |= crossed;
            (snapshot_of(&totals, self.inner.started.elapsed()), warn_now)
        };
        if warn_now {
            tracing::warn!(usd = snapshot.usd, "cost warning threshold reached");
            if let Some(hook) = &self.inner.on_warn {
                hook(&snapshot);
            }
        }
        snapshot
    }

    /// Records how much of one call's input repeated the previous call of its loop (see
    /// [`PrefixReuse`]).
    pub fn record_prefix(&self, reuse: PrefixReuse) {
        self.totals().prefix_reuse += reuse;
    }

    /// Keeps `layout` as the prompt of this handle's step's latest one-off call and
    /// returns the one it replaces: one-off calls of a step (a pipeline's per-item calls)
    /// are one loop for [`PrefixReuse`].
    pub fn swap_step_prompt(&self, layout: PromptLayout) -> Option<PromptLayout> {
        let step = self.step.as_deref().unwrap_or_default().to_owned();
        self.totals().last_prompt_by_step.insert(step, layout)
    }

    /// Sets what was spent to a snapshot taken earlier (a run resumed in a new process
    /// carries on counting, and its limits apply to the whole run). The models without a
    /// price among its models count as such again.
    ///
    /// ```
    /// use agent_runtime::{CostLimits, CostMeter};
    /// use agent_llm::Usage;
    /// let before = CostMeter::new(CostLimits::default());
    /// for _ in 0..3 {
    ///     before.record("claude-haiku-4-5", Usage { input_tokens: 10, ..Default::default() });
    /// }
    /// let meter = CostMeter::new(CostLimits { max_calls: Some(3), ..Default::default() });
    /// meter.restore(&before.snapshot());
    /// assert_eq!(meter.snapshot().calls, 3);
    /// assert!(meter.check().is_err());
    /// ```
    pub fn restore(&self, spent: &CostSnapshot) {
        let unpriced = spent
            .usage_by_model
            .keys()
            .filter(|model| self.inner.pricing.price(model).is_none())
            .cloned();
        let mut totals = self.totals();
        totals.usage = spent.usage;
        totals.calls = spent.calls;
        totals.usd = spent.usd;
        totals.by_model = spent.usage_by_model.clone();
        totals.by_step = spent.calls_by_step.clone();
        totals.usage_by_step = spent.usage_by_step.clone();
        totals.prefix_reuse = spent.prefix_reuse;
        totals.unpriced = spent
            .unpriced_models
            .iter()
            .cloned()
            .chain(unpriced)
            .collect();
    }

    /// What was spent so far.
    pub fn snapshot(&self) -> CostSnapshot {
        snapshot_of(&self.totals(), self.inner.started.elapsed())
    }
}

/// Tokens per USD that stand in for a cost limit while a model has no price: a
/// million, about what the mid-priced hosted models charge.
pub const UNPRICED_TOKENS_PER_USD: f64 = 1_000_000.0;

/// The token limit that stands in for a cost limit of `max_usd` while a model has no price.
///
/// ```
/// assert_eq!(agent_runtime::unpriced_token_limit(5.0), 5_000_000);
/// ```
pub fn unpriced_token_limit(max_usd: f64) -> u64 {
    (max_usd * UNPRICED_TOKENS_PER_USD).max(0.0) as u64
}

/// The unpriced models (with their cost limits) already warned about by this process.
static WARNED_UNPRICED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Whether this process has not yet warned about `model` under `max_usd` (and now has).
fn first_unpriced(model: &str, max_usd: Option<f64>) -> bool {
    WARNED_UNPRICED
        .lock()
        .map(|mut warned| warned.insert(format!("{model} {max_usd:?}")))
        .unwrap_or(true)
}

/// Said once per process, model and cost limit (a server meters each session or turn
/// with a meter of its own); later meters note it at debug level.
fn warn_unpriced(model: &str, max_usd: Option<f64>) {
    if !first_unpriced(model, max_usd) {
        tracing::debug!(model, "no price for this model (warned before)");
        return;
    }
    let variable = format!(
        "{}{}",
        agent_llm::pricing::PRICE_VAR_PREFIX,
        agent_llm::pricing::price_var_key(model)
    );
    match max_usd {
        Some(max) => tracing::warn!(
            model,
            "no price for this model: its cost is not counted, and the ${max:.2} cost limit stands as a limit of {} tokens; price it with {variable}=input,output (USD per million tokens) or {variable}=free, or in {}",
            unpriced_token_limit(max),
            agent_llm::pricing::PRICING_FILE_VAR,
        ),
        None => tracing::warn!(
            model,
            "no price for this model: its cost is not counted; price it with {variable}=input,output (USD per million tokens) or {variable}=free, or in {}",
            agent_llm::pricing::PRICING_FILE_VAR,
        ),
    }
}

fn snapshot_of(totals: &Totals, elapsed: Duration) -> CostSnapshot {
    CostSnapshot {
        usage: totals.usage,
        calls: totals.calls,
        usd: totals.usd,
        unpriced_models: totals.unpriced.iter().cloned().collect(),
        elapsed,
        usage_by_model: totals.by_model.clone(),
        calls_by_step: totals.by_step.clone(),
        usage_by_step: totals.usage_by_step.clone(),
        prefix_reuse: totals.prefix_reuse,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(n: u64) -> Usage {
        Usage {
            input_tokens: n,
            ..Default::default()
        }
    }

    #[test]
    fn a_session_s_marks_carry_the_meter_by_model_and_step_into_a_resumed_meter() {
        let limits = || CostLimits {
            max_usd: Some(1.0),
            ..Default::default()
        };
        let before: crate::Session<(), ()> =
            crate::Session::new("s", ()).with_meter(CostMeter::new(limits()));
        let meter = before.meter().unwrap();
        meter
            .for_step("score")
            .record("claude-haiku-4-5", tokens(100));
        meter.for_step("score").record("local-unpriced", tokens(50));
        meter.record("claude-haiku-4-5", tokens(10));
        let marks: crate::SessionMarks =
            serde_json::from_value(serde_json::to_value(before.marks()).unwrap()).unwrap();

        let after: crate::Session<(), ()> =
            crate::Session::new("s", ()).with_meter(CostMeter::new(limits()));
        after.restore_marks(&marks);
        let spent = after.meter().unwrap().snapshot();
        assert_eq!(spent.calls, 3);
        assert_eq!(spent.calls_by_step["score"], 2);
        assert_eq!(spent.usage_by_step["score"], tokens(150));
        assert_eq!(
            spent.usage_by_step.len(),
            1,
            "the call of no step is in no step"
        );
        assert_eq!(spent.usage_by_model["claude-haiku-4-5"], tokens(110));
        assert_eq!(spent.usage_by_model["local-unpriced"], tokens(50));
        // The model without a price counts as such again: the cost limit stands as a
        // token limit for it.
        assert_eq!(spent.unpriced_models, ["local-unpriced"]);
    }

    #[test]
    fn an_unpriced_model_is_warned_about_once_per_process_and_limit() {
        let model = "unpriced-once-per-process";
        assert!(first_unpriced(model, Some(0.5)));
        assert!(
            !first_unpriced(model, Some(0.5)),
            "a second meter stays quiet"
        );
        assert!(
            first_unpriced(model, None),
            "another limit is another warning"
        );
    }

    #[test]
    fn an_unpriced_model_turns_the_cost_limit_into_a_token_limit() {
        let meter = CostMeter::new(CostLimits {
            max_usd: Some(0.5),
            ..Default::default()
        });
        meter.record("my-local-model", tokens(400_000));
        assert_eq!(meter.check(), Ok(()));
        meter.record("my-local-model", tokens(100_000));
        let refused = meter.check().unwrap_err();
        assert_eq!(
            refused,
            Limit::Usd {
                spent: 0.0,
                max: 0.5,
                stand_in_tokens: Some(500_000)
            }
        );
        assert_eq!(
            refused.to_string(),
            "used 500000 tokens, the stand-in for the $0.50 cost limit while a model has no price"
        );
        assert_eq!(meter.snapshot().unpriced_models, vec!["my-local-model"]);
    }

    #[test]
    fn a_priced_model_is_limited_by_its_cost_only() {
        let free = PricingTable::empty().with_price("local", agent_llm::ModelPrice::FREE);
        let meter = CostMeter::with_pricing(
            CostLimits {
                max_usd: Some(0.5),
                ..Default::default()
            },
            free,
        );
        meter.record("local", tokens(10_000_000));
        assert_eq!(meter.check(), Ok(()));
        assert!(meter.snapshot().unpriced_models.is_empty());
    }
}
