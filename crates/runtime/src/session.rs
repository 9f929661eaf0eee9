//! A session: the state, events, gates, bus and cancellation its agents share.

use crate::ask::{self, Ask};
use crate::bus::AgentBus;
use crate::context::AgentContext;
use crate::cost::{CostMeter, CostSnapshot};
use crate::events::EventSink;
use crate::gates::GateRegistry;
use crate::identity::AgentIdentity;
use crate::outage::ModelOutages;
use crate::prefix_reuse::PrefixReuse;
use crate::progress::ModelProgress;
use crate::session_parts::SessionParts;
use crate::state::SharedState;
use agent_llm::{ChatModel, ChatResponse, ExtractError, Extracted, LlmError, ModelRouter, Usage};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// What a session has done besides changing its state, saved with every checkpoint of a
/// durable run and restored when it resumes: how many events it emitted (so replayed
/// events are recognized), the gate ids it handed out (so work done again waits at the
/// same gates), and what its meter counted (so limits and totals cover the whole run).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionMarks {
    /// Product events emitted.
    pub events: u64,
    /// `(agent, gate, ids handed out)`, see [`GateRegistry::id_counters`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gate_ids: Vec<(String, String, u64)>,
    /// Tokens metered.
    #[serde(default)]
    pub usage: Usage,
    /// Model calls metered.
    #[serde(default)]
    pub calls: u64,
    /// USD metered.
    #[serde(default)]
    pub usd: f64,
    /// Tokens metered per model.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub usage_by_model: BTreeMap<String, Usage>,
    /// Calls metered per step.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub calls_by_step: BTreeMap<String, u64>,
    /// Tokens metered per step.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub usage_by_step: BTreeMap<String, Usage>,
    /// Input that repeated the previous call of its loop.
    #[serde(default, skip_serializing_if = "is_default")]
    pub prefix_reuse: PrefixReuse,
}

fn is_default(reuse: &PrefixReuse) -> bool {
    *reuse == PrefixReuse::default()
}

impl SessionMarks {
    /// What the session's meter had spent at these marks.
    pub fn spent(&self) -> CostSnapshot {
        CostSnapshot {
            usage: self.usage,
            calls: self.calls,
            usd: self.usd,
            usage_by_model: self.usage_by_model.clone(),
            calls_by_step: self.calls_by_step.clone(),
            usage_by_step: self.usage_by_step.clone(),
            prefix_reuse: self.prefix_reuse,
            ..CostSnapshot::default()
        }
    }
}

/// One user's run of a product: what its agents share. Make one per session, then an
/// [`AgentContext`] per agent invocation with [`Session::context`].
///
/// ```
/// use agent_runtime::{AgentIdentity, CollectingSink, Session};
/// use std::sync::Arc;
/// #[derive(Clone, Default)]
/// struct State { notes: Vec<String> }
/// let events = CollectingSink::<String>::default();
/// let session = Session::new("session-1", State::default())
///     .with_user("user-7")
///     .with_events(Arc::new(events.clone()));
/// let ctx = session.context(AgentIdentity::new("writer", "demo"));
/// ctx.emit("hello".to_string());
/// ctx.update_state(|s| s.notes.push("drafted".into()));
/// assert_eq!(events.events(), vec!["hello"]);
/// assert_eq!(session.state().snapshot().notes, vec!["drafted"]);
/// ```
pub struct Session<S, E> {
    parts: Arc<SessionParts<S, E>>,
}

impl<S, E> Clone for Session<S, E> {
    fn clone(&self) -> Self {
        Session {
            parts: Arc::clone(&self.parts),
        }
    }
}

impl<S, E> Session<S, E> {
    /// A session with this id and initial state; events go nowhere until
    /// [`Session::with_events`].
    pub fn new(id: impl Into<String>, state: S) -> Self {
        Session {
            parts: Arc::new(SessionParts {
                id: id.into(),
                user_id: String::new(),
                state: SharedState::new(state),
                events: None,
                gates: GateRegistry::new(),
                bus: None,
                cancel: CancellationToken::new(),
                model: None,
                router: None,
                meter: None,
                progress: None,
                emitted: AtomicU64::new(0),
                outages: None,
                last_outage: Mutex::default(),
            }),
        }
    }
}

impl<S, E> Session<S, E> {
    fn edit(self, f: impl FnOnce(&mut SessionParts<S, E>)) -> Self {
        match Arc::try_unwrap(self.parts) {
            Ok(mut parts) => {
                f(&mut parts);
                Session {
                    parts: Arc::new(parts),
                }
            }
            Err(shared) => {
                tracing::warn!("session configured after it was shared; change ignored");
                Session { parts: shared }
            }
        }
    }

    /// Sets the user id.
    pub fn with_user(self, user_id: impl Into<String>) -> Self {
        let user_id = user_id.into();
        self.edit(|p| p.user_id = user_id)
    }

    /// Sets where product events go: a closure, a channel, a [`CollectingSink`] or a
    /// server's session, shared.
    ///
    /// ```
    /// use agent_runtime::{CollectingSink, Session};
    /// use std::sync::Arc;
    /// let events = CollectingSink::default();
    /// let session: Session<(), &str> = Session::new("s1", ()).with_events(Arc::new(events.clone()));
    /// session.emit("started");
    /// assert_eq!(events.events(), ["started"]);
    /// ```
    ///
    /// [`CollectingSink`]: crate::CollectingSink
    pub fn with_events(self, sink: Arc<dyn EventSink<E>>) -> Self {
        self.edit(|p| p.events = Some(sink))
    }

    /// Uses this gate registry (for example one made with
    /// [`GateRegistry::with_listener`] or [`GateRegistry::restore`]d by a server that keeps
    /// gates across restarts).
    pub fn with_gates(self, gates: GateRegistry) -> Self {
        self.edit(|p| p.gates = gates)
    }

    /// Sets the bus the session's agents send messages on.
    ///
    /// ```
    /// use agent_runtime::{AgentIdentity, Session};
    /// use agent_runtime::bus::{AgentBus, InMemoryBus, MessageType};
    /// use futures::StreamExt;
    /// use std::sync::Arc;
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let bus = Arc::new(InMemoryBus::new()); // one bus per session
    /// let session: Session<(), ()> = Session::new("s1", ()).with_bus(bus.clone());
    /// let mut inbox = bus.subscribe("resume", "producer").await.unwrap();
    /// let ctx = session.context(AgentIdentity::new("craftsman", "resume"));
    /// ctx.send_message("producer", MessageType::Handoff, serde_json::json!({"section": 1})).await.unwrap();
    /// assert_eq!(inbox.next().await.unwrap().from, "craftsman");
    /// # });
    /// ```
    pub fn with_bus(self, bus: Arc<dyn AgentBus>) -> Self {
        self.edit(|p| p.bus = Some(bus))
    }

    /// Uses an existing cancellation token (cancel it to stop every agent of the session).
    pub fn with_cancellation(self, token: CancellationToken) -> Self {
        self.edit(|p| p.cancel = token)
    }

    /// Sets the model that [`Session::extract`] (and `extract` on the session's agent and
    /// node contexts) asks. Agent loops take their model when they run.
    pub fn with_model(self, model: Arc<dyn ChatModel>) -> Self {
        self.edit(|p| p.model = Some(model))
    }

    /// Sets the model router: the model id of each tier, for [`Ask::tier`] and for
    /// tools that pick a model themselves.
    pub fn with_router(self, router: ModelRouter) -> Self {
        self.edit(|p| p.router = Some(router))
    }

    /// Sets the session's cost meter. Every agent loop in the session checks it before each
    /// model call (a reached limit stops the run as `StopCause::LimitExceeded`) and records
    /// each call's usage on it; tools record their own LLM calls through
    /// [`AgentContext::meter`] or a [`crate::MeteredModel`] on the same meter.
    pub fn with_meter(self, meter: CostMeter) -> Self {
        self.edit(|p| p.meter = Some(meter))
    }

    /// Reports the model calls of the session's agents as product events: `progress`
    /// turns each [`ModelProgress`] (queued for the model server, sent, still running
    /// every 15 s, finished with its usage and the session's totals) into an event, or
    /// into none. The calls seen are those of every agent loop and of the tools it runs,
    /// made through models built by [`agent_llm::ProviderConfig`] (or wrapped in
    /// [`agent_llm::capacity::CapacityLimited`]).
    ///
    /// ```
    /// use agent_runtime::{ModelProgress, Session};
    /// use agent_llm::capacity::CallEvent;
    /// #[derive(Debug)]
    /// enum Event { Working { seconds: u64 } }
    /// let session: Session<(), Event> = Session::new("s1", ()).with_progress(|_agent, progress: &ModelProgress| {
    ///     match progress.call {
    ///         CallEvent::Running { elapsed } => Some(Event::Working { seconds: elapsed.as_secs() }),
    ///         _ => None,
    ///     }
    /// });
    /// # let _ = session;
    /// ```
    pub fn with_progress(
        self,
        progress: impl Fn(&AgentIdentity, &ModelProgress) -> Option<E> + Send + Sync + 'static,
    ) -> Self {
        self.edit(|p| p.progress = Some(Arc::new(progress)))
    }

    /// Tells `outages` whenever a model call of the session fails because the model
    /// cannot be reached (see [`ModelOutages`]): a host parks the session rather than
    /// failing it.
    pub fn with_model_outages(self, outages: Arc<dyn ModelOutages>) -> Self {
        self.edit(|p| p.outages = Some(outages))
    }

    /// Reports a failed model call made outside the session's agent loops and metered
    /// calls (which report their own): when `error` is an outage
    /// ([`LlmError::is_outage`]), the session's [`ModelOutages`] listener is told.
    pub fn report_model_error(&self, error: &LlmError) {
        self.parts.report_model_error(error);
    }

    /// The last model outage a call of the session reported, if any. A hosted run that
    /// fails after one is parked and run again, not failed: a product tells its user it
    /// waits for the model rather than that it failed.
    pub fn model_outage(&self) -> Option<String> {
        self.parts
            .last_outage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// A context for one invocation of `agent`: a fresh scratchpad and outbox, the
    /// session's shared parts.
    pub fn context(&self, agent: AgentIdentity) -> AgentContext<S, E> {
        AgentContext::new(Arc::clone(&self.parts), agent)
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.parts.id
    }

    /// The shared state.
    pub fn state(&self) -> &SharedState<S> {
        &self.parts.state
    }

    /// The session's gates (answer them with [`GateRegistry::respond`]).
    pub fn gates(&self) -> &GateRegistry {
        &self.parts.gates
    }

    /// The token that cancels every agent of the session.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.parts.cancel
    }

    /// The bus, if any.
    pub fn bus(&self) -> Option<&Arc<dyn AgentBus>> {
        self.parts.bus.as_ref()
    }

    /// The cost meter, if any.
    pub fn meter(&self) -> Option<&CostMeter> {
        self.parts.meter.as_ref()
    }

    /// The model [`extract`](Self::extract) asks, if set.
    pub fn model(&self) -> Option<&Arc<dyn ChatModel>> {
        self.parts.model.as_ref()
    }

    /// Asks the session's model for a `T`: the one metered call (see [`Ask`]). The
    /// outcome keeps the usage and the number of attempts, on failure too.
    pub async fn extract<T>(&self, ask: Ask) -> Result<Extracted<T>, ExtractError>
    where
        T: JsonSchema + DeserializeOwned,
    {
        ask::extract(&self.parts, None, ask).await
    }

    /// Sends the ask's request as it is (its tools included) to the session's model: the
    /// one metered plain call, for an agent that answers with tool calls or text. Routed,
    /// metered and cancelled as [`extract`](Self::extract) is.
    pub async fn chat(&self, ask: Ask) -> Result<ChatResponse, LlmError> {
        ask::chat(&self.parts, None, ask).await
    }

    /// [`chat`](Self::chat), stopped by `cancel` too (a run's token).
    pub(crate) async fn chat_until(
        &self,
        cancel: &CancellationToken,
        ask: Ask,
    ) -> Result<ChatResponse, LlmError> {
        ask::chat(&self.parts, Some(cancel), ask).await
    }

    /// [`extract`](Self::extract), stopped by `cancel` too (a run's token).
    pub(crate) async fn extract_until<T>(
        &self,
        cancel: &CancellationToken,
        ask: Ask,
    ) -> Result<Extracted<T>, ExtractError>
    where
        T: JsonSchema + DeserializeOwned,
    {
        ask::extract(&self.parts, Some(cancel), ask).await
    }

    /// The user id.
    pub fn user_id(&self) -> &str {
        &self.parts.user_id
    }

    /// Sends a product event to the session's sink, numbered (see
    /// [`EventSink::emit_numbered`]).
    pub fn emit(&self, event: E) {
        self.parts.emit(event);
    }

    /// How many product events the session emitted, counting across restarts.
    pub fn events_emitted(&self) -> u64 {
        self.parts.emitted.load(Ordering::SeqCst)
    }

    /// What the session has done besides its state, for a checkpoint.
    pub fn marks(&self) -> SessionMarks {
        let spent = self
            .parts
            .meter
            .as_ref()
            .map(CostMeter::snapshot)
            .unwrap_or_default();
        SessionMarks {
            events: self.events_emitted(),
            gate_ids: self.parts.gates.id_counters(),
            usage: spent.usage,
            calls: spent.calls,
            usd: spent.usd,
            usage_by_model: spent.usage_by_model,
            calls_by_step: spent.calls_by_step,
            usage_by_step: spent.usage_by_step,
            prefix_reuse: spent.prefix_reuse,
        }
    }

    /// Restores marks saved by [`marks`](Self::marks) (a resumed run): the event count,
    /// the gate id counters and the meter's totals.
    ///
    /// ```
    /// use agent_runtime::{CollectingSink, Session};
    /// let before: Session<(), &str> = Session::new("s", ());
    /// before.emit("one");
    /// before.gates().next_id("writer", "review");
    /// let sink = CollectingSink::default();
    /// let after: Session<(), &str> = Session::new("s", ()).with_events(std::sync::Arc::new(sink.clone()));
    /// after.restore_marks(&before.marks());
    /// assert_eq!(after.events_emitted(), 1);
    /// assert_eq!(after.gates().next_id("writer", "review"), "writer:review:2");
    /// ```
    pub fn restore_marks(&self, marks: &SessionMarks) {
        self.parts.emitted.store(marks.events, Ordering::SeqCst);
        self.parts
            .gates
            .set_id_counters(marks.gate_ids.iter().cloned());
        if let Some(meter) = &self.parts.meter {
            meter.restore(&marks.spent());
        }
    }
}
