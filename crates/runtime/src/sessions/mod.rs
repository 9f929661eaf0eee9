//! The session store: what a server needs to keep about a session so that a reconnect
//! loses no event and a restart resumes it. [`InMemorySessionStore`] is here; the SQLite
//! (and later Postgres) stores live in `agent-backends`, as the checkpoint stores do.

mod coordination;
mod event_channel;
mod memory;
mod run_queue;

pub use coordination::{
    ControlRequest, EventFanout, Fanned, InProcessControl, InProcessFanout, InProcessLeases,
    SessionControl, SessionLeases,
};
pub use memory::InMemorySessionStore;
pub use run_queue::{InProcessRunQueue, QueuedRun, RunQueue, RunTicket};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// Its run is working.
    Running,
    /// Its run waits at a gate for the user.
    Waiting,
    /// Its run finished with a result.
    Complete,
    /// Its run failed; the error is kept.
    Failed,
    /// Its user cancelled it; the reason is kept as its error.
    Cancelled,
    /// Nobody answered one of its gates in time (its user abandoned it); the reason is
    /// kept as its error.
    Expired,
}

impl SessionStatus {
    /// `running`, `waiting`, `complete`, `failed`, `cancelled` or `expired`.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Running => "running",
            SessionStatus::Waiting => "waiting",
            SessionStatus::Complete => "complete",
            SessionStatus::Failed => "failed",
            SessionStatus::Cancelled => "cancelled",
            SessionStatus::Expired => "expired",
        }
    }

    /// Reads [`as_str`](Self::as_str)'s names.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "running" => Some(SessionStatus::Running),
            "waiting" => Some(SessionStatus::Waiting),
            "complete" => Some(SessionStatus::Complete),
            "failed" => Some(SessionStatus::Failed),
            "cancelled" => Some(SessionStatus::Cancelled),
            "expired" => Some(SessionStatus::Expired),
            _ => None,
        }
    }

    /// Whether the run ended (complete, failed, cancelled or expired).
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            SessionStatus::Complete
                | SessionStatus::Failed
                | SessionStatus::Cancelled
                | SessionStatus::Expired
        )
    }
}

/// How a session's run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionOutcome {
    /// It returned this result.
    Complete(Value),
    /// It failed with this error.
    Failed(String),
    /// Its user cancelled it (the reason).
    Cancelled(String),
    /// A gate of it timed out unanswered (the run's error).
    Expired(String),
}

impl SessionOutcome {
    /// The status a session with this outcome has.
    pub fn status(&self) -> SessionStatus {
        match self {
            SessionOutcome::Complete(_) => SessionStatus::Complete,
            SessionOutcome::Failed(_) => SessionStatus::Failed,
            SessionOutcome::Cancelled(_) => SessionStatus::Cancelled,
            SessionOutcome::Expired(_) => SessionStatus::Expired,
        }
    }
}

/// A session to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSession {
    /// Its id (unique).
    pub id: String,
    /// The product it belongs to (`resume`).
    pub product: String,
    /// A hash of the token that reads and answers it (never the token itself).
    pub token_hash: String,
    /// The tenant it belongs to, when it has one: only that tenant's callers reach it.
    pub tenant: Option<String>,
    /// The start request, as the product accepted it.
    pub request: Value,
}

impl NewSession {
    /// The record of this session as created at `now`: running, with no stage, result or
    /// error yet. Every store answers `create` with it.
    pub fn into_record(self, now: DateTime<Utc>) -> SessionRecord {
        SessionRecord {
            id: self.id,
            product: self.product,
            token_hash: self.token_hash,
            tenant: self.tenant,
            status: SessionStatus::Running,
            stage: None,
            request: self.request,
            result: None,
            error: None,
            created_at: now,
            updated_at: now,
        }
    }
}

/// A stored session.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    /// Its id.
    pub id: String,
    /// Its product.
    pub product: String,
    /// The token hash.
    pub token_hash: String,
    /// The tenant it belongs to, when it has one.
    pub tenant: Option<String>,
    /// Where it is.
    pub status: SessionStatus,
    /// The product's stage name, when it reported one.
    pub stage: Option<String>,
    /// The start request.
    pub request: Value,
    /// The result, once complete.
    pub result: Option<Value>,
    /// The error, once failed (or why it was cancelled).
    pub error: Option<String>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

/// One event of a session, numbered from 1 in the order it was appended.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// Its number in the session (the SSE event id).
    pub seq: u64,
    /// The event.
    pub event: Value,
    /// When it was appended.
    pub at: DateTime<Utc>,
}

/// A gate of a session, pending or answered.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredGate {
    /// Its stable id (`agent:gate:n`).
    pub id: String,
    /// Its name.
    pub name: String,
    /// The gate it is an instance of (a declared [`Gate`](crate::Gate)'s name; the name
    /// itself for a gate waited at by name), which says what answer it takes.
    pub kind: String,
    /// What the user is shown.
    pub payload: Value,
    /// When it opened.
    pub opened_at: DateTime<Utc>,
    /// The answer, once given.
    pub answer: Option<Value>,
    /// When it was answered.
    pub answered_at: Option<DateTime<Utc>>,
    /// Why it closed without an answer (`expired`, `cancelled`), once it did.
    pub closed: Option<String>,
}

impl StoredGate {
    /// Whether it still waits for an answer.
    pub fn is_pending(&self) -> bool {
        self.answer.is_none() && self.closed.is_none()
    }
}

/// A gate to record as pending ([`SessionStore::open_gate`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpenGate<'a> {
    /// Its stable id (`agent:gate:n`).
    pub id: &'a str,
    /// Its name.
    pub name: &'a str,
    /// The gate it is an instance of (see [`StoredGate::kind`]).
    pub kind: &'a str,
    /// What the user is shown.
    pub payload: &'a Value,
}

/// What answering or closing a gate came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateAnswer {
    /// The answer (or the closing) was recorded, and its announcement stored as the
    /// session's event number `announced`.
    Accepted {
        /// The number of the announcement's event.
        announced: u64,
    },
    /// The session has no such gate.
    Unknown,
    /// The gate was answered already.
    AlreadyAnswered,
    /// The gate closed without an answer (it expired, or its session was cancelled).
    Closed,
}

/// A store operation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    /// No session with this id.
    #[error("no session {0:?}")]
    NotFound(String),
    /// A session with this id exists already.
    #[error("session {0:?} exists already")]
    Conflict(String),
    /// The backend failed (connection, I/O, constraint).
    #[error("store backend: {0}")]
    Backend(String),
    /// Stored data could not be read back.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
}

/// Keeps sessions, their events, state and gates. Every method is one atomic change.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Creates a session (status `running`); [`StoreError::Conflict`] if the id exists.
    async fn create(&self, session: NewSession) -> Result<SessionRecord, StoreError>;

    /// The session, if it exists.
    async fn get(&self, id: &str) -> Result<Option<SessionRecord>, StoreError>;

    /// Sets the status and, when given, the stage.
    async fn set_status(
        &self,
        id: &str,
        status: SessionStatus,
        stage: Option<&str>,
    ) -> Result<(), StoreError>;

    /// Ends the session with its outcome (status `complete`, `failed`, `cancelled` or
    /// `expired`) and, in the same atomic change, appends `terminal` (the event that
    /// says so) as its last event, returning its number. A session that has ended
    /// already stays as it ended: nothing changes, nothing is appended, and `None` is
    /// returned.
    async fn finish(
        &self,
        id: &str,
        outcome: SessionOutcome,
        terminal: &Value,
    ) -> Result<Option<u64>, StoreError>;

    /// Appends an event and returns its number (1, 2, ...).
    async fn append_event(&self, id: &str, event: &Value) -> Result<u64, StoreError>;

    /// The events numbered above `after`, in order (`after = 0`: all).
    async fn events_after(&self, id: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError>;

    /// How many events the session has (the number of the last one).
    async fn event_count(&self, id: &str) -> Result<u64, StoreError> {
        Ok(self.events_after(id, 0).await?.len() as u64)
    }

    /// Records a gate as pending and, in the same atomic change, appends `announcement`
    /// as the session's next event, returning its number. Opening a gate that is
    /// already recorded (same id) changes nothing and returns `None`.
    ///
    /// A gate and its announcement are stored together or not at all, whatever fails
    /// between them: a run that resumes the session announces exactly the gates the
    /// store does not hold.
    async fn open_gate(
        &self,
        id: &str,
        gate: &OpenGate<'_>,
        announcement: &Value,
    ) -> Result<Option<u64>, StoreError>;

    /// Records the answer of a pending gate and, in the same atomic change, appends
    /// `announcement` as the session's next event ([`GateAnswer::Accepted`] carries its
    /// number). A gate that is unknown, answered or closed is left alone, and nothing
    /// is appended: an answer is announced once, by whoever recorded it.
    async fn answer_gate(
        &self,
        id: &str,
        gate_id: &str,
        answer: &Value,
        announcement: &Value,
    ) -> Result<GateAnswer, StoreError>;

    /// Closes a pending gate without an answer, for `reason` (`expired`, `cancelled`),
    /// appending `announcement` in the same atomic change, as
    /// [`answer_gate`](Self::answer_gate) does.
    async fn close_gate(
        &self,
        id: &str,
        gate_id: &str,
        reason: &str,
        announcement: &Value,
    ) -> Result<GateAnswer, StoreError>;

    /// Notes that a restarted server resumes the session, which has `events` events now,
    /// and returns how many resumes in a row found it with no new event (1 for a session
    /// that progressed since the last resume): a server gives up on a session that does
    /// not get anywhere.
    async fn note_resume(&self, id: &str, events: u64) -> Result<u32, StoreError>;

    /// Every gate of the session, pending and answered, in the order they opened.
    async fn gates(&self, id: &str) -> Result<Vec<StoredGate>, StoreError>;

    /// The sessions of `product` whose run has not finished (running or waiting), oldest
    /// first: what a restarted server resumes.
    async fn unfinished(&self, product: &str) -> Result<Vec<SessionRecord>, StoreError>;

    /// The checkpoint store in the same database, when this store has one: one store per
    /// deployment (ADR 0008), so a server on it keeps its runs' checkpoints beside its
    /// sessions unless given others. `None` (the default) for a store without one.
    fn checkpoint_store(&self) -> Option<std::sync::Arc<dyn crate::checkpoint::CheckpointStore>> {
        None
    }
}
