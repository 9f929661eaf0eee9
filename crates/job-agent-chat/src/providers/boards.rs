//! Named companies' own job boards (Greenhouse, Lever, Ashby) through job-capabilities'
//! ATS clients: the search without a search API. A company's board is the one configured
//! for it (`JOB_CHAT_BOARDS`, e.g. `Vercel=greenhouse:vercel,Spotify=lever:spotify`),
//! else the first of the three vendors that knows its name as a board.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use job_capabilities::RawJob;
use job_capabilities::ats::{AtsBoard, AtsError, AtsKind, JobBoardClient};
use job_capabilities::text::content_stems;

use super::{Found, JobProvider, ProviderError, SearchCriteria, requirement_lines};
use crate::models::{Job, JobStatus};

const NAME: &str = "company job boards";

/// Searches the boards of named companies.
#[derive(Clone)]
pub struct BoardsProvider {
    client: Arc<dyn JobBoardClient>,
    /// Boards known by company name (lowercase).
    known: Vec<(String, AtsBoard)>,
}

impl std::fmt::Debug for BoardsProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoardsProvider")
            .field("known", &self.known)
            .finish_non_exhaustive()
    }
}

fn board(kind: AtsKind, token: &str) -> AtsBoard {
    AtsBoard {
        kind,
        token: token.to_owned(),
        workday: None,
    }
}

impl BoardsProvider {
    /// Boards read through `client`, none configured.
    pub fn new(client: Arc<dyn JobBoardClient>) -> Self {
        BoardsProvider {
            client,
            known: Vec::new(),
        }
    }

    /// Adds boards from a `Company=vendor:token,...` list (`JOB_CHAT_BOARDS`); entries
    /// that do not read are logged and skipped.
    pub fn with_boards(mut self, list: &str) -> Self {
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let parsed = entry.split_once('=').and_then(|(company, board_ref)| {
                let (vendor, token) = board_ref.split_once(':')?;
                let kind = match vendor.trim().to_lowercase().as_str() {
                    "greenhouse" => AtsKind::Greenhouse,
                    "lever" => AtsKind::Lever,
                    "ashby" => AtsKind::Ashby,
                    _ => return None,
                };
                Some((company.trim().to_lowercase(), board(kind, token.trim())))
            });
            match parsed {
                Some(known) => self.known.push(known),
                None => tracing::warn!(entry, "not a Company=greenhouse|lever|ashby:token board"),
            }
        }
        self
    }

    /// The configured companies' names.
    pub fn companies(&self) -> Vec<String> {
        self.known.iter().map(|(c, _)| c.clone()).collect()
    }

    /// The company's jobs, from its configured board or the first vendor that has one by
    /// its name.
    async fn company_jobs(&self, company: &str) -> Result<Vec<RawJob>, AtsError> {
        let wanted = company.trim().to_lowercase();
        if let Some((_, known)) = self.known.iter().find(|(c, _)| *c == wanted) {
            return self.client.fetch_jobs(known, company).await;
        }
        let slug: String = wanted.chars().filter(char::is_ascii_alphanumeric).collect();
        let mut last = None;
        for kind in [AtsKind::Greenhouse, AtsKind::Lever, AtsKind::Ashby] {
            match self.client.fetch_jobs(&board(kind, &slug), company).await {
                Ok(jobs) => return Ok(jobs),
                Err(error @ AtsError::BoardNotFound { .. }) => last = Some(error),
                Err(error) => return Err(error),
            }
        }
        Err(last.unwrap_or(AtsError::BoardNotFound {
            kind: AtsKind::Greenhouse,
            token: slug,
        }))
    }
}

/// How well a job answers the query: query stems in its title count double.
fn relevance(query: &BTreeSet<String>, job: &RawJob) -> usize {
    let title = content_stems(&job.title);
    let description = content_stems(&job.description);
    query
        .iter()
        .map(|stem| 2 * usize::from(title.contains(stem)) + usize::from(description.contains(stem)))
        .sum()
}

fn in_place(location: Option<&str>, job: &RawJob) -> bool {
    let Some(wanted) = location.map(str::trim).filter(|l| !l.is_empty()) else {
        return true;
    };
    let city = wanted
        .split(',')
        .next()
        .unwrap_or(wanted)
        .trim()
        .to_lowercase();
    job.remote == Some(true)
        || job
            .location
            .as_deref()
            .is_some_and(|place| place.to_lowercase().contains(&city))
}

fn into_job(raw: RawJob) -> Job {
    let salary_text = raw
        .salary
        .as_ref()
        .map(|s| {
            let amount = match (s.min, s.max) {
                (Some(min), Some(max)) => format!("{min:.0}–{max:.0}"),
                (Some(one), None) | (None, Some(one)) => format!("{one:.0}"),
                (None, None) => String::new(),
            };
            format!("{amount} {} a {}", s.currency, s.interval.as_str())
        })
        .filter(|t| !t.starts_with(' '))
        .unwrap_or_default();
    let location = raw.location.clone().unwrap_or_default();
    let remote = raw.remote.unwrap_or(false) || location.to_lowercase().contains("remote");
    let key = raw.external_id.clone().unwrap_or_else(|| raw.url.clone());
    Job {
        id: Job::id_for(raw.source.as_str(), &key),
        requirements: requirement_lines(&raw.description),
        title: raw.title,
        company: raw.company,
        location,
        remote,
        description: raw.description,
        salary_text,
        url: raw.apply_url.unwrap_or(raw.url),
        source: raw.source.as_str().to_owned(),
        posted: raw
            .posted_at
            .map(|t| t.date_naive().to_string())
            .unwrap_or_default(),
        status: JobStatus::New,
        found_at: Utc::now(),
    }
}

#[async_trait]
impl JobProvider for BoardsProvider {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn search(&self, criteria: &SearchCriteria) -> Result<Found, ProviderError> {
        let companies = if criteria.companies.is_empty() {
            self.companies()
        } else {
            criteria.companies.clone()
        };
        if companies.is_empty() {
            return Err(ProviderError::Unusable(
                "no search API is configured (SERPAPI_API_KEY): name the companies whose job \
                 boards to read"
                    .into(),
            ));
        }
        let query = content_stems(&criteria.query);
        let mut found = Found::default();
        let mut scored: Vec<(usize, RawJob)> = Vec::new();
        for company in &companies {
            match self.company_jobs(company).await {
                Ok(jobs) => scored.extend(
                    jobs.into_iter()
                        .filter(|job| in_place(criteria.location.as_deref(), job))
                        .map(|job| (relevance(&query, &job), job))
                        .filter(|(score, _)| query.is_empty() || *score > 0),
                ),
                Err(error) => {
                    tracing::warn!(%error, company, "a job board could not be read");
                    found.notes.push(format!("{company}: {error}"));
                }
            }
        }
        if scored.is_empty() && found.notes.len() == companies.len() {
            return Err(ProviderError::Unreachable {
                provider: NAME,
                message: found.notes.join("; "),
            });
        }
        scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
        for (_, raw) in scored {
            let posted_at = raw.posted_at;
            let job = into_job(raw);
            if criteria.admits(&job, posted_at) {
                found.jobs.push(job);
            }
            if found.jobs.len() >= criteria.limit() {
                break;
            }
        }
        Ok(found)
    }
}
