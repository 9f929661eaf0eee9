//! The HTTP plumbing both providers share: sending with retries, reading errors, SSE.

use crate::error::LlmError;
use crate::guard::check_request_allowed;
use crate::retry::RetryPolicy;
use eventsource_stream::{Event, Eventsource};
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use std::time::{Duration, SystemTime};

/// Timeouts of a provider's HTTP client.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpSettings {
    /// Whole-request limit for calls that are not streamed (`LLM_TIMEOUT_SECS`).
    pub request_timeout: Duration,
    /// Time allowed to open a connection (`LLM_CONNECT_TIMEOUT_SECS`).
    pub connect_timeout: Duration,
    /// Longest silence while reading a streamed response (`LLM_READ_TIMEOUT_SECS`). A
    /// call that is not streamed is silent until its whole answer is ready, so only
    /// [`request_timeout`](Self::request_timeout) bounds it.
    pub read_timeout: Duration,
}

/// The variables [`HttpSettings::from_lookup`] reads.
pub const TIMEOUT_VARS: [&str; 3] = [
    "LLM_TIMEOUT_SECS",
    "LLM_CONNECT_TIMEOUT_SECS",
    "LLM_READ_TIMEOUT_SECS",
];

impl HttpSettings {
    /// The defaults with `LLM_TIMEOUT_SECS`, `LLM_CONNECT_TIMEOUT_SECS` and
    /// `LLM_READ_TIMEOUT_SECS` (whole seconds, at least 1) read through `lookup`.
    ///
    /// ```
    /// use agent_llm::HttpSettings;
    /// use std::time::Duration;
    /// let settings = HttpSettings::from_lookup(|name| (name == "LLM_TIMEOUT_SECS").then(|| "900".into())).unwrap();
    /// assert_eq!(settings.request_timeout, Duration::from_secs(900));
    /// assert!(HttpSettings::from_lookup(|_| Some("soon".into())).is_err());
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, LlmError> {
        let mut settings = HttpSettings::default();
        let [request, connect, read] = TIMEOUT_VARS;
        for (name, slot) in [
            (request, &mut settings.request_timeout),
            (connect, &mut settings.connect_timeout),
            (read, &mut settings.read_timeout),
        ] {
            let Some(value) = lookup(name).filter(|v| !v.trim().is_empty()) else {
                continue;
            };
            let seconds = value
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|s| *s >= 1)
                .ok_or_else(|| {
                    LlmError::Config(format!(
                        "{name}={value:?}: expected whole seconds, at least 1"
                    ))
                })?;
            *slot = Duration::from_secs(seconds);
        }
        Ok(settings)
    }
}

impl Default for HttpSettings {
    /// 10 minutes per request, 10 s to connect, 2 minutes of silence.
    fn default() -> Self {
        HttpSettings {
            request_timeout: Duration::from_secs(600),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(120),
        }
    }
}

/// Which vendor's error conventions to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Vendor {
    Anthropic,
    OpenAi,
}

/// A reqwest client with a retry policy.
#[derive(Debug, Clone)]
pub(crate) struct HttpClient {
    /// For whole answers: bounded by the request timeout only.
    client: reqwest::Client,
    /// For streams: a silence longer than the read timeout fails them.
    streaming: reqwest::Client,
    settings: HttpSettings,
    retry: RetryPolicy,
    vendor: Vendor,
}

impl HttpClient {
    pub(crate) fn new(
        vendor: Vendor,
        settings: HttpSettings,
        retry: RetryPolicy,
    ) -> Result<Self, LlmError> {
        let builder = || {
            reqwest::Client::builder()
                .connect_timeout(settings.connect_timeout)
                .user_agent(concat!("agent-llm/", env!("CARGO_PKG_VERSION")))
        };
        let built = |result: reqwest::Result<reqwest::Client>| {
            result.map_err(|e| LlmError::Config(format!("cannot build HTTP client: {e}")))
        };
        let client = built(builder().build())?;
        let streaming = built(builder().read_timeout(settings.read_timeout).build())?;
        Ok(HttpClient {
            client,
            streaming,
            settings,
            retry,
            vendor,
        })
    }

    /// POSTs a JSON body and returns the JSON answer, retrying per the policy.
    pub(crate) async fn post_json(
        &self,
        url: &reqwest::Url,
        headers: &HeaderMap,
        body: &Value,
    ) -> Result<Value, LlmError> {
        check_request_allowed(url)?;
        self.retry
            .run(None, |attempt| async move {
                tracing::debug!(%url, attempt, "sending request");
                let failed = |error| self.request_error(error);
                let response = self
                    .client
                    .post(url.clone())
                    .headers(headers.clone())
                    .timeout(self.settings.request_timeout)
                    .json(body)
                    .send()
                    .await
                    .map_err(failed)?;
                let response = self.check_status(response).await?;
                let text = response.text().await.map_err(failed)?;
                tracing::trace!(body = %text, "response body");
                serde_json::from_str(&text)
                    .map_err(|e| LlmError::InvalidResponse(format!("response is not JSON: {e}")))
            })
            .await
    }

    /// POSTs a JSON body and returns the server-sent events of the answer. Only opening
    /// the stream is retried; an error in the middle of a stream is returned as it comes.
    pub(crate) async fn post_sse(
        &self,
        url: &reqwest::Url,
        headers: &HeaderMap,
        body: &Value,
    ) -> Result<impl Stream<Item = Result<Event, LlmError>> + Send + 'static, LlmError> {
        check_request_allowed(url)?;
        let response = self
            .retry
            .run(None, |attempt| async move {
                tracing::debug!(%url, attempt, "opening stream");
                let response = self
                    .streaming
                    .post(url.clone())
                    .headers(headers.clone())
                    .header(reqwest::header::ACCEPT, "text/event-stream")
                    .json(body)
                    .send()
                    .await
                    .map_err(|e| self.stream_error(e))?;
                self.check_status(response).await
            })
            .await?;
        let read_timeout = self.settings.read_timeout;
        Ok(response.bytes_stream().eventsource().map(move |item| {
            item.map_err(|e| match e {
                eventsource_stream::EventStreamError::Transport(e) if e.is_timeout() => {
                    silence_error(read_timeout)
                }
                eventsource_stream::EventStreamError::Transport(e) => transport_error(e),
                other => LlmError::InvalidResponse(format!("malformed event stream: {other}")),
            })
        }))
    }

    /// GETs a JSON document once (no retries): a server's description of itself.
    pub(crate) async fn get_json(
        &self,
        url: &reqwest::Url,
        headers: &HeaderMap,
        timeout: Duration,
    ) -> Result<Value, LlmError> {
        check_request_allowed(url)?;
        let response = self
            .client
            .get(url.clone())
            .headers(headers.clone())
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| self.request_error(e))?;
        let response = self.check_status(response).await?;
        response
            .json()
            .await
            .map_err(|e| LlmError::InvalidResponse(format!("{url} did not answer JSON: {e}")))
    }

    /// A failed call that is not streamed: a timeout names the limit that ran out.
    fn request_error(&self, error: reqwest::Error) -> LlmError {
        if !error.is_timeout() {
            transport_error(error)
        } else if error.is_connect() {
            self.connect_timeout_error()
        } else {
            LlmError::Timeout(format!(
                "no answer within {} s (the request timeout; raise it with LLM_TIMEOUT_SECS)",
                self.settings.request_timeout.as_secs()
            ))
        }
    }

    fn connect_timeout_error(&self) -> LlmError {
        LlmError::Timeout(format!(
            "could not connect within {} s (raise it with LLM_CONNECT_TIMEOUT_SECS)",
            self.settings.connect_timeout.as_secs()
        ))
    }

    /// A stream that could not be opened: a timeout is the connection's or the silence's.
    fn stream_error(&self, error: reqwest::Error) -> LlmError {
        if error.is_timeout() && error.is_connect() {
            self.connect_timeout_error()
        } else if error.is_timeout() {
            silence_error(self.settings.read_timeout)
        } else {
            transport_error(error)
        }
    }

    async fn check_status(
        &self,
        response: reqwest::Response,
    ) -> Result<reqwest::Response, LlmError> {
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let headers = response.headers().clone();
        let body = response.text().await.unwrap_or_default();
        Err(error_from_response(
            self.vendor,
            status.as_u16(),
            &headers,
            &body,
        ))
    }
}

/// A header that must not show up in logs (`Debug` of the request prints it as `Sensitive`).
pub(crate) fn secret_header(
    name: &'static str,
    value: &str,
) -> Result<(HeaderName, HeaderValue), LlmError> {
    let mut value = HeaderValue::from_str(value)
        .map_err(|_| LlmError::Config(format!("the {name} header value has invalid characters")))?;
    value.set_sensitive(true);
    Ok((HeaderName::from_static(name), value))
}

/// A stream that said nothing for longer than the read timeout.
fn silence_error(limit: Duration) -> LlmError {
    LlmError::Timeout(format!(
        "the stream was silent for {} s (the read timeout; raise it with LLM_READ_TIMEOUT_SECS)",
        limit.as_secs()
    ))
}

/// Maps a reqwest error to a timeout or transport error.
pub(crate) fn transport_error(error: reqwest::Error) -> LlmError {
    let error = error.without_url();
    if error.is_timeout() {
        LlmError::Timeout(error.to_string())
    } else {
        LlmError::Transport(format_chain(&error))
    }
}

fn format_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// How long a server asked to wait before the next request: `retry-after-ms` (OpenAI's),
/// then `retry-after` (seconds, possibly fractional, or an HTTP date; a date in the past
/// is no wait). `None` without either, or when neither reads.
///
/// ```
/// use reqwest::header::{HeaderMap, HeaderValue};
/// use std::time::Duration;
/// let mut headers = HeaderMap::new();
/// headers.insert("retry-after", HeaderValue::from_static("1.5"));
/// assert_eq!(agent_llm::parse_retry_after(&headers), Some(Duration::from_millis(1500)));
/// ```
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = header("retry-after")?;
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(
        date.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// Turns an error response into an [`LlmError`], reading the vendor's error body
/// (`{"type":"error","error":{"type","message"}}` or `{"error":{"message","type","code"}}`).
pub(crate) fn error_from_response(
    vendor: Vendor,
    status: u16,
    headers: &HeaderMap,
    body: &str,
) -> LlmError {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let field = |name: &str| {
        error
            .and_then(|e| e.get(name))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let kind = field("type");
    let code = field("code");
    let mut message = match field("message") {
        "" if body.trim().is_empty() => format!("HTTP {status} with an empty body"),
        "" => truncate(body, 500),
        text => text.to_owned(),
    };
    if !kind.is_empty() {
        message = format!("{kind}: {message}");
    }
    let retry_after = retry_after(headers);
    let should_retry = headers.get("x-should-retry").and_then(|v| v.to_str().ok());
    let spend_cap = error
        .and_then(|e| e.pointer("/details/error_code"))
        .and_then(Value::as_str)
        .is_some_and(|c| c == "enforced_spend_limit_reached")
        || code == "insufficient_quota";
    // llama.cpp says `exceed_context_size_error`.
    let context_too_long = code == "context_length_exceeded"
        || kind == "exceed_context_size_error"
        || (vendor == Vendor::Anthropic && status == 400 && message.contains("prompt is too long"));
    tracing::debug!(status, kind, code, "provider returned an error");
    match status {
        401 | 403 => LlmError::Auth { status, message },
        429 => LlmError::RateLimited {
            message,
            retry_after,
            retryable: !spend_cap && should_retry != Some("false"),
        },
        529 => LlmError::Overloaded {
            message,
            retry_after,
        },
        _ if kind == "overloaded_error" => LlmError::Overloaded {
            message,
            retry_after,
        },
        _ if context_too_long => LlmError::ContextTooLong(message),
        500..=599 => LlmError::Server {
            status,
            message,
            retry_after,
        },
        _ => LlmError::InvalidRequest { status, message },
    }
}

/// The error carried by an `error` event in the middle of a stream.
pub(crate) fn error_from_event(vendor: Vendor, data: &str) -> LlmError {
    let parsed: Option<Value> = serde_json::from_str(data).ok();
    let kind = parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/type"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let status = match kind {
        "overloaded_error" => 529,
        "rate_limit_error" => 429,
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        _ => 500,
    };
    error_from_response(vendor, status, &HeaderMap::new(), data)
}

fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

/// An `f32` as the JSON number it prints as (`0.2`, not `0.20000000298023224`).
pub(crate) fn f32_to_json(value: f32) -> Option<Value> {
    let shortest: f64 = value.to_string().parse().ok()?;
    serde_json::Number::from_f64(shortest).map(Value::Number)
}

/// Joins a base URL and a path, tolerating slashes on either side.
pub(crate) fn join_url(base: &str, path: &str) -> Result<reqwest::Url, LlmError> {
    let joined = format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    );
    reqwest::Url::parse(&joined)
        .map_err(|e| LlmError::Config(format!("invalid base URL {base:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    HeaderName::from_static(k),
                    HeaderValue::from_str(v).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "3")])),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "1.5")])),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "250"), ("retry-after", "9")])),
            Some(Duration::from_millis(250))
        );
        let future = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(30));
        let parsed = retry_after(&headers(&[("retry-after", &future)])).unwrap();
        assert!(parsed > Duration::from_secs(25) && parsed <= Duration::from_secs(30));
        let past = "Wed, 21 Oct 2015 07:28:00 GMT";
        assert_eq!(
            retry_after(&headers(&[("retry-after", past)])),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn error_bodies_map_to_variants() {
        let anthropic_429 =
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"Too many"}}"#;
        let e = error_from_response(
            Vendor::Anthropic,
            429,
            &headers(&[("retry-after", "2")]),
            anthropic_429,
        );
        assert_eq!(
            e,
            LlmError::RateLimited {
                message: "rate_limit_error: Too many".into(),
                retry_after: Some(Duration::from_secs(2)),
                retryable: true
            }
        );
        let spend = r#"{"type":"error","error":{"type":"rate_limit_error","message":"cap","details":{"error_code":"enforced_spend_limit_reached"}}}"#;
        assert!(
            !error_from_response(Vendor::Anthropic, 429, &HeaderMap::new(), spend).is_retryable()
        );
        let long = r#"{"error":{"message":"too long","type":"invalid_request_error","param":null,"code":"context_length_exceeded"}}"#;
        assert!(matches!(
            error_from_response(Vendor::OpenAi, 400, &HeaderMap::new(), long),
            LlmError::ContextTooLong(_)
        ));
        assert!(matches!(
            error_from_response(
                Vendor::OpenAi,
                502,
                &HeaderMap::new(),
                "<html>bad gateway</html>"
            ),
            LlmError::Server { status: 502, .. }
        ));
        assert!(matches!(
            error_from_event(
                Vendor::Anthropic,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            LlmError::Overloaded { .. }
        ));
    }

    #[test]
    fn join_url_handles_slashes() {
        assert_eq!(
            join_url("http://h/v1/", "/chat/completions")
                .unwrap()
                .as_str(),
            "http://h/v1/chat/completions"
        );
        assert!(join_url("not a url", "x").is_err());
    }
}
