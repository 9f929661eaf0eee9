//! The pipeline's gates, declared once with what they show and what they take: the tools
//! and the coordinator wait at them
//! ([`AgentContext::ask_with`](agent_runtime::AgentContext::ask_with)), and the server
//! checks every answer against them before passing it on and publishes both types in the
//! product's OpenAPI document.

use std::collections::BTreeMap;

use agent_runtime::{Gate, GateSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::types::{Blueprint, Bullet, Finding, JdAnalysis, QuestionItem};

/// What `research_validation` shows: the job analysis and the research notes.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ResearchToValidate {
    /// The analysis of the job description, when there is one.
    pub jd_analysis: Option<JdAnalysis>,
    /// What the research found, one note each.
    pub research_notes: Vec<String>,
}

/// What a `questionnaire_{n}` gate shows: the questions, each with its id.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Questionnaire {
    /// The questions; the answer gives one text per id.
    pub questions: Vec<QuestionItem>,
}

/// What a `positioning_q_{n}` gate shows: one question about a gap, and why it is asked.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PositioningQuestion {
    /// The question.
    pub question: String,
    /// Why the Strategist asks it.
    pub why: String,
}

/// What `architect_review` shows: the blueprint to approve.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BlueprintToReview {
    /// The blueprint.
    pub blueprint: Blueprint,
}

/// What a `section_review_{section}` gate shows: the section as written.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SectionDraft {
    /// The section's name.
    pub section: String,
    /// The section as it will stand in the resume.
    pub markdown: String,
    /// Its bullets, each with the evidence it rests on.
    pub bullets: Vec<Bullet>,
}

/// What `quality_review` shows: the report and the whole resume to approve.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct QualityToReview {
    /// 0-100.
    pub ats_score: u32,
    /// Share of the job description's keywords covered, 0.0-1.0.
    pub keyword_coverage: f64,
    /// Every finding of the review.
    pub findings: Vec<Finding>,
    /// The resume as it will be delivered.
    pub resume_markdown: String,
}

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
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Approval {
    /// Whether the user approves.
    pub approved: bool,
    /// What to change, when not approved.
    #[serde(default)]
    pub feedback: Option<String>,
}

/// The answer to `quality_review`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
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
pub const QUESTIONNAIRE: Gate<Questionnaire, QuestionnaireAnswer> = Gate::new("questionnaire");
/// One positioning question about a gap: instances `positioning_q_1`, ...
pub const POSITIONING: Gate<PositioningQuestion, PositioningAnswer> = Gate::new("positioning_q");
/// The review of a written section: instances `section_review_experience`, ...
pub const SECTION_REVIEW: Gate<SectionDraft, SectionReview> = Gate::new("section_review");
/// The user confirms or corrects the job analysis and the company research.
pub const RESEARCH_VALIDATION: Gate<ResearchToValidate, Approval> =
    Gate::new("research_validation");
/// The approval of the blueprint.
pub const ARCHITECT_REVIEW: Gate<BlueprintToReview, Approval> = Gate::new("architect_review");
/// The approval of the final resume.
pub const QUALITY_REVIEW: Gate<QualityToReview, QualityAnswer> = Gate::new("quality_review");

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
