//! The one error type of the LLM layer.

use std::time::Duration;

/// Everything that can go wrong when talking to a model.
///
/// Each variant tells a caller what to do next: [`LlmError::is_retryable`] says whether
/// the same request may succeed later, and [`LlmError::retry_after`] carries the delay a
/// provider asked for. Messages never contain an API key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// HTTP 429: too many requests or tokens; `retry_after` is the delay the server asked for.
    #[error("rate limited by the provider: {message}")]
    RateLimited {
        /// The provider's message.
        message: String,
        /// Delay requested by `retry-after` / `retry-after-ms`, if any.
        retry_after: Option<Duration>,
        /// False when the provider said the request must not be retried (a spend cap, say).
        retryable: bool,
    },
    /// HTTP 529 (Anthropic) or an `overloaded_error` event: the service is overloaded.
    #[error("provider overloaded: {message}")]
    Overloaded {
        /// The provider's message.
        message: String,
        /// Delay requested by the server, if any.
        retry_after: Option<Duration>,
    },
    /// HTTP 5xx other than 529.
    #[error("provider server error (HTTP {status}): {message}")]
    Server {
        /// HTTP status code.
        status: u16,
        /// The provider's message.
        message: String,
        /// Delay requested by the server, if any (503 often carries one).
        retry_after: Option<Duration>,
    },
    /// The request or the response body did not complete in time.
    #[error("request timed out: {0}")]
    Timeout(String),
    /// The connection could not be made or broke off.
    #[error("transport error: {0}")]
    Transport(String),
    /// HTTP 401/403: the key is missing, wrong or lacks permission.
    #[error("authentication failed (HTTP {status}): {message}")]
    Auth {
        /// HTTP status code.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// A 4xx the provider will refuse again (bad parameter, unknown model, ...).
    /// 408 and 409 are reported here too but are retryable.
    #[error("invalid request (HTTP {status}): {message}")]
    InvalidRequest {
        /// HTTP status code.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The prompt does not fit the model's context window.
    #[error("context too long: {0}")]
    ContextTooLong(String),
    /// The provider answered with something this client cannot read.
    #[error("invalid response from provider: {0}")]
    InvalidResponse(String),
    /// The call was cancelled by the caller; never retried.
    #[error("call cancelled")]
    Cancelled,
    /// Real network requests are switched off (see [`crate::testing::deny_network_requests`]).
    #[error("real model requests are disabled in this process (tried to reach {0})")]
    RequestsDisabled(String),
    /// The call was refused before sending because a cost or usage limit was reached
    /// (a metering wrapper's hard limit, a budget); never retried.
    #[error("limit reached: {0}")]
    LimitExceeded(crate::Limit),
    /// The provider is not configured correctly (missing base URL, bad header value, ...).
    #[error("configuration error: {0}")]
    Config(String),
}

impl LlmError {
    /// Whether the same request may succeed if sent again.
    ///
    /// Rate limits (unless the provider forbade it), overload, server errors, timeouts,
    /// transport errors and HTTP 408/409 are retryable; a cancelled call, auth errors and
    /// every other 4xx are not.
    ///
    /// ```
    /// use agent_llm::LlmError;
    /// assert!(LlmError::Timeout("read".into()).is_retryable());
    /// assert!(!LlmError::Cancelled.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::RateLimited { retryable, .. } => *retryable,
            LlmError::Overloaded { .. }
            | LlmError::Server { .. }
            | LlmError::Timeout(_)
            | LlmError::Transport(_) => true,
            LlmError::InvalidRequest { status, .. } => matches!(status, 408 | 409),
            LlmError::Auth { .. }
            | LlmError::ContextTooLong(_)
            | LlmError::InvalidResponse(_)
            | LlmError::Cancelled
            | LlmError::LimitExceeded(_)
            | LlmError::RequestsDisabled(_)
            | LlmError::Config(_) => false,
        }
    }

    /// Whether the model could not be reached or could not answer for now, whatever was
    /// asked, and may later: the connection could not be made or broke off, the service
    /// said it is unavailable or overloaded (HTTP 502, 503, 504, 529), or it rate-limits
    /// and allows a retry. A run that stops on such an error after its retries can be
    /// taken up again once the model answers (agent-server parks it). Any other error may
    /// be the request's own and would come back: a timeout (the prompt may be too long
    /// for the model), a plain 500, an invalid answer.
    ///
    /// ```
    /// use agent_llm::LlmError;
    /// assert!(LlmError::Transport("connection refused".into()).is_outage());
    /// assert!(!LlmError::Timeout("read".into()).is_outage());
    /// assert!(!LlmError::InvalidResponse("not JSON".into()).is_outage());
    /// assert!(!LlmError::Cancelled.is_outage());
    /// ```
    pub fn is_outage(&self) -> bool {
        match self {
            LlmError::RateLimited { retryable, .. } => *retryable,
            LlmError::Server { status, .. } => matches!(status, 502..=504),
            LlmError::Overloaded { .. } | LlmError::Transport(_) => true,
            _ => false,
        }
    }

    /// The delay the provider asked for before the next attempt, if it named one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after, .. }
            | LlmError::Overloaded { retry_after, .. }
            | LlmError::Server { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}
