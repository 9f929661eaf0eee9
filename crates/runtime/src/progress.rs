//! What an agent's model calls are doing while it works, as a product hears it:
//! [`ModelProgress`], and the product's way of turning it into its own events.

use agent_llm::capacity::CallEvent;
use std::sync::Arc;

/// One model call of an agent as it goes, with the session's totals: what a product turns
/// into progress events ([`Session::with_progress`](crate::Session::with_progress)).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelProgress {
    /// What the call is doing.
    pub call: CallEvent,
    /// Model calls of the session so far, a finished call included; `None` without a meter.
    pub calls_so_far: Option<u64>,
    /// Tokens of the session so far, a finished call's included; `None` without a meter.
    pub tokens_so_far: Option<u64>,
}

/// Turns [`ModelProgress`] into a product event, or into none.
pub(crate) type ProgressEvents<E> =
    Arc<dyn Fn(&crate::AgentIdentity, &ModelProgress) -> Option<E> + Send + Sync>;
