//! The SQLite checkpoint store: graph runs' checkpoints and journals in the same database
//! as the sessions (one database per deployment).
//!
//! A checkpoint is one row of `checkpoints`: its run, seq, node and time as columns, and
//! its stored form as JSON text, made by agent-runtime's
//! [`CheckpointEncoder`](agent_runtime::checkpoint::CheckpointEncoder): a full snapshot, or
//! a delta on the run's previous checkpoint, exactly as the file store writes them. A
//! `full` column marks the snapshots, so loading a checkpoint reads from the nearest one.
//! Journal entries are rows of `checkpoint_journal`, one per run and key.
//!
//! Writes that must survive a crash (saving a checkpoint, recording a journal entry) sync
//! the database file before they return (`synchronous = FULL` for that commit).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agent_runtime::checkpoint::{
    Checkpoint, CheckpointDecoder, CheckpointEncoder, CheckpointError, CheckpointStore,
    EncodedCheckpoint, RecentRuns, SnapshotPolicy,
};
use agent_runtime::sessions::StoreError;
use async_trait::async_trait;
use chrono::Utc;
use serde_json::Value;
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{SqliteConnection, SqlitePool, SqliteRow};
use sqlx::{Connection, Row, Sqlite};

use crate::SqliteSessionStore;
use crate::sqlite_schema::timestamp;

/// The records of a run from the nearest full snapshot at or before seq `?2` up to it.
const CHAIN: &str = "SELECT seq, record FROM checkpoints \
     WHERE run_id = ?1 AND seq <= ?2 AND seq >= COALESCE(\
       (SELECT MAX(seq) FROM checkpoints WHERE run_id = ?1 AND seq <= ?2 AND full = 1), 0) \
     ORDER BY seq";

/// Runs whose newest checkpoint was taken before `?1`, and runs with a journal but no
/// checkpoint whose journal was last written before it.
const STALE_RUNS: &str = "SELECT c.run_id FROM checkpoints AS c \
     JOIN (SELECT run_id, MAX(seq) AS seq FROM checkpoints GROUP BY run_id) AS newest \
       ON c.run_id = newest.run_id AND c.seq = newest.seq \
     WHERE c.at < ?1 \
     UNION \
     SELECT j.run_id FROM checkpoint_journal AS j \
     WHERE NOT EXISTS (SELECT 1 FROM checkpoints AS c WHERE c.run_id = j.run_id) \
     GROUP BY j.run_id HAVING MAX(j.at) < ?1";

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
/// use agent_runtime::checkpoint::{Checkpoint, CheckpointStore};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let sessions = SqliteSessionStore::in_memory().await?;
/// let checkpoints = sessions.checkpoints();
/// checkpoints.save(&Checkpoint::new("run-1", 1, "parse", json!({"log": ["a"]})).with_next("score")).await?;
/// checkpoints.save(&Checkpoint::new("run-1", 2, "score", json!({"log": ["a", "b"]}))).await?;
/// checkpoints.record_journal("run-1", "email", json!("msg-1")).await?;
///
/// let latest = checkpoints.latest("run-1").await?.unwrap();
/// assert_eq!(latest.state, json!({"log": ["a", "b"]}));
/// assert_eq!(checkpoints.journal("run-1").await?["email"], json!("msg-1"));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct SqliteCheckpointStore {
    db: SqliteSessionStore,
    snapshot_policy: SnapshotPolicy,
    heads: Arc<Mutex<RecentRuns<CheckpointEncoder>>>,
}

impl std::fmt::Debug for SqliteCheckpointStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteCheckpointStore")
            .field("location", &self.db.location())
            .field("snapshot_policy", &self.snapshot_policy)
            .finish()
    }
}

impl SqliteSessionStore {
    /// A checkpoint store in this store's database, sharing its connections: one
    /// database for a deployment's sessions and graph runs.
    pub fn checkpoints(&self) -> SqliteCheckpointStore {
        SqliteCheckpointStore {
            db: self.clone(),
            snapshot_policy: SnapshotPolicy::default(),
            heads: Arc::default(),
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
        self.snapshot_policy = policy;
        self.heads = Arc::default();
        self
    }

    /// When a full snapshot is written instead of a delta.
    pub fn snapshot_policy(&self) -> SnapshotPolicy {
        self.snapshot_policy
    }

    /// A session store on the same database.
    pub fn sessions(&self) -> SqliteSessionStore {
        self.db.clone()
    }

    /// The database file, or `None` in memory.
    pub fn path(&self) -> Option<&Path> {
        self.db.path()
    }

    fn pool(&self) -> &SqlitePool {
        self.db.pool()
    }

    fn heads(&self) -> MutexGuard<'_, RecentRuns<CheckpointEncoder>> {
        self.heads.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn corrupt(&self, what: String, reason: impl Into<String>) -> CheckpointError {
        crate::checkpoint_rows::corrupt(what, &self.db.location(), reason)
    }

    /// A connection that syncs every commit to disk until [`Durable::release`].
    async fn durable(&self) -> Result<Durable, CheckpointError> {
        let conn = self.pool().acquire().await.map_err(backend)?;
        let mut durable = Durable { conn, previous: 0 };
        durable.previous = sqlx::query_scalar("PRAGMA synchronous")
            .fetch_one(durable.conn())
            .await
            .map_err(backend)?;
        if durable.previous < SYNCHRONOUS_FULL {
            sqlx::query("PRAGMA synchronous = FULL")
                .execute(durable.conn())
                .await
                .map_err(backend)?;
        }
        Ok(durable)
    }

    /// Encodes and inserts `checkpoint` in one write transaction, returning the encoder
    /// that holds it.
    async fn insert(
        &self,
        conn: &mut SqliteConnection,
        checkpoint: &Checkpoint,
    ) -> Result<CheckpointEncoder, CheckpointError> {
        let run_id = checkpoint.run_id.as_str();
        let seq = sql_seq(run_id, checkpoint.seq)?;
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(backend)?;
        let latest: Option<i64> =
            sqlx::query_scalar("SELECT MAX(seq) FROM checkpoints WHERE run_id = ?1")
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
        // The cached encoder holds the run's latest checkpoint unless another store or
        // process wrote to the run since: then the checkpoint is stored in full.
        let mut encoder = self
            .heads()
            .take(run_id)
            .filter(|e| e.last_seq().map(sql_seq_lossy) == latest)
            .unwrap_or_else(|| CheckpointEncoder::new(self.snapshot_policy));
        let record = encoder.encode(checkpoint);
        sqlx::query(
            "INSERT INTO checkpoints (run_id, seq, node, full, record, at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .bind(run_id)
        .bind(seq)
        .bind(&checkpoint.node)
        .bind(record.is_full())
        .bind(record.to_json()?)
        .bind(timestamp(checkpoint.at))
        .execute(&mut *tx)
        .await
        .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        Ok(encoder)
    }

    /// Rebuilds the run's checkpoint at seq `upto` or, without it, its latest; says
    /// whether that checkpoint is stored in full. `None` when there is none.
    async fn load(
        &self,
        conn: &mut SqliteConnection,
        run_id: &str,
        upto: Option<i64>,
    ) -> Result<Option<(Checkpoint, bool)>, CheckpointError> {
        let rows = sqlx::query(CHAIN)
            .bind(run_id)
            .bind(upto.unwrap_or(i64::MAX))
            .fetch_all(&mut *conn)
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
    fn record(&self, run_id: &str, row: &SqliteRow) -> Result<EncodedCheckpoint, CheckpointError> {
        crate::checkpoint_rows::stored_record(row, run_id, &self.db.location())
    }
}

/// SQLite's `synchronous = FULL`.
const SYNCHRONOUS_FULL: i64 = 2;

/// A pooled connection set to `synchronous = FULL`, put back as it was by `release`.
struct Durable {
    conn: PoolConnection<Sqlite>,
    previous: i64,
}

impl Durable {
    fn conn(&mut self) -> &mut SqliteConnection {
        &mut self.conn
    }

    async fn release(mut self) {
        if self.previous >= SYNCHRONOUS_FULL {
            return;
        }
        let restore = match self.previous {
            0 => "PRAGMA synchronous = OFF",
            _ => "PRAGMA synchronous = NORMAL",
        };
        if let Err(error) = sqlx::query(restore).execute(self.conn()).await {
            // The connection keeps syncing every commit: slower, still correct.
            tracing::warn!(%error, "could not restore the connection's synchronous mode");
        }
    }
}

fn backend(error: sqlx::Error) -> CheckpointError {
    CheckpointError::Backend(format!("SQLite checkpoint store: {error}"))
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

/// A seq as an SQLite integer.
fn sql_seq(run_id: &str, seq: u64) -> Result<i64, CheckpointError> {
    i64::try_from(seq).map_err(|_| {
        CheckpointError::Backend(format!(
            "checkpoint seq {seq} of run {run_id:?} is beyond SQLite's integers"
        ))
    })
}

/// A seq known to have been stored (so it fits) as an SQLite integer.
fn sql_seq_lossy(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

#[async_trait]
impl CheckpointStore for SqliteCheckpointStore {
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        checkpoint.check_version()?;
        let mut durable = self.durable().await?;
        let written = self.insert(durable.conn(), checkpoint).await;
        durable.release().await;
        // A finished run takes no more checkpoints: its encoder is dropped.
        let encoder = written?;
        if checkpoint.next.is_some() {
            self.heads().insert(&checkpoint.run_id, encoder);
        }
        Ok(())
    }

    async fn latest(&self, run_id: &str) -> Result<Option<Checkpoint>, CheckpointError> {
        let mut conn = self.pool().acquire().await.map_err(backend)?;
        let conn: &mut SqliteConnection = &mut conn;
        let loaded = self.load(conn, run_id, None).await?;
        Ok(loaded.map(|(checkpoint, _)| checkpoint))
    }

    async fn list(&self, run_id: &str) -> Result<Vec<Checkpoint>, CheckpointError> {
        let rows =
            sqlx::query("SELECT seq, record FROM checkpoints WHERE run_id = ?1 ORDER BY seq")
                .bind(run_id)
                .fetch_all(self.pool())
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
        let value = serde_json::to_string(&value)?;
        let mut durable = self.durable().await?;
        let written = sqlx::query(
            "INSERT INTO checkpoint_journal (run_id, key, value, at) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value, at = excluded.at",
        )
        .bind(run_id)
        .bind(key)
        .bind(value)
        .bind(timestamp(Utc::now()))
        .execute(durable.conn())
        .await;
        durable.release().await;
        written.map(drop).map_err(backend)
    }

    async fn journal(&self, run_id: &str) -> Result<BTreeMap<String, Value>, CheckpointError> {
        let rows = sqlx::query("SELECT key, value FROM checkpoint_journal WHERE run_id = ?1")
            .bind(run_id)
            .fetch_all(self.pool())
            .await
            .map_err(backend)?;
        let mut entries = BTreeMap::new();
        for row in &rows {
            let key: String = row.try_get("key").map_err(|e| {
                self.corrupt(format!("run {run_id:?}, a journal entry"), e.to_string())
            })?;
            let what = || format!("run {run_id:?} journal entry {key:?}");
            let text: String = row
                .try_get("value")
                .map_err(|e| self.corrupt(what(), e.to_string()))?;
            let value = serde_json::from_str(&text)
                .map_err(|e| self.corrupt(what(), format!("bad JSON: {e}")))?;
            entries.insert(key, value);
        }
        Ok(entries)
    }

    async fn prune(&self, run_id: &str, keep_latest: usize) -> Result<usize, CheckpointError> {
        let mut tx = self
            .pool()
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(backend)?;
        if keep_latest == 0 {
            self.heads().take(run_id);
            let removed = sqlx::query("DELETE FROM checkpoints WHERE run_id = ?1")
                .bind(run_id)
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
            sqlx::query("DELETE FROM checkpoint_journal WHERE run_id = ?1")
                .bind(run_id)
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
            tx.commit().await.map_err(backend)?;
            return Ok(usize::try_from(removed.rows_affected()).unwrap_or(usize::MAX));
        }
        let seqs: Vec<i64> =
            sqlx::query_scalar("SELECT seq FROM checkpoints WHERE run_id = ?1 ORDER BY seq")
                .bind(run_id)
                .fetch_all(&mut *tx)
                .await
                .map_err(backend)?;
        // Nothing to remove when the run has no more than `keep_latest`.
        let cut = seqs.len().saturating_sub(keep_latest);
        let Some(&first_kept) = seqs.get(cut).filter(|_| cut > 0) else {
            return Ok(0);
        };
        // The oldest record kept must load on its own: stored in full.
        let loaded = self.load(&mut tx, run_id, Some(first_kept)).await?;
        match loaded {
            Some((_, true)) => {}
            Some((checkpoint, false)) => {
                sqlx::query(
                    "UPDATE checkpoints SET full = 1, record = ?3 WHERE run_id = ?1 AND seq = ?2",
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
        let removed = sqlx::query("DELETE FROM checkpoints WHERE run_id = ?1 AND seq < ?2")
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
        let mut tx = self
            .pool()
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(backend)?;
        let stale: Vec<String> = sqlx::query_scalar(STALE_RUNS)
            .bind(timestamp(cutoff))
            .fetch_all(&mut *tx)
            .await
            .map_err(backend)?;
        for run_id in &stale {
            for statement in [
                "DELETE FROM checkpoints WHERE run_id = ?1",
                "DELETE FROM checkpoint_journal WHERE run_id = ?1",
            ] {
                sqlx::query(statement)
                    .bind(run_id)
                    .execute(&mut *tx)
                    .await
                    .map_err(backend)?;
            }
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
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM checkpoints WHERE run_id = ?1)")
            .bind(run_id)
            .fetch_one(self.pool())
            .await
            .map_err(backend)
    }
}
