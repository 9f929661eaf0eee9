//! The PostgreSQL checkpoint store: graph runs' checkpoints and journals in the
//! deployment's database, stored exactly as the SQLite and file stores store them (full
//! snapshots and deltas made by agent-runtime's
//! [`CheckpointEncoder`](agent_runtime::checkpoint::CheckpointEncoder)).
//!
//! Saving takes a transaction-scoped advisory lock on the run, so an instance taking a
//! run over and the one it took it from cannot interleave their checkpoints; a save that
//! comes too late is refused as out of order, as on every store.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agent_runtime::checkpoint::{
    Checkpoint, CheckpointDecoder, CheckpointEncoder, CheckpointError, CheckpointStore,
    EncodedCheckpoint, RecentRuns, SnapshotPolicy,
};
use async_trait::async_trait;
use chrono::Utc;
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use crate::PgSessionStore;

/// The records of a run from the nearest full snapshot at or before seq `$2` up to it.
const CHAIN: &str = "SELECT seq, record FROM checkpoints \
     WHERE run_id = $1 AND seq <= $2 AND seq >= COALESCE(\
       (SELECT MAX(seq) FROM checkpoints WHERE run_id = $1 AND seq <= $2 AND full_record), 0) \
     ORDER BY seq";

/// Runs whose newest checkpoint was taken before `$1`, and runs with a journal but no
/// checkpoint whose journal was last written before it.
const STALE_RUNS: &str = "SELECT c.run_id FROM checkpoints AS c \
     JOIN (SELECT run_id, MAX(seq) AS seq FROM checkpoints GROUP BY run_id) AS newest \
       ON c.run_id = newest.run_id AND c.seq = newest.seq \
     WHERE c.at < $1 \
     UNION \
     SELECT j.run_id FROM checkpoint_journal AS j \
     WHERE NOT EXISTS (SELECT 1 FROM checkpoints AS c WHERE c.run_id = j.run_id) \
     GROUP BY j.run_id HAVING MAX(j.at) < $1";

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
    snapshot_policy: SnapshotPolicy,
    heads: Arc<Mutex<RecentRuns<CheckpointEncoder>>>,
}

impl std::fmt::Debug for PgCheckpointStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgCheckpointStore")
            .field("location", &self.db.location())
            .field("snapshot_policy", &self.snapshot_policy)
            .finish()
    }
}

impl PgSessionStore {
    /// A checkpoint store in this store's database, sharing its connections.
    pub fn checkpoints(&self) -> PgCheckpointStore {
        PgCheckpointStore {
            db: self.clone(),
            snapshot_policy: SnapshotPolicy::default(),
            heads: Arc::default(),
        }
    }
}

fn backend(error: sqlx::Error) -> CheckpointError {
    CheckpointError::Backend(format!("PostgreSQL checkpoint store: {error}"))
}

/// A seq as PostgreSQL's `BIGINT`.
fn sql_seq(run_id: &str, seq: u64) -> Result<i64, CheckpointError> {
    i64::try_from(seq).map_err(|_| {
        CheckpointError::Backend(format!(
            "checkpoint seq {seq} of run {run_id:?} is beyond PostgreSQL's BIGINT"
        ))
    })
}

impl PgCheckpointStore {
    /// Sets when a full snapshot is written instead of a delta (default
    /// [`SnapshotPolicy::SizeBased`]).
    pub fn with_snapshot_policy(mut self, policy: SnapshotPolicy) -> Self {
        self.snapshot_policy = policy;
        self.heads = Arc::default();
        self
    }

    /// A session store on the same database.
    pub fn sessions(&self) -> PgSessionStore {
        self.db.clone()
    }

    fn heads(&self) -> MutexGuard<'_, RecentRuns<CheckpointEncoder>> {
        self.heads.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn corrupt(&self, what: String, reason: impl Into<String>) -> CheckpointError {
        crate::checkpoint_rows::corrupt(what, &self.db.location(), reason)
    }

    /// Holds the run's advisory lock until the transaction ends.
    async fn lock_run(conn: &mut PgConnection, run_id: &str) -> Result<(), CheckpointError> {
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(format!("checkpoint {run_id}"))
            .execute(conn)
            .await
            .map_err(backend)?;
        Ok(())
    }

    /// Rebuilds the run's checkpoint at seq `upto` or, without it, its latest; says
    /// whether that checkpoint is stored in full. `None` when there is none.
    async fn load(
        &self,
        conn: &mut PgConnection,
        run_id: &str,
        upto: Option<i64>,
    ) -> Result<Option<(Checkpoint, bool)>, CheckpointError> {
        let rows = sqlx::query(CHAIN)
            .bind(run_id)
            .bind(upto.unwrap_or(i64::MAX))
            .fetch_all(conn)
            .await
            .map_err(backend)?;
        let mut decoder = CheckpointDecoder::new().with_location(self.db.location());
        let mut full = false;
        for row in &rows {
            let record = self.record(run_id, row)?;
            full = record.is_full();
            decoder.push(record)?;
        }
        Ok(decoder.into_latest().map(|checkpoint| (checkpoint, full)))
    }

    /// Reads a `seq, record` row back, checking it holds what its columns say.
    fn record(&self, run_id: &str, row: &PgRow) -> Result<EncodedCheckpoint, CheckpointError> {
        crate::checkpoint_rows::stored_record(row, run_id, &self.db.location())
    }

    /// Deletes a run's checkpoints and journal inside `conn`'s transaction; returns how
    /// many checkpoints went.
    async fn delete_run(conn: &mut PgConnection, run_id: &str) -> Result<u64, CheckpointError> {
        let removed = sqlx::query("DELETE FROM checkpoints WHERE run_id = $1")
            .bind(run_id)
            .execute(&mut *conn)
            .await
            .map_err(backend)?;
        sqlx::query("DELETE FROM checkpoint_journal WHERE run_id = $1")
            .bind(run_id)
            .execute(conn)
            .await
            .map_err(backend)?;
        Ok(removed.rows_affected())
    }
}

#[async_trait]
impl CheckpointStore for PgCheckpointStore {
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        checkpoint.check_version()?;
        let run_id = checkpoint.run_id.as_str();
        let seq = sql_seq(run_id, checkpoint.seq)?;
        let mut tx = self.db.pool().begin().await.map_err(backend)?;
        Self::lock_run(&mut tx, run_id).await?;
        let latest: Option<i64> =
            sqlx::query_scalar("SELECT MAX(seq) FROM checkpoints WHERE run_id = $1")
                .bind(run_id)
                .fetch_one(&mut *tx)
                .await
                .map_err(backend)?;
        if let Some(latest) = latest
            && latest >= seq
        {
            return Err(CheckpointError::OutOfOrder {
                run_id: run_id.to_owned(),
                seq: checkpoint.seq,
                latest: u64::try_from(latest).unwrap_or_default(),
            });
        }
        // The cached encoder holds the run's latest checkpoint unless another instance
        // wrote to the run since: then the checkpoint is stored in full.
        let mut encoder = self
            .heads()
            .take(run_id)
            .filter(|e| e.last_seq().and_then(|s| i64::try_from(s).ok()) == latest)
            .unwrap_or_else(|| CheckpointEncoder::new(self.snapshot_policy));
        let record = encoder.encode(checkpoint);
        sqlx::query(
            "INSERT INTO checkpoints (run_id, seq, node, full_record, record, at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(run_id)
        .bind(seq)
        .bind(&checkpoint.node)
        .bind(record.is_full())
        .bind(record.to_json()?)
        .bind(checkpoint.at)
        .execute(&mut *tx)
        .await
        .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        // A finished run takes no more checkpoints: its encoder is dropped.
        if checkpoint.next.is_some() {
            self.heads().insert(run_id, encoder);
        }
        Ok(())
    }

    async fn latest(&self, run_id: &str) -> Result<Option<Checkpoint>, CheckpointError> {
        let mut conn = self.db.pool().acquire().await.map_err(backend)?;
        let loaded = self.load(&mut conn, run_id, None).await?;
        Ok(loaded.map(|(checkpoint, _)| checkpoint))
    }

    async fn list(&self, run_id: &str) -> Result<Vec<Checkpoint>, CheckpointError> {
        let rows =
            sqlx::query("SELECT seq, record FROM checkpoints WHERE run_id = $1 ORDER BY seq")
                .bind(run_id)
                .fetch_all(self.db.pool())
                .await
                .map_err(backend)?;
        let mut decoder = CheckpointDecoder::new().with_location(self.db.location());
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            decoder.push(self.record(run_id, row)?)?;
            out.extend(decoder.current());
        }
        Ok(out)
    }

    async fn record_journal(
        &self,
        run_id: &str,
        key: &str,
        value: Value,
    ) -> Result<(), CheckpointError> {
        sqlx::query(
            "INSERT INTO checkpoint_journal (run_id, key, value, at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value, at = excluded.at",
        )
        .bind(run_id)
        .bind(key)
        .bind(value)
        .bind(Utc::now())
        .execute(self.db.pool())
        .await
        .map_err(backend)?;
        Ok(())
    }

    async fn journal(&self, run_id: &str) -> Result<BTreeMap<String, Value>, CheckpointError> {
        let rows = sqlx::query("SELECT key, value FROM checkpoint_journal WHERE run_id = $1")
            .bind(run_id)
            .fetch_all(self.db.pool())
            .await
            .map_err(backend)?;
        let mut entries = BTreeMap::new();
        for row in &rows {
            let key: String = row.try_get("key").map_err(|e| {
                self.corrupt(format!("run {run_id:?}, a journal entry"), e.to_string())
            })?;
            let value: Value = row.try_get("value").map_err(|e| {
                self.corrupt(
                    format!("run {run_id:?} journal entry {key:?}"),
                    e.to_string(),
                )
            })?;
            entries.insert(key, value);
        }
        Ok(entries)
    }

    async fn prune(&self, run_id: &str, keep_latest: usize) -> Result<usize, CheckpointError> {
        let mut tx = self.db.pool().begin().await.map_err(backend)?;
        Self::lock_run(&mut tx, run_id).await?;
        if keep_latest == 0 {
            self.heads().take(run_id);
            let removed = Self::delete_run(&mut tx, run_id).await?;
            tx.commit().await.map_err(backend)?;
            return Ok(usize::try_from(removed).unwrap_or(usize::MAX));
        }
        let seqs: Vec<i64> =
            sqlx::query_scalar("SELECT seq FROM checkpoints WHERE run_id = $1 ORDER BY seq")
                .bind(run_id)
                .fetch_all(&mut *tx)
                .await
                .map_err(backend)?;
        let cut = seqs.len().saturating_sub(keep_latest);
        let Some(&first_kept) = seqs.get(cut).filter(|_| cut > 0) else {
            return Ok(0);
        };
        // The oldest record kept must load on its own: stored in full.
        match self.load(&mut tx, run_id, Some(first_kept)).await? {
            Some((_, true)) => {}
            Some((checkpoint, false)) => {
                sqlx::query(
                    "UPDATE checkpoints SET full_record = TRUE, record = $3 \
                     WHERE run_id = $1 AND seq = $2",
                )
                .bind(run_id)
                .bind(first_kept)
                .bind(EncodedCheckpoint::full(&checkpoint).to_json()?)
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
            }
            None => {
                let what = format!("run {run_id:?} seq {first_kept}");
                return Err(self.corrupt(what, "no full snapshot before this delta"));
            }
        }
        let removed = sqlx::query("DELETE FROM checkpoints WHERE run_id = $1 AND seq < $2")
            .bind(run_id)
            .bind(first_kept)
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        Ok(usize::try_from(removed.rows_affected()).unwrap_or(usize::MAX))
    }

    async fn prune_older_than(&self, age: Duration) -> Result<usize, CheckpointError> {
        let Some(cutoff) = chrono::Duration::from_std(age)
            .ok()
            .and_then(|age| Utc::now().checked_sub_signed(age))
        else {
            return Ok(0);
        };
        let mut tx = self.db.pool().begin().await.map_err(backend)?;
        let stale: Vec<String> = sqlx::query_scalar(STALE_RUNS)
            .bind(cutoff)
            .fetch_all(&mut *tx)
            .await
            .map_err(backend)?;
        for run_id in &stale {
            Self::delete_run(&mut tx, run_id).await?;
        }
        tx.commit().await.map_err(backend)?;
        let mut heads = self.heads();
        for run_id in &stale {
            heads.take(run_id);
        }
        if !stale.is_empty() {
            tracing::debug!(runs = stale.len(), "pruned stale checkpointed runs");
        }
        Ok(stale.len())
    }

    async fn exists(&self, run_id: &str) -> Result<bool, CheckpointError> {
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM checkpoints WHERE run_id = $1)")
            .bind(run_id)
            .fetch_one(self.db.pool())
            .await
            .map_err(backend)
    }
}
