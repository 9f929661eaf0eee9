//! Step 1: read the resume and extract the candidate's profile (fast model: the answer is
//! extraction, every fact copied from the resume).

use agent_runtime::graph::NodeError;
use job_capabilities::documents::read_resume_text;

use super::{StepEnv, clip, essential};
use crate::llm::Quality;
use crate::models::CandidateProfile;
use crate::state::HuntState;

/// The system prompt of the resume reader.
pub const SYSTEM: &str = "You read resumes and extract the candidate's profile. Use only what \
the resume says: never invent employers, dates, skills or contact details. When the resume does \
not state a field, leave it null or empty.";

/// Resumes shorter than this many characters of text are refused as unusable.
pub const MIN_RESUME_CHARS: usize = 200;

/// The prompt for one resume.
pub fn prompt(resume_text: &str) -> String {
    format!(
        "Extract the candidate profile from this resume.\n\n<resume>\n{}\n</resume>",
        clip(resume_text, 30_000)
    )
}

/// Reads the resume (PDF, DOCX or TXT) and asks for a [`CandidateProfile`]. An
/// unreadable, empty or near-empty resume, or a profile without a name and skills, is
/// fatal: nothing after it could be trusted.
pub async fn run(state: &mut HuntState, env: &StepEnv<'_>) -> Result<(), NodeError> {
    let path = state.config.resume_path.clone();
    let read = tokio::task::spawn_blocking(move || read_resume_text(&path))
        .await
        .map_err(|e| NodeError::fatal(format!("reading the resume failed: {e}")))?;
    // The document error names the file.
    let text = read.map_err(|e| NodeError::fatal(e.to_string()))?;
    let letters = text.chars().filter(|c| c.is_alphanumeric()).count();
    if letters < MIN_RESUME_CHARS {
        return Err(NodeError::fatal(format!(
            "{} has only {letters} letters or digits of text; a resume needs at least {MIN_RESUME_CHARS}",
            state.config.resume_path.display()
        )));
    }
    let profile: CandidateProfile = env
        .llm
        .extract(
            env.ctx,
            "parse_resume",
            Quality::Fast,
            SYSTEM,
            prompt(&text),
        )
        .await
        .map_err(|e| essential("extract the profile", e))?;
    if profile.name.trim().is_empty() && profile.skills.is_empty() {
        return Err(NodeError::fatal(
            "the resume yielded no usable profile (no name, no skills)",
        ));
    }
    tracing::info!(name = %profile.name, skills = profile.skills.len(), "profile extracted");
    state.resume_text = Some(text);
    state.profile = Some(profile);
    Ok(())
}
