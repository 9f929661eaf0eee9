//! The SQLite session store: sessions, their events, state and gates in one database file
//! (or in memory), through sqlx.
//!
//! Every method is one transaction. Writes that read first (numbering an event, opening or
//! answering a gate) take the write lock up front (`BEGIN IMMEDIATE`), so concurrent
//! callers, in this process or another, serialise instead of racing.
//!
//! The schema, its migrations and how values are stored (timestamps as fixed-width RFC
//! 3339 text, JSON as text) are in `sqlite_schema.rs`; the database also holds the
//! checkpoint store's tables (`sqlite_checkpoints.rs`).

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use agent_runtime::sessions::{
    GateAnswer, NewSession, OpenGate, SessionOutcome, SessionRecord, SessionStatus, SessionStore,
    StoreError, StoredEvent, StoredGate,
};
use std::sync::Arc;

use agent_runtime::checkpoint::CheckpointStore;
use async_trait::async_trait;
use serde_json::Value;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use sqlx::{Row, Sqlite, Transaction};

use crate::sqlite_gates;
use crate::sqlite_rows::{Cells, backend, json_text, now, require};
use crate::sqlite_schema::{self, timestamp};

/// How long a connection waits for another writer before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections to a database file (WAL lets readers run beside the one writer).
const FILE_CONNECTIONS: u32 = 4;

/// The columns [`session_from_row`] reads, as a literal for `concat!`.
macro_rules! session_columns {
    () => {
        "id, product, token_hash, status, stage, request, result, error, created_at, updated_at"
    };
}

/// Keeps sessions, events, state and gates in SQLite: a database file that survives
/// restarts ([`open`](Self::open)), or a private in-memory database
/// ([`in_memory`](Self::in_memory)). Behaves exactly as
/// [`InMemorySessionStore`](agent_runtime::sessions::InMemorySessionStore) does.
///
/// A file is opened in WAL mode with foreign keys on and a busy timeout, so several
/// stores (or processes) may share it. A file written by a newer schema version is
/// refused with [`StoreError::Corrupt`]; an older one is migrated.
///
/// The same database keeps graph runs' checkpoints:
/// [`checkpoints`](Self::checkpoints) gives a
/// [`SqliteCheckpointStore`](crate::SqliteCheckpointStore) sharing these connections.
#[derive(Clone)]
pub struct SqliteSessionStore {
    pool: SqlitePool,
    /// The database file; `None` in memory.
    path: Option<PathBuf>,
}

impl std::fmt::Debug for SqliteSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let location = match &self.path {
            Some(path) => path.display().to_string(),
            None => ":memory:".to_owned(),
        };
        f.debug_struct("SqliteSessionStore")
            .field("location", &location)
            .field("connections", &self.pool.size())
            .field("closed", &self.pool.is_closed())
            .finish()
    }
}

impl SqliteSessionStore {
    /// Opens (creating it, and its parent directory, if missing) the database file at
    /// `path` and brings its schema up to date.
    ///
    /// Errors: [`StoreError::Backend`] if the file cannot be created or opened or is not a
    /// SQLite database; [`StoreError::Corrupt`] if a newer version of this crate wrote it.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        if let Some(parent) = path.parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent).map_err(|e| {
                StoreError::Backend(format!("creating directory {}: {e}", parent.display()))
            })?;
        }
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .max_connections(FILE_CONNECTIONS)
            .connect_with(options)
            .await
            .map_err(|e| StoreError::Backend(format!("opening {}: {e}", path.display())))?;
        let store = SqliteSessionStore {
            pool,
            path: Some(path),
        };
        store.prepare().await?;
        tracing::debug!(path = %store.location(), "opened SQLite session store");
        Ok(store)
    }

    /// A store on a fresh in-memory database, private to this store (and its clones) and
    /// gone when the last of them is dropped: for tests and servers that need no
    /// persistence but want SQLite's behaviour.
    ///
    /// ```
    /// use agent_backends::SqliteSessionStore;
    /// use agent_runtime::sessions::{NewSession, SessionStore, StoreError};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), StoreError> {
    /// let store = SqliteSessionStore::in_memory().await?;
    /// store
    ///     .create(NewSession {
    ///         id: "s1".into(),
    ///         product: "resume".into(),
    ///         token_hash: "h".into(),
    ///         request: serde_json::json!({"cv": "..."}),
    ///     })
    ///     .await?;
    /// assert_eq!(store.append_event("s1", &serde_json::json!({"type": "started"})).await?, 1);
    /// assert_eq!(store.append_event("s1", &serde_json::json!({"type": "stage"})).await?, 2);
    /// assert_eq!(store.events_after("s1", 1).await?[0].seq, 2);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn in_memory() -> Result<Self, StoreError> {
        // Each connection to `:memory:` is its own database, so the pool keeps exactly one
        // connection, never retired.
        let options = SqliteConnectOptions::from_str("sqlite::memory:")
            .map_err(backend)?
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .min_connections(1)
            .max_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await
            .map_err(|e| StoreError::Backend(format!("opening in-memory database: {e}")))?;
        let store = SqliteSessionStore { pool, path: None };
        store.prepare().await?;
        tracing::debug!("opened in-memory SQLite session store");
        Ok(store)
    }

    /// The database file, or `None` in memory.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Closes the connections, waiting for running operations to finish (dropping the
    /// store also closes them, in the background). Clones of this store stop working.
    pub async fn close(self) {
        self.pool.close().await;
    }

    /// The database file's path, or `:memory:`, for messages.
    pub(crate) fn location(&self) -> String {
        match &self.path {
            Some(path) => path.display().to_string(),
            None => ":memory:".to_owned(),
        }
    }

    /// Checks the schema version and creates what is missing, in one write transaction.
    async fn prepare(&self) -> Result<(), StoreError> {
        let result = self.migrate().await;
        if result.is_err() {
            self.pool.close().await;
        }
        result
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let mut tx = self.write().await?;
        sqlite_schema::migrate(&mut tx, &self.location()).await?;
        tx.commit().await.map_err(backend)
    }

    /// The connections, shared with the checkpoint store on the same database.
    pub(crate) fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// A transaction holding the write lock from its start.
    pub(crate) async fn write(&self) -> Result<Transaction<'static, Sqlite>, StoreError> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(backend)
    }

    /// A read transaction: one consistent snapshot.
    pub(crate) async fn read(&self) -> Result<Transaction<'static, Sqlite>, StoreError> {
        self.pool.begin().await.map_err(backend)
    }
}

fn session_from_row(row: &SqliteRow) -> Result<SessionRecord, StoreError> {
    let id: String = row
        .try_get("id")
        .map_err(|e| StoreError::Corrupt(format!("session id: {e}")))?;
    let cells = Cells::new(row, format!("session {id:?}"));
    let status_text = cells.text("status")?;
    let status = SessionStatus::parse(&status_text)
        .ok_or_else(|| cells.corrupt("status", format!("unknown status {status_text:?}")))?;
    Ok(SessionRecord {
        product: cells.text("product")?,
        token_hash: cells.text("token_hash")?,
        status,
        stage: cells.opt_text("stage")?,
        request: cells.json("request")?,
        result: cells.opt_json("result")?,
        error: cells.opt_text("error")?,
        created_at: cells.time("created_at")?,
        updated_at: cells.time("updated_at")?,
        id,
    })
}

#[async_trait]
impl SessionStore for SqliteSessionStore {
    async fn create(&self, session: NewSession) -> Result<SessionRecord, StoreError> {
        let now = now();
        let at = timestamp(now);
        let done = sqlx::query(
            "INSERT INTO sessions (id, product, token_hash, status, stage, request, result, \
             error, created_at, updated_at) \
             VALUES (?1, ?2, ?3, ?4, NULL, ?5, NULL, NULL, ?6, ?6) \
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(&session.id)
        .bind(&session.product)
        .bind(&session.token_hash)
        .bind(SessionStatus::Running.as_str())
        .bind(json_text(&session.request)?)
        .bind(&at)
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::Conflict(session.id));
        }
        Ok(session.into_record(now))
    }

    async fn get(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let row = sqlx::query(concat!(
            "SELECT ",
            session_columns!(),
            " FROM sessions WHERE id = ?1"
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
            "UPDATE sessions SET status = ?1, stage = COALESCE(?2, stage), updated_at = ?3 \
             WHERE id = ?4",
        )
        .bind(status.as_str())
        .bind(stage)
        .bind(timestamp(now()))
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
        let at = timestamp(now());
        let status = outcome.status().as_str();
        let query = match &outcome {
            SessionOutcome::Complete(result) => sqlx::query(
                "UPDATE sessions SET status = ?1, result = ?2, updated_at = ?3 WHERE id = ?4",
            )
            .bind(status)
            .bind(json_text(result)?),
            SessionOutcome::Failed(error)
            | SessionOutcome::Cancelled(error)
            | SessionOutcome::Expired(error) => sqlx::query(
                "UPDATE sessions SET status = ?1, error = ?2, updated_at = ?3 WHERE id = ?4",
            )
            .bind(status)
            .bind(error.as_str()),
        };
        let done = query
            .bind(at)
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
        let event = json_text(event)?;
        let mut tx = self.write().await?;
        require(&mut tx, id).await?;
        let seq: i64 = sqlx::query_scalar(
            "INSERT INTO events (session_id, seq, event, at) \
             SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3 FROM events WHERE session_id = ?1 \
             RETURNING seq",
        )
        .bind(id)
        .bind(event)
        .bind(timestamp(now()))
        .fetch_one(&mut *tx)
        .await
        .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        u64::try_from(seq)
            .map_err(|_| StoreError::Corrupt(format!("session {id:?}: event number {seq}")))
    }

    async fn events_after(&self, id: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let mut tx = self.read().await?;
        require(&mut tx, id).await?;
        let rows = sqlx::query(
            "SELECT seq, event, at FROM events WHERE session_id = ?1 AND seq > ?2 ORDER BY seq",
        )
        .bind(id)
        .bind(after)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        rows.iter()
            .map(|row| {
                let seq = Cells::new(row, format!("session {id:?}, an event")).seq("seq")?;
                let cells = Cells::new(row, format!("session {id:?}, event {seq}"));
                Ok(StoredEvent {
                    seq,
                    event: cells.json("event")?,
                    at: cells.time("at")?,
                })
            })
            .collect()
    }

    async fn event_count(&self, id: &str) -> Result<u64, StoreError> {
        let mut tx = self.read().await?;
        require(&mut tx, id).await?;
        let last: i64 =
            sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?1")
                .bind(id)
                .fetch_one(&mut *tx)
                .await
                .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        u64::try_from(last)
            .map_err(|_| StoreError::Corrupt(format!("session {id:?}: negative event number")))
    }

    async fn open_gate(&self, id: &str, gate: &OpenGate<'_>) -> Result<(), StoreError> {
        let mut tx = self.write().await?;
        sqlite_gates::open(&mut tx, id, gate).await?;
        tx.commit().await.map_err(backend)
    }

    async fn answer_gate(
        &self,
        id: &str,
        gate_id: &str,
        answer: &Value,
    ) -> Result<GateAnswer, StoreError> {
        let mut tx = self.write().await?;
        let outcome = sqlite_gates::answer(&mut tx, id, gate_id, answer).await?;
        tx.commit().await.map_err(backend)?;
        Ok(outcome)
    }

    async fn close_gate(
        &self,
        id: &str,
        gate_id: &str,
        reason: &str,
    ) -> Result<GateAnswer, StoreError> {
        let mut tx = self.write().await?;
        let outcome = sqlite_gates::close(&mut tx, id, gate_id, reason).await?;
        tx.commit().await.map_err(backend)?;
        Ok(outcome)
    }

    async fn gates(&self, id: &str) -> Result<Vec<StoredGate>, StoreError> {
        let mut tx = self.read().await?;
        let gates = sqlite_gates::list(&mut tx, id).await?;
        tx.commit().await.map_err(backend)?;
        Ok(gates)
    }

    async fn note_resume(&self, id: &str, events: u64) -> Result<u32, StoreError> {
        let mut tx = self.write().await?;
        let row: Option<(i64, i64)> =
            sqlx::query_as("SELECT resume_attempts, resume_events FROM sessions WHERE id = ?1")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(backend)?;
        let Some((attempts, at)) = row else {
            return Err(StoreError::NotFound(id.to_owned()));
        };
        let events = i64::try_from(events).unwrap_or(i64::MAX);
        let attempts = if attempts > 0 && at == events {
            attempts + 1
        } else {
            1
        };
        sqlx::query("UPDATE sessions SET resume_attempts = ?2, resume_events = ?3 WHERE id = ?1")
            .bind(id)
            .bind(attempts)
            .bind(events)
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        Ok(u32::try_from(attempts).unwrap_or(u32::MAX))
    }

    async fn unfinished(&self, product: &str) -> Result<Vec<SessionRecord>, StoreError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            session_columns!(),
            " FROM sessions WHERE product = ?1 AND status IN (?2, ?3) ORDER BY created_at, id"
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
