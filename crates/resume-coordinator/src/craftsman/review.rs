//! Showing a section to the user (`section_draft`, then the `section_review_{section}`
//! gate) and acting on the answer; and the second review of the sections the Producer
//! had revised, or the user sent back from `quality_review`.

use agent_runtime::ToolError;
use agent_runtime::tool;
use serde_json::{Value, json};
use std::sync::Arc;

use super::tools::{
    SectionInput, SectionReview, bullets_of_markdown, revise, section_slug, store_section,
};
use crate::gates::{SECTION_REVIEW, SectionDraft};
use crate::types::{Ctx, ResumeEvent, ResumeTool, Section};

/// What the user made of a section shown to them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presented {
    /// The section is final (the user approved it, or wrote their own text).
    Approved {
        /// The section's name.
        section: String,
        /// Whether the text is now the user's own edit.
        edited: bool,
    },
    /// The user asked for changes.
    Revise {
        /// The section's name.
        section: String,
        /// What to change.
        feedback: String,
    },
}

/// Shows the section named `name` to the user: emits `section_draft` and, with section
/// review on, waits at `section_review_{section}` (approve, edit or revise); without
/// section review it is approved. An approval or an edit is stored and announced with
/// `section_approved`.
pub async fn present(ctx: &Ctx, name: &str) -> Result<Presented, ToolError> {
    let section = ctx
        .read_state(|s| s.section(name).cloned())
        .ok_or_else(|| ToolError::failed(format!("section {name:?} is not written yet")))?;
    ctx.emit(ResumeEvent::SectionDraft {
        section: section.name.clone(),
        markdown: section.markdown.clone(),
        bullets: section.bullets.clone(),
    });
    let review = if ctx.read_state(|s| s.flags.section_review) {
        let shown = SectionDraft {
            section: section.name.clone(),
            markdown: section.markdown.clone(),
            bullets: section.bullets.clone(),
        };
        let gate = SECTION_REVIEW.request_for(section_slug(&section.name), &shown)?;
        ctx.ask_with(&SECTION_REVIEW, gate).await?
    } else {
        SectionReview::Approve
    };
    let name = section.name.clone();
    let edited = match review {
        SectionReview::Approve => {
            ctx.update_state(|s| {
                let mut approved = section;
                approved.approved = true;
                store_section(s, approved);
            });
            false
        }
        SectionReview::Edit { markdown } => {
            ctx.update_state(|s| {
                store_section(
                    s,
                    Section {
                        name: name.clone(),
                        bullets: bullets_of_markdown(&markdown),
                        markdown,
                        approved: true,
                        user_edited: true,
                    },
                );
            });
            true
        }
        SectionReview::Revise { feedback } => {
            return Ok(Presented::Revise {
                section: name,
                feedback,
            });
        }
    };
    ctx.emit(ResumeEvent::SectionApproved {
        section: name.clone(),
    });
    Ok(Presented::Approved {
        section: name,
        edited,
    })
}

/// Shows the section `name` again until the user approves or edits it: each time they
/// ask for changes the Craftsman revises it with their feedback (`by` `user`) and shows it
/// again. The Producer's revisions and the sections sent back from `quality_review` come
/// here, so no text reaches the resume without the user's approval.
pub async fn reapprove(ctx: &Ctx, name: &str) -> Result<(), ToolError> {
    loop {
        match present(ctx, name).await? {
            Presented::Approved { .. } => return Ok(()),
            Presented::Revise { section, feedback } => {
                revise(ctx, &section, &feedback, "user", None).await?;
            }
        }
    }
}

/// `present_to_user`: emits `section_draft` and, with section review on, waits at
/// `section_review_{section}` for approve, edit or revise ([`present`]).
pub fn present_to_user() -> ResumeTool {
    Arc::new(tool(
        "present_to_user",
        "Show a written section to the user for approval.",
        |input: SectionInput, ctx: Ctx| async move {
            match present(&ctx, &input.section).await? {
                Presented::Approved { section, edited } if edited => Ok::<Value, ToolError>(
                    json!({"status": "approved", "section": section, "edited_by_user": true}),
                ),
                Presented::Approved { section, .. } => {
                    Ok(json!({"status": "approved", "section": section}))
                }
                Presented::Revise { section, feedback } => Ok(json!({
                    "status": "revise",
                    "section": section,
                    "feedback": feedback,
                    "next": "call revise_section with this feedback, then present_to_user again",
                })),
            }
        },
    ))
}
