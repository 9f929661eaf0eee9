//! What a session's agents share, behind the `Session` handle and every `AgentContext`.

use crate::bus::AgentBus;
use crate::cost::CostMeter;
use crate::events::EventSink;
use crate::gates::GateRegistry;
use crate::outage::ModelOutages;
use crate::progress::ProgressEvents;
use crate::state::SharedState;
use agent_llm::{ChatModel, LlmError, ModelRouter};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio_util::sync::CancellationToken;

pub(crate) struct SessionParts<S, E> {
    pub(crate) id: String,
    pub(crate) user_id: String,
    pub(crate) state: SharedState<S>,
    /// Where product events go; `None` discards them.
    pub(crate) events: Option<Arc<dyn EventSink<E>>>,
    pub(crate) gates: GateRegistry,
    pub(crate) bus: Option<Arc<dyn AgentBus>>,
    pub(crate) cancel: CancellationToken,
    /// The model `extract` asks; `None` refuses such calls.
    pub(crate) model: Option<Arc<dyn ChatModel>>,
    pub(crate) router: Option<ModelRouter>,
    pub(crate) meter: Option<CostMeter>,
    /// Turns model-call progress into product events; `None` reports none.
    pub(crate) progress: Option<ProgressEvents<E>>,
    /// Product events emitted so far, counting across restarts.
    pub(crate) emitted: AtomicU64,
    /// Told when a model call fails because the model cannot be reached; `None` tells
    /// nobody.
    pub(crate) outages: Option<Arc<dyn ModelOutages>>,
    /// The last model outage reported.
    pub(crate) last_outage: Mutex<Option<String>>,
}

impl<S, E> SessionParts<S, E> {
    /// Numbers `event` and hands it to the sink.
    pub(crate) fn emit(&self, event: E) {
        let ordinal = self.emitted.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(sink) = &self.events {
            sink.emit_numbered(ordinal, event);
        }
    }

    /// Tells the session's listener about a failed model call, if it is an outage.
    pub(crate) fn report_model_error(&self, error: &LlmError) {
        if !error.is_outage() {
            return;
        }
        *self
            .last_outage
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(error.to_string());
        if let Some(outages) = &self.outages {
            outages.model_unreachable(error);
        }
    }
}
