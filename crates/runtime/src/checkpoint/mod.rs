//! Checkpoints: a run's state after every completed node, so a crashed run can resume.
//!
//! A [`Checkpoint`] records the state, the nodes completed so far and, explicitly, the
//! node to run next. A [`CheckpointStore`] keeps them per run, together with the run's
//! journal of side effects (see the graph's `RunContext::once`).
//! Two stores live here: [`FileCheckpointStore`] (one JSON file per checkpoint, written
//! atomically) and [`InMemoryCheckpointStore`] (bounded by retention); database stores
//! live in `agent-backends` (`SqliteCheckpointStore`, in the same database as the
//! sessions) and share the built-in stores' record format through [`CheckpointEncoder`],
//! [`EncodedCheckpoint`] and [`CheckpointDecoder`].
//!
//! Long append-only histories do not make checkpoints grow quadratically: when a
//! top-level array of the state (a message history, say) extends the previous
//! checkpoint's, the built-in stores keep only the appended items, and rebuild the state
//! on load. A node's progress (its agent runs, saved after every round) is kept as the
//! bytes that changed since the previous checkpoint's (the round's messages and the
//! counters that moved). A full snapshot is taken when the deltas written since the last one add up
//! to the size of a full snapshot of the current state (see [`SnapshotPolicy`]), so
//! snapshots are spaced geometrically as the state grows and the bytes stored for a run
//! stay linear in the bytes it appends (plus a fixed overhead per checkpoint).
//!
//! ```
//! use agent_runtime::checkpoint::{Checkpoint, CheckpointStore, InMemoryCheckpointStore, JsonText};
//! use serde_json::{Value, json};
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let store = InMemoryCheckpointStore::new();
//! let state = JsonText::of(&json!({"messages": ["hi"]}))?;
//! store.save(&Checkpoint::new("run-1", 1, "parse", state).with_next("score")).await?;
//! let state = JsonText::of(&json!({"messages": ["hi", "ok"]}))?;
//! store.save(&Checkpoint::new("run-1", 2, "score", state)).await?;
//!
//! let latest = store.latest("run-1").await?.unwrap();
//! assert_eq!(latest.state.parse::<Value>()?, json!({"messages": ["hi", "ok"]}));
//! assert!(latest.is_finished());
//! assert_eq!(store.list("run-1").await?.len(), 2);
//! # Ok::<(), agent_runtime::checkpoint::CheckpointError>(())
//! # }).unwrap();
//! ```

mod body;
mod delta;
mod encoding;
mod file;
mod json_text;
mod memory;
mod names;
mod rebuild;
mod recent_runs;
mod state_delta;
#[cfg(feature = "testing")]
pub mod testing;
mod text_edit;

pub use encoding::{CheckpointDecoder, CheckpointEncoder, EncodedCheckpoint};
pub use file::FileCheckpointStore;
pub use json_text::JsonText;
pub use memory::{DEFAULT_KEEP_LATEST, DEFAULT_MAX_RUNS, InMemoryCheckpointStore};
pub use recent_runs::{RECENT_RUNS, RecentRuns};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::node_failure::NodeFailure;

/// The checkpoint format this build writes and the newest it reads. Version 2 added
/// [`Checkpoint::progress`] and [`Checkpoint::session`] and made `seq` a plain sequence
/// (checkpoints are also taken inside a node); version 3 stores a delta's progress as
/// the part that changed since its base's (an agent's round, not its whole transcript).
/// Versions 1 and 2 still load.
pub const CHECKPOINT_SCHEMA_VERSION: u32 = 3;

/// The longest chain of deltas the default [`SnapshotPolicy`] writes after a full
/// snapshot, which bounds how many records loading a checkpoint reads.
pub const DEFAULT_MAX_DELTA_CHAIN: usize = 1_024;

/// When the built-in stores ([`FileCheckpointStore`], [`InMemoryCheckpointStore`]) keep
/// a checkpoint as a full snapshot rather than as a delta on the previous one.
///
/// A checkpoint is always stored in full when it is a run's first (or the first the
/// store knows the previous checkpoint of), when its state or the previous one is not a
/// JSON object, or when its completed list does not extend the previous one.
///
/// ```
/// use agent_runtime::checkpoint::{InMemoryCheckpointStore, SnapshotPolicy};
/// // The default: size-based, at most 1,024 deltas in a row.
/// assert_eq!(SnapshotPolicy::default(), SnapshotPolicy::SizeBased { max_chain: 1_024 });
/// // Load faster from shorter chains, at the cost of more snapshots on long runs.
/// let store = InMemoryCheckpointStore::new()
///     .with_snapshot_policy(SnapshotPolicy::SizeBased { max_chain: 32 });
/// # let _ = store;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SnapshotPolicy {
    /// The default: a full snapshot once the deltas written since the last one (whole
    /// records, as serialized JSON) add up to the serialized size of the current state
    /// and completed list, or once `max_chain` deltas follow it (0: every checkpoint in
    /// full). Snapshots are spaced geometrically as an append-only history grows.
    ///
    /// Each snapshot costs about as much as the deltas before it at most, so the bytes
    /// stored are at most about twice the bytes of the deltas: linear in what the run
    /// appends plus a fixed overhead per checkpoint (its metadata, about 200 bytes in
    /// the file store), where snapshots at a fixed interval grow quadratically. A run
    /// appending a ~130-byte message per checkpoint stores about 5 times its final
    /// state, however long it runs. Loading a checkpoint reads its nearest snapshot and
    /// at most `max_chain` deltas, together about twice the state at most.
    ///
    /// `max_chain` bounds how many records a load reads. It takes over from the size
    /// rule once the state outgrows `max_chain` times the per-checkpoint metadata (about
    /// 200 kB with the default): from then on a run appending to its history stores a
    /// snapshot every `max_chain` checkpoints, and storage grows again with the square
    /// of the run's length, divided by `2 * max_chain`. Raise it for longer runs.
    SizeBased {
        /// The most deltas in a row after a full snapshot.
        max_chain: usize,
    },
    /// A full snapshot every this many checkpoints (0 or 1: every checkpoint in full) and
    /// deltas in between, whatever their size. Storage of an append-only history grows
    /// quadratically (the snapshots alone hold about `n² / (2 * every)` items).
    Every(usize),
}

impl Default for SnapshotPolicy {
    fn default() -> Self {
        Self::SizeBased {
            max_chain: DEFAULT_MAX_DELTA_CHAIN,
        }
    }
}

/// A run's state after a completed node, or inside a node that is still running (an agent
/// loop saves one after every round).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The run.
    pub run_id: String,
    /// Position in the run: 0 before the first node, then one more for every checkpoint.
    /// Strictly increasing within a run. (The number of nodes completed is
    /// `completed.len()`.)
    pub seq: u64,
    /// The node just completed (`START` for seq 0), or the node still running when
    /// [`progress`](Self::progress) is set.
    pub node: String,
    /// The nodes completed so far, in order.
    pub completed: Vec<String>,
    /// The node to run on resume; `None` when the run reached `END`.
    pub next: Option<String>,
    /// The state, as the JSON text it was serialized to; shared, so that the checkpoints
    /// of a run that did not change it, and a store's copy of the last one, hold one text.
    /// Read it with [`JsonText::parse`].
    pub state: JsonText,
    /// The checkpoint format version ([`CHECKPOINT_SCHEMA_VERSION`] when written).
    pub schema_version: u32,
    /// When the checkpoint was taken.
    pub at: DateTime<Utc>,
    /// Failures recorded so far (recoverable ones, the run went on).
    #[serde(default)]
    pub errors: Vec<NodeFailure>,
    /// What the node `next` had done when the checkpoint was taken inside it (its agent
    /// runs, saved after every round), handed back to it on resume; `None` at a node
    /// boundary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<JsonText>,
    /// What the run's session had done besides changing its state (events emitted, gate
    /// ids handed out, model usage metered), restored on resume so that nothing is
    /// emitted twice or counted twice; `None` for runs without a session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<JsonText>,
}

impl Checkpoint {
    /// A checkpoint taken now, with no completed nodes, no errors and `next = None`.
    pub fn new(
        run_id: impl Into<String>,
        seq: u64,
        node: impl Into<String>,
        state: JsonText,
    ) -> Self {
        Self {
            run_id: run_id.into(),
            seq,
            node: node.into(),
            completed: Vec::new(),
            next: None,
            state,
            schema_version: CHECKPOINT_SCHEMA_VERSION,
            at: Utc::now(),
            errors: Vec::new(),
            progress: None,
            session: None,
        }
    }

    /// Sets the node to run on resume.
    pub fn with_next(mut self, next: impl Into<String>) -> Self {
        self.next = Some(next.into());
        self
    }

    /// Sets the completed nodes.
    pub fn with_completed<I, N>(mut self, completed: I) -> Self
    where
        I: IntoIterator<Item = N>,
        N: Into<String>,
    {
        self.completed = completed.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the time it was taken.
    pub fn at(mut self, at: DateTime<Utc>) -> Self {
        self.at = at;
        self
    }

    /// Sets the progress of the node still running.
    pub fn with_progress(mut self, progress: JsonText) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Fails with [`CheckpointError::SchemaVersion`] when the checkpoint was written in a
    /// newer format than this build reads (what every store checks before saving).
    pub fn check_version(&self) -> Result<(), CheckpointError> {
        if self.schema_version > CHECKPOINT_SCHEMA_VERSION {
            return Err(CheckpointError::SchemaVersion {
                ident: format!("run {:?} seq {}", self.run_id, self.seq),
                found: self.schema_version,
                supported: CHECKPOINT_SCHEMA_VERSION,
            });
        }
        Ok(())
    }

    /// Whether the run had reached `END`.
    pub fn is_finished(&self) -> bool {
        self.next.is_none()
    }

    /// How many nodes the run had completed (its step count).
    pub fn steps_completed(&self) -> u64 {
        self.completed.len() as u64
    }
}

/// What went wrong with a checkpoint store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// Reading or writing a file failed.
    #[error("checkpoint I/O error at {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A stored checkpoint or journal cannot be read back.
    #[error("corrupt checkpoint {ident}: {reason}")]
    Corrupt {
        /// The file (or the run and seq, for stores without files).
        ident: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A checkpoint was written by a newer version of the format.
    #[error(
        "checkpoint {ident} has schema version {found}, newer than the supported {supported}; \
         upgrade agent-runtime to read it"
    )]
    SchemaVersion {
        /// The file or record.
        ident: String,
        /// The version found.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// Serializing or deserializing a state failed.
    #[error("checkpoint serialization failed: {0}")]
    Serde(#[from] serde_json::Error),
    /// The run has no checkpoint.
    #[error("no checkpoint for run {0:?}")]
    NotFound(String),
    /// A fresh run was started under the id of a run that has checkpoints.
    #[error("run {0:?} already has checkpoints; resume it or choose another run id")]
    RunExists(String),
    /// A checkpoint's seq is not above the run's latest.
    #[error("checkpoint seq {seq} of run {run_id:?} is not after the latest seq {latest}")]
    OutOfOrder {
        /// The run.
        run_id: String,
        /// The seq being saved.
        seq: u64,
        /// The run's latest seq.
        latest: u64,
    },
    /// The run id cannot be used by this store (file stores restrict the characters).
    #[error("invalid run id {run_id:?}: {reason}")]
    InvalidRunId {
        /// The run id.
        run_id: String,
        /// Why.
        reason: &'static str,
    },
    /// The checkpoint does not fit the graph resuming it.
    #[error("cannot resume run {run_id:?}: {reason}")]
    Incompatible {
        /// The run.
        run_id: String,
        /// Why.
        reason: String,
    },
    /// Any other failure of a store backend (a database, a background task).
    #[error("checkpoint store error: {0}")]
    Backend(String),
}

/// Where checkpoints and journals are kept. Object-safe: graphs take an
/// `Arc<dyn CheckpointStore>`.
///
/// Stores assume one writer per run at a time (the graph running it).
#[async_trait::async_trait]
pub trait CheckpointStore: Send + Sync {
    /// Stores a checkpoint. Its `seq` must be above the run's latest.
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError>;

    /// The run's checkpoint with the highest seq, if any.
    async fn latest(&self, run_id: &str) -> Result<Option<Checkpoint>, CheckpointError>;

    /// The run's checkpoints, by increasing seq.
    async fn list(&self, run_id: &str) -> Result<Vec<Checkpoint>, CheckpointError>;

    /// Records a journal entry (replacing one with the same key). Must be durable when
    /// it returns.
    async fn record_journal(
        &self,
        run_id: &str,
        key: &str,
        value: Value,
    ) -> Result<(), CheckpointError>;

    /// The run's journal entries.
    async fn journal(&self, run_id: &str) -> Result<BTreeMap<String, Value>, CheckpointError>;

    /// Keeps the run's `keep_latest` newest checkpoints and removes the rest, returning
    /// how many were removed. `keep_latest = 0` removes the run entirely, journal
    /// included.
    async fn prune(&self, run_id: &str, keep_latest: usize) -> Result<usize, CheckpointError>;

    /// Retention by age: removes every run (checkpoints and journal) whose newest
    /// checkpoint is older than `age`, returning how many runs were removed.
    async fn prune_older_than(&self, age: Duration) -> Result<usize, CheckpointError>;

    /// Whether the run has any checkpoint. The default asks [`latest`](Self::latest).
    async fn exists(&self, run_id: &str) -> Result<bool, CheckpointError> {
        Ok(self.latest(run_id).await?.is_some())
    }
}

/// The instant `age` ago; `None` when that is before the representable range (nothing
/// is that old).
pub(crate) fn cutoff(age: Duration) -> Option<DateTime<Utc>> {
    let age = chrono::Duration::from_std(age).ok()?;
    Utc::now().checked_sub_signed(age)
}
