//! Step 3: decide which companies to search, and find where their jobs are.
//!
//! Companies named in the preferences come first. With web search configured, the
//! quality model proposes more, and a search per company finds its job board or careers
//! page. Without it the step says so and keeps the named companies (whose boards
//! `scrape_jobs` then probes by name); when the preferences name none, the model proposes
//! companies and each is kept only once a job board is found under its name or domain
//! ([`board_probe`]), so every company searched is verified by its board. Companies the
//! candidate excluded, by name or by kind ([`Exclusions`]), are never searched; each is
//! reported with the exclusion that ruled it out.

use agent_runtime::graph::NodeError;
use futures::StreamExt as _;
use job_capabilities::ats::{AtsBoard, detect_ats};
use job_capabilities::search::SearchHit;

use super::{StepEnv, board_probe, essential};
use crate::events::HuntEvent;
use crate::exclusions::Exclusions;
use crate::llm::{LlmCallError, Quality};
use crate::models::{
    CandidateProfile, Company, CompanyCandidate, CompanyCandidateList, CompanyOrigin,
    CompanyOutcome, CompanyReport, SearchPreferences,
};
use crate::state::HuntState;

/// The system prompt of the company finder.
pub const SYSTEM: &str = "You suggest companies a candidate should look at. Suggest real, \
currently operating companies that hire for the candidate's target roles in the wanted \
locations, and respect the exclusions. Do not repeat companies already listed.";

/// The note recorded when no web search is configured.
pub const NO_SEARCH_NOTE: &str = "web search is not configured (set BRAVE_API_KEY): searching only the companies named in the preferences";

/// The note recorded when no web search is configured and the preferences name no
/// company.
pub const NO_SEARCH_SUGGESTED_NOTE: &str = "web search is not configured (set BRAVE_API_KEY) and the preferences name no company: searching companies the model suggested, each kept only where a Greenhouse, Lever, Ashby or Workday board was found under its name";

/// Hosts whose pages are never a company's careers page.
const NOT_CAREERS_HOSTS: &[&str] = &[
    "linkedin.com",
    "glassdoor.com",
    "indeed.com",
    "wikipedia.org",
    "crunchbase.com",
    "twitter.com",
    "x.com",
    "facebook.com",
    "youtube.com",
    "reddit.com",
    "builtin.com",
    "wellfound.com",
];

/// The prompt asking for `wanted` more companies.
pub fn prompt(
    profile: &CandidateProfile,
    prefs: &SearchPreferences,
    named: &[String],
    wanted: usize,
) -> String {
    let list = |items: &[String]| {
        if items.is_empty() {
            "(none)".to_owned()
        } else {
            items.join("; ")
        }
    };
    format!(
        "Suggest up to {wanted} companies for this candidate.\n\n\
         Candidate: {summary}\nSkills: {skills}\n\n\
         Target titles: {titles}\nIndustries: {industries}\nLocations: {locations}\nRemote: {remote:?}\n\
         Excluded: {excluded}\nAlready listed: {named}",
        summary = profile.summary,
        skills = list(&profile.skills),
        titles = list(&prefs.target_titles),
        industries = list(&prefs.industries),
        locations = list(&prefs.locations),
        remote = prefs.remote,
        excluded = list(
            &[
                prefs.excluded_companies.clone(),
                prefs.excluded_industries.clone()
            ]
            .concat()
        ),
        named = list(named),
    )
}

/// Picks where a company's jobs are from its search hits: the first hit that is a
/// known job board, else the first that looks like a careers page.
pub fn locate(company: &mut Company, hits: &[SearchHit]) {
    if let Some((hit, board)) = hits
        .iter()
        .find_map(|h| detect_ats(&h.url).map(|board| (h, board)))
    {
        company.board = Some(board);
        company.careers_url = Some(hit.url.clone());
        return;
    }
    company.careers_url = hits
        .iter()
        .find(|h| looks_like_careers_page(&h.url))
        .map(|h| h.url.clone());
}

fn looks_like_careers_page(address: &str) -> bool {
    let Ok(url) = url::Url::parse(address) else {
        return false;
    };
    let host = url.host_str().unwrap_or_default().to_lowercase();
    if NOT_CAREERS_HOSTS
        .iter()
        .any(|h| host == *h || host.ends_with(&format!(".{h}")))
    {
        return false;
    }
    let path = url.path().to_lowercase();
    host.starts_with("careers.")
        || host.starts_with("jobs.")
        || [
            "career",
            "/jobs",
            "join-us",
            "joinus",
            "work-with-us",
            "open-positions",
        ]
        .iter()
        .any(|k| path.contains(k))
}

/// The companies the model suggests beyond `named`: trimmed, not excluded, not already
/// listed. A failed call is recorded and suggests nothing; the cost limit stops the step.
async fn suggest(
    state: &mut HuntState,
    env: &StepEnv<'_>,
    (profile, prefs): (&CandidateProfile, &SearchPreferences),
    named: &[String],
    wanted: usize,
    exclusions: &mut Exclusions,
) -> Result<Vec<CompanyCandidate>, NodeError> {
    let list = match env
        .llm
        .extract::<CompanyCandidateList>(
            env.ctx,
            "find_companies",
            Quality::Best,
            SYSTEM,
            prompt(profile, prefs, named, wanted),
        )
        .await
    {
        Ok(list) => list,
        Err(LlmCallError::Failed(reason)) => {
            state.record_issue(
                "find_companies",
                "llm",
                format!("no companies suggested: {reason}"),
                None,
                None,
            );
            return Ok(Vec::new());
        }
        Err(limit) => return Err(essential("suggest companies", limit)),
    };
    let mut seen: Vec<String> = named.iter().map(|n| n.to_lowercase()).collect();
    let mut fresh = Vec::new();
    for mut candidate in list.companies {
        candidate.name = candidate.name.trim().to_owned();
        let key = candidate.name.to_lowercase();
        // A small model suggests languages as companies ("Golang"): never probed.
        let new = !candidate.name.is_empty()
            && !seen.contains(&key)
            && !crate::grounding::is_technology(&candidate.name);
        seen.push(key);
        if new && !exclusions.remove_company(&candidate.name, Some(&candidate.reason)) {
            fresh.push(candidate);
        }
    }
    Ok(fresh)
}

/// The Greenhouse, Lever, Ashby or Workday board of a suggested company, or why none
/// was found.
async fn verify(env: &StepEnv<'_>, candidate: &CompanyCandidate) -> Result<AtsBoard, String> {
    let probed = board_probe::probe(
        env.deps.boards.as_ref(),
        &candidate.name,
        candidate.domain.as_deref(),
    )
    .await;
    match probed.found {
        Some((board, _)) => Ok(board),
        None => Err(match probed.outcome() {
            CompanyOutcome::NoCareersPage => "no job board under its name".to_owned(),
            other => other.describe(),
        }),
    }
}

/// Without web search and with no company named: suggested companies, each kept only
/// once its board is found, up to `max`.
async fn suggest_verified(
    state: &mut HuntState,
    env: &StepEnv<'_>,
    wants: (&CandidateProfile, &SearchPreferences),
    max: usize,
    exclusions: &mut Exclusions,
) -> Result<Vec<Company>, NodeError> {
    // Some suggestions have no board we can find: ask for more than needed.
    let wanted = (max * 2).min(max + 10);
    let candidates = suggest(state, env, wants, &[], wanted, exclusions).await?;
    let suggested = candidates.len();
    let checks = futures::stream::iter(candidates)
        .map(|candidate| async move {
            let verdict = verify(env, &candidate).await;
            (candidate, verdict)
        })
        .buffered(env.settings.max_concurrency.max(1));
    futures::pin_mut!(checks);
    let mut companies = Vec::new();
    let mut left_out = Vec::new();
    while let Some((candidate, verdict)) = checks.next().await {
        match verdict {
            Ok(board) => companies.push(Company {
                name: candidate.name,
                origin: CompanyOrigin::Suggested {
                    reason: candidate.reason,
                },
                domain: candidate.domain,
                careers_url: None,
                board: Some(board),
            }),
            Err(why) => left_out.push(format!("{} ({why})", candidate.name)),
        }
        if companies.len() >= max {
            break;
        }
    }
    tracing::info!(
        suggested,
        verified = companies.len(),
        "suggested companies checked for a job board"
    );
    if !left_out.is_empty() {
        state.record_issue(
            "find_companies",
            "validation",
            format!(
                "suggested companies left out, no job board found: {}",
                left_out.join(", ")
            ),
            None,
            None,
        );
    }
    Ok(companies)
}

/// Builds the company list and locates each company's jobs; see the module docs.
pub async fn run(state: &mut HuntState, env: &StepEnv<'_>) -> Result<(), NodeError> {
    let (Some(profile), Some(prefs)) = (state.profile.clone(), state.preferences.clone()) else {
        return Err(NodeError::fatal("the profile and preferences are missing"));
    };
    let max = env.settings.max_companies;
    let mut exclusions = Exclusions::new(&prefs, &state.exclusions);
    let named: Vec<&String> = prefs
        .target_companies
        .iter()
        .filter(|name| !exclusions.remove_company(name, None))
        .collect();
    if named.len() > max {
        let left_out: Vec<&str> = named[max..].iter().map(|n| n.as_str()).collect();
        state.record_issue(
            "find_companies",
            "limit",
            format!(
                "JH_MAX_COMPANIES={max} leaves out named companies: {}",
                left_out.join(", ")
            ),
            None,
            None,
        );
    }
    let mut companies: Vec<Company> = named
        .into_iter()
        .take(max)
        .map(|name| Company {
            name: name.clone(),
            origin: CompanyOrigin::Named,
            domain: None,
            careers_url: None,
            board: None,
        })
        .collect();

    let Some(search) = env.deps.search.clone() else {
        let note = if companies.is_empty() {
            companies =
                suggest_verified(state, env, (&profile, &prefs), max, &mut exclusions).await?;
            NO_SEARCH_SUGGESTED_NOTE
        } else {
            NO_SEARCH_NOTE
        };
        tracing::info!("{note}");
        env.ctx.emit(HuntEvent::Notice {
            message: note.into(),
        });
        state.search_note = Some(note.into());
        state.companies = companies;
        keep_exclusions(state, exclusions);
        return Ok(());
    };

    if companies.len() < max {
        let named: Vec<String> = companies.iter().map(|c| c.name.clone()).collect();
        let wanted = max - companies.len();
        let suggested = suggest(
            state,
            env,
            (&profile, &prefs),
            &named,
            wanted,
            &mut exclusions,
        )
        .await?;
        for candidate in suggested {
            if companies.len() >= max {
                break;
            }
            companies.push(Company {
                name: candidate.name,
                origin: CompanyOrigin::Suggested {
                    reason: candidate.reason,
                },
                domain: candidate.domain,
                careers_url: None,
                board: None,
            });
        }
    }

    let lookups = futures::stream::iter(companies.iter().cloned().enumerate())
        .map(|(index, company)| {
            let search = search.clone();
            async move {
                let query = format!("{} careers jobs", company.name);
                (index, search.search(&query, 5).await)
            }
        })
        .buffer_unordered(env.settings.max_concurrency.max(1));
    let mut results: Vec<_> = lookups.collect().await;
    results.sort_by_key(|(index, _)| *index);
    for (index, result) in results {
        let company = &mut companies[index];
        match result {
            Ok(hits) => locate(company, &hits),
            Err(e) => {
                let message = format!("search failed: {e}");
                let name = company.name.clone();
                state.record_issue("find_companies", "search", message, Some(&name), None);
            }
        }
    }
    state.companies = companies;
    keep_exclusions(state, exclusions);
    Ok(())
}

/// Keeps what the exclusions removed: in the state's exclusion reports, and each
/// excluded company as a company report that says which exclusion ruled it out.
fn keep_exclusions(state: &mut HuntState, exclusions: Exclusions) {
    for report in exclusions.reports() {
        for company in &report.companies {
            state.company_reports.push(CompanyReport {
                company: company.clone(),
                outcome: CompanyOutcome::Excluded {
                    by: report.describe_rule(),
                },
                jobs: Default::default(),
                probes: Vec::new(),
            });
        }
    }
    state.exclusions = exclusions.into_reports();
}
