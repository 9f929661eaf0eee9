//! What a tool sees while it runs: [`AgentContext`].

use crate::bus::{AgentMessage, BusError, MessageType, OutgoingMessage};
use crate::cost::CostMeter;
use crate::gates::{GateError, GateRegistry, GateRequest};
use crate::identity::AgentIdentity;
use crate::session::SessionParts;
use crate::state::{Scratchpad, SharedState};
use agent_llm::{ModelRouter, ModelTier};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The context of one agent invocation, passed to every tool.
///
/// It gives the session's shared parts (state, events, gates, bus, cancellation, model
/// router, cost meter) and the invocation's own scratchpad and outbox. Cheap to clone
/// (a few reference counts): typed tools receive it by value.
pub struct AgentContext<S, E> {
    session: Arc<SessionParts<S, E>>,
    agent: Arc<AgentIdentity>,
    scratchpad: Scratchpad,
    outbox: Arc<Mutex<Vec<AgentMessage>>>,
}

impl<S, E> Clone for AgentContext<S, E> {
    fn clone(&self) -> Self {
        AgentContext {
            session: Arc::clone(&self.session),
            agent: Arc::clone(&self.agent),
            scratchpad: self.scratchpad.clone(),
            outbox: Arc::clone(&self.outbox),
        }
    }
}

impl<S, E> std::fmt::Debug for AgentContext<S, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentContext")
            .field("session", &self.session.id)
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

impl<S, E> AgentContext<S, E> {
    pub(crate) fn new(session: Arc<SessionParts<S, E>>, agent: AgentIdentity) -> Self {
        AgentContext {
            session,
            agent: Arc::new(agent),
            scratchpad: Scratchpad::default(),
            outbox: Arc::default(),
        }
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
        &self.agent
    }

    /// Sends a product event to the session's sink.
    pub fn emit(&self, event: E) {
        if let Some(sink) = &self.session.events {
            sink.emit(event);
        }
    }

    /// Waits at a gate until the user answers, the gate times out, or the session is
    /// cancelled, then reads the answer as `T`. The gate id is stable:
    /// `{agent}:{gate}:{n}` for the n-th wait at that gate by this agent in the session.
    pub async fn wait_for_user<T: DeserializeOwned>(
        &self,
        gate: impl Into<GateRequest>,
    ) -> Result<T, GateError> {
        let gate = gate.into();
        let id = self.session.gates.next_id(&self.agent.name, &gate.name);
        let answer = self
            .session
            .gates
            .wait(&id, gate, Some(&self.session.cancel))
            .await?;
        serde_json::from_value(answer).map_err(|e| GateError::InvalidAnswer {
            id,
            message: e.to_string(),
        })
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
        &self.scratchpad
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
            OutgoingMessage::new(&self.agent.name, to, kind, &self.agent.domain, payload);
        let sent = match &self.session.bus {
            Some(bus) => bus.send(outgoing).await?,
            None => outgoing.into_message(),
        };
        self.outbox
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(sent.clone());
        Ok(sent)
    }

    /// The messages this invocation sent so far.
    pub fn messages_out(&self) -> Vec<AgentMessage> {
        self.outbox
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
}
