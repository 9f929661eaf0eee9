//! The pipeline's gates, declared once with their answer types: the tools and the
//! coordinator wait at them ([`AgentContext::ask_with`](agent_runtime::AgentContext::ask_with)),
//! and the server checks every answer against them before passing it on.

use std::collections::BTreeMap;

use agent_runtime::{Gate, GateSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The answer to a `questionnaire_{n}` gate.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct QuestionnaireAnswer {
    /// Answers by question id.
    pub answers: BTreeMap<String, String>,
}

/// The answer to a `positioning_q_{n}` gate.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct PositioningAnswer {
    /// The answer.
    pub answer: String,
}

/// The answer to a `section_review_{section}` gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum SectionReview {
    /// The section is final.
    Approve,
    /// The user's Markdown replaces the section, as is.
    Edit {
        /// The new text.
        markdown: String,
    },
    /// The Craftsman revises with this feedback and asks again.
    Revise {
        /// What to change.
        feedback: String,
    },
}

/// The answer to `research_validation` and `architect_review`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Approval {
    /// Whether the user approves.
    pub approved: bool,
    /// What to change, when not approved.
    #[serde(default)]
    pub feedback: Option<String>,
}

/// The answer to `quality_review`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct QualityAnswer {
    /// Whether the user approves the resume as shown.
    pub approved: bool,
    /// What to change, when not approved: the sections it names (or `sections`) go back
    /// to the Craftsman with it, and are shown to the user again.
    #[serde(default)]
    pub feedback: Option<String>,
    /// The sections to revise, when the feedback does not name them.
    #[serde(default)]
    pub sections: Option<Vec<String>>,
}

/// The Strategist's batch questionnaire: instances `questionnaire_1`, `questionnaire_2`.
pub const QUESTIONNAIRE: Gate<QuestionnaireAnswer> = Gate::new("questionnaire");
/// One positioning question about a gap: instances `positioning_q_1`, ...
pub const POSITIONING: Gate<PositioningAnswer> = Gate::new("positioning_q");
/// The review of a written section: instances `section_review_experience`, ...
pub const SECTION_REVIEW: Gate<SectionReview> = Gate::new("section_review");
/// The user confirms or corrects the job analysis and the company research.
pub const RESEARCH_VALIDATION: Gate<Approval> = Gate::new("research_validation");
/// The approval of the blueprint.
pub const ARCHITECT_REVIEW: Gate<Approval> = Gate::new("architect_review");
/// The approval of the final resume.
pub const QUALITY_REVIEW: Gate<QualityAnswer> = Gate::new("quality_review");

/// Every gate of the pipeline, for the server.
pub fn all() -> Vec<GateSpec> {
    vec![
        RESEARCH_VALIDATION.spec(),
        QUESTIONNAIRE.spec(),
        POSITIONING.spec(),
        SECTION_REVIEW.spec(),
        ARCHITECT_REVIEW.spec(),
        QUALITY_REVIEW.spec(),
    ]
}
