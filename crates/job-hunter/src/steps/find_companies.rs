//! Step 3: decide which companies to search, and find where their jobs are.
//!
//! Companies named in the preferences come first. With web search configured, the
//! quality model proposes more, and a search per company finds its job board or careers
//! page. Without it the step says so and keeps only the named companies (whose boards
//! `scrape_jobs` then probes by name).

use agent_runtime::graph::NodeError;
use futures::StreamExt as _;
use job_capabilities::ats::detect_ats;
use job_capabilities::search::SearchHit;

use super::{StepEnv, essential};
use crate::events::HuntEvent;
use crate::llm::{LlmCallError, Quality};
use crate::models::{
    CandidateProfile, Company, CompanyCandidateList, CompanyOrigin, SearchPreferences,
};
use crate::state::HuntState;

/// The system prompt of the company finder.
pub const SYSTEM: &str = "You suggest companies a candidate should look at. Suggest real, \
currently operating companies that hire for the candidate's target roles in the wanted \
locations, and respect the exclusions. Do not repeat companies already listed.";

/// The note recorded when no web search is configured.
pub const NO_SEARCH_NOTE: &str = "web search is not configured (set BRAVE_API_KEY): searching only the companies named in the preferences";

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
        excluded = list(&prefs.excluded_companies),
        named = list(named),
    )
}

fn is_excluded(name: &str, prefs: &SearchPreferences) -> bool {
    let name = name.to_lowercase();
    prefs
        .excluded_companies
        .iter()
        .any(|ex| !ex.trim().is_empty() && name == ex.trim().to_lowercase())
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

/// Builds the company list and locates each company's jobs.
pub async fn run(state: &mut HuntState, env: &StepEnv<'_>) -> Result<(), NodeError> {
    let (Some(profile), Some(prefs)) = (state.profile.clone(), state.preferences.clone()) else {
        return Err(NodeError::fatal("the profile and preferences are missing"));
    };
    let max = env.settings.max_companies;
    let named: Vec<&String> = prefs
        .target_companies
        .iter()
        .filter(|name| !is_excluded(name, &prefs))
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
            careers_url: None,
            board: None,
        })
        .collect();

    let Some(search) = env.deps.search.clone() else {
        tracing::info!("{NO_SEARCH_NOTE}");
        env.deps.events.emit(HuntEvent::Notice {
            message: NO_SEARCH_NOTE.into(),
        });
        state.search_note = Some(NO_SEARCH_NOTE.into());
        state.companies = companies;
        return Ok(());
    };

    if companies.len() < max {
        let named: Vec<String> = companies.iter().map(|c| c.name.clone()).collect();
        let wanted = max - companies.len();
        match env
            .llm
            .extract::<CompanyCandidateList>(
                "find_companies",
                Quality::Best,
                SYSTEM,
                prompt(&profile, &prefs, &named, wanted),
            )
            .await
        {
            Ok(list) => {
                for candidate in list.companies {
                    let name = candidate.name.trim().to_owned();
                    let known = companies
                        .iter()
                        .any(|c| c.name.to_lowercase() == name.to_lowercase());
                    if name.is_empty() || known || is_excluded(&name, &prefs) {
                        continue;
                    }
                    if companies.len() >= max {
                        break;
                    }
                    companies.push(Company {
                        name,
                        origin: CompanyOrigin::Suggested {
                            reason: candidate.reason,
                        },
                        careers_url: None,
                        board: None,
                    });
                }
            }
            Err(LlmCallError::Failed(reason)) => state.record_issue(
                "find_companies",
                "llm",
                format!("no companies suggested: {reason}"),
                None,
                None,
            ),
            Err(limit) => return Err(essential("suggest companies", limit)),
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
    Ok(())
}
