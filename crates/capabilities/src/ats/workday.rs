//! Workday career sites: `POST /wday/cxs/{tenant}/{site}/jobs`, paged.

use chrono::{DateTime, TimeDelta, Utc};
use serde::Deserialize;

use super::{
    AtsBoard, AtsEndpoints, AtsError, AtsKind, Skipped, WorkdaySite, api_url, decode, get, send,
    text,
};
use crate::html::html_to_text;
use crate::http::{HttpError, PoliteClient};
use crate::job::RawJob;

/// Postings asked for per page.
const PAGE_SIZE: usize = 20;
/// The most postings read from one site.
const MAX_POSTINGS: usize = 200;
/// The most postings whose description is read from their detail (one request each,
/// paced by the polite client like every other request to the site).
pub const MAX_DETAILS: usize = 25;

/// A posting's detail: `GET /wday/cxs/{tenant}/{site}{externalPath}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Detail {
    job_posting_info: Option<DetailInfo>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DetailInfo {
    /// HTML.
    job_description: Option<String>,
    /// `Full time`, `Part time`.
    time_type: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Page {
    /// Sites send the real total on the first page and often `0` on later ones.
    total: Option<usize>,
    job_postings: Vec<Posting>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Posting {
    title: Option<String>,
    /// `/job/{location}/{slug}_{requisition}`.
    external_path: Option<String>,
    locations_text: Option<String>,
    /// `Posted Today`, `Posted Yesterday`, `Posted 3 Days Ago`, `Posted 30+ Days Ago`.
    posted_on: Option<String>,
    bullet_fields: Option<Vec<String>>,
}

/// One page, mapped.
struct MappedPage {
    total: usize,
    postings: usize,
    /// The jobs, each with its `externalPath` (where its detail is).
    jobs: Vec<(RawJob, String)>,
}

/// Maps one page of a Workday `POST /wday/cxs/{tenant}/{site}/jobs` answer to jobs.
///
/// The list endpoint has no descriptions, so `description` is empty (a posting's text
/// is only in its detail page). The location is `locationsText` as published (which may
/// read "2 Locations"); `external_id` is `bulletFields[0]` (the requisition id); the
/// page is `https://{host}/{site}{externalPath}`, with the site's locale before the
/// site name when its URL had one, as Workday's own `externalUrl` reads. `postedOn` is
/// relative text: "Today", "Yesterday" and "N Days Ago" give an approximate `posted_at`
/// (now minus N days), anything else ("30+ Days Ago") none.
///
/// `endpoints` does not change the mapping: posting pages live on the site's public
/// host even when the API base is overridden.
pub fn parse_workday_list(
    body: &[u8],
    site: &WorkdaySite,
    company: &str,
    endpoints: &AtsEndpoints,
) -> Result<Vec<RawJob>, AtsError> {
    let _ = endpoints;
    let page = map_page(body, site, company, Utc::now())?;
    Ok(page.jobs.into_iter().map(|(job, _)| job).collect())
}

/// Fills a job from its posting's detail body: the description (the `jobDescription`
/// HTML as text) and the employment type (`timeType`). A body without them leaves the
/// job as it is.
pub fn apply_workday_detail(job: &mut RawJob, body: &[u8]) -> Result<(), AtsError> {
    let detail: Detail = decode(AtsKind::Workday, body)?;
    let Some(info) = detail.job_posting_info else {
        return Ok(());
    };
    if let Some(html) = text(info.job_description) {
        job.description = html_to_text(&html);
    }
    if job.employment_type.is_none() {
        job.employment_type = text(info.time_type);
    }
    Ok(())
}

fn map_page(
    body: &[u8],
    site: &WorkdaySite,
    company: &str,
    now: DateTime<Utc>,
) -> Result<MappedPage, AtsError> {
    let page: Page = decode(AtsKind::Workday, body)?;
    let postings = page.job_postings.len();
    let mut skipped = Skipped::default();
    let jobs = page
        .job_postings
        .into_iter()
        .filter_map(|posting| {
            let path = text(posting.external_path);
            let url = path.as_deref().map(|path| page_url(site, path));
            let (title, url) = skipped.check(posting.title, url)?;
            let job = RawJob {
                source: AtsKind::Workday.source(),
                external_id: text(posting.bullet_fields.and_then(|f| f.into_iter().next())),
                company: company.to_owned(),
                title,
                location: text(posting.locations_text),
                remote: None,
                department: None,
                employment_type: None,
                url,
                apply_url: None,
                description: String::new(),
                posted_at: posting.posted_on.as_deref().and_then(|p| posted_at(p, now)),
                salary: None,
            };
            Some((job, path.unwrap_or_default()))
        })
        .collect();
    skipped.report(AtsKind::Workday);
    Ok(MappedPage {
        total: page.total.unwrap_or_default(),
        postings,
        jobs,
    })
}

fn page_url(site: &WorkdaySite, external_path: &str) -> String {
    let path = external_path.trim_start_matches('/');
    match site.locale.as_deref() {
        Some(locale) => format!("https://{}/{locale}/{}/{path}", site.host, site.site),
        None => format!("https://{}/{}/{path}", site.host, site.site),
    }
}

/// The approximate publication time `postedOn` text states, relative to `now`.
fn posted_at(posted_on: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let lower = posted_on.trim().to_ascii_lowercase();
    let rest = lower.strip_prefix("posted").unwrap_or(&lower).trim();
    let days = match rest {
        "today" => 0,
        "yesterday" => 1,
        _ => rest
            .strip_suffix("days ago")
            .or_else(|| rest.strip_suffix("day ago"))?
            .trim()
            .parse::<i64>()
            .ok()?,
    };
    now.checked_sub_signed(TimeDelta::try_days(days)?)
}

/// Reads a Workday site page by page: until the total is reached, a page comes back
/// empty, or [`MAX_POSTINGS`] postings were read (logged).
pub(super) async fn fetch(
    http: &PoliteClient,
    endpoints: &AtsEndpoints,
    board: &AtsBoard,
    company: &str,
) -> Result<Vec<RawJob>, AtsError> {
    let Some(site) = board.workday.as_ref() else {
        tracing::warn!(token = %board.token, "a Workday board needs its site (host and name)");
        return Err(AtsError::BoardNotFound {
            kind: AtsKind::Workday,
            token: board.token.clone(),
        });
    };
    let base = endpoints
        .workday
        .clone()
        .unwrap_or_else(|| format!("https://{}", site.host));
    let url = api_url(
        &base,
        &["wday", "cxs", &site.tenant, &site.site, "jobs"],
        &[],
    )?;
    let mut jobs = Vec::new();
    let (mut offset, mut total, mut read) = (0, 0, 0);
    loop {
        let body = serde_json::json!({
            "appliedFacets": {},
            "limit": PAGE_SIZE,
            "offset": offset,
            "searchText": "",
        });
        let request = http
            .inner()
            .post(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .json(&body)
            .build()
            .map_err(|e| HttpError::transport(url.as_str(), &e))?;
        let bytes = send(http, request, board).await?;
        let page = map_page(&bytes, site, company, Utc::now())?;
        total = total.max(page.total);
        if page.postings == 0 {
            break;
        }
        read += page.postings;
        jobs.extend(page.jobs);
        offset += PAGE_SIZE;
        if offset >= total {
            break;
        }
        if read >= MAX_POSTINGS || offset >= MAX_POSTINGS {
            tracing::info!(
                tenant = %site.tenant,
                site = %site.site,
                total,
                read,
                cap = MAX_POSTINGS,
                "Workday site capped"
            );
            break;
        }
    }
    jobs.truncate(MAX_POSTINGS);
    read_descriptions(http, &base, site, board, &mut jobs).await;
    Ok(jobs.into_iter().map(|(job, _)| job).collect())
}

/// Reads the description of the first [`MAX_DETAILS`] postings from their details, one
/// request at a time through the polite client. A detail that cannot be read leaves its
/// job without a description (logged); the list is never lost for it.
async fn read_descriptions(
    http: &PoliteClient,
    base: &str,
    site: &WorkdaySite,
    board: &AtsBoard,
    jobs: &mut [(RawJob, String)],
) {
    let (mut read, mut failed) = (0, 0);
    for (job, path) in jobs.iter_mut().take(MAX_DETAILS) {
        let mut segments = vec!["wday", "cxs", site.tenant.as_str(), site.site.as_str()];
        segments.extend(path.split('/').filter(|s| !s.is_empty()));
        let fetched = match api_url(base, &segments, &[]) {
            Ok(url) => get(http, url, board).await,
            Err(error) => Err(error),
        };
        match fetched.and_then(|body| apply_workday_detail(job, &body)) {
            Ok(()) => read += 1,
            Err(error) => {
                failed += 1;
                tracing::warn!(url = %job.url, %error, "a Workday posting's detail could not be read; it keeps no description");
            }
        }
    }
    tracing::info!(
        tenant = %site.tenant,
        read,
        failed,
        without = jobs.len().saturating_sub(MAX_DETAILS),
        "Workday descriptions read from the postings' details"
    );
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn posted_on_text() {
        let now = DateTime::parse_from_rfc3339("2026-11-21T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let days_ago = |d: i64| Some(now - TimeDelta::days(d));
        assert_eq!(posted_at("Posted Today", now), days_ago(0));
        assert_eq!(posted_at("Posted Yesterday", now), days_ago(1));
        assert_eq!(posted_at("Posted 3 Days Ago", now), days_ago(3));
        assert_eq!(posted_at("posted 1 day ago", now), days_ago(1));
        assert_eq!(posted_at("Posted 30+ Days Ago", now), None);
        assert_eq!(posted_at("Posted a while ago", now), None);
        assert_eq!(posted_at("", now), None);
    }

    #[test]
    fn page_urls_with_and_without_locale() {
        let mut site = WorkdaySite {
            host: "nvidia.wd5.myworkdayjobs.com".into(),
            tenant: "nvidia".into(),
            site: "NVIDIAExternalCareerSite".into(),
            locale: None,
        };
        assert_eq!(
            page_url(&site, "/job/US-CA/Engineer_JR1"),
            "https://nvidia.wd5.myworkdayjobs.com/NVIDIAExternalCareerSite/job/US-CA/Engineer_JR1"
        );
        site.locale = Some("en-US".into());
        assert_eq!(
            page_url(&site, "/job/US-CA/Engineer_JR1"),
            "https://nvidia.wd5.myworkdayjobs.com/en-US/NVIDIAExternalCareerSite/job/US-CA/Engineer_JR1"
        );
    }
}
