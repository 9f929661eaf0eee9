//! The Craftsman's configuration.

use agent_llm::{ModelRouter, ModelTier};
use agent_runtime::{AgentConfig, AgentIdentity};

use super::prompts::CRAFTSMAN_SYSTEM_PROMPT;
use super::{review, tools};
use crate::types::{DOMAIN, ResumeEvent, ResumeState};

/// The Craftsman's name on the bus and in gate ids.
pub const CRAFTSMAN: &str = "craftsman";

/// The Craftsman: its loop on the ORCHESTRATOR model, its tools calling `llm` by tier.
pub fn craftsman(router: &ModelRouter) -> AgentConfig<ResumeState, ResumeEvent> {
    let mut config = AgentConfig::new(
        AgentIdentity::new(CRAFTSMAN, DOMAIN),
        CRAFTSMAN_SYSTEM_PROMPT,
    )
    .with_model(router.model(ModelTier::Orchestrator))
    .with_max_rounds(40)
    // A small model asks for a dozen sections at once; a few at a time keep the turn short.
    .with_max_calls_per_turn(4);
    config.tools = vec![
        tools::write_section(),
        tools::self_review(),
        tools::check_keywords(),
        tools::humanize_check(),
        review::present_to_user(),
        tools::revise_section(),
    ];
    config
}
