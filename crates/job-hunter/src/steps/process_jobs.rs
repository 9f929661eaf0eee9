//! Step 5: normalize every posting with the fast model, concurrently; pay is parsed
//! from the posting, never asked of the model.

use agent_runtime::graph::NodeError;
use job_capabilities::RawJob;
use job_capabilities::posting::compact_posting;
use job_capabilities::salary::parse_salary_text;

use super::{StepEnv, clip, extract_each, stable_key};
use crate::llm::{LlmCallError, Quality};
use crate::models::{ExtractedJob, Job};
use crate::relevance::RelevanceFilter;
use crate::state::HuntState;

/// The system prompt of the job normalizer.
pub const SYSTEM: &str = "You normalize job postings. Use only what the posting says; \
when it does not state something, use null, an empty list or `unknown`. Skills are short \
names (\"Rust\", \"PostgreSQL\"), not sentences.";

/// The prompt for one posting: its role, duties and requirements
/// ([`compact_posting`]: the company's pitch, benefits, notices and pay left out). The
/// `URL:` line identifies the posting.
pub fn prompt(job: &RawJob) -> String {
    format!(
        "Normalize this job posting.\n\nCompany: {company}\nTitle: {title}\nLocation: {location}\nURL: {url}\n\n<description>\n{description}\n</description>",
        company = job.company,
        title = job.title,
        location = job.location.as_deref().unwrap_or("(not stated)"),
        url = job.url,
        description = if job.description.trim().is_empty() {
            "(the job board publishes no description for this posting)".to_owned()
        } else {
            clip(&compact_posting(&job.description), 12_000)
        },
    )
}

/// A stable id for a posting: 16 hex digits of the FNV-1a hash of its URL.
pub fn job_id(url: &str) -> String {
    stable_key(url.trim_end_matches('/'))
}

/// Builds the job record from the posting and the model's normalization.
pub fn build_job(raw: &RawJob, extracted: ExtractedJob) -> Job {
    let salary = raw
        .salary
        .clone()
        .or_else(|| parse_salary_text(&raw.description));
    Job {
        id: job_id(&raw.url),
        company: raw.company.clone(),
        title: raw.title.clone(),
        location: raw.location.clone().or_else(|| extracted.location.clone()),
        url: raw.url.clone(),
        apply_url: raw.apply_url.clone().unwrap_or_else(|| raw.url.clone()),
        source: raw.source,
        posted_at: raw.posted_at,
        salary,
        extracted,
    }
}

/// Cuts the jobs that, once read, are on site or hybrid where the candidate cannot work
/// ([`RelevanceFilter::judge_arrangement`]): they are never scored, leave the jobs kept
/// (and `raw_jobs`), and are counted with their company's jobs cut as elsewhere than the
/// places wanted, each with a `filter` issue saying why.
fn rule_out_by_arrangement(state: &mut HuntState) {
    let Some(prefs) = &state.preferences else {
        return;
    };
    let skills = state
        .profile
        .as_ref()
        .map(|p| p.skills.clone())
        .unwrap_or_default();
    let filter = RelevanceFilter::new(prefs, &skills);
    let mut cut = Vec::new();
    state.jobs.retain(|job| {
        match filter.judge_arrangement(job.location.as_deref(), job.extracted.work_arrangement) {
            Some(why) => {
                cut.push((job.company.clone(), job.title.clone(), job.url.clone(), why));
                false
            }
            None => true,
        }
    });
    for (company, title, url, why) in cut {
        state.raw_jobs.retain(|raw| raw.url != url);
        state.job_counts.kept = state.job_counts.kept.saturating_sub(1);
        state.job_counts.elsewhere += 1;
        if let Some(report) = state
            .company_reports
            .iter_mut()
            .find(|r| r.company == company)
        {
            report.jobs.kept = report.jobs.kept.saturating_sub(1);
            report.jobs.elsewhere += 1;
        }
        state.record_issue(
            "process_jobs",
            "filter",
            format!("{title:?} is not scored: {why}"),
            Some(&company),
            Some(&url),
        );
    }
}

/// Normalizes every posting; a posting the model fails on is recorded and left out, a
/// cost limit keeps what was done and ends the run as partial.
pub async fn run(state: &mut HuntState, env: &StepEnv<'_>) -> Result<(), NodeError> {
    let raw_jobs = std::mem::take(&mut state.raw_jobs);
    let total = raw_jobs.len();
    let calls = raw_jobs
        .iter()
        .map(|raw| (job_id(&raw.url), prompt(raw)))
        .collect();
    let results =
        extract_each::<ExtractedJob>(env, "process_jobs", Quality::Fast, SYSTEM, calls).await;
    let mut processed: Vec<(usize, Job)> = Vec::with_capacity(total);
    let mut failures = Vec::new();
    let mut limit = None;
    for (index, result) in results.into_iter().enumerate() {
        match result {
            Ok(extracted) => processed.push((index, build_job(&raw_jobs[index], extracted))),
            Err(LlmCallError::CostLimit(reason)) => limit = Some(reason),
            Err(LlmCallError::Failed(reason)) => failures.push((index, reason)),
        }
    }
    for (index, reason) in failures {
        let raw = &raw_jobs[index];
        let (company, url) = (raw.company.clone(), raw.url.clone());
        state.record_issue(
            "process_jobs",
            "llm",
            format!("could not normalize {:?}: {reason}", raw.title),
            Some(&company),
            Some(&url),
        );
    }
    state.jobs = processed.into_iter().map(|(_, job)| job).collect();
    state.raw_jobs = raw_jobs;
    rule_out_by_arrangement(state);
    match limit {
        Some(reason) => Err(NodeError::limit(format!(
            "{reason} ({} of {total} jobs processed)",
            state.jobs.len()
        ))),
        None => Ok(()),
    }
}
