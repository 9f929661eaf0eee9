//! The Producer's configuration.

use agent_llm::{ModelRouter, ModelTier};
use agent_runtime::bus::AgentBus;
use agent_runtime::{AgentConfig, AgentIdentity};
use std::sync::Arc;

use super::prompts::PRODUCER_SYSTEM_PROMPT;
use super::tools;
use crate::types::{DOMAIN, ResumeEvent, ResumeState};

pub use super::tools::PRODUCER;

/// The Producer: its loop on the ORCHESTRATOR model, its tools calling `llm` by tier and
/// sending revision requests on `bus`.
pub fn producer(
    router: &ModelRouter,
    bus: Arc<dyn AgentBus>,
) -> AgentConfig<ResumeState, ResumeEvent> {
    let mut config = AgentConfig::new(AgentIdentity::new(PRODUCER, DOMAIN), PRODUCER_SYSTEM_PROMPT)
        .with_model(router.model(ModelTier::Orchestrator))
        .with_max_rounds(20);
    config.tools = vec![
        tools::assemble_resume(),
        tools::check_ats(),
        tools::check_coherence(),
        tools::adversarial_review(),
        tools::request_revision(bus),
    ];
    config
}
