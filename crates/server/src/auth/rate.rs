//! Rate limits per credential and per tenant (GCRA, from `governor`): a request over
//! either is refused with 429 and how long to wait.

use std::num::NonZeroU32;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::AuthConfigError;

/// A rate: `count` requests per `period`, which may all come at once (a burst of
/// `count`), then one every `period / count`.
///
/// Written `100/min`, `5/s`, `1000/h` (also `sec`, `second`, `minute`, `hour`).
///
/// ```
/// use agent_server::auth::Rate;
/// let rate: Rate = "120/min".parse().unwrap();
/// assert_eq!(rate, Rate::per_minute(120));
/// assert!("0/s".parse::<Rate>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    count: NonZeroU32,
    period: Duration,
}

impl Rate {
    /// `count` requests a minute (at least one).
    pub fn per_minute(count: u32) -> Self {
        Rate {
            count: NonZeroU32::new(count).unwrap_or(NonZeroU32::MIN),
            period: Duration::from_secs(60),
        }
    }

    /// `count` requests a second (at least one).
    pub fn per_second(count: u32) -> Self {
        Rate {
            count: NonZeroU32::new(count).unwrap_or(NonZeroU32::MIN),
            period: Duration::from_secs(1),
        }
    }

    fn quota(self) -> Quota {
        let each = self.period / self.count.get();
        Quota::with_period(each.max(Duration::from_nanos(1)))
            .unwrap_or_else(|| Quota::per_second(self.count))
            .allow_burst(self.count)
    }
}

impl FromStr for Rate {
    type Err = AuthConfigError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || AuthConfigError::BadRate(text.to_owned());
        let (count, unit) = text.trim().split_once('/').ok_or_else(bad)?;
        let count: u32 = count.trim().parse().map_err(|_| bad())?;
        let count = NonZeroU32::new(count).ok_or_else(bad)?;
        let period = match unit.trim() {
            "s" | "sec" | "second" => Duration::from_secs(1),
            "m" | "min" | "minute" => Duration::from_secs(60),
            "h" | "hour" => Duration::from_secs(3600),
            _ => return Err(bad()),
        };
        Ok(Rate { count, period })
    }
}

/// One rate, kept per key (a credential, a tenant).
#[derive(Clone)]
pub(crate) struct KeyedLimit {
    limiter: Arc<DefaultKeyedRateLimiter<String>>,
}

impl std::fmt::Debug for KeyedLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedLimit")
            .field("keys", &self.limiter.len())
            .finish()
    }
}

impl KeyedLimit {
    pub(crate) fn new(rate: Rate) -> Self {
        KeyedLimit {
            limiter: Arc::new(RateLimiter::keyed(rate.quota())),
        }
    }

    /// Takes one request of `key`'s rate, or says how long until one is allowed.
    pub(crate) fn take(&self, key: &str) -> Result<(), Duration> {
        // The keys are credentials and tenants the server has authenticated: few, but
        // forget the ones that have been quiet long enough to be full again.
        if self.limiter.len() > 10_000 {
            self.limiter.retain_recent();
        }
        self.limiter
            .check_key(&key.to_owned())
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_read_with_their_unit() {
        assert_eq!("5/s".parse::<Rate>().unwrap(), Rate::per_second(5));
        assert_eq!(
            " 60 / minute ".parse::<Rate>().unwrap(),
            Rate::per_minute(60)
        );
        assert!("1000/h".parse::<Rate>().is_ok());
        for bad in ["", "5", "5/day", "x/s", "0/min", "-1/s"] {
            assert!(bad.parse::<Rate>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_key_gets_its_burst_then_waits_and_keys_are_apart() {
        let limit = KeyedLimit::new(Rate::per_minute(3));
        for _ in 0..3 {
            assert!(limit.take("a").is_ok());
        }
        let wait = limit.take("a").unwrap_err();
        assert!(
            wait > Duration::from_secs(10) && wait <= Duration::from_secs(20),
            "{wait:?}"
        );
        assert!(limit.take("b").is_ok());
    }
}
