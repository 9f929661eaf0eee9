//! parse_resume and parse_prefs, each run on a hand-built state against a scripted
//! model: what is asked of which model tier, how answers are checked, and what lands in
//! the state.
#![cfg(test)]

mod common;

use common::llm_steps::*;
use common::rig::Rig;

use agent_llm::testing::{ScriptedModel, responses};
use agent_llm::{ToolChoice, Usage};
use agent_runtime::graph::NodeErrorKind;
use job_hunter::models::SearchPreferences;
use job_hunter::steps::{self};
use serde_json::json;

// ---------------------------------------------------------------------------------------
// 1. parse_resume

#[tokio::test]
async fn parse_resume_sends_the_read_resume_to_the_fast_model_once() {
    let model = ScriptedModel::new(vec![responses::tool_call(
        "t1",
        "CandidateProfile",
        serde_json::to_value(profile()).unwrap(),
    )]);
    let rig = Rig::new(&model);
    let mut state = rig.state();
    steps::parse_resume::run(&mut state, &rig.env())
        .await
        .unwrap();

    // The real reader ran on the fixture.
    let text = state.resume_text.clone().unwrap();
    assert!(text.contains("MAYA OKAFOR"), "{text}");
    assert!(text.contains("Rewrote the shipment-event ingestion service"));
    assert_eq!(state.profile, Some(profile()));

    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    // Reading a resume is extraction: the fast model's work.
    assert_eq!(
        request.model.as_deref(),
        Some(rig.settings.haiku_model.as_str())
    );
    assert_eq!(
        request.tool_choice,
        Some(ToolChoice::Tool {
            name: "CandidateProfile".into()
        })
    );
    let prompt = prompt_of(request);
    assert_eq!(prompt, steps::parse_resume::prompt(&text));
    assert!(prompt.contains(&text));
    assert_eq!(request.system.as_deref(), Some(steps::parse_resume::SYSTEM));
    insta::assert_snapshot!("parse_resume_prompt", prompt);
    insta::assert_snapshot!("parse_resume_system", request.system.clone().unwrap());

    let spend = rig.llm.cost();
    assert_eq!(spend.calls, 1);
    assert_eq!(spend.calls_by_step.get("parse_resume"), Some(&1));
    assert!(spend.usage_by_model.contains_key(&rig.settings.haiku_model));
}

#[tokio::test]
async fn parse_resume_re_asks_after_an_invalid_answer_and_counts_both_calls() {
    let invalid = responses::tool_call("t1", "CandidateProfile", json!({"name": 3}));
    let valid = responses::tool_call(
        "t2",
        "CandidateProfile",
        serde_json::to_value(profile()).unwrap(),
    );
    let expected_usage: Usage = [invalid.usage, valid.usage].into_iter().sum();
    let model = ScriptedModel::new(vec![invalid, valid]);
    let rig = Rig::new(&model);
    let mut state = rig.state();
    steps::parse_resume::run(&mut state, &rig.env())
        .await
        .unwrap();

    assert_eq!(state.profile, Some(profile()));
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    // The second call carries the first answer and the validation error.
    assert_eq!(requests[1].messages.len(), 3);
    let correction = format!("{:?}", requests[1].messages[2]);
    assert!(correction.contains("Validation error"), "{correction}");
    assert!(
        requests
            .iter()
            .all(|r| r.model.as_deref() == Some(rig.settings.haiku_model.as_str()))
    );

    let spend = rig.llm.cost();
    assert_eq!(spend.calls, 2);
    assert_eq!(spend.calls_by_step.get("parse_resume"), Some(&2));
    assert_eq!(spend.usage, expected_usage);
}

// ---------------------------------------------------------------------------------------
// 2. parse_prefs

#[tokio::test]
async fn parse_prefs_uses_the_fast_model_and_dedupes_company_names() {
    // Every value is one the recorded preferences text states.
    let answer = SearchPreferences {
        target_companies: vec![
            " Northwind Robotics ".into(),
            "Quill Labs".into(),
            "northwind robotics".into(),
            String::new(),
            "   ".into(),
            "QUILL LABS".into(),
        ],
        industries: Vec::new(),
        excluded_companies: Vec::new(),
        excluded_industries: vec!["crypto".into()],
        ..prefs()
    };
    let model = ScriptedModel::new(vec![responses::tool_call(
        "t1",
        "SearchPreferences",
        serde_json::to_value(&answer).unwrap(),
    )]);
    let rig = Rig::new(&model);
    let mut state = rig.state();
    steps::parse_prefs::run(&mut state, &rig.env())
        .await
        .unwrap();

    let parsed = state.preferences.clone().unwrap();
    assert_eq!(
        parsed.target_companies,
        ["Northwind Robotics", "Quill Labs"]
    );
    assert!(state.issues.is_empty(), "{:#?}", state.issues);
    assert_eq!(
        SearchPreferences {
            target_companies: answer.target_companies.clone(),
            ..parsed
        },
        answer,
        "the other fields are kept as answered"
    );

    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].model.as_deref(),
        Some(rig.settings.haiku_model.as_str())
    );
    let prompt = prompt_of(&requests[0]);
    assert_eq!(
        prompt,
        steps::parse_prefs::prompt(state.config.preferences.trim())
    );
    assert!(
        prompt.contains("Northwind Robotics and Quill Labs"),
        "{prompt}"
    );
    assert_eq!(rig.llm.cost().calls_by_step.get("parse_prefs"), Some(&1));
}

#[tokio::test]
async fn parse_prefs_refuses_empty_preferences_without_calling_the_model() {
    let model = ScriptedModel::new(Vec::new());
    let rig = Rig::new(&model);
    let mut state = rig.state();
    state.config.preferences = "  \n\t ".into();
    let error = steps::parse_prefs::run(&mut state, &rig.env())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), NodeErrorKind::Fatal);
    assert!(error.message().contains("empty"), "{error}");
    assert_eq!(model.call_count(), 0);
    assert_eq!(rig.llm.cost().calls, 0);
    assert!(state.preferences.is_none());
}
