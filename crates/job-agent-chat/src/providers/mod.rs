//! Where jobs come from: [`JobProvider`], with SerpAPI's Google Jobs
//! ([`SerpApiProvider`], `SERPAPI_API_KEY`, `SERPAPI_BASE_URL`) and, without a key, the
//! public job boards of named companies through job-capabilities' ATS clients
//! ([`BoardsProvider`]).

mod boards;
mod serpapi;

pub use boards::BoardsProvider;
pub use serpapi::SerpApiProvider;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use job_capabilities::salary::parse_salary_text;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::models::Job;

/// How recent a job must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DatePosted {
    /// Posted today.
    Today,
    /// In the last three days.
    #[serde(rename = "3days")]
    ThreeDays,
    /// In the last week.
    Week,
    /// In the last month.
    Month,
}

impl DatePosted {
    /// SerpAPI's `chips` value.
    pub fn chip(self) -> &'static str {
        match self {
            DatePosted::Today => "date_posted:today",
            DatePosted::ThreeDays => "date_posted:3days",
            DatePosted::Week => "date_posted:week",
            DatePosted::Month => "date_posted:month",
        }
    }

    /// The oldest time it admits.
    pub fn since(self, now: DateTime<Utc>) -> DateTime<Utc> {
        now - match self {
            DatePosted::Today => Duration::days(1),
            DatePosted::ThreeDays => Duration::days(3),
            DatePosted::Week => Duration::days(7),
            DatePosted::Month => Duration::days(31),
        }
    }
}

/// What to search for: the `search_jobs` tool's input.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct SearchCriteria {
    /// What to look for: a title, skills or keywords ("rust backend engineer").
    pub query: String,
    /// Where ("Berlin, Germany"); leave out for anywhere.
    #[serde(default)]
    pub location: Option<String>,
    /// Only remote jobs.
    #[serde(default)]
    pub remote_only: bool,
    /// The least yearly pay; jobs stating less are left out.
    #[serde(default)]
    pub min_salary: Option<u64>,
    /// How recent the jobs must be.
    #[serde(default)]
    pub date_posted: Option<DatePosted>,
    /// At most this many jobs (1 to 20; 10 when not given).
    #[serde(default)]
    pub max_results: Option<u32>,
    /// Companies whose own job boards to read (used when no search API is configured).
    #[serde(default)]
    pub companies: Vec<String>,
}

impl SearchCriteria {
    /// How many jobs to return.
    pub fn limit(&self) -> usize {
        self.max_results.unwrap_or(10).clamp(1, 20) as usize
    }

    /// Whether a found job meets the criteria a provider could not ask for itself: the
    /// pay floor (a job stating no pay is kept), remote only, and recency when its
    /// posting time is known.
    pub fn admits(&self, job: &Job, posted_at: Option<DateTime<Utc>>) -> bool {
        if self.remote_only && !job.remote {
            return false;
        }
        if let (Some(floor), Some(salary)) = (self.min_salary, parse_salary_text(&job.salary_text))
        {
            let per_year = salary.interval.per_year();
            if let Some(best) = salary.max.or(salary.min)
                && best * per_year < floor as f64
            {
                return false;
            }
        }
        match (self.date_posted, posted_at) {
            (Some(recency), Some(posted)) => posted >= recency.since(Utc::now()),
            _ => true,
        }
    }
}

/// Why a search failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// The request did not get an answer (connection, timeout).
    #[error("{provider} could not be reached: {message}")]
    Unreachable {
        /// Which provider.
        provider: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The provider answered with an error.
    #[error("{provider} refused the search (HTTP {status}): {message}")]
    Refused {
        /// Which provider.
        provider: &'static str,
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The answer was not what the provider documents.
    #[error("{provider} answered something unexpected: {message}")]
    Unexpected {
        /// Which provider.
        provider: &'static str,
        /// What did not match.
        message: String,
    },
    /// The search cannot run as asked.
    #[error("{0}")]
    Unusable(String),
}

/// What a search found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Found {
    /// The jobs, best first as the provider ranks them.
    pub jobs: Vec<Job>,
    /// What the user should know (a board that could not be read, a filter that dropped
    /// jobs).
    pub notes: Vec<String>,
}

/// Something that finds jobs.
#[async_trait]
pub trait JobProvider: Send + Sync {
    /// Its name, for notes and logs.
    fn name(&self) -> &'static str;

    /// Jobs matching `criteria`, at most [`SearchCriteria::limit`].
    async fn search(&self, criteria: &SearchCriteria) -> Result<Found, ProviderError>;
}

/// Lines of a description that read as requirements: its list items, at most 12.
pub(crate) fn requirement_lines(description: &str) -> Vec<String> {
    description
        .lines()
        .filter(|line| job_capabilities::text::is_bullet(line))
        .map(|line| {
            job_capabilities::documents::strip_bullet(line)
                .trim()
                .to_owned()
        })
        .filter(|line| line.len() > 3)
        .take(12)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(remote: bool, salary: &str) -> Job {
        Job {
            id: "j1".into(),
            title: "Engineer".into(),
            company: "Acme".into(),
            location: "Berlin".into(),
            remote,
            description: String::new(),
            requirements: vec![],
            salary_text: salary.into(),
            url: String::new(),
            source: "test".into(),
            posted: String::new(),
            status: Default::default(),
            found_at: Utc::now(),
        }
    }

    #[test]
    fn filters_keep_jobs_that_do_not_say() {
        let criteria = SearchCriteria {
            min_salary: Some(100_000),
            remote_only: true,
            date_posted: Some(DatePosted::Week),
            ..Default::default()
        };
        assert!(criteria.admits(&job(true, ""), None));
        assert!(criteria.admits(&job(true, "$120,000 - $150,000 a year"), None));
        assert!(!criteria.admits(&job(true, "$60,000 - $80,000 a year"), None));
        assert!(!criteria.admits(&job(false, ""), None));
        let old = Utc::now() - Duration::days(30);
        assert!(!criteria.admits(&job(true, ""), Some(old)));
    }
}
