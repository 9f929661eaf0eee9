//! The eight steps of the pipeline, one module each, and [`careers_page`], the reading
//! of a careers page without a known job board that `scrape_jobs` uses.

pub mod aggregate;
pub mod board_probe;
pub mod careers_page;
pub mod find_companies;
pub mod notify;
pub mod parse_prefs;
pub mod parse_resume;
pub mod process_jobs;
pub mod score_jobs;
pub mod scrape_jobs;

use agent_runtime::graph::NodeError;
use futures::StreamExt as _;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::deps::Deps;
use crate::events::HuntEvent;
use crate::llm::{LlmCallError, PipelineLlm, Quality};
use crate::settings::Settings;
pub use crate::state::HuntNode;

/// The step names, in pipeline order.
pub const STEP_NAMES: [&str; 8] = [
    "parse_resume",
    "parse_prefs",
    "find_companies",
    "scrape_jobs",
    "process_jobs",
    "score_jobs",
    "aggregate",
    "notify",
];

/// What a step works with besides the state.
pub struct StepEnv<'a> {
    /// External services.
    pub deps: &'a Deps,
    /// Model calls.
    pub llm: &'a PipelineLlm,
    /// Settings.
    pub settings: &'a Settings,
    /// The step's node: the run (id, journal, cancellation) and the run's session, whose
    /// model every call asks and through which every event goes, numbered.
    pub ctx: &'a HuntNode,
}

/// A failed model call that the step cannot do without: a cost limit ends the run as
/// partial, anything else as failed.
/// The graph names the step in the run's reason.
pub(crate) fn essential(what: &str, error: LlmCallError) -> NodeError {
    match error {
        LlmCallError::CostLimit(reason) => NodeError::limit(reason),
        LlmCallError::Failed(reason) => NodeError::fatal(format!("could not {what}: {reason}")),
    }
}

/// Runs `work(0..count)`, at most `JH_MAX_CONCURRENCY` at once, reporting a
/// [`HuntEvent::Progress`] for `step` after each; the results come back in index order.
pub(crate) async fn run_each<T, F, Fut>(
    env: &StepEnv<'_>,
    step: &str,
    count: usize,
    work: F,
) -> Vec<Option<T>>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = T>,
{
    let mut results: Vec<Option<T>> = (0..count).map(|_| None).collect();
    let work = &work;
    let calls = futures::stream::iter(0..count)
        .map(|index| async move { (index, work(index).await) })
        .buffer_unordered(env.settings.max_concurrency.max(1));
    futures::pin_mut!(calls);
    let mut done = 0;
    while let Some((index, result)) = calls.next().await {
        done += 1;
        env.ctx.emit(HuntEvent::Progress {
            step: step.to_owned(),
            done,
            total: count,
        });
        if let Some(slot) = results.get_mut(index) {
            *slot = Some(result);
        }
    }
    results
}

/// Asks for one `T` per prompt through [`run_each`], each answer journaled under its key
/// (see [`PipelineLlm::extract_once`]: a step re-run after a crash does not pay again for
/// the answers it had); the answers come back in prompt order.
pub(crate) async fn extract_each<T>(
    env: &StepEnv<'_>,
    step: &str,
    quality: Quality,
    system: &str,
    calls: Vec<(String, String)>,
) -> Vec<Result<T, LlmCallError>>
where
    T: JsonSchema + Serialize + DeserializeOwned,
{
    let calls = &calls;
    run_each(env, step, calls.len(), |index| async move {
        let (key, prompt) = &calls[index];
        let key = format!("{step}:{key}");
        env.llm
            .extract_once::<T>(env.ctx, &key, step, quality, system, prompt.clone())
            .await
    })
    .await
    .into_iter()
    .map(|answer| {
        answer.unwrap_or_else(|| Err(LlmCallError::Failed("the call did not finish".into())))
    })
    .collect()
}

/// 16 hex digits of the FNV-1a hash of `text`: the same on every run and machine.
pub fn stable_key(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Cuts `text` to at most `max` characters at a character boundary, marking the cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}\n[... cut at {max} characters]", &text[..at]),
    }
}
