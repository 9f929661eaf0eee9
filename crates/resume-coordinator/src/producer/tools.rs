//! The Producer's tools, and the deterministic checks the coordinator reuses.

use agent_llm::ModelTier;
use agent_runtime::bus::{AgentBus, MessageType, OutgoingMessage};
use agent_runtime::{ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

use super::prompts::{ADVERSARIAL_REVIEW_PROMPT, COHERENCE_PROMPT};
use crate::craftsman::CRAFTSMAN;
use crate::llm::{ask, evidence_lines};
use crate::types::{Ctx, DOMAIN, Finding, ResumeEvent, ResumeState, ResumeTool};

/// The Producer's name on the bus: its agent's identity and the sender of its revision
/// requests (also re-exported by the `agent` module).
pub const PRODUCER: &str = "producer";

/// How long the Producer waits for the Craftsman's revision.
pub const REVISION_TIMEOUT: Duration = Duration::from_secs(300);

/// How many revisions the Producer may ask of one section (counted in code, whatever the
/// model asks).
pub const MAX_PRODUCER_REVISIONS: u32 = 1;

/// Whether the Producer may have the section `name` revised, counting the request when it
/// may: `Err` with the answer its tool gives when it may not (a section the user edited,
/// or one revised [`MAX_PRODUCER_REVISIONS`] times already), `Ok` with the section's name.
pub fn allow_revision(state: &mut ResumeState, name: &str) -> Result<String, Value> {
    let Some(section) = state.section(name) else {
        let names: Vec<&str> = state.sections.iter().map(|s| s.name.as_str()).collect();
        return Err(json!({
            "status": "unknown",
            "reason": format!("there is no section {name:?}; the sections are: {}", names.join(", ")),
        }));
    };
    let name = section.name.clone();
    if section.user_edited {
        return Err(json!({
            "status": "kept",
            "section": name,
            "reason": "the user wrote this section themselves; their text is final and is not revised",
        }));
    }
    let asked = state
        .producer_revisions
        .entry(name.to_lowercase())
        .or_default();
    if *asked >= MAX_PRODUCER_REVISIONS {
        return Err(json!({
            "status": "refused",
            "section": name,
            "reason": format!("{name} was revised {asked} time(s) already, the most a section may be; do not ask again"),
        }));
    }
    *asked += 1;
    Ok(name)
}

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoInput {}

/// Arguments of `request_revision`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RevisionInput {
    /// The section to revise.
    pub section: String,
    /// What is wrong and what to change.
    pub reason: String,
}

/// Coherence issues (structured output of `check_coherence`).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CoherenceCheck {
    /// Concrete issues.
    pub issues: Vec<String>,
}

/// Claims the evidence does not support (structured output of `adversarial_review`).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AdversarialReview {
    /// The findings.
    pub findings: Vec<Finding>,
}

/// The ATS check's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AtsReport {
    /// 0-100: 30 for the planned sections written, 60 for keyword coverage, 10 for the name.
    pub ats_score: u32,
    /// Share of JD keywords found, 0.0-1.0 (1.0 with no keywords).
    pub keyword_coverage: f64,
    /// Keywords found.
    pub covered: Vec<String>,
    /// Keywords missing.
    pub missing: Vec<String>,
    /// Planned sections without a heading.
    pub missing_sections: Vec<String>,
}

/// The resume as Markdown: the candidate's resume with the written sections in place
/// ([`crate::document::resume_markdown`]).
pub fn assemble_markdown(state: &ResumeState) -> String {
    crate::document::resume_markdown(state)
}

/// Headings and keyword coverage of the assembled resume (no model).
pub fn ats_check(state: &ResumeState) -> AtsReport {
    let markdown = assemble_markdown(state);
    let lower = markdown.to_lowercase();
    let planned = state.planned_sections();
    let missing_sections: Vec<String> = planned
        .iter()
        .filter(|name| {
            state
                .section(name)
                .is_none_or(|s| s.markdown.trim().is_empty())
        })
        .cloned()
        .collect();
    let keywords = state
        .jd_analysis
        .as_ref()
        .map(|a| a.keywords.clone())
        .unwrap_or_default();
    let (covered, missing): (Vec<String>, Vec<String>) = keywords
        .into_iter()
        .partition(|k| lower.contains(&k.to_lowercase()));
    let total = covered.len() + missing.len();
    let coverage = if total == 0 {
        1.0
    } else {
        covered.len() as f64 / total as f64
    };
    let headings = if planned.is_empty() {
        0.0
    } else {
        (planned.len() - missing_sections.len()) as f64 / planned.len() as f64
    };
    let name = if state.candidate_name.trim().is_empty() {
        0.0
    } else {
        10.0
    };
    let score = (30.0 * headings + 60.0 * coverage + name)
        .round()
        .clamp(0.0, 100.0) as u32;
    AtsReport {
        ats_score: score,
        keyword_coverage: (coverage * 100.0).round() / 100.0,
        covered,
        missing,
        missing_sections,
    }
}

/// Bullets that cite no evidence or unknown evidence (user edits are the user's word).
pub fn grounding_findings(state: &ResumeState) -> Vec<Finding> {
    let mut findings = Vec::new();
    for section in state.sections.iter().filter(|s| !s.user_edited) {
        for bullet in &section.bullets {
            let unknown: Vec<&str> = bullet
                .evidence
                .iter()
                .filter(|id| !state.has_evidence(id))
                .map(String::as_str)
                .collect();
            let problem = if bullet.evidence.is_empty() {
                "the bullet cites no evidence".to_owned()
            } else if !unknown.is_empty() {
                format!("the bullet cites unknown evidence {}", unknown.join(", "))
            } else {
                continue;
            };
            findings.push(Finding {
                section: section.name.clone(),
                claim: bullet.text.clone(),
                problem,
            });
        }
    }
    findings
}

/// The resume with each bullet's evidence ids, for the review prompts.
fn annotated(state: &ResumeState) -> String {
    let mut out = String::new();
    for section in &state.sections {
        out.push_str(&format!("## {}\n", section.name));
        for bullet in &section.bullets {
            out.push_str(&format!(
                "- {} [{}]\n",
                bullet.text,
                bullet.evidence.join(", ")
            ));
        }
    }
    out
}

/// `assemble_resume`: the Markdown of the sections (no model).
pub fn assemble_resume() -> ResumeTool {
    Arc::new(tool(
        "assemble_resume",
        "Assemble the approved sections into the resume's Markdown.",
        |_: NoInput, ctx: Ctx| async move {
            let markdown = ctx.update_state(|s| {
                let markdown = assemble_markdown(s);
                s.final_markdown = Some(markdown.clone());
                markdown
            });
            Ok::<Value, ToolError>(json!({ "markdown": markdown }))
        },
    ))
}

/// `check_ats`: headings and keyword coverage, an ATS score (no model).
pub fn check_ats() -> ResumeTool {
    Arc::new(tool(
        "check_ats",
        "Check headings and keyword coverage; gives an ATS score 0-100.",
        |_: NoInput, ctx: Ctx| async move {
            let report = ctx.update_state(|s| {
                let report = ats_check(s);
                s.ats_score = Some(report.ats_score);
                s.keyword_coverage = Some(report.keyword_coverage);
                report
            });
            Ok::<_, ToolError>(report)
        },
    ))
}

/// `check_coherence` (MID): tense, voice and consistency issues.
pub fn check_coherence() -> ResumeTool {
    Arc::new(tool(
        "check_coherence",
        "Check the assembled resume for coherence across sections.",
        move |_: NoInput, ctx: Ctx| async move {
            let prompt = ctx.read_state(assemble_markdown);
            let check: CoherenceCheck = ask(&ctx, ModelTier::Mid, COHERENCE_PROMPT, prompt).await?;
            ctx.update_state(|s| s.coherence_notes = check.issues.clone());
            Ok::<_, ToolError>(check)
        },
    ))
}

/// `adversarial_review` (PRIMARY, plus the grounding check): emits a `review_finding` per
/// new finding.
pub fn adversarial_review() -> ResumeTool {
    Arc::new(tool(
        "adversarial_review",
        "Check every claim against its evidence, as a sceptical hiring manager.",
        move |_: NoInput, ctx: Ctx| async move {
            let resume = ctx.read_state(annotated);
            let prompt = format!("Resume:\n{resume}\nEvidence:\n{}", evidence_lines(&ctx));
            let review: AdversarialReview =
                ask(&ctx, ModelTier::Primary, ADVERSARIAL_REVIEW_PROMPT, prompt).await?;
            let new = ctx.update_state(|s| {
                let mut all = review.findings;
                all.extend(grounding_findings(s));
                let mut new = Vec::new();
                for finding in all {
                    let seen = s
                        .findings
                        .iter()
                        .any(|f| f.section == finding.section && f.claim == finding.claim);
                    if !seen {
                        s.findings.push(finding.clone());
                        new.push(finding);
                    }
                }
                new
            });
            for finding in &new {
                ctx.emit(ResumeEvent::ReviewFinding {
                    section: finding.section.clone(),
                    claim: finding.claim.clone(),
                    problem: finding.problem.clone(),
                });
            }
            Ok::<Value, ToolError>(json!({
                "findings": new,
                "next": if new.is_empty() { "no findings" } else { "request_revision for each section with a finding" },
            }))
        },
    ))
}

/// `request_revision`: a bus `request` to the Craftsman with `{request_id, section,
/// reason}`, awaiting its correlated `response`; emits `revision_requested` and
/// `revision_complete`. A section the user edited, or one revised for the Producer
/// already ([`allow_revision`]), is not sent: the tool says why. The revised section is
/// shown to the user again after the Producer's run. It waits for another agent's model calls, so the round timeout
/// does not cut it: [`REVISION_TIMEOUT`] bounds the wait.
pub fn request_revision(bus: Arc<dyn AgentBus>) -> ResumeTool {
    Arc::new(tool(
        "request_revision",
        "Ask the Craftsman to revise a section, with the reason; returns the revised section.",
        move |input: RevisionInput, ctx: Ctx| {
            let bus = bus.clone();
            async move {
                let section = match ctx.update_state(|s| allow_revision(s, &input.section)) {
                    Ok(section) => section,
                    Err(answer) => {
                        tracing::info!(section = %input.section, %answer, "revision not sent");
                        return Ok(answer);
                    }
                };
                let n = ctx.scratchpad().update(|pad| {
                    let n = pad
                        .get("revision_requests")
                        .and_then(Value::as_u64)
                        .unwrap_or(0)
                        + 1;
                    pad.insert("revision_requests".into(), json!(n));
                    n
                });
                let request_id = format!("rev_{n}");
                ctx.emit(ResumeEvent::RevisionRequested {
                    section: section.clone(),
                    reason: input.reason.clone(),
                    request_id: request_id.clone(),
                });
                let message = OutgoingMessage::new(
                    PRODUCER,
                    CRAFTSMAN,
                    MessageType::Request,
                    DOMAIN,
                    json!({"request_id": request_id, "section": section, "reason": input.reason}),
                );
                let reply = bus
                    .request(message, REVISION_TIMEOUT)
                    .await
                    .map_err(|e| ToolError::failed(format!("the revision request failed: {e}")))?;
                if let Some(error) = reply.payload.get("error").and_then(Value::as_str) {
                    return Err(ToolError::failed(format!(
                        "the Craftsman could not revise: {error}"
                    )));
                }
                ctx.emit(ResumeEvent::RevisionComplete {
                    section,
                    request_id,
                });
                Ok::<Value, ToolError>(reply.payload)
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_section_is_revised_once_and_never_one_the_user_edited() {
        use crate::producer::tools::allow_revision;
        use crate::types::{ResumeState, Section};
        let section = |name: &str, user_edited| Section {
            name: name.into(),
            bullets: vec![],
            markdown: String::new(),
            approved: true,
            user_edited,
        };
        let mut state = ResumeState {
            sections: vec![section("Experience", false), section("Skills", true)],
            ..ResumeState::default()
        };
        assert_eq!(
            allow_revision(&mut state, "experience").unwrap(),
            "Experience"
        );
        assert_eq!(
            allow_revision(&mut state, "Experience").unwrap_err()["status"],
            "refused"
        );
        assert_eq!(
            allow_revision(&mut state, "Skills").unwrap_err()["status"],
            "kept"
        );
    }
}
