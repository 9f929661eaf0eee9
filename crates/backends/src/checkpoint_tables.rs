//! The checkpoint store's tables, written once for SQLite and PostgreSQL: graph runs'
//! checkpoints and journals, stored as agent-runtime's
//! [`CheckpointEncoder`](agent_runtime::checkpoint::CheckpointEncoder) makes them (full
//! snapshots, and deltas on the run's previous checkpoint) so a long append-only history
//! does not grow storage quadratically.
//!
//! A checkpoint is one row of `checkpoints`: its run, seq, node and time as columns, its
//! stored form as JSON text, and `full_record` marking the snapshots, so loading a
//! checkpoint reads from the nearest one. Journal entries are rows of
//! `checkpoint_journal`, one per run and key.
//!
//! Saving a checkpoint is one write of the database's group commit (`group_commit.rs`),
//! stored with the checkpoints queued beside it (`checkpoint_rows.rs`), holding the run's
//! key until its batch commits (see [`Dialect::lock_key`]), so an
//! instance taking a run over and the one it took it from cannot interleave their
//! checkpoints; a save that comes too late is refused as out of order. Writes that must
//! survive a crash (a checkpoint, a journal entry) are answered once their batch is
//! synced to disk (see [`Dialect::sync_commits`]): one sync for the whole batch.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agent_runtime::checkpoint::{
    Checkpoint, CheckpointDecoder, CheckpointEncoder, CheckpointError, EncodedCheckpoint,
    RecentRuns, SnapshotPolicy,
};
use chrono::Utc;
use serde_json::Value;
use sqlx::Pool;

use crate::checkpoint_rows::{CheckpointRow, Stored, insert_checkpoints};
use crate::group_commit::GroupCommit;
use crate::sql::{Bind, Dialect, Sql, checkpoint_error};

/// The records of a run from the nearest full snapshot at or before seq `$2` up to it.
const CHAIN: &str = "SELECT seq, record FROM checkpoints \
     WHERE run_id = $1 AND seq <= $2 AND seq >= COALESCE(\
       (SELECT MAX(seq) FROM checkpoints WHERE run_id = $1 AND seq <= $2 \
        AND full_record = TRUE), 0) \
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

/// A checkpoint store's tables in database `D`, read through `pool` and written through
/// the database's group commit.
pub(crate) struct CheckpointTables<D: Sql> {
    pool: Pool<D>,
    commits: GroupCommit<D>,
    /// The database, for messages: a file's path, `:memory:`, a PostgreSQL schema.
    location: String,
    snapshot_policy: SnapshotPolicy,
    /// The encoders of the runs saved to lately, each holding its run's last checkpoint.
    heads: Arc<Mutex<RecentRuns<CheckpointEncoder>>>,
}

impl<D: Sql> Clone for CheckpointTables<D> {
    fn clone(&self) -> Self {
        CheckpointTables {
            pool: self.pool.clone(),
            commits: self.commits.clone(),
            location: self.location.clone(),
            snapshot_policy: self.snapshot_policy,
            heads: Arc::clone(&self.heads),
        }
    }
}

/// A seq as the databases' 64-bit integers.
fn sql_seq<D: Dialect>(run_id: &str, seq: u64) -> Result<i64, CheckpointError> {
    i64::try_from(seq).map_err(|_| {
        CheckpointError::Backend(format!(
            "checkpoint seq {seq} of run {run_id:?} is beyond {}'s integers",
            D::NAME
        ))
    })
}

impl<D: Sql> CheckpointTables<D> {
    /// The tables in the database of `pool`, written by its writer `commits`, named
    /// `location` in messages.
    pub(crate) fn new(pool: Pool<D>, commits: GroupCommit<D>, location: String) -> Self {
        CheckpointTables {
            pool,
            commits,
            location,
            snapshot_policy: SnapshotPolicy::default(),
            heads: Arc::default(),
        }
    }

    /// Sets when a full snapshot is written instead of a delta.
    pub(crate) fn with_snapshot_policy(mut self, policy: SnapshotPolicy) -> Self {
        self.snapshot_policy = policy;
        self.heads = Arc::default();
        self
    }

    /// When a full snapshot is written instead of a delta.
    pub(crate) fn snapshot_policy(&self) -> SnapshotPolicy {
        self.snapshot_policy
    }

    /// The database, for messages.
    pub(crate) fn location(&self) -> &str {
        &self.location
    }

    fn heads(&self) -> MutexGuard<'_, RecentRuns<CheckpointEncoder>> {
        self.heads.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A corrupt-checkpoint error naming `what` and the database.
    fn corrupt(&self, what: String, reason: impl Into<String>) -> CheckpointError {
        CheckpointError::Corrupt {
            ident: format!("{what} ({})", self.location),
            reason: reason.into(),
        }
    }

    /// Saves `checkpoint` after the run's latest, synced to disk before it returns.
    ///
    /// It is encoded before it queues, as a delta on the run's previous checkpoint when
    /// this store's encoder holds it; should the run's latest stored checkpoint turn out
    /// to be another (another store or instance wrote to the run since), nothing is
    /// written and it is encoded again, in full.
    pub(crate) async fn save(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        checkpoint.check_version()?;
        let run_id = checkpoint.run_id.as_str();
        let seq = sql_seq::<D>(run_id, checkpoint.seq)?;
        let mut encoder = self
            .heads()
            .take(run_id)
            .unwrap_or_else(|| CheckpointEncoder::new(self.snapshot_policy));
        loop {
            let record = encoder.encode(checkpoint)?;
            let row = CheckpointRow {
                run_id: run_id.to_owned(),
                seq,
                node: checkpoint.node.clone(),
                full: record.is_full(),
                base: record
                    .base_seq()
                    .map(|base| sql_seq::<D>(run_id, base))
                    .transpose()?,
                text: record.into_json(),
                at: checkpoint.at,
            };
            // Checkpoints queued together are checked and stored together.
            let stored = self
                .commits
                .write_together_synced("save checkpoint", row, |conn, rows| {
                    Box::pin(insert_checkpoints::<D>(conn, rows))
                })
                .await?;
            match stored {
                Stored::Written => break,
                // Only a delta is turned away so; encoded again, it is full.
                Stored::BaseMoved => encoder.reset(),
            }
        }
        // A finished run takes no more checkpoints: its encoder is dropped.
        if checkpoint.next.is_some() {
            self.heads().insert(run_id, encoder);
        }
        Ok(())
    }

    /// Rebuilds the run's checkpoint at seq `upto` or, without it, its latest; says
    /// whether that checkpoint is stored in full. `None` when there is none.
    async fn load(
        &self,
        conn: &mut D::Connection,
        run_id: &str,
        upto: Option<i64>,
    ) -> Result<Option<(Checkpoint, bool)>, CheckpointError> {
        let rows = Bind::<D>::new(CHAIN)
            .text(run_id)
            .int(upto.unwrap_or(i64::MAX))
            .fetch_all(conn)
            .await
            .map_err(checkpoint_error::<D>)?;
        let mut decoder = CheckpointDecoder::new().with_location(&self.location);
        let mut full = false;
        for row in &rows {
            let record = self.record(run_id, row)?;
            full = record.is_full();
            decoder.push(record)?;
        }
        Ok(decoder.into_latest().map(|checkpoint| (checkpoint, full)))
    }

    /// Reads a `seq, record` row of run `run_id` back, checking it holds the run and seq
    /// its columns say.
    fn record(&self, run_id: &str, row: &D::Row) -> Result<EncodedCheckpoint, CheckpointError> {
        let seq = D::int(row, "seq")
            .map_err(|e| self.corrupt(format!("run {run_id:?}, a checkpoint"), e.to_string()))?;
        let what = format!("run {run_id:?} seq {seq}");
        let text = D::text(row, "record").map_err(|e| self.corrupt(what.clone(), e.to_string()))?;
        let record = EncodedCheckpoint::from_json(&text, &format!("{what} ({})", self.location))?;
        if record.run_id() != run_id || i64::try_from(record.seq()).ok() != Some(seq) {
            let reason = format!(
                "the row holds run {:?} seq {}, not what its columns say",
                record.run_id(),
                record.seq()
            );
            return Err(self.corrupt(what, reason));
        }
        Ok(record)
    }

    /// The run's latest checkpoint.
    pub(crate) async fn latest(&self, run_id: &str) -> Result<Option<Checkpoint>, CheckpointError> {
        let mut conn = self.pool.acquire().await.map_err(checkpoint_error::<D>)?;
        let loaded = self.load(&mut conn, run_id, None).await?;
        Ok(loaded.map(|(checkpoint, _)| checkpoint))
    }

    /// Every checkpoint of the run, oldest first.
    pub(crate) async fn list(&self, run_id: &str) -> Result<Vec<Checkpoint>, CheckpointError> {
        let mut conn = self.pool.acquire().await.map_err(checkpoint_error::<D>)?;
        let rows =
            Bind::<D>::new("SELECT seq, record FROM checkpoints WHERE run_id = $1 ORDER BY seq")
                .text(run_id)
                .fetch_all(&mut conn)
                .await
                .map_err(checkpoint_error::<D>)?;
        let mut decoder = CheckpointDecoder::new().with_location(&self.location);
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            decoder.push(self.record(run_id, row)?)?;
            out.extend(decoder.current());
        }
        Ok(out)
    }

    /// Records (or replaces) the run's journal entry `key`, synced before it returns.
    pub(crate) async fn record_journal(
        &self,
        run_id: &str,
        key: &str,
        value: &Value,
    ) -> Result<(), CheckpointError> {
        let entry = (run_id.to_owned(), key.to_owned(), value.clone());
        self.commits
            .write_synced(entry, |conn, (run_id, key, value)| {
                let upsert = Bind::<D>::new(
                    "INSERT INTO checkpoint_journal (run_id, key, value, at) \
                     VALUES ($1, $2, $3, $4) ON CONFLICT (run_id, key) \
                     DO UPDATE SET value = excluded.value, at = excluded.at",
                )
                .text(run_id)
                .text(key)
                .json(value)
                .time(Utc::now());
                Box::pin(async move {
                    upsert
                        .execute(conn)
                        .await
                        .map(drop)
                        .map_err(checkpoint_error::<D>)
                })
            })
            .await
    }

    /// The run's journal entries by key.
    pub(crate) async fn journal(
        &self,
        run_id: &str,
    ) -> Result<BTreeMap<String, Value>, CheckpointError> {
        let mut conn = self.pool.acquire().await.map_err(checkpoint_error::<D>)?;
        let rows = Bind::<D>::new("SELECT key, value FROM checkpoint_journal WHERE run_id = $1")
            .text(run_id)
            .fetch_all(&mut conn)
            .await
            .map_err(checkpoint_error::<D>)?;
        let mut entries = BTreeMap::new();
        for row in &rows {
            let key = D::text(row, "key").map_err(|e| {
                self.corrupt(format!("run {run_id:?}, a journal entry"), e.to_string())
            })?;
            let value = D::read_json(row, "value").map_err(|e| {
                self.corrupt(
                    format!("run {run_id:?} journal entry {key:?}"),
                    e.to_string(),
                )
            })?;
            entries.insert(key, value);
        }
        Ok(entries)
    }

    /// Deletes a run's checkpoints and journal inside `conn`'s transaction; returns how
    /// many checkpoints went.
    async fn delete_run(conn: &mut D::Connection, run_id: &str) -> Result<u64, CheckpointError> {
        let removed = Bind::<D>::new("DELETE FROM checkpoints WHERE run_id = $1")
            .text(run_id)
            .execute(&mut *conn)
            .await
            .map_err(checkpoint_error::<D>)?;
        Bind::<D>::new("DELETE FROM checkpoint_journal WHERE run_id = $1")
            .text(run_id)
            .execute(conn)
            .await
            .map_err(checkpoint_error::<D>)?;
        Ok(removed)
    }

    /// Keeps the run's `keep_latest` newest checkpoints (none: the run and its journal
    /// go), the oldest kept rewritten in full; answers how many went.
    pub(crate) async fn prune(
        &self,
        run_id: &str,
        keep_latest: usize,
    ) -> Result<usize, CheckpointError> {
        let mut tx = D::begin_write(&self.pool)
            .await
            .map_err(checkpoint_error::<D>)?;
        let key = format!("checkpoint {run_id}");
        D::lock_key(&mut tx, &key)
            .await
            .map_err(checkpoint_error::<D>)?;
        if keep_latest == 0 {
            self.heads().take(run_id);
            let removed = Self::delete_run(&mut tx, run_id).await?;
            tx.commit().await.map_err(checkpoint_error::<D>)?;
            return Ok(usize::try_from(removed).unwrap_or(usize::MAX));
        }
        let rows = Bind::<D>::new("SELECT seq FROM checkpoints WHERE run_id = $1 ORDER BY seq")
            .text(run_id)
            .fetch_all(&mut tx)
            .await
            .map_err(checkpoint_error::<D>)?;
        // Nothing to remove when the run has no more than `keep_latest`.
        let cut = rows.len().saturating_sub(keep_latest);
        let Some(first_kept) = rows.get(cut).filter(|_| cut > 0) else {
            return Ok(0);
        };
        let first_kept = D::int(first_kept, "seq").map_err(checkpoint_error::<D>)?;
        // The oldest record kept must load on its own: stored in full.
        match self.load(&mut tx, run_id, Some(first_kept)).await? {
            Some((_, true)) => {}
            Some((checkpoint, false)) => {
                let text = EncodedCheckpoint::full(&checkpoint)?.into_json();
                Bind::<D>::new(
                    "UPDATE checkpoints SET full_record = TRUE, record = $3 \
                     WHERE run_id = $1 AND seq = $2",
                )
                .text(run_id)
                .int(first_kept)
                .text(&text)
                .execute(&mut tx)
                .await
                .map_err(checkpoint_error::<D>)?;
            }
            None => {
                let what = format!("run {run_id:?} seq {first_kept}");
                return Err(self.corrupt(what, "no full snapshot before this delta"));
            }
        }
        let removed = Bind::<D>::new("DELETE FROM checkpoints WHERE run_id = $1 AND seq < $2")
            .text(run_id)
            .int(first_kept)
            .execute(&mut tx)
            .await
            .map_err(checkpoint_error::<D>)?;
        tx.commit().await.map_err(checkpoint_error::<D>)?;
        Ok(usize::try_from(removed).unwrap_or(usize::MAX))
    }

    /// Deletes the runs last written more than `age` ago; answers how many went.
    pub(crate) async fn prune_older_than(&self, age: Duration) -> Result<usize, CheckpointError> {
        let Some(cutoff) = chrono::Duration::from_std(age)
            .ok()
            .and_then(|age| Utc::now().checked_sub_signed(age))
        else {
            return Ok(0);
        };
        let mut tx = D::begin_write(&self.pool)
            .await
            .map_err(checkpoint_error::<D>)?;
        let rows = Bind::<D>::new(STALE_RUNS)
            .time(cutoff)
            .fetch_all(&mut tx)
            .await
            .map_err(checkpoint_error::<D>)?;
        let stale = rows
            .iter()
            .map(|row| D::text(row, "run_id"))
            .collect::<Result<Vec<_>, _>>()
            .map_err(checkpoint_error::<D>)?;
        for run_id in &stale {
            Self::delete_run(&mut tx, run_id).await?;
        }
        tx.commit().await.map_err(checkpoint_error::<D>)?;
        let mut heads = self.heads();
        for run_id in &stale {
            heads.take(run_id);
        }
        if !stale.is_empty() {
            tracing::debug!(runs = stale.len(), "pruned stale checkpointed runs");
        }
        Ok(stale.len())
    }

    /// Whether the run has a checkpoint.
    pub(crate) async fn exists(&self, run_id: &str) -> Result<bool, CheckpointError> {
        let mut conn = self.pool.acquire().await.map_err(checkpoint_error::<D>)?;
        let row = Bind::<D>::new("SELECT 1 AS found FROM checkpoints WHERE run_id = $1 LIMIT 1")
            .text(run_id)
            .fetch_optional(&mut conn)
            .await
            .map_err(checkpoint_error::<D>)?;
        Ok(row.is_some())
    }
}
