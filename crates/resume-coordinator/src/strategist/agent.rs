//! The Strategist's configuration.

use agent_llm::{ModelRouter, ModelTier};
use agent_runtime::{AgentConfig, AgentIdentity};

use super::prompts::STRATEGIST_SYSTEM_PROMPT;
use super::tools;
use crate::llm::Llm;
use crate::types::{DOMAIN, ResumeEvent, ResumeState};

/// The Strategist's name on the bus and in gate ids.
pub const STRATEGIST: &str = "strategist";

/// The Strategist: its loop on the ORCHESTRATOR model, its tools calling `llm` by tier.
/// Its invocations wait for the user, so they may last a day.
pub fn strategist(llm: &Llm, router: &ModelRouter) -> AgentConfig<ResumeState, ResumeEvent> {
    let mut config = AgentConfig::new(
        AgentIdentity::new(STRATEGIST, DOMAIN),
        STRATEGIST_SYSTEM_PROMPT,
    )
    .with_model(router.model(ModelTier::Orchestrator))
    .with_max_rounds(12);
    config.tools = vec![
        tools::analyze_jd(llm.clone()),
        tools::research_company(llm.clone()),
        tools::interview_candidate_batch(),
        tools::analyze_gaps(llm.clone()),
        tools::interview_candidate(),
        tools::design_blueprint(llm.clone()),
    ];
    config
}
