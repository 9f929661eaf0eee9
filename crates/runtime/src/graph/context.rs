//! The context a node runs in, and the journal of side effects that must not repeat.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::NodeError;
use crate::checkpoint::{CheckpointError, CheckpointStore};

/// What a node knows about the run it is part of: the run id, its own name and step
/// number, the run's cancellation token and the run's [`Journal`].
///
/// A node gets it by reference; to test a node on its own, make one with
/// [`RunContext::standalone`].
#[derive(Clone)]
pub struct RunContext {
    pub(crate) run_id: Arc<str>,
    pub(crate) node: Arc<str>,
    pub(crate) step: u64,
    /// Shared: cloning a token takes a lock, and every node run clones its context.
    pub(crate) cancel: Arc<CancellationToken>,
    pub(crate) journal: Journal,
}

impl fmt::Debug for RunContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunContext")
            .field("run_id", &self.run_id)
            .field("node", &self.node)
            .field("step", &self.step)
            .field("cancelled", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl RunContext {
    /// A context outside any graph (for unit-testing a node): an in-memory journal, a
    /// fresh cancellation token, no node name, step 0.
    pub fn standalone(run_id: impl Into<String>) -> Self {
        let run_id: Arc<str> = Arc::from(run_id.into());
        Self {
            journal: Journal::in_memory(run_id.clone()),
            run_id,
            node: Arc::from(""),
            step: 0,
            cancel: Arc::new(CancellationToken::new()),
        }
    }

    pub(crate) fn new(run_id: Arc<str>, cancel: CancellationToken, journal: Journal) -> Self {
        Self {
            run_id,
            node: Arc::from(""),
            step: 0,
            cancel: Arc::new(cancel),
            journal,
        }
    }

    /// The run's id (also the checkpoint key).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The name of the node being run.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The node's step number in the run: 1 for the first node run, counting across
    /// resumes, so a node re-run after a crash sees the same number as before.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// The run's cancellation token; long-running work should stop when it fires.
    pub fn cancellation_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the run was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The run's journal of recorded side effects.
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// Runs a side effect that must not be repeated (an email, a paid call) at most once
    /// per run and key.
    ///
    /// The first time, `f` runs and its successful result is recorded under `key` (and,
    /// when the run has a checkpoint store, written through it before `once` returns, so
    /// a crash right after the side effect does not repeat it on resume). When the key is
    /// already recorded, as on a resumed run, the recorded value is returned and `f` does
    /// not run. A failed `f` records nothing.
    ///
    /// Keys are per run, not per node: a node that runs several times in a loop and wants
    /// one effect per visit should put [`step`](Self::step) in the key, which is stable
    /// across a crash and resume.
    ///
    /// ```
    /// use agent_runtime::graph::{NodeError, RunContext};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let ctx = RunContext::standalone("run-1");
    /// let first: u32 = ctx.once("send-email", || async { Ok::<_, NodeError>(42) }).await?;
    /// // Recorded: the closure does not run again.
    /// let again: u32 = ctx.once("send-email", || async { Ok::<_, NodeError>(7) }).await?;
    /// assert_eq!((first, again), (42, 42));
    /// # Ok::<(), NodeError>(())
    /// # }).unwrap();
    /// ```
    pub async fn once<T, E, F, Fut>(&self, key: &str, f: F) -> Result<T, NodeError>
    where
        T: Serialize + DeserializeOwned,
        E: Into<NodeError>,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        if let Some(recorded) = self.journal.get(key) {
            tracing::debug!(key, node = %self.node, "journal replay");
            return serde_json::from_value(recorded).map_err(|e| {
                NodeError::fatal(format!(
                    "journal entry {key:?} of run {} does not decode: {e}",
                    self.run_id
                ))
            });
        }
        let value = f().await.map_err(Into::into)?;
        let json = serde_json::to_value(&value).map_err(|e| {
            NodeError::fatal(format!("journal entry {key:?} does not serialize: {e}"))
        })?;
        self.journal.record(key, json).await.map_err(|e| {
            NodeError::fatal(format!(
                "the side effect {key:?} ran but could not be recorded: {e}"
            ))
        })?;
        Ok(value)
    }
}

/// The record of a run's side effects, keyed by idempotency key (see
/// [`RunContext::once`]). Cheap to clone: clones share the same entries.
///
/// Without a checkpoint store it lives in memory for the run; with one, every entry is
/// written through the store as it is recorded and loaded back on resume.
#[derive(Clone)]
pub struct Journal {
    inner: Arc<JournalInner>,
}

struct JournalInner {
    run_id: Arc<str>,
    entries: Mutex<BTreeMap<String, Value>>,
    store: Option<Arc<dyn CheckpointStore>>,
}

impl fmt::Debug for Journal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Journal")
            .field("run_id", &self.inner.run_id)
            .field("entries", &self.len())
            .field("persistent", &self.inner.store.is_some())
            .finish()
    }
}

impl Journal {
    /// An empty journal kept in memory only.
    pub(crate) fn in_memory(run_id: Arc<str>) -> Self {
        Self {
            inner: Arc::new(JournalInner {
                run_id,
                entries: Mutex::new(BTreeMap::new()),
                store: None,
            }),
        }
    }

    /// A journal that writes through `store`, starting from `entries`.
    pub(crate) fn persistent(
        run_id: Arc<str>,
        store: Arc<dyn CheckpointStore>,
        entries: BTreeMap<String, Value>,
    ) -> Self {
        Self {
            inner: Arc::new(JournalInner {
                run_id,
                entries: Mutex::new(entries),
                store: Some(store),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Value>> {
        self.inner
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The value recorded under `key`, if any.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.lock().get(key).cloned()
    }

    /// A copy of every entry.
    pub fn entries(&self) -> BTreeMap<String, Value> {
        self.lock().clone()
    }

    /// How many entries are recorded.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Records `value` under `key`: through the store first (when there is one), then in
    /// memory. Replaces an earlier value under the same key.
    pub async fn record(&self, key: &str, value: Value) -> Result<(), CheckpointError> {
        if let Some(store) = &self.inner.store {
            store
                .record_journal(&self.inner.run_id, key, value.clone())
                .await?;
        }
        self.lock().insert(key.to_owned(), value);
        Ok(())
    }
}
