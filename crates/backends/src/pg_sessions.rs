//! The PostgreSQL session store: sessions, their events, state and gates, shared by every
//! server instance of a deployment.
//!
//! Every method is one transaction. Event numbers come from a counter on the session's
//! row (`UPDATE ... SET last_event = last_event + 1 RETURNING`), so concurrent writers,
//! on any instance, take turns on that row and the numbers have no gaps: a transaction
//! that fails gives its number back. Gate changes lock the session's row first for the
//! same reason.

use agent_runtime::sessions::{
    GateAnswer, NewSession, OpenGate, SessionOutcome, SessionRecord, SessionStatus, SessionStore,
    StoreError, StoredEvent, StoredGate,
};
use std::sync::Arc;

use agent_runtime::checkpoint::CheckpointStore;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::postgres::{PgPool, PgRow};

use crate::pg_gates;
use crate::pg_schema::{self, backend, cell, now, require, stored_number};

/// The columns [`session_from_row`] reads.
const SESSION_COLUMNS: &str =
    "id, product, token_hash, status, stage, request, result, error, created_at, updated_at";

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
///         request: serde_json::json!({}),
///     })
///     .await?;
/// assert_eq!(store.append_event("s1", &serde_json::json!({"type": "started"})).await?, 1);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PgSessionStore {
    pool: PgPool,
    /// Where the tables are, for messages.
    schema: Option<String>,
}

impl std::fmt::Debug for PgSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgSessionStore")
            .field("schema", &self.schema)
            .field("connections", &self.pool.size())
            .field("closed", &self.pool.is_closed())
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
        Ok(PgSessionStore { pool, schema: None })
    }

    /// As [`connect`](Self::connect), with the tables in `schema` (created if missing;
    /// ASCII letters, digits and `_`): several deployments, or test runs, on one database.
    pub async fn connect_in_schema(url: &str, schema: &str) -> Result<Self, StoreError> {
        let pool = pg_schema::connect(url, Some(schema)).await?;
        tracing::debug!(schema, "connected PostgreSQL session store");
        Ok(PgSessionStore {
            pool,
            schema: Some(schema.to_owned()),
        })
    }

    /// Closes the connections, waiting for running operations to finish. Clones of this
    /// store (and the stores sharing its connections) stop working.
    pub async fn close(self) {
        self.pool.close().await;
    }

    /// The connections, shared with the other stores on the same database.
    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Answers or closes a pending gate, in a transaction of its own.
    async fn settle_gate(
        &self,
        id: &str,
        gate_id: &str,
        settle: pg_gates::Settle<'_>,
    ) -> Result<GateAnswer, StoreError> {
        let mut tx = self.pool.begin().await.map_err(backend)?;
        let outcome = pg_gates::settle(&mut tx, id, gate_id, settle).await?;
        tx.commit().await.map_err(backend)?;
        Ok(outcome)
    }

    /// Where the tables are, for messages.
    pub(crate) fn location(&self) -> String {
        match &self.schema {
            Some(schema) => format!("PostgreSQL schema {schema}"),
            None => "PostgreSQL".to_owned(),
        }
    }
}

fn session_from_row(row: &PgRow) -> Result<SessionRecord, StoreError> {
    let id: String = cell(row, "id", "a session")?;
    let what = format!("session {id:?}");
    let status_text: String = cell(row, "status", &what)?;
    let status = SessionStatus::parse(&status_text)
        .ok_or_else(|| StoreError::Corrupt(format!("{what}: unknown status {status_text:?}")))?;
    Ok(SessionRecord {
        product: cell(row, "product", &what)?,
        token_hash: cell(row, "token_hash", &what)?,
        status,
        stage: cell(row, "stage", &what)?,
        request: cell(row, "request", &what)?,
        result: cell(row, "result", &what)?,
        error: cell(row, "error", &what)?,
        created_at: cell::<DateTime<Utc>>(row, "created_at", &what)?,
        updated_at: cell::<DateTime<Utc>>(row, "updated_at", &what)?,
        id,
    })
}

#[async_trait]
impl SessionStore for PgSessionStore {
    async fn create(&self, session: NewSession) -> Result<SessionRecord, StoreError> {
        let now = now();
        let done = sqlx::query(
            "INSERT INTO sessions (id, product, token_hash, status, request, created_at, \
             updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (id) DO NOTHING",
        )
        .bind(&session.id)
        .bind(&session.product)
        .bind(&session.token_hash)
        .bind(SessionStatus::Running.as_str())
        .bind(&session.request)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::Conflict(session.id));
        }
        Ok(session.into_record(now))
    }

    async fn get(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(backend)?;
        row.as_ref().map(session_from_row).transpose()
    }

    async fn set_status(
        &self,
        id: &str,
        status: SessionStatus,
        stage: Option<&str>,
    ) -> Result<(), StoreError> {
        let done = sqlx::query(
            "UPDATE sessions SET status = $1, stage = COALESCE($2, stage), updated_at = $3 \
             WHERE id = $4",
        )
        .bind(status.as_str())
        .bind(stage)
        .bind(now())
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(id.to_owned()));
        }
        Ok(())
    }

    async fn finish(&self, id: &str, outcome: SessionOutcome) -> Result<(), StoreError> {
        let status = outcome.status().as_str();
        let query = match &outcome {
            SessionOutcome::Complete(result) => sqlx::query(
                "UPDATE sessions SET status = $1, result = $2, updated_at = $3 WHERE id = $4",
            )
            .bind(status)
            .bind(result),
            SessionOutcome::Failed(error)
            | SessionOutcome::Cancelled(error)
            | SessionOutcome::Expired(error) => sqlx::query(
                "UPDATE sessions SET status = $1, error = $2, updated_at = $3 WHERE id = $4",
            )
            .bind(status)
            .bind(error.as_str()),
        };
        let done = query
            .bind(now())
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(id.to_owned()));
        }
        Ok(())
    }

    async fn append_event(&self, id: &str, event: &Value) -> Result<u64, StoreError> {
        let mut tx = self.pool.begin().await.map_err(backend)?;
        let seq: Option<i64> = sqlx::query_scalar(
            "UPDATE sessions SET last_event = last_event + 1 WHERE id = $1 RETURNING last_event",
        )
        .bind(id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(backend)?;
        let seq = seq.ok_or_else(|| StoreError::NotFound(id.to_owned()))?;
        sqlx::query("INSERT INTO events (session_id, seq, event, at) VALUES ($1, $2, $3, $4)")
            .bind(id)
            .bind(seq)
            .bind(event)
            .bind(now())
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        stored_number(seq, || format!("session {id:?}, an event"))
    }

    async fn events_after(&self, id: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let mut tx = self.pool.begin().await.map_err(backend)?;
        require(&mut tx, id, false).await?;
        let rows = sqlx::query(
            "SELECT seq, event, at FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq",
        )
        .bind(id)
        .bind(after)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        rows.iter()
            .map(|row| {
                let what = format!("session {id:?}, an event");
                let seq = stored_number(cell(row, "seq", &what)?, || what.clone())?;
                let what = format!("session {id:?}, event {seq}");
                Ok(StoredEvent {
                    seq,
                    event: cell(row, "event", &what)?,
                    at: cell(row, "at", &what)?,
                })
            })
            .collect()
    }

    async fn event_count(&self, id: &str) -> Result<u64, StoreError> {
        let last: Option<i64> = sqlx::query_scalar("SELECT last_event FROM sessions WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)?;
        let last = last.ok_or_else(|| StoreError::NotFound(id.to_owned()))?;
        stored_number(last, || format!("session {id:?}, its event count"))
    }

    async fn open_gate(&self, id: &str, gate: &OpenGate<'_>) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await.map_err(backend)?;
        pg_gates::open(&mut tx, id, gate).await?;
        tx.commit().await.map_err(backend)
    }

    async fn answer_gate(
        &self,
        id: &str,
        gate_id: &str,
        answer: &Value,
    ) -> Result<GateAnswer, StoreError> {
        self.settle_gate(id, gate_id, pg_gates::Settle::Answer(answer))
            .await
    }

    async fn close_gate(
        &self,
        id: &str,
        gate_id: &str,
        reason: &str,
    ) -> Result<GateAnswer, StoreError> {
        self.settle_gate(id, gate_id, pg_gates::Settle::Close(reason))
            .await
    }

    async fn gates(&self, id: &str) -> Result<Vec<StoredGate>, StoreError> {
        let mut tx = self.pool.begin().await.map_err(backend)?;
        let gates = pg_gates::list(&mut tx, id).await?;
        tx.commit().await.map_err(backend)?;
        Ok(gates)
    }

    async fn note_resume(&self, id: &str, events: u64) -> Result<u32, StoreError> {
        let events = i64::try_from(events).unwrap_or(i64::MAX);
        // One statement: the row's lock orders concurrent resumes.
        let attempts: Option<i32> = sqlx::query_scalar(
            "UPDATE sessions SET \
               resume_attempts = CASE WHEN resume_attempts > 0 AND resume_events = $2 \
                                      THEN resume_attempts + 1 ELSE 1 END, \
               resume_events = $2 \
             WHERE id = $1 RETURNING resume_attempts",
        )
        .bind(id)
        .bind(events)
        .fetch_optional(&self.pool)
        .await
        .map_err(backend)?;
        let attempts = attempts.ok_or_else(|| StoreError::NotFound(id.to_owned()))?;
        Ok(u32::try_from(attempts).unwrap_or(u32::MAX))
    }

    async fn unfinished(&self, product: &str) -> Result<Vec<SessionRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE product = $1 AND status IN ($2, $3) \
             ORDER BY created_at, id"
        ))
        .bind(product)
        .bind(SessionStatus::Running.as_str())
        .bind(SessionStatus::Waiting.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        rows.iter().map(session_from_row).collect()
    }

    fn checkpoint_store(&self) -> Option<Arc<dyn CheckpointStore>> {
        Some(Arc::new(self.checkpoints()))
    }
}
