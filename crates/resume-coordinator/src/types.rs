//! The product's types: the start request, the shared state and the events
//! (`docs/resume-api.md`).

use agent_llm::capacity::CallEvent;
use agent_runtime::{AgentContext, AgentIdentity, ModelProgress};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The context every resume tool runs with.
pub type Ctx = AgentContext<ResumeState, ResumeEvent>;

/// A tool of one of the product's agents.
pub type ResumeTool = std::sync::Arc<dyn agent_runtime::AgentTool<ResumeState, ResumeEvent>>;

/// The agents' domain on the bus.
pub const DOMAIN: &str = "resume";

pub use crate::flags::Flags;

/// The body of `POST /api/resume/start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StartRequest {
    /// The candidate's resume as text.
    pub resume_text: String,
    /// The job description.
    pub job_description: String,
    /// The company, when the client knows it.
    #[serde(default)]
    pub company: Option<String>,
    /// Skips the blueprint approval gate.
    #[serde(default, deserialize_with = "null_as_default")]
    pub fast_draft: bool,
    /// Optional interaction points.
    #[serde(default, deserialize_with = "null_as_default")]
    pub flags: Flags,
    /// The user, as the deployment identifies them (1 to 128 letters, digits and
    /// `._@+-`): a returning user's earlier evidence is used, and this session's is kept
    /// for their next one. The server trusts it: put it behind the application's sign-in.
    #[serde(default)]
    pub user_id: Option<String>,
}

/// `null` reads as the default, as an absent field does.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Why a resume session failed: the stage's error, as `pipeline_error` reported it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct PipelineError(pub String);

/// The result of a complete session: the `pipeline_complete` event without its type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResumeOutput {
    /// The resume in Markdown.
    pub resume_markdown: String,
    /// The DOCX, base64.
    pub docx_base64: String,
    /// The DOCX's size in bytes.
    pub docx_bytes: usize,
    /// Tokens used.
    pub usage: TokenUsage,
    /// Blended cost in USD.
    pub cost_usd: f64,
}

/// The pipeline's stages, in order.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The resume is read into evidence (no model).
    #[default]
    Intake,
    /// The job description is analyzed and the company researched.
    Research,
    /// The batch questionnaire.
    Interview,
    /// Strengths, gaps, and questions about the gaps.
    GapAnalysis,
    /// The plan of the resume, and its approval.
    Blueprint,
    /// The Craftsman writes the sections.
    Writing,
    /// The Producer assembles and reviews, with revisions.
    Production,
    /// The DOCX and the final payload.
    Complete,
}

impl Stage {
    /// Every stage, in order.
    pub const ALL: [Stage; 8] = [
        Stage::Intake,
        Stage::Research,
        Stage::Interview,
        Stage::GapAnalysis,
        Stage::Blueprint,
        Stage::Writing,
        Stage::Production,
        Stage::Complete,
    ];

    /// The snake_case name used in events and the status route.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Intake => "intake",
            Stage::Research => "research",
            Stage::Interview => "interview",
            Stage::GapAnalysis => "gap_analysis",
            Stage::Blueprint => "blueprint",
            Stage::Writing => "writing",
            Stage::Production => "production",
            Stage::Complete => "complete",
        }
    }

    /// The stage after this one (`Complete` stays `Complete`).
    pub fn next(self) -> Stage {
        let position = Stage::ALL.iter().position(|s| *s == self).unwrap_or(0);
        Stage::ALL
            .get(position + 1)
            .copied()
            .unwrap_or(Stage::Complete)
    }
}

/// One numbered piece of evidence: `R<n>` a resume line, `A<n>` an interview answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    /// `R3`, `A1`, ...
    pub id: String,
    /// The text.
    pub text: String,
}

/// What the job description asks for.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct JdAnalysis {
    /// The role's title.
    pub role: String,
    /// The hiring company.
    pub company: String,
    /// Requirements the candidate must meet.
    pub must_haves: Vec<String>,
    /// Keywords an ATS will look for.
    pub keywords: Vec<String>,
}

/// A question of a questionnaire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionItem {
    /// The id the answer is keyed by.
    pub id: String,
    /// The question.
    pub question: String,
}

/// An interview answer, kept as evidence `A<n>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterviewAnswer {
    /// The evidence id (`A1`, ...).
    pub evidence_id: String,
    /// The question asked.
    pub question: String,
    /// The candidate's answer.
    pub answer: String,
}

/// Requirements met and missing.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct GapAnalysis {
    /// Requirements the evidence supports.
    pub strengths: Vec<String>,
    /// Requirements the evidence does not support.
    pub gaps: Vec<String>,
}

/// One planned section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SectionPlan {
    /// The heading (`Summary`, `Experience`, ...).
    pub name: String,
    /// What the section must achieve.
    pub goal: String,
}

/// The plan of the resume.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Blueprint {
    /// How the candidate is positioned for the role.
    pub positioning: String,
    /// The sections, in order.
    pub sections: Vec<SectionPlan>,
}

/// A bullet and the evidence it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Bullet {
    /// The bullet's text.
    pub text: String,
    /// Evidence ids (`R3`, `A1`).
    pub evidence: Vec<String>,
}

/// A written section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    /// The heading, as in the blueprint.
    pub name: String,
    /// The bullets.
    pub bullets: Vec<Bullet>,
    /// The section's Markdown body (the bullets, or the user's own text).
    pub markdown: String,
    /// Whether the section is final.
    pub approved: bool,
    /// Whether the text is the user's own edit (used as is).
    pub user_edited: bool,
}

/// A problem the Producer's review found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// The section it is in.
    pub section: String,
    /// The claim in question.
    pub claim: String,
    /// What is wrong with it.
    pub problem: String,
}

/// One revision of a section, asked by the user or the Producer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RevisionEntry {
    /// The section.
    pub section: String,
    /// Who asked: `user` or `producer`.
    pub by: String,
    /// Why.
    pub reason: String,
    /// The bus request id, for Producer requests.
    #[serde(default)]
    pub request_id: Option<String>,
}

/// Tokens and cost so far.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct UsageTotals {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Blended cost in USD (models without a price count 0).
    pub cost_usd: f64,
}

/// The state the agents share: the state of the session's graph, checkpointed after every
/// stage and after every round of an agent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResumeState {
    /// The resume as given.
    pub resume_text: String,
    /// The job description as given.
    pub job_description: String,
    /// The company as given.
    pub company: Option<String>,
    /// Fast draft: no blueprint approval.
    pub fast_draft: bool,
    /// The interaction flags.
    pub flags: Flags,
    /// The stage to run next (the current one while it runs).
    pub stage: Stage,
    /// The candidate's name (the resume's first line).
    pub candidate_name: String,
    /// The evidence library: `R*`, then `M*` (a returning user's earlier evidence), then
    /// `A*` items.
    pub evidence: Vec<Evidence>,
    /// A returning user's earlier evidence (`M*`), given at the start and added to the
    /// library at intake.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_evidence: Vec<Evidence>,
    /// The job description's analysis.
    pub jd_analysis: Option<JdAnalysis>,
    /// Company research notes.
    pub research_notes: Vec<String>,
    /// Questionnaires asked so far.
    pub questionnaires_asked: u32,
    /// Positioning questions asked so far.
    pub positioning_asked: u32,
    /// The interview answers.
    pub interview: Vec<InterviewAnswer>,
    /// Strengths and gaps.
    pub gap_analysis: Option<GapAnalysis>,
    /// The plan.
    pub blueprint: Option<Blueprint>,
    /// The user's feedback on the blueprint, when they asked for a redesign.
    pub blueprint_feedback: Option<String>,
    /// The written sections, in blueprint order once written.
    pub sections: Vec<Section>,
    /// Findings of the Producer's review.
    pub findings: Vec<Finding>,
    /// Coherence notes of the Producer.
    pub coherence_notes: Vec<String>,
    /// Every revision made.
    pub revisions: Vec<RevisionEntry>,
    /// The revisions the Producer asked for, by section (lowercase name): counted when
    /// asked, so that a section is revised for the Producer at most
    /// [`MAX_PRODUCER_REVISIONS`](crate::producer::tools::MAX_PRODUCER_REVISIONS) times.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub producer_revisions: std::collections::BTreeMap<String, u32>,
    /// The ATS score (0-100) of the last check.
    pub ats_score: Option<u32>,
    /// The share of JD keywords covered (0.0-1.0) at the last check.
    pub keyword_coverage: Option<f64>,
    /// The final Markdown.
    pub final_markdown: Option<String>,
    /// Tokens and cost of the session's model calls, at the end of the last stage.
    pub usage: UsageTotals,
    /// The session's result, once the last stage produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ResumeOutput>,
}

impl ResumeState {
    /// A fresh state for a start request.
    pub fn new(request: &StartRequest) -> Self {
        ResumeState {
            resume_text: request.resume_text.clone(),
            job_description: request.job_description.clone(),
            company: request.company.clone(),
            fast_draft: request.fast_draft,
            flags: request.flags,
            ..ResumeState::default()
        }
    }

    /// Whether an evidence id is in the library.
    pub fn has_evidence(&self, id: &str) -> bool {
        self.evidence.iter().any(|e| e.id == id)
    }

    /// The section with this name (case-insensitive).
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
    }

    /// The planned section names, in order.
    pub fn planned_sections(&self) -> Vec<String> {
        self.blueprint
            .as_ref()
            .map(|b| b.sections.iter().map(|s| s.name.clone()).collect())
            .unwrap_or_default()
    }
}

/// Token counts in `pipeline_complete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct TokenUsage {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
}

/// What a model call is doing, in a `progress` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ModelActivity {
    /// Waiting for the model server (its slots are taken).
    Queued,
    /// Sent.
    Calling,
    /// Still running.
    Running,
    /// Answered.
    Finished,
    /// Failed.
    Failed,
}

impl ResumeEvent {
    /// The `progress` event of a model call, if it is one worth a line.
    pub fn progress(agent: &AgentIdentity, progress: &ModelProgress) -> Option<ResumeEvent> {
        let (activity, elapsed) = match &progress.call {
            CallEvent::Queued => (ModelActivity::Queued, Duration::ZERO),
            CallEvent::Dequeued { .. } => return None,
            CallEvent::Started => (ModelActivity::Calling, Duration::ZERO),
            CallEvent::Running { elapsed } => (ModelActivity::Running, *elapsed),
            CallEvent::Finished { elapsed, .. } => (ModelActivity::Finished, *elapsed),
            CallEvent::Failed { elapsed, .. } => (ModelActivity::Failed, *elapsed),
        };
        Some(ResumeEvent::Progress {
            agent: agent.name.clone(),
            activity,
            seconds: elapsed.as_secs(),
            model_calls: progress.calls_so_far.unwrap_or_default(),
            tokens: progress.tokens_so_far.unwrap_or_default(),
        })
    }
}

/// The product events of the contract (`data.type`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResumeEvent {
    /// A stage begins.
    StageStart {
        /// The stage.
        stage: Stage,
        /// What it does.
        message: String,
    },
    /// A stage ended.
    StageComplete {
        /// The stage.
        stage: Stage,
    },
    /// The resume was read into evidence.
    IntakeComplete {
        /// The candidate's name.
        candidate_name: String,
        /// The `R*` items, then a returning user's `M*` items.
        evidence: Vec<Evidence>,
    },
    /// The job description was analyzed.
    JdAnalysis {
        /// The role.
        role: String,
        /// The company.
        company: String,
        /// Requirements.
        must_haves: Vec<String>,
        /// ATS keywords.
        keywords: Vec<String>,
    },
    /// Company research notes.
    Research {
        /// The notes.
        notes: Vec<String>,
    },
    /// One question; a `gate_open` follows.
    Question {
        /// The gate name (`positioning_q_1`).
        gate: String,
        /// The question.
        question: String,
        /// Why it is asked.
        why: String,
    },
    /// A batch of questions; a `gate_open` follows.
    Questionnaire {
        /// The gate name (`questionnaire_1`).
        gate: String,
        /// The questions.
        questions: Vec<QuestionItem>,
    },
    /// Requirements met and missing.
    GapAnalysis {
        /// Met.
        strengths: Vec<String>,
        /// Missing.
        gaps: Vec<String>,
    },
    /// The plan of the resume.
    BlueprintReady {
        /// The plan.
        blueprint: Blueprint,
    },
    /// A section is written.
    SectionDraft {
        /// The section.
        section: String,
        /// Its Markdown body.
        markdown: String,
        /// Its bullets.
        bullets: Vec<Bullet>,
    },
    /// A section is final.
    SectionApproved {
        /// The section.
        section: String,
    },
    /// The Producer's review found a problem.
    ReviewFinding {
        /// The section.
        section: String,
        /// The claim.
        claim: String,
        /// The problem.
        problem: String,
    },
    /// The Producer asked the Craftsman to revise, over the bus.
    RevisionRequested {
        /// The section.
        section: String,
        /// Why.
        reason: String,
        /// The request's id.
        request_id: String,
    },
    /// The revised section came back.
    RevisionComplete {
        /// The section.
        section: String,
        /// The request's id.
        request_id: String,
    },
    /// The final checks.
    QualityReport {
        /// 0-100.
        ats_score: u32,
        /// Share of JD keywords covered, 0.0-1.0.
        keyword_coverage: f64,
        /// Every finding of the review.
        findings: Vec<Finding>,
    },
    /// The resume is done.
    PipelineComplete {
        /// The resume as Markdown.
        resume_markdown: String,
        /// The DOCX, base64.
        docx_base64: String,
        /// The DOCX's size in bytes.
        docx_bytes: usize,
        /// Tokens used.
        usage: TokenUsage,
        /// Blended cost in USD.
        cost_usd: f64,
    },
    /// An agent's model call while it works: queued for the model server, sent, still
    /// running (every 15 s), finished or failed, with the session's totals so far.
    Progress {
        /// The agent (`strategist`, `craftsman`, `producer`).
        agent: String,
        /// What the call is doing.
        activity: ModelActivity,
        /// Seconds since the call was sent (0 while it queues).
        seconds: u64,
        /// Model calls of the session so far.
        model_calls: u64,
        /// Tokens of the session so far.
        tokens: u64,
    },
    /// The run failed; `session_failed` follows.
    PipelineError {
        /// The stage it failed in.
        stage: Stage,
        /// Why.
        error: String,
    },
}
