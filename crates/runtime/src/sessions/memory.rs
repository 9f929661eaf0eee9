//! A session store in memory: for tests and for servers that need no persistence.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::checkpoint::InMemoryCheckpointStore;

use async_trait::async_trait;
use chrono::Utc;
use serde_json::Value;

use super::{
    GateAnswer, NewSession, OpenGate, SessionOutcome, SessionRecord, SessionStatus, SessionStore,
    StoreError, StoredEvent, StoredGate,
};

struct Entry {
    record: SessionRecord,
    events: Vec<StoredEvent>,
    gates: Vec<StoredGate>,
    /// Resumes in a row without progress, and the event count at the last one.
    resumes: (u32, u64),
}

/// Keeps sessions in a map; everything is lost when it is dropped.
///
/// ```
/// use agent_runtime::sessions::{InMemorySessionStore, NewSession, SessionStore};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = InMemorySessionStore::new();
/// store.create(NewSession {
///     id: "s1".into(),
///     product: "resume".into(),
///     token_hash: "h".into(),
///     tenant: None,
///     request: serde_json::json!({}),
/// }).await?;
/// assert_eq!(store.append_event("s1", &serde_json::json!({"type": "started"})).await?, 1);
/// assert_eq!(store.events_after("s1", 0).await?.len(), 1);
/// # Ok::<(), agent_runtime::sessions::StoreError>(())
/// # }).unwrap();
/// ```
#[derive(Default)]
pub struct InMemorySessionStore {
    sessions: Mutex<HashMap<String, Entry>>,
    checkpoints: Arc<InMemoryCheckpointStore>,
}

impl std::fmt::Debug for InMemorySessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemorySessionStore")
            .field("sessions", &self.lock().len())
            .finish()
    }
}

impl InMemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        InMemorySessionStore::default()
    }

    /// The runs' checkpoints that go with these sessions, as
    /// `SqliteSessionStore::checkpoints` gives the ones in its database: two servers
    /// given this store and these checkpoints (`AgentServer::with_checkpoints`) share
    /// both, as two processes on one database file do.
    pub fn checkpoints(&self) -> Arc<InMemoryCheckpointStore> {
        Arc::clone(&self.checkpoints)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn with<T>(&self, id: &str, f: impl FnOnce(&mut Entry) -> T) -> Result<T, StoreError> {
        let mut sessions = self.lock();
        let entry = sessions
            .get_mut(id)
            .ok_or_else(|| StoreError::NotFound(id.to_owned()))?;
        Ok(f(entry))
    }

    /// Settles the session's gate `gate_id` with `settle` and appends `announcement` if
    /// the gate is pending; an unknown, answered or closed gate is left alone and said
    /// so.
    fn settle(
        &self,
        id: &str,
        gate_id: &str,
        announcement: &Value,
        settle: impl FnOnce(&mut StoredGate),
    ) -> Result<GateAnswer, StoreError> {
        self.with(id, |e| match e.gates.iter_mut().find(|g| g.id == gate_id) {
            None => GateAnswer::Unknown,
            Some(gate) if gate.answer.is_some() => GateAnswer::AlreadyAnswered,
            Some(gate) if gate.closed.is_some() => GateAnswer::Closed,
            Some(gate) => {
                settle(gate);
                GateAnswer::Accepted {
                    announced: e.push_event(announcement),
                }
            }
        })
    }
}

impl Entry {
    /// Appends `event`, returning its number.
    fn push_event(&mut self, event: &Value) -> u64 {
        let seq = self.events.len() as u64 + 1;
        self.events.push(StoredEvent {
            seq,
            event: event.clone(),
            at: Utc::now(),
        });
        seq
    }
}

#[async_trait]
impl SessionStore for InMemorySessionStore {
    async fn create(&self, session: NewSession) -> Result<SessionRecord, StoreError> {
        let mut sessions = self.lock();
        if sessions.contains_key(&session.id) {
            return Err(StoreError::Conflict(session.id));
        }
        let now = Utc::now();
        let id = session.id.clone();
        let record = session.into_record(now);
        sessions.insert(
            id,
            Entry {
                record: record.clone(),
                events: Vec::new(),
                gates: Vec::new(),
                resumes: (0, 0),
            },
        );
        Ok(record)
    }

    async fn get(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        Ok(self.lock().get(id).map(|e| e.record.clone()))
    }

    async fn set_status(
        &self,
        id: &str,
        status: SessionStatus,
        stage: Option<&str>,
    ) -> Result<(), StoreError> {
        self.with(id, |e| {
            e.record.status = status;
            if let Some(stage) = stage {
                e.record.stage = Some(stage.to_owned());
            }
            e.record.updated_at = Utc::now();
        })
    }

    async fn finish(
        &self,
        id: &str,
        outcome: SessionOutcome,
        terminal: &Value,
    ) -> Result<Option<u64>, StoreError> {
        self.with(id, |e| {
            if e.record.status.is_finished() {
                return None;
            }
            e.record.status = outcome.status();
            match outcome {
                SessionOutcome::Complete(result) => e.record.result = Some(result),
                SessionOutcome::Failed(error)
                | SessionOutcome::Cancelled(error)
                | SessionOutcome::Expired(error) => {
                    e.record.error = Some(error);
                }
            }
            e.record.updated_at = Utc::now();
            Some(e.push_event(terminal))
        })
    }

    async fn append_event(&self, id: &str, event: &Value) -> Result<u64, StoreError> {
        self.with(id, |e| e.push_event(event))
    }

    async fn events_after(&self, id: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError> {
        self.with(id, |e| {
            e.events
                .iter()
                .filter(|event| event.seq > after)
                .cloned()
                .collect()
        })
    }

    async fn event_count(&self, id: &str) -> Result<u64, StoreError> {
        self.with(id, |e| e.events.len() as u64)
    }

    async fn open_gate(
        &self,
        id: &str,
        gate: &OpenGate<'_>,
        announcement: &Value,
    ) -> Result<Option<u64>, StoreError> {
        self.with(id, |e| {
            if e.gates.iter().any(|g| g.id == gate.id) {
                return None;
            }
            e.gates.push(StoredGate {
                id: gate.id.to_owned(),
                name: gate.name.to_owned(),
                kind: gate.kind.to_owned(),
                payload: gate.payload.clone(),
                opened_at: Utc::now(),
                answer: None,
                answered_at: None,
                closed: None,
            });
            Some(e.push_event(announcement))
        })
    }

    async fn answer_gate(
        &self,
        id: &str,
        gate_id: &str,
        answer: &Value,
        announcement: &Value,
    ) -> Result<GateAnswer, StoreError> {
        self.settle(id, gate_id, announcement, |gate| {
            gate.answer = Some(answer.clone());
            gate.answered_at = Some(Utc::now());
        })
    }

    async fn close_gate(
        &self,
        id: &str,
        gate_id: &str,
        reason: &str,
        announcement: &Value,
    ) -> Result<GateAnswer, StoreError> {
        self.settle(id, gate_id, announcement, |gate| {
            gate.closed = Some(reason.to_owned())
        })
    }

    async fn note_resume(&self, id: &str, events: u64) -> Result<u32, StoreError> {
        self.with(id, |e| {
            let (attempts, at) = e.resumes;
            e.resumes = if attempts > 0 && at == events {
                (attempts + 1, events)
            } else {
                (1, events)
            };
            e.resumes.0
        })
    }

    async fn gates(&self, id: &str) -> Result<Vec<StoredGate>, StoreError> {
        self.with(id, |e| e.gates.clone())
    }

    async fn unfinished(&self, product: &str) -> Result<Vec<SessionRecord>, StoreError> {
        let mut found: Vec<SessionRecord> = self
            .lock()
            .values()
            .filter(|e| e.record.product == product && !e.record.status.is_finished())
            .map(|e| e.record.clone())
            .collect();
        found.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(found)
    }
}
