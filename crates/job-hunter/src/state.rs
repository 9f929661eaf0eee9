//! The state threaded through the pipeline and saved in every checkpoint.

use std::collections::BTreeMap;
use std::path::PathBuf;

use agent_llm::{PricingTable, Usage};
use agent_runtime::unpriced_token_limit;
use chrono::Utc;
use job_capabilities::RawJob;
use serde::{Deserialize, Serialize};

use crate::exclusions::ExclusionReport;
use crate::models::{
    CandidateProfile, Company, CompanyReport, Job, JobCounts, RunIssue, ScoredJob,
    SearchPreferences,
};

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

/// Model spending so far, kept in the state so a resumed run keeps counting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    /// Model calls made (every attempt counts).
    pub calls: u64,
    /// Model calls made per step.
    pub calls_by_step: BTreeMap<String, u64>,
    /// Tokens per model id.
    pub usage_by_model: BTreeMap<String, Usage>,
    /// USD of the calls whose model has a price.
    pub cost_usd: f64,
}

impl Spend {
    /// Tokens of all models together.
    pub fn usage(&self) -> Usage {
        self.usage_by_model.values().copied().sum()
    }

    /// Input plus output tokens (cache reads and writes included in input).
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens() + self.usage().output_tokens
    }

    /// Input tokens, cached ones included: uncached input plus cache reads plus cache
    /// writes.
    pub fn input_tokens(&self) -> u64 {
        let u = self.usage();
        u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
    }

    /// The models that answered but have no price in `pricing`: their calls are not in
    /// `cost_usd`, and the cost limit stood as a token limit for them.
    pub fn unpriced_models(&self, pricing: &PricingTable) -> Vec<String> {
        self.usage_by_model
            .keys()
            .filter(|model| pricing.price(model).is_none())
            .cloned()
            .collect()
    }

    /// One line on tokens and cost: `tokens: N (I in, O out); cost: $C (limit $L)`, or,
    /// when a model has no price, `cost: unknown (no price for M; the $L limit stands as
    /// T tokens)`.
    ///
    /// ```
    /// use agent_llm::{PricingTable, Usage};
    /// use job_hunter::state::Spend;
    /// let mut spend = Spend::default();
    /// spend.usage_by_model.insert(
    ///     "my-local-model".into(),
    ///     Usage { input_tokens: 100, output_tokens: 20, cache_read_input_tokens: 50, ..Usage::default() },
    /// );
    /// assert_eq!(
    ///     spend.describe(&PricingTable::default(), 5.0),
    ///     "tokens: 170 (150 in, 20 out); cost: unknown (no price for my-local-model; the $5.00 limit stands as 5000000 tokens)"
    /// );
    /// ```
    pub fn describe(&self, pricing: &PricingTable, max_usd: f64) -> String {
        let tokens = format!(
            "tokens: {} ({} in, {} out)",
            self.total_tokens(),
            self.input_tokens(),
            self.usage().output_tokens
        );
        let unpriced = self.unpriced_models(pricing);
        if unpriced.is_empty() {
            return format!(
                "{tokens}; cost: ${:.4} (limit ${max_usd:.2})",
                self.cost_usd
            );
        }
        let priced = if self.cost_usd > 0.0 {
            format!("; ${:.4} for the priced models", self.cost_usd)
        } else {
            String::new()
        };
        format!(
            "{tokens}; cost: unknown (no price for {}; the ${max_usd:.2} limit stands as {} tokens{priced})",
            unpriced.join(", "),
            unpriced_token_limit(max_usd)
        )
    }
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
    /// Model spending.
    pub spend: Spend,
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
            spend: Spend::default(),
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
