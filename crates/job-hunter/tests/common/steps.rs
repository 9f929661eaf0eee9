//! The hand-built states and the scripted outside world (search, job boards, careers
//! pages) the step tests run on.

use super::rig::Rig;

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use job_capabilities::ats::{AtsBoard, AtsError, AtsKind, JobBoardClient};
use job_capabilities::fetch::{FetchError, FetchedPage, PageSource};
use job_capabilities::http::HttpError;
use job_capabilities::search::{SearchError, SearchHit, WebSearch};
use job_capabilities::{JobSource, PayInterval, RawJob, Salary, SalaryOrigin};
use job_hunter::HuntState;
use job_hunter::models::{
    CandidateProfile, Company, CompanyOrigin, CompanyOutcome, CompanyReport, ExtractedJob, Job,
    JobCounts, RemotePreference, ScoredJob, SearchPreferences, WorkArrangement,
};
use job_hunter::steps::{self};

// ---------------------------------------------------------------------------------------
// Helpers

/// A fresh state with the profile and preferences already parsed.
pub fn parsed_state(rig: &Rig) -> HuntState {
    let mut state = rig.state();
    state.profile = Some(profile());
    state.preferences = Some(prefs(&[], &[]));
    state
}

pub fn profile() -> CandidateProfile {
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

pub fn prefs(named: &[&str], excluded: &[&str]) -> SearchPreferences {
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

pub fn hit(url: &str) -> SearchHit {
    SearchHit {
        title: format!("page at {url}"),
        url: url.into(),
        snippet: String::new(),
    }
}

pub fn board(kind: AtsKind, token: &str) -> AtsBoard {
    AtsBoard {
        kind,
        token: token.into(),
        workday: None,
    }
}

pub fn company(name: &str, careers_url: Option<&str>, board: Option<AtsBoard>) -> Company {
    Company {
        name: name.into(),
        origin: CompanyOrigin::Named,
        domain: None,
        careers_url: careers_url.map(str::to_owned),
        board,
    }
}

pub fn raw_job(company: &str, title: &str, url: &str) -> RawJob {
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

pub fn scored(n: u32, company: &str, title: &str, score: u8, reason: &str) -> ScoredJob {
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
pub fn ranked_state(rig: &Rig) -> HuntState {
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
pub struct ScriptedSearch {
    pub hits: HashMap<String, Result<Vec<SearchHit>, SearchError>>,
    pub queries: Mutex<Vec<String>>,
}

impl ScriptedSearch {
    pub fn queries(&self) -> Vec<String> {
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
pub struct ScriptedBoards {
    pub asked: Mutex<Vec<String>>,
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
pub struct ScriptedPages;

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
