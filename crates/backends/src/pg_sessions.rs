//! The PostgreSQL session store: sessions, their events and gates, shared by every server
//! instance of a deployment, by the code the SQLite store runs too (`session_tables`).
//!
//! Every method is one transaction. An event's number is one more than the highest its
//! session has stored, read after the session's row is locked (`SELECT ... FOR UPDATE`,
//! ADR 0023), so concurrent writers, on any instance, take turns on that row and the
//! numbers have no gaps: a transaction that fails gives its number back. Gate changes
//! lock the session's row first for the same reason.

use agent_runtime::sessions::{
    GateAnswer, NewSession, OpenGate, SessionOutcome, SessionRecord, SessionStatus, SessionStore,
    StoreError, StoredEvent, StoredGate,
};
use std::sync::Arc;

use agent_runtime::checkpoint::CheckpointStore;
use async_trait::async_trait;
use serde_json::Value;
use sqlx::Postgres;
use sqlx::postgres::PgPool;

use crate::pg_schema;
use crate::session_tables::{SessionTables, Settle};

/// Keeps sessions, events, state and gates in PostgreSQL, for a deployment of several
/// server instances on one database. Behaves exactly as
/// [`InMemorySessionStore`](agent_runtime::sessions::InMemorySessionStore) and
/// [`SqliteSessionStore`](crate::SqliteSessionStore) do (one behaviour suite runs on all
/// three).
///
/// The same database keeps the deployment's checkpoints
/// ([`checkpoints`](Self::checkpoints)), documents ([`documents`](Self::documents)) and
/// session leases ([`leases`](Self::leases)), sharing these connections.
///
/// ```no_run
/// use agent_backends::PgSessionStore;
/// use agent_runtime::sessions::{NewSession, SessionStore};
/// # async fn run() -> Result<(), agent_runtime::sessions::StoreError> {
/// let store = PgSessionStore::connect("postgres://postgres@127.0.0.1:5432/test").await?;
/// store
///     .create(NewSession {
///         id: "s1".into(),
///         product: "resume".into(),
///         token_hash: "h".into(),
///         tenant: None,
///         request: serde_json::json!({}),
///     })
///     .await?;
/// assert_eq!(store.append_event("s1", &serde_json::json!({"type": "started"})).await?, 1);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PgSessionStore {
    tables: SessionTables<Postgres>,
    /// Where the tables are, for messages.
    schema: Option<String>,
}

impl std::fmt::Debug for PgSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgSessionStore")
            .field("schema", &self.schema)
            .field("connections", &self.pool().size())
            .field("closed", &self.pool().is_closed())
            .finish()
    }
}

impl PgSessionStore {
    /// Connects to the database at `url` (`postgres://user@host:port/database`) and
    /// brings the schema up to date, in the connection's default schema.
    ///
    /// Errors: [`StoreError::Backend`] when the server cannot be reached or refuses;
    /// [`StoreError::Corrupt`] when a newer version of this crate wrote the schema.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let pool = pg_schema::connect(url, None).await?;
        tracing::debug!("connected PostgreSQL session store");
        Ok(PgSessionStore {
            tables: SessionTables::new(pool),
            schema: None,
        })
    }

    /// As [`connect`](Self::connect), with the tables in `schema` (created if missing;
    /// ASCII letters, digits and `_`): several deployments, or test runs, on one database.
    pub async fn connect_in_schema(url: &str, schema: &str) -> Result<Self, StoreError> {
        let pool = pg_schema::connect(url, Some(schema)).await?;
        tracing::debug!(schema, "connected PostgreSQL session store");
        Ok(PgSessionStore {
            tables: SessionTables::new(pool),
            schema: Some(schema.to_owned()),
        })
    }

    /// Closes the connections, waiting for running operations to finish. Clones of this
    /// store (and the stores sharing its connections) stop working.
    pub async fn close(self) {
        self.pool().close().await;
    }

    /// The connections, shared with the other stores on the same database.
    pub(crate) fn pool(&self) -> &PgPool {
        self.tables.pool()
    }

    /// The database's writer, shared with the checkpoint store on the same database.
    pub(crate) fn commits(&self) -> &crate::group_commit::GroupCommit<Postgres> {
        self.tables.commits()
    }

    /// Where the tables are, for messages.
    pub(crate) fn location(&self) -> String {
        match &self.schema {
            Some(schema) => format!("PostgreSQL schema {schema}"),
            None => "PostgreSQL".to_owned(),
        }
    }
}

#[async_trait]
impl SessionStore for PgSessionStore {
    async fn create(&self, session: NewSession) -> Result<SessionRecord, StoreError> {
        self.tables.create(session).await
    }

    async fn get(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        self.tables.get(id).await
    }

    async fn set_status(
        &self,
        id: &str,
        status: SessionStatus,
        stage: Option<&str>,
    ) -> Result<(), StoreError> {
        self.tables.set_status(id, status, stage).await
    }

    async fn finish(
        &self,
        id: &str,
        outcome: SessionOutcome,
        terminal: &Value,
    ) -> Result<Option<u64>, StoreError> {
        self.tables.finish(id, outcome, terminal).await
    }

    async fn append_event(&self, id: &str, event: &Value) -> Result<u64, StoreError> {
        self.tables.append_event(id, event).await
    }

    async fn events_after(&self, id: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError> {
        self.tables.events_after(id, after).await
    }

    async fn event_count(&self, id: &str) -> Result<u64, StoreError> {
        self.tables.event_count(id).await
    }

    async fn open_gate(
        &self,
        id: &str,
        gate: &OpenGate<'_>,
        announcement: &Value,
    ) -> Result<Option<u64>, StoreError> {
        self.tables.open_gate(id, gate, announcement).await
    }

    async fn answer_gate(
        &self,
        id: &str,
        gate_id: &str,
        answer: &Value,
        announcement: &Value,
    ) -> Result<GateAnswer, StoreError> {
        let settle = Settle::Answer(answer.clone());
        self.tables
            .settle_gate(id, gate_id, settle, announcement)
            .await
    }

    async fn close_gate(
        &self,
        id: &str,
        gate_id: &str,
        reason: &str,
        announcement: &Value,
    ) -> Result<GateAnswer, StoreError> {
        let settle = Settle::Close(reason.to_owned());
        self.tables
            .settle_gate(id, gate_id, settle, announcement)
            .await
    }

    async fn gates(&self, id: &str) -> Result<Vec<StoredGate>, StoreError> {
        self.tables.gates(id).await
    }

    async fn note_resume(&self, id: &str, events: u64) -> Result<u32, StoreError> {
        self.tables.note_resume(id, events).await
    }

    async fn unfinished(&self, product: &str) -> Result<Vec<SessionRecord>, StoreError> {
        self.tables.unfinished(product).await
    }

    fn checkpoint_store(&self) -> Option<Arc<dyn CheckpointStore>> {
        Some(Arc::new(self.checkpoints()))
    }
}
