//! The SQLite checkpoint store: graph runs' checkpoints and journals in the same database
//! as the sessions (one database per deployment).
//!
//! The tables and what is stored in them are the PostgreSQL store's too, written once
//! (`checkpoint_tables`). Writes that must survive a crash (saving a checkpoint,
//! recording a journal entry) sync the database file before they return
//! (`synchronous = FULL` for that commit).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use agent_runtime::checkpoint::{Checkpoint, CheckpointError, CheckpointStore, SnapshotPolicy};
use agent_runtime::sessions::StoreError;
use async_trait::async_trait;
use serde_json::Value;
use sqlx::Sqlite;

use crate::SqliteSessionStore;
use crate::checkpoint_tables::CheckpointTables;

/// Keeps graph runs' checkpoints and journals in SQLite, in the database of a
/// [`SqliteSessionStore`] (get one with [`SqliteSessionStore::checkpoints`]) or of its
/// own ([`open`](Self::open), [`in_memory`](Self::in_memory)). Behaves as agent-runtime's
/// [`FileCheckpointStore`](agent_runtime::checkpoint::FileCheckpointStore) and
/// [`InMemoryCheckpointStore`](agent_runtime::checkpoint::InMemoryCheckpointStore) do,
/// and stores checkpoints the same way: as deltas on the previous one when a state's
/// top-level arrays only grew, with full snapshots spaced by a
/// [`SnapshotPolicy`], so a long append-only history does not grow storage
/// quadratically.
///
/// Any string is a valid run id. Several stores (and processes) may share a database;
/// as with every checkpoint store, one writer per run at a time. A checkpoint or journal
/// entry that cannot be read back is a [`CheckpointError::Corrupt`] naming the run and
/// the seq (or key); database failures are [`CheckpointError::Backend`].
///
/// ```
/// use agent_backends::SqliteSessionStore;
/// use agent_runtime::checkpoint::{Checkpoint, CheckpointStore, JsonText};
/// use serde_json::{Value, json};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let sessions = SqliteSessionStore::in_memory().await?;
/// let checkpoints = sessions.checkpoints();
/// let state = JsonText::of(&json!({"log": ["a"]}))?;
/// checkpoints.save(&Checkpoint::new("run-1", 1, "parse", state).with_next("score")).await?;
/// let state = JsonText::of(&json!({"log": ["a", "b"]}))?;
/// checkpoints.save(&Checkpoint::new("run-1", 2, "score", state)).await?;
/// checkpoints.record_journal("run-1", "email", json!("msg-1")).await?;
///
/// let latest = checkpoints.latest("run-1").await?.unwrap();
/// assert_eq!(latest.state.parse::<Value>()?, json!({"log": ["a", "b"]}));
/// assert_eq!(checkpoints.journal("run-1").await?["email"], json!("msg-1"));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct SqliteCheckpointStore {
    db: SqliteSessionStore,
    tables: CheckpointTables<Sqlite>,
}

impl std::fmt::Debug for SqliteCheckpointStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteCheckpointStore")
            .field("location", &self.tables.location())
            .field("snapshot_policy", &self.tables.snapshot_policy())
            .finish()
    }
}

impl SqliteSessionStore {
    /// A checkpoint store in this store's database, sharing its connections: one
    /// database for a deployment's sessions and graph runs.
    pub fn checkpoints(&self) -> SqliteCheckpointStore {
        SqliteCheckpointStore {
            db: self.clone(),
            tables: CheckpointTables::new(
                self.pool().clone(),
                self.commits().clone(),
                self.location(),
            ),
        }
    }
}

impl SqliteCheckpointStore {
    /// Opens (creating it, and its parent directory, if missing) the database file at
    /// `path`, bringing its schema up to date, as [`SqliteSessionStore::open`] does; the
    /// file may hold sessions too.
    ///
    /// Errors: [`CheckpointError::Backend`] if the file cannot be created or opened or is
    /// not a SQLite database; [`CheckpointError::Corrupt`] if a newer version of this
    /// crate wrote it.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, CheckpointError> {
        let path = path.as_ref();
        let db = SqliteSessionStore::open(path)
            .await
            .map_err(|e| opening(&path.display().to_string(), e))?;
        Ok(db.checkpoints())
    }

    /// A store on a fresh in-memory database, private to it and its clones (use
    /// [`SqliteSessionStore::checkpoints`] to share one with a session store).
    pub async fn in_memory() -> Result<Self, CheckpointError> {
        let db = SqliteSessionStore::in_memory()
            .await
            .map_err(|e| opening(":memory:", e))?;
        Ok(db.checkpoints())
    }

    /// Sets when a full snapshot is written instead of a delta (default
    /// [`SnapshotPolicy::SizeBased`], whose storage stays linear in a growing history).
    pub fn with_snapshot_policy(mut self, policy: SnapshotPolicy) -> Self {
        self.tables = self.tables.with_snapshot_policy(policy);
        self
    }

    /// When a full snapshot is written instead of a delta.
    pub fn snapshot_policy(&self) -> SnapshotPolicy {
        self.tables.snapshot_policy()
    }

    /// A session store on the same database.
    pub fn sessions(&self) -> SqliteSessionStore {
        self.db.clone()
    }

    /// The database file, or `None` in memory.
    pub fn path(&self) -> Option<&Path> {
        self.db.path()
    }
}

fn opening(location: &str, error: StoreError) -> CheckpointError {
    match error {
        StoreError::Corrupt(reason) => CheckpointError::Corrupt {
            ident: location.to_owned(),
            reason,
        },
        StoreError::Backend(message) => CheckpointError::Backend(message),
        other => CheckpointError::Backend(other.to_string()),
    }
}

#[async_trait]
impl CheckpointStore for SqliteCheckpointStore {
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        self.tables.save(checkpoint).await
    }

    async fn latest(&self, run_id: &str) -> Result<Option<Checkpoint>, CheckpointError> {
        self.tables.latest(run_id).await
    }

    async fn list(&self, run_id: &str) -> Result<Vec<Checkpoint>, CheckpointError> {
        self.tables.list(run_id).await
    }

    async fn record_journal(
        &self,
        run_id: &str,
        key: &str,
        value: Value,
    ) -> Result<(), CheckpointError> {
        self.tables.record_journal(run_id, key, &value).await
    }

    async fn journal(&self, run_id: &str) -> Result<BTreeMap<String, Value>, CheckpointError> {
        self.tables.journal(run_id).await
    }

    async fn prune(&self, run_id: &str, keep_latest: usize) -> Result<usize, CheckpointError> {
        self.tables.prune(run_id, keep_latest).await
    }

    async fn prune_older_than(&self, age: Duration) -> Result<usize, CheckpointError> {
        self.tables.prune_older_than(age).await
    }

    async fn exists(&self, run_id: &str) -> Result<bool, CheckpointError> {
        self.tables.exists(run_id).await
    }
}
