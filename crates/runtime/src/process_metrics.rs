//! The process metrics the runtime records: model calls, tokens and cost, tool calls,
//! gate waits.
//!
//! They go through the [`metrics`] facade to whatever recorder the application installs
//! (agent-server's Prometheus exporter serves them at `GET /metrics`), once it calls
//! [`start_recording`]: until then the hot paths (every tool call, every model call)
//! build no metric key. The names follow Prometheus conventions: counters end in
//! `_total`, durations are histograms in seconds.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use agent_llm::{ModelRouter, ModelTier, Usage};

/// Model calls (`product`, `model`, `tier`).
pub const MODEL_CALLS: &str = "agent_model_calls_total";
/// Tokens of model calls (`product`, `model`, `tier`, `kind`: `input`, `output`,
/// `cache_read`, `cache_write`).
pub const MODEL_TOKENS: &str = "agent_model_tokens_total";
/// What model calls cost, in US dollars at the meter's prices (`product`, `model`,
/// `tier`); a gauge that only grows, since counters count whole numbers.
pub const MODEL_COST: &str = "agent_model_cost_usd";
/// Tool calls (`tool`, `outcome`: `ok` or `error`).
pub const TOOL_CALLS: &str = "agent_tool_calls_total";
/// Gates waiting for a user's answer now (`gate`).
pub const GATES_WAITING: &str = "agent_gates_waiting";
/// How long gates waited for their answer (`gate`, `outcome`: `answered`, `expired`,
/// `cancelled`).
pub const GATE_WAIT: &str = "agent_gate_wait_seconds";

/// Runs waiting in the run queue behind the last one delivered (all products).
pub const RUN_QUEUE_DEPTH: &str = "agent_run_queue_depth";
/// Runs the run queue delivered again (their ack wait ran out, or they were handed
/// back), by `product`.
pub const RUN_QUEUE_REDELIVERIES: &str = "agent_run_queue_redeliveries_total";

static RECORDING: AtomicBool = AtomicBool::new(false);

/// Whether the process records its metrics ([`start_recording`] was called).
pub fn recording() -> bool {
    RECORDING.load(Ordering::Relaxed)
}

/// Starts recording the runtime's metrics (and lets the server's and the backends'
/// record theirs) to the installed recorder, and describes them to it (help text,
/// unit). Call it once the recorder is installed; agent-server's `install_prometheus`
/// does.
///
/// ```
/// agent_runtime::process_metrics::start_recording();
/// assert!(agent_runtime::process_metrics::recording());
/// ```
pub fn start_recording() {
    describe();
    RECORDING.store(true, Ordering::Relaxed);
}

fn describe() {
    metrics::describe_counter!(MODEL_CALLS, "Model calls made, by product, model and tier.");
    metrics::describe_counter!(
        MODEL_TOKENS,
        metrics::Unit::Count,
        "Tokens of model calls, by product, model, tier and kind (input, output, cache_read, cache_write)."
    );
    metrics::describe_gauge!(
        MODEL_COST,
        "What model calls cost in US dollars at the configured prices, by product, model and tier (only grows)."
    );
    metrics::describe_counter!(
        TOOL_CALLS,
        "Tool calls made by agents, by tool and outcome."
    );
    metrics::describe_gauge!(GATES_WAITING, "Gates waiting for a user's answer, by gate.");
    metrics::describe_histogram!(
        GATE_WAIT,
        metrics::Unit::Seconds,
        "How long gates waited for their answer, by gate and outcome."
    );
    metrics::describe_gauge!(
        RUN_QUEUE_DEPTH,
        "Runs waiting in the run queue behind the last one delivered (all products)."
    );
    metrics::describe_counter!(
        RUN_QUEUE_REDELIVERIES,
        "Runs the run queue delivered again, by product."
    );
}

/// A run queue delivered a run of `product` for the `deliveries`-th time, with `waiting`
/// runs (of any product) behind it, when the queue tells.
///
/// ```
/// // Without a recorder installed, nothing is kept.
/// agent_runtime::process_metrics::run_delivered("resume", 2, Some(0));
/// ```
pub fn run_delivered(product: &str, deliveries: u64, waiting: Option<u64>) {
    if !recording() {
        return;
    }
    if deliveries > 1 {
        metrics::counter!(RUN_QUEUE_REDELIVERIES, "product" => product.to_owned()).increment(1);
    }
    if let Some(waiting) = waiting {
        // Precision is lost only beyond 2^53 runs.
        #[allow(clippy::cast_precision_loss)]
        metrics::gauge!(RUN_QUEUE_DEPTH).set(waiting as f64);
    }
}

/// What a meter's calls are counted under: the product, and the tier each model serves.
///
/// ```
/// use agent_llm::{ModelRouter, ModelTier, ProviderKind};
/// use agent_runtime::MeterLabels;
/// let labels = MeterLabels::product("jd_optimizer")
///     .with_router(&ModelRouter::for_provider(ProviderKind::Anthropic));
/// assert_eq!(labels.tier_of("claude-haiku-4-5"), "orchestrator+light");
/// assert_eq!(labels.tier_of("claude-opus-4"), "");
/// let labels = MeterLabels::product("job_hunter").with_tier(ModelTier::Light, "small");
/// assert_eq!(labels.tier_of("small"), "light");
/// ```
#[derive(Debug, Clone)]
pub struct MeterLabels {
    product: Arc<str>,
    tiers: Vec<(ModelTier, String)>,
}

impl MeterLabels {
    /// Calls of `product`, no tier known yet.
    pub fn product(product: &str) -> Self {
        MeterLabels {
            product: Arc::from(product),
            tiers: Vec::new(),
        }
    }

    /// Every tier on the model `router` names for it.
    pub fn with_router(self, router: &ModelRouter) -> Self {
        ModelTier::ALL.iter().fold(self, |labels, tier| {
            labels.with_tier(*tier, router.model(*tier))
        })
    }

    /// `tier` on `model`.
    pub fn with_tier(mut self, tier: ModelTier, model: &str) -> Self {
        self.tiers.retain(|(known, _)| *known != tier);
        self.tiers.push((tier, model.to_owned()));
        self.tiers.sort_by_key(|(tier, _)| *tier as usize);
        self
    }

    /// The tiers `model` serves, joined by `+` in the order primary, mid, orchestrator,
    /// light; empty for a model no tier names. A model serving several tiers cannot tell
    /// which one a call was for, so it names them all.
    pub fn tier_of(&self, model: &str) -> String {
        self.tiers
            .iter()
            .filter(|(_, served)| served == model)
            .map(|(tier, _)| tier.as_str())
            .collect::<Vec<_>>()
            .join("+")
    }
}

/// Records one model call.
pub(crate) fn model_call(labels: Option<&MeterLabels>, model: &str, usage: &Usage, usd: f64) {
    if !recording() {
        return;
    }
    let product = labels.map_or_else(|| Arc::from(""), |labels| Arc::clone(&labels.product));
    let tier = labels
        .map(|labels| labels.tier_of(model))
        .unwrap_or_default();
    let base = [
        metrics::Label::new("product", product.to_string()),
        metrics::Label::new("model", model.to_owned()),
        metrics::Label::new("tier", tier),
    ];
    metrics::counter!(MODEL_CALLS, base.iter()).increment(1);
    let kinds = [
        ("input", usage.input_tokens),
        ("output", usage.output_tokens),
        ("cache_read", usage.cache_read_input_tokens),
        ("cache_write", usage.cache_creation_input_tokens),
    ];
    for (kind, tokens) in kinds {
        let mut labels = base.to_vec();
        labels.push(metrics::Label::new("kind", kind));
        metrics::counter!(MODEL_TOKENS, labels).increment(tokens);
    }
    metrics::gauge!(MODEL_COST, base.iter()).increment(usd);
}

/// Records one tool call.
pub(crate) fn tool_call(tool: &str, ok: bool) {
    if !recording() {
        return;
    }
    let outcome = if ok { "ok" } else { "error" };
    metrics::counter!(TOOL_CALLS, "tool" => tool.to_owned(), "outcome" => outcome).increment(1);
}

/// A gate's wait, counted among the waiting until it is dropped (when the process
/// records its metrics).
pub(crate) struct GateWait {
    /// The gate's name and when it started waiting; `None` when nothing is recorded.
    waiting: Option<(String, Instant)>,
}

impl GateWait {
    /// The gate `gate` starts waiting.
    pub(crate) fn start(gate: &str) -> Self {
        if !recording() {
            return GateWait { waiting: None };
        }
        metrics::gauge!(GATES_WAITING, "gate" => gate.to_owned()).increment(1.0);
        GateWait {
            waiting: Some((gate.to_owned(), Instant::now())),
        }
    }

    /// The wait ended with `outcome`.
    pub(crate) fn finish(self, outcome: &'static str) {
        if let Some((gate, since)) = &self.waiting {
            metrics::histogram!(GATE_WAIT, "gate" => gate.clone(), "outcome" => outcome)
                .record(since.elapsed().as_secs_f64());
        }
    }
}

impl Drop for GateWait {
    fn drop(&mut self) {
        if let Some((gate, _)) = self.waiting.take() {
            metrics::gauge!(GATES_WAITING, "gate" => gate).decrement(1.0);
        }
    }
}
