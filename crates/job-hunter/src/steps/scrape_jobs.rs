//! Step 4: fetch every company's postings, concurrently, each company ending in a typed
//! outcome; then keep what the candidate asked for, before any model reads a posting:
//! duplicates go, the candidate's exclusions are applied ([`Exclusions`]), jobs whose
//! title or place the search rules out are cut ([`RelevanceFilter`]), and the limits
//! keep each company's most relevant jobs, then the run's. Every job fetched is counted,
//! per company, as kept or under the reason it was cut ([`JobCounts`]); a company with
//! cuts gets a `filter` issue saying what they were.
//!
//! A careers page with no job board we know is read by the fast model, every job it
//! reads checked against the page ([`careers_page`](super::careers_page)).

use std::collections::HashSet;

use agent_runtime::graph::NodeError;
use futures::StreamExt as _;
use job_capabilities::RawJob;
use job_capabilities::ats::{AtsBoard, detect_ats, detect_ats_in_html};
use job_capabilities::fetch::FetchError;

use super::careers_page::{self, PageIssue, PageRead};
use super::{StepEnv, board_probe};
use crate::events::HuntEvent;
use crate::exclusions::Exclusions;
use crate::models::{BoardProbe, Company, CompanyOutcome, CompanyReport, JobCounts};
use crate::relevance::{Cut, RelevanceFilter};
use crate::state::HuntState;

/// What scraping one company gave.
struct Scraped {
    outcome: CompanyOutcome,
    jobs: Vec<RawJob>,
    board: Option<AtsBoard>,
    /// Problems reading a careers page with the model, recorded as issues.
    issues: Vec<PageIssue>,
    /// The boards tried under guessed names.
    probes: Vec<BoardProbe>,
}

impl Scraped {
    fn empty(outcome: CompanyOutcome) -> Self {
        Scraped {
            outcome,
            jobs: Vec::new(),
            board: None,
            issues: Vec::new(),
            probes: Vec::new(),
        }
    }
}

/// Fetches the jobs of every company; see the module docs.
pub async fn run(state: &mut HuntState, env: &StepEnv<'_>) -> Result<(), NodeError> {
    let probe = state.search_note.is_some();
    let scrapes = futures::stream::iter(state.companies.iter().cloned().enumerate())
        .map(|(index, company)| async move {
            let scraped = scrape(&company, env, probe).await;
            env.ctx.emit(HuntEvent::CompanyFinished {
                company: company.name.clone(),
                outcome: scraped.outcome.clone(),
            });
            (index, scraped)
        })
        .buffer_unordered(env.settings.max_concurrency.max(1));
    let mut results: Vec<(usize, Scraped)> = scrapes.collect().await;
    results.sort_by_key(|(index, _)| *index);

    let mut fetched: Vec<(usize, RawJob)> = Vec::new();
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
        let at = reports.len();
        reports.push(CompanyReport {
            company: name,
            outcome: scraped.outcome,
            jobs: JobCounts {
                fetched: scraped.jobs.len(),
                ..JobCounts::default()
            },
            probes: scraped.probes,
        });
        fetched.extend(scraped.jobs.into_iter().map(|job| (at, job)));
    }
    let Some(prefs) = state.preferences.clone() else {
        return Err(NodeError::fatal("the preferences are missing"));
    };
    let skills = state
        .profile
        .as_ref()
        .map(|p| p.skills.clone())
        .unwrap_or_default();
    let mut exclusions = Exclusions::new(&prefs, &state.exclusions);
    let filter = RelevanceFilter::new(&prefs, &skills);
    let mut examples: Vec<Vec<String>> = vec![Vec::new(); reports.len()];
    let kept = select(
        fetched,
        &mut exclusions,
        &filter,
        (env.settings.max_jobs_per_company, env.settings.max_jobs),
        &mut reports,
        &mut examples,
    );
    let mut total = JobCounts::default();
    for (report, examples) in reports.iter().zip(&examples) {
        total.add(&report.jobs);
        if report.jobs.cut() > 0 {
            let mut message = report.jobs.describe();
            if !examples.is_empty() {
                message.push_str(&format!("; for example {}", examples.join(", ")));
            }
            let company = report.company.clone();
            state.record_issue("scrape_jobs", "filter", message, Some(&company), None);
        }
    }
    tracing::info!(
        jobs = kept.len(),
        fetched = total.fetched,
        cut = total.cut(),
        "jobs scraped and filtered"
    );
    state.exclusions = exclusions.into_reports();
    // The companies searched, then those the exclusions kept from being searched.
    let excluded = std::mem::replace(&mut state.company_reports, reports);
    state.company_reports.extend(excluded);
    state.raw_jobs = kept;
    state.job_counts = total;
    Ok(())
}

/// Keeps the jobs the search wants, counting every other one in its company's report
/// (`reports[at].jobs`) and noting a few cut titles per company in `examples`:
/// duplicates, exclusions and jobs the relevance filter cuts go first; then each
/// company keeps its `per_company` most relevant jobs and the run its `per_run` most
/// relevant ones. The jobs kept come back in company order, most relevant first.
fn select(
    fetched: Vec<(usize, RawJob)>,
    exclusions: &mut Exclusions,
    filter: &RelevanceFilter,
    (per_company, per_run): (usize, usize),
    reports: &mut [CompanyReport],
    examples: &mut [Vec<String>],
) -> Vec<RawJob> {
    let mut note = |at: usize, job: &RawJob, why: String| {
        if let Some(list) = examples.get_mut(at)
            && list.len() < 3
        {
            list.push(format!("{:?} ({why})", job.title));
        }
    };
    let (unique, duplicates) = dedupe(fetched);
    let mut candidates: Vec<(usize, f32, RawJob)> = Vec::with_capacity(unique.len());
    for at in duplicates {
        reports[at].jobs.duplicates += 1;
    }
    for (at, job) in unique {
        if exclusions.remove_job(&job) {
            reports[at].jobs.excluded += 1;
            note(at, &job, "excluded".into());
            continue;
        }
        let relevance = filter.judge(&job);
        match relevance.cut {
            Some(Cut::OffTarget) => {
                reports[at].jobs.off_target += 1;
                note(at, &job, "off-target title".into());
            }
            Some(Cut::Elsewhere(why)) => {
                reports[at].jobs.elsewhere += 1;
                note(at, &job, why);
            }
            Some(Cut::BelowPay(why)) => {
                reports[at].jobs.below_pay += 1;
                note(at, &job, why);
            }
            None => candidates.push((at, relevance.score, job)),
        }
    }
    // Most relevant first; the board's order among equals.
    candidates.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    let mut per_company_kept = vec![0usize; reports.len()];
    let mut within: Vec<(usize, f32, RawJob)> = Vec::with_capacity(candidates.len());
    for (at, score, job) in candidates {
        if per_company_kept[at] < per_company {
            per_company_kept[at] += 1;
            within.push((at, score, job));
        } else {
            reports[at].jobs.over_company_limit += 1;
        }
    }
    let mut order: Vec<usize> = (0..within.len()).collect();
    order.sort_by(|&a, &b| within[b].1.total_cmp(&within[a].1).then(a.cmp(&b)));
    let mut keep = vec![false; within.len()];
    for &i in order.iter().take(per_run) {
        keep[i] = true;
    }
    let mut kept = Vec::with_capacity(per_run.min(within.len()));
    for ((at, _, job), keep) in within.into_iter().zip(keep) {
        if keep {
            reports[at].jobs.kept += 1;
            kept.push(job);
        } else {
            reports[at].jobs.over_run_limit += 1;
        }
    }
    kept
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
                        probes: Vec::new(),
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
            probes: Vec::new(),
        },
        Err(e) if e.is_blocked() => Scraped::empty(CompanyOutcome::Blocked {
            reason: format!("{} board: {e}", board.kind),
        }),
        Err(e) => Scraped::empty(CompanyOutcome::Error {
            reason: format!("{} board {:?}: {e}", board.kind, board.token),
        }),
    }
}

/// Without web search, tries the company's usual board names on the four vendors
/// ([`board_probe`]), every answer kept in the company's report.
async fn probe_boards(company: &Company, env: &StepEnv<'_>) -> Scraped {
    let probed = board_probe::probe(
        env.deps.boards.as_ref(),
        &company.name,
        company.domain.as_deref(),
    )
    .await;
    let outcome = probed.outcome();
    let (board, jobs) = match probed.found {
        Some((board, jobs)) => (Some(board), jobs),
        None => (None, Vec::new()),
    };
    Scraped {
        outcome,
        jobs,
        board,
        issues: Vec::new(),
        probes: probed.probes,
    }
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
/// same URL. Returns the unique postings in their order, each with its company's index,
/// and the company index of each one dropped.
pub fn dedupe(jobs: Vec<(usize, RawJob)>) -> (Vec<(usize, RawJob)>, Vec<usize>) {
    let mut keys = HashSet::new();
    let mut urls = HashSet::new();
    let mut unique = Vec::with_capacity(jobs.len());
    let mut dropped = Vec::new();
    for (at, job) in jobs {
        let key = (
            norm(&job.company),
            norm(&job.title),
            norm(job.location.as_deref().unwrap_or_default()),
        );
        let url = job.url.trim_end_matches('/').to_lowercase();
        let fresh_key = keys.insert(key);
        let fresh_url = urls.insert(url);
        if fresh_key && fresh_url {
            unique.push((at, job));
        } else {
            dropped.push(at);
        }
    }
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
        let (unique, dropped) = dedupe(jobs.into_iter().map(|job| (0, job)).collect());
        assert_eq!(dropped, [0, 0]);
        let urls: Vec<_> = unique.iter().map(|(_, j)| j.url.as_str()).collect();
        assert_eq!(urls, ["https://x/1", "https://x/3"]);
    }
}
