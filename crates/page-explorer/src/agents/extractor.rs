//! The Extractor (spec 002, Phase 2): reads one job's text (its details panel or page, or
//! its listing) into the spec's `JobData`. The collector reads fields with selectors first;
//! the Extractor corrects and completes them, and every value it gives must appear in the
//! job's text, or it is refused.

use std::fmt::Write as _;

use agent_llm::{ChatRequest, ExtractError, Extracted, ModelTier};
use agent_runtime::{Ask, Session};
use futures::StreamExt as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::clip;
use crate::collect::CollectedJob;

/// The Extractor's system prompt.
pub const EXTRACTOR_PROMPT: &str = include_str!("prompts/extractor.md");

/// The `extract_job` tool's description.
pub const EXTRACT_JOB_DESCRIPTION: &str = "Give the job's fields exactly as the text states them.";

/// The job's text is cut to this many characters.
const TEXT_CHARS: usize = 6_000;

/// How applying works: the Collector's [`ApplyType`] (the spec's vocabulary).
pub use crate::collect::ApplyType as ApplyKind;

/// The Extractor's answer (the spec's `JobData`, without the apply URL, which comes from
/// the page's links).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobData {
    /// The job title alone.
    pub title: String,
    /// The hiring company.
    #[serde(default)]
    pub company: Option<String>,
    /// Where the job is.
    #[serde(default)]
    pub location: Option<String>,
    /// The pay, as written.
    #[serde(default)]
    pub salary: Option<String>,
    /// How applying works.
    pub apply_type: ApplyKind,
    /// When it was posted, as written.
    #[serde(default)]
    pub posted_date: Option<String>,
    /// One sentence on the role.
    #[serde(default)]
    pub description: Option<String>,
}

/// The Extractor's request for `job`.
pub fn extractor_request(job: &CollectedJob) -> ChatRequest {
    let mut message = format!("PAGE: {}\n", job.source_page);
    let _ = writeln!(
        message,
        "APPLY LINK: {}",
        if job.apply_url.is_empty() {
            "(none)"
        } else {
            &job.apply_url
        }
    );
    message.push_str("\nREAD BY SELECTORS:\n");
    for (field, value) in [
        ("title", job.title.as_str()),
        ("company", &job.company),
        ("location", &job.location),
        ("salary", &job.salary_text),
        ("posted_date", job.posted_date.as_deref().unwrap_or("")),
    ] {
        let _ = writeln!(
            message,
            "- {field}: {}",
            if value.is_empty() { "(none)" } else { value }
        );
    }
    message.push_str("\nTHE JOB'S TEXT:\n");
    message.push_str(&clip(&job.details_text, TEXT_CHARS));
    let mut request = ChatRequest::from_prompt(message);
    request.system = Some(EXTRACTOR_PROMPT.to_owned());
    request.max_tokens = Some(1_024);
    request
}

/// Asks the Extractor about `job` (light tier, counted under `extractor`) through
/// `session`; an invalid answer is re-asked once.
pub async fn extract_job<S, E>(
    session: &Session<S, E>,
    job: &CollectedJob,
) -> Result<Extracted<JobData>, ExtractError> {
    let ask = Ask::from_request(extractor_request(job))
        .tier(ModelTier::Light)
        .step("extractor")
        .tool("extract_job", EXTRACT_JOB_DESCRIPTION)
        .attempts(2);
    session.extract(ask).await
}

/// What running the Extractor over a collection did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractionReport {
    /// Jobs the Extractor answered for.
    pub extracted: usize,
    /// Jobs whose call failed (their fields are as the selectors read them).
    pub failed: Vec<String>,
    /// Values refused because the job's text does not contain them, as `title: field=value`.
    pub refused: Vec<String>,
    /// Fields changed, in all.
    pub fields_changed: usize,
}

/// Lowercase words, for "does the text say this" checks.
fn folded(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Merges the Extractor's answer into `job`: each value it gives replaces the selectors'
/// one only when the job's text contains it. Returns the fields changed and the refused
/// values.
pub fn merge(job: &mut CollectedJob, data: JobData) -> (usize, Vec<String>) {
    let text = folded(&job.details_text);
    let label = job.title.clone();
    let mut changed = 0;
    let mut refused = Vec::new();
    let mut take = |field: &str, slot: &mut String, value: Option<String>| {
        let Some(value) = value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()) else {
            return;
        };
        if !text.contains(&folded(&value)) {
            refused.push(format!("{label}: {field}={value}"));
            return;
        }
        if *slot != value {
            *slot = value;
            changed += 1;
        }
    };
    take("title", &mut job.title, Some(data.title));
    take("company", &mut job.company, data.company);
    take("location", &mut job.location, data.location);
    take("salary", &mut job.salary_text, data.salary);
    let mut posted = job.posted_date.clone().unwrap_or_default();
    take("posted_date", &mut posted, data.posted_date);
    job.posted_date = (!posted.is_empty()).then_some(posted);
    // The text's word on applying wins, unless it does not tell.
    if data.apply_type != ApplyKind::Unknown {
        job.apply_type = data.apply_type;
    }
    if let Some(description) = data.description.filter(|d| !d.trim().is_empty()) {
        job.description = Some(description.trim().to_owned());
    }
    (changed, refused)
}

/// Runs the Extractor over every job that has text, `concurrency` at a time (1 keeps the
/// calls in job order, as recorded answers need), and merges the answers.
pub async fn extract_jobs<S, E>(
    session: &Session<S, E>,
    jobs: &mut [CollectedJob],
    concurrency: usize,
) -> ExtractionReport {
    let answers: Vec<(usize, Result<JobData, ExtractError>)> = futures::stream::iter(
        jobs.iter()
            .enumerate()
            .filter(|(_, job)| !job.details_text.trim().is_empty()),
    )
    .map(|(index, job)| async move {
        let answer = extract_job(session, job).await;
        (index, answer.map(|e| e.value))
    })
    .buffered(concurrency.max(1))
    .collect()
    .await;
    let mut report = ExtractionReport::default();
    for (index, answer) in answers {
        let Some(job) = jobs.get_mut(index) else {
            continue;
        };
        match answer {
            Ok(data) => {
                let (changed, refused) = merge(job, data);
                report.extracted += 1;
                report.fields_changed += changed;
                for r in &refused {
                    tracing::warn!(refused = %r, "the Extractor's value is not in the job's text");
                }
                report.refused.extend(refused);
            }
            Err(error) => {
                tracing::warn!(title = %job.title, %error, "the Extractor failed; the selectors' fields are kept");
                report.failed.push(format!("{}: {error}", job.title));
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> CollectedJob {
        CollectedJob {
            title: "Rust Engineer at Acme".into(),
            company: String::new(),
            location: String::new(),
            salary_text: String::new(),
            url: String::new(),
            apply_url: "https://board.test/#apply-1".into(),
            apply_type: ApplyKind::Unknown,
            posted_date: None,
            source_page: "https://board.test/".into(),
            description: None,
            details_text:
                "Rust Engineer at Acme Build the billing platform in Rust. Berlin, €90,000 a year"
                    .into(),
        }
    }

    #[test]
    fn values_found_in_the_text_replace_and_others_are_refused() {
        let mut j = job();
        let (changed, refused) = merge(
            &mut j,
            JobData {
                title: "Rust Engineer".into(),
                company: Some("Acme".into()),
                location: Some("berlin".into()),
                salary: Some("€90,000 a year".into()),
                apply_type: ApplyKind::EasyApply,
                posted_date: Some("2 days ago".into()),
                description: Some("Builds billing in Rust.".into()),
            },
        );
        assert_eq!(
            (j.title.as_str(), j.company.as_str()),
            ("Rust Engineer", "Acme")
        );
        assert_eq!(j.location, "berlin");
        assert_eq!(j.salary_text, "€90,000 a year");
        assert_eq!(j.posted_date, None);
        assert_eq!(refused, ["Rust Engineer at Acme: posted_date=2 days ago"]);
        assert_eq!(changed, 4);
        assert_eq!(j.description.as_deref(), Some("Builds billing in Rust."));
        assert_eq!(j.apply_type, ApplyKind::EasyApply);
    }
}
