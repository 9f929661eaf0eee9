//! The coordinator: sequences the agents through the stages, owns the gates between them,
//! routes the Producer's revision requests to the Craftsman, persists the state at every
//! stage boundary, and assembles the result. It makes no LLM call of its own.

use agent_llm::ModelRouter;
use agent_runtime::bus::{AgentBus, InMemoryBus, MessageStream, MessageType, OutgoingMessage};
use agent_runtime::{
    AgentConfig, AgentIdentity, AgentLoop, AgentResult, CostLimits, CostMeter, GateRequest,
    Session, StopCause,
};
use agent_server::SessionHandle;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

use crate::craftsman::{self, CRAFTSMAN};
use crate::docx::{base64, build_docx, verify_docx};
use crate::intake::read_resume;
use crate::llm::Llm;
use crate::producer::{self, tools::assemble_markdown, tools::ats_check};
use crate::strategist;
use crate::types::{
    DOMAIN, ResumeEvent, ResumeState, Stage, StartRequest, TokenUsage, UsageTotals,
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

/// The answer to `architect_review` and `quality_review`.
#[derive(Debug, Deserialize)]
pub struct Approval {
    /// Whether the user approves.
    pub approved: bool,
    /// What to change, when not approved (`architect_review`).
    #[serde(default)]
    pub feedback: Option<String>,
}

/// Runs (or, after a restart, resumes) one session of the pipeline.
pub async fn run(llm: Llm, router: ModelRouter, handle: SessionHandle) -> Result<Value, String> {
    let request: StartRequest = serde_json::from_value(handle.request().clone())
        .map_err(|e| format!("the start request is invalid: {e}"))?;
    let state = match handle.saved_state() {
        Some(saved) => serde_json::from_value(saved)
            .map_err(|e| format!("the saved state cannot be read: {e}"))?,
        None => ResumeState::new(&request),
    };
    let base_usage = state.usage;
    let meter = CostMeter::new(CostLimits::default());
    let session = Session::new(handle.id(), state)
        .with_gates(handle.gates().clone())
        .with_events(handle.clone())
        .with_bus(Arc::new(InMemoryBus::new()))
        .with_router(router.clone())
        .with_meter(meter.clone())
        .with_cancellation(handle.cancellation());
    let coordinator = Coordinator {
        llm,
        router,
        handle,
        session,
        meter,
        base_usage,
    };
    coordinator.run().await
}

struct Coordinator {
    llm: Llm,
    router: ModelRouter,
    handle: SessionHandle,
    session: Session<ResumeState, ResumeEvent>,
    meter: CostMeter,
    base_usage: UsageTotals,
}

impl Coordinator {
    fn emit(&self, event: ResumeEvent) {
        self.handle.emit(&event);
    }

    fn state(&self) -> ResumeState {
        self.session.state().snapshot()
    }

    fn totals(&self) -> UsageTotals {
        let spent = self.meter.snapshot();
        UsageTotals {
            input_tokens: self.base_usage.input_tokens + spent.usage.input_tokens,
            output_tokens: self.base_usage.output_tokens + spent.usage.output_tokens,
            cost_usd: self.base_usage.cost_usd + spent.usd,
        }
    }

    async fn save(&self) -> Result<(), String> {
        let totals = self.totals();
        let state = self.session.state().update(|s| {
            s.usage = totals;
            s.clone()
        });
        let value = serde_json::to_value(&state).map_err(|e| e.to_string())?;
        self.handle
            .save_state(state.stage.as_str(), &value)
            .await
            .map_err(|e| format!("cannot save the session: {e}"))
    }

    async fn run(&self) -> Result<Value, String> {
        let start = self.state().stage;
        if self.handle.saved_state().is_some() {
            tracing::info!(stage = start.as_str(), "resuming the pipeline");
        }
        for stage in Stage::ALL.into_iter().filter(|s| *s >= start) {
            self.emit(ResumeEvent::StageStart {
                stage,
                message: stage_message(stage).to_owned(),
            });
            let outcome = match stage {
                Stage::Complete => self.complete().await.map(Some),
                other => self.run_stage(other).await.map(|()| None),
            };
            let result = match outcome {
                Ok(result) => result,
                Err(error) => {
                    tracing::warn!(stage = stage.as_str(), %error, "pipeline failed");
                    self.emit(ResumeEvent::PipelineError {
                        stage,
                        error: error.clone(),
                    });
                    return Err(error);
                }
            };
            self.emit(ResumeEvent::StageComplete { stage });
            if let Some((event, result)) = result {
                self.emit(event);
                return Ok(result);
            }
            self.session.state().update(|s| s.stage = stage.next());
            self.save().await?;
        }
        Err("the pipeline ended without a result".to_owned())
    }

    async fn run_stage(&self, stage: Stage) -> Result<(), String> {
        let flags = self.state().flags;
        match stage {
            Stage::Intake => self.intake(),
            Stage::Research => {
                self.strategist(StrategistPhase::Research).await?;
                self.require(|s| s.jd_analysis.is_some(), "analyze the job description")
            }
            Stage::Interview if flags.intake_quiz => {
                self.strategist(StrategistPhase::Interview).await
            }
            Stage::Interview => Ok(()),
            Stage::GapAnalysis => {
                self.strategist(StrategistPhase::GapAnalysis).await?;
                self.require(|s| s.gap_analysis.is_some(), "analyze the gaps")
            }
            Stage::Blueprint => self.blueprint().await,
            Stage::Writing => self.writing().await,
            Stage::Production => self.production().await,
            Stage::Complete => Ok(()),
        }
    }

    fn require(&self, done: impl FnOnce(&ResumeState) -> bool, what: &str) -> Result<(), String> {
        if self.session.state().read(done) {
            Ok(())
        } else {
            Err(format!("the agent finished without being able to {what}"))
        }
    }

    fn intake(&self) -> Result<(), String> {
        let text = self.session.state().read(|s| s.resume_text.clone());
        let intake = read_resume(&text).map_err(|e| e.to_string())?;
        self.session.state().update(|s| {
            s.candidate_name = intake.candidate_name.clone();
            s.evidence = intake.evidence.clone();
        });
        self.emit(ResumeEvent::IntakeComplete {
            candidate_name: intake.candidate_name,
            evidence: intake.evidence,
        });
        Ok(())
    }

    async fn run_agent(
        &self,
        config: AgentConfig<ResumeState, ResumeEvent>,
        message: String,
    ) -> Result<AgentResult, String> {
        let name = config.identity.name.clone();
        let agent = AgentLoop::new(config, self.llm.clone());
        let ctx = self.session.context(agent.identity().clone());
        let result = agent.run(&ctx, message).await;
        tracing::info!(agent = %name, rounds = result.rounds_used, stop = ?result.stop, "agent finished");
        match &result.stop {
            StopCause::Completed | StopCause::MaxRounds => Ok(result),
            StopCause::ModelError(error) => Err(format!("the {name} failed: {error}")),
            StopCause::Timeout(after) => Err(format!("the {name} timed out after {after:?}")),
            StopCause::Cancelled => Err(format!("the {name} was cancelled")),
            StopCause::LimitExceeded(limit) => Err(format!("the {name} stopped: {limit}")),
        }
    }

    async fn strategist(&self, phase: StrategistPhase) -> Result<(), String> {
        let message = build_strategist_message(&self.state(), phase);
        let config = strategist::strategist(&self.llm, &self.router);
        self.run_agent(config, message).await.map(|_| ())
    }

    async fn gate<T: serde::de::DeserializeOwned>(
        &self,
        name: &str,
        payload: Value,
    ) -> Result<T, String> {
        let ctx = self
            .session
            .context(AgentIdentity::new(COORDINATOR, DOMAIN));
        ctx.wait_for_user(GateRequest::new(name).with_payload(payload))
            .await
            .map_err(|e| e.to_string())
    }

    async fn blueprint(&self) -> Result<(), String> {
        self.strategist(StrategistPhase::Blueprint).await?;
        self.require(|s| s.blueprint.is_some(), "design the blueprint")?;
        let state = self.state();
        let blueprint = state.blueprint.clone().unwrap_or_default();
        self.emit(ResumeEvent::BlueprintReady {
            blueprint: blueprint.clone(),
        });
        if state.fast_draft || !state.flags.blueprint_approval {
            return Ok(());
        }
        let review: Approval = self
            .gate("architect_review", json!({ "blueprint": blueprint }))
            .await?;
        if review.approved {
            return Ok(());
        }
        let feedback = review
            .feedback
            .filter(|f| !f.trim().is_empty())
            .unwrap_or_else(|| "The user did not approve the blueprint.".to_owned());
        self.session.state().update(|s| {
            s.blueprint_feedback = Some(feedback);
            s.blueprint = None;
        });
        self.strategist(StrategistPhase::BlueprintRevision).await?;
        self.require(|s| s.blueprint.is_some(), "redesign the blueprint")?;
        self.emit(ResumeEvent::BlueprintReady {
            blueprint: self.state().blueprint.unwrap_or_default(),
        });
        Ok(())
    }

    async fn writing(&self) -> Result<(), String> {
        let message = build_craftsman_message(&self.state());
        let config = craftsman::craftsman(&self.llm, &self.router);
        self.run_agent(config, message).await?;
        let state = self.state();
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

    async fn production(&self) -> Result<(), String> {
        let bus = self
            .session
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
            self.session.clone(),
            self.llm.clone(),
        ));
        let config = producer::producer(&self.llm, &self.router, Arc::clone(&bus));
        let result = self
            .run_agent(config, build_producer_message(&self.state()))
            .await;
        if let Err(error) = bus.unsubscribe(DOMAIN, CRAFTSMAN).await {
            tracing::warn!(%error, "cannot unsubscribe the craftsman");
        }
        answering.abort();
        result?;

        let report = self.session.state().update(|s| {
            let report = ats_check(s);
            s.ats_score = Some(report.ats_score);
            s.keyword_coverage = Some(report.keyword_coverage);
            s.final_markdown = Some(assemble_markdown(s));
            report
        });
        let findings = self.state().findings;
        self.emit(ResumeEvent::QualityReport {
            ats_score: report.ats_score,
            keyword_coverage: report.keyword_coverage,
            findings: findings.clone(),
        });
        if self.state().flags.quality_review_approval {
            let answer: Approval = self
                .gate(
                    "quality_review",
                    json!({"ats_score": report.ats_score, "findings": findings}),
                )
                .await?;
            if !answer.approved {
                return Err("the user did not approve the final review".to_owned());
            }
        }
        Ok(())
    }

    async fn complete(&self) -> Result<(ResumeEvent, Value), String> {
        let state = self.state();
        let markdown = assemble_markdown(&state);
        let bytes = build_docx(&markdown).map_err(|e| e.to_string())?;
        let mut expected = vec![state.candidate_name.clone()];
        for section in &state.sections {
            expected.push(section.name.clone());
            expected.extend(section.bullets.iter().map(|b| b.text.clone()));
        }
        verify_docx(&bytes, &expected).map_err(|e| e.to_string())?;
        let totals = self.totals();
        let event = ResumeEvent::PipelineComplete {
            resume_markdown: markdown,
            docx_base64: base64(&bytes),
            docx_bytes: bytes.len(),
            usage: TokenUsage {
                input_tokens: totals.input_tokens,
                output_tokens: totals.output_tokens,
            },
            cost_usd: totals.cost_usd,
        };
        let mut result = serde_json::to_value(&event).map_err(|e| e.to_string())?;
        if let Some(fields) = result.as_object_mut() {
            fields.remove("type");
        }
        self.save().await?;
        Ok((event, result))
    }
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
