//! The last two stages: the Producer's review with its revisions over the bus, the
//! second approval of every revised section, the `quality_review` gate (whose rejection
//! sends the sections it names back to revision), and the documents.

use agent_runtime::bus::{AgentBus, BusError, MessageStream, MessageType, OutgoingMessage};
use agent_runtime::{AgentIdentity, Session};
use futures::StreamExt;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::task::AbortOnDropHandle;
use tracing::Instrument as _;

use crate::coordinator::{Ctx, Stages, gate, totals};
use crate::craftsman::{self, CRAFTSMAN, review::reapprove};
use crate::document;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::docx::check_docx;
use crate::gates::{QUALITY_REVIEW, QualityAnswer, QualityToReview};
use crate::messages::build_producer_message;
use crate::producer::{self, tools::ats_check};
use crate::types::{DOMAIN, ResumeEvent, ResumeOutput, ResumeState, TokenUsage};
use job_capabilities::documents::build_docx;

/// How many times the user may send the resume back from `quality_review`; one more
/// rejection fails the session.
pub const MAX_QUALITY_ROUNDS: usize = 3;

impl Stages {
    pub(crate) async fn production(&self, ctx: &Ctx) -> Result<(), String> {
        self.producer_review(ctx).await?;
        // The sections the Producer had revised are shown to the user again.
        let craftsman = ctx.agent_context(AgentIdentity::new(CRAFTSMAN, DOMAIN));
        for name in ctx.read(unapproved) {
            tracing::info!(section = %name, "a revised section goes back to the user");
            reapprove(&craftsman, &name)
                .await
                .map_err(|e| e.to_string())?;
        }
        let mut rounds = 0;
        loop {
            let report = ctx.update(|s| {
                let report = ats_check(s);
                s.ats_score = Some(report.ats_score);
                s.keyword_coverage = Some(report.keyword_coverage);
                s.final_markdown = Some(document::resume_markdown(s));
                report
            });
            let (findings, markdown) = ctx.read(|s| {
                (
                    s.findings.clone(),
                    s.final_markdown.clone().unwrap_or_default(),
                )
            });
            ctx.emit(ResumeEvent::QualityReport {
                ats_score: report.ats_score,
                keyword_coverage: report.keyword_coverage,
                findings: findings.clone(),
            });
            if !ctx.read(|s| s.flags.quality_review_approval) {
                return Ok(());
            }
            let shown = QualityToReview {
                ats_score: report.ats_score,
                keyword_coverage: report.keyword_coverage,
                findings,
                resume_markdown: markdown,
            };
            let answer: QualityAnswer = gate(ctx, &QUALITY_REVIEW, &shown).await?;
            if answer.approved {
                return Ok(());
            }
            let Some(feedback) = answer.feedback.clone().filter(|f| !f.trim().is_empty()) else {
                return Err("the user did not approve the final review".to_owned());
            };
            rounds += 1;
            if rounds > MAX_QUALITY_ROUNDS {
                return Err(format!(
                    "the user did not approve the final review after {MAX_QUALITY_ROUNDS} rounds of revisions"
                ));
            }
            let sections = ctx.read(|s| sections_to_revise(s, &answer, &feedback));
            if sections.is_empty() {
                return Err(format!(
                    "the user did not approve the final review ({feedback}) and named no section the Craftsman can revise"
                ));
            }
            for name in sections {
                tracing::info!(section = %name, "sent back from the quality review");
                craftsman::tools::revise(&craftsman, &name, &feedback, "user", None)
                    .await
                    .map_err(|e| e.to_string())?;
                reapprove(&craftsman, &name)
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
    }

    /// The Producer's run, with the Craftsman answering its revision requests.
    async fn producer_review(&self, ctx: &Ctx) -> Result<(), String> {
        let bus = ctx
            .session()
            .bus()
            .cloned()
            .ok_or_else(|| "the session has no bus".to_owned())?;
        let inbox = subscribe_craftsman(bus.as_ref())
            .await
            .map_err(|e| e.to_string())?;
        // The Craftsman's revisions run on their own task; their model calls are heard
        // as the Craftsman's (progress events, queueing not counted as work). The task
        // ends with this step, also when the step is dropped (the run parks or is
        // cancelled): it holds the Craftsman's subscription, which a resumed run takes.
        let craftsman = ctx.agent_context(AgentIdentity::new(CRAFTSMAN, DOMAIN));
        // In the step's span, so the revisions' model calls are traced under it.
        let answering = AbortOnDropHandle::new(tokio::spawn(
            craftsman
                .hearing_calls(answer_revisions(
                    inbox,
                    Arc::clone(&bus),
                    ctx.session().clone(),
                ))
                .in_current_span(),
        ));
        let config = producer::producer(&self.router, Arc::clone(&bus));
        let message = ctx.read(build_producer_message);
        let result = self.run_agent(ctx, config, message).await;
        if let Err(error) = bus.unsubscribe(DOMAIN, CRAFTSMAN).await {
            tracing::warn!(%error, "cannot unsubscribe the craftsman");
        }
        answering.abort();
        result.map(|_| ())
    }

    pub(crate) async fn complete(&self, ctx: &Ctx) -> Result<(ResumeEvent, ResumeOutput), String> {
        let state = ctx.state();
        // The candidate's resume with the approved sections in place; the DOCX is read
        // back against it (text, order and styles) before it is offered.
        let paragraphs = document::paragraphs(&state);
        let markdown = document::markdown_of(&paragraphs);
        // Writing and reading back a DOCX is CPU work: a blocking thread does it.
        let written = markdown.clone();
        let bytes = tokio::task::spawn_blocking(move || {
            let bytes = build_docx(&written).map_err(|e| e.to_string())?;
            check_docx(&bytes, &paragraphs).map_err(|e| e.to_string())?;
            Ok::<_, String>(bytes)
        })
        .await
        .map_err(|e| format!("writing the DOCX stopped: {e}"))??;
        let totals = totals(ctx);
        let output = ResumeOutput {
            resume_markdown: markdown,
            docx_base64: BASE64.encode(&bytes),
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

/// The planned sections written but not approved (revised by the Producer), in order.
fn unapproved(state: &ResumeState) -> Vec<String> {
    state
        .planned_sections()
        .into_iter()
        .filter(|name| state.section(name).is_some_and(|s| !s.approved))
        .collect()
}

/// The sections a rejected `quality_review` sends back: those the answer lists, else
/// those its feedback names, else every section the Craftsman wrote (the user's own
/// edits are theirs to change).
pub fn sections_to_revise(
    state: &ResumeState,
    answer: &QualityAnswer,
    feedback: &str,
) -> Vec<String> {
    let names: Vec<String> = state.sections.iter().map(|s| s.name.clone()).collect();
    if let Some(listed) = &answer.sections {
        let chosen: Vec<String> = names
            .iter()
            .filter(|name| listed.iter().any(|l| l.trim().eq_ignore_ascii_case(name)))
            .cloned()
            .collect();
        if !chosen.is_empty() {
            return chosen;
        }
    }
    let lower = feedback.to_lowercase();
    let named: Vec<String> = names
        .iter()
        .filter(|name| lower.contains(&name.to_lowercase()))
        .cloned()
        .collect();
    if !named.is_empty() {
        return named;
    }
    state
        .sections
        .iter()
        .filter(|s| !s.user_edited)
        .map(|s| s.name.clone())
        .collect()
}

/// Answers the Producer's revision requests as the Craftsman: revises the section and
/// sends the correlated response (`{request_id, section}` or `{request_id, error}`). The
/// revised section waits for the user's approval (after the Producer's run).
async fn answer_revisions(
    mut inbox: MessageStream,
    bus: Arc<dyn AgentBus>,
    session: Session<ResumeState, ResumeEvent>,
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
            &section,
            &reason,
            producer::PRODUCER,
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

/// How long the Craftsman's subscription waits for one still held: a run resumed soon
/// after it parked (a backend outage) may find the subscription of the run it resumes
/// not yet let go, its task still ending or its lease (30 s on NATS) not yet lapsed.
const HELD_SUBSCRIPTION_WAIT: Duration = Duration::from_secs(40);

/// Subscribes the Craftsman to the session's bus, waiting up to
/// [`HELD_SUBSCRIPTION_WAIT`] while the subscription is still held.
async fn subscribe_craftsman(bus: &dyn AgentBus) -> Result<MessageStream, BusError> {
    let deadline = tokio::time::Instant::now() + HELD_SUBSCRIPTION_WAIT;
    loop {
        match bus.subscribe(DOMAIN, CRAFTSMAN).await {
            Err(BusError::AlreadySubscribed { .. }) if tokio::time::Instant::now() < deadline => {
                tracing::debug!("the craftsman's subscription is still held; waiting");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            outcome => return outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn a_resumed_run_waits_for_the_craftsman_subscription_it_finds_held() {
        use agent_runtime::bus::{AgentBus, BusError, InMemoryBus};
        let bus = InMemoryBus::new();
        let held = bus
            .subscribe(crate::types::DOMAIN, crate::craftsman::CRAFTSMAN)
            .await
            .unwrap();
        assert!(matches!(
            bus.subscribe(crate::types::DOMAIN, crate::craftsman::CRAFTSMAN)
                .await,
            Err(BusError::AlreadySubscribed { .. })
        ));
        // The parked run's subscription is let go a moment later.
        let letting_go = tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            drop(held);
        });
        assert!(super::subscribe_craftsman(&bus).await.is_ok());
        letting_go.await.unwrap();
    }

    #[test]
    fn the_sections_to_revise_are_those_named_or_else_all_the_written_ones() {
        use crate::gates::QualityAnswer;
        use crate::production::sections_to_revise;
        use crate::types::*;
        let section = |name: &str, user_edited| Section {
            name: name.into(),
            bullets: vec![],
            markdown: "x".into(),
            approved: true,
            user_edited,
        };
        let state = ResumeState {
            sections: vec![
                section("Summary", false),
                section("Experience", false),
                section("Skills", true),
            ],
            ..ResumeState::default()
        };
        let answer: QualityAnswer =
            serde_json::from_value(serde_json::json!({"approved": false})).unwrap();
        assert_eq!(
            sections_to_revise(&state, &answer, "The experience bullets are too long"),
            ["Experience"]
        );
        assert_eq!(
            sections_to_revise(&state, &answer, "Too long overall"),
            ["Summary", "Experience"]
        );
        let listed: QualityAnswer =
            serde_json::from_value(serde_json::json!({"approved": false, "sections": ["skills"]}))
                .unwrap();
        assert_eq!(sections_to_revise(&state, &listed, "Shorter"), ["Skills"]);
    }
}
