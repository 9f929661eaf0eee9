//! Telling a session's host that its model could not be reached: the run that stops on
//! it failed for a fault that is not its own, and can be taken up again once the model
//! answers.

use agent_llm::LlmError;

/// Told when a model call of a session failed, after its retries, because the model
/// could not be reached or could not answer for now ([`LlmError::is_outage`]). The
/// session's agent loops and its metered calls ([`Session::chat`](crate::Session::chat),
/// [`Session::extract`](crate::Session::extract)) report such failures; code that calls
/// a model by other means reports them with
/// [`Session::report_model_error`](crate::Session::report_model_error).
///
/// agent-server listens on every hosted session: a run that ends in an error after an
/// outage parks at its last checkpoint instead of failing, and is run again later.
///
/// ```
/// use agent_llm::LlmError;
/// use agent_runtime::{ModelOutages, Session};
/// use std::sync::{Arc, Mutex};
///
/// #[derive(Default)]
/// struct Seen(Mutex<Vec<String>>);
/// impl ModelOutages for Seen {
///     fn model_unreachable(&self, error: &LlmError) {
///         self.0.lock().unwrap().push(error.to_string());
///     }
/// }
///
/// let seen = Arc::new(Seen::default());
/// let session: Session<(), ()> = Session::new("s1", ()).with_model_outages(seen.clone());
/// session.report_model_error(&LlmError::Transport("connection refused".into()));
/// session.report_model_error(&LlmError::InvalidResponse("not JSON".into()));
/// assert_eq!(seen.0.lock().unwrap().len(), 1, "only the outage is reported");
/// assert!(session.model_outage().unwrap().contains("connection refused"));
/// ```
pub trait ModelOutages: Send + Sync {
    /// A model call of the session failed with `error`, an outage.
    fn model_unreachable(&self, error: &LlmError);
}
