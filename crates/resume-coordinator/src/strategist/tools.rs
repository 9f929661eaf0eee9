//! The Strategist's tools.

use agent_llm::ModelTier;
use agent_runtime::{ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

use super::prompts::{BLUEPRINT_PROMPT, GAP_ANALYSIS_PROMPT, JD_ANALYSIS_PROMPT, RESEARCH_PROMPT};
use crate::gates::{POSITIONING, PositioningQuestion, QUESTIONNAIRE, Questionnaire};
use crate::llm::{ask, evidence_lines};
use crate::types::{
    Blueprint, Ctx, Evidence, GapAnalysis, InterviewAnswer, JdAnalysis, QuestionItem, ResumeEvent,
    ResumeTool,
};

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoInput {}

/// Company research notes (structured output of `research_company`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CompanyResearch {
    /// Short notes.
    pub notes: Vec<String>,
}

/// Arguments of `interview_candidate_batch`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BatchInput {
    /// 2-4 questions.
    pub questions: Vec<String>,
}

/// Arguments of `interview_candidate`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct QuestionInput {
    /// The question.
    pub question: String,
    /// Why it matters for the role (shown to the candidate).
    pub why: String,
}

/// Arguments of `design_blueprint`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BlueprintInput {
    /// Notes for the design (for example the user's feedback).
    #[serde(default)]
    pub notes: Option<String>,
}

/// Questionnaires a session asks at most.
pub const MAX_QUESTIONNAIRES: u32 = 1;

/// Questions about the gaps a session asks at most.
pub const MAX_POSITIONING_QUESTIONS: u32 = 3;

/// Questions in one questionnaire at most.
pub const MAX_BATCH_QUESTIONS: usize = 4;

fn job_context(ctx: &Ctx) -> String {
    ctx.read_state(|s| {
        format!(
            "Company (as given): {}\n\nJob description:\n{}",
            s.company.as_deref().unwrap_or("(not given)"),
            s.job_description
        )
    })
}

/// Adds interview answers as evidence `A<n>` and returns their ids.
fn add_answers(ctx: &Ctx, answers: Vec<(String, String)>) -> Vec<String> {
    ctx.update_state(|s| {
        let mut ids = Vec::new();
        for (question, answer) in answers {
            if answer.trim().is_empty() {
                continue;
            }
            let id = format!("A{}", s.interview.len() + 1);
            s.evidence.push(Evidence {
                id: id.clone(),
                text: answer.trim().to_owned(),
            });
            s.interview.push(InterviewAnswer {
                evidence_id: id.clone(),
                question,
                answer: answer.trim().to_owned(),
            });
            ids.push(id);
        }
        ids
    })
}

/// `analyze_jd`: role, company, must-haves and keywords (LIGHT); emits `jd_analysis`.
pub fn analyze_jd() -> ResumeTool {
    Arc::new(tool(
        "analyze_jd",
        "Analyze the job description: role, company, must-have requirements, ATS keywords.",
        move |_: NoInput, ctx: Ctx| async move {
            let mut analysis: JdAnalysis = ask(
                &ctx,
                ModelTier::Light,
                JD_ANALYSIS_PROMPT,
                job_context(&ctx),
            )
            .await?;
            if let Some(company) = ctx.read_state(|s| s.company.clone())
                && analysis.company.trim().is_empty()
            {
                analysis.company = company;
            }
            ctx.update_state(|s| s.jd_analysis = Some(analysis.clone()));
            ctx.scratchpad().set("jd_analysis", json!(analysis));
            ctx.emit(ResumeEvent::JdAnalysis {
                role: analysis.role.clone(),
                company: analysis.company.clone(),
                must_haves: analysis.must_haves.clone(),
                keywords: analysis.keywords.clone(),
            });
            Ok::<_, ToolError>(analysis)
        },
    ))
}

/// `research_company`: notes on the company (LIGHT); emits `research`.
pub fn research_company() -> ResumeTool {
    Arc::new(tool(
        "research_company",
        "Research the hiring company from the job description: business, stage, values.",
        move |_: NoInput, ctx: Ctx| async move {
            let research: CompanyResearch =
                ask(&ctx, ModelTier::Light, RESEARCH_PROMPT, job_context(&ctx)).await?;
            ctx.update_state(|s| s.research_notes = research.notes.clone());
            ctx.emit(ResumeEvent::Research {
                notes: research.notes.clone(),
            });
            Ok::<_, ToolError>(json!({ "notes": research.notes }))
        },
    ))
}

/// `interview_candidate_batch`: a questionnaire at gate `questionnaire_{n}` (only with the
/// `intake_quiz` flag); the answers become evidence `A*`.
pub fn interview_candidate_batch() -> ResumeTool {
    Arc::new(tool(
        "interview_candidate_batch",
        "Ask the candidate a batch of questions at once; the answers become evidence A*.",
        |input: BatchInput, ctx: Ctx| async move {
            if !ctx.read_state(|s| s.flags.intake_quiz) {
                return Ok(json!({"skipped": "the intake questionnaire is turned off"}));
            }
            if input.questions.is_empty() {
                return Err(ToolError::failed("give at least one question"));
            }
            if input.questions.len() > MAX_BATCH_QUESTIONS {
                return Err(ToolError::failed(format!(
                    "ask at most {MAX_BATCH_QUESTIONS} questions; keep the most important"
                )));
            }
            // Counted in code, not left to the prompt: one questionnaire per session.
            let n = ctx.update_state(|s| {
                (s.questionnaires_asked < MAX_QUESTIONNAIRES).then(|| {
                    s.questionnaires_asked += 1;
                    s.questionnaires_asked
                })
            });
            let Some(n) = n else {
                return Err(ToolError::failed(format!(
                    "the candidate already answered the questionnaire (at most {MAX_QUESTIONNAIRES}); finish the phase"
                )));
            };
            let gate = format!("questionnaire_{n}");
            let questions: Vec<QuestionItem> = input
                .questions
                .iter()
                .enumerate()
                .map(|(i, q)| QuestionItem {
                    id: format!("q{}", i + 1),
                    question: q.clone(),
                })
                .collect();
            ctx.emit(ResumeEvent::Questionnaire {
                gate: gate.clone(),
                questions: questions.clone(),
            });
            let shown = Questionnaire {
                questions: questions.clone(),
            };
            let request = QUESTIONNAIRE.request_for(n, &shown)?;
            debug_assert_eq!(request.name, gate);
            let answer = ctx.ask_with(&QUESTIONNAIRE, request).await?;
            let pairs = questions
                .iter()
                .map(|q| {
                    let text = answer.answers.get(&q.id).cloned().unwrap_or_default();
                    (q.question.clone(), text)
                })
                .collect();
            let ids = add_answers(&ctx, pairs);
            Ok(json!({ "evidence_added": ids }))
        },
    ))
}

/// `analyze_gaps`: strengths and gaps against the must-haves (MID); emits `gap_analysis`.
pub fn analyze_gaps() -> ResumeTool {
    Arc::new(tool(
        "analyze_gaps",
        "Compare the evidence library with the job's must-haves: strengths and gaps.",
        move |_: NoInput, ctx: Ctx| async move {
            let analysis = ctx.read_state(|s| s.jd_analysis.clone()).ok_or_else(|| {
                ToolError::failed("analyze the job description first (analyze_jd)")
            })?;
            let prompt = format!(
                "Role: {}\nMust-haves:\n- {}\n\nEvidence:\n{}",
                analysis.role,
                analysis.must_haves.join("\n- "),
                evidence_lines(&ctx)
            );
            let gaps: GapAnalysis = ask(&ctx, ModelTier::Mid, GAP_ANALYSIS_PROMPT, prompt).await?;
            ctx.update_state(|s| s.gap_analysis = Some(gaps.clone()));
            ctx.scratchpad().set("gap_analysis", json!(gaps));
            ctx.emit(ResumeEvent::GapAnalysis {
                strengths: gaps.strengths.clone(),
                gaps: gaps.gaps.clone(),
            });
            Ok::<_, ToolError>(gaps)
        },
    ))
}

/// `interview_candidate`: one question at gate `positioning_q_{n}` (only with the
/// `gap_analysis_quiz` flag); the answer becomes evidence `A*`.
pub fn interview_candidate() -> ResumeTool {
    Arc::new(tool(
        "interview_candidate",
        "Ask the candidate one question about a gap; the answer becomes evidence A*.",
        |input: QuestionInput, ctx: Ctx| async move {
            if !ctx.read_state(|s| s.flags.gap_analysis_quiz) {
                return Ok(json!({"skipped": "gap questions are turned off"}));
            }
            // Counted in code, not left to the prompt.
            let n = ctx.update_state(|s| {
                (s.positioning_asked < MAX_POSITIONING_QUESTIONS).then(|| {
                    s.positioning_asked += 1;
                    s.positioning_asked
                })
            });
            let Some(n) = n else {
                return Err(ToolError::failed(format!(
                    "{MAX_POSITIONING_QUESTIONS} gap questions were asked, the most allowed; finish the phase"
                )));
            };
            let gate = format!("positioning_q_{n}");
            ctx.emit(ResumeEvent::Question {
                gate: gate.clone(),
                question: input.question.clone(),
                why: input.why.clone(),
            });
            let shown = PositioningQuestion {
                question: input.question.clone(),
                why: input.why,
            };
            let request = POSITIONING.request_for(n, &shown)?;
            let answer = ctx.ask_with(&POSITIONING, request).await?;
            let ids = add_answers(&ctx, vec![(input.question, answer.answer)]);
            Ok::<Value, ToolError>(json!({ "evidence_added": ids }))
        },
    ))
}

/// `design_blueprint`: positioning and sections (PRIMARY), kept in state and scratchpad.
pub fn design_blueprint() -> ResumeTool {
    Arc::new(tool(
        "design_blueprint",
        "Design the resume's blueprint: positioning and the sections with their goals.",
        move |input: BlueprintInput, ctx: Ctx| async move {
            let context = ctx.read_state(|s| {
                let gaps = s.gap_analysis.clone().unwrap_or_default();
                let redesign = match &s.blueprint_feedback {
                    Some(feedback) => {
                        format!("Redesign: yes\nUser feedback on the last blueprint: {feedback}\n")
                    }
                    None => String::new(),
                };
                format!(
                    "{redesign}Role: {}\nStrengths:\n- {}\nGaps:\n- {}\nResearch:\n- {}\nNotes: {}",
                    s.jd_analysis
                        .as_ref()
                        .map(|a| a.role.as_str())
                        .unwrap_or(""),
                    gaps.strengths.join("\n- "),
                    gaps.gaps.join("\n- "),
                    s.research_notes.join("\n- "),
                    input.notes.as_deref().unwrap_or("(none)"),
                )
            });
            let prompt = format!("{context}\n\nEvidence:\n{}", evidence_lines(&ctx));
            let blueprint: Blueprint =
                ask(&ctx, ModelTier::Primary, BLUEPRINT_PROMPT, prompt).await?;
            if blueprint.sections.is_empty() {
                return Err(ToolError::failed("the blueprint has no sections"));
            }
            ctx.update_state(|s| s.blueprint = Some(blueprint.clone()));
            ctx.scratchpad().set("blueprint", json!(blueprint));
            Ok::<_, ToolError>(blueprint)
        },
    ))
}
