//! The coordinator: sequences the agents through the stages, owns the gates between them,
//! routes the Producer's revision requests to the Craftsman, persists the state at every
//! stage boundary, and assembles the result. It makes no LLM call of its own.

use agent_llm::ModelRouter;
use agent_runtime::graph::{
    CompiledGraph, GraphError, NodeContext, NodeError, RunOptions, RunStatus, StateGraph, node_fn,
};
use agent_runtime::{
    AgentConfig, AgentIdentity, AgentLoop, AgentResult, CostMeter, Gate, StopCause,
};
use agent_server::SessionHandle;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::task::AbortOnDropHandle;

use crate::craftsman;
use crate::gates::{ARCHITECT_REVIEW, BlueprintToReview, RESEARCH_VALIDATION, ResearchToValidate};
use crate::intake::read_resume;
use crate::llm::Llm;
use crate::master::MasterResumes;
use crate::strategist;
use crate::types::{
    DOMAIN, Evidence, PipelineError, ResumeEvent, ResumeOutput, ResumeState, Stage, StartRequest,
    UsageTotals,
};

/// The coordinator's name in gate ids (`coordinator:architect_review:1`).
pub const COORDINATOR: &str = "coordinator";

pub use crate::messages::{build_craftsman_message, build_strategist_message};
pub use crate::strategist::StrategistPhase;

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
pub(crate) async fn run(
    stages: Stages,
    meter: CostMeter,
    request: StartRequest,
    masters: Option<MasterResumes>,
) -> Result<ResumeOutput, PipelineError> {
    let handle = stages.handle.clone();
    let user = request.user_id.as_deref().zip(masters.as_ref());
    let mut state = ResumeState::new(&request);
    if let Some((user, masters)) = user {
        state.earlier_evidence = earlier_evidence(masters, user, &request.resume_text).await;
    }
    let session = handle
        .session(state)
        .with_model(Arc::clone(&stages.llm))
        .with_router(stages.router.clone())
        .with_meter(meter)
        .with_progress(ResumeEvent::progress);
    let graph = pipeline(stages).map_err(|e| PipelineError(e.to_string()))?;
    // A gate that times out ends the whole run, not only the step that asked (an agent
    // would otherwise go on, or ask again): the session ends `expired`.
    let expiry = handle.gates().expiry();
    let cancel = handle.cancellation();
    let abandoned = AbortOnDropHandle::new(tokio::spawn(async move {
        expiry.cancelled().await;
        tracing::info!("a gate expired unanswered: stopping the session");
        cancel.cancel();
    }));
    let result = graph
        .run_durable(&session, handle.checkpoints(), RunOptions::new())
        .await
        .map_err(|e| PipelineError(format!("the session's checkpoints: {e}")));
    abandoned.abort();
    if let Some(meter) = session.meter() {
        tracing::info!(
            session = handle.id(),
            cost = %meter.snapshot().per_unit("resume session", 1),
            "resume session spent"
        );
    }
    let result = result?;
    if !handle.gates().expired().is_empty() {
        return Err(PipelineError(format!(
            "nobody answered {} in time; the session expired",
            handle.gates().expired().join(", ")
        )));
    }
    match result.status {
        RunStatus::Success => {
            if let Some((user, masters)) = user {
                // The resume is made: a store that fails now costs the next session its
                // head start, not this one its result.
                match masters.record(user, handle.id(), &result.state).await {
                    Ok(master) => tracing::info!(
                        items = master.evidence.len(),
                        sessions = master.sessions.len(),
                        "the user's master resume is updated"
                    ),
                    Err(error) => {
                        tracing::warn!(%error, "the user's master resume could not be updated")
                    }
                }
            }
            result
                .state
                .result
                .ok_or_else(|| PipelineError("the pipeline ended without a result".to_owned()))
        }
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

/// A returning user's earlier evidence for a session on `resume_text` (`M*` items,
/// without what the resume says already); none for a new user, or when the store fails
/// (the session goes on without it, and says so in the log).
async fn earlier_evidence(masters: &MasterResumes, user: &str, resume_text: &str) -> Vec<Evidence> {
    match masters.load(user).await {
        Ok(Some(master)) => {
            let current = read_resume(resume_text)
                .map(|intake| intake.evidence)
                .unwrap_or_default();
            let earlier = master.session_evidence(&current);
            tracing::info!(
                items = earlier.len(),
                "a returning user: earlier evidence given"
            );
            earlier
        }
        Ok(None) => Vec::new(),
        Err(error) => {
            tracing::warn!(%error, "the user's master resume could not be read; going on without it");
            Vec::new()
        }
    }
}

pub(crate) type Ctx = NodeContext<ResumeState, ResumeEvent>;

/// What every stage works with.
#[derive(Clone)]
pub(crate) struct Stages {
    pub(crate) llm: Llm,
    pub(crate) router: ModelRouter,
    pub(crate) handle: SessionHandle<ResumeEvent>,
    /// How long one agent invocation may work, when not the runtime's default.
    pub(crate) agent_timeout: Option<Duration>,
}

impl Stages {
    /// One stage as a node: its opening and closing events, its work, and on failure a
    /// `pipeline_error` event (not when its model could not be reached: the session is
    /// parked, not failed).
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
            // Its model could not be reached: the server parks the session and runs it
            // again once the model answers; nothing failed that the user must see.
            Err(error) if ctx.session().model_outage().is_some() => {
                tracing::warn!(stage = stage.as_str(), %error, "stage stopped: the model could not be reached");
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
                if flags.research_validation {
                    validate_research(ctx).await?;
                }
                Ok(())
            }
            Stage::Interview if flags.intake_quiz => {
                self.strategist(ctx, StrategistPhase::Interview).await
            }
            Stage::Interview => Ok(()),
            Stage::GapAnalysis => self.strategist(ctx, StrategistPhase::GapAnalysis).await,
            Stage::Blueprint => self.blueprint(ctx).await,
            Stage::Writing => self.writing(ctx).await,
            Stage::Production => self.production(ctx).await,
            Stage::Complete => Ok(()),
        }
    }

    pub(crate) async fn run_agent(
        &self,
        ctx: &Ctx,
        mut config: AgentConfig<ResumeState, ResumeEvent>,
        message: String,
    ) -> Result<AgentResult, String> {
        let name = config.identity.name.clone();
        if let Some(timeout) = self.agent_timeout {
            config.overall_timeout = timeout;
        }
        let agent = AgentLoop::new(config, self.llm.clone());
        let result = ctx.run_agent(&agent, message).await;
        tracing::info!(agent = %name, rounds = result.rounds_used, stop = ?result.stop, "agent finished");
        match &result.stop {
            StopCause::Completed | StopCause::MaxRounds | StopCause::Ended(_) => Ok(result),
            StopCause::ModelError(error) => Err(format!("the {name} failed: {error}")),
            StopCause::Timeout(after) => Err(format!("the {name} timed out after {after:?}")),
            StopCause::Cancelled => Err(format!("the {name} was cancelled")),
            StopCause::LimitExceeded(limit) => Err(format!("the {name} stopped: {limit}")),
            StopCause::CutOff { max_tokens } => Err(format!(
                "the {name}'s answers kept running past the output limit ({max_tokens:?} tokens)"
            )),
            StopCause::NoAnswer => Err(format!(
                "the {name} gave no answer: asked for one in words, it kept writing tool calls"
            )),
            StopCause::Checkpoint(reason) => {
                Err(format!("the {name} could not be saved: {reason}"))
            }
        }
    }

    /// Runs the Strategist for `phase` until the phase has its result. A Strategist that
    /// ends the phase without it is reminded once, naming the tool to call; one that
    /// still has not done it, or ran out of rounds, fails the stage saying which.
    async fn strategist(&self, ctx: &Ctx, phase: StrategistPhase) -> Result<(), String> {
        let opening = ctx.read(|s| build_strategist_message(s, phase));
        let mut ended = self.strategist_once(ctx, phase, opening.clone()).await?;
        if !ctx.read(|s| phase.is_done(s)) && !ended.out_of_rounds {
            tracing::warn!(
                phase = phase.as_str(),
                "the strategist ended the phase without its result; reminding it once"
            );
            let reminder = format!(
                "{opening}\nYou ended this phase without doing its work. Call {} now.\n",
                phase.required_tool()
            );
            ended = self.strategist_once(ctx, phase, reminder).await?;
            ended.reminded = true;
        }
        require(ctx, &ended, |s| phase.is_done(s), phase.result())
    }

    /// One invocation of the Strategist for `phase`; how it ended, when it did not fail.
    async fn strategist_once(
        &self,
        ctx: &Ctx,
        phase: StrategistPhase,
        message: String,
    ) -> Result<Ended, String> {
        let config = strategist::strategist(&self.router, phase);
        let result = self.run_agent(ctx, config, message).await?;
        Ok(Ended {
            agent: strategist::STRATEGIST,
            phase: phase.as_str(),
            rounds: result.rounds_used,
            out_of_rounds: result.stop == StopCause::MaxRounds,
            reminded: false,
        })
    }

    async fn blueprint(&self, ctx: &Ctx) -> Result<(), String> {
        self.strategist(ctx, StrategistPhase::Blueprint).await?;
        let state = ctx.state();
        let blueprint = state.blueprint.clone().unwrap_or_default();
        ctx.emit(ResumeEvent::BlueprintReady {
            blueprint: blueprint.clone(),
        });
        if state.fast_draft || !state.flags.blueprint_approval {
            return Ok(());
        }
        let review = gate(ctx, &ARCHITECT_REVIEW, &BlueprintToReview { blueprint }).await?;
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
        ctx.emit(ResumeEvent::BlueprintReady {
            blueprint: ctx.read(|s| s.blueprint.clone()).unwrap_or_default(),
        });
        Ok(())
    }

    async fn writing(&self, ctx: &Ctx) -> Result<(), String> {
        let message = ctx.read(build_craftsman_message);
        let config = craftsman::craftsman(&self.router);
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
}

/// Tokens and cost of the session so far (the meter counts across restarts).
pub(crate) fn totals(ctx: &Ctx) -> UsageTotals {
    let Some(spent) = ctx.session().meter().map(|meter| meter.snapshot()) else {
        return UsageTotals::default();
    };
    UsageTotals {
        input_tokens: spent.usage.input_tokens,
        output_tokens: spent.usage.output_tokens,
        cost_usd: spent.usd,
    }
}

/// How an agent's invocation for a phase ended (when it did not fail outright).
struct Ended {
    agent: &'static str,
    phase: &'static str,
    rounds: u32,
    /// It used every round it had (`StopCause::MaxRounds`).
    out_of_rounds: bool,
    /// It was reminded of the phase's work before this invocation.
    reminded: bool,
}

/// Fails the stage unless the phase produced what it must: reaching the round limit
/// without it is a failure too, and the reason says which.
fn require(
    ctx: &Ctx,
    ended: &Ended,
    done: impl FnOnce(&ResumeState) -> bool,
    what: &str,
) -> Result<(), String> {
    if ctx.read(done) {
        return Ok(());
    }
    let Ended {
        agent,
        phase,
        rounds,
        out_of_rounds,
        reminded,
    } = ended;
    let reminded = if *reminded {
        ", even when reminded"
    } else {
        ""
    };
    Err(if *out_of_rounds {
        format!(
            "the {agent} used all {rounds} rounds of its {phase} phase without being able to {what}{reminded}"
        )
    } else {
        format!(
            "the {agent} ended its {phase} phase after {rounds} round(s) without being able to {what}{reminded}"
        )
    })
}

fn intake(ctx: &Ctx) -> Result<(), String> {
    let text = ctx.read(|s| s.resume_text.clone());
    let intake = read_resume(&text).map_err(|e| e.to_string())?;
    ctx.update(|s| {
        s.candidate_name = intake.candidate_name.clone();
        s.evidence = intake.evidence.clone();
        s.evidence.extend(s.earlier_evidence.iter().cloned());
    });
    ctx.emit(ResumeEvent::IntakeComplete {
        candidate_name: intake.candidate_name,
        evidence: ctx.read(|s| s.evidence.clone()),
    });
    Ok(())
}

/// Waits at one of the coordinator's gates.
pub(crate) async fn gate<P: serde::Serialize, A: serde::de::DeserializeOwned>(
    ctx: &Ctx,
    gate: &Gate<P, A>,
    payload: &P,
) -> Result<A, String> {
    ctx.agent_context(AgentIdentity::new(COORDINATOR, DOMAIN))
        .ask(gate, payload)
        .await
        .map_err(|e| e.to_string())
}

/// The `research_validation` gate: the user sees the job analysis and the research
/// notes; a correction becomes a research note the later phases read.
async fn validate_research(ctx: &Ctx) -> Result<(), String> {
    let (analysis, notes) = ctx.read(|s| (s.jd_analysis.clone(), s.research_notes.clone()));
    let research = ResearchToValidate {
        jd_analysis: analysis,
        research_notes: notes,
    };
    let answer = gate(ctx, &RESEARCH_VALIDATION, &research).await?;
    let correction = answer.feedback.filter(|f| !f.trim().is_empty());
    match (answer.approved, correction) {
        (_, Some(correction)) => ctx.update(|s| {
            s.research_notes
                .push(format!("The candidate corrects the research: {correction}"))
        }),
        (false, None) => ctx.update(|s| {
            s.research_notes.push(
                "The candidate did not confirm the research; rely on the job description."
                    .to_owned(),
            )
        }),
        (true, None) => {}
    }
    Ok(())
}
