//! The hand-built profile, preferences and jobs the model steps' tests run on, and
//! readers of the prompts they send.

use agent_llm::ChatRequest;
use chrono::{DateTime, Utc};
use job_capabilities::{JobSource, RawJob};
use job_hunter::models::{
    CandidateProfile, ExtractedJob, Job, RemotePreference, SearchPreferences, WorkArrangement,
};
use job_hunter::steps::{self};

// ---------------------------------------------------------------------------------------
// Helpers

pub fn profile() -> CandidateProfile {
    CandidateProfile {
        name: "Maya Okafor".into(),
        email: Some("maya.okafor@mail.example".into()),
        current_title: Some("Senior Platform Engineer".into()),
        years_of_experience: Some(8),
        skills: vec![
            "Rust".into(),
            "Go".into(),
            "Kafka".into(),
            "PostgreSQL".into(),
            "Kubernetes".into(),
        ],
        experience: vec![
            "Senior Platform Engineer, Fernhill Logistics, 2023-present".into(),
            "Senior Backend Engineer, Parcelwise, 2020-2023".into(),
        ],
        education: vec!["BSc Computer Science, TU Berlin".into()],
        location: Some("Berlin, Germany".into()),
        summary: "Backend and platform engineer with 8 years in Rust and Go.".into(),
    }
}

pub fn prefs() -> SearchPreferences {
    SearchPreferences {
        target_titles: vec![
            "Senior Backend Engineer".into(),
            "Staff Platform Engineer".into(),
        ],
        target_companies: vec!["Northwind Robotics".into(), "Quill Labs".into()],
        industries: vec!["robotics".into()],
        locations: vec!["Berlin".into(), "Remote (Europe)".into()],
        remote: RemotePreference::Hybrid,
        min_salary: Some(90_000),
        salary_currency: Some("EUR".into()),
        excluded_companies: vec!["Crypto Casino".into()],
        excluded_industries: Vec::new(),
    }
}

pub fn raw_job(company: &str, title: &str, url: &str, description: &str) -> RawJob {
    RawJob {
        description: description.into(),
        ..super::steps::raw_job(company, title, url)
    }
}

pub fn extracted(summary: &str) -> ExtractedJob {
    ExtractedJob {
        seniority: "senior".into(),
        location: Some("Remote (Europe)".into()),
        work_arrangement: WorkArrangement::Hybrid,
        required_skills: vec!["Rust".into(), "PostgreSQL".into()],
        preferred_skills: vec!["Kafka".into()],
        min_years_experience: Some(5),
        summary: summary.into(),
    }
}

/// Job `n` at `https://jobs.example/n`, posted on `posted` (RFC 3339) if given.
pub fn job(n: u32, company: &str, title: &str, posted: Option<&str>) -> Job {
    let url = format!("https://jobs.example/{n}");
    Job {
        id: steps::process_jobs::job_id(&url),
        company: company.into(),
        title: title.into(),
        location: Some("Berlin".into()),
        apply_url: format!("{url}/apply"),
        url,
        source: JobSource::Greenhouse,
        posted_at: posted.map(|at| {
            DateTime::parse_from_rfc3339(at)
                .unwrap()
                .with_timezone(&Utc)
        }),
        salary: None,
        extracted: extracted(&format!("Job {n}: builds backend services in Rust.")),
    }
}

pub fn prompt_of(request: &ChatRequest) -> String {
    request.messages[0].text()
}

/// The values of the prompt's lines starting with `prefix` (after indentation).
pub fn lines_after(prompt: &str, prefix: &str) -> Vec<String> {
    prompt
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix(prefix))
        .map(str::to_owned)
        .collect()
}
