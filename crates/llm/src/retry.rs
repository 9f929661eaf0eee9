//! Retrying failed calls: exponential backoff with jitter, honouring `retry-after`.

use crate::error::LlmError;
use std::future::Future;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// When and how often a failed call is sent again.
///
/// Only [retryable](LlmError::is_retryable) errors are retried. The delay before attempt
/// `n + 1` is the server's `retry-after` when it gave one, otherwise
/// `base_delay * 2^(n-1)` capped at `max_delay`, with jitter (between half and all of it).
/// A `retry-after` longer than `max_retry_after` is not waited for: the error is returned.
///
/// ```
/// use agent_llm::RetryPolicy;
/// use std::time::Duration;
/// let policy = RetryPolicy::default().with_max_attempts(5).with_base_delay(Duration::from_millis(100));
/// assert_eq!(policy.max_attempts, 5);
/// assert_eq!(RetryPolicy::none().max_attempts, 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 = no retry).
    pub max_attempts: u32,
    /// Backoff before the first retry.
    pub base_delay: Duration,
    /// Longest computed backoff.
    pub max_delay: Duration,
    /// Longest `retry-after` the policy will wait for.
    pub max_retry_after: Duration,
    /// Whether backoff delays are randomized.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    /// Three attempts, 2 s base delay (spec 001 section 3), 30 s cap, `retry-after` up to 120 s.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn none() -> Self {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }

    /// Sets the number of attempts (at least 1).
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Sets the base backoff delay.
    pub fn with_base_delay(mut self, delay: Duration) -> Self {
        self.base_delay = delay;
        self
    }

    /// Sets the backoff cap.
    pub fn with_max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// Turns jitter on or off.
    pub fn with_jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }

    /// The delay before retrying after `attempt` (1-based) failed with `error`, or `None`
    /// when the call must not be retried.
    pub fn delay_after(&self, attempt: u32, error: &LlmError) -> Option<Duration> {
        if attempt >= self.max_attempts || !error.is_retryable() {
            return None;
        }
        if let Some(requested) = error.retry_after() {
            return (requested <= self.max_retry_after).then_some(requested);
        }
        let exponent = attempt.saturating_sub(1).min(16);
        let backoff = self
            .base_delay
            .saturating_mul(1 << exponent)
            .min(self.max_delay);
        Some(if self.jitter {
            backoff.mul_f64(0.5 + fastrand::f64() * 0.5)
        } else {
            backoff
        })
    }

    /// Runs `operation` until it succeeds, fails with an error that must not be retried, or
    /// runs out of attempts. A cancelled `cancel` token ends the wait at once with
    /// [`LlmError::Cancelled`].
    pub async fn run<T, F, Fut>(
        &self,
        cancel: Option<&CancellationToken>,
        mut operation: F,
    ) -> Result<T, LlmError>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, LlmError>>,
    {
        let mut attempt = 1;
        loop {
            let delay = match cancellable(cancel, operation(attempt)).await {
                Ok(value) => return Ok(value),
                Err(error) => self.delay_or_give_up(attempt, error)?,
            };
            // Boxed: a retry is rare, and a timer kept inline would make the future of
            // every call bigger.
            Box::pin(backoff(delay, cancel)).await?;
            attempt += 1;
        }
    }

    /// How long to wait before retrying after `error` on `attempt`, or the error to give
    /// up with. Nothing of the error stays in the caller's future while it waits.
    fn delay_or_give_up(&self, attempt: u32, error: LlmError) -> Result<Duration, LlmError> {
        let Some(delay) = self.delay_after(attempt, &error) else {
            return Err(error);
        };
        tracing::warn!(
            attempt,
            max_attempts = self.max_attempts,
            delay_ms = delay.as_millis() as u64,
            error = %error,
            "LLM call failed; retrying"
        );
        Ok(delay)
    }
}

/// Runs one attempt, unless `cancel` is cancelled first.
async fn cancellable<T>(
    cancel: Option<&CancellationToken>,
    attempt: impl Future<Output = Result<T, LlmError>>,
) -> Result<T, LlmError> {
    match cancel {
        Some(token) => tokio::select! {
            biased;
            _ = token.cancelled() => Err(LlmError::Cancelled),
            outcome = attempt => outcome,
        },
        None => attempt.await,
    }
}

/// Waits `delay` before the next attempt, unless `cancel` is cancelled first.
async fn backoff(delay: Duration, cancel: Option<&CancellationToken>) -> Result<(), LlmError> {
    let sleep = tokio::time::sleep(delay);
    match cancel {
        Some(token) => tokio::select! {
            biased;
            _ = token.cancelled() => Err(LlmError::Cancelled),
            _ = sleep => Ok(()),
        },
        None => {
            sleep.await;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn rate_limited(after: Option<u64>) -> LlmError {
        LlmError::RateLimited {
            message: "slow down".into(),
            retry_after: after.map(Duration::from_secs),
            retryable: true,
        }
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let policy = RetryPolicy::default()
            .with_max_attempts(10)
            .with_jitter(false)
            .with_base_delay(Duration::from_secs(1))
            .with_max_delay(Duration::from_secs(5));
        let timeout = LlmError::Timeout("t".into());
        let delays: Vec<_> = (1..=5)
            .map(|a| policy.delay_after(a, &timeout).unwrap().as_secs())
            .collect();
        assert_eq!(delays, [1, 2, 4, 5, 5]);
    }

    #[test]
    fn jitter_stays_between_half_and_whole_backoff() {
        let policy = RetryPolicy::default().with_base_delay(Duration::from_secs(4));
        for _ in 0..100 {
            let delay = policy
                .delay_after(1, &LlmError::Transport("x".into()))
                .unwrap();
            assert!(delay >= Duration::from_secs(2) && delay <= Duration::from_secs(4));
        }
    }

    #[test]
    fn retry_after_wins_and_too_long_gives_up() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.delay_after(1, &rate_limited(Some(7))),
            Some(Duration::from_secs(7))
        );
        assert_eq!(policy.delay_after(1, &rate_limited(Some(3600))), None);
    }

    #[test]
    fn never_retries_cancelled_or_plain_client_errors() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay_after(1, &LlmError::Cancelled), None);
        let bad = LlmError::InvalidRequest {
            status: 400,
            message: "bad".into(),
        };
        assert_eq!(policy.delay_after(1, &bad), None);
        let conflict = LlmError::InvalidRequest {
            status: 409,
            message: "conflict".into(),
        };
        assert!(policy.delay_after(1, &conflict).is_some());
        let spend_cap = LlmError::RateLimited {
            message: "cap".into(),
            retry_after: None,
            retryable: false,
        };
        assert_eq!(policy.delay_after(1, &spend_cap), None);
    }

    #[tokio::test(start_paused = true)]
    async fn run_retries_until_success_and_counts_attempts() {
        let calls = AtomicU32::new(0);
        let result = RetryPolicy::default()
            .run(None, |attempt| {
                calls.fetch_add(1, Ordering::SeqCst);
                async move {
                    if attempt < 3 {
                        Err(rate_limited(Some(1)))
                    } else {
                        Ok(attempt)
                    }
                }
            })
            .await;
        assert_eq!(result.unwrap(), 3);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn run_gives_up_after_max_attempts_with_last_error() {
        let result: Result<(), _> = RetryPolicy::default()
            .with_max_attempts(2)
            .run(None, |_| async {
                Err(LlmError::Server {
                    status: 500,
                    message: "boom".into(),
                    retry_after: None,
                })
            })
            .await;
        assert!(matches!(result, Err(LlmError::Server { status: 500, .. })));
    }

    #[tokio::test(start_paused = true)]
    async fn cancellation_during_backoff_returns_cancelled() {
        let token = CancellationToken::new();
        let cancel = token.clone();
        let result: Result<(), _> = RetryPolicy::default()
            .run(Some(&token), |_| {
                cancel.cancel();
                async { Err(rate_limited(Some(60))) }
            })
            .await;
        assert_eq!(result, Err(LlmError::Cancelled));
    }
}
