//! The steps that talk to the outside one at a time (find_companies, scrape_jobs,
//! aggregate, notify), each run on a hand-built state against scripted search, job
//! boards, careers pages and model.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::rig::Rig;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_llm::LlmError;
use agent_llm::testing::{ScriptedModel, responses};
use async_trait::async_trait;
use calamine::{Reader, Xlsx, open_workbook};
use chrono::{DateTime, Utc};
use job_capabilities::ats::{AtsBoard, AtsError, AtsKind, JobBoardClient};
use job_capabilities::fetch::{FetchError, FetchedPage, PageSource};
use job_capabilities::http::HttpError;
use job_capabilities::search::{SearchError, SearchHit, WebSearch};
use job_capabilities::{JobSource, PayInterval, RawJob, Salary, SalaryOrigin};
use job_hunter::models::{
    CandidateProfile, Company, CompanyOrigin, CompanyOutcome, CompanyReport, ExtractedJob, Job,
    JobCounts, RemotePreference, ScoredJob, SearchPreferences, WorkArrangement,
};
use job_hunter::steps::{self};
use job_hunter::{HuntEvent, HuntState};
use serde_json::json;

// ---------------------------------------------------------------------------------------
// Helpers

/// A fresh state with the profile and preferences already parsed.
fn parsed_state(rig: &Rig) -> HuntState {
    let mut state = rig.state();
    state.profile = Some(profile());
    state.preferences = Some(prefs(&[], &[]));
    state
}

fn profile() -> CandidateProfile {
    CandidateProfile {
        name: "Maya Okafor".into(),
        email: Some("maya.okafor@mail.example".into()),
        current_title: Some("Senior Platform Engineer".into()),
        years_of_experience: Some(8),
        skills: vec!["Rust".into(), "Go".into(), "Kubernetes".into()],
        experience: vec!["Senior Platform Engineer, Fernhill Logistics, 2023-present".into()],
        education: vec!["BSc Computer Science".into()],
        location: Some("Berlin, Germany".into()),
        summary: "Backend and platform engineer with 8 years in Rust and Go.".into(),
    }
}

fn prefs(named: &[&str], excluded: &[&str]) -> SearchPreferences {
    SearchPreferences {
        target_titles: vec!["Senior Backend Engineer".into()],
        target_companies: named.iter().map(|&c| c.to_owned()).collect(),
        industries: vec!["robotics".into()],
        locations: vec!["Berlin".into()],
        remote: RemotePreference::Any,
        min_salary: None,
        salary_currency: None,
        excluded_companies: excluded.iter().map(|&c| c.to_owned()).collect(),
        excluded_industries: Vec::new(),
    }
}

fn hit(url: &str) -> SearchHit {
    SearchHit {
        title: format!("page at {url}"),
        url: url.into(),
        snippet: String::new(),
    }
}

fn board(kind: AtsKind, token: &str) -> AtsBoard {
    AtsBoard {
        kind,
        token: token.into(),
        workday: None,
    }
}

fn company(name: &str, careers_url: Option<&str>, board: Option<AtsBoard>) -> Company {
    Company {
        name: name.into(),
        origin: CompanyOrigin::Named,
        domain: None,
        careers_url: careers_url.map(str::to_owned),
        board,
    }
}

fn raw_job(company: &str, title: &str, url: &str) -> RawJob {
    RawJob {
        source: JobSource::Greenhouse,
        external_id: None,
        company: company.into(),
        title: title.into(),
        location: Some("Berlin".into()),
        remote: None,
        department: None,
        employment_type: None,
        url: url.into(),
        apply_url: None,
        description: String::new(),
        posted_at: None,
        salary: None,
    }
}

fn scored(n: u32, company: &str, title: &str, score: u8, reason: &str) -> ScoredJob {
    let url = format!("https://jobs.example/{n}");
    ScoredJob {
        job: Job {
            id: steps::process_jobs::job_id(&url),
            company: company.into(),
            title: title.into(),
            location: Some("Berlin".into()),
            apply_url: format!("{url}/apply"),
            url,
            source: JobSource::Greenhouse,
            posted_at: Some(
                DateTime::parse_from_rfc3339("2025-05-01T00:00:00Z")
                    .unwrap()
                    .with_timezone(&Utc),
            ),
            salary: None,
            extracted: ExtractedJob {
                title: title.into(),
                seniority: "senior".into(),
                location: None,
                work_arrangement: WorkArrangement::Hybrid,
                required_skills: vec!["Rust".into()],
                preferred_skills: Vec::new(),
                min_years_experience: None,
                summary: format!("{title} at {company}."),
            },
        },
        score,
        reason: reason.into(),
        job_evidence: vec!["requires Rust".into()],
        profile_evidence: vec!["8 years in Rust".into()],
    }
}

/// A ranked result: three scored jobs (the first paid by the hour) and four company
/// outcomes.
fn ranked_state(rig: &Rig) -> HuntState {
    let mut state = parsed_state(rig);
    let mut best = scored(
        1,
        "Northwind Robotics",
        "Staff Rust Engineer",
        91,
        "Rust platform work at her level.",
    );
    best.job.salary = Some(Salary {
        min: Some(50.0),
        max: Some(60.0),
        currency: "EUR".into(),
        interval: PayInterval::Hour,
        origin: SalaryOrigin::Description,
    });
    state.scored = vec![
        best,
        scored(
            2,
            "Quill Labs",
            "Platform Engineer",
            74,
            "Kubernetes platform in Berlin.",
        ),
        scored(
            3,
            "Quill Labs",
            "Data Analyst",
            20,
            "An analyst role, not engineering.",
        ),
    ];
    state.company_reports = vec![
        CompanyReport {
            company: "Northwind Robotics".into(),
            outcome: CompanyOutcome::JobsFetched {
                count: 1,
                source: JobSource::Greenhouse,
            },
            jobs: JobCounts {
                fetched: 1,
                kept: 1,
                ..JobCounts::default()
            },
            probes: Vec::new(),
        },
        CompanyReport {
            company: "Quill Labs".into(),
            outcome: CompanyOutcome::JobsFetched {
                count: 3,
                source: JobSource::Lever,
            },
            jobs: JobCounts {
                fetched: 3,
                off_target: 1,
                kept: 2,
                ..JobCounts::default()
            },
            probes: Vec::new(),
        },
        CompanyReport {
            company: "Old Mill Analytics".into(),
            outcome: CompanyOutcome::UnsupportedAts {
                careers_url: "https://oldmill.example/careers".into(),
            },
            jobs: JobCounts::default(),
            probes: Vec::new(),
        },
        CompanyReport {
            company: "Stonewall Security".into(),
            outcome: CompanyOutcome::Blocked {
                reason: "greenhouse board: blocked by boards-api.greenhouse.io: HTTP 403".into(),
            },
            jobs: JobCounts::default(),
            probes: Vec::new(),
        },
    ];
    state
}

/// Search hits per company (the query is `<company> careers jobs`); queries recorded.
#[derive(Default)]
struct ScriptedSearch {
    hits: HashMap<String, Result<Vec<SearchHit>, SearchError>>,
    queries: Mutex<Vec<String>>,
}

impl ScriptedSearch {
    fn queries(&self) -> Vec<String> {
        let mut queries = self.queries.lock().unwrap().clone();
        queries.sort();
        queries
    }
}

#[async_trait]
impl WebSearch for ScriptedSearch {
    fn provider(&self) -> &str {
        "scripted"
    }

    async fn search(&self, query: &str, count: usize) -> Result<Vec<SearchHit>, SearchError> {
        self.queries.lock().unwrap().push(query.to_owned());
        let company = query.strip_suffix(" careers jobs").unwrap_or(query);
        let hits = self.hits.get(company).cloned().unwrap_or(Ok(Vec::new()))?;
        Ok(hits.into_iter().take(count).collect())
    }
}

/// Job boards by token: `northwind` (5 jobs), `acme` (3 jobs, one a duplicate),
/// `stonewall` (blocked), `broken` (unreadable); any other does not exist.
#[derive(Default)]
struct ScriptedBoards {
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl JobBoardClient for ScriptedBoards {
    async fn fetch_jobs(&self, board: &AtsBoard, company: &str) -> Result<Vec<RawJob>, AtsError> {
        self.asked.lock().unwrap().push(board.token.clone());
        let base = format!("https://boards.greenhouse.io/{}/jobs", board.token);
        match board.token.as_str() {
            "northwind" => Ok((1..=5)
                .map(|n| raw_job(company, &format!("Engineer {n}"), &format!("{base}/{n}")))
                .collect()),
            "acme" => Ok(vec![
                raw_job(company, "Backend Engineer", &format!("{base}/1")),
                raw_job(company, "Platform Engineer", &format!("{base}/2")),
                raw_job(company, "backend  engineer", &format!("{base}/3")),
            ]),
            "stonewall" => Err(AtsError::Http(HttpError::Blocked {
                host: "boards-api.greenhouse.io".into(),
                status: 403,
                retry_after: None,
            })),
            "broken" => Err(AtsError::Parse {
                kind: board.kind,
                message: "at `postings[0]`: missing field `text`".into(),
            }),
            _ => Err(AtsError::BoardNotFound {
                kind: board.kind,
                token: board.token.clone(),
            }),
        }
    }
}

/// Careers pages: Acme's embeds its Greenhouse board, Old Mill's has none, Fortress
/// blocks us; anything else is a 404.
struct ScriptedPages;

#[async_trait]
impl PageSource for ScriptedPages {
    async fn fetch_page(&self, url: &str) -> Result<FetchedPage, FetchError> {
        match url {
            "https://acme.example/careers" => Ok(FetchedPage::from_html(
                url,
                r#"<html><head><title>Careers at Acme</title></head><body>
<div id="grnhse_app"></div>
<script src="https://boards.greenhouse.io/embed/job_board/js?for=acme"></script>
</body></html>"#,
            )),
            "https://oldmill.example/careers" => Ok(FetchedPage::from_html(
                url,
                r#"<html><body><h1>Jobs</h1><a href="/jobs/analyst">Analyst</a></body></html>"#,
            )),
            "https://fortress.example/careers" => Err(FetchError::Http(HttpError::Blocked {
                host: "fortress.example".into(),
                status: 403,
                retry_after: None,
            })),
            _ => Err(FetchError::Http(HttpError::Status {
                url: url.into(),
                status: 404,
            })),
        }
    }
}

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

// ---------------------------------------------------------------------------------------
// 7. aggregate

#[tokio::test]
async fn aggregate_writes_the_ranked_jobs_and_every_company_outcome() {
    let rig = Rig::new(&ScriptedModel::new(Vec::new()));
    let mut state = ranked_state(&rig);
    steps::aggregate::run(&mut state, &rig.env()).await.unwrap();

    let dir = rig.output_dir();
    assert_eq!(
        state.output_files,
        [
            dir.join("steps-jobs.csv"),
            dir.join("steps-jobs.xlsx"),
            dir.join("steps-companies.csv"),
        ]
    );
    assert!(state.output_files.iter().all(|f| f.is_file()));

    let mut jobs = csv::Reader::from_path(&state.output_files[0]).unwrap();
    let headers = jobs.headers().unwrap().clone();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (rank, score, title, apply) = (
        column("Rank"),
        column("Score"),
        column("Title"),
        column("Apply"),
    );
    let (annual_min, annual_max) = (column("Salary min (annual)"), column("Salary max (annual)"));
    let rows: Vec<csv::StringRecord> = jobs.records().map(Result::unwrap).collect();
    let cells: Vec<[&str; 4]> = rows
        .iter()
        .map(|r| [&r[rank], &r[score], &r[title], &r[apply]])
        .collect();
    assert_eq!(
        cells,
        [
            [
                "1",
                "91",
                "Staff Rust Engineer",
                "https://jobs.example/1/apply"
            ],
            [
                "2",
                "74",
                "Platform Engineer",
                "https://jobs.example/2/apply"
            ],
            ["3", "20", "Data Analyst", "https://jobs.example/3/apply"],
        ]
    );
    // Hourly pay is shown per year.
    assert_eq!(
        (&rows[0][annual_min], &rows[0][annual_max]),
        ("104000", "124800")
    );
    assert_eq!(&rows[1][annual_min], "");

    let mut workbook: Xlsx<_> = open_workbook(&state.output_files[1]).unwrap();
    let sheet = workbook.worksheet_range("Jobs").unwrap();
    assert_eq!(sheet.height(), 1 + state.scored.len());

    let mut companies = csv::Reader::from_path(&state.output_files[2]).unwrap();
    assert_eq!(
        companies.headers().unwrap(),
        vec!["Company", "Outcome", "Fetched", "Kept", "Cut", "Details"]
    );
    let rows: Vec<Vec<String>> = companies
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect();
    let row = |cells: &[&str]| cells.iter().map(|c| (*c).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        rows,
        [
            row(&[
                "Northwind Robotics",
                "jobs_fetched",
                "1",
                "1",
                "0",
                "1 jobs (greenhouse)"
            ]),
            row(&[
                "Quill Labs",
                "jobs_fetched",
                "3",
                "2",
                "1",
                "3 jobs (lever); cut: 1 off-target titles"
            ]),
            row(&[
                "Old Mill Analytics",
                "unsupported_ats",
                "0",
                "0",
                "0",
                "unsupported job board at https://oldmill.example/careers"
            ]),
            row(&[
                "Stonewall Security",
                "blocked",
                "0",
                "0",
                "0",
                "blocked: greenhouse board: blocked by boards-api.greenhouse.io: HTTP 403"
            ]),
        ]
    );
}

// ---------------------------------------------------------------------------------------
// 8. notify

/// A ranked state with its output files written.
fn notified_state(rig: &Rig) -> HuntState {
    let mut state = ranked_state(rig);
    state.output_files =
        steps::aggregate::write_outputs(&state, &state.config.output_dir.clone()).unwrap();
    state
}

#[tokio::test]
async fn notify_writes_one_eml_once_per_run_to_the_candidate() {
    let rig = Rig::new(&ScriptedModel::new(Vec::new()));
    let fresh = notified_state(&rig);
    let mut state = fresh.clone();
    steps::notify::run(&mut state, &rig.env()).await.unwrap();

    let emls = common::eml_files(&rig.output_dir());
    let [eml] = &emls[..] else { panic!("{emls:?}") };
    let message = std::fs::read_to_string(eml).unwrap();
    assert!(
        message.contains("To: maya.okafor@mail.example"),
        "{message}"
    );
    assert!(message.contains("From: job-hunter@localhost"), "{message}");
    for file in &state.output_files {
        let name = file.file_name().unwrap().to_string_lossy();
        assert!(message.contains(&format!("filename=\"{name}\"")), "{name}");
    }
    let notification = state.notification.clone().unwrap();
    assert_eq!(notification.to, ["maya.okafor@mail.example"]);
    assert_eq!(notification.eml_path.as_ref(), Some(eml));
    assert_eq!(notification.transport, eml.display().to_string());
    assert!(state.issues.is_empty(), "{:#?}", state.issues);

    // The same run again (same journal), even with another address on the resume:
    // nothing new is written, and the recorded delivery is reported.
    let mut again = fresh;
    again.profile.as_mut().unwrap().email = Some("someone.else@mail.example".into());
    steps::notify::run(&mut again, &rig.env()).await.unwrap();
    assert_eq!(common::eml_files(&rig.output_dir()), emls);
    assert_eq!(again.notification, state.notification);
}

#[tokio::test]
async fn notify_writes_the_eml_when_the_smtp_server_is_down_and_says_so() {
    let mut rig = Rig::new(&ScriptedModel::new(Vec::new()));
    // Nothing listens on port 1.
    let dead = job_capabilities::mail::SmtpMailer::from_url("smtp://127.0.0.1:1").unwrap();
    rig.deps.mailer = Some(Arc::new(dead));
    let mut state = notified_state(&rig);
    steps::notify::run(&mut state, &rig.env()).await.unwrap();

    let [issue] = &state.issues[..] else {
        panic!("{:#?}", state.issues)
    };
    assert_eq!(
        (issue.step.as_str(), issue.kind.as_str()),
        ("notify", "mail")
    );
    assert!(
        issue.message.contains("smtp://127.0.0.1:1"),
        "{}",
        issue.message
    );
    assert!(issue.message.contains(".eml"), "{}", issue.message);
    let emls = common::eml_files(&rig.output_dir());
    assert_eq!(emls.len(), 1);
    let notification = state.notification.unwrap();
    assert_eq!(notification.eml_path.as_ref(), Some(&emls[0]));
    assert_eq!(notification.to, ["maya.okafor@mail.example"]);
}

#[tokio::test]
async fn notify_prefers_the_configured_recipient() {
    let rig = Rig::with(&ScriptedModel::new(Vec::new()), |s| {
        s.email_to = Some("hunt@example.org".into());
    });
    let mut state = notified_state(&rig);
    steps::notify::run(&mut state, &rig.env()).await.unwrap();

    let emls = common::eml_files(&rig.output_dir());
    assert_eq!(emls.len(), 1);
    let message = std::fs::read_to_string(&emls[0]).unwrap();
    assert!(message.contains("To: hunt@example.org"), "{message}");
    assert!(!message.contains("maya.okafor@mail.example"), "{message}");
    assert_eq!(state.notification.unwrap().to, ["hunt@example.org"]);
}

#[tokio::test]
async fn notify_without_any_recipient_records_an_issue() {
    let rig = Rig::new(&ScriptedModel::new(Vec::new()));
    let mut state = notified_state(&rig);
    state.profile.as_mut().unwrap().email = None;
    steps::notify::run(&mut state, &rig.env()).await.unwrap();

    let [issue] = &state.issues[..] else {
        panic!("{:#?}", state.issues)
    };
    assert_eq!(
        (issue.step.as_str(), issue.kind.as_str()),
        ("notify", "mail")
    );
    assert!(issue.message.contains("no recipient"), "{}", issue.message);
    assert!(!issue.fatal);
    // Still written, to the sender.
    assert_eq!(common::eml_files(&rig.output_dir()).len(), 1);
    assert_eq!(
        state.notification.unwrap().to,
        [rig.settings.email_from.as_str()]
    );
}

#[tokio::test]
async fn notify_compose_lists_the_top_jobs_and_every_company() {
    let rig = Rig::new(&ScriptedModel::new(Vec::new()));
    let state = notified_state(&rig);
    let email =
        steps::notify::compose(&state, "from@example.org", vec!["to@example.org".into()], 2);

    assert_eq!(
        email.subject,
        "Job hunt steps: 3 jobs scored, best Staff Rust Engineer at Northwind Robotics (91)"
    );
    let body = &email.text_body;
    assert!(body.contains("Top 2:"), "{body}");
    for (rank, s) in state.scored.iter().take(2).enumerate() {
        let entry = format!(
            "{}. [{}] {} at {} (Berlin)\n   {}\n   Apply: {}",
            rank + 1,
            s.score,
            s.job.title,
            s.job.company,
            s.reason,
            s.job.apply_url
        );
        assert!(body.contains(&entry), "{entry}\n---\n{body}");
    }
    assert!(!body.contains("Data Analyst"), "{body}");
    for report in &state.company_reports {
        let line = format!("- {}: {}", report.company, report.outcome.describe());
        assert!(body.contains(&line), "{line}\n---\n{body}");
    }
    let attached: Vec<&str> = email
        .attachments
        .iter()
        .map(|a| a.filename.as_str())
        .collect();
    assert_eq!(
        attached,
        ["steps-jobs.csv", "steps-jobs.xlsx", "steps-companies.csv"]
    );
    assert_eq!(email.to, ["to@example.org"]);
}
