//! Writes a checkpointed run's checkpoints: after every node, and inside a node after
//! every round of a durable agent loop. One writer per run, so `seq` only grows.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::Utc;

use super::NodeFailure;
use crate::SessionMarks;
use crate::checkpoint::{
    CHECKPOINT_SCHEMA_VERSION, Checkpoint, CheckpointError, CheckpointStore, JsonText,
};

/// The session now, given the version of the state serialized last (if any): see
/// [`SessionNow`].
pub(crate) type Snapshot =
    Box<dyn Fn(Option<u64>) -> Result<SessionNow, serde_json::Error> + Send + Sync>;

/// The session as a checkpoint holds it.
pub(crate) struct SessionNow {
    /// Its state, serialized; `None` when it is still of the version serialized last
    /// (most saves inside a node: an agent's round rarely changes the session's state).
    pub(crate) state: Option<JsonText>,
    /// The state's version (see `SharedState::read_versioned`).
    pub(crate) version: u64,
    pub(crate) marks: SessionMarks,
}

/// Replaces the session's state with a saved one.
pub(crate) type Restore = Box<dyn Fn(&JsonText) -> Result<(), serde_json::Error> + Send + Sync>;

pub(crate) struct Checkpointer {
    store: Arc<dyn CheckpointStore>,
    /// The checkpoint written last (its state is the session's at that time).
    last: tokio::sync::Mutex<Last>,
    /// The version of the state the last checkpoint holds ([`NO_VERSION`] until this
    /// writer serialized one: a resumed run's is the store's). Written under the lock on
    /// `last`, read without it.
    last_version: AtomicU64,
    snapshot: Snapshot,
    restore: Restore,
}

impl Checkpointer {
    /// A writer continuing after `last` (the run's first checkpoint, or the one resumed
    /// from).
    pub(crate) fn new(
        store: Arc<dyn CheckpointStore>,
        last: Checkpoint,
        snapshot: Snapshot,
        restore: Restore,
    ) -> Self {
        Self {
            store,
            last: tokio::sync::Mutex::new(Last {
                checkpoint: last,
                marks: None,
            }),
            last_version: AtomicU64::new(NO_VERSION),
            snapshot,
            restore,
        }
    }

    /// The session now: its marks and its state, serialized unless `reuse` allows
    /// leaving out a state unchanged since the last checkpoint.
    pub(crate) fn session_now(&self, reuse: bool) -> Result<SessionNow, serde_json::Error> {
        let last = self.last_version.load(Ordering::Acquire);
        (self.snapshot)((reuse && last != NO_VERSION).then_some(last))
    }

    /// Puts a saved state back into the session.
    pub(crate) fn restore_state(&self, state: &JsonText) -> Result<(), serde_json::Error> {
        (self.restore)(state)
    }

    /// The state of the checkpoint written (or resumed from) last.
    pub(crate) async fn last_state(&self) -> JsonText {
        self.last.lock().await.checkpoint.state.clone()
    }

    /// The state and the session marks of the checkpoint written (or resumed from)
    /// last.
    pub(crate) async fn last_state_and_marks(&self) -> (JsonText, Option<JsonText>) {
        let last = self.last.lock().await;
        let checkpoint = &last.checkpoint;
        (checkpoint.state.clone(), checkpoint.session.clone())
    }

    /// Writes the first checkpoint of a fresh run (seq 0, as given to [`new`](Self::new)),
    /// with the session as it is now.
    pub(crate) async fn save_first(&self) -> Result<(), CheckpointError> {
        let mut last = self.last.lock().await;
        let now = self.session_now(false)?;
        self.take(&mut last, now)?;
        self.store.save(&last.checkpoint).await
    }

    /// A checkpoint inside the node the run is at (the last checkpoint's `next`), holding
    /// what the node has done so far and the session `now` (taken when not given).
    pub(crate) async fn save_progress(
        &self,
        progress: JsonText,
        now: Option<SessionNow>,
    ) -> Result<(), CheckpointError> {
        let mut last = self.last.lock().await;
        let checkpoint = &mut last.checkpoint;
        if let Some(node) = checkpoint.next.clone() {
            checkpoint.node = node;
        }
        checkpoint.progress = Some(progress);
        self.write(&mut last, now).await
    }

    /// A checkpoint after node `node` completed, naming the node to run next.
    pub(crate) async fn save_completed(
        &self,
        node: &str,
        next: Option<&str>,
        errors: &[NodeFailure],
    ) -> Result<(), CheckpointError> {
        let mut last = self.last.lock().await;
        let checkpoint = &mut last.checkpoint;
        checkpoint.node.clear();
        checkpoint.node.push_str(node);
        checkpoint.completed.push(node.to_owned());
        // The name's buffer is reused from one checkpoint to the next.
        match (&mut checkpoint.next, next) {
            (Some(name), Some(next)) => {
                name.clear();
                name.push_str(next);
            }
            (slot, next) => *slot = next.map(str::to_owned),
        }
        checkpoint.progress = None;
        if checkpoint.errors.len() != errors.len() {
            checkpoint.errors = errors.to_vec();
        }
        self.write(&mut last, None).await
    }

    /// Writes the next checkpoint with the session `now` (taken when not given).
    async fn write(&self, last: &mut Last, now: Option<SessionNow>) -> Result<(), CheckpointError> {
        let now = match now {
            Some(now) => now,
            None => self.session_now(true)?,
        };
        self.take(last, now)?;
        let checkpoint = &mut last.checkpoint;
        checkpoint.seq += 1;
        checkpoint.at = Utc::now();
        checkpoint.schema_version = CHECKPOINT_SCHEMA_VERSION;
        self.store.save(checkpoint).await
    }

    /// Makes the session `now` the checkpoint's. A state left out as unchanged is kept,
    /// unless another save put a state of another version in since `now` was taken:
    /// then the session is taken again, its state and marks together.
    fn take(&self, last: &mut Last, now: SessionNow) -> Result<(), serde_json::Error> {
        let now = match now.state {
            None if self.last_version.load(Ordering::Acquire) != now.version => {
                self.session_now(false)?
            }
            _ => now,
        };
        last.note_marks(now.marks)?;
        if let Some(state) = now.state {
            last.checkpoint.state = state;
        }
        self.last_version.store(now.version, Ordering::Release);
        Ok(())
    }
}

/// [`Checkpointer::last_version`] before a state was serialized.
const NO_VERSION: u64 = u64::MAX;

/// The checkpoint written last, and the marks its session text was made from.
struct Last {
    checkpoint: Checkpoint,
    /// `None` until this writer serialized marks (a resumed run's are the store's).
    marks: Option<SessionMarks>,
}

impl Last {
    /// Makes `marks` the checkpoint's session, serializing them only when they changed:
    /// between most checkpoints nothing was emitted or metered.
    fn note_marks(&mut self, marks: SessionMarks) -> Result<(), serde_json::Error> {
        if self.marks.as_ref() != Some(&marks) || self.checkpoint.session.is_none() {
            self.checkpoint.session = Some(JsonText::of(&marks)?);
            self.marks = Some(marks);
        }
        Ok(())
    }
}
