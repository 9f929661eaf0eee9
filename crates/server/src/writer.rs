//! The one ordered writer of a session: every event (the product's and the server's) goes
//! through one channel to one task, which stores it, gets its number, then broadcasts it
//! to the live streams. Numbering, storage and delivery therefore agree.

use agent_runtime::sessions::{
    EventFanout, GateAnswer, OpenGate, SessionOutcome, SessionStatus, SessionStore, StoreError,
    StoredGate,
};
use agent_runtime::{GateListener, GateRegistry, PendingGate, json_len};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, oneshot};

use crate::backend_failure::BackendFailure;

/// `gate_open`: a gate started waiting.
pub(crate) const GATE_OPEN: &str = "gate_open";
/// `gate_answered`: a gate was answered.
pub(crate) const GATE_ANSWERED: &str = "gate_answered";
/// `session_complete`: the run returned a result (terminal).
pub(crate) const SESSION_COMPLETE: &str = "session_complete";
/// `session_failed`: the run failed or panicked (terminal).
pub(crate) const SESSION_FAILED: &str = "session_failed";
/// `gate_closed`: a gate closed without an answer (it expired, or the session was
/// cancelled).
pub(crate) const GATE_CLOSED: &str = "gate_closed";
/// `session_cancelled`: the user cancelled the session (terminal).
pub(crate) const SESSION_CANCELLED: &str = "session_cancelled";
/// `session_expired`: nobody answered a gate in time; the run ended (terminal).
pub(crate) const SESSION_EXPIRED: &str = "session_expired";
/// `event_too_large`: stands for a product event above the size limit.
pub(crate) const EVENT_TOO_LARGE: &str = "event_too_large";

/// The server's own event types.
pub(crate) const RESERVED_TYPES: [&str; 8] = [
    GATE_OPEN,
    GATE_ANSWERED,
    GATE_CLOSED,
    SESSION_COMPLETE,
    SESSION_FAILED,
    SESSION_CANCELLED,
    SESSION_EXPIRED,
    EVENT_TOO_LARGE,
];

/// Whether `kind` is one of the server's own event types.
pub(crate) fn is_reserved_type(kind: &str) -> bool {
    RESERVED_TYPES.contains(&kind)
}

/// Whether `event` ends its session's stream.
pub(crate) fn is_terminal(event: &Value) -> bool {
    matches!(
        event.get("type").and_then(Value::as_str),
        Some(SESSION_COMPLETE | SESSION_FAILED | SESSION_CANCELLED | SESSION_EXPIRED)
    )
}

/// The terminal event of an outcome.
pub(crate) fn terminal_event(outcome: &SessionOutcome) -> Value {
    match outcome {
        SessionOutcome::Complete(result) => json!({"type": SESSION_COMPLETE, "result": result}),
        SessionOutcome::Failed(error) => json!({"type": SESSION_FAILED, "error": error}),
        SessionOutcome::Cancelled(reason) => json!({"type": SESSION_CANCELLED, "reason": reason}),
        SessionOutcome::Expired(reason) => json!({"type": SESSION_EXPIRED, "reason": reason}),
    }
}

/// A status the writer asked the store to keep, and what the store answered.
type StatusStored = (SessionStatus, Result<(), StoreError>);

/// What the writer is asked to do, in order.
pub(crate) enum Write {
    /// Store and broadcast a product event.
    Event(Value),
    /// A gate opened (from the gate listener). Boxed: the largest write by far, it would
    /// set the size of every slot of the session's channel.
    GateOpened(Box<PendingGate>),
    /// A gate was answered (from the gate listener, or from a respond to a gate restored
    /// after a restart and not yet reopened).
    GateAnswered { id: String, answer: Value },
    /// A gate closed without an answer (from the gate listener).
    GateClosed { id: String, reason: String },
    /// Record the product's stage (shown by the status route), after what was emitted
    /// before.
    Stage(String),
    /// Answer once everything sent before is written.
    Flush(oneshot::Sender<()>),
    /// Finish the session, write the terminal event, and stop.
    Finish {
        outcome: SessionOutcome,
        done: oneshot::Sender<()>,
    },
    /// Stop without finishing: the server shuts down and the session resumes at its next
    /// start.
    Park(oneshot::Sender<()>),
}

/// Gates that were pending when the server restarted and that the rerun has not reopened
/// yet, by id. They are listed as pending and can be answered.
#[derive(Default)]
pub(crate) struct RestoredGates(Mutex<BTreeMap<String, StoredGate>>);

impl RestoredGates {
    pub(crate) fn lock(&self) -> MutexGuard<'_, BTreeMap<String, StoredGate>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Turns gate callbacks (synchronous) into writes on the session's channel.
pub(crate) struct Listener {
    pub(crate) writer: mpsc::UnboundedSender<Write>,
    pub(crate) restored: Arc<RestoredGates>,
    /// Set when the run is parked: the gates its stopping closes stay pending.
    pub(crate) parked: Arc<AtomicBool>,
}

impl GateListener for Listener {
    fn opened(&self, gate: &PendingGate) {
        self.restored.lock().remove(&gate.id);
        if self
            .writer
            .send(Write::GateOpened(Box::new(gate.clone())))
            .is_err()
        {
            tracing::warn!(gate = %gate.id, "gate opened after the session ended");
        }
    }

    fn answered(&self, id: &str, answer: &Value) {
        let write = Write::GateAnswered {
            id: id.to_owned(),
            answer: answer.clone(),
        };
        if self.writer.send(write).is_err() {
            tracing::warn!(gate = id, "gate answered after the session ended");
        }
    }

    fn closed(&self, id: &str, reason: &str) {
        if self.parked.load(Ordering::SeqCst) {
            tracing::debug!(gate = id, "gate left pending: the run is parked");
            return;
        }
        let write = Write::GateClosed {
            id: id.to_owned(),
            reason: reason.to_owned(),
        };
        if self.writer.send(write).is_err() {
            tracing::warn!(gate = id, "gate closed after the session ended");
        }
    }
}

/// The writer task's state.
pub(crate) struct Writer {
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) session: String,
    /// The session's product (the events metric's label).
    pub(crate) product: String,
    pub(crate) fanout: Arc<dyn EventFanout>,
    pub(crate) gates: GateRegistry,
    pub(crate) restored: Arc<RestoredGates>,
    /// The status last written.
    pub(crate) status: SessionStatus,
    /// The largest event stored as it is ([`ServerConfig::max_event_bytes`](crate::ServerConfig::max_event_bytes)).
    pub(crate) max_event_bytes: usize,
    /// Set once the store refused a write: the run parks, and nothing more is written
    /// (the run that resumes the session writes it again, from its last checkpoint).
    pub(crate) failure: Arc<BackendFailure>,
}

impl Writer {
    /// Writes everything received, in order, until [`Write::Finish`].
    pub(crate) async fn run(mut self, mut writes: mpsc::UnboundedReceiver<Write>) {
        // A write taken from the queue early, written next.
        let mut taken: Option<Write> = None;
        loop {
            let write = match taken.take() {
                Some(write) => write,
                None => match writes.recv().await {
                    Some(write) => write,
                    None => return,
                },
            };
            if self.failure.reason().is_some()
                && !matches!(
                    write,
                    Write::Flush(_) | Write::Finish { .. } | Write::Park(_)
                )
            {
                tracing::debug!(session = %self.session, "write dropped: the store failed the run");
                continue;
            }
            match write {
                Write::Event(event) => self.append(event).await,
                Write::GateOpened(gate) => self.gate_opened(*gate).await,
                Write::GateAnswered { id, answer } => self.gate_answered(id, answer).await,
                Write::GateClosed { id, reason } => self.gate_closed(id, reason).await,
                Write::Stage(stage) => match writes.try_recv() {
                    // A stage most often opens with an event: both go to the store at
                    // once, to be committed together.
                    Ok(Write::Event(event)) => self.stage_and_event(&stage, event).await,
                    next => {
                        self.stage(&stage).await;
                        taken = next.ok();
                    }
                },
                Write::Flush(done) => {
                    let _ = done.send(());
                }
                Write::Finish { outcome, done } => {
                    self.finish(outcome).await;
                    self.fanout.close(&self.session);
                    let _ = done.send(());
                    return;
                }
                Write::Park(done) => {
                    tracing::info!(session = %self.session, "parked until the next start");
                    self.fanout.close(&self.session);
                    let _ = done.send(());
                    return;
                }
            }
        }
    }

    async fn append(&self, event: Value) {
        let event = self.within_limit(event);
        let stored = self.store.append_event(&self.session, &event).await;
        self.appended(event, stored);
    }

    /// Publishes an event the store numbered, or parks the run on its refusal.
    fn appended(&self, event: Value, stored: Result<u64, StoreError>) {
        match stored {
            Ok(seq) => {
                self.fanout.publish(&self.session, seq, Arc::new(event));
                crate::prometheus::events_stored(&self.product, 1);
            }
            Err(error) => self.failure.failed("an event", &error.to_string()),
        }
    }

    /// Records the product's stage, alone.
    async fn stage(&mut self, stage: &str) {
        let stored = self.store_status(self.status, Some(stage)).await;
        self.status_stored(stored);
    }

    /// Records the stage and the event that followed it, both handed to the store before
    /// either is awaited: the store's group commit takes them in one batch (everything
    /// before them is stored already, and a stage not stored only logs, so nothing is
    /// promised about the order between the two).
    async fn stage_and_event(&mut self, stage: &str, event: Value) {
        let event = self.within_limit(event);
        let (staged, stored) = tokio::join!(
            self.store_status(self.status, Some(stage)),
            self.store.append_event(&self.session, &event),
        );
        self.status_stored(staged);
        self.appended(event, stored);
    }

    /// `event`, or the `event_too_large` that stands for it above the size limit.
    fn within_limit(&self, event: Value) -> Value {
        let size = json_len(&event);
        if size <= self.max_event_bytes {
            return event;
        }
        tracing::error!(session = %self.session, size, limit = self.max_event_bytes, "event too large: stored as event_too_large");
        json!({
            "type": EVENT_TOO_LARGE,
            "original_type": event.get("type").cloned().unwrap_or(Value::Null),
            "bytes": size,
            "limit": self.max_event_bytes,
        })
    }

    /// Stores `status` and, when given, the stage, unless nothing would change; what
    /// the store answered, if it was asked.
    async fn store_status(
        &self,
        status: SessionStatus,
        stage: Option<&str>,
    ) -> Option<StatusStored> {
        if status == self.status && stage.is_none() {
            return None;
        }
        let stored = self.store.set_status(&self.session, status, stage).await;
        Some((status, stored))
    }

    /// Takes in what [`store_status`](Self::store_status) answered. A status or stage
    /// not stored is only logged: the session's events and outcome do not depend on it.
    fn status_stored(&mut self, stored: Option<StatusStored>) {
        match stored {
            Some((status, Ok(()))) => self.status = status,
            Some((_, Err(error))) => {
                tracing::error!(session = %self.session, %error, "status or stage not stored");
            }
            None => {}
        }
    }

    /// Records the gate with its `gate_open`; a gate recorded already (reopened by a run
    /// that resumed the session) was announced then. The session's new status goes to
    /// the store with the gate, taken in the same batch or an earlier one.
    async fn gate_opened(&mut self, gate: PendingGate) {
        let open = OpenGate {
            id: &gate.id,
            name: &gate.name,
            kind: &gate.kind,
            payload: &gate.payload,
        };
        let announcement = self.within_limit(json!({
            "type": GATE_OPEN,
            "gate_id": gate.id,
            "name": gate.name,
            "payload": gate.payload,
        }));
        let (status, opened) = tokio::join!(
            self.store_status(SessionStatus::Waiting, None),
            self.store.open_gate(&self.session, &open, &announcement),
        );
        self.status_stored(status);
        match opened {
            Ok(Some(seq)) => self.publish(seq, announcement),
            Ok(None) => {
                tracing::debug!(session = %self.session, gate = %gate.id, "gate reopened after a restart")
            }
            Err(error) => self.failure.failed("an open gate", &error.to_string()),
        }
    }

    /// Records the answer with its `gate_answered` (and the session's new status with
    /// it, as [`gate_opened`](Self::gate_opened) does). A gate answered in the store
    /// already (by an instance that took the answer while the session ran nowhere) was
    /// announced by whoever answered it.
    async fn gate_answered(&mut self, id: String, answer: Value) {
        let waiting = !self.gates.pending().is_empty() || !self.restored.lock().is_empty();
        let status = if waiting {
            SessionStatus::Waiting
        } else {
            SessionStatus::Running
        };
        let announcement = json!({"type": GATE_ANSWERED, "gate_id": id});
        let (status, answered) = tokio::join!(
            self.store_status(status, None),
            self.store
                .answer_gate(&self.session, &id, &answer, &announcement),
        );
        self.status_stored(status);
        match answered {
            Ok(GateAnswer::Accepted { announced }) => self.publish(announced, announcement),
            Ok(GateAnswer::AlreadyAnswered) => {}
            Ok(other) => {
                tracing::warn!(session = %self.session, gate = %id, ?other, "stored gate not answered")
            }
            Err(error) => self.failure.failed("a gate's answer", &error.to_string()),
        }
    }

    /// Closes the gate with its `gate_closed` (and the session's new status with it).
    async fn gate_closed(&mut self, id: String, reason: String) {
        let last = self.gates.pending().is_empty() && self.restored.lock().is_empty();
        let status = if last {
            SessionStatus::Running
        } else {
            self.status
        };
        let announcement = json!({"type": GATE_CLOSED, "gate_id": id, "reason": reason});
        let (status, closed) = tokio::join!(
            self.store_status(status, None),
            self.store
                .close_gate(&self.session, &id, &reason, &announcement),
        );
        self.status_stored(status);
        match closed {
            Ok(GateAnswer::Accepted { announced }) => self.publish(announced, announcement),
            Ok(other) => {
                tracing::debug!(session = %self.session, gate = %id, ?other, "gate not closed")
            }
            Err(error) => {
                tracing::error!(session = %self.session, gate = %id, %error, "closing not stored")
            }
        }
    }

    /// Sends a stored event to the streams that follow the session.
    fn publish(&self, seq: u64, event: Value) {
        self.fanout.publish(&self.session, seq, Arc::new(event));
    }

    /// Ends the session with its terminal event. An ending the store refuses (or whose
    /// commit it lost) fails the run like any refused write: the session is still
    /// unfinished, and the run taken up again ends it.
    async fn finish(&mut self, outcome: SessionOutcome) {
        let event = terminal_event(&outcome);
        match self.store.finish(&self.session, outcome, &event).await {
            Ok(Some(seq)) => self.publish(seq, event),
            Ok(None) => {
                tracing::warn!(session = %self.session, "the session had ended already: its outcome is kept")
            }
            Err(error) => self
                .failure
                .failed("the session's outcome", &error.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Write;

    #[test]
    fn a_write_is_small_as_each_slot_of_a_sessions_channel_is_one() {
        // tokio's channel allocates its slots 32 at a time, so a session holds 32 of these
        // from its first write on.
        assert!(
            size_of::<Write>() <= 64,
            "a write takes {} bytes",
            size_of::<Write>()
        );
    }
}
