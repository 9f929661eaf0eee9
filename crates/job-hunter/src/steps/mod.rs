//! The eight steps of the pipeline, one module each.

pub mod aggregate;
pub mod find_companies;
pub mod notify;
pub mod parse_prefs;
pub mod parse_resume;
pub mod process_jobs;
pub mod score_jobs;
pub mod scrape_jobs;

use agent_runtime::graph::{NodeError, RunContext};

use crate::deps::Deps;
use crate::llm::{LlmCallError, PipelineLlm};
use crate::settings::Settings;

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
    /// The run (id, journal).
    pub run: &'a RunContext,
}

/// A failed model call that the step cannot do without: a cost limit ends the run as
/// partial, anything else as failed.
pub(crate) fn essential(step: &str, what: &str, error: LlmCallError) -> NodeError {
    match error {
        LlmCallError::CostLimit(reason) => NodeError::limit(reason),
        LlmCallError::Failed(reason) => {
            NodeError::fatal(format!("{step}: could not {what}: {reason}"))
        }
    }
}

/// Cuts `text` to at most `max` characters at a character boundary, marking the cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}\n[... cut at {max} characters]", &text[..at]),
    }
}
