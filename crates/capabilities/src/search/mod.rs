//! Web search behind a trait, with the Brave Search API as the real provider.
//!
//! Products hold an `Arc<dyn WebSearch>`: [`web_search_from_env`] gives the configured
//! provider (or `None` when no key is set, so search can be switched off), and tests or
//! dry runs substitute their own implementation.

mod brave;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub use brave::{BRAVE_DEFAULT_BASE_URL, BraveSearch};

use crate::http::HttpError;

/// One web search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchHit {
    /// The page title, as plain text.
    pub title: String,
    /// The page address.
    pub url: String,
    /// The provider's excerpt, as plain text (markup stripped, entities decoded).
    pub snippet: String,
}

/// Why a search failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SearchError {
    /// The provider rejected the API key (401, or 403).
    #[error("the search provider rejected the API key (HTTP {status})")]
    Auth {
        /// The status received.
        status: u16,
    },
    /// The provider's rate limit was hit and did not clear within the retries allowed.
    #[error("the search provider's rate limit was hit{}", retry_after.map(|d| format!(" (retry after {} s)", d.as_secs())).unwrap_or_default())]
    RateLimited {
        /// The wait the provider asked for, if any.
        retry_after: Option<Duration>,
    },
    /// Any other HTTP failure: status, timeout or transport.
    #[error(transparent)]
    Http(HttpError),
    /// The response was not the JSON expected.
    #[error("unexpected search response: {message}")]
    Parse {
        /// The decoding error, with its field path.
        message: String,
    },
}

impl From<HttpError> for SearchError {
    /// Sorts refusals: 401 and 403 are [`SearchError::Auth`], a 429 that persisted is
    /// [`SearchError::RateLimited`], the rest [`SearchError::Http`].
    fn from(error: HttpError) -> Self {
        match error {
            HttpError::Status { status: 401, .. } => SearchError::Auth { status: 401 },
            HttpError::Blocked { status: 403, .. } => SearchError::Auth { status: 403 },
            HttpError::Blocked {
                status: 429,
                retry_after,
                ..
            } => SearchError::RateLimited { retry_after },
            other => SearchError::Http(other),
        }
    }
}

/// A web search provider.
#[async_trait]
pub trait WebSearch: Send + Sync {
    /// The provider's name, for logs and reports (`"brave"`).
    fn provider(&self) -> &str;

    /// Searches the web for `query` and returns at most `count` hits, best first (fewer
    /// when the provider caps the count or has fewer results).
    async fn search(&self, query: &str, count: usize) -> Result<Vec<SearchHit>, SearchError>;
}

/// The web search configured in the environment: Brave when `BRAVE_API_KEY` is set (see
/// [`BraveSearch::from_env`]), otherwise `None`, logged at info level.
///
/// ```
/// use job_capabilities::search::web_search_from_env;
/// match web_search_from_env() {
///     Some(search) => assert_eq!(search.provider(), "brave"),
///     None => { /* search is switched off */ }
/// }
/// ```
pub fn web_search_from_env() -> Option<Arc<dyn WebSearch>> {
    web_search_from_lookup(|name| std::env::var(name).ok())
}

/// [`web_search_from_env`] reading variables through `lookup`, so callers (and tests)
/// can supply them without touching the process environment.
///
/// ```
/// use job_capabilities::search::web_search_from_lookup;
/// assert!(web_search_from_lookup(|_| None).is_none());
/// let search = web_search_from_lookup(|name| (name == "BRAVE_API_KEY").then(|| "k".to_owned()));
/// assert_eq!(search.map(|s| s.provider().to_owned()).as_deref(), Some("brave"));
/// ```
pub fn web_search_from_lookup(
    lookup: impl Fn(&str) -> Option<String>,
) -> Option<Arc<dyn WebSearch>> {
    match BraveSearch::from_lookup(lookup) {
        Some(brave) => {
            tracing::info!(provider = "brave", base_url = %brave.base_url(), "web search enabled");
            Some(Arc::new(brave))
        }
        None => {
            tracing::info!("web search disabled: BRAVE_API_KEY is not set");
            None
        }
    }
}
