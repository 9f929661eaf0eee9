//! Polite HTTP: requests to one host are spaced out, `Retry-After` is honoured a bounded
//! number of times, and a 403 or a persistent 429 is reported as [`HttpError::Blocked`]
//! instead of being retried forever.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use reqwest::{Request, Response, StatusCode};
use serde::de::DeserializeOwned;
use tokio::time::Instant;

/// How politely to talk to hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct PolitePolicy {
    /// The least time between the starts of two requests to the same host.
    pub min_interval_per_host: Duration,
    /// How many times a 429 or 503 carrying `Retry-After` is retried.
    pub max_retries: u32,
    /// The longest `Retry-After` that is waited for; a longer one means blocked.
    pub max_retry_wait: Duration,
    /// Timeout of each request, headers and body.
    pub timeout: Duration,
}

impl Default for PolitePolicy {
    /// 250 ms between requests to a host, two retries, waits up to 30 s, 20 s timeout.
    fn default() -> Self {
        PolitePolicy {
            min_interval_per_host: Duration::from_millis(250),
            max_retries: 2,
            max_retry_wait: Duration::from_secs(30),
            timeout: Duration::from_secs(20),
        }
    }
}

/// Why a polite request failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HttpError {
    /// The host refuses us: a 403, or a 429/503 that kept coming or asked for a longer
    /// wait than the policy allows.
    #[error("blocked by {host}: HTTP {status}{}", retry_after.map(|d| format!(" (retry after {} s)", d.as_secs())).unwrap_or_default())]
    Blocked {
        /// The host.
        host: String,
        /// The last status received.
        status: u16,
        /// The wait the host last asked for, if any.
        retry_after: Option<Duration>,
    },
    /// Any other unsuccessful status.
    #[error("HTTP {status} from {url}")]
    Status {
        /// The address requested.
        url: String,
        /// The status received.
        status: u16,
    },
    /// The request timed out.
    #[error("timed out requesting {url}")]
    Timeout {
        /// The address requested.
        url: String,
    },
    /// The connection failed, or the body could not be read.
    #[error("request to {url} failed: {message}")]
    Transport {
        /// The address requested.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The career-page fetcher's address guard refused the request: its resolver found
    /// only non-public addresses, or a redirect was refused (see the `fetch` module).
    #[error("refused by the address guard: {0}")]
    Refused(Refusal),
    /// The body was not the JSON expected.
    #[error("unexpected response from {url}: {message}")]
    Decode {
        /// The address requested.
        url: String,
        /// The decoding error, with its field path.
        message: String,
    },
}

impl HttpError {
    /// Whether the host refused us (403/429).
    pub fn is_blocked(&self) -> bool {
        matches!(self, HttpError::Blocked { .. })
    }

    /// The error for a failed reqwest call: an address-guard [`Refusal`] anywhere in its
    /// source chain is [`HttpError::Refused`], a timeout [`HttpError::Timeout`], anything
    /// else [`HttpError::Transport`].
    pub(crate) fn transport(url: &str, error: &reqwest::Error) -> Self {
        if let Some(refusal) = find_refusal(error) {
            HttpError::Refused(refusal.clone())
        } else if error.is_timeout() {
            HttpError::Timeout {
                url: url.to_owned(),
            }
        } else {
            HttpError::Transport {
                url: url.to_owned(),
                message: error_chain(error),
            }
        }
    }
}

/// Why the address guard refused a request or a redirect.
///
/// The career-page fetcher's guarded resolver and redirect policy (`fetch` module) hand
/// it to reqwest as a boxed error; [`PoliteClient::execute`] finds it in the error's source
/// chain and reports it as [`HttpError::Refused`], and the fetcher turns that into its own
/// matching error. Also re-exported as `fetch::Refusal`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    /// The target is, or resolves only to, a non-public address.
    #[error("{target} leads to the non-public address {address}")]
    Address {
        /// The refused address.
        address: IpAddr,
        /// The host name (resolver) or address (redirect) that led to it.
        target: String,
    },
    /// A redirect to something other than http(s).
    #[error("refusing {target}: only http and https addresses are fetched")]
    Scheme {
        /// The redirect target.
        target: String,
    },
    /// The redirect limit was passed.
    #[error("more than {limit} redirects, stopped before {target}")]
    TooManyRedirects {
        /// The most redirects followed.
        limit: usize,
        /// The redirect not followed.
        target: String,
    },
}

/// The first [`Refusal`] in `error`'s source chain, `error` included. The guarded
/// resolver and redirect policy return it boxed, and reqwest and hyper keep the box as
/// the source of their own errors, so it can be downcast again.
fn find_refusal<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refusal> {
    std::iter::successors(Some(error), |inner| inner.source())
        .find_map(|inner| inner.downcast_ref::<Refusal>())
}

/// The error with its sources, joined by `: `.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        let part = inner.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = inner.source();
    }
    text
}

/// A reqwest client that spaces requests per host and handles refusals (see the module
/// docs). Cheap to clone; clones share the per-host schedule.
///
/// ```
/// use job_capabilities::http::{PoliteClient, PolitePolicy};
/// let client = PoliteClient::new(PolitePolicy::default());
/// # let _ = client;
/// ```
#[derive(Debug, Clone)]
pub struct PoliteClient {
    client: reqwest::Client,
    policy: Arc<PolitePolicy>,
    next_slot: Arc<Mutex<HashMap<String, Instant>>>,
}

impl PoliteClient {
    /// A client with its own connection pool, following up to 5 redirects.
    pub fn new(policy: PolitePolicy) -> Self {
        let client = reqwest::Client::builder()
            .timeout(policy.timeout)
            .redirect(reqwest::redirect::Policy::limited(5))
            .user_agent(concat!("job-capabilities/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default();
        PoliteClient::with_client(client, policy)
    }

    /// Wraps an existing reqwest client.
    pub fn with_client(client: reqwest::Client, policy: PolitePolicy) -> Self {
        PoliteClient {
            client,
            policy: Arc::new(policy),
            next_slot: Arc::default(),
        }
    }

    /// The underlying reqwest client, to build requests with.
    pub fn inner(&self) -> &reqwest::Client {
        &self.client
    }

    /// The policy in force.
    pub fn policy(&self) -> &PolitePolicy {
        &self.policy
    }

    /// Sends `request` politely and returns a successful (2xx) response.
    pub async fn execute(&self, request: Request) -> Result<Response, HttpError> {
        let url = request.url().to_string();
        let host = request.url().host_str().unwrap_or_default().to_owned();
        let mut retries = 0;
        let mut pending = Some(request);
        loop {
            let Some(request) = pending.take() else {
                return Err(HttpError::Transport {
                    url,
                    message: "the request body cannot be sent twice".into(),
                });
            };
            let spare = request.try_clone();
            self.wait_for_slot(&host).await;
            let response = self
                .client
                .execute(request)
                .await
                .map_err(|e| HttpError::transport(&url, &e))?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            let retry_after = agent_llm::parse_retry_after(response.headers());
            match status {
                StatusCode::FORBIDDEN => {
                    tracing::warn!(%host, "403: blocked");
                    return Err(HttpError::Blocked {
                        host,
                        status: status.as_u16(),
                        retry_after,
                    });
                }
                StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => {
                    let wait = match retry_after {
                        Some(wait) if wait <= self.policy.max_retry_wait => Some(wait),
                        _ => None,
                    };
                    match (wait, spare) {
                        (Some(wait), Some(spare)) if retries < self.policy.max_retries => {
                            retries += 1;
                            tracing::info!(%host, status = status.as_u16(), wait_ms = wait.as_millis() as u64, retries, "honouring Retry-After");
                            self.push_back(&host, wait);
                            pending = Some(spare);
                        }
                        _ if status == StatusCode::TOO_MANY_REQUESTS => {
                            tracing::warn!(%host, ?retry_after, retries, "429: blocked");
                            return Err(HttpError::Blocked {
                                host,
                                status: status.as_u16(),
                                retry_after,
                            });
                        }
                        _ => {
                            return Err(HttpError::Status {
                                url,
                                status: status.as_u16(),
                            });
                        }
                    }
                }
                _ => {
                    return Err(HttpError::Status {
                        url,
                        status: status.as_u16(),
                    });
                }
            }
        }
    }

    /// GETs `url` and decodes the JSON body into `T` (errors name the field path).
    pub async fn get_json<T: DeserializeOwned>(&self, url: &str) -> Result<T, HttpError> {
        let request = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .build()
            .map_err(|e| HttpError::transport(url, &e))?;
        self.json(url, request).await
    }

    /// POSTs `body` as JSON to `url` and decodes the JSON answer into `T`.
    pub async fn post_json<T: DeserializeOwned>(
        &self,
        url: &str,
        body: &serde_json::Value,
    ) -> Result<T, HttpError> {
        let request = self
            .client
            .post(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .json(body)
            .build()
            .map_err(|e| HttpError::transport(url, &e))?;
        self.json(url, request).await
    }

    async fn json<T: DeserializeOwned>(&self, url: &str, request: Request) -> Result<T, HttpError> {
        let bytes = self
            .execute(request)
            .await?
            .bytes()
            .await
            .map_err(|e| HttpError::transport(url, &e))?;
        let deserializer = &mut serde_json::Deserializer::from_slice(&bytes);
        serde_path_to_error::deserialize(deserializer).map_err(|e| HttpError::Decode {
            url: url.to_owned(),
            message: e.to_string(),
        })
    }

    /// Waits until `host` may be asked again, and books the next slot.
    async fn wait_for_slot(&self, host: &str) {
        let start = {
            let mut slots = self
                .next_slot
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let now = Instant::now();
            let slot = slots.entry(host.to_owned()).or_insert(now);
            let start = (*slot).max(now);
            *slot = start + self.policy.min_interval_per_host;
            start
        };
        tokio::time::sleep_until(start).await;
    }

    /// Moves the host's next slot to at least `wait` from now.
    fn push_back(&self, host: &str, wait: Duration) {
        let mut slots = self
            .next_slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let earliest = Instant::now() + wait;
        let slot = slots.entry(host.to_owned()).or_insert(earliest);
        *slot = (*slot).max(earliest);
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    fn fast_policy() -> PolitePolicy {
        PolitePolicy {
            min_interval_per_host: Duration::from_millis(1),
            ..PolitePolicy::default()
        }
    }

    #[tokio::test]
    async fn retry_after_is_honoured_then_the_answer_returned() {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/jobs"))
            .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0"))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/jobs"))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({"ok": true})))
            .mount(&server)
            .await;
        let client = PoliteClient::new(fast_policy());
        let body: serde_json::Value = client
            .get_json(&format!("{}/jobs", server.uri()))
            .await
            .unwrap();
        assert_eq!(body["ok"], true);
        assert_eq!(server.received_requests().await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn a_persistent_429_is_blocked_not_retried_forever() {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0"))
            .mount(&server)
            .await;
        let client = PoliteClient::new(fast_policy());
        let err = client
            .get_json::<serde_json::Value>(&format!("{}/jobs", server.uri()))
            .await
            .unwrap_err();
        assert!(err.is_blocked(), "{err}");
        // The first try and max_retries more.
        assert_eq!(server.received_requests().await.unwrap().len(), 3);
    }

    #[tokio::test]
    async fn a_long_retry_after_and_a_403_are_blocked_at_once() {
        let server = MockServer::start().await;
        Mock::given(path("/slow"))
            .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "3600"))
            .mount(&server)
            .await;
        Mock::given(path("/forbidden"))
            .respond_with(ResponseTemplate::new(403))
            .mount(&server)
            .await;
        let client = PoliteClient::new(fast_policy());
        let slow = client
            .get_json::<serde_json::Value>(&format!("{}/slow", server.uri()))
            .await
            .unwrap_err();
        assert!(
            matches!(slow, HttpError::Blocked { status: 429, retry_after: Some(d), .. } if d.as_secs() == 3600),
            "{slow}"
        );
        let forbidden = client
            .get_json::<serde_json::Value>(&format!("{}/forbidden", server.uri()))
            .await
            .unwrap_err();
        assert!(
            matches!(forbidden, HttpError::Blocked { status: 403, .. }),
            "{forbidden}"
        );
        assert_eq!(server.received_requests().await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn other_statuses_and_bad_json_are_clear_errors() {
        let server = MockServer::start().await;
        Mock::given(path("/missing"))
            .respond_with(ResponseTemplate::new(404))
            .mount(&server)
            .await;
        Mock::given(path("/garbled"))
            .respond_with(ResponseTemplate::new(200).set_body_string("{\"jobs\": [1,"))
            .mount(&server)
            .await;
        let client = PoliteClient::new(fast_policy());
        let missing = client
            .get_json::<serde_json::Value>(&format!("{}/missing", server.uri()))
            .await
            .unwrap_err();
        assert!(matches!(missing, HttpError::Status { status: 404, .. }));
        let garbled = client
            .get_json::<serde_json::Value>(&format!("{}/garbled", server.uri()))
            .await
            .unwrap_err();
        assert!(matches!(garbled, HttpError::Decode { .. }), "{garbled}");
    }

    /// An error wrapping another, as reqwest and hyper wrap the guard's boxed refusal.
    #[derive(Debug, thiserror::Error)]
    #[error("{context}")]
    struct Wrapped {
        context: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    }

    #[test]
    fn a_refusal_is_found_anywhere_in_the_source_chain() {
        let refusal = Refusal::Address {
            address: "127.0.0.1".parse().unwrap(),
            target: "localhost".into(),
        };
        let boxed: Box<dyn std::error::Error + Send + Sync> = refusal.clone().into();
        let chain = Wrapped {
            context: "client error (Connect)",
            source: Box::new(Wrapped {
                context: "dns error",
                source: boxed,
            }),
        };
        assert_eq!(find_refusal(&chain), Some(&refusal));
        assert_eq!(find_refusal(&refusal), Some(&refusal));
        let unrelated = Wrapped {
            context: "client error (Connect)",
            source: "connection refused".into(),
        };
        assert_eq!(find_refusal(&unrelated), None);
    }

    #[test]
    fn a_refusal_displays_on_one_line() {
        let error = HttpError::Refused(Refusal::Address {
            address: "169.254.169.254".parse().unwrap(),
            target: "http://169.254.169.254/latest/meta-data".into(),
        });
        assert_eq!(
            error.to_string(),
            "refused by the address guard: http://169.254.169.254/latest/meta-data leads to the non-public address 169.254.169.254"
        );
        assert!(!error.is_blocked());
    }

    #[tokio::test(start_paused = true)]
    async fn requests_to_one_host_are_spaced() {
        let client = PoliteClient::new(PolitePolicy {
            min_interval_per_host: Duration::from_millis(200),
            ..PolitePolicy::default()
        });
        let start = Instant::now();
        for _ in 0..3 {
            client.wait_for_slot("example.com").await;
        }
        client.wait_for_slot("other.example").await;
        // Three slots on one host: 0, 200, 400 ms; the other host is not held up.
        assert_eq!(start.elapsed(), Duration::from_millis(400));
    }
}
