//! The four agents' requests, pinned: system prompts, tool definitions (with their schemas)
//! and the messages the orchestrator builds, as sent to the model.
#![cfg(test)]

use std::sync::Arc;

use agent_llm::testing::{ScriptedModel, responses};
use agent_runtime::Session;
use page_explorer::Observation;
use page_explorer::agents::change_analyzer::{ActionDescription, analyze_change};
use page_explorer::agents::classifier::{ClassifierInput, classify};
use page_explorer::agents::explorer::{explorer_message, explorer_request};
use page_explorer::agents::summarizer::summarize;
use page_explorer::memory::{
    ChangeObservation, Classification, MemoryStore, NavAction, Transition,
};
use page_explorer::{Element, ElementKind, ElementState};
use serde_json::json;

/// A session asking `model` (a clone: it shares the model's request log).
fn asking(model: &ScriptedModel) -> Session<(), ()> {
    Session::new("prompts", ()).with_model(Arc::new(model.clone()))
}

fn element(selector: &str, role: &str, name: &str) -> Element {
    Element {
        selector: selector.into(),
        role: role.into(),
        name: name.into(),
        text: name.into(),
        kind: ElementKind::Click,
        state: ElementState::default(),
        in_viewport: true,
        below: false,
    }
}

fn board(modal: bool) -> Observation {
    let mut elements = vec![
        element("#open-filters", "button", "Filters"),
        element("[data-testid='job-1']", "button", "Rust Engineer — Acme"),
    ];
    let mut text = String::from("Page: Job Board\nURL: https://board.test/\n");
    if modal {
        elements = vec![
            element("input[name='remote']", "checkbox", "Remote only"),
            element("#close-filters", "button", "Close filters"),
        ];
        text.push_str("A dialog is open: only its contents are shown.\n");
    }
    text.push('\n');
    for e in &elements {
        text.push_str(&e.render());
        text.push('\n');
    }
    Observation {
        url: "https://board.test/".into(),
        title: "Job Board".into(),
        elements,
        modal,
        text,
        truncated: false,
        changes: None,
    }
}

fn memory() -> MemoryStore {
    let mut memory = MemoryStore::new();
    let home = Classification::new("job_search", true, "A job board with filters.");
    memory.apply_classification(&home, "https://board.test/", Some("Job Board"), None);
    memory.add_pattern_observation(&ChangeObservation {
        action: NavAction::Click,
        selector: Some("[data-testid='job-1']".into()),
        element_type: "job_listing".into(),
        effect: "fills the details panel".into(),
        change_type: "content_updated".into(),
    });
    let details = Classification::new("job_details", true, "One job's page.");
    let via = Transition::new(NavAction::Click, Some("a.more"), "click a.more");
    memory.apply_classification(&details, "https://board.test/jobs/1", None, Some(&via));
    memory
}

#[test]
fn explorer_opening_request() {
    let message = explorer_message(
        &memory().summary_for_model(),
        &["click \"[data-testid='job-1']\" → fills the details panel (job_listing)".to_owned()],
        &board(false),
    );
    let request = explorer_request("Find how jobs are filtered", message);
    insta::assert_json_snapshot!("explorer_request", request);
}

#[tokio::test]
async fn classifier_request() {
    let model = ScriptedModel::new(vec![responses::tool_call(
        "k",
        "classify",
        json!({ "page_id": "job_details", "is_new_page": true, "understanding": "One job." }),
    )]);
    let old = board(false);
    let mut new = board(false);
    new.url = "https://board.test/jobs/1".into();
    new.text = "Page: Rust Engineer\nURL: https://board.test/jobs/1\n\n[CLICK: \"a.apply\"] link \"Apply\"\n".into();
    let input = ClassifierInput {
        old_url: Some(&old.url),
        new_url: &new.url,
        old_page: Some(&old.text),
        new_page: &new.text,
        known_pages: &["job_search"],
        current_page: Some("job_search"),
        action: Some("click \"[data-testid='job-1']\""),
    };
    let verdict = classify(&asking(&model), &input).await.unwrap();
    assert_eq!(verdict.value.page_id, "job_details");
    insta::assert_json_snapshot!("classifier_request", model.last_request().unwrap());
}

#[tokio::test]
async fn change_analyzer_request_for_a_dialog_opening() {
    let model = ScriptedModel::new(vec![responses::tool_call(
        "a",
        "analyze_change",
        json!({ "element_type": "filter_button", "change_type": "modal_opened", "description": "opens the filters" }),
    )]);
    let action = ActionDescription {
        tool: "click",
        selector: Some("#open-filters"),
        argument: None,
        reason: "see the filters",
    };
    let verdict = analyze_change(&asking(&model), &action, &board(false), &board(true))
        .await
        .unwrap();
    assert_eq!(verdict.value.element_type, "filter_button");
    assert!(verdict.value.filter_options.is_empty());
    insta::assert_json_snapshot!("change_analyzer_request", model.last_request().unwrap());
}

#[tokio::test]
async fn summarizer_request() {
    let model = ScriptedModel::new(vec![responses::tool_call(
        "s",
        "summarize",
        json!({ "page_id": "job_search", "summary": "A board." }),
    )]);
    let memory = memory();
    let page = memory.page("job_search").unwrap();
    let summary = summarize(&asking(&model), &memory, page).await.unwrap();
    assert_eq!(summary.value.summary, "A board.");
    insta::assert_json_snapshot!("summarizer_request", model.last_request().unwrap());
}

#[tokio::test]
async fn extractor_request() {
    let model = ScriptedModel::new(vec![responses::tool_call(
        "e",
        "extract_job",
        json!({ "title": "Rust Engineer", "company": "Acme", "apply_type": "easy_apply" }),
    )]);
    let job = page_explorer::CollectedJob {
        title: "Rust Engineer at Acme".into(),
        company: String::new(),
        location: String::new(),
        salary_text: String::new(),
        url: String::new(),
        apply_url: "https://board.test/#apply-1".into(),
        apply_type: page_explorer::collect::ApplyType::Unknown,
        posted_date: None,
        source_page: "https://board.test/".into(),
        description: None,
        details_text: "Rust Engineer at Acme Build the billing platform in Rust. Load salaries Apply to Rust Engineer".into(),
    };
    let data = page_explorer::agents::extractor::extract_job(&asking(&model), &job)
        .await
        .unwrap();
    assert_eq!(data.value.company.as_deref(), Some("Acme"));
    insta::assert_json_snapshot!("extractor_request", model.last_request().unwrap());
}
