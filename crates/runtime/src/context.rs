//! What a tool sees while it runs: [`AgentContext`].

use crate::ask::Ask;
use crate::bus::{AgentMessage, BusError, MessageType, OutgoingMessage};
use crate::cost::CostMeter;
use crate::gates::{GateError, GateRegistry, GateRequest};
use crate::identity::AgentIdentity;
use crate::session_parts::SessionParts;
use crate::state::{Scratchpad, SharedState};
use crate::typed_gate::{Gate, read_as};
use agent_llm::{ExtractError, Extracted, ModelRouter, ModelTier};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long an invocation has waited, at gates for a user or in a model server's queue:
/// what its round and overall timeouts leave out.
#[derive(Debug, Default)]
pub(crate) struct WaitClock {
    inner: Mutex<GateTime>,
}

#[derive(Debug, Default)]
struct GateTime {
    /// Gates waited at now.
    open: usize,
    /// Since when at least one is.
    since: Option<Instant>,
    /// Waiting time of the periods that ended.
    total: Duration,
}

impl WaitClock {
    fn lock(&self) -> MutexGuard<'_, GateTime> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Time spent with at least one gate open, so far.
    pub(crate) fn waited(&self) -> Duration {
        let time = self.lock();
        time.total + time.since.map(|since| since.elapsed()).unwrap_or_default()
    }

    pub(crate) fn enter(&self) {
        let mut time = self.lock();
        time.open += 1;
        if time.open == 1 {
            time.since = Some(Instant::now());
        }
    }

    pub(crate) fn leave(&self) {
        let mut time = self.lock();
        time.open = time.open.saturating_sub(1);
        if time.open == 0
            && let Some(since) = time.since.take()
        {
            time.total += since.elapsed();
        }
    }
}

impl WaitClock {
    /// Resolves once `limit` of working time (time not spent waiting) has passed since
    /// this call.
    pub(crate) async fn work_for(&self, limit: Duration) {
        let started = Instant::now();
        let waited_before = self.waited();
        loop {
            let waited = self.waited().saturating_sub(waited_before);
            let working = started.elapsed().saturating_sub(waited);
            if working >= limit {
                return;
            }
            tokio::time::sleep(limit - working).await;
        }
    }
}

/// Leaves the clock when the wait ends, however it ends.
struct Waiting<'a>(&'a WaitClock);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

/// The context of one agent invocation, passed to every tool.
///
/// It gives the session's shared parts (state, events, gates, bus, cancellation, model
/// router, cost meter) and the invocation's own scratchpad and outbox. Cheap to clone
/// (two reference counts): typed tools receive it by value.
pub struct AgentContext<S, E> {
    session: Arc<SessionParts<S, E>>,
    invocation: Arc<Invocation>,
}

/// What one invocation's clones of its context share: one allocation, made when the
/// invocation starts.
#[derive(Debug)]
struct Invocation {
    agent: AgentIdentity,
    scratchpad: Scratchpad,
    outbox: Mutex<Vec<AgentMessage>>,
    wait_clock: WaitClock,
    /// Why a tool ended the run, once one has.
    ending: OnceLock<String>,
}

impl<S, E> Clone for AgentContext<S, E> {
    fn clone(&self) -> Self {
        AgentContext {
            session: Arc::clone(&self.session),
            invocation: Arc::clone(&self.invocation),
        }
    }
}

impl<S, E> std::fmt::Debug for AgentContext<S, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentContext")
            .field("session", &self.session.id)
            .field("agent", &self.invocation.agent)
            .finish_non_exhaustive()
    }
}

impl<S, E> AgentContext<S, E> {
    pub(crate) fn new(session: Arc<SessionParts<S, E>>, agent: AgentIdentity) -> Self {
        AgentContext {
            session,
            invocation: Arc::new(Invocation {
                agent,
                scratchpad: Scratchpad::default(),
                outbox: Mutex::default(),
                wait_clock: WaitClock::default(),
                ending: OnceLock::new(),
            }),
        }
    }

    /// Ends this agent run once the round's tool calls are done: the work is finished,
    /// or handed on (the page changed, a person takes over). The loop makes no further
    /// model call and stops with [`StopCause::Ended`](crate::StopCause::Ended) and this
    /// reason, which a durable run keeps (a resumed run stays ended). With sequential
    /// tools, the calls after this one are not run. The first reason given wins.
    ///
    /// ```
    /// use agent_llm::testing::{ScriptedModel, responses};
    /// use agent_runtime::{AgentConfig, AgentContext, AgentIdentity, AgentLoop, Session, StopCause, ToolError, tool};
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Done { summary: String }
    /// let config = AgentConfig::new(AgentIdentity::new("explorer", "demo"), "Explore.").with_tool(tool(
    ///     "done",
    ///     "Ends the exploration.",
    ///     |args: Done, ctx: AgentContext<(), ()>| async move {
    ///         ctx.end_run(args.summary);
    ///         Ok::<_, ToolError>("ended")
    ///     },
    /// ));
    /// let model = ScriptedModel::new(vec![responses::tool_call("c1", "done", serde_json::json!({"summary": "all seen"}))]);
    /// let session = Session::new("s1", ());
    /// let result = AgentLoop::new(config, model.clone()).run(&session.context(AgentIdentity::new("explorer", "demo")), "Go.").await;
    /// assert_eq!(result.stop, StopCause::Ended("all seen".into()));
    /// assert_eq!(model.call_count(), 1); // no model call after the run ended
    /// # });
    /// ```
    pub fn end_run(&self, reason: impl Into<String>) {
        // The first reason given stays.
        let _ = self.invocation.ending.set(reason.into());
    }

    /// Why a tool ended the run, if one did (read without a lock: the loop asks every
    /// round).
    pub(crate) fn ending(&self) -> Option<&str> {
        self.invocation.ending.get().map(String::as_str)
    }

    /// How long this invocation has waited (left out of its timeouts).
    pub(crate) fn wait_clock(&self) -> &WaitClock {
        &self.invocation.wait_clock
    }

    /// The session's shared parts.
    pub(crate) fn parts(&self) -> &Arc<SessionParts<S, E>> {
        &self.session
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.session.id
    }

    /// The user id.
    pub fn user_id(&self) -> &str {
        &self.session.user_id
    }

    /// The agent this invocation runs.
    pub fn agent(&self) -> &AgentIdentity {
        &self.invocation.agent
    }

    /// Sends a product event to the session's sink.
    pub fn emit(&self, event: E) {
        self.session.emit(event);
    }

    /// Waits at a gate until the user answers, the gate times out, or the session is
    /// cancelled, then reads the answer as `T`. The gate id is stable:
    /// `{agent}:{gate}:{n}` for the n-th wait at that gate by this agent in the session.
    /// Time spent waiting does not count against the tool's round timeout.
    async fn wait_at<T: DeserializeOwned>(&self, gate: GateRequest) -> Result<T, GateError> {
        let id = self.session.gates.next_id(&self.agent().name, &gate.name);
        let clock = self.wait_clock();
        clock.enter();
        let waiting = Waiting(clock);
        let answer = self
            .session
            .gates
            .wait(&id, gate, Some(&self.session.cancel))
            .await;
        drop(waiting);
        read_as(&answer?).map_err(|e| GateError::InvalidAnswer {
            id,
            message: e.to_string(),
        })
    }

    /// Asks the user at a declared gate, showing `payload`, and returns the typed answer.
    /// The gate id is stable: `{agent}:{gate}:{n}` for the
    /// n-th wait at that gate by this agent in the session. Time spent waiting does not
    /// count against the tool's round timeout. Fails when the gate times out, the
    /// session is cancelled, or the answer does not read as `A`.
    ///
    /// ```
    /// use agent_runtime::{AgentIdentity, Gate, Session};
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// #[derive(serde::Serialize, schemars::JsonSchema)]
    /// struct Draft { text: String }
    /// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct Approval { approved: bool }
    /// const APPROVE: Gate<Draft, Approval> = Gate::new("approve");
    ///
    /// let session: Session<(), ()> = Session::new("s1", ());
    /// let gates = session.gates().clone();
    /// tokio::spawn(async move {
    ///     let gate = gates.next_pending().await;
    ///     gates.answer(&APPROVE, &gate.id, &Approval { approved: true }).unwrap();
    /// });
    /// let ctx = session.context(AgentIdentity::new("writer", "demo"));
    /// let answer = ctx.ask(&APPROVE, &Draft { text: "Hello".into() }).await.unwrap();
    /// assert!(answer.approved);
    /// # });
    /// ```
    pub async fn ask<P: Serialize, A: DeserializeOwned>(
        &self,
        gate: &Gate<P, A>,
        payload: &P,
    ) -> Result<A, GateError> {
        self.wait_at(gate.request(payload)?).await
    }

    /// Asks at a declared gate with a request made from it
    /// ([`Gate::request_for`] for an instance, a timeout with
    /// [`GateRequest::with_timeout`]).
    pub async fn ask_with<P, A: DeserializeOwned>(
        &self,
        gate: &Gate<P, A>,
        request: GateRequest,
    ) -> Result<A, GateError> {
        debug_assert_eq!(request.kind, gate.name());
        self.wait_at(request).await
    }

    /// The session's gates.
    pub fn gates(&self) -> &GateRegistry {
        &self.session.gates
    }

    /// A copy of the shared state.
    pub fn state(&self) -> S
    where
        S: Clone,
    {
        self.session.state.snapshot()
    }

    /// Reads the shared state without copying it.
    pub fn read_state<R>(&self, f: impl FnOnce(&S) -> R) -> R {
        self.session.state.read(f)
    }

    /// Changes the shared state (in memory; persisting it is the coordinator's job).
    pub fn update_state<R>(&self, f: impl FnOnce(&mut S) -> R) -> R {
        self.session.state.update(f)
    }

    /// The shared state handle.
    pub fn shared_state(&self) -> &SharedState<S> {
        &self.session.state
    }

    /// This invocation's scratchpad.
    pub fn scratchpad(&self) -> &Scratchpad {
        &self.invocation.scratchpad
    }

    /// The session's cancellation token.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.session.cancel
    }

    /// Whether the session was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.session.cancel.is_cancelled()
    }

    /// Sends a message from this agent to `to` in this agent's domain. With a bus it is
    /// delivered (or held, or refused, as the bus says); without one it is only recorded.
    /// Either way it is returned in [`crate::AgentResult::messages_out`].
    pub async fn send_message(
        &self,
        to: &str,
        kind: MessageType,
        payload: Value,
    ) -> Result<AgentMessage, BusError> {
        let outgoing =
            OutgoingMessage::new(&self.agent().name, to, kind, &self.agent().domain, payload);
        let sent = match &self.session.bus {
            Some(bus) => bus.send(outgoing).await?,
            None => outgoing.into_message(),
        };
        self.invocation
            .outbox
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(sent.clone());
        Ok(sent)
    }

    /// The messages this invocation sent so far.
    pub fn messages_out(&self) -> Vec<AgentMessage> {
        self.invocation
            .outbox
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The session's model router, if it has one.
    pub fn router(&self) -> Option<&ModelRouter> {
        self.session.router.as_ref()
    }

    /// The model id for a tier, from the session's router.
    pub fn model_for(&self, tier: ModelTier) -> Option<&str> {
        self.session.router.as_ref().map(|r| r.model(tier))
    }

    /// The session's cost meter, if it has one.
    pub fn meter(&self) -> Option<&CostMeter> {
        self.session.meter.as_ref()
    }

    /// Asks the session's model for a `T` (a tool's own model call): the one metered
    /// call, see [`Ask`].
    pub async fn extract<T>(&self, ask: Ask) -> Result<Extracted<T>, ExtractError>
    where
        T: JsonSchema + DeserializeOwned,
    {
        crate::ask::extract(&self.session, None, ask).await
    }
}
