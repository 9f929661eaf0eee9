//! Whether a session's backends failed its run, or its model could not be reached. A
//! session whose backends fail under it stops at its last checkpoint instead of running
//! on past a write nobody will see, or failing for a fault that is not its own: an event,
//! a gate, a checkpoint or a journal entry the store refused, or a message the agent bus
//! could not carry (`parking.rs`), parks the run (nothing of it is finished). A run that
//! ends in an error after its model could not be reached ([`ModelOutages`]) parks too.
//! Either is taken up again from the store (`retake.rs`, or the run queue's worker).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use agent_llm::LlmError;
use agent_runtime::ModelOutages;
use tokio_util::sync::CancellationToken;

/// Whether a run's backends (its store, its agent bus) failed it, and how to stop the run
/// when they do; and whether its model could not be reached.
#[derive(Debug)]
pub(crate) struct BackendFailure {
    session: String,
    /// The run's park flag and cancellation ([`LiveSession`](crate::live::LiveSession)).
    parked: Arc<AtomicBool>,
    cancel: CancellationToken,
    reason: OnceLock<String>,
    /// The last model outage the run reported: the run goes on (its product may cope),
    /// and parks if it then ends in an error.
    model_outage: Mutex<Option<String>>,
}

impl BackendFailure {
    pub(crate) fn new(session: &str, parked: Arc<AtomicBool>, cancel: CancellationToken) -> Self {
        BackendFailure {
            session: session.to_owned(),
            parked,
            cancel,
            reason: OnceLock::new(),
            model_outage: Mutex::new(None),
        }
    }

    /// A backend refused `what` for `reason`: parks the run (once).
    pub(crate) fn failed(&self, what: &str, reason: &str) {
        let first = self.reason.set(format!("{what}: {reason}")).is_ok();
        if first {
            tracing::error!(
                session = %self.session,
                what,
                reason,
                "a backend failed the run: the session parks at its last checkpoint and resumes once the store answers"
            );
            self.parked.store(true, Ordering::SeqCst);
            self.cancel.cancel();
        }
    }

    /// Why a backend failed the run, if one did.
    pub(crate) fn reason(&self) -> Option<&str> {
        self.reason.get().map(String::as_str)
    }

    /// Whether a backend failed the run or its model could not be reached: a run that
    /// then ends in an error parks, to be taken up again.
    pub(crate) fn is_fault(&self) -> bool {
        self.reason().is_some() || self.model_outage().is_some()
    }

    /// The last model outage the run reported, if any.
    pub(crate) fn model_outage(&self) -> Option<String> {
        self.model_outage
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl ModelOutages for BackendFailure {
    fn model_unreachable(&self, error: &LlmError) {
        tracing::warn!(session = %self.session, %error, "the model could not be reached");
        *self.model_outage.lock().unwrap_or_else(|p| p.into_inner()) = Some(error.to_string());
    }
}
