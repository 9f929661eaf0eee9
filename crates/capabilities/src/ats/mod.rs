//! Applicant-tracking-system (ATS) job boards: recognising a board from a URL or a
//! careers page, and reading its public job-board API into [`RawJob`]s.
//!
//! Four vendors are supported, each through its public, unauthenticated API:
//!
//! | Vendor | Request |
//! |---|---|
//! | Greenhouse | `GET {greenhouse}/v1/boards/{token}/jobs?content=true` |
//! | Lever | `GET {lever}/v0/postings/{token}?mode=json`; a board not found there is asked of Lever's EU API `{lever_eu}` |
//! | Ashby | `GET {ashby}/posting-api/job-board/{token}?includeCompensation=true` |
//! | Workday | `POST {workday or https://host}/wday/cxs/{tenant}/{site}/jobs`, paged; then `GET .../{site}{externalPath}` for the first postings' descriptions |
//!
//! The parsing is pure ([`parse_greenhouse`], [`parse_lever`], [`parse_ashby`],
//! [`parse_workday_list`]), so dry runs and tests use the same mapping code as
//! [`AtsClient`]. Fields a vendor does not publish are `None`, never guessed; a job
//! without a title or without a page address is skipped with a warning.

mod ashby;
mod detect;
mod greenhouse;
mod lever;
mod workday;

use std::fmt;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::http::{HttpError, PoliteClient};
use crate::job::{JobSource, RawJob};

pub use ashby::parse_ashby;
pub use detect::{detect_ats, detect_ats_in_html};
pub use greenhouse::parse_greenhouse;
pub use lever::parse_lever;
pub use workday::{MAX_DETAILS as MAX_WORKDAY_DETAILS, apply_workday_detail, parse_workday_list};

/// The ATS vendors this module reads.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum AtsKind {
    /// Greenhouse (`boards.greenhouse.io`, `job-boards.greenhouse.io`).
    Greenhouse,
    /// Lever (`jobs.lever.co`).
    Lever,
    /// Ashby (`jobs.ashbyhq.com`).
    Ashby,
    /// Workday (`{tenant}.wdN.myworkdayjobs.com`).
    Workday,
}

impl AtsKind {
    /// The lower-case name: `greenhouse`, `lever`, `ashby`, `workday`.
    pub fn as_str(self) -> &'static str {
        match self {
            AtsKind::Greenhouse => "greenhouse",
            AtsKind::Lever => "lever",
            AtsKind::Ashby => "ashby",
            AtsKind::Workday => "workday",
        }
    }

    /// The [`JobSource`] of jobs read from this vendor.
    pub fn source(self) -> JobSource {
        match self {
            AtsKind::Greenhouse => JobSource::Greenhouse,
            AtsKind::Lever => JobSource::Lever,
            AtsKind::Ashby => JobSource::Ashby,
            AtsKind::Workday => JobSource::Workday,
        }
    }
}

impl fmt::Display for AtsKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One company's job board on one vendor.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct AtsBoard {
    /// The vendor.
    pub kind: AtsKind,
    /// The vendor's name for the board, as written in the URL: the Greenhouse board
    /// token, the Lever company slug, the Ashby job-board name or the Workday tenant.
    pub token: String,
    /// Where a Workday board lives (`Some` exactly when `kind` is Workday).
    pub workday: Option<WorkdaySite>,
}

/// A Workday career site: the host, tenant and site name its API needs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct WorkdaySite {
    /// The host, lower-case, e.g. `nvidia.wd5.myworkdayjobs.com`.
    pub host: String,
    /// The tenant, e.g. `nvidia`.
    pub tenant: String,
    /// The career site's name, e.g. `NVIDIAExternalCareerSite`.
    pub site: String,
    /// The locale the site's URL carried (`en-US`), if any; posting pages use it.
    pub locale: Option<String>,
}

/// The API base URLs of the vendors (no trailing slash), configurable so tests and dry
/// runs can point the clients at a local server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtsEndpoints {
    /// Greenhouse job-board API (`GREENHOUSE_API_BASE`).
    pub greenhouse: String,
    /// Lever postings API (`LEVER_API_BASE`).
    pub lever: String,
    /// Lever's EU postings API, for boards hosted in the EU (`LEVER_EU_API_BASE`).
    pub lever_eu: String,
    /// Ashby posting API (`ASHBY_API_BASE`).
    pub ashby: String,
    /// Workday API base (`WORKDAY_API_BASE`); `None` asks each site's own host,
    /// `https://{WorkdaySite::host}`.
    pub workday: Option<String>,
}

impl Default for AtsEndpoints {
    /// The vendors' public API addresses.
    fn default() -> Self {
        AtsEndpoints {
            greenhouse: "https://boards-api.greenhouse.io".to_owned(),
            lever: "https://api.lever.co".to_owned(),
            lever_eu: "https://api.eu.lever.co".to_owned(),
            ashby: "https://api.ashbyhq.com".to_owned(),
            workday: None,
        }
    }
}

impl AtsEndpoints {
    /// Reads `GREENHOUSE_API_BASE`, `LEVER_API_BASE`, `ASHBY_API_BASE` and
    /// `WORKDAY_API_BASE` from the environment; unset or empty ones keep the defaults.
    pub fn from_env() -> Self {
        AtsEndpoints::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`AtsEndpoints::from_env`], reading variables through `lookup` (for tests).
    /// Surrounding whitespace and trailing slashes are trimmed.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let read = |name: &str| {
            lookup(name)
                .map(|value| value.trim().trim_end_matches('/').to_owned())
                .filter(|value| !value.is_empty())
        };
        let defaults = AtsEndpoints::default();
        AtsEndpoints {
            greenhouse: read("GREENHOUSE_API_BASE").unwrap_or(defaults.greenhouse),
            lever: read("LEVER_API_BASE").unwrap_or(defaults.lever),
            // A replaced global base (a local server in tests) stands in for the EU one too.
            lever_eu: read("LEVER_EU_API_BASE")
                .or_else(|| read("LEVER_API_BASE"))
                .unwrap_or(defaults.lever_eu),
            ashby: read("ASHBY_API_BASE").unwrap_or(defaults.ashby),
            workday: read("WORKDAY_API_BASE"),
        }
    }
}

/// Why reading a job board failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AtsError {
    /// The vendor has no such board (HTTP 404), or a Workday board came without its
    /// [`WorkdaySite`].
    #[error("no {kind} job board {token:?}")]
    BoardNotFound {
        /// The vendor.
        kind: AtsKind,
        /// The board asked for.
        token: String,
    },
    /// The request failed; [`HttpError::Blocked`] means the vendor refused us.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// The body was not the JSON the vendor's API returns.
    #[error("unexpected {kind} response: {message}")]
    Parse {
        /// The vendor.
        kind: AtsKind,
        /// What did not match, starting with the field path.
        message: String,
    },
}

impl AtsError {
    /// Whether the vendor refused us (403, or a 429 we may not wait out).
    pub fn is_blocked(&self) -> bool {
        matches!(self, AtsError::Http(error) if error.is_blocked())
    }
}

/// Something that lists a job board's open postings.
#[async_trait]
pub trait JobBoardClient: Send + Sync {
    /// All open postings of `board`, mapped to [`RawJob`]s; `company` names the hiring
    /// company where the vendor does not.
    async fn fetch_jobs(&self, board: &AtsBoard, company: &str) -> Result<Vec<RawJob>, AtsError>;
}

/// Reads the four vendors' public APIs through a [`PoliteClient`].
///
/// ```
/// use job_capabilities::ats::{AtsClient, AtsEndpoints};
/// use job_capabilities::http::{PoliteClient, PolitePolicy};
/// let client = AtsClient::new(PoliteClient::new(PolitePolicy::default()), AtsEndpoints::default());
/// # let _ = client;
/// ```
#[derive(Debug, Clone)]
pub struct AtsClient {
    http: PoliteClient,
    endpoints: AtsEndpoints,
}

impl AtsClient {
    /// A client asking the vendors at `endpoints`.
    pub fn new(http: PoliteClient, endpoints: AtsEndpoints) -> Self {
        AtsClient { http, endpoints }
    }

    /// The API bases in use.
    pub fn endpoints(&self) -> &AtsEndpoints {
        &self.endpoints
    }
}

#[async_trait]
impl JobBoardClient for AtsClient {
    async fn fetch_jobs(&self, board: &AtsBoard, company: &str) -> Result<Vec<RawJob>, AtsError> {
        let token = board.token.as_str();
        let jobs = match board.kind {
            AtsKind::Greenhouse => {
                let url = api_url(
                    &self.endpoints.greenhouse,
                    &["v1", "boards", token, "jobs"],
                    &[("content", "true")],
                )?;
                let body = get(&self.http, url, board).await?;
                parse_greenhouse(&body, company)?
            }
            AtsKind::Lever => {
                let postings =
                    |base: &str| api_url(base, &["v0", "postings", token], &[("mode", "json")]);
                let endpoints = &self.endpoints;
                let body = match get(&self.http, postings(&endpoints.lever)?, board).await {
                    // Boards hosted in the EU (`jobs.eu.lever.co`) live on the EU API only.
                    Err(not_found @ AtsError::BoardNotFound { .. })
                        if endpoints.lever_eu != endpoints.lever =>
                    {
                        tracing::debug!(token, "no such Lever board; asking Lever's EU API");
                        match get(&self.http, postings(&endpoints.lever_eu)?, board).await {
                            Ok(body) => body,
                            Err(error @ AtsError::BoardNotFound { .. }) => return Err(error),
                            Err(error) => {
                                tracing::warn!(token, %error, "Lever's EU API could not be asked; the board is taken as missing");
                                return Err(not_found);
                            }
                        }
                    }
                    other => other?,
                };
                parse_lever(&body, company)?
            }
            AtsKind::Ashby => {
                let url = api_url(
                    &self.endpoints.ashby,
                    &["posting-api", "job-board", token],
                    &[("includeCompensation", "true")],
                )?;
                let body = get(&self.http, url, board).await?;
                parse_ashby(&body, company)?
            }
            AtsKind::Workday => workday::fetch(&self.http, &self.endpoints, board, company).await?,
        };
        tracing::info!(kind = %board.kind, token, count = jobs.len(), "job board read");
        Ok(jobs)
    }
}

/// `base` with `segments` appended as path segments (percent-encoded) and `query` set.
fn api_url(base: &str, segments: &[&str], query: &[(&str, &str)]) -> Result<Url, AtsError> {
    let invalid = |message: String| {
        AtsError::Http(HttpError::Transport {
            url: base.to_owned(),
            message,
        })
    };
    let mut url = Url::parse(base).map_err(|e| invalid(format!("invalid API base: {e}")))?;
    url.path_segments_mut()
        .map_err(|()| invalid("the API base cannot take a path".to_owned()))?
        .pop_if_empty()
        .extend(segments);
    if !query.is_empty() {
        url.query_pairs_mut().extend_pairs(query);
    }
    Ok(url)
}

/// GETs `url` as JSON and returns the body; a 404 means the board does not exist.
async fn get(http: &PoliteClient, url: Url, board: &AtsBoard) -> Result<Vec<u8>, AtsError> {
    let text = url.to_string();
    let request = http
        .inner()
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .build()
        .map_err(|e| HttpError::transport(&text, &e))?;
    send(http, request, board).await
}

/// Sends `request` politely and returns the body; a 404 means the board does not exist.
async fn send(
    http: &PoliteClient,
    request: reqwest::Request,
    board: &AtsBoard,
) -> Result<Vec<u8>, AtsError> {
    let url = request.url().to_string();
    match http.execute(request).await {
        Ok(response) => Ok(response
            .bytes()
            .await
            .map_err(|e| HttpError::transport(&url, &e))?
            .to_vec()),
        Err(HttpError::Status { status: 404, .. }) => Err(AtsError::BoardNotFound {
            kind: board.kind,
            token: board.token.clone(),
        }),
        Err(error) => Err(error.into()),
    }
}

/// Decodes `body` as JSON into `T`; errors name the vendor and the field path.
fn decode<T: DeserializeOwned>(kind: AtsKind, body: &[u8]) -> Result<T, AtsError> {
    let parse_error = |path: String, message: String| AtsError::Parse {
        kind,
        message: format!("at `{path}`: {message}"),
    };
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut deserializer)
        .map_err(|e| parse_error(e.path().to_string(), e.inner().to_string()))?;
    deserializer
        .end()
        .map_err(|e| parse_error(".".to_owned(), e.to_string()))?;
    Ok(value)
}

/// A vendor id that may come as a number or a string.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Id {
    Number(u64),
    Text(String),
}

impl Id {
    fn into_string(self) -> String {
        match self {
            Id::Number(n) => n.to_string(),
            Id::Text(s) => s,
        }
    }
}

/// The trimmed text, or `None` when absent or blank.
fn text(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// An RFC 3339 timestamp in UTC; `None` (logged) when it does not parse.
fn timestamp(kind: AtsKind, value: Option<&str>) -> Option<DateTime<Utc>> {
    let value = value?.trim();
    match DateTime::parse_from_rfc3339(value) {
        Ok(at) => Some(at.with_timezone(&Utc)),
        Err(error) => {
            tracing::debug!(%kind, value, %error, "unreadable timestamp ignored");
            None
        }
    }
}

/// The locations, first the primary, without repeats, joined by `; `.
fn join_locations(locations: impl IntoIterator<Item = Option<String>>) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    for location in locations.into_iter().filter_map(text) {
        if !seen.iter().any(|s| s.eq_ignore_ascii_case(&location)) {
            seen.push(location);
        }
    }
    (!seen.is_empty()).then(|| seen.join("; "))
}

/// Counts the postings a parser had to drop, and reports them once.
#[derive(Debug, Default)]
struct Skipped {
    untitled: usize,
    without_url: usize,
}

impl Skipped {
    /// The posting's title and page, or `None` (counted) when either is missing.
    fn check(&mut self, title: Option<String>, url: Option<String>) -> Option<(String, String)> {
        let Some(title) = text(title) else {
            self.untitled += 1;
            return None;
        };
        let Some(url) = text(url) else {
            self.without_url += 1;
            return None;
        };
        Some((title, url))
    }

    fn report(&self, kind: AtsKind) {
        if self.untitled > 0 {
            tracing::warn!(%kind, skipped = self.untitled, "postings without a title skipped");
        }
        if self.without_url > 0 {
            tracing::warn!(%kind, skipped = self.without_url, "postings without a page address skipped");
        }
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn endpoints_default_and_trim() {
        let defaults = AtsEndpoints::from_lookup(|_| None);
        assert_eq!(defaults, AtsEndpoints::default());
        assert_eq!(defaults.greenhouse, "https://boards-api.greenhouse.io");
        assert_eq!(defaults.workday, None);
        let custom = AtsEndpoints::from_lookup(|name| match name {
            "LEVER_API_BASE" => Some("http://127.0.0.1:9/lever//".to_owned()),
            "WORKDAY_API_BASE" => Some("http://127.0.0.1:9/".to_owned()),
            "ASHBY_API_BASE" => Some("  ".to_owned()),
            _ => None,
        });
        assert_eq!(custom.lever, "http://127.0.0.1:9/lever");
        // A replaced global Lever base stands in for the EU one: no request leaves a test.
        assert_eq!(custom.lever_eu, custom.lever);
        assert_eq!(defaults.lever_eu, "https://api.eu.lever.co");
        assert_eq!(custom.workday.as_deref(), Some("http://127.0.0.1:9"));
        assert_eq!(custom.ashby, "https://api.ashbyhq.com");
    }

    #[test]
    fn api_urls_keep_the_base_path_and_encode_segments() {
        let url = api_url(
            "http://127.0.0.1:9/proxy",
            &["posting-api", "job-board", "The Browser Company"],
            &[("includeCompensation", "true")],
        )
        .unwrap();
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:9/proxy/posting-api/job-board/The%20Browser%20Company?includeCompensation=true"
        );
        assert!(matches!(
            api_url("not a url", &["x"], &[]),
            Err(AtsError::Http(HttpError::Transport { .. }))
        ));
    }

    #[test]
    fn decode_names_the_vendor_and_path() {
        #[derive(Debug, Deserialize)]
        struct Board {
            #[allow(dead_code)]
            jobs: Vec<String>,
        }
        let err = decode::<Board>(AtsKind::Lever, br#"{"jobs": ["a", 2]}"#).unwrap_err();
        let AtsError::Parse { kind, message } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(*kind, AtsKind::Lever);
        assert!(message.contains("jobs[1]"), "{message}");
        assert!(
            err.to_string().starts_with("unexpected lever response"),
            "{err}"
        );
    }

    #[test]
    fn locations_are_joined_without_repeats() {
        assert_eq!(
            join_locations([
                Some("London".into()),
                Some("london".into()),
                Some(" Stockholm ".into()),
                None
            ]),
            Some("London; Stockholm".into())
        );
        assert_eq!(join_locations([None, Some(" ".into())]), None);
    }
}
