//! The limits that refuse a model call before it is made.

use std::fmt;
use std::time::Duration;

/// A spending limit that was reached, so the next model call was not made. A metering
/// wrapper (the runtime's cost meter) refuses calls with
/// [`LlmError::LimitExceeded`](crate::LlmError::LimitExceeded) carrying one, and a caller
/// tells the limits apart by matching, never by reading the message.
///
/// ```
/// use agent_llm::Limit;
/// let limit = Limit::Calls { made: 12, max: 12 };
/// assert_eq!(limit.to_string(), "made 12 of 12 LLM calls");
/// assert!(matches!(limit, Limit::Calls { .. }));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Limit {
    /// The cost in USD reached its limit.
    Usd {
        /// USD spent on the calls whose model has a price.
        spent: f64,
        /// The limit.
        max: f64,
        /// When a model has no price, the tokens used, which stood for the limit (they
        /// reached the token count the limit buys at a stand-in price).
        stand_in_tokens: Option<u64>,
    },
    /// The tokens used (input and output) reached their limit.
    Tokens {
        /// Tokens used.
        used: u64,
        /// The limit.
        max: u64,
    },
    /// The number of model calls reached its limit.
    Calls {
        /// Calls made.
        made: u64,
        /// The limit.
        max: u64,
    },
    /// The wall time of the run reached its budget.
    WallTime {
        /// Time since the run started.
        elapsed: Duration,
        /// The budget.
        max: Duration,
    },
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Usd {
                max,
                stand_in_tokens: Some(used),
                ..
            } => write!(
                f,
                "used {used} tokens, the stand-in for the ${max:.2} cost limit while a model has no price"
            ),
            Limit::Usd { spent, max, .. } => write!(f, "spent ${spent:.4} of a ${max:.4} limit"),
            Limit::Tokens { used, max } => write!(f, "used {used} of {max} tokens"),
            Limit::Calls { made, max } => write!(f, "made {made} of {max} LLM calls"),
            Limit::WallTime { elapsed, max } => {
                write!(f, "ran {elapsed:?} of a {max:?} wall-time budget")
            }
        }
    }
}

impl std::error::Error for Limit {}

impl From<Limit> for crate::LlmError {
    fn from(limit: Limit) -> Self {
        crate::LlmError::LimitExceeded(limit)
    }
}
