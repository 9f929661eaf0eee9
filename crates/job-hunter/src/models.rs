//! What the pipeline's model calls return (typed structured output) and the records it
//! builds from them.

use chrono::{DateTime, Utc};
use job_capabilities::{JobSource, Salary};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The candidate, as read from the resume by the quality model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CandidateProfile {
    /// Full name as written on the resume.
    pub name: String,
    /// Contact email, when the resume gives one.
    pub email: Option<String>,
    /// The candidate's current or most recent title.
    pub current_title: Option<String>,
    /// Total years of professional experience (whole years, from the dated roles).
    pub years_of_experience: Option<u32>,
    /// Skills the resume shows, most prominent first.
    pub skills: Vec<String>,
    /// One line per role: title, company, years.
    pub experience: Vec<String>,
    /// Degrees and schools.
    pub education: Vec<String>,
    /// Where the candidate lives, when stated.
    pub location: Option<String>,
    /// A two-sentence summary of the candidate, from the resume only.
    pub summary: String,
}

/// How the candidate wants to work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RemotePreference {
    /// Only remote roles.
    Remote,
    /// Hybrid or remote.
    Hybrid,
    /// On site.
    Onsite,
    /// Not stated: anything.
    Any,
}

/// The job search the candidate asked for, parsed from free text by the fast model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchPreferences {
    /// Job titles or roles wanted.
    pub target_titles: Vec<String>,
    /// Companies the candidate named (searched first, even without web search).
    pub target_companies: Vec<String>,
    /// Industries or domains of interest.
    pub industries: Vec<String>,
    /// Acceptable locations (cities, regions, countries).
    pub locations: Vec<String>,
    /// Remote, hybrid, on site or any.
    pub remote: RemotePreference,
    /// The lowest acceptable annual base salary, when stated.
    pub min_salary: Option<u64>,
    /// Currency of `min_salary` (ISO 4217), when stated.
    pub salary_currency: Option<String>,
    /// Companies the candidate named to avoid, by name ("not Acme").
    pub excluded_companies: Vec<String>,
    /// Kinds of company or work to avoid: industries, sectors, domains ("no crypto or
    /// gambling" gives `crypto` and `gambling`).
    #[serde(default)]
    pub excluded_industries: Vec<String>,
}

/// A company worth searching, proposed by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompanyCandidate {
    /// The company's name.
    pub name: String,
    /// Its main website domain, when known (e.g. `example.com`).
    pub domain: Option<String>,
    /// Why it fits the candidate and the preferences, in one sentence.
    pub reason: String,
}

/// The model's list of companies to search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompanyCandidateList {
    /// The companies, best fit first.
    pub companies: Vec<CompanyCandidate>,
}

/// Work arrangement of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkArrangement {
    /// Fully remote.
    Remote,
    /// Part remote.
    Hybrid,
    /// On site.
    Onsite,
    /// The posting does not say.
    Unknown,
}

impl WorkArrangement {
    /// `remote`, `hybrid`, `onsite` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkArrangement::Remote => "remote",
            WorkArrangement::Hybrid => "hybrid",
            WorkArrangement::Onsite => "onsite",
            WorkArrangement::Unknown => "unknown",
        }
    }
}

/// A posting normalized by the fast model. Only what the posting's fields do not already
/// give is asked: its title and place come from the board, and pay is parsed from the
/// posting deterministically, never produced by a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExtractedJob {
    /// Seniority: intern, junior, mid, senior, staff, principal, lead, manager, director or unknown.
    pub seniority: String,
    /// The primary location, as a place name.
    pub location: Option<String>,
    /// Remote, hybrid, on site or unknown.
    pub work_arrangement: WorkArrangement,
    /// Skills the posting requires.
    pub required_skills: Vec<String>,
    /// Skills the posting names as a plus.
    pub preferred_skills: Vec<String>,
    /// The least years of experience asked for, when stated.
    pub min_years_experience: Option<u32>,
    /// Two sentences on what the job is, from the posting only.
    pub summary: String,
}

/// One job's score against the candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JobScore {
    /// The job's id exactly as given in the request.
    pub job_id: String,
    /// Fit from 0 (none) to 100 (ideal).
    pub score: u8,
    /// One or two sentences that cite what in the job and in the profile the score rests on.
    pub reason: String,
    /// Requirements of the job the profile meets (quoted from the job).
    pub job_evidence: Vec<String>,
    /// Facts from the profile that meet them (quoted from the profile).
    pub profile_evidence: Vec<String>,
}

/// The scores of one batch of jobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BatchScoreResult {
    /// One score per job of the batch.
    pub scores: Vec<JobScore>,
}

/// One job opening as the model read it off a careers page without a known job board.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CareersPageJob {
    /// The job's title, copied exactly as the page writes it.
    pub title: String,
    /// The job's own page: one of the URLs of the page's link list, copied exactly.
    pub url: String,
    /// Where the job is, when the page says so next to it.
    pub location: Option<String>,
}

/// The job openings a careers page lists, read by the fast model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CareersPageJobs {
    /// Every job opening the page lists; empty when it lists none.
    pub jobs: Vec<CareersPageJob>,
}

/// How a company's target was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum CompanyOrigin {
    /// Named in the preferences.
    Named,
    /// Proposed by the model, with its reason.
    Suggested {
        /// Why the model proposed it.
        reason: String,
    },
}

/// A company to search, and where its jobs live.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Company {
    /// The company's name.
    pub name: String,
    /// How it came to be searched.
    pub origin: CompanyOrigin,
    /// Its website's domain, when known (`quill.example`): its first label is one of
    /// the board names tried for it.
    #[serde(default)]
    pub domain: Option<String>,
    /// Its careers page, when one was found.
    pub careers_url: Option<String>,
    /// The job board its jobs are on, when detected.
    pub board: Option<job_capabilities::ats::AtsBoard>,
}

/// What searching a company came to. Every company ends in exactly one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum CompanyOutcome {
    /// Jobs were fetched from its board.
    JobsFetched {
        /// Jobs fetched (before de-duplication and limits).
        count: usize,
        /// Where from.
        source: JobSource,
    },
    /// A careers page exists but uses no job board we can read.
    UnsupportedAts {
        /// The careers page.
        careers_url: String,
    },
    /// No careers page or board was found.
    NoCareersPage,
    /// The candidate excluded it; it was not searched.
    Excluded {
        /// The exclusion that ruled it out (`industry "crypto"`).
        by: String,
    },
    /// The site or board refused us (403/429).
    Blocked {
        /// What refused and how.
        reason: String,
    },
    /// Something else failed.
    Error {
        /// What went wrong.
        reason: String,
    },
}

impl CompanyOutcome {
    /// A short label: `jobs_fetched`, `unsupported_ats`, `no_careers_page`, `excluded`,
    /// `blocked`, `error`.
    pub fn label(&self) -> &'static str {
        match self {
            CompanyOutcome::JobsFetched { .. } => "jobs_fetched",
            CompanyOutcome::UnsupportedAts { .. } => "unsupported_ats",
            CompanyOutcome::NoCareersPage => "no_careers_page",
            CompanyOutcome::Excluded { .. } => "excluded",
            CompanyOutcome::Blocked { .. } => "blocked",
            CompanyOutcome::Error { .. } => "error",
        }
    }

    /// One line for people: `12 jobs (greenhouse)`, `blocked: ...`.
    pub fn describe(&self) -> String {
        match self {
            CompanyOutcome::JobsFetched { count, source } => format!("{count} jobs ({source})"),
            CompanyOutcome::UnsupportedAts { careers_url } => {
                format!("unsupported job board at {careers_url}")
            }
            CompanyOutcome::NoCareersPage => "no careers page found".into(),
            CompanyOutcome::Excluded { by } => format!("excluded by {by}"),
            CompanyOutcome::Blocked { reason } => format!("blocked: {reason}"),
            CompanyOutcome::Error { reason } => format!("error: {reason}"),
        }
    }
}

/// A company and what searching it came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompanyReport {
    /// The company's name.
    pub company: String,
    /// The outcome.
    pub outcome: CompanyOutcome,
    /// Its jobs: fetched, cut before scoring and why, kept.
    #[serde(default)]
    pub jobs: JobCounts,
    /// Every job board tried under a guessed name, and what it answered.
    #[serde(default)]
    pub probes: Vec<BoardProbe>,
}

/// One job board tried under a guessed name (`greenhouse/quilllabs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoardProbe {
    /// The vendor and the board name: `greenhouse/quilllabs`.
    pub board: String,
    /// What it answered: `12 jobs`, `no such board`, `blocked: ...`, `error: ...`.
    pub outcome: String,
}

/// What became of a company's fetched jobs before scoring. Every job fetched is kept or
/// counted under one reason it was cut.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCounts {
    /// Jobs its board or page listed.
    pub fetched: usize,
    /// The same job listed twice (same title and place, or same address).
    pub duplicates: usize,
    /// Ruled out by the candidate's exclusions.
    pub excluded: usize,
    /// A title that names none of the roles sought.
    pub off_target: usize,
    /// Somewhere the candidate cannot work from.
    pub elsewhere: usize,
    /// Published pay under the minimum asked.
    #[serde(default)]
    pub below_pay: usize,
    /// Beyond `JH_MAX_JOBS_PER_COMPANY`, the least relevant first.
    pub over_company_limit: usize,
    /// Beyond `JH_MAX_JOBS` for the run, the least relevant first.
    pub over_run_limit: usize,
    /// Kept for scoring.
    pub kept: usize,
}

impl JobCounts {
    /// Jobs cut before scoring, for any reason.
    pub fn cut(&self) -> usize {
        self.duplicates
            + self.excluded
            + self.off_target
            + self.elsewhere
            + self.below_pay
            + self.over_company_limit
            + self.over_run_limit
    }

    /// Adds `other` to these counts.
    pub fn add(&mut self, other: &JobCounts) {
        self.fetched += other.fetched;
        self.duplicates += other.duplicates;
        self.excluded += other.excluded;
        self.off_target += other.off_target;
        self.elsewhere += other.elsewhere;
        self.below_pay += other.below_pay;
        self.over_company_limit += other.over_company_limit;
        self.over_run_limit += other.over_run_limit;
        self.kept += other.kept;
    }

    /// The cuts in words, the empty ones left out: `2 duplicates, 5 off-target titles,
    /// 3 over the per-company limit`.
    ///
    /// ```
    /// use job_hunter::models::JobCounts;
    /// let counts = JobCounts { fetched: 40, off_target: 12, over_company_limit: 3, kept: 25, ..JobCounts::default() };
    /// assert_eq!(counts.describe_cuts(), "12 off-target titles, 3 over the per-company limit");
    /// assert_eq!(counts.describe(), "40 fetched, 25 kept, 15 cut (12 off-target titles, 3 over the per-company limit)");
    /// ```
    pub fn describe_cuts(&self) -> String {
        [
            (self.duplicates, "duplicates"),
            (self.excluded, "excluded by the preferences"),
            (self.off_target, "off-target titles"),
            (self.elsewhere, "elsewhere than the places wanted"),
            (self.below_pay, "paying under the minimum asked"),
            (self.over_company_limit, "over the per-company limit"),
            (self.over_run_limit, "over the per-run limit"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect::<Vec<_>>()
        .join(", ")
    }

    /// `40 fetched, 25 kept, 15 cut (...)`, or `40 fetched, 40 kept` with nothing cut.
    pub fn describe(&self) -> String {
        let head = format!("{} fetched, {} kept", self.fetched, self.kept);
        match self.cut() {
            0 => head,
            cut => format!("{head}, {cut} cut ({})", self.describe_cuts()),
        }
    }
}

/// A job after `process_jobs`: the posting's facts, the model's normalization, and pay
/// parsed deterministically.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// Stable id derived from the posting's URL.
    pub id: String,
    /// The hiring company.
    pub company: String,
    /// The title as published.
    pub title: String,
    /// Location as published, else as extracted.
    pub location: Option<String>,
    /// The posting's page.
    pub url: String,
    /// Where to apply (the posting page when the source gives no separate address).
    pub apply_url: String,
    /// The job board it came from.
    pub source: JobSource,
    /// When it was published, when the source says.
    pub posted_at: Option<DateTime<Utc>>,
    /// Pay from structured fields or the description, never from a model.
    pub salary: Option<Salary>,
    /// The model's normalization.
    pub extracted: ExtractedJob,
}

/// A job with its score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredJob {
    /// The job.
    pub job: Job,
    /// Fit from 0 to 100.
    pub score: u8,
    /// Why, citing the job and the profile.
    pub reason: String,
    /// Requirements of the job the profile meets.
    pub job_evidence: Vec<String>,
    /// Facts from the profile that meet them.
    pub profile_evidence: Vec<String>,
}

/// A problem that did not stop the run, or the one that did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunIssue {
    /// The step it happened in.
    pub step: String,
    /// A short class: `llm`, `ats`, `fetch`, `search`, `validation`, `mail`, ...
    pub kind: String,
    /// What happened.
    pub message: String,
    /// The company concerned, if any.
    pub company: Option<String>,
    /// The job concerned (its URL), if any.
    pub job_url: Option<String>,
    /// Whether it stopped the run.
    pub fatal: bool,
    /// When.
    pub at: DateTime<Utc>,
}

impl RunIssue {
    /// One line for people: `[step] Company: message`.
    pub fn describe(&self) -> String {
        match &self.company {
            Some(company) => format!("[{}] {company}: {}", self.step, self.message),
            None => format!("[{}] {}", self.step, self.message),
        }
    }
}
