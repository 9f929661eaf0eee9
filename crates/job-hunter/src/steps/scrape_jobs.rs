//! Step 4: fetch every company's postings, concurrently, each company ending in a typed
//! outcome; then de-duplicate and apply the limits.
//!
//! A careers page with no job board we know is read by the fast model, every job it
//! reads checked against the page ([`careers_page`](super::careers_page)).

use std::collections::{HashMap, HashSet};

use agent_runtime::graph::NodeError;
use futures::StreamExt as _;
use job_capabilities::RawJob;
use job_capabilities::ats::{AtsBoard, AtsError, AtsKind, detect_ats, detect_ats_in_html};
use job_capabilities::fetch::FetchError;

use super::StepEnv;
use super::careers_page::{self, PageIssue, PageRead};
use crate::events::HuntEvent;
use crate::models::{Company, CompanyOutcome, CompanyReport};
use crate::state::HuntState;

/// What scraping one company gave.
struct Scraped {
    outcome: CompanyOutcome,
    jobs: Vec<RawJob>,
    board: Option<AtsBoard>,
    /// Problems reading a careers page with the model, recorded as issues.
    issues: Vec<PageIssue>,
}

impl Scraped {
    fn empty(outcome: CompanyOutcome) -> Self {
        Scraped {
            outcome,
            jobs: Vec::new(),
            board: None,
            issues: Vec::new(),
        }
    }
}

/// Fetches the jobs of every company; see the module docs.
pub async fn run(state: &mut HuntState, env: &StepEnv<'_>) -> Result<(), NodeError> {
    let probe = state.search_note.is_some();
    let scrapes = futures::stream::iter(state.companies.iter().cloned().enumerate())
        .map(|(index, company)| async move {
            let scraped = scrape(&company, env, probe).await;
            env.deps.events.emit(HuntEvent::CompanyFinished {
                company: company.name.clone(),
                outcome: scraped.outcome.clone(),
            });
            (index, scraped)
        })
        .buffer_unordered(env.settings.max_concurrency.max(1));
    let mut results: Vec<(usize, Scraped)> = scrapes.collect().await;
    results.sort_by_key(|(index, _)| *index);

    let mut fetched = Vec::new();
    let mut reports = Vec::new();
    for (index, scraped) in results {
        let company = &mut state.companies[index];
        if company.board.is_none() {
            company.board = scraped.board;
        }
        let name = company.name.clone();
        match &scraped.outcome {
            CompanyOutcome::Blocked { reason } => {
                state.record_issue("scrape_jobs", "blocked", reason.clone(), Some(&name), None)
            }
            CompanyOutcome::Error { reason } => {
                state.record_issue("scrape_jobs", "scrape", reason.clone(), Some(&name), None)
            }
            _ => {}
        }
        for issue in &scraped.issues {
            state.record_issue(
                "scrape_jobs",
                issue.kind,
                issue.message.clone(),
                Some(&name),
                issue.job_url.as_deref(),
            );
        }
        fetched.extend(scraped.jobs);
        reports.push(CompanyReport {
            company: name,
            outcome: scraped.outcome,
        });
    }
    // Duplicates first, so they use up no company's quota; then the limits.
    let (unique, duplicates) = dedupe(fetched);
    let mut per_company: HashMap<String, usize> = HashMap::new();
    let mut kept = Vec::with_capacity(unique.len());
    for job in unique {
        let count = per_company.entry(norm(&job.company)).or_default();
        *count += 1;
        if *count > env.settings.max_jobs_per_company || kept.len() >= env.settings.max_jobs {
            state.jobs_over_limit += 1;
        } else {
            kept.push(job);
        }
    }
    let unique = kept;
    tracing::info!(
        jobs = unique.len(),
        duplicates,
        over_limit = state.jobs_over_limit,
        "jobs scraped"
    );
    state.company_reports = reports;
    state.raw_jobs = unique;
    state.duplicates_removed = duplicates;
    Ok(())
}

async fn scrape(company: &Company, env: &StepEnv<'_>, probe: bool) -> Scraped {
    if let Some(board) = &company.board {
        return from_board(board.clone(), company, env).await;
    }
    if let Some(url) = &company.careers_url {
        return match env.deps.pages.fetch_page(url).await {
            Ok(page) => match detect_ats(&page.url).or_else(|| detect_ats_in_html(&page.html)) {
                Some(board) => from_board(board, company, env).await,
                None => {
                    let PageRead {
                        outcome,
                        jobs,
                        issues,
                    } = careers_page::read(&company.name, &page, env).await;
                    Scraped {
                        outcome,
                        jobs,
                        board: None,
                        issues,
                    }
                }
            },
            Err(e) => Scraped::empty(fetch_outcome(&e)),
        };
    }
    if probe {
        return probe_boards(company, env).await;
    }
    Scraped::empty(CompanyOutcome::NoCareersPage)
}

fn fetch_outcome(error: &FetchError) -> CompanyOutcome {
    if error.is_blocked() {
        CompanyOutcome::Blocked {
            reason: error.to_string(),
        }
    } else {
        CompanyOutcome::Error {
            reason: format!("careers page: {error}"),
        }
    }
}

async fn from_board(board: AtsBoard, company: &Company, env: &StepEnv<'_>) -> Scraped {
    match env.deps.boards.fetch_jobs(&board, &company.name).await {
        Ok(jobs) => Scraped {
            outcome: CompanyOutcome::JobsFetched {
                count: jobs.len(),
                source: board.kind.source(),
            },
            jobs,
            board: Some(board),
            issues: Vec::new(),
        },
        Err(e) if e.is_blocked() => Scraped::empty(CompanyOutcome::Blocked {
            reason: format!("{} board: {e}", board.kind),
        }),
        Err(e) => Scraped::empty(CompanyOutcome::Error {
            reason: format!("{} board {:?}: {e}", board.kind, board.token),
        }),
    }
}

/// Without web search, tries the company's name as a board token on Greenhouse, Lever
/// and Ashby, in that order.
async fn probe_boards(company: &Company, env: &StepEnv<'_>) -> Scraped {
    let token: String = company
        .name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_lowercase();
    if token.is_empty() {
        return Scraped::empty(CompanyOutcome::NoCareersPage);
    }
    for kind in [AtsKind::Greenhouse, AtsKind::Lever, AtsKind::Ashby] {
        let board = AtsBoard {
            kind,
            token: token.clone(),
            workday: None,
        };
        match env.deps.boards.fetch_jobs(&board, &company.name).await {
            Ok(jobs) => {
                return Scraped {
                    outcome: CompanyOutcome::JobsFetched {
                        count: jobs.len(),
                        source: kind.source(),
                    },
                    jobs,
                    board: Some(board),
                    issues: Vec::new(),
                };
            }
            Err(AtsError::BoardNotFound { .. }) => continue,
            Err(e) if e.is_blocked() => {
                return Scraped::empty(CompanyOutcome::Blocked {
                    reason: format!("{kind} board: {e}"),
                });
            }
            Err(e) => {
                return Scraped::empty(CompanyOutcome::Error {
                    reason: format!("{kind} board {token:?}: {e}"),
                });
            }
        }
    }
    Scraped::empty(CompanyOutcome::NoCareersPage)
}

/// Normalizes text for comparison: lower case, alphanumerics, single spaces.
fn norm(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Drops postings with the same company, title and location as an earlier one, or the
/// same URL. Returns the unique postings in their order and how many were dropped.
pub fn dedupe(jobs: Vec<RawJob>) -> (Vec<RawJob>, usize) {
    let mut keys = HashSet::new();
    let mut urls = HashSet::new();
    let before = jobs.len();
    let unique: Vec<RawJob> = jobs
        .into_iter()
        .filter(|job| {
            let key = (
                norm(&job.company),
                norm(&job.title),
                norm(job.location.as_deref().unwrap_or_default()),
            );
            let url = job.url.trim_end_matches('/').to_lowercase();
            let fresh_key = !keys.contains(&key);
            let fresh_url = !urls.contains(&url);
            keys.insert(key);
            urls.insert(url);
            fresh_key && fresh_url
        })
        .collect();
    let dropped = before - unique.len();
    (unique, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use job_capabilities::JobSource;

    fn job(company: &str, title: &str, location: &str, url: &str) -> RawJob {
        RawJob {
            source: JobSource::Greenhouse,
            external_id: None,
            company: company.into(),
            title: title.into(),
            location: Some(location.into()),
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

    #[test]
    fn same_title_and_place_or_same_url_is_a_duplicate() {
        let jobs = vec![
            job("Acme", "Senior Engineer", "Berlin", "https://x/1"),
            job("ACME", "Senior  engineer", "berlin", "https://x/2"),
            job("Acme", "Staff Engineer", "Berlin", "https://x/1/"),
            job("Acme", "Senior Engineer", "London", "https://x/3"),
        ];
        let (unique, dropped) = dedupe(jobs);
        assert_eq!(dropped, 2);
        let urls: Vec<_> = unique.iter().map(|j| j.url.as_str()).collect();
        assert_eq!(urls, ["https://x/1", "https://x/3"]);
    }
}
