//! Jobs read off a careers page that uses no job board we know (Greenhouse, Lever,
//! Ashby, Workday): one structured-output call of the fast model on the page's text and
//! links, every job of the answer checked against the page.
//!
//! The model is shown the page's readable text, clipped to [`MAX_PAGE_CHARS`], and its
//! links (text and absolute URL, de-duplicated, at most [`MAX_LINKS`]), and answers a
//! [`CareersPageJobs`]. A job is kept only when
//!
//! - its URL, resolved against the page, is one of the page's links (fragment and a
//!   trailing slash aside) and not the careers page itself, and
//! - its title occurs in the page's readable text or in the text of that very link, word
//!   for word (case, whitespace and punctuation aside; see [`crate::grounding::words`]).
//!
//! Every other job is dropped and said why ([`PageIssue`]), so the model never adds a job
//! the page does not list. A location is kept only when the page's text has it. A kept
//! job's description is the line of the page's text that carries its title, when that
//! line is short, else empty (the normalizer and the scorer work from the title then, as
//! for a Workday list).

use std::collections::HashSet;

use job_capabilities::fetch::{FetchedPage, PageLink};
use job_capabilities::{JobSource, RawJob};
use url::Url;

use super::{StepEnv, clip, stable_key};
use crate::grounding::words;
use crate::llm::{LlmCallError, Quality};
use crate::models::{CareersPageJob, CareersPageJobs, CompanyOutcome};

/// The most characters of the page's text shown to the model.
pub const MAX_PAGE_CHARS: usize = 12_000;

/// The most links of the page shown to the model.
pub const MAX_LINKS: usize = 150;

/// The most dropped jobs recorded one by one for a page; the rest are counted in one
/// more issue.
pub const MAX_DROP_ISSUES: usize = 10;

/// The longest line of the page's text taken as a job's description.
const MAX_DESCRIPTION_LINE: usize = 300;

/// The step name under which the call is made and its issues are recorded.
const STEP: &str = "scrape_jobs";

/// The system prompt of the careers-page reader.
pub const SYSTEM: &str = "You read a company's careers page and list the job openings it \
lists. Use only the page as given: copy each job's title exactly as the page writes it, and \
its URL exactly from the page's link list (the link to that job's own page). Give a location \
only when the page states it next to the job. Never add a job the page does not list; when it \
lists none, answer an empty list.";

/// The prompt for one page: the `Company:` and `Careers page:` lines, the page's text in
/// `<page_text>` and its links, one `- text -> URL` line each, in `<links>`.
pub fn prompt(company: &str, page_url: &str, text: &str, links: &[PageLink]) -> String {
    let mut listed = String::new();
    for link in links.iter().take(MAX_LINKS) {
        let text = if link.text.is_empty() {
            "(no text)"
        } else {
            link.text.as_str()
        };
        listed.push_str(&format!("- {text} -> {}\n", link.url));
    }
    if links.len() > MAX_LINKS {
        listed.push_str(&format!(
            "[... {} more links not shown]\n",
            links.len() - MAX_LINKS
        ));
    }
    format!(
        "Company: {company}\nCareers page: {page_url}\n\nList the job openings this careers page lists.\n\n<page_text>\n{text}\n</page_text>\n\n<links>\n{listed}</links>",
        text = clip(text, MAX_PAGE_CHARS),
    )
}

/// A problem met reading a page, recorded as a non-fatal issue of `scrape_jobs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageIssue {
    /// The issue's kind: `validation` (a job dropped), `llm` (the call failed), `limit`
    /// (the cost limit refused the call) or `careers_page` (no job could be read).
    pub kind: &'static str,
    /// What happened.
    pub message: String,
    /// The dropped job's URL, as the model gave it.
    pub job_url: Option<String>,
}

impl PageIssue {
    fn new(kind: &'static str, message: String) -> Self {
        PageIssue {
            kind,
            message,
            job_url: None,
        }
    }
}

/// What reading a careers page came to: the company's outcome, the jobs kept and the
/// problems to record.
#[derive(Debug, Clone, PartialEq)]
pub struct PageRead {
    /// `jobs_fetched` (source `career_page`) when a job was kept, else `unsupported_ats`.
    pub outcome: CompanyOutcome,
    /// The jobs kept.
    pub jobs: Vec<RawJob>,
    /// Jobs dropped and why, or why none could be read.
    pub issues: Vec<PageIssue>,
}

/// The jobs of the answer that the page bears out, and the others with the reason each
/// was dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct Grounded {
    /// The jobs kept, with the page's own URL for each.
    pub jobs: Vec<RawJob>,
    /// The jobs dropped: the job as the model gave it and why.
    pub dropped: Vec<(CareersPageJob, String)>,
}

/// A URL as compared with the page's links: absolute, no fragment, no trailing slash.
fn normalized(url: &Url) -> String {
    let mut url = url.clone();
    url.set_fragment(None);
    url.to_string().trim_end_matches('/').to_owned()
}

/// Whether `phrase` occurs in `text`, word for word.
fn has_phrase(text: &[String], phrase: &[String]) -> bool {
    !phrase.is_empty() && text.windows(phrase.len()).any(|window| window == phrase)
}

/// The line of `text` that carries `title`, when it is short enough to be about one job.
fn line_of(text: &str, title: &[String]) -> Option<String> {
    text.lines()
        .map(|line| line.trim().trim_start_matches("- ").trim())
        .find(|line| has_phrase(&words(line), title))
        .filter(|line| line.chars().count() <= MAX_DESCRIPTION_LINE)
        .map(str::to_owned)
}

/// Checks the model's `answer` against the page (see the module docs): what is kept
/// becomes a [`RawJob`] of `company` from [`JobSource::CareerPage`].
pub fn ground(
    company: &str,
    page: &FetchedPage,
    text: &str,
    links: &[PageLink],
    answer: CareersPageJobs,
) -> Grounded {
    let base = Url::parse(&page.url).ok();
    let page_key = base.as_ref().map(normalized);
    let on_page: Vec<(String, &PageLink)> = links
        .iter()
        .filter_map(|link| Url::parse(&link.url).ok().map(|u| (normalized(&u), link)))
        .collect();
    let text_words = words(text);
    let mut seen = HashSet::new();
    let mut grounded = Grounded {
        jobs: Vec::new(),
        dropped: Vec::new(),
    };
    for job in answer.jobs {
        let resolved = base
            .as_ref()
            .and_then(|base| base.join(job.url.trim()).ok())
            .or_else(|| Url::parse(job.url.trim()).ok());
        let key = resolved.as_ref().map(normalized);
        let link = key
            .as_ref()
            .and_then(|key| on_page.iter().find(|(k, _)| k == key))
            .map(|(_, link)| *link);
        let title = words(&job.title);
        let fault = if job.title.trim().is_empty() {
            Some("it has no title".to_owned())
        } else if link.is_none() {
            Some(format!("its URL {:?} is not a link of the page", job.url))
        } else if key.is_some() && key == page_key {
            Some("its URL is the careers page itself, not the job's own page".to_owned())
        } else if !has_phrase(&text_words, &title)
            && !link.is_some_and(|link| has_phrase(&words(&link.text), &title))
        {
            Some(format!(
                "its title {:?} is not in the page's text",
                job.title
            ))
        } else {
            None
        };
        let Some(link) = link.filter(|_| fault.is_none()) else {
            let reason = fault.unwrap_or_default();
            grounded.dropped.push((job, reason));
            continue;
        };
        if !seen.insert(key.unwrap_or_default()) {
            tracing::debug!(company, url = %link.url, "a job listed twice by the model is kept once");
            continue;
        }
        let location = job
            .location
            .map(|l| l.trim().to_owned())
            .filter(|l| !l.is_empty())
            .filter(|l| {
                let found = has_phrase(&text_words, &words(l));
                if !found {
                    tracing::debug!(company, location = %l, "a location not on the page is left out");
                }
                found
            });
        grounded.jobs.push(RawJob {
            source: JobSource::CareerPage,
            external_id: None,
            company: company.to_owned(),
            title: job.title.trim().to_owned(),
            location,
            remote: None,
            department: None,
            employment_type: None,
            url: link.url.clone(),
            apply_url: None,
            description: line_of(text, &title).unwrap_or_default(),
            posted_at: None,
            salary: None,
        });
    }
    grounded
}

/// Reads the jobs of `company` off `page` with one model call, journaled by the company
/// and the page's URL (a step re-run after a crash does not pay for it again). A model error or the
/// cost limit leaves the company `unsupported_ats`, with the reason as an issue; the
/// run goes on.
pub async fn read(company: &str, page: &FetchedPage, env: &StepEnv<'_>) -> PageRead {
    let unsupported = || CompanyOutcome::UnsupportedAts {
        careers_url: page.url.clone(),
    };
    let text = page.text();
    let links = page.links();
    if text.trim().is_empty() && links.is_empty() {
        return PageRead {
            outcome: unsupported(),
            jobs: Vec::new(),
            issues: vec![PageIssue::new(
                "careers_page",
                format!(
                    "careers page {} has no job board we can read and no text or links to read jobs from",
                    page.url
                ),
            )],
        };
    }
    let key = format!(
        "{STEP}:careers_page:{}",
        stable_key(&format!("{company}\n{}", page.url))
    );
    let answer = env
        .llm
        .extract_once::<CareersPageJobs>(
            env.ctx,
            &key,
            STEP,
            Quality::Fast,
            SYSTEM,
            prompt(company, &page.url, &text, &links),
        )
        .await;
    let answer = match answer {
        Ok(answer) => answer,
        Err(error) => {
            let kind = match error {
                LlmCallError::CostLimit(_) => "limit",
                LlmCallError::Failed(_) => "llm",
            };
            return PageRead {
                outcome: unsupported(),
                jobs: Vec::new(),
                issues: vec![PageIssue::new(
                    kind,
                    format!(
                        "careers page {} has no job board we can read, and its jobs could not be read: {error}",
                        page.url
                    ),
                )],
            };
        }
    };
    let listed = answer.jobs.len();
    let Grounded { jobs, dropped } = ground(company, page, &text, &links, answer);
    let mut issues: Vec<PageIssue> = dropped
        .iter()
        .take(MAX_DROP_ISSUES)
        .map(|(job, reason)| PageIssue {
            kind: "validation",
            message: format!(
                "job {:?} read off the careers page {} was dropped: {reason}",
                job.title, page.url
            ),
            job_url: Some(job.url.clone()),
        })
        .collect();
    if dropped.len() > MAX_DROP_ISSUES {
        issues.push(PageIssue::new(
            "validation",
            format!(
                "{} more jobs read off the careers page {} were dropped as not on the page",
                dropped.len() - MAX_DROP_ISSUES,
                page.url
            ),
        ));
    }
    tracing::info!(
        company,
        url = %page.url,
        listed,
        kept = jobs.len(),
        dropped = dropped.len(),
        "jobs read off a careers page"
    );
    if jobs.is_empty() {
        let why = if listed == 0 {
            "the model found no job listed on it".to_owned()
        } else {
            format!("none of the {listed} jobs the model listed is on the page")
        };
        issues.push(PageIssue::new(
            "careers_page",
            format!(
                "careers page {} has no job board we can read, and no job was read off it: {why}",
                page.url
            ),
        ));
        return PageRead {
            outcome: unsupported(),
            jobs,
            issues,
        };
    }
    PageRead {
        outcome: CompanyOutcome::JobsFetched {
            count: jobs.len(),
            source: JobSource::CareerPage,
        },
        jobs,
        issues,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HTML: &str = r#"<html><body><nav><a href="/">Home</a><a href="/careers/">Careers</a></nav>
<h1>Open roles</h1>
<ul>
<li><a href="/careers/data-engineer/">Data Engineer</a> <span>Leeds or remote (UK)</span></li>
<li><a href="https://jobs.example/apply/42#top">Backend Developer (Python)</a> <span>Leeds</span></li>
</ul></body></html>"#;

    fn job(title: &str, url: &str, location: Option<&str>) -> CareersPageJob {
        CareersPageJob {
            title: title.into(),
            url: url.into(),
            location: location.map(str::to_owned),
        }
    }

    fn grounded(jobs: Vec<CareersPageJob>) -> Grounded {
        let page = FetchedPage::from_html("https://oldmill.example/careers", HTML);
        ground(
            "Old Mill",
            &page,
            &page.text(),
            &page.links(),
            CareersPageJobs { jobs },
        )
    }

    #[test]
    fn a_job_on_the_page_is_kept_with_the_page_s_own_url() {
        let result = grounded(vec![
            // Relative, no trailing slash, other case and spacing.
            job(
                "data  ENGINEER",
                "/careers/data-engineer",
                Some("Leeds or remote (UK)"),
            ),
            // Absolute, with a fragment the link does not have.
            job(
                "Backend Developer (Python)",
                "https://jobs.example/apply/42#apply",
                Some("Manchester"),
            ),
        ]);
        assert!(result.dropped.is_empty(), "{:?}", result.dropped);
        let urls: Vec<&str> = result.jobs.iter().map(|j| j.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "https://oldmill.example/careers/data-engineer/",
                "https://jobs.example/apply/42"
            ]
        );
        let first = &result.jobs[0];
        assert_eq!(first.source, JobSource::CareerPage);
        assert_eq!(first.company, "Old Mill");
        assert_eq!(first.location.as_deref(), Some("Leeds or remote (UK)"));
        assert_eq!(first.description, "Data Engineer Leeds or remote (UK)");
        // A location the page does not state is left out, the job kept.
        assert_eq!(result.jobs[1].location, None);
    }

    #[test]
    fn jobs_the_page_does_not_bear_out_are_dropped_with_the_reason() {
        let result = grounded(vec![
            job("Data Engineer", "/careers/ml-engineer", None),
            job("Staff Rust Engineer", "/careers/data-engineer", None),
            job("Careers", "https://oldmill.example/careers/", None),
            job("  ", "/careers/data-engineer", None),
            job("Data Engineer", "/careers/data-engineer/", None),
            job("Data Engineer", "/careers/data-engineer#again", None),
            // The text of another link (the navigation is not in the page's text).
            job("Home", "/careers/data-engineer", None),
        ]);
        let reasons: Vec<&str> = result.dropped.iter().map(|(_, r)| r.as_str()).collect();
        assert_eq!(reasons.len(), 5, "{reasons:?}");
        assert!(
            reasons[0].contains("not a link of the page"),
            "{}",
            reasons[0]
        );
        assert!(
            reasons[1].contains("not in the page's text"),
            "{}",
            reasons[1]
        );
        assert!(
            reasons[2].contains("the careers page itself"),
            "{}",
            reasons[2]
        );
        assert!(reasons[3].contains("no title"), "{}", reasons[3]);
        assert!(
            reasons[4].contains("not in the page's text"),
            "{}",
            reasons[4]
        );
        // The same job twice is kept once.
        assert_eq!(result.jobs.len(), 1);
    }

    #[test]
    fn a_title_only_in_its_own_link_s_text_is_kept() {
        // The navigation is left out of the page's text, but this link is the job's own.
        let result = grounded(vec![job("Careers", "/careers/", None)]);
        // ... though here it is the careers page itself.
        assert!(result.jobs.is_empty());
        let result = grounded(vec![job("Home", "/", None)]);
        assert!(result.dropped.is_empty(), "{:?}", result.dropped);
        assert_eq!(result.jobs[0].url, "https://oldmill.example/");
        assert_eq!(result.jobs[0].description, "");
    }

    #[test]
    fn the_prompt_bounds_the_links_and_the_text() {
        let links: Vec<PageLink> = (0..MAX_LINKS + 5)
            .map(|n| PageLink {
                text: format!("Job {n}"),
                url: format!("https://x.example/jobs/{n}"),
            })
            .collect();
        let text = "word ".repeat(MAX_PAGE_CHARS);
        let prompt = prompt("Acme", "https://x.example/careers", &text, &links);
        assert!(prompt.contains(&format!("- Job {} ->", MAX_LINKS - 1)));
        assert!(!prompt.contains(&format!("- Job {} ->", MAX_LINKS)));
        assert!(prompt.contains("[... 5 more links not shown]"));
        assert!(prompt.contains(&format!("[... cut at {MAX_PAGE_CHARS} characters]")));
        assert!(prompt.starts_with("Company: Acme\nCareers page: https://x.example/careers\n"));
    }
}
