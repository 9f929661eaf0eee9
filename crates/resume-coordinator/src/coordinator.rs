//! The coordinator: sequences the agents through the stages, owns the gates between them,
//! routes the Producer's revision requests to the Craftsman, persists the state at every
//! stage boundary, and assembles the result. It makes no LLM call of its own.

use agent_llm::ModelRouter;
use agent_runtime::bus::{AgentBus, InMemoryBus, MessageStream, MessageType, OutgoingMessage};
use agent_runtime::checkpoint::CheckpointError;
use agent_runtime::graph::{
    CompiledGraph, GraphError, NodeContext, NodeError, RunOptions, RunStatus, StateGraph, node_fn,
};
use agent_runtime::{
    AgentConfig, AgentIdentity, AgentLoop, AgentResult, CostMeter, Gate, Session, StopCause,
};
use agent_server::SessionHandle;
use futures::StreamExt;
use serde_json::{Value, json};
use std::sync::Arc;

use crate::craftsman::{self, CRAFTSMAN};
use crate::docx::{base64, build_docx, verify_docx};
use crate::gates::{ARCHITECT_REVIEW, QUALITY_REVIEW};
use crate::intake::read_resume;
use crate::llm::Llm;
use crate::producer::{self, tools::assemble_markdown, tools::ats_check};
use crate::strategist;
use crate::types::{
    DOMAIN, PipelineError, ResumeEvent, ResumeOutput, ResumeState, Stage, StartRequest, TokenUsage,
    UsageTotals,
};

/// The coordinator's name in gate ids (`coordinator:architect_review:1`).
pub const COORDINATOR: &str = "coordinator";

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
}

fn on_off(flag: bool) -> &'static str {
    if flag { "on" } else { "off" }
}

fn evidence_block(state: &ResumeState) -> String {
    state
        .evidence
        .iter()
        .map(|e| format!("{}: {}", e.id, e.text))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The Strategist's opening message for a phase: resume evidence, job, company,
/// preferences, and what earlier phases found.
pub fn build_strategist_message(state: &ResumeState, phase: StrategistPhase) -> String {
    let mut out = format!(
        "Phase: {}\nCandidate: {}\nCompany: {}\nPreferences: fast draft {}, questionnaire {}, gap questions {}\n\nJob description:\n{}\n\nEvidence library:\n{}\n",
        phase.as_str(),
        state.candidate_name,
        state.company.as_deref().unwrap_or("(not given)"),
        on_off(state.fast_draft),
        on_off(state.flags.intake_quiz),
        on_off(state.flags.gap_analysis_quiz),
        state.job_description.trim(),
        evidence_block(state),
    );
    if let Some(jd) = &state.jd_analysis {
        out.push_str(&format!(
            "\nJob analysis: {} at {}; must-haves: {}\n",
            jd.role,
            jd.company,
            jd.must_haves.join("; ")
        ));
    }
    if let Some(gaps) = &state.gap_analysis {
        out.push_str(&format!("Gaps: {}\n", gaps.gaps.join("; ")));
    }
    if phase == StrategistPhase::BlueprintRevision {
        out.push_str(&format!(
            "\nThe user asked for changes to the blueprint: {}\nCall design_blueprint with this feedback.\n",
            state.blueprint_feedback.as_deref().unwrap_or("")
        ));
    }
    out
}

/// The Craftsman's opening message: blueprint, evidence, interview transcript, gaps.
pub fn build_craftsman_message(state: &ResumeState) -> String {
    let blueprint = serde_json::to_string_pretty(&state.blueprint).unwrap_or_default();
    let interview = state
        .interview
        .iter()
        .map(|a| format!("{} Q: {}\n   A: {}", a.evidence_id, a.question, a.answer))
        .collect::<Vec<_>>()
        .join("\n");
    let gaps = state.gap_analysis.clone().unwrap_or_default();
    format!(
        "Phase: writing\nWrite these sections in order: {}\n\nBlueprint:\n{blueprint}\n\nEvidence library:\n{}\n\nInterview (the candidate's voice):\n{}\n\nGaps (do not claim them): {}\n",
        state.planned_sections().join(", "),
        evidence_block(state),
        if interview.is_empty() {
            "(none)".to_owned()
        } else {
            interview
        },
        gaps.gaps.join("; "),
    )
}

/// The Producer's opening message: sections, blueprint, job analysis, evidence.
pub fn build_producer_message(state: &ResumeState) -> String {
    let jd = state.jd_analysis.clone().unwrap_or_default();
    format!(
        "Phase: production\nRole: {} at {}\nKeywords: {}\nPositioning: {}\n\nResume:\n{}\nEvidence library:\n{}\n",
        jd.role,
        jd.company,
        jd.keywords.join(", "),
        state
            .blueprint
            .as_ref()
            .map(|b| b.positioning.as_str())
            .unwrap_or(""),
        assemble_markdown(state),
        evidence_block(state),
    )
}

fn stage_message(stage: Stage) -> &'static str {
    match stage {
        Stage::Intake => "Reading the resume into evidence",
        Stage::Research => "Analyzing the job and the company",
        Stage::Interview => "Questions for the candidate",
        Stage::GapAnalysis => "Finding strengths and gaps",
        Stage::Blueprint => "Designing the resume",
        Stage::Writing => "Writing the sections",
        Stage::Production => "Checking and reviewing the resume",
        Stage::Complete => "Producing the documents",
    }
}

pub use crate::gates::Approval;

/// The pipeline's nodes, one per stage, in order.
fn pipeline(stages: Stages) -> Result<CompiledGraph<ResumeState, ResumeEvent>, GraphError> {
    let nodes = Stage::ALL.map(|stage| {
        let stages = stages.clone();
        let node = node_fn(move |ctx: &Ctx| {
            let stages = stages.clone();
            Box::pin(async move { stages.node(ctx, stage).await })
        });
        (stage.as_str(), node)
    });
    StateGraph::sequence(nodes).compile()
}

/// Runs one session of the pipeline, or, after a restart, resumes it at its last
/// checkpoint (a stage boundary, or the last completed round of the agent that was
/// running): no model call that completed is paid again and no event is emitted twice.
pub async fn run(
    llm: Llm,
    router: ModelRouter,
    meter: CostMeter,
    handle: SessionHandle,
    request: StartRequest,
) -> Result<ResumeOutput, PipelineError> {
    let session = Session::new(handle.id(), ResumeState::new(&request))
        .with_gates(handle.gates().clone())
        .with_event_sink(handle.event_sink())
        .with_bus(Arc::new(InMemoryBus::new()))
        .with_router(router.clone())
        .with_meter(meter)
        .with_cancellation(handle.cancellation());
    let graph = pipeline(Stages {
        llm,
        router,
        handle: handle.clone(),
    })
    .map_err(|e| PipelineError(e.to_string()))?;
    let store = handle.checkpoints();
    let unreadable = |e: CheckpointError| PipelineError(format!("the session's checkpoints: {e}"));
    let result = if store.exists(handle.id()).await.map_err(unreadable)? {
        tracing::info!("resuming the pipeline from its last checkpoint");
        graph
            .resume_in(&session, handle.id(), store, RunOptions::new())
            .await
    } else {
        let options = RunOptions::new().with_run_id(handle.id());
        graph.run_checkpointed_in(&session, store, options).await
    }
    .map_err(unreadable)?;
    match result.status {
        RunStatus::Success => result
            .state
            .result
            .ok_or_else(|| PipelineError("the pipeline ended without a result".to_owned())),
        _ => Err(PipelineError(
            result
                .errors
                .last()
                .map(|failure| failure.message.clone())
                .or(result.reason)
                .unwrap_or_else(|| "the pipeline stopped".to_owned()),
        )),
    }
}

type Ctx = NodeContext<ResumeState, ResumeEvent>;

/// What every stage works with.
#[derive(Clone)]
struct Stages {
    llm: Llm,
    router: ModelRouter,
    handle: SessionHandle,
}

impl Stages {
    /// One stage as a node: its opening and closing events, its work, and on failure a
    /// `pipeline_error` event.
    async fn node(&self, ctx: &Ctx, stage: Stage) -> Result<(), NodeError> {
        self.handle.set_stage(stage.as_str());
        ctx.emit(ResumeEvent::StageStart {
            stage,
            message: stage_message(stage).to_owned(),
        });
        let outcome = match stage {
            Stage::Complete => self.complete(ctx).await.map(Some),
            other => self.run_stage(ctx, other).await.map(|()| None),
        };
        let finished = match outcome {
            Ok(finished) => finished,
            // Stopped by its session's cancellation (the user's, or the server parking it
            // at shutdown to resume later): not a failure of the pipeline.
            Err(error) if ctx.session().cancellation().is_cancelled() => {
                tracing::info!(stage = stage.as_str(), %error, "stage stopped by cancellation");
                return Err(NodeError::fatal(error));
            }
            Err(error) => {
                tracing::warn!(stage = stage.as_str(), %error, "pipeline failed");
                ctx.emit(ResumeEvent::PipelineError {
                    stage,
                    error: error.clone(),
                });
                return Err(NodeError::fatal(error));
            }
        };
        ctx.emit(ResumeEvent::StageComplete { stage });
        let totals = totals(ctx);
        ctx.update(|s| {
            s.usage = totals;
            s.stage = stage.next();
        });
        if let Some((event, result)) = finished {
            ctx.emit(event);
            ctx.update(|s| s.result = Some(result));
        }
        Ok(())
    }

    async fn run_stage(&self, ctx: &Ctx, stage: Stage) -> Result<(), String> {
        let flags = ctx.read(|s| s.flags);
        match stage {
            Stage::Intake => intake(ctx),
            Stage::Research => {
                self.strategist(ctx, StrategistPhase::Research).await?;
                require(
                    ctx,
                    |s| s.jd_analysis.is_some(),
                    "analyze the job description",
                )
            }
            Stage::Interview if flags.intake_quiz => {
                self.strategist(ctx, StrategistPhase::Interview).await
            }
            Stage::Interview => Ok(()),
            Stage::GapAnalysis => {
                self.strategist(ctx, StrategistPhase::GapAnalysis).await?;
                require(ctx, |s| s.gap_analysis.is_some(), "analyze the gaps")
            }
            Stage::Blueprint => self.blueprint(ctx).await,
            Stage::Writing => self.writing(ctx).await,
            Stage::Production => self.production(ctx).await,
            Stage::Complete => Ok(()),
        }
    }

    async fn run_agent(
        &self,
        ctx: &Ctx,
        config: AgentConfig<ResumeState, ResumeEvent>,
        message: String,
    ) -> Result<AgentResult, String> {
        let name = config.identity.name.clone();
        let agent = AgentLoop::new(config, self.llm.clone());
        let result = ctx.run_agent(&agent, message).await;
        tracing::info!(agent = %name, rounds = result.rounds_used, stop = ?result.stop, "agent finished");
        match &result.stop {
            StopCause::Completed | StopCause::MaxRounds => Ok(result),
            StopCause::ModelError(error) => Err(format!("the {name} failed: {error}")),
            StopCause::Timeout(after) => Err(format!("the {name} timed out after {after:?}")),
            StopCause::Cancelled => Err(format!("the {name} was cancelled")),
            StopCause::LimitExceeded(limit) => Err(format!("the {name} stopped: {limit}")),
            StopCause::CutOff { max_tokens } => Err(format!(
                "the {name}'s answers kept running past the output limit ({max_tokens:?} tokens)"
            )),
            StopCause::Checkpoint(reason) => {
                Err(format!("the {name} could not be saved: {reason}"))
            }
        }
    }

    async fn strategist(&self, ctx: &Ctx, phase: StrategistPhase) -> Result<(), String> {
        let message = ctx.read(|s| build_strategist_message(s, phase));
        let config = strategist::strategist(&self.llm, &self.router);
        self.run_agent(ctx, config, message).await.map(|_| ())
    }

    async fn blueprint(&self, ctx: &Ctx) -> Result<(), String> {
        self.strategist(ctx, StrategistPhase::Blueprint).await?;
        require(ctx, |s| s.blueprint.is_some(), "design the blueprint")?;
        let state = ctx.state();
        let blueprint = state.blueprint.clone().unwrap_or_default();
        ctx.emit(ResumeEvent::BlueprintReady {
            blueprint: blueprint.clone(),
        });
        if state.fast_draft || !state.flags.blueprint_approval {
            return Ok(());
        }
        let review = gate(ctx, &ARCHITECT_REVIEW, json!({ "blueprint": blueprint })).await?;
        if review.approved {
            return Ok(());
        }
        let feedback = review
            .feedback
            .filter(|f| !f.trim().is_empty())
            .unwrap_or_else(|| "The user did not approve the blueprint.".to_owned());
        ctx.update(|s| {
            s.blueprint_feedback = Some(feedback);
            s.blueprint = None;
        });
        self.strategist(ctx, StrategistPhase::BlueprintRevision)
            .await?;
        require(ctx, |s| s.blueprint.is_some(), "redesign the blueprint")?;
        ctx.emit(ResumeEvent::BlueprintReady {
            blueprint: ctx.read(|s| s.blueprint.clone()).unwrap_or_default(),
        });
        Ok(())
    }

    async fn writing(&self, ctx: &Ctx) -> Result<(), String> {
        let message = ctx.read(build_craftsman_message);
        let config = craftsman::craftsman(&self.llm, &self.router);
        self.run_agent(ctx, config, message).await?;
        let state = ctx.state();
        let unfinished: Vec<String> = state
            .planned_sections()
            .into_iter()
            .filter(|name| !state.section(name).is_some_and(|s| s.approved))
            .collect();
        if unfinished.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the craftsman finished without approved sections: {}",
                unfinished.join(", ")
            ))
        }
    }

    async fn production(&self, ctx: &Ctx) -> Result<(), String> {
        let bus = ctx
            .session()
            .bus()
            .cloned()
            .ok_or_else(|| "the session has no bus".to_owned())?;
        let inbox = bus
            .subscribe(DOMAIN, CRAFTSMAN)
            .await
            .map_err(|e| e.to_string())?;
        let answering = tokio::spawn(answer_revisions(
            inbox,
            Arc::clone(&bus),
            ctx.session().clone(),
            self.llm.clone(),
        ));
        let config = producer::producer(&self.llm, &self.router, Arc::clone(&bus));
        let message = ctx.read(build_producer_message);
        let result = self.run_agent(ctx, config, message).await;
        if let Err(error) = bus.unsubscribe(DOMAIN, CRAFTSMAN).await {
            tracing::warn!(%error, "cannot unsubscribe the craftsman");
        }
        answering.abort();
        result?;

        let report = ctx.update(|s| {
            let report = ats_check(s);
            s.ats_score = Some(report.ats_score);
            s.keyword_coverage = Some(report.keyword_coverage);
            s.final_markdown = Some(assemble_markdown(s));
            report
        });
        let findings = ctx.read(|s| s.findings.clone());
        ctx.emit(ResumeEvent::QualityReport {
            ats_score: report.ats_score,
            keyword_coverage: report.keyword_coverage,
            findings: findings.clone(),
        });
        if ctx.read(|s| s.flags.quality_review_approval) {
            let answer = gate(
                ctx,
                &QUALITY_REVIEW,
                json!({"ats_score": report.ats_score, "findings": findings}),
            )
            .await?;
            if !answer.approved {
                return Err("the user did not approve the final review".to_owned());
            }
        }
        Ok(())
    }

    async fn complete(&self, ctx: &Ctx) -> Result<(ResumeEvent, ResumeOutput), String> {
        let state = ctx.state();
        let markdown = assemble_markdown(&state);
        let bytes = build_docx(&markdown).map_err(|e| e.to_string())?;
        let mut expected = vec![state.candidate_name.clone()];
        for section in &state.sections {
            expected.push(section.name.clone());
            expected.extend(section.bullets.iter().map(|b| b.text.clone()));
        }
        verify_docx(&bytes, &expected).map_err(|e| e.to_string())?;
        let totals = totals(ctx);
        let output = ResumeOutput {
            resume_markdown: markdown,
            docx_base64: base64(&bytes),
            docx_bytes: bytes.len(),
            usage: TokenUsage {
                input_tokens: totals.input_tokens,
                output_tokens: totals.output_tokens,
            },
            cost_usd: totals.cost_usd,
        };
        let event = ResumeEvent::PipelineComplete {
            resume_markdown: output.resume_markdown.clone(),
            docx_base64: output.docx_base64.clone(),
            docx_bytes: output.docx_bytes,
            usage: output.usage,
            cost_usd: output.cost_usd,
        };
        Ok((event, output))
    }
}

/// Tokens and cost of the session so far (the meter counts across restarts).
fn totals(ctx: &Ctx) -> UsageTotals {
    let Some(spent) = ctx.session().meter().map(|meter| meter.snapshot()) else {
        return UsageTotals::default();
    };
    UsageTotals {
        input_tokens: spent.usage.input_tokens,
        output_tokens: spent.usage.output_tokens,
        cost_usd: spent.usd,
    }
}

fn require(ctx: &Ctx, done: impl FnOnce(&ResumeState) -> bool, what: &str) -> Result<(), String> {
    if ctx.read(done) {
        Ok(())
    } else {
        Err(format!("the agent finished without being able to {what}"))
    }
}

fn intake(ctx: &Ctx) -> Result<(), String> {
    let text = ctx.read(|s| s.resume_text.clone());
    let intake = read_resume(&text).map_err(|e| e.to_string())?;
    ctx.update(|s| {
        s.candidate_name = intake.candidate_name.clone();
        s.evidence = intake.evidence.clone();
    });
    ctx.emit(ResumeEvent::IntakeComplete {
        candidate_name: intake.candidate_name,
        evidence: intake.evidence,
    });
    Ok(())
}

/// Waits at one of the coordinator's gates.
async fn gate<A: serde::de::DeserializeOwned>(
    ctx: &Ctx,
    gate: &Gate<A>,
    payload: Value,
) -> Result<A, String> {
    ctx.agent_context(AgentIdentity::new(COORDINATOR, DOMAIN))
        .ask(gate, payload)
        .await
        .map_err(|e| e.to_string())
}

/// Answers the Producer's revision requests as the Craftsman: revises the section and
/// sends the correlated response (`{request_id, section}` or `{request_id, error}`).
async fn answer_revisions(
    mut inbox: MessageStream,
    bus: Arc<dyn AgentBus>,
    session: Session<ResumeState, ResumeEvent>,
    llm: Llm,
) {
    while let Some(message) = inbox.next().await {
        if message.kind != MessageType::Request {
            tracing::debug!(kind = ?message.kind, "the craftsman ignores a message");
            continue;
        }
        let field = |name: &str| {
            message.payload[name]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        let (section, reason, request_id) =
            (field("section"), field("reason"), field("request_id"));
        tracing::info!(%section, %request_id, "revision requested by the producer");
        let ctx = session.context(AgentIdentity::new(CRAFTSMAN, DOMAIN));
        let payload = match craftsman::tools::revise(
            &ctx,
            &llm,
            &section,
            &reason,
            "producer",
            Some(request_id.clone()),
        )
        .await
        {
            Ok(revised) => json!({"request_id": request_id, "section": revised}),
            Err(error) => json!({"request_id": request_id, "error": error.to_string()}),
        };
        if let Err(error) = bus
            .send(OutgoingMessage::response_to(&message, payload))
            .await
        {
            tracing::warn!(%error, "cannot answer the revision request");
        }
    }
}
