//! The PostgreSQL checkpoint store: graph runs' checkpoints and journals in the
//! deployment's database, in the tables the SQLite store keeps and stored exactly as it
//! stores them, by the same code (`checkpoint_tables`).
//!
//! Saving takes a transaction-scoped advisory lock on the run, so an instance taking a
//! run over and the one it took it from cannot interleave their checkpoints; a save that
//! comes too late is refused as out of order, as on every store.

use std::collections::BTreeMap;
use std::time::Duration;

use agent_runtime::checkpoint::{Checkpoint, CheckpointError, CheckpointStore, SnapshotPolicy};
use async_trait::async_trait;
use serde_json::Value;
use sqlx::Postgres;

use crate::PgSessionStore;
use crate::checkpoint_tables::CheckpointTables;

/// Keeps graph runs' checkpoints and journals in PostgreSQL, in the database of a
/// [`PgSessionStore`] (get one with [`PgSessionStore::checkpoints`]). Behaves as the
/// SQLite, file and in-memory checkpoint stores do (one behaviour suite runs on all).
///
/// A checkpoint or journal entry that cannot be read back is a
/// [`CheckpointError::Corrupt`] naming the run and the seq (or key); database failures
/// are [`CheckpointError::Backend`].
#[derive(Clone)]
pub struct PgCheckpointStore {
    db: PgSessionStore,
    tables: CheckpointTables<Postgres>,
}

impl std::fmt::Debug for PgCheckpointStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgCheckpointStore")
            .field("location", &self.tables.location())
            .field("snapshot_policy", &self.tables.snapshot_policy())
            .finish()
    }
}

impl PgSessionStore {
    /// A checkpoint store in this store's database, sharing its connections.
    pub fn checkpoints(&self) -> PgCheckpointStore {
        PgCheckpointStore {
            db: self.clone(),
            tables: CheckpointTables::new(
                self.pool().clone(),
                self.commits().clone(),
                self.location(),
            ),
        }
    }
}

impl PgCheckpointStore {
    /// Sets when a full snapshot is written instead of a delta (default
    /// [`SnapshotPolicy::SizeBased`]).
    pub fn with_snapshot_policy(mut self, policy: SnapshotPolicy) -> Self {
        self.tables = self.tables.with_snapshot_policy(policy);
        self
    }

    /// A session store on the same database.
    pub fn sessions(&self) -> PgSessionStore {
        self.db.clone()
    }
}

#[async_trait]
impl CheckpointStore for PgCheckpointStore {
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
