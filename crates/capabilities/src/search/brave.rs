//! The Brave Search API (web search).

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::ACCEPT;
use serde::Deserialize;

use super::{SearchError, SearchHit, WebSearch};
use crate::html::html_to_text;
use crate::http::{HttpError, PoliteClient, PolitePolicy};

/// The API root used when `BRAVE_API_BASE` is not set.
pub const BRAVE_DEFAULT_BASE_URL: &str = "https://api.search.brave.com/res/v1";

/// The most results Brave returns for one request.
const MAX_COUNT: usize = 20;

/// Web search through the Brave Search API: `GET {base}/web/search?q=…&count=…` with the
/// key in `X-Subscription-Token`.
///
/// The key is never logged, and `Debug` shows it redacted.
///
/// ```no_run
/// use job_capabilities::http::{PoliteClient, PolitePolicy};
/// use job_capabilities::search::{BraveSearch, WebSearch};
/// # async fn run() -> Result<(), job_capabilities::search::SearchError> {
/// let brave = BraveSearch::new(
///     "my-key".into(),
///     "https://api.search.brave.com/res/v1".into(),
///     PoliteClient::new(PolitePolicy::default()),
/// );
/// for hit in brave.search("rust engineer jobs berlin", 10).await? {
///     tracing::info!(title = %hit.title, url = %hit.url, snippet = %hit.snippet, "hit");
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct BraveSearch {
    api_key: String,
    base_url: String,
    client: PoliteClient,
}

impl fmt::Debug for BraveSearch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BraveSearch")
            .field("api_key", &"[redacted]")
            .field("base_url", &self.base_url)
            .field("client", &self.client)
            .finish()
    }
}

impl BraveSearch {
    /// A client for the API at `base_url` (such as [`BRAVE_DEFAULT_BASE_URL`], without the
    /// `/web/search` path) sending requests through `client`.
    pub fn new(api_key: String, base_url: String, client: PoliteClient) -> Self {
        BraveSearch {
            api_key,
            base_url: base_url.trim_end_matches('/').to_owned(),
            client,
        }
    }

    /// From the environment: the key from `BRAVE_API_KEY` (`None` when unset or empty),
    /// the API root from `BRAVE_API_BASE` (default [`BRAVE_DEFAULT_BASE_URL`]).
    pub fn from_env() -> Option<Self> {
        BraveSearch::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`BraveSearch::from_env`] reading variables through `lookup`. Requests to one
    /// host are spaced one second apart, the free plan's rate.
    ///
    /// ```
    /// use job_capabilities::search::BraveSearch;
    /// let env = |name: &str| match name {
    ///     "BRAVE_API_KEY" => Some("secret-key".to_owned()),
    ///     _ => None,
    /// };
    /// let brave = BraveSearch::from_lookup(env).unwrap();
    /// assert_eq!(brave.base_url(), "https://api.search.brave.com/res/v1");
    /// assert!(!format!("{brave:?}").contains("secret-key"));
    /// assert!(BraveSearch::from_lookup(|_| Some("  ".to_owned())).is_none());
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let api_key = lookup("BRAVE_API_KEY")
            .map(|key| key.trim().to_owned())
            .filter(|key| !key.is_empty())?;
        let base_url = lookup("BRAVE_API_BASE")
            .map(|base| base.trim().to_owned())
            .filter(|base| !base.is_empty())
            .unwrap_or_else(|| BRAVE_DEFAULT_BASE_URL.to_owned());
        let client = PoliteClient::new(PolitePolicy {
            min_interval_per_host: Duration::from_secs(1),
            ..PolitePolicy::default()
        });
        Some(BraveSearch::new(api_key, base_url, client))
    }

    /// The API root in use.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }
}

#[async_trait]
impl WebSearch for BraveSearch {
    fn provider(&self) -> &str {
        "brave"
    }

    /// Asks for `count` results (capped at Brave's maximum of 20); an empty query or a
    /// zero count returns no hits without a request.
    async fn search(&self, query: &str, count: usize) -> Result<Vec<SearchHit>, SearchError> {
        let query = query.trim();
        let count = count.min(MAX_COUNT);
        if query.is_empty() || count == 0 {
            return Ok(Vec::new());
        }
        let url = format!("{}/web/search", self.base_url);
        let request = self
            .client
            .inner()
            .get(&url)
            .query(&[("q", query), ("count", &count.to_string())])
            .header(ACCEPT, "application/json")
            .header("X-Subscription-Token", &self.api_key)
            .build()
            .map_err(|e| HttpError::transport(&url, &e))?;
        let started = std::time::Instant::now();
        let bytes = self
            .client
            .execute(request)
            .await
            .map_err(|error| {
                let error = SearchError::from(error);
                tracing::warn!(provider = "brave", %error, "search failed");
                error
            })?
            .bytes()
            .await
            .map_err(|e| HttpError::transport(&url, &e))?;
        let response: Response =
            serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_slice(&bytes))
                .map_err(|e| SearchError::Parse {
                    message: e.to_string(),
                })?;
        let hits: Vec<SearchHit> = response
            .web
            .map(|web| web.results)
            .unwrap_or_default()
            .into_iter()
            .filter(|result| !result.url.is_empty())
            .take(count)
            .map(|result| SearchHit {
                title: plain(&result.title),
                url: result.url,
                snippet: plain(&result.description),
            })
            .collect();
        tracing::debug!(
            provider = "brave",
            hits = hits.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "searched"
        );
        Ok(hits)
    }
}

/// Text with markup (`<strong>`) stripped and entities decoded, on one line.
fn plain(html: &str) -> String {
    html_to_text(html).lines().collect::<Vec<_>>().join(" ")
}

/// The part of a `WebSearchApiResponse` used here; `web` is absent without results.
#[derive(Debug, Deserialize)]
struct Response {
    #[serde(default)]
    web: Option<Web>,
}

#[derive(Debug, Deserialize)]
struct Web {
    #[serde(default)]
    results: Vec<WebResult>,
}

#[derive(Debug, Deserialize)]
struct WebResult {
    #[serde(default)]
    title: String,
    url: String,
    #[serde(default)]
    description: String,
}
