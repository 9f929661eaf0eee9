//! The agents' system prompts and an opening message, pinned.
#![cfg(test)]

mod common;

use resume_coordinator::coordinator::{StrategistPhase, build_strategist_message};
use resume_coordinator::craftsman::prompts::CRAFTSMAN_SYSTEM_PROMPT;
use resume_coordinator::intake::read_resume;
use resume_coordinator::producer::prompts::PRODUCER_SYSTEM_PROMPT;
use resume_coordinator::strategist::prompts::STRATEGIST_SYSTEM_PROMPT;
use resume_coordinator::{ResumeState, StartRequest};

#[test]
fn system_prompts() {
    insta::assert_snapshot!("strategist_system_prompt", STRATEGIST_SYSTEM_PROMPT);
    insta::assert_snapshot!("craftsman_system_prompt", CRAFTSMAN_SYSTEM_PROMPT);
    insta::assert_snapshot!("producer_system_prompt", PRODUCER_SYSTEM_PROMPT);
}

#[test]
fn the_strategist_opening_message() {
    let request: StartRequest = serde_json::from_value(common::sample_body()).unwrap();
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
    let request: StartRequest = serde_json::from_value(common::sample_body()).unwrap();
    let mut state = ResumeState::new(&request);
    let intake = read_resume(&state.resume_text).unwrap();
    state.candidate_name = intake.candidate_name;
    state.earlier_evidence = vec![resume_coordinator::types::Evidence {
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
