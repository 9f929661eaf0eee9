//! The page explorer's agents (spec 002, "Agents & Their Tools"). Each is a system prompt, the
//! tools it may call and the message the orchestrator builds for it; the orchestrator (the
//! `orchestrator` module, which depends on this one and never the other way) calls them and
//! carries out what they ask.
//!
//! - [`explorer`]: decides the next browser action (`click`, `scroll`, `type_text`,
//!   `observe`) until it calls `done`.
//! - [`classifier`]: on every URL change, says whether the page is new or known (`classify`).
//! - [`change_analyzer`]: after every action, classifies its effect and the element acted on
//!   (`analyze_change`).
//! - [`summarizer`]: condenses a page's observations before leaving it and at the end
//!   (`summarize`).
//! - [`extractor`] (Phase 2): reads one job's text into the spec's `JobData`
//!   (`extract_job`), checked against the text.
//!
//! Every agent asks through a session ([`ExplorerModels::session`]), the runtime's one
//! metered call: the single-tool agents with `extract` (their tool is the one the model
//! must call; an answer that does not match its schema is sent back once with the
//! validation error), the Explorer with `chat`, its request as it is, tools included.

pub mod change_analyzer;
pub mod classifier;
pub mod explorer;
pub mod extractor;
pub mod summarizer;

use std::sync::Arc;

use agent_llm::{ChatModel, LlmError, ModelRouter, ModelTier, ProviderConfig, RetryPolicy};
use agent_runtime::{CostMeter, Session};

/// The model the agents ask, the model ids of its tiers, and the meter every call is
/// recorded on. Exploring asks through a session these equip
/// ([`session`](Self::session)): the Explorer on the orchestrator tier, the others on the
/// light tier, each call counted under its agent's name.
#[derive(Clone)]
pub struct ExplorerModels {
    /// The model every agent asks (the request names the tier's model id).
    pub model: Arc<dyn ChatModel>,
    /// The model id of each tier; without one, every request goes to the model's
    /// default.
    pub router: Option<ModelRouter>,
    /// The meter every call is recorded on.
    pub meter: CostMeter,
}

impl std::fmt::Debug for ExplorerModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExplorerModels")
            .field("router", &self.router)
            .field("meter", &self.meter.snapshot())
            .finish_non_exhaustive()
    }
}

impl ExplorerModels {
    /// Every agent on `model` as it is (its default model for every tier), metered on
    /// `meter`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_llm::testing::ScriptedModel;
    /// use agent_runtime::{CostLimits, CostMeter};
    /// use page_explorer::agents::ExplorerModels;
    /// let models = ExplorerModels::single(Arc::new(ScriptedModel::new(vec![])), CostMeter::new(CostLimits::default()));
    /// assert_eq!(models.meter.snapshot().calls, 0);
    /// ```
    pub fn single(model: Arc<dyn ChatModel>, meter: CostMeter) -> Self {
        ExplorerModels {
            model,
            router: None,
            meter,
        }
    }

    /// The provider's model and tiers (the orchestrator tier for the Explorer, the light
    /// tier for the others), retrying transient errors three times (1 s to 10 s
    /// backoff).
    pub fn from_provider(provider: &ProviderConfig, meter: CostMeter) -> Result<Self, LlmError> {
        let retry = RetryPolicy::default()
            .with_max_attempts(3)
            .with_base_delay(std::time::Duration::from_secs(1))
            .with_max_delay(std::time::Duration::from_secs(10));
        Ok(ExplorerModels {
            model: provider.chat_model_with_retry(ModelTier::Light, retry)?,
            router: Some(provider.router.clone()),
            meter,
        })
    }

    /// The same, asking the model `wrap` makes of this one's (a journal, a recorder).
    pub fn map_model(self, wrap: impl FnOnce(Arc<dyn ChatModel>) -> Arc<dyn ChatModel>) -> Self {
        ExplorerModels {
            model: wrap(self.model),
            ..self
        }
    }

    /// A session `id` the agents ask through: this model, its tiers and the meter.
    pub fn session(&self, id: &str) -> Session<(), ()> {
        let session = Session::new(id, ())
            .with_model(Arc::clone(&self.model))
            .with_meter(self.meter.clone());
        match &self.router {
            Some(router) => session.with_router(router.clone()),
            None => session,
        }
    }
}

/// `text` cut to at most `max_chars` characters at a line end where possible, marked when cut.
pub fn clip(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max_chars).collect();
    let cut = match cut.rfind('\n') {
        Some(end) if end > max_chars / 2 => &cut[..end],
        _ => cut.as_str(),
    };
    format!("{cut}\n[... cut to {max_chars} characters]")
}

#[cfg(test)]
mod tests {
    use super::clip;

    #[test]
    fn clip_cuts_at_a_line_end_and_says_so() {
        assert_eq!(clip("short", 10), "short");
        let text = "line one\nline two\nline three";
        assert_eq!(
            clip(text, 20),
            "line one\nline two\n[... cut to 20 characters]"
        );
        assert!(clip(&"é".repeat(50), 10).starts_with(&"é".repeat(10)));
    }
}
