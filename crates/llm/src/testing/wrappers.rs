//! Wrappers that make any [`ChatModel`] slower or less reliable, for benchmarks and
//! reliability tests.

use crate::error::LlmError;
use crate::model::{ChatModel, StructuredOutputMode};
use crate::stream::ChatStream;
use crate::types::{ChatRequest, ChatResponse};
use async_trait::async_trait;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

fn seeded_rng(seed: Option<u64>) -> Mutex<fastrand::Rng> {
    Mutex::new(seed.map_or_else(fastrand::Rng::new, fastrand::Rng::with_seed))
}

fn draw<T>(rng: &Mutex<fastrand::Rng>, f: impl FnOnce(&mut fastrand::Rng) -> T) -> T {
    let mut rng = rng.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    f(&mut rng)
}

/// A [`ChatModel`] that waits before each call to the model it wraps (with
/// [`tokio::time::sleep`], so paused-clock tests run instantly), for `chat` and
/// `chat_stream` alike. The delay is fixed or uniformly random within a range.
///
/// ```
/// use agent_llm::{ChatModel, ChatRequest, testing::{LatencyModel, ScriptedModel}};
/// use std::time::Duration;
/// # tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap().block_on(async {
/// let model = LatencyModel::new(ScriptedModel::from_texts(["hi"]), Duration::from_millis(300));
/// let start = tokio::time::Instant::now();
/// model.chat(&ChatRequest::from_prompt("hello")).await.unwrap();
/// assert!(start.elapsed() >= Duration::from_millis(300));
/// # });
/// ```
#[derive(Debug)]
pub struct LatencyModel<M> {
    inner: M,
    min: Duration,
    max: Duration,
    rng: Mutex<fastrand::Rng>,
}

impl<M: ChatModel> LatencyModel<M> {
    /// Waits `delay` before every call.
    pub fn new(inner: M, delay: Duration) -> Self {
        LatencyModel {
            inner,
            min: delay,
            max: delay,
            rng: seeded_rng(None),
        }
    }

    /// Waits a uniformly random delay between `min` and `max` (in either order) before
    /// every call.
    ///
    /// ```
    /// use agent_llm::testing::{LatencyModel, TestModel};
    /// use std::time::Duration;
    /// let model = LatencyModel::uniform(TestModel::new(), Duration::from_millis(50), Duration::from_millis(200))
    ///     .with_seed(7);
    /// let delay = model.next_delay();
    /// assert!(delay >= Duration::from_millis(50) && delay <= Duration::from_millis(200));
    /// ```
    pub fn uniform(inner: M, min: Duration, max: Duration) -> Self {
        LatencyModel {
            inner,
            min: min.min(max),
            max: min.max(max),
            rng: seeded_rng(None),
        }
    }

    /// Makes the random delays reproducible.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.rng = seeded_rng(Some(seed));
        self
    }

    /// The delay the next call would wait (each call draws a new one).
    pub fn next_delay(&self) -> Duration {
        if self.min == self.max {
            return self.min;
        }
        let fraction = draw(&self.rng, fastrand::Rng::f64);
        self.min + (self.max - self.min).mul_f64(fraction)
    }

    /// The wrapped model.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// Unwraps the model.
    pub fn into_inner(self) -> M {
        self.inner
    }

    async fn wait(&self) {
        let delay = self.next_delay();
        tracing::trace!(
            delay_ms = delay.as_millis() as u64,
            "LatencyModel delaying call"
        );
        tokio::time::sleep(delay).await;
    }
}

#[async_trait]
impl<M: ChatModel> ChatModel for LatencyModel<M> {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.wait().await;
        self.inner.chat(request).await
    }

    async fn chat_stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        self.wait().await;
        self.inner.chat_stream(request).await
    }

    fn structured_output_mode(&self) -> StructuredOutputMode {
        self.inner.structured_output_mode()
    }

    fn default_model(&self) -> Option<String> {
        self.inner.default_model()
    }

    fn context_window(&self) -> Option<u32> {
        self.inner.context_window()
    }
}

#[derive(Debug)]
enum FaultRule {
    First(u64),
    Every(u64),
    Probability(f64),
}

/// A [`ChatModel`] that fails some calls with a chosen error instead of passing them to
/// the model it wraps, for `chat` and `chat_stream` alike.
///
/// Rules are checked in the order they were added and the first that applies injects its
/// error; calls are numbered from 1. [`injected_faults`](Self::injected_faults) counts the
/// failures injected, [`call_count`](Self::call_count) all calls.
///
/// ```
/// use agent_llm::{ChatModel, ChatRequest, LlmError, testing::{FaultyModel, ScriptedModel}};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = FaultyModel::new(ScriptedModel::from_texts(["ok"]))
///     .fail_first(2, LlmError::Overloaded { message: "busy".into(), retry_after: None });
/// assert!(model.chat(&ChatRequest::from_prompt("1")).await.is_err());
/// assert!(model.chat(&ChatRequest::from_prompt("2")).await.is_err());
/// assert_eq!(model.chat(&ChatRequest::from_prompt("3")).await.unwrap().text(), "ok");
/// assert_eq!(model.injected_faults(), 2);
/// # });
/// ```
#[derive(Debug)]
pub struct FaultyModel<M> {
    inner: M,
    rules: Vec<(FaultRule, LlmError)>,
    rng: Mutex<fastrand::Rng>,
    calls: AtomicU64,
    faults: AtomicU64,
}

impl<M: ChatModel> FaultyModel<M> {
    /// Wraps `inner` with no fault yet: add rules with the `fail_*` methods.
    pub fn new(inner: M) -> Self {
        FaultyModel {
            inner,
            rules: Vec::new(),
            rng: seeded_rng(None),
            calls: AtomicU64::new(0),
            faults: AtomicU64::new(0),
        }
    }

    /// Fails the first `n` calls with `error`.
    pub fn fail_first(mut self, n: u64, error: LlmError) -> Self {
        self.rules.push((FaultRule::First(n), error));
        self
    }

    /// Fails every `k`-th call (calls `k`, `2k`, ...) with `error`; `k = 0` never fails.
    ///
    /// ```
    /// use agent_llm::{LlmError, testing::{FaultyModel, TestModel}};
    /// let model = FaultyModel::new(TestModel::new()).fail_every(3, LlmError::Transport("reset".into()));
    /// # let _ = model;
    /// ```
    pub fn fail_every(mut self, k: u64, error: LlmError) -> Self {
        self.rules.push((FaultRule::Every(k), error));
        self
    }

    /// Fails each call with probability `p` (clamped to `0..=1`); see
    /// [`with_seed`](Self::with_seed) for reproducible runs.
    ///
    /// ```
    /// use agent_llm::{LlmError, testing::{FaultyModel, TestModel}};
    /// let model = FaultyModel::new(TestModel::new())
    ///     .fail_with_probability(0.1, LlmError::Timeout("read".into()))
    ///     .with_seed(42);
    /// # let _ = model;
    /// ```
    pub fn fail_with_probability(mut self, p: f64, error: LlmError) -> Self {
        let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) };
        self.rules.push((FaultRule::Probability(p), error));
        self
    }

    /// Seeds the random draws of [`fail_with_probability`](Self::fail_with_probability).
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.rng = seeded_rng(Some(seed));
        self
    }

    /// Failures injected so far.
    pub fn injected_faults(&self) -> u64 {
        self.faults.load(Ordering::SeqCst)
    }

    /// Calls made so far, failed or not.
    pub fn call_count(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    /// The wrapped model.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// Unwraps the model.
    pub fn into_inner(self) -> M {
        self.inner
    }

    /// Counts a call and returns the error to inject, if any.
    fn fault(&self) -> Option<LlmError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        // Every probability rule draws on every call so a seeded run is reproducible
        // whatever the other rules decide.
        let mut chosen = None;
        for (rule, error) in &self.rules {
            let hit = match rule {
                FaultRule::First(n) => call <= *n,
                FaultRule::Every(k) => *k > 0 && call.is_multiple_of(*k),
                FaultRule::Probability(p) => draw(&self.rng, fastrand::Rng::f64) < *p,
            };
            if hit && chosen.is_none() {
                chosen = Some(error.clone());
            }
        }
        if let Some(error) = &chosen {
            self.faults.fetch_add(1, Ordering::SeqCst);
            tracing::debug!(call, error = %error, "FaultyModel injecting a fault");
        }
        chosen
    }
}

#[async_trait]
impl<M: ChatModel> ChatModel for FaultyModel<M> {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        match self.fault() {
            Some(error) => Err(error),
            None => self.inner.chat(request).await,
        }
    }

    async fn chat_stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        match self.fault() {
            Some(error) => Err(error),
            None => self.inner.chat_stream(request).await,
        }
    }

    fn structured_output_mode(&self) -> StructuredOutputMode {
        self.inner.structured_output_mode()
    }

    fn default_model(&self) -> Option<String> {
        self.inner.default_model()
    }

    fn context_window(&self) -> Option<u32> {
        self.inner.context_window()
    }
}
