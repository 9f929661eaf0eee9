//! Career-page fetching with an address guard.
//!
//! [`PageFetcher`] fetches HTML pages politely (spaced per host, `Retry-After` honoured,
//! 403/429 reported as blocked; see [`crate::http`]) and refuses to reach anything but
//! public addresses, so a page address or a redirect cannot point it at loopback, the
//! private network or a cloud metadata endpoint:
//!
//! - IP-literal hosts are checked before a request is sent;
//! - host names are resolved by a guarded resolver that drops non-public addresses, and
//!   reqwest connects only to what it returns (no second lookup to rebind);
//! - every redirect is checked: non-public IP literals and non-http(s) schemes are
//!   refused, and the chain stops after [`FetchPolicy::max_redirects`];
//! - system proxies are ignored, since a proxy would resolve names itself.
//!
//! Bodies are read as a stream and cut off at [`FetchPolicy::max_body_bytes`], and only
//! HTML is accepted.

mod guard;
mod page;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use url::Url;

pub use crate::http::Refusal;
pub use guard::is_public_address;
pub use page::{FetchedPage, PageLink};

use crate::http::{HttpError, PoliteClient, PolitePolicy, error_chain};

/// Refuses `address` unless it is an http(s) URL whose host is a name or a public IP
/// address (loopback too when `allow_loopback`): the check of an address a user hands
/// in (a webhook) before anything is sent to it. Names are checked when they are
/// resolved, by [`guarded_client`].
///
/// ```
/// use job_capabilities::fetch::check_public_url;
/// assert!(check_public_url("https://hooks.slack.com/services/T0/B0/x", false).is_ok());
/// assert!(check_public_url("http://169.254.169.254/latest", false).is_err());
/// assert!(check_public_url("http://127.0.0.1:9/hook", true).is_ok());
/// assert!(check_public_url("file:///etc/passwd", true).is_err());
/// ```
pub fn check_public_url(address: &str, allow_loopback: bool) -> Result<Url, Refusal> {
    let url = Url::parse(address.trim()).map_err(|_| Refusal::Scheme {
        target: address.to_owned(),
    })?;
    guard::check_target(&url, allow_loopback)?;
    Ok(url)
}

/// A client that connects only to public addresses (loopback too when `allow_loopback`):
/// names resolving elsewhere are refused, and so are redirects to non-public addresses
/// or other schemes. For requests to addresses users hand in.
pub fn guarded_client(
    timeout: Duration,
    allow_loopback: bool,
) -> Result<reqwest::Client, HttpError> {
    reqwest::Client::builder()
        .timeout(timeout)
        .dns_resolver(Arc::new(guard::GuardedResolver { allow_loopback }))
        .redirect(guard::redirect_policy(3, allow_loopback))
        .build()
        .map_err(|e| HttpError::Transport {
            url: String::new(),
            message: format!("cannot build the HTTP client: {}", error_chain(&e)),
        })
}

/// The `Accept` header sent with page requests.
const ACCEPT_HTML: &str = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1";

/// Limits and manners of a [`PageFetcher`].
#[derive(Debug, Clone, PartialEq)]
pub struct FetchPolicy {
    /// Timeout of each request, headers and body.
    pub timeout: Duration,
    /// The largest body read; a larger one is [`FetchError::TooLarge`].
    pub max_body_bytes: usize,
    /// The most redirects followed; one more is [`FetchError::TooManyRedirects`].
    pub max_redirects: usize,
    /// Whether loopback addresses (127/8, `::1`) may be fetched: for tests and local
    /// development only. Other non-public addresses are refused regardless.
    pub allow_loopback: bool,
    /// The least time between the starts of two requests to the same host.
    pub min_interval_per_host: Duration,
}

impl Default for FetchPolicy {
    /// 15 s timeout, 2 MiB bodies, 5 redirects, no loopback, 500 ms between requests to
    /// a host.
    fn default() -> Self {
        FetchPolicy {
            timeout: Duration::from_secs(15),
            max_body_bytes: 2 * 1024 * 1024,
            max_redirects: 5,
            allow_loopback: false,
            min_interval_per_host: Duration::from_millis(500),
        }
    }
}

/// Why a page could not be fetched.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FetchError {
    /// The address is not an absolute http(s) URL.
    #[error("invalid address {url}: {reason}")]
    InvalidUrl {
        /// The address given (or redirected to).
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The address is, redirects to, or resolves only to a non-public IP address.
    #[error("refusing to fetch {url}: it leads to the non-public address {address}")]
    ForbiddenAddress {
        /// The address given, or the redirect target that was refused.
        url: String,
        /// The refused IP address.
        address: String,
    },
    /// The body is larger than the policy allows.
    #[error("{url} is larger than {limit} bytes")]
    TooLarge {
        /// The address fetched.
        url: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// The response is not HTML.
    #[error("{url} is not HTML but {content_type}")]
    NotHtml {
        /// The address fetched.
        url: String,
        /// The content type received.
        content_type: String,
    },
    /// The redirect chain was longer than the policy allows (or a loop).
    #[error("too many redirects fetching {url}")]
    TooManyRedirects {
        /// The address given.
        url: String,
    },
    /// The request failed: status, timeout, transport, or the host blocked us.
    #[error(transparent)]
    Http(#[from] HttpError),
}

impl FetchError {
    /// Whether the host refused us (403, or a persistent 429).
    pub fn is_blocked(&self) -> bool {
        matches!(self, FetchError::Http(error) if error.is_blocked())
    }

    /// The error for a guard refusal met while fetching `url`.
    fn refused(url: &str, refusal: Refusal) -> Self {
        match refusal {
            Refusal::Address { address, target } => FetchError::ForbiddenAddress {
                // The resolver names a host; a redirect names the refused address.
                url: if Url::parse(&target).is_ok() {
                    target
                } else {
                    url.to_owned()
                },
                address: address.to_string(),
            },
            Refusal::Scheme { target } => FetchError::InvalidUrl {
                url: target,
                reason: "only http and https addresses are fetched".into(),
            },
            Refusal::TooManyRedirects { .. } => FetchError::TooManyRedirects {
                url: url.to_owned(),
            },
        }
    }

    /// The error for a failed request to `url`: a guard refusal (met by the resolver or
    /// a redirect) becomes its own variant, anything else [`FetchError::Http`].
    fn from_http(url: &str, error: HttpError) -> Self {
        match error {
            HttpError::Refused(refusal) => FetchError::refused(url, refusal),
            other => FetchError::Http(other),
        }
    }
}

/// Something that fetches HTML pages: [`PageFetcher`], or a fake in tests and dry runs.
#[async_trait]
pub trait PageSource: Send + Sync {
    /// Fetches the HTML page at `url`, following redirects.
    async fn fetch_page(&self, url: &str) -> Result<FetchedPage, FetchError>;
}

/// Fetches career pages over HTTP with the address guard described in the module docs.
/// Cheap to clone; clones share the connection pool and the per-host schedule.
///
/// ```no_run
/// use job_capabilities::fetch::{FetchPolicy, PageFetcher, PageSource};
/// # async fn run() -> Result<(), job_capabilities::fetch::FetchError> {
/// let fetcher = PageFetcher::new(FetchPolicy::default())?;
/// let page = fetcher.fetch_page("https://example.com/careers").await?;
/// let text = page.text();
/// tracing::info!(title = ?page.title, links = page.links().len(), chars = text.len(), "fetched");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct PageFetcher {
    client: PoliteClient,
    policy: FetchPolicy,
}

impl PageFetcher {
    /// A fetcher with its own connection pool, guarded DNS resolver and redirect policy.
    pub fn new(policy: FetchPolicy) -> Result<Self, FetchError> {
        let resolver = guard::GuardedResolver {
            allow_loopback: policy.allow_loopback,
        };
        let client = client_builder(&policy)
            .dns_resolver(Arc::new(resolver))
            .build()
            .map_err(|e| {
                FetchError::Http(HttpError::Transport {
                    url: String::new(),
                    message: format!("cannot build the HTTP client: {}", error_chain(&e)),
                })
            })?;
        Ok(PageFetcher::from_client(client, policy))
    }

    fn from_client(client: reqwest::Client, policy: FetchPolicy) -> Self {
        let polite = PolitePolicy {
            min_interval_per_host: policy.min_interval_per_host,
            timeout: policy.timeout,
            ..PolitePolicy::default()
        };
        PageFetcher {
            client: PoliteClient::with_client(client, polite),
            policy,
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> &FetchPolicy {
        &self.policy
    }

    async fn fetch(&self, url: &str) -> Result<FetchedPage, FetchError> {
        let parsed = Url::parse(url).map_err(|e| FetchError::InvalidUrl {
            url: url.to_owned(),
            reason: e.to_string(),
        })?;
        guard::check_target(&parsed, self.policy.allow_loopback).map_err(|refusal| {
            tracing::warn!(%refusal, "address refused");
            FetchError::refused(url, refusal)
        })?;
        let request = self
            .client
            .inner()
            .get(parsed)
            .header(ACCEPT, ACCEPT_HTML)
            .build()
            .map_err(|e| HttpError::transport(url, &e))?;
        let response = self
            .client
            .execute(request)
            .await
            .map_err(|e| FetchError::from_http(url, e))?;
        let final_url = response.url().to_string();
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        if let Some(content_type) = &content_type
            && !is_html(content_type)
        {
            return Err(FetchError::NotHtml {
                url: final_url,
                content_type: content_type.clone(),
            });
        }
        let limit = self.policy.max_body_bytes;
        let too_large = || FetchError::TooLarge {
            url: final_url.clone(),
            limit,
        };
        if response
            .content_length()
            .is_some_and(|length| length > limit as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| HttpError::transport(&final_url, &e))?;
            if body.len() + chunk.len() > limit {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        let html = page::decode(&body, content_type.as_deref());
        let title = page::title(&html);
        tracing::debug!(url = %final_url, status, bytes = body.len(), "page fetched");
        Ok(FetchedPage {
            url: final_url,
            status,
            content_type,
            html,
            title,
        })
    }
}

#[async_trait]
impl PageSource for PageFetcher {
    async fn fetch_page(&self, url: &str) -> Result<FetchedPage, FetchError> {
        self.fetch(url).await
    }
}

/// The client settings apart from the resolver: guarded redirects, no proxies, the
/// timeout and a user agent.
fn client_builder(policy: &FetchPolicy) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .redirect(guard::redirect_policy(
            policy.max_redirects,
            policy.allow_loopback,
        ))
        .no_proxy()
        .timeout(policy.timeout)
        .user_agent(concat!(
            "job-capabilities/",
            env!("CARGO_PKG_VERSION"),
            " (career-page fetcher)"
        ))
}

/// HTML media types; an empty type counts as missing.
fn is_html(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    matches!(essence.as_str(), "" | "text/html" | "application/xhtml+xml")
}

#[cfg(test)]
mod tests {

    use super::*;
    use wiremock::matchers::path;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    /// The real redirect policy with loopback disallowed, but the system resolver, so the
    /// first request can reach the loopback test server by name (`localhost`); only the
    /// redirect is subject to the guard here.
    #[tokio::test]
    async fn a_redirect_to_loopback_is_refused_without_reaching_it() {
        let target = MockServer::start().await;
        Mock::given(path("/"))
            .respond_with(ResponseTemplate::new(200))
            .mount(&target)
            .await;
        let server = MockServer::start().await;
        let to = |location: String| {
            ResponseTemplate::new(302).insert_header("location", location.as_str())
        };
        Mock::given(path("/to-loopback"))
            .respond_with(to("http://127.0.0.1:1/".into()))
            .mount(&server)
            .await;
        Mock::given(path("/to-target"))
            .respond_with(to(format!("{}/", target.uri())))
            .mount(&server)
            .await;
        Mock::given(path("/to-metadata"))
            .respond_with(to("http://169.254.169.254/latest/meta-data".into()))
            .mount(&server)
            .await;
        let policy = FetchPolicy {
            min_interval_per_host: Duration::from_millis(1),
            ..FetchPolicy::default()
        };
        assert!(!policy.allow_loopback);
        let fetcher = PageFetcher::from_client(client_builder(&policy).build().unwrap(), policy);
        let port = server.address().port();
        let expected = [
            ("/to-loopback", "127.0.0.1"),
            ("/to-target", "127.0.0.1"),
            ("/to-metadata", "169.254.169.254"),
        ];
        for (start, address) in expected {
            let url = format!("http://localhost:{port}{start}");
            let err = fetcher.fetch_page(&url).await.unwrap_err();
            assert!(
                matches!(&err, FetchError::ForbiddenAddress { address: a, .. } if a == address),
                "{start}: {err}"
            );
        }
        assert!(target.received_requests().await.unwrap().is_empty());
    }

    #[test]
    fn refusals_map_to_fetch_errors() {
        let url = "http://localhost:8080/careers";
        let refused = |refusal| FetchError::from_http(url, HttpError::Refused(refusal));
        // The resolver names the host: the error names the address asked for.
        assert_eq!(
            refused(Refusal::Address {
                address: "127.0.0.1".parse().unwrap(),
                target: "localhost".into(),
            }),
            FetchError::ForbiddenAddress {
                url: url.into(),
                address: "127.0.0.1".into(),
            }
        );
        // A redirect names the refused target.
        assert_eq!(
            refused(Refusal::Address {
                address: "::ffff:192.168.0.1".parse().unwrap(),
                target: "http://[::ffff:c0a8:1]/".into(),
            }),
            FetchError::ForbiddenAddress {
                url: "http://[::ffff:c0a8:1]/".into(),
                address: "::ffff:192.168.0.1".into(),
            }
        );
        assert_eq!(
            refused(Refusal::Scheme {
                target: "ftp://example.com/jobs".into(),
            }),
            FetchError::InvalidUrl {
                url: "ftp://example.com/jobs".into(),
                reason: "only http and https addresses are fetched".into(),
            }
        );
        assert_eq!(
            refused(Refusal::TooManyRedirects {
                limit: 5,
                target: "http://localhost:8080/loop".into(),
            }),
            FetchError::TooManyRedirects { url: url.into() }
        );
        // Other failures stay HTTP errors, even when their text mentions the guard.
        let transport = HttpError::Transport {
            url: url.into(),
            message: "localhost leads to the non-public address 127.0.0.1".into(),
        };
        assert_eq!(
            FetchError::from_http(url, transport.clone()),
            FetchError::Http(transport)
        );
    }

    async fn execute(fetcher: &PageFetcher, url: &str) -> Result<reqwest::Response, HttpError> {
        let request = fetcher.client.inner().get(url).build().unwrap();
        fetcher.client.execute(request).await
    }

    /// The refusals of the guarded resolver and of the redirect policy come out of
    /// `PoliteClient::execute` as typed values, found in reqwest's error chain.
    #[tokio::test]
    async fn guard_refusals_come_out_of_the_client_typed() {
        let server = MockServer::start().await;
        let to = |location: &str| ResponseTemplate::new(302).insert_header("location", location);
        Mock::given(path("/private"))
            .respond_with(to("http://10.0.0.1/admin"))
            .mount(&server)
            .await;
        Mock::given(path("/ftp"))
            .respond_with(to("ftp://files.example.com/jobs.html"))
            .mount(&server)
            .await;
        Mock::given(path("/loop"))
            .respond_with(to("/loop"))
            .mount(&server)
            .await;
        let port = server.address().port();

        // The resolver: loopback is refused by default.
        let guarded = PageFetcher::new(FetchPolicy::default()).unwrap();
        match execute(&guarded, &format!("http://localhost:{port}/")).await {
            Err(HttpError::Refused(Refusal::Address { address, target })) => {
                assert!(address.is_loopback(), "{address}");
                assert_eq!(target, "localhost");
            }
            other => panic!("expected an address refusal, got {other:?}"),
        }

        // The redirect policy, with loopback allowed to reach the test server.
        let fetcher = PageFetcher::new(FetchPolicy {
            allow_loopback: true,
            max_redirects: 2,
            min_interval_per_host: Duration::from_millis(1),
            ..FetchPolicy::default()
        })
        .unwrap();
        let base = server.uri();
        let cases = [
            (
                "/private",
                Refusal::Address {
                    address: "10.0.0.1".parse().unwrap(),
                    target: "http://10.0.0.1/admin".into(),
                },
            ),
            (
                "/ftp",
                Refusal::Scheme {
                    target: "ftp://files.example.com/jobs.html".into(),
                },
            ),
            (
                "/loop",
                Refusal::TooManyRedirects {
                    limit: 2,
                    target: format!("{base}/loop"),
                },
            ),
        ];
        for (start, refusal) in cases {
            let err = execute(&fetcher, &format!("{base}{start}"))
                .await
                .unwrap_err();
            assert_eq!(err, HttpError::Refused(refusal), "{start}");
        }
    }

    #[test]
    fn html_types_and_missing_ones_are_accepted() {
        for ok in [
            "text/html",
            "TEXT/HTML; charset=utf-8",
            "application/xhtml+xml",
            " ",
        ] {
            assert!(is_html(ok), "{ok}");
        }
        for not in ["application/pdf", "text/plain", "application/json"] {
            assert!(!is_html(not), "{not}");
        }
    }
}
