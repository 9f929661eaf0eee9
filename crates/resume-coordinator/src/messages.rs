//! The coordinator's opening messages: what each agent is told when it starts, built
//! from the session's state (spec 001 section 5, "State handoff between agents").

use crate::producer::tools::assemble_markdown;
use crate::strategist::StrategistPhase;
use crate::types::ResumeState;

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
    if let Some(last) = state.earlier_evidence.last() {
        out.push_str(&format!(
            "Returning user: M1..{} are the candidate's own facts from earlier sessions; use them as evidence and do not ask again what they answer.\n",
            last.id
        ));
    }
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

#[cfg(test)]
mod tests {
    //! The agents' system prompts and an opening message, pinned.
    use super::*;
    use crate::craftsman::prompts::CRAFTSMAN_SYSTEM_PROMPT;
    use crate::intake::read_resume;
    use crate::producer::prompts::PRODUCER_SYSTEM_PROMPT;
    use crate::strategist::prompts::STRATEGIST_SYSTEM_PROMPT;
    use crate::types::StartRequest;

    fn sample_start() -> StartRequest {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/resume");
        serde_json::from_value(crate::dry_run::sample_body(&fixtures).unwrap()).unwrap()
    }

    #[test]
    fn system_prompts() {
        insta::assert_snapshot!("strategist_system_prompt", STRATEGIST_SYSTEM_PROMPT);
        insta::assert_snapshot!("craftsman_system_prompt", CRAFTSMAN_SYSTEM_PROMPT);
        insta::assert_snapshot!("producer_system_prompt", PRODUCER_SYSTEM_PROMPT);
    }

    #[test]
    fn the_strategist_opening_message() {
        let request: StartRequest = sample_start();
        let mut state = ResumeState::new(&request);
        let intake = read_resume(&state.resume_text).unwrap();
        state.candidate_name = intake.candidate_name;
        state.evidence = intake.evidence;
        insta::assert_snapshot!(
            "strategist_research_message",
            build_strategist_message(&state, StrategistPhase::Research)
        );
    }

    #[test]
    fn the_strategist_opening_message_for_a_returning_user() {
        let request: StartRequest = sample_start();
        let mut state = ResumeState::new(&request);
        let intake = read_resume(&state.resume_text).unwrap();
        state.candidate_name = intake.candidate_name;
        state.earlier_evidence = vec![crate::types::Evidence {
            id: "M1".into(),
            text: "Led 4 engineers (asked: How large was your team?)".into(),
        }];
        state.evidence = intake.evidence;
        state.evidence.extend(state.earlier_evidence.clone());
        let message = build_strategist_message(&state, StrategistPhase::Research);
        assert!(
            message.contains("M1: Led 4 engineers (asked: How large was your team?)\n"),
            "{message}"
        );
        assert!(
            message.contains("Returning user: M1..M1 are the candidate's own facts"),
            "{message}"
        );
    }
}
