//! find_companies and scrape_jobs, each run on a hand-built state against scripted
//! search, job boards, careers pages and model.
#![cfg(test)]

mod common;

use common::rig::Rig;
use common::steps::*;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use agent_llm::LlmError;
use agent_llm::testing::{ScriptedModel, responses};
use job_capabilities::JobSource;
use job_capabilities::ats::AtsKind;
use job_capabilities::search::SearchError;
use job_hunter::HuntEvent;
use job_hunter::models::{CompanyOrigin, CompanyOutcome, JobCounts};
use job_hunter::steps::{self};
use serde_json::json;

// ---------------------------------------------------------------------------------------
// 3. find_companies

fn suggestion(name: &str) -> serde_json::Value {
    json!({"name": name, "domain": null, "reason": format!("{name} hires Rust engineers.")})
}

#[tokio::test]
async fn find_companies_puts_named_first_filters_and_locates_each_company() {
    let model = ScriptedModel::new(vec![responses::tool_call(
        "t1",
        "CompanyCandidateList",
        json!({"companies": [
            suggestion("Lumen Health"),
            suggestion("quill labs"),
            suggestion("CRYPTO CASINO"),
            suggestion("  "),
            suggestion("Tidewater Energy"),
            suggestion("Brightline Data"),
        ]}),
    )]);
    let mut rig = Rig::with(&model, |s| s.max_companies = 4);
    let search = Arc::new(ScriptedSearch {
        hits: HashMap::from([
            (
                "Northwind Robotics".to_owned(),
                Ok(vec![
                    hit("https://www.linkedin.com/company/northwind-robotics/jobs"),
                    hit("https://boards.greenhouse.io/northwind/jobs/123"),
                ]),
            ),
            (
                "Quill Labs".to_owned(),
                Ok(vec![
                    hit("https://www.linkedin.com/company/quill-labs"),
                    hit("https://www.glassdoor.com/jobs/quill-labs-jobs"),
                    hit("https://quill.example/careers"),
                ]),
            ),
            (
                "Lumen Health".to_owned(),
                Ok(vec![
                    hit("https://lumen.example/about"),
                    hit("https://jobs.lever.co/lumen"),
                ]),
            ),
            (
                "Tidewater Energy".to_owned(),
                Ok(vec![hit("https://en.wikipedia.org/wiki/Tidewater_Energy")]),
            ),
        ]),
        ..ScriptedSearch::default()
    });
    rig.deps.search = Some(search.clone());
    let mut state = parsed_state(&rig);
    let wanted = prefs(
        &["Northwind Robotics", "Crypto Casino", "Quill Labs"],
        &["crypto casino"],
    );
    state.preferences = Some(wanted.clone());
    steps::find_companies::run(&mut state, &rig.env())
        .await
        .unwrap();

    // Named first (the excluded one dropped), then suggestions up to the limit.
    let names: Vec<&str> = state.companies.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Northwind Robotics",
            "Quill Labs",
            "Lumen Health",
            "Tidewater Energy"
        ]
    );
    assert_eq!(state.companies[0].origin, CompanyOrigin::Named);
    assert_eq!(state.companies[1].origin, CompanyOrigin::Named);
    assert_eq!(
        state.companies[2].origin,
        CompanyOrigin::Suggested {
            reason: "Lumen Health hires Rust engineers.".into()
        }
    );

    // The model was asked for the two missing, on the quality tier.
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].model.as_deref(),
        Some(rig.settings.sonnet_model.as_str())
    );
    let named = ["Northwind Robotics".to_owned(), "Quill Labs".to_owned()];
    assert_eq!(
        requests[0].messages[0].text(),
        steps::find_companies::prompt(&profile(), &wanted, &named, 2)
    );

    // A job board wins over an earlier irrelevant hit; else a careers page.
    let [northwind, quill, lumen, tidewater] = &state.companies[..] else {
        panic!("{:#?}", state.companies)
    };
    assert_eq!(
        northwind.board,
        Some(board(AtsKind::Greenhouse, "northwind"))
    );
    assert_eq!(
        northwind.careers_url.as_deref(),
        Some("https://boards.greenhouse.io/northwind/jobs/123")
    );
    assert_eq!(quill.board, None);
    assert_eq!(
        quill.careers_url.as_deref(),
        Some("https://quill.example/careers")
    );
    assert_eq!(lumen.board, Some(board(AtsKind::Lever, "lumen")));
    assert_eq!((&tidewater.board, &tidewater.careers_url), (&None, &None));

    // Only the kept companies were searched.
    assert_eq!(
        search.queries(),
        [
            "Lumen Health careers jobs",
            "Northwind Robotics careers jobs",
            "Quill Labs careers jobs",
            "Tidewater Energy careers jobs"
        ]
    );
    assert!(state.issues.is_empty(), "{:#?}", state.issues);
    assert_eq!(state.search_note, None);
}

#[tokio::test]
async fn find_companies_keeps_the_named_companies_when_suggesting_fails() {
    let model = ScriptedModel::from_results([Err(LlmError::Timeout("read timed out".into()))]);
    let mut rig = Rig::new(&model);
    let search = Arc::new(ScriptedSearch {
        hits: HashMap::from([(
            "Northwind Robotics".to_owned(),
            Ok(vec![hit("https://boards.greenhouse.io/northwind")]),
        )]),
        ..ScriptedSearch::default()
    });
    rig.deps.search = Some(search.clone());
    let mut state = parsed_state(&rig);
    state.preferences = Some(prefs(&["Northwind Robotics", "Quill Labs"], &[]));
    steps::find_companies::run(&mut state, &rig.env())
        .await
        .unwrap();

    assert_eq!(model.call_count(), 1);
    let [issue] = &state.issues[..] else {
        panic!("{:#?}", state.issues)
    };
    assert_eq!(
        (issue.step.as_str(), issue.kind.as_str()),
        ("find_companies", "llm")
    );
    assert!(
        issue.message.starts_with("no companies suggested"),
        "{}",
        issue.message
    );
    assert!(!issue.fatal && issue.company.is_none());

    let names: Vec<&str> = state.companies.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["Northwind Robotics", "Quill Labs"]);
    assert_eq!(
        state.companies[0].board,
        Some(board(AtsKind::Greenhouse, "northwind"))
    );
    assert_eq!(
        search.queries(),
        ["Northwind Robotics careers jobs", "Quill Labs careers jobs"]
    );
}

#[tokio::test]
async fn find_companies_says_which_named_companies_the_limit_leaves_out() {
    let model = ScriptedModel::new(Vec::new());
    let mut rig = Rig::with(&model, |s| s.max_companies = 2);
    rig.deps.search = None;
    let mut state = parsed_state(&rig);
    state.preferences = Some(prefs(
        &["Northwind Robotics", "Quill Labs", "Lumen Health"],
        &[],
    ));
    steps::find_companies::run(&mut state, &rig.env())
        .await
        .unwrap();

    let names: Vec<&str> = state.companies.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["Northwind Robotics", "Quill Labs"]);
    let [issue] = &state.issues[..] else {
        panic!("{:#?}", state.issues)
    };
    assert_eq!(issue.kind, "limit");
    assert!(issue.message.contains("Lumen Health"), "{}", issue.message);
    assert_eq!(model.call_count(), 0);
}

#[tokio::test]
async fn find_companies_records_a_failed_search_with_its_company() {
    // Two named companies fill the limit: no suggestions are asked for.
    let model = ScriptedModel::new(Vec::new());
    let mut rig = Rig::with(&model, |s| s.max_companies = 2);
    rig.deps.search = Some(Arc::new(ScriptedSearch {
        hits: HashMap::from([
            (
                "Northwind Robotics".to_owned(),
                Ok(vec![hit("https://northwind.example/careers")]),
            ),
            (
                "Quill Labs".to_owned(),
                Err(SearchError::RateLimited {
                    retry_after: Some(Duration::from_secs(30)),
                }),
            ),
        ]),
        ..ScriptedSearch::default()
    }));
    let mut state = parsed_state(&rig);
    state.preferences = Some(prefs(&["Northwind Robotics", "Quill Labs"], &[]));
    steps::find_companies::run(&mut state, &rig.env())
        .await
        .unwrap();

    assert_eq!(model.call_count(), 0);
    let [issue] = &state.issues[..] else {
        panic!("{:#?}", state.issues)
    };
    assert_eq!(
        (issue.step.as_str(), issue.kind.as_str()),
        ("find_companies", "search")
    );
    assert_eq!(issue.company.as_deref(), Some("Quill Labs"));
    assert!(
        issue.message.contains("search failed") && issue.message.contains("rate limit"),
        "{}",
        issue.message
    );
    assert_eq!(
        state.companies[0].careers_url.as_deref(),
        Some("https://northwind.example/careers")
    );
    assert_eq!(state.companies[1].name, "Quill Labs");
    assert_eq!(state.companies[1].careers_url, None);
}

// ---------------------------------------------------------------------------------------
// 4. scrape_jobs

#[tokio::test]
async fn scrape_jobs_ends_each_company_in_its_outcome_and_applies_the_limits() {
    // Old Mill's page has no job board; the model reads no job off it.
    let model = ScriptedModel::new(vec![responses::tool_call(
        "t1",
        "CareersPageJobs",
        json!({"jobs": []}),
    )]);
    let mut rig = Rig::with(&model, |s| {
        s.max_jobs_per_company = 3;
        s.max_jobs = 4;
    });
    let boards = Arc::new(ScriptedBoards::default());
    rig.deps.boards = boards.clone();
    rig.deps.pages = Arc::new(ScriptedPages);
    let mut state = parsed_state(&rig);
    state.companies = vec![
        company(
            "Northwind Robotics",
            None,
            Some(board(AtsKind::Greenhouse, "northwind")),
        ),
        company("Acme", Some("https://acme.example/careers"), None),
        company(
            "Old Mill Analytics",
            Some("https://oldmill.example/careers"),
            None,
        ),
        company("Nowhere Systems", None, None),
        company(
            "Stonewall Security",
            None,
            Some(board(AtsKind::Greenhouse, "stonewall")),
        ),
        company("Fortress", Some("https://fortress.example/careers"), None),
        company("Broken Co", None, Some(board(AtsKind::Lever, "broken"))),
        company("Gone Corp", Some("https://gone.example/careers"), None),
    ];
    steps::scrape_jobs::run(&mut state, &rig.env())
        .await
        .unwrap();

    let outcomes: Vec<(&str, &CompanyOutcome)> = state
        .company_reports
        .iter()
        .map(|r| (r.company.as_str(), &r.outcome))
        .collect();
    let [
        ("Northwind Robotics", northwind),
        ("Acme", acme),
        ("Old Mill Analytics", old_mill),
        ("Nowhere Systems", nowhere),
        ("Stonewall Security", stonewall),
        ("Fortress", fortress),
        ("Broken Co", broken),
        ("Gone Corp", gone),
    ] = &outcomes[..]
    else {
        panic!("{outcomes:#?}")
    };
    // Counts are as fetched, before the limits.
    assert_eq!(
        *northwind,
        &CompanyOutcome::JobsFetched {
            count: 5,
            source: JobSource::Greenhouse
        }
    );
    assert_eq!(
        *acme,
        &CompanyOutcome::JobsFetched {
            count: 3,
            source: JobSource::Greenhouse
        }
    );
    assert_eq!(
        *old_mill,
        &CompanyOutcome::UnsupportedAts {
            careers_url: "https://oldmill.example/careers".into()
        }
    );
    assert_eq!(*nowhere, &CompanyOutcome::NoCareersPage);
    let reason = |outcome: &CompanyOutcome| match outcome {
        CompanyOutcome::Blocked { reason } | CompanyOutcome::Error { reason } => reason.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(stonewall.label(), "blocked");
    assert!(reason(stonewall).contains("greenhouse board") && reason(stonewall).contains("403"));
    assert_eq!(fortress.label(), "blocked");
    assert!(reason(fortress).contains("fortress.example"));
    assert_eq!(broken.label(), "error");
    assert!(
        reason(broken).contains("unexpected lever response"),
        "{}",
        reason(broken)
    );
    assert_eq!(gone.label(), "error");
    assert!(reason(gone).contains("careers page") && reason(gone).contains("404"));

    // The embedded board was read, and is now the company's.
    assert_eq!(
        state.companies[1].board,
        Some(board(AtsKind::Greenhouse, "acme"))
    );
    let mut asked = boards.asked.lock().unwrap().clone();
    asked.sort();
    assert_eq!(asked, ["acme", "broken", "northwind", "stonewall"]);

    // Every company reported once as it finished.
    let finished: BTreeMap<String, CompanyOutcome> = rig
        .events
        .events()
        .into_iter()
        .filter_map(|e| match e {
            HuntEvent::CompanyFinished { company, outcome } => Some((company, outcome)),
            _ => None,
        })
        .collect();
    let reported: BTreeMap<String, CompanyOutcome> = state
        .company_reports
        .iter()
        .map(|r| (r.company.clone(), r.outcome.clone()))
        .collect();
    assert_eq!(finished, reported);

    // Blocked and failed companies, and a careers page no job was read off, are non-fatal
    // issues naming the company.
    let issues: Vec<(&str, Option<&str>)> = state
        .issues
        .iter()
        .map(|i| (i.kind.as_str(), i.company.as_deref()))
        .collect();
    assert_eq!(
        issues,
        [
            ("careers_page", Some("Old Mill Analytics")),
            ("blocked", Some("Stonewall Security")),
            ("blocked", Some("Fortress")),
            ("scrape", Some("Broken Co")),
            ("scrape", Some("Gone Corp")),
            ("filter", Some("Northwind Robotics")),
            ("filter", Some("Acme")),
        ]
    );
    assert!(
        state
            .issues
            .iter()
            .all(|i| i.step == "scrape_jobs" && !i.fatal)
    );

    // 3 of Northwind's 5 kept, Acme's duplicate dropped, then 4 in all, the most
    // relevant: Acme's backend role before the others, its platform role over the limit.
    let urls: Vec<&str> = state.raw_jobs.iter().map(|j| j.url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "https://boards.greenhouse.io/northwind/jobs/1",
            "https://boards.greenhouse.io/northwind/jobs/2",
            "https://boards.greenhouse.io/northwind/jobs/3",
            "https://boards.greenhouse.io/acme/jobs/1",
        ]
    );
    let counts = |company: &str| {
        state
            .company_reports
            .iter()
            .find(|r| r.company == company)
            .unwrap()
            .jobs
    };
    assert_eq!(
        counts("Northwind Robotics"),
        JobCounts {
            fetched: 5,
            over_company_limit: 2,
            kept: 3,
            ..JobCounts::default()
        }
    );
    assert_eq!(
        counts("Acme"),
        JobCounts {
            fetched: 3,
            duplicates: 1,
            over_run_limit: 1,
            kept: 1,
            ..JobCounts::default()
        }
    );
    assert_eq!(
        (
            state.job_counts.fetched,
            state.job_counts.kept,
            state.job_counts.cut()
        ),
        (8, 4, 4)
    );
    let northwind = state
        .issues
        .iter()
        .find(|i| i.kind == "filter" && i.company.as_deref() == Some("Northwind Robotics"))
        .unwrap();
    assert_eq!(
        northwind.message,
        "5 fetched, 3 kept, 2 cut (2 over the per-company limit)"
    );
}
