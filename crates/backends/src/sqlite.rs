//! The SQLite session store: sessions, their events and gates in one database file (or
//! in memory), through sqlx, by the code the PostgreSQL store runs too
//! (`session_tables`).
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
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Sqlite, Transaction};

use crate::session_tables::{SessionTables, Settle};
use crate::sql::bulk::STATEMENT_CACHE;
use crate::sql::{Sql, store_error};
use crate::sqlite_schema;

/// How long a connection waits for another writer before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections to a database file (WAL lets readers run beside the one writer).
const FILE_CONNECTIONS: u32 = 4;

/// Each connection's page cache, in KiB (SQLite's default is 2 MiB): the events of
/// thousands of live sessions are written all over the events table, whose pages should
/// not have to be read back from the file for each batch.
const PAGE_CACHE_KIB: i64 = 32 * 1024;

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
    tables: SessionTables<Sqlite>,
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
            .field("connections", &self.pool().size())
            .field("closed", &self.pool().is_closed())
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
            .busy_timeout(BUSY_TIMEOUT)
            .statement_cache_capacity(STATEMENT_CACHE)
            .pragma("cache_size", format!("-{PAGE_CACHE_KIB}"));
        let pool = SqlitePoolOptions::new()
            .max_connections(FILE_CONNECTIONS)
            // A connection to a local file does not go stale while idle: no round trip to
            // check it before each use.
            .test_before_acquire(false)
            .connect_with(options)
            .await
            .map_err(|e| StoreError::Backend(format!("opening {}: {e}", path.display())))?;
        let store = SqliteSessionStore {
            tables: SessionTables::new(pool),
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
    ///         tenant: None,
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
            .map_err(store_error::<Sqlite>)?
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT)
            .statement_cache_capacity(STATEMENT_CACHE);
        let pool = SqlitePoolOptions::new()
            .min_connections(1)
            .max_connections(1)
            .test_before_acquire(false)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await
            .map_err(|e| StoreError::Backend(format!("opening in-memory database: {e}")))?;
        let store = SqliteSessionStore {
            tables: SessionTables::new(pool),
            path: None,
        };
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
        self.pool().close().await;
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
            self.pool().close().await;
        }
        result
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let mut tx = self.write().await?;
        sqlite_schema::migrate(&mut tx, &self.location()).await?;
        tx.commit().await.map_err(store_error::<Sqlite>)
    }

    /// The connections, shared with the checkpoint store on the same database.
    pub(crate) fn pool(&self) -> &SqlitePool {
        self.tables.pool()
    }

    /// The database's writer, shared with the checkpoint store on the same database.
    pub(crate) fn commits(&self) -> &crate::group_commit::GroupCommit<Sqlite> {
        self.tables.commits()
    }

    /// A transaction holding the write lock from its start.
    pub(crate) async fn write(&self) -> Result<Transaction<'static, Sqlite>, StoreError> {
        Sqlite::begin_write(self.pool())
            .await
            .map_err(store_error::<Sqlite>)
    }

    /// A read transaction: one consistent snapshot.
    pub(crate) async fn read(&self) -> Result<Transaction<'static, Sqlite>, StoreError> {
        self.pool().begin().await.map_err(store_error::<Sqlite>)
    }
}

#[async_trait]
impl SessionStore for SqliteSessionStore {
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
