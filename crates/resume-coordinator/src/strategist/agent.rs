//! The Strategist's configuration, one per phase.

use agent_llm::{ModelRouter, ModelTier};
use agent_runtime::{AgentConfig, AgentIdentity};

use super::prompts::STRATEGIST_SYSTEM_PROMPT;
use super::tools;
use crate::types::{DOMAIN, ResumeEvent, ResumeState, ResumeTool};

/// The Strategist's name on the bus and in gate ids.
pub const STRATEGIST: &str = "strategist";

/// What the Strategist is asked to do in one invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrategistPhase {
    /// Analyze the job and research the company.
    Research,
    /// The batch questionnaire.
    Interview,
    /// Strengths, gaps, and questions about the gaps.
    GapAnalysis,
    /// Design the blueprint.
    Blueprint,
    /// Redesign the blueprint with the user's feedback.
    BlueprintRevision,
}

impl StrategistPhase {
    /// The name in the opening message's `Phase:` line.
    pub fn as_str(self) -> &'static str {
        match self {
            StrategistPhase::Research => "research",
            StrategistPhase::Interview => "interview",
            StrategistPhase::GapAnalysis => "gap_analysis",
            StrategistPhase::Blueprint => "blueprint",
            StrategistPhase::BlueprintRevision => "blueprint_revision",
        }
    }

    /// Model calls the phase may take: its tool calls, one at a time, and a closing answer,
    /// with a little room for a corrected call.
    pub fn max_rounds(self) -> u32 {
        match self {
            StrategistPhase::Research => 4,
            StrategistPhase::Interview => 3,
            StrategistPhase::GapAnalysis => 2 + tools::MAX_POSITIONING_QUESTIONS + 1,
            StrategistPhase::Blueprint | StrategistPhase::BlueprintRevision => 3,
        }
    }

    /// Whether the phase's result is in the state.
    pub fn is_done(self, state: &ResumeState) -> bool {
        match self {
            StrategistPhase::Research => state.jd_analysis.is_some(),
            StrategistPhase::Interview => state.questionnaires_asked > 0,
            StrategistPhase::GapAnalysis => state.gap_analysis.is_some(),
            StrategistPhase::Blueprint | StrategistPhase::BlueprintRevision => {
                state.blueprint.is_some()
            }
        }
    }

    /// The tool that produces the phase's result.
    pub fn required_tool(self) -> &'static str {
        match self {
            StrategistPhase::Research => "analyze_jd",
            StrategistPhase::Interview => "interview_candidate_batch",
            StrategistPhase::GapAnalysis => "analyze_gaps",
            StrategistPhase::Blueprint | StrategistPhase::BlueprintRevision => "design_blueprint",
        }
    }

    /// The phase's result, as "without being able to ..." says it.
    pub fn result(self) -> &'static str {
        match self {
            StrategistPhase::Research => "analyze the job description",
            StrategistPhase::Interview => "ask the candidate its questionnaire",
            StrategistPhase::GapAnalysis => "analyze the gaps",
            StrategistPhase::Blueprint => "design the blueprint",
            StrategistPhase::BlueprintRevision => "redesign the blueprint",
        }
    }

    /// The tools the phase offers: the model cannot call another phase's.
    fn tools(self) -> Vec<ResumeTool> {
        match self {
            StrategistPhase::Research => vec![tools::analyze_jd(), tools::research_company()],
            StrategistPhase::Interview => vec![tools::interview_candidate_batch()],
            StrategistPhase::GapAnalysis => {
                vec![tools::analyze_gaps(), tools::interview_candidate()]
            }
            StrategistPhase::Blueprint | StrategistPhase::BlueprintRevision => {
                vec![tools::design_blueprint()]
            }
        }
    }
}

/// The Strategist for one phase: its loop on the ORCHESTRATOR model, only that phase's
/// tools (calling `llm` by tier), and the phase's round limit. The questions it may ask
/// are counted by the tools themselves.
pub fn strategist(
    router: &ModelRouter,
    phase: StrategistPhase,
) -> AgentConfig<ResumeState, ResumeEvent> {
    let mut config = AgentConfig::new(
        AgentIdentity::new(STRATEGIST, DOMAIN),
        STRATEGIST_SYSTEM_PROMPT,
    )
    .with_model(router.model(ModelTier::Orchestrator))
    .with_max_rounds(phase.max_rounds());
    config.tools = phase.tools();
    config
}
