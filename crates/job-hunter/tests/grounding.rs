//! Model answers checked against their text: the preferences (parse_prefs) and the
//! score evidence (score_jobs), each asked again once, what stays unsupported dropped
//! and recorded.
#![cfg(test)]

mod common;

use common::rig::Rig;

use std::sync::{Arc, Mutex};

use agent_llm::ChatRequest;
use agent_llm::testing::{ScriptedModel, responses};
use async_trait::async_trait;
use job_capabilities::ats::{AtsBoard, AtsError, JobBoardClient};
use job_capabilities::{JobSource, RawJob};
use job_hunter::models::{
    CandidateProfile, ExtractedJob, Job, RemotePreference, SearchPreferences, WorkArrangement,
};
use job_hunter::steps;
use serde_json::{Value, json};

const PREFS: &str =
    "Backend roles in Berlin, ideally at Northwind Robotics or Quill Labs. No crypto companies.";

fn prefs_answer(companies: &[&str], locations: &[&str], excluded: &[&str]) -> Value {
    let list = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    serde_json::to_value(SearchPreferences {
        target_titles: vec!["Backend Engineer".into()],
        target_companies: list(companies),
        industries: Vec::new(),
        locations: list(locations),
        remote: RemotePreference::Any,
        min_salary: None,
        salary_currency: None,
        excluded_companies: list(excluded),
        excluded_industries: Vec::new(),
    })
    .unwrap()
}

fn prompt_of(request: &ChatRequest) -> String {
    request.messages[0].text()
}

/// Job boards that know only `northwindrobotics`, recording every token asked.
#[derive(Default)]
struct RecordingBoards {
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl JobBoardClient for RecordingBoards {
    async fn fetch_jobs(&self, board: &AtsBoard, _company: &str) -> Result<Vec<RawJob>, AtsError> {
        self.asked.lock().unwrap().push(board.token.clone());
        if board.token == "northwindrobotics" {
            return Ok(Vec::new());
        }
        Err(AtsError::BoardNotFound {
            kind: board.kind,
            token: board.token.clone(),
        })
    }
}

/// The README's main job: "no crypto or gambling" as a model phrases it ("crypto
/// companies") and as the text says it. Both are kept, as industries, and reported; no
/// value is dropped and the model is not asked again.
#[tokio::test]
async fn no_crypto_or_gambling_is_kept_as_two_industries() {
    const README: &str = "Senior or staff backend or platform roles, remote in Europe or Berlin, Rust or Go, at least 90k EUR. Especially Northwind Robotics and Quill Labs; no crypto or gambling.";
    let mut answer = prefs_answer(
        &["Northwind Robotics", "Quill Labs"],
        &["Berlin", "Remote - Europe"],
        &["crypto companies", "Gambling"],
    );
    answer["excluded_industries"] = json!(["gambling industry"]);
    let model = ScriptedModel::new(vec![responses::tool_call(
        "t1",
        "SearchPreferences",
        answer,
    )]);
    let rig = Rig::new(&model);
    let mut state = rig.state();
    state.config.preferences = README.into();
    steps::parse_prefs::run(&mut state, &rig.env())
        .await
        .unwrap();

    let prefs = state.preferences.clone().unwrap();
    assert!(prefs.excluded_companies.is_empty());
    assert_eq!(prefs.excluded_industries, ["crypto", "gambling"]);
    assert_eq!(model.requests().len(), 1, "nothing to ask again");
    assert!(state.issues.is_empty(), "{:#?}", state.issues);
    let reported: Vec<String> = state.exclusions.iter().map(|e| e.describe()).collect();
    assert_eq!(
        reported,
        [
            r#"industry "crypto": removed nothing found in this run"#,
            r#"industry "gambling": removed nothing found in this run"#
        ]
    );
}

/// "Not Acme" names a company: kept as a company exclusion, and applied to companies
/// by name and to jobs by their company.
#[tokio::test]
async fn a_named_company_is_kept_as_a_company_exclusion() {
    let answer = prefs_answer(&[], &["Berlin"], &["Acme", "Quill Labs"]);
    let model = ScriptedModel::new(vec![
        responses::tool_call("t1", "SearchPreferences", answer.clone()),
        responses::tool_call("t2", "SearchPreferences", answer),
    ]);
    let rig = Rig::new(&model);
    let mut state = rig.state();
    state.config.preferences = "Backend roles in Berlin, but not Acme. Quill Labs is fine.".into();
    steps::parse_prefs::run(&mut state, &rig.env())
        .await
        .unwrap();
    let prefs = state.preferences.clone().unwrap();
    assert_eq!(prefs.excluded_companies, ["Acme"]);
    assert!(prefs.excluded_industries.is_empty());
}

#[tokio::test]
async fn preferences_the_text_never_states_are_asked_again_once_then_dropped() {
    // "any" as a company, a wanted company under exclusions, a city never mentioned.
    let first = prefs_answer(
        &["any", "Northwind Robotics"],
        &["Berlin", "London"],
        &["Northwind Robotics", "crypto companies"],
    );
    // Asked again, the model still names "any", and now Quill Labs too.
    let second = prefs_answer(&["Quill Labs", "Any"], &["Berlin"], &["crypto companies"]);
    let model = ScriptedModel::new(vec![
        responses::tool_call("t1", "SearchPreferences", first),
        responses::tool_call("t2", "SearchPreferences", second),
    ]);
    let mut rig = Rig::new(&model);
    let boards = Arc::new(RecordingBoards::default());
    rig.deps.boards = boards.clone();
    rig.deps.search = None;
    let mut state = rig.state();
    state.config.preferences = PREFS.into();
    state.profile = Some(profile());
    steps::parse_prefs::run(&mut state, &rig.env())
        .await
        .unwrap();

    let prefs = state.preferences.clone().unwrap();
    // What either answer had and the text supports; nothing it does not.
    assert_eq!(prefs.target_companies, ["Northwind Robotics", "Quill Labs"]);
    assert_eq!(prefs.locations, ["Berlin"]);
    // "crypto companies", excluded in lower case, is a kind of company: an industry.
    assert!(prefs.excluded_companies.is_empty());
    assert_eq!(prefs.excluded_industries, ["crypto"]);
    assert_eq!(prefs.target_titles, ["Backend Engineer"]);

    // One re-ask, naming what was wrong; never a third call.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let again = prompt_of(&requests[1]);
    for wrong in [
        r#"target_companies "any""#,
        r#"locations "London""#,
        r#"excluded_companies "Northwind Robotics""#,
    ] {
        assert!(again.contains(wrong), "{wrong} not in\n{again}");
    }
    assert!(!again.contains(r#""crypto companies""#), "{again}");

    // Recorded: what the first answer had, and what the second still had.
    let [issue] = &state.issues[..] else {
        panic!("{:#?}", state.issues)
    };
    assert_eq!(
        (issue.step.as_str(), issue.kind.as_str(), issue.fatal),
        ("parse_prefs", "validation", false)
    );
    assert!(
        issue.message.contains(r#"target_companies "any""#)
            && issue
                .message
                .contains(r#"excluded_companies "Northwind Robotics""#)
            && issue
                .message
                .contains(r#"asked again, and dropped target_companies "Any""#),
        "{}",
        issue.message
    );

    // "any" is never probed as a job board.
    steps::find_companies::run(&mut state, &rig.env())
        .await
        .unwrap();
    steps::scrape_jobs::run(&mut state, &rig.env())
        .await
        .unwrap();
    let asked = boards.asked.lock().unwrap().clone();
    assert!(asked.contains(&"northwindrobotics".to_owned()), "{asked:?}");
    assert!(
        asked.iter().all(|token| !token.contains("any")),
        "{asked:?}"
    );
}

#[tokio::test]
async fn grounded_preferences_are_not_asked_again() {
    let answer = prefs_answer(&["Northwind Robotics"], &["Berlin"], &["crypto"]);
    let model = ScriptedModel::new(vec![responses::tool_call(
        "t1",
        "SearchPreferences",
        answer,
    )]);
    let rig = Rig::new(&model);
    let mut state = rig.state();
    state.config.preferences = PREFS.into();
    steps::parse_prefs::run(&mut state, &rig.env())
        .await
        .unwrap();
    assert_eq!(model.call_count(), 1);
    assert!(state.issues.is_empty(), "{:#?}", state.issues);
    assert_eq!(
        state.preferences.unwrap().target_companies,
        ["Northwind Robotics"]
    );
}

// ---------------------------------------------------------------------------------------
// score_jobs

fn profile() -> CandidateProfile {
    CandidateProfile {
        name: "Maya Okafor".into(),
        email: Some("maya.okafor@mail.example".into()),
        current_title: Some("Senior Platform Engineer".into()),
        years_of_experience: Some(8),
        skills: vec!["Rust".into(), "Kafka".into()],
        experience: vec!["Senior Platform Engineer, Fernhill Logistics, 2023-present".into()],
        education: Vec::new(),
        location: Some("Berlin".into()),
        summary: "Backend engineer with 8 years in Rust.".into(),
    }
}

/// Job `n`, whose posting (description) says more than the scorer is shown.
fn job_and_posting(n: u32) -> (Job, RawJob) {
    let url = format!("https://jobs.example/{n}");
    let job = Job {
        id: steps::process_jobs::job_id(&url),
        company: "Northwind Robotics".into(),
        title: format!("Backend Engineer {n}"),
        location: Some("Berlin".into()),
        apply_url: url.clone(),
        url: url.clone(),
        source: JobSource::Greenhouse,
        posted_at: None,
        salary: None,
        extracted: ExtractedJob {
            seniority: "senior".into(),
            location: Some("Berlin".into()),
            work_arrangement: WorkArrangement::Hybrid,
            required_skills: vec!["Rust".into(), "Kafka".into()],
            preferred_skills: Vec::new(),
            min_years_experience: Some(5),
            summary: "Builds the fleet's event pipeline.".into(),
        },
    };
    let posting = RawJob {
        source: JobSource::Greenhouse,
        external_id: None,
        company: job.company.clone(),
        title: job.title.clone(),
        location: job.location.clone(),
        remote: None,
        department: None,
        employment_type: None,
        url,
        apply_url: None,
        description: "You will own our event pipeline.\n\nExperience with Kafka or similar event-streaming systems.\nProduction Rust."
            .into(),
        posted_at: None,
        salary: None,
    };
    (job, posting)
}

fn score(id: &str, score: u8, job_evidence: &[&str]) -> Value {
    json!({
        "job_id": id,
        "score": score,
        "reason": "Rust and Kafka, which she has.",
        "job_evidence": job_evidence,
        "profile_evidence": ["8 years in Rust"],
    })
}

#[tokio::test]
async fn score_evidence_must_quote_the_job_and_is_asked_again_once() {
    let pairs: Vec<(Job, RawJob)> = (1..=5).map(job_and_posting).collect();
    let ids: Vec<String> = pairs.iter().map(|(j, _)| j.id.clone()).collect();
    let (id1, id2, id3, id4, id5) = (
        ids[0].clone(),
        ids[1].clone(),
        ids[2].clone(),
        ids[3].clone(),
        ids[4].clone(),
    );
    let model = ScriptedModel::from_fn(move |request| {
        let prompt = prompt_of(request);
        let scores = if prompt.contains("A previous answer cited job evidence") {
            vec![
                // Fixed: quotes the posting (text the scorer was not shown) and the job.
                score(
                    &id1,
                    90,
                    &[
                        "experience with Kafka or similar event-streaming systems",
                        "production rust",
                    ],
                ),
                // Still one made-up quote: dropped, the score kept.
                score(&id2, 70, &["Production Rust", "10 years of Rust"]),
                // Still nothing quoted: a fit without evidence is refused.
                score(&id3, 80, &["loves Rust"]),
                // A low score keeps its score; its evidence is dropped.
                score(&id4, 30, &["not a match"]),
                // Not asked about: ignored.
                score(&id5, 5, &[]),
            ]
        } else {
            vec![
                score(&id1, 90, &["5 years of Kafka"]),
                score(&id2, 70, &["Production Rust", "10 years of Rust"]),
                score(&id3, 80, &["loves Rust"]),
                score(&id4, 30, &["not a match"]),
                // Quoted from what the scorer was shown: kept as it is.
                score(
                    &id5,
                    60,
                    &["builds the fleet's event pipeline", "requires: Rust, Kafka"],
                ),
            ]
        };
        Ok(responses::tool_call(
            "t",
            "BatchScoreResult",
            json!({ "scores": scores }),
        ))
    });
    let rig = Rig::new(&model);
    let mut state = rig.state();
    state.profile = Some(profile());
    state.preferences = Some(serde_json::from_value(prefs_answer(&[], &["Berlin"], &[])).unwrap());
    state.jobs = pairs.iter().map(|(j, _)| j.clone()).collect();
    state.raw_jobs = pairs.iter().map(|(_, r)| r.clone()).collect();
    steps::score_jobs::run(&mut state, &rig.env())
        .await
        .unwrap();

    // One batch, asked again once for the four jobs with unquoted evidence.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let again = prompt_of(&requests[1]);
    assert!(again.contains("\"5 years of Kafka\""), "{again}");
    assert!(!again.contains(&format!("- id: {}", ids[4])), "{again}");
    assert_eq!(again.matches("\n- id: ").count(), 4, "{again}");

    let kept: Vec<(&str, u8, Vec<String>)> = state
        .scored
        .iter()
        .map(|s| (s.job.url.as_str(), s.score, s.job_evidence.clone()))
        .collect();
    assert_eq!(
        kept,
        [
            (
                "https://jobs.example/1",
                90,
                vec![
                    "experience with Kafka or similar event-streaming systems".to_owned(),
                    "production rust".to_owned()
                ]
            ),
            (
                "https://jobs.example/2",
                70,
                vec!["Production Rust".to_owned()]
            ),
            (
                "https://jobs.example/5",
                60,
                vec![
                    "builds the fleet's event pipeline".to_owned(),
                    "requires: Rust, Kafka".to_owned()
                ]
            ),
            ("https://jobs.example/4", 30, Vec::new()),
        ]
    );

    let issues: Vec<(&str, &str)> = state
        .issues
        .iter()
        .map(|i| (i.job_url.as_deref().unwrap(), i.message.as_str()))
        .collect();
    let [(url2, dropped), (url3, refused), (url4, low)] = &issues[..] else {
        panic!("{issues:#?}")
    };
    assert_eq!(*url2, "https://jobs.example/2");
    assert!(
        dropped.contains("dropped") && dropped.contains("\"10 years of Rust\""),
        "{dropped}"
    );
    assert_eq!(*url3, "https://jobs.example/3");
    assert!(
        refused.contains("none of its evidence is in the job's text")
            && refused.contains("\"loves Rust\""),
        "{refused}"
    );
    assert_eq!(*url4, "https://jobs.example/4");
    assert!(low.contains("the score of 30 is kept"), "{low}");
    assert!(
        state
            .issues
            .iter()
            .all(|i| i.kind == "validation" && !i.fatal)
    );
}
