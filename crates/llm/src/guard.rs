//! The process-wide switch that stops real model requests (for test suites).

use crate::error::LlmError;
use std::sync::atomic::{AtomicBool, Ordering};

static DENIED: AtomicBool = AtomicBool::new(false);

/// The environment variable that, set to `1` or `true`, denies requests like
/// [`deny_network_requests`].
pub const DENY_ENV: &str = "AGENT_LLM_DENY_NETWORK";

/// From now on, every provider in this process refuses to send a request to a host
/// other than loopback, failing with [`LlmError::RequestsDisabled`]. Call it at the top of
/// a test suite so no test can reach (and pay) a real vendor by accident; local test
/// servers on `127.0.0.1`/`localhost` still work.
///
/// ```
/// agent_llm::testing::deny_network_requests();
/// assert!(agent_llm::testing::network_requests_denied());
/// agent_llm::testing::allow_network_requests();
/// ```
pub fn deny_network_requests() {
    DENIED.store(true, Ordering::SeqCst);
}

/// Undoes [`deny_network_requests`].
pub fn allow_network_requests() {
    DENIED.store(false, Ordering::SeqCst);
}

/// Whether non-loopback requests are denied (by the switch or by `AGENT_LLM_DENY_NETWORK`).
pub fn network_requests_denied() -> bool {
    DENIED.load(Ordering::SeqCst)
        || std::env::var(DENY_ENV).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// Fails when requests are denied and `url` is not on a loopback host.
pub(crate) fn check_request_allowed(url: &reqwest::Url) -> Result<(), LlmError> {
    if !network_requests_denied() {
        return Ok(());
    }
    let loopback = match url.host() {
        Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    if loopback {
        Ok(())
    } else {
        Err(LlmError::RequestsDisabled(
            url.host_str().unwrap_or_default().to_owned(),
        ))
    }
}
