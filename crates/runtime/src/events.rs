//! Where events go: the product's own events (`E`) and the loop's events.

use crate::identity::AgentIdentity;
use agent_llm::Usage;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Receives a product's events (`E`), for example to stream them to a browser.
///
/// Closures `Fn(E)` are sinks, so is a tokio unbounded sender and [`CollectingSink`].
pub trait EventSink<E>: Send + Sync {
    /// Takes one event. Must not block.
    fn emit(&self, event: E);

    /// Takes one event of a [`Session`](crate::Session), with its ordinal: its number
    /// among the session's events (1, 2, ...), counting across restarts of a resumed run.
    /// A sink that keeps events (a server's store) and already holds the event with this
    /// ordinal, because a resumed run is replaying work done after its last checkpoint,
    /// drops it, so every event is delivered once and keeps its id. By default the
    /// ordinal is ignored.
    fn emit_numbered(&self, ordinal: u64, event: E) {
        let _ = ordinal;
        self.emit(event);
    }
}

impl<E, F> EventSink<E> for F
where
    F: Fn(E) + Send + Sync,
{
    fn emit(&self, event: E) {
        self(event)
    }
}

impl<E: Send> EventSink<E> for tokio::sync::mpsc::UnboundedSender<E> {
    fn emit(&self, event: E) {
        if self.send(event).is_err() {
            tracing::debug!("event dropped: the receiver is gone");
        }
    }
}

/// A sink that keeps every event, for tests and for replay.
///
/// ```
/// use agent_runtime::{CollectingSink, EventSink};
/// let sink = CollectingSink::default();
/// sink.emit("started");
/// assert_eq!(sink.events(), vec!["started"]);
/// ```
#[derive(Debug)]
pub struct CollectingSink<E> {
    events: Arc<Mutex<Vec<E>>>,
}

impl<E> Default for CollectingSink<E> {
    fn default() -> Self {
        CollectingSink {
            events: Arc::default(),
        }
    }
}

impl<E> Clone for CollectingSink<E> {
    fn clone(&self) -> Self {
        CollectingSink {
            events: Arc::clone(&self.events),
        }
    }
}

impl<E: Clone> CollectingSink<E> {
    /// The events so far, oldest first.
    pub fn events(&self) -> Vec<E> {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl<E: Send> EventSink<E> for CollectingSink<E> {
    fn emit(&self, event: E) {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(event);
    }
}

/// What the agent loop reports about itself, round by round.
#[derive(Debug, Clone, PartialEq)]
pub enum LoopEvent {
    /// A round (one model call and its tool calls) began.
    RoundStarted {
        /// 1-based round number.
        round: u32,
    },
    /// The model asked for a tool.
    ToolCalled {
        /// Round number.
        round: u32,
        /// Tool name.
        name: String,
        /// Call id.
        id: String,
    },
    /// A tool call finished.
    ToolFinished {
        /// Round number.
        round: u32,
        /// Tool name.
        name: String,
        /// Call id.
        id: String,
        /// Whether it succeeded.
        ok: bool,
        /// How long it ran.
        elapsed: Duration,
    },
    /// The transcript was compacted.
    Compacted {
        /// Messages removed.
        removed: usize,
        /// Messages left.
        kept: usize,
    },
    /// A model call of the loop or of one of its tools: queued for the model server,
    /// sent, still running, finished or failed.
    ModelCall(agent_llm::capacity::CallEvent),
    /// Tokens used by the round's model call.
    Usage {
        /// Round number.
        round: u32,
        /// The call's usage.
        usage: Usage,
    },
}

/// Receives [`LoopEvent`]s. Closures `Fn(&AgentIdentity, &LoopEvent)` are observers.
pub trait LoopObserver: Send + Sync {
    /// Called for every loop event. Must not block.
    fn on_event(&self, agent: &AgentIdentity, event: &LoopEvent);
}

impl<F> LoopObserver for F
where
    F: Fn(&AgentIdentity, &LoopEvent) + Send + Sync,
{
    fn on_event(&self, agent: &AgentIdentity, event: &LoopEvent) {
        self(agent, event)
    }
}
