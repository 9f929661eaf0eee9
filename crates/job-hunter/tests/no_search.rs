//! Without web search and with no company named, the model suggests companies and each
//! is kept only once its job board is found, on local servers speaking the vendors'
//! formats.
#![cfg(test)]

mod common;

use common::rig::Rig;

use std::sync::Arc;
use std::time::Duration;

use agent_llm::testing::{ScriptedModel, responses};
use job_capabilities::ats::{AtsBoard, AtsClient, AtsEndpoints, AtsKind};
use job_capabilities::http::{PoliteClient, PolitePolicy};
use job_hunter::HuntEvent;
use job_hunter::models::{CompanyOrigin, CompanyOutcome, RemotePreference, SearchPreferences};
use job_hunter::steps::{self, find_companies::NO_SEARCH_SUGGESTED_NOTE};
use serde_json::json;
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Greenhouse `northwindrobotics`, Lever `lumenhealth` and Ashby `quill-labs`, from the
/// recorded bodies; every other board is a 404.
async fn job_boards() -> MockServer {
    let server = MockServer::start().await;
    let read = |p: &str| std::fs::read(common::fixtures().join("ats").join(p)).unwrap();
    for (route, body) in [
        (
            "/v1/boards/northwindrobotics/jobs",
            "greenhouse/northwindrobotics.json",
        ),
        ("/v0/postings/lumenhealth", "lever/lumenhealth.json"),
        ("/posting-api/job-board/quill-labs", "ashby/quill-labs.json"),
    ] {
        Mock::given(path(route))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(read(body)))
            .mount(&server)
            .await;
    }
    server
}

fn board(kind: AtsKind, token: &str) -> Option<AtsBoard> {
    Some(AtsBoard {
        kind,
        token: token.into(),
        workday: None,
    })
}

#[tokio::test]
async fn suggested_companies_are_kept_only_once_their_job_board_is_found() {
    let server = job_boards().await;
    let suggestion = |name: &str, domain: Option<&str>| json!({"name": name, "domain": domain, "reason": format!("{name} hires Rust engineers.")});
    let model = ScriptedModel::new(vec![responses::tool_call(
        "t1",
        "CompanyCandidateList",
        json!({"companies": [
            suggestion("Northwind Robotics", None),
            suggestion("Imaginary Robotics", Some("imaginary.example")),
            suggestion("Quill Labs", None),
            suggestion("Crypto Casino", None),
            suggestion("Lumen", Some("https://www.lumenhealth.example")),
            suggestion("Golang", None),
        ]}),
    )]);
    let mut rig = Rig::with(&model, |s| s.max_companies = 5);
    let base = server.uri();
    let endpoints = AtsEndpoints::from_lookup(|_| Some(base.clone()));
    let polite = PoliteClient::new(PolitePolicy {
        min_interval_per_host: Duration::ZERO,
        ..PolitePolicy::default()
    });
    rig.deps.boards = Arc::new(AtsClient::new(polite, endpoints));
    rig.deps.search = None;
    let mut state = rig.state();
    state.profile = Some(serde_json::from_str(PROFILE).unwrap());
    state.preferences = Some(SearchPreferences {
        target_titles: vec!["Backend Engineer".into()],
        target_companies: Vec::new(),
        industries: Vec::new(),
        locations: vec!["Berlin".into()],
        remote: RemotePreference::Any,
        min_salary: None,
        salary_currency: None,
        excluded_companies: vec!["crypto casino".into()],
        excluded_industries: Vec::new(),
    });
    steps::find_companies::run(&mut state, &rig.env())
        .await
        .unwrap();

    // The model was asked, with nothing listed yet.
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let prompt = requests[0].messages[0].text();
    assert!(prompt.contains("Already listed: (none)"), "{prompt}");

    // Kept: those with a board, found by name, hyphenated name or domain.
    let kept: Vec<(&str, &Option<AtsBoard>)> = state
        .companies
        .iter()
        .map(|c| (c.name.as_str(), &c.board))
        .collect();
    assert_eq!(
        kept,
        [
            (
                "Northwind Robotics",
                &board(AtsKind::Greenhouse, "northwindrobotics")
            ),
            ("Quill Labs", &board(AtsKind::Ashby, "quill-labs")),
            ("Lumen", &board(AtsKind::Lever, "lumenhealth")),
        ]
    );
    assert!(
        state
            .companies
            .iter()
            .all(|c| matches!(c.origin, CompanyOrigin::Suggested { .. }))
    );
    // The one without a board is left out and said so; the excluded one and the language
    // never asked.
    let [issue] = &state.issues[..] else {
        panic!("{:#?}", state.issues)
    };
    assert_eq!(
        (issue.step.as_str(), issue.kind.as_str()),
        ("find_companies", "validation")
    );
    assert!(
        issue.message.contains("Imaginary Robotics"),
        "{}",
        issue.message
    );
    let asked: Vec<String> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.url.path().to_owned())
        .collect();
    assert!(asked.iter().any(|p| p.contains("imaginary")), "{asked:?}");
    assert!(!asked.iter().any(|p| p.contains("crypto")), "{asked:?}");
    // A language suggested as a company is never probed.
    assert!(!asked.iter().any(|p| p.contains("golang")), "{asked:?}");
    assert_eq!(state.search_note.as_deref(), Some(NO_SEARCH_SUGGESTED_NOTE));
    assert!(rig.events.events().iter().any(
        |e| matches!(e, HuntEvent::Notice { message } if message == NO_SEARCH_SUGGESTED_NOTE)
    ));

    // Their jobs are then fetched from those boards.
    steps::scrape_jobs::run(&mut state, &rig.env())
        .await
        .unwrap();
    let outcomes: Vec<(&str, &CompanyOutcome)> = state
        .company_reports
        .iter()
        .map(|r| (r.company.as_str(), &r.outcome))
        .collect();
    assert_eq!(outcomes.len(), 4);
    assert!(
        outcomes[..3]
            .iter()
            .all(|(_, o)| matches!(o, CompanyOutcome::JobsFetched { count, .. } if *count > 0)),
        "{outcomes:#?}"
    );
    // The excluded suggestion is reported with the exclusion that ruled it out.
    assert_eq!(
        outcomes[3],
        (
            "Crypto Casino",
            &CompanyOutcome::Excluded {
                by: r#"company "crypto casino""#.into()
            }
        )
    );
    assert!(!state.raw_jobs.is_empty());
}

#[tokio::test]
async fn without_search_named_companies_are_not_joined_by_suggestions() {
    let model = ScriptedModel::new(Vec::new());
    let mut rig = Rig::new(&model);
    rig.deps.search = None;
    let mut state = rig.state();
    state.profile = Some(serde_json::from_str(PROFILE).unwrap());
    state.preferences = Some(SearchPreferences {
        target_titles: Vec::new(),
        target_companies: vec!["Northwind Robotics".into()],
        industries: Vec::new(),
        locations: Vec::new(),
        remote: RemotePreference::Any,
        min_salary: None,
        salary_currency: None,
        excluded_companies: Vec::new(),
        excluded_industries: Vec::new(),
    });
    steps::find_companies::run(&mut state, &rig.env())
        .await
        .unwrap();
    assert_eq!(model.call_count(), 0);
    assert_eq!(state.companies.len(), 1);
    assert_eq!(
        state.search_note.as_deref(),
        Some(steps::find_companies::NO_SEARCH_NOTE)
    );
}

const PROFILE: &str = r#"{
    "name": "Maya Okafor",
    "email": "maya.okafor@mail.example",
    "current_title": "Senior Platform Engineer",
    "years_of_experience": 8,
    "skills": ["Rust", "Go", "Kafka"],
    "experience": ["Senior Platform Engineer, Fernhill Logistics, 2023-present"],
    "education": [],
    "location": "Berlin, Germany",
    "summary": "Backend and platform engineer with 8 years in Rust and Go."
}"#;
