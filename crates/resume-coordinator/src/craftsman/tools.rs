//! The Craftsman's tools, and the revision path the coordinator also uses for the
//! Producer's requests.

use agent_llm::ModelTier;
use agent_runtime::{ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;

use super::prompts::{REVISE_SECTION_PROMPT, SELF_REVIEW_PROMPT, WRITE_SECTION_PROMPT};
use crate::document::section_markdown;
use crate::intake::strip_bullet;
use crate::layout::ResumeLayout;
use crate::llm::{ask, evidence_lines};
use crate::producer::PRODUCER;
use crate::types::{Bullet, Ctx, ResumeState, ResumeTool, RevisionEntry, Section, SectionPlan};

/// Words and phrases that read as filler on a resume.
pub const BUZZWORDS: &[&str] = &[
    "synergy",
    "results-driven",
    "go-getter",
    "think outside the box",
    "team player",
    "detail-oriented",
    "hard-working",
    "self-starter",
    "rockstar",
    "ninja",
    "guru",
    "best-of-breed",
    "dynamic",
    "passionate",
    "proven track record",
];

/// Arguments naming a section.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SectionInput {
    /// The section's name, as in the blueprint.
    pub section: String,
}

/// Arguments of `revise_section`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReviseInput {
    /// The section's name.
    pub section: String,
    /// What to change.
    pub feedback: String,
}

/// A written section (structured output of `write_section`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SectionWriting {
    /// The bullets, each with its evidence ids.
    pub bullets: Vec<Bullet>,
}

/// A revised section (structured output of `revise_section`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SectionRevision {
    /// The new bullets, each with its evidence ids.
    pub bullets: Vec<Bullet>,
}

/// The Craftsman's review of its own section (structured output of `self_review`).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SelfReview {
    /// Concrete issues; empty when the section is ready.
    pub issues: Vec<String>,
}

pub use crate::gates::SectionReview;

/// A section's name as it appears in its review gate's name: `summary` for "Summary"
/// (the gate `section_review_summary`).
pub fn section_slug(section: &str) -> String {
    section
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// One bullet's evidence problem (bullets numbered from 1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BulletProblem {
    /// The bullet cites nothing.
    #[error("bullet {bullet} cites no evidence")]
    NoEvidence {
        /// The bullet's number, from 1.
        bullet: usize,
    },
    /// The bullet cites an id the evidence library does not hold.
    #[error("bullet {bullet} cites unknown evidence {id:?}")]
    UnknownEvidence {
        /// The bullet's number, from 1.
        bullet: usize,
        /// The id cited.
        id: String,
    },
}

/// Why a section's bullets were refused by [`check_evidence`]; the text goes back to the
/// model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvidenceError {
    /// The section has no bullets at all.
    #[error("the section has no bullets")]
    NoBullets,
    /// Some bullets cite no evidence or unknown evidence.
    #[error(
        "{}; cite only ids of the evidence library ({})",
        join(problems, "; "),
        known.join(", ")
    )]
    Uncited {
        /// Every problem found, in bullet order.
        problems: Vec<BulletProblem>,
        /// The ids of the evidence library.
        known: Vec<String>,
    },
}

/// The items' texts joined by `separator`.
fn join(items: &[impl std::fmt::Display], separator: &str) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(separator)
}

/// Checks that every bullet cites at least one evidence id of the library.
pub fn check_evidence(state: &ResumeState, bullets: &[Bullet]) -> Result<(), EvidenceError> {
    if bullets.is_empty() {
        return Err(EvidenceError::NoBullets);
    }
    let mut problems = Vec::new();
    for (i, bullet) in bullets.iter().enumerate() {
        if bullet.evidence.is_empty() {
            problems.push(BulletProblem::NoEvidence { bullet: i + 1 });
        }
        for id in &bullet.evidence {
            if !state.has_evidence(id) {
                problems.push(BulletProblem::UnknownEvidence {
                    bullet: i + 1,
                    id: id.clone(),
                });
            }
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    let known = state.evidence.iter().map(|e| e.id.clone()).collect();
    Err(EvidenceError::Uncited { problems, known })
}

/// The planned section named `name`, or an error listing the plan.
fn planned(ctx: &Ctx, name: &str) -> Result<SectionPlan, ToolError> {
    ctx.read_state(|s| {
        let plan = s
            .blueprint
            .as_ref()
            .map(|b| b.sections.clone())
            .unwrap_or_default();
        plan.iter()
            .find(|p| p.name.eq_ignore_ascii_case(name.trim()))
            .cloned()
            .ok_or_else(|| {
                let names: Vec<&str> = plan.iter().map(|p| p.name.as_str()).collect();
                ToolError::failed(format!(
                    "no section {name:?} in the blueprint; its sections are: {}",
                    names.join(", ")
                ))
            })
    })
}

/// Stores `section` in place of the one with its name, in blueprint order.
pub fn store_section(state: &mut ResumeState, section: Section) {
    state
        .sections
        .retain(|s| !s.name.eq_ignore_ascii_case(&section.name));
    state.sections.push(section);
    let order = state.planned_sections();
    state.sections.sort_by_key(|s| {
        order
            .iter()
            .position(|n| n.eq_ignore_ascii_case(&s.name))
            .unwrap_or(usize::MAX)
    });
}

/// The roles (entries with their dates) of the candidate's resume, for the writer:
/// a bullet that cites a role's lines is placed under that role.
fn roles_note(resume_text: &str) -> String {
    let layout = ResumeLayout::parse(resume_text);
    let roles: Vec<String> = layout
        .sections
        .iter()
        .flat_map(|section| section.entry_headings())
        .map(|(id, heading)| format!("{id}: {heading}"))
        .collect();
    if roles.is_empty() {
        return String::new();
    }
    format!(
        "Roles and entries of the candidate's resume (each bullet is placed under the role whose lines it cites):\n{}\n",
        roles.join("\n")
    )
}

fn section_prompt(ctx: &Ctx, plan: &SectionPlan, extra: &str) -> String {
    let (positioning, keywords, roles) = ctx.read_state(|s| {
        (
            s.blueprint
                .as_ref()
                .map(|b| b.positioning.clone())
                .unwrap_or_default(),
            s.jd_analysis
                .as_ref()
                .map(|a| a.keywords.join(", "))
                .unwrap_or_default(),
            roles_note(&s.resume_text),
        )
    });
    format!(
        "Section: {}\nGoal: {}\nPositioning: {positioning}\nKeywords: {keywords}\n{extra}\n{roles}Evidence:\n{}",
        plan.name,
        plan.goal,
        evidence_lines(ctx)
    )
}

fn section_text(ctx: &Ctx, name: &str) -> Result<(String, String), ToolError> {
    ctx.read_state(|s| {
        s.section(name)
            .map(|sec| (sec.name.clone(), sec.markdown.clone()))
            .ok_or_else(|| ToolError::failed(format!("section {name:?} is not written yet")))
    })
}

/// Revises a written section with `feedback` (PRIMARY) and stores it, not approved
/// until the user sees it again; `by` and `request_id` go to the revision log. A section
/// the user edited is never revised for the Producer (`by` [`PRODUCER`]). The Craftsman's `revise_section` tool and the
/// coordinator's answer to the Producer's bus requests both come here.
pub async fn revise(
    ctx: &Ctx,
    name: &str,
    feedback: &str,
    by: &str,
    request_id: Option<String>,
) -> Result<Section, ToolError> {
    let plan = planned(ctx, name)?;
    let (_, current) = section_text(ctx, &plan.name)?;
    if by == PRODUCER
        && ctx.read_state(|s| s.section(&plan.name).is_some_and(|sec| sec.user_edited))
    {
        return Err(ToolError::failed(format!(
            "the user wrote {} themselves; their text is final and is not revised",
            plan.name
        )));
    }
    let extra = format!("Current section:\n{current}\n\nRevision request: {feedback}\n");
    let prompt = section_prompt(ctx, &plan, &extra);
    let revision: SectionRevision =
        ask(ctx, ModelTier::Primary, REVISE_SECTION_PROMPT, prompt).await?;
    ctx.update_state(|s| {
        check_evidence(s, &revision.bullets).map_err(|e| ToolError::failed(e.to_string()))?;
        // Every revision is presented to the user again before it is final (the
        // Producer's too: see `review::reapprove`).
        let mut section = Section {
            name: plan.name.clone(),
            markdown: String::new(),
            bullets: revision.bullets,
            approved: false,
            user_edited: false,
        };
        section.markdown = section_markdown(s, &section);
        store_section(s, section.clone());
        s.revisions.push(RevisionEntry {
            section: plan.name.clone(),
            by: by.to_owned(),
            reason: feedback.to_owned(),
            request_id,
        });
        Ok(section)
    })
}

/// `write_section` (PRIMARY): bullets with evidence ids; unknown ids go back to the model.
pub fn write_section() -> ResumeTool {
    Arc::new(tool(
        "write_section",
        "Write one section of the blueprint as bullets, each citing its evidence ids.",
        move |input: SectionInput, ctx: Ctx| async move {
            let plan = planned(&ctx, &input.section)?;
            let prompt = section_prompt(&ctx, &plan, "");
            let draft: SectionWriting =
                ask(&ctx, ModelTier::Primary, WRITE_SECTION_PROMPT, prompt).await?;
            let section = ctx.update_state(|s| {
                check_evidence(s, &draft.bullets).map_err(|e| ToolError::failed(e.to_string()))?;
                let mut section = Section {
                    name: plan.name.clone(),
                    markdown: String::new(),
                    bullets: draft.bullets,
                    approved: false,
                    user_edited: false,
                };
                section.markdown = section_markdown(s, &section);
                store_section(s, section.clone());
                Ok::<_, ToolError>(section)
            })?;
            ctx.scratchpad()
                .set(format!("section:{}", section.name), json!(section));
            Ok::<_, ToolError>(section)
        },
    ))
}

/// `self_review` (MID): issues with a written section.
pub fn self_review() -> ResumeTool {
    Arc::new(tool(
        "self_review",
        "Review a written section against its goal and evidence.",
        move |input: SectionInput, ctx: Ctx| async move {
            let plan = planned(&ctx, &input.section)?;
            let (_, text) = section_text(&ctx, &plan.name)?;
            let prompt = section_prompt(&ctx, &plan, &format!("Section text:\n{text}\n"));
            let review: SelfReview = ask(&ctx, ModelTier::Mid, SELF_REVIEW_PROMPT, prompt).await?;
            Ok::<_, ToolError>(review)
        },
    ))
}

/// `check_keywords`: which JD keywords the section covers (no model).
pub fn check_keywords() -> ResumeTool {
    Arc::new(tool(
        "check_keywords",
        "List the job's keywords a section covers and misses.",
        |input: SectionInput, ctx: Ctx| async move {
            let (_, text) = section_text(&ctx, &input.section)?;
            let keywords = ctx.read_state(|s| {
                s.jd_analysis
                    .as_ref()
                    .map(|a| a.keywords.clone())
                    .unwrap_or_default()
            });
            let lower = text.to_lowercase();
            let (covered, missing): (Vec<String>, Vec<String>) = keywords
                .into_iter()
                .partition(|k| lower.contains(&k.to_lowercase()));
            Ok::<Value, ToolError>(json!({"covered": covered, "missing": missing}))
        },
    ))
}

/// The buzzwords found in `text`.
pub fn buzzwords_in(text: &str) -> Vec<&'static str> {
    let lower = text.to_lowercase();
    BUZZWORDS
        .iter()
        .copied()
        .filter(|word| lower.contains(word))
        .collect()
}

/// `humanize_check`: buzzwords in the section (no model).
pub fn humanize_check() -> ResumeTool {
    Arc::new(tool(
        "humanize_check",
        "Flag buzzwords and filler in a section.",
        |input: SectionInput, ctx: Ctx| async move {
            let (_, text) = section_text(&ctx, &input.section)?;
            let flagged = buzzwords_in(&text);
            Ok::<Value, ToolError>(json!({"flagged": flagged, "ok": flagged.is_empty()}))
        },
    ))
}

/// Bullets of the user's own Markdown: `-`, `*` or `•` lines, else every text line.
pub fn bullets_of_markdown(markdown: &str) -> Vec<Bullet> {
    let lines: Vec<&str> = markdown
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let marked: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with(['-', '*', '•']))
        .collect();
    let chosen = if marked.is_empty() { lines } else { marked };
    chosen
        .into_iter()
        .map(|l| Bullet {
            text: strip_bullet(l),
            evidence: Vec::new(),
        })
        .filter(|b| !b.text.is_empty())
        .collect()
}

/// `revise_section` (PRIMARY): rewrites a section with feedback.
pub fn revise_section() -> ResumeTool {
    Arc::new(tool(
        "revise_section",
        "Revise a written section with the given feedback.",
        move |input: ReviseInput, ctx: Ctx| async move {
            revise(&ctx, &input.section, &input.feedback, "craftsman", None).await
        },
    ))
}
