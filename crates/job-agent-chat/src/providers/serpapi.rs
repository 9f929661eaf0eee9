//! SerpAPI's Google Jobs engine: `GET {base}/search.json?engine=google_jobs&q=..`, ten
//! jobs a page, further pages by `next_page_token`.

use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use serde::Deserialize;
use serde_json::Value;

use super::{Found, JobProvider, ProviderError, SearchCriteria, requirement_lines};
use crate::models::{Job, JobStatus};

const NAME: &str = "SerpAPI Google Jobs";

/// The most pages one search reads.
const MAX_PAGES: usize = 3;

/// Google Jobs through SerpAPI.
#[derive(Clone)]
pub struct SerpApiProvider {
    http: reqwest::Client,
    base: String,
    key: String,
}

impl std::fmt::Debug for SerpApiProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SerpApiProvider")
            .field("base", &self.base)
            .field("key", &"[redacted]")
            .finish()
    }
}

impl SerpApiProvider {
    /// A provider asking `base` (no trailing slash) with `key`.
    pub fn new(base: impl Into<String>, key: impl Into<String>) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap_or_default();
        SerpApiProvider {
            http,
            base: base.into().trim_end_matches('/').to_owned(),
            key: key.into(),
        }
    }

    /// From `SERPAPI_API_KEY` (none: `None`) and `SERPAPI_BASE_URL` (default
    /// `https://serpapi.com`).
    pub fn from_env() -> Option<Self> {
        let key = std::env::var("SERPAPI_API_KEY")
            .ok()
            .filter(|k| !k.trim().is_empty())?;
        let base = std::env::var("SERPAPI_BASE_URL")
            .ok()
            .filter(|b| !b.trim().is_empty())
            .unwrap_or_else(|| "https://serpapi.com".to_owned());
        Some(SerpApiProvider::new(base, key.trim()))
    }

    async fn page(
        &self,
        criteria: &SearchCriteria,
        token: Option<&str>,
    ) -> Result<Page, ProviderError> {
        let mut query: Vec<(&str, String)> = vec![
            ("engine", "google_jobs".into()),
            ("q", criteria.query.clone()),
            ("api_key", self.key.clone()),
        ];
        if let Some(location) = criteria
            .location
            .as_deref()
            .filter(|l| !l.trim().is_empty())
        {
            query.push(("location", location.to_owned()));
        }
        if criteria.remote_only {
            query.push(("ltype", "1".into()));
        }
        if let Some(recency) = criteria.date_posted {
            query.push(("chips", recency.chip().into()));
        }
        if let Some(token) = token {
            query.push(("next_page_token", token.to_owned()));
        }
        let response = self
            .http
            .get(format!("{}/search.json", self.base))
            .query(&query)
            .send()
            .await
            .map_err(|e| ProviderError::Unreachable {
                provider: NAME,
                message: e.without_url().to_string(),
            })?;
        let status = response.status().as_u16();
        let body: Value = response
            .json()
            .await
            .map_err(|e| ProviderError::Unexpected {
                provider: NAME,
                message: format!("the body is not JSON: {}", e.without_url()),
            })?;
        let error = body.get("error").and_then(Value::as_str).map(str::to_owned);
        if !(200..300).contains(&status) {
            return Err(ProviderError::Refused {
                provider: NAME,
                status,
                message: error.unwrap_or_else(|| "no message".into()),
            });
        }
        if let Some(error) = error {
            // "Google hasn't returned any results for this query." is an empty answer.
            tracing::info!(%error, "SerpAPI found nothing");
            return Ok(Page::default());
        }
        serde_json::from_value(body).map_err(|e| ProviderError::Unexpected {
            provider: NAME,
            message: e.to_string(),
        })
    }
}

#[derive(Debug, Default, Deserialize)]
struct Page {
    #[serde(default)]
    jobs_results: Vec<GoogleJob>,
    #[serde(default)]
    serpapi_pagination: Option<Pagination>,
}

#[derive(Debug, Deserialize)]
struct Pagination {
    next_page_token: Option<String>,
}

#[derive(Debug, Deserialize)]
struct GoogleJob {
    title: String,
    company_name: String,
    #[serde(default)]
    location: String,
    #[serde(default)]
    via: String,
    #[serde(default)]
    share_link: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    job_highlights: Vec<Highlight>,
    #[serde(default)]
    detected_extensions: Extensions,
    #[serde(default)]
    apply_options: Vec<ApplyOption>,
    #[serde(default)]
    job_id: String,
}

#[derive(Debug, Deserialize)]
struct Highlight {
    #[serde(default)]
    title: String,
    #[serde(default)]
    items: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Extensions {
    posted_at: Option<String>,
    salary: Option<String>,
    work_from_home: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct ApplyOption {
    link: String,
}

impl GoogleJob {
    fn into_job(self) -> Job {
        let requirements: Vec<String> = self
            .job_highlights
            .iter()
            .filter(|h| h.title.eq_ignore_ascii_case("qualifications"))
            .flat_map(|h| h.items.iter().cloned())
            .take(12)
            .collect();
        let requirements = if requirements.is_empty() {
            requirement_lines(&self.description)
        } else {
            requirements
        };
        let location_says_remote = {
            let place = self.location.to_lowercase();
            place.contains("anywhere") || place.contains("remote")
        };
        let url = self
            .apply_options
            .first()
            .map(|o| o.link.clone())
            .unwrap_or(self.share_link);
        let key = if self.job_id.is_empty() {
            url.clone()
        } else {
            self.job_id
        };
        let source = if self.via.is_empty() {
            "serpapi".to_owned()
        } else {
            format!("serpapi ({})", self.via.trim_start_matches("via ").trim())
        };
        Job {
            id: Job::id_for("serpapi", &key),
            title: self.title,
            company: self.company_name,
            location: self.location,
            remote: self.detected_extensions.work_from_home.unwrap_or(false)
                || location_says_remote,
            description: self.description,
            requirements,
            salary_text: self.detected_extensions.salary.unwrap_or_default(),
            url,
            source,
            posted: self.detected_extensions.posted_at.unwrap_or_default(),
            status: JobStatus::New,
            found_at: Utc::now(),
        }
    }
}

#[async_trait]
impl JobProvider for SerpApiProvider {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn search(&self, criteria: &SearchCriteria) -> Result<Found, ProviderError> {
        if criteria.query.trim().is_empty() {
            return Err(ProviderError::Unusable("a search needs a query".into()));
        }
        let limit = criteria.limit();
        let mut found = Found::default();
        let mut token: Option<String> = None;
        let mut dropped = 0;
        for _ in 0..MAX_PAGES {
            let page = self.page(criteria, token.as_deref()).await?;
            for job in page.jobs_results {
                let job = job.into_job();
                if criteria.admits(&job, None) {
                    found.jobs.push(job);
                } else {
                    dropped += 1;
                }
            }
            token = page.serpapi_pagination.and_then(|p| p.next_page_token);
            if found.jobs.len() >= limit || token.is_none() {
                break;
            }
        }
        found.jobs.truncate(limit);
        if dropped > 0 {
            found.notes.push(format!(
                "{dropped} jobs left out: remote only or below the pay floor"
            ));
        }
        Ok(found)
    }
}
