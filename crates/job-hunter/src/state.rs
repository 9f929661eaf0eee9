//! The state threaded through the pipeline and saved in every checkpoint.

use std::path::PathBuf;

use agent_runtime::graph::NodeContext;
use chrono::Utc;
use job_capabilities::RawJob;
use serde::{Deserialize, Serialize};

use crate::events::HuntEvent;
use crate::exclusions::ExclusionReport;
use crate::models::{
    CandidateProfile, Company, CompanyReport, Job, JobCounts, RunIssue, ScoredJob,
    SearchPreferences,
};

/// The context a step's node runs in: the run (id, journal, cancellation) and the run's
/// session, which holds this state, the model and the meter, and numbers the events.
pub type HuntNode = NodeContext<HuntState, HuntEvent>;

/// What a run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// The run's id: the checkpoint key, and part of the output file names.
    pub run_id: String,
    /// The resume to read (PDF, DOCX or TXT).
    pub resume_path: PathBuf,
    /// The candidate's preferences, in their own words.
    pub preferences: String,
    /// Where the CSV, XLSX and `.eml` go.
    pub output_dir: PathBuf,
}

/// Where the summary went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    /// `smtp://host:port` or the `.eml` file.
    pub transport: String,
    /// The `.eml` file, when the message was written rather than sent.
    pub eml_path: Option<PathBuf>,
    /// The message id the server or writer gave.
    pub message_id: Option<String>,
    /// The recipients.
    pub to: Vec<String>,
}

/// Everything a run has gathered. Serialized into every checkpoint; each step adds its
/// part and leaves the rest alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HuntState {
    /// The request.
    pub config: RunConfig,
    /// The resume's text (`parse_resume`).
    pub resume_text: Option<String>,
    /// The candidate (`parse_resume`).
    pub profile: Option<CandidateProfile>,
    /// The search (`parse_prefs`).
    pub preferences: Option<SearchPreferences>,
    /// Companies to search (`find_companies`).
    pub companies: Vec<Company>,
    /// How finding companies went, e.g. that web search is not configured.
    pub search_note: Option<String>,
    /// One outcome per company (`scrape_jobs`).
    pub company_reports: Vec<CompanyReport>,
    /// Each of the candidate's exclusions and what it removed (`parse_prefs` on).
    #[serde(default)]
    pub exclusions: Vec<ExclusionReport>,
    /// Postings kept for scoring: fetched, de-duplicated, filtered by the preferences
    /// and the limits, most relevant first within each company (`scrape_jobs`).
    pub raw_jobs: Vec<RawJob>,
    /// What became of the postings fetched, all companies together; each company's
    /// own counts are in its report.
    #[serde(default)]
    pub job_counts: JobCounts,
    /// Postings normalized (`process_jobs`).
    pub jobs: Vec<Job>,
    /// Jobs with scores, best first (`score_jobs`).
    pub scored: Vec<ScoredJob>,
    /// Files written (`aggregate`).
    pub output_files: Vec<PathBuf>,
    /// Where the summary went (`notify`).
    pub notification: Option<Notification>,
    /// Problems met on the way.
    pub issues: Vec<RunIssue>,
}

impl HuntState {
    /// A fresh state for `config`.
    pub fn new(config: RunConfig) -> Self {
        HuntState {
            config,
            resume_text: None,
            profile: None,
            preferences: None,
            companies: Vec::new(),
            search_note: None,
            company_reports: Vec::new(),
            raw_jobs: Vec::new(),
            exclusions: Vec::new(),
            job_counts: JobCounts::default(),
            jobs: Vec::new(),
            scored: Vec::new(),
            output_files: Vec::new(),
            notification: None,
            issues: Vec::new(),
        }
    }

    /// Records a problem that does not stop the run.
    pub fn record_issue(
        &mut self,
        step: &str,
        kind: &str,
        message: impl Into<String>,
        company: Option<&str>,
        job_url: Option<&str>,
    ) {
        let message = message.into();
        tracing::warn!(step, kind, company, job_url, %message, "non-fatal error");
        self.issues.push(RunIssue {
            step: step.into(),
            kind: kind.into(),
            message,
            company: company.map(str::to_owned),
            job_url: job_url.map(str::to_owned),
            fatal: false,
            at: Utc::now(),
        });
    }
}
