//! A test double for checkpoint stores (feature `testing`): [`InterceptedStore`] passes
//! every call on to a real store after showing it to a hook, which can refuse it (a full
//! disk, a dead database) or count it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::{Checkpoint, CheckpointError, CheckpointStore};

/// One call to a [`CheckpointStore`], as an [`InterceptedStore`]'s hook sees it before it
/// goes through.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum StoreCall<'a> {
    /// [`CheckpointStore::save`].
    Save(&'a Checkpoint),
    /// [`CheckpointStore::latest`].
    Latest {
        /// The run.
        run_id: &'a str,
    },
    /// [`CheckpointStore::list`].
    List {
        /// The run.
        run_id: &'a str,
    },
    /// [`CheckpointStore::record_journal`].
    RecordJournal {
        /// The run.
        run_id: &'a str,
        /// The entry's key.
        key: &'a str,
    },
    /// [`CheckpointStore::journal`].
    Journal {
        /// The run.
        run_id: &'a str,
    },
    /// [`CheckpointStore::prune`].
    Prune {
        /// The run.
        run_id: &'a str,
        /// Checkpoints to keep.
        keep_latest: usize,
    },
    /// [`CheckpointStore::prune_older_than`].
    PruneOlderThan {
        /// The age beyond which runs go.
        age: Duration,
    },
    /// [`CheckpointStore::exists`].
    Exists {
        /// The run.
        run_id: &'a str,
    },
}

impl StoreCall<'_> {
    /// Whether the call writes: a save or a journal entry, what a full disk refuses.
    /// (Pruning only removes.)
    pub fn writes(&self) -> bool {
        matches!(self, StoreCall::Save(_) | StoreCall::RecordJournal { .. })
    }
}

/// What an [`InterceptedStore`] shows each call to.
type Hook = dyn Fn(StoreCall<'_>) -> Result<(), CheckpointError> + Send + Sync;

/// A [`CheckpointStore`] that shows every call to a hook, then passes it on to another
/// store, unless the hook returns an error: the call then fails with it and the other
/// store never sees it. For tests of what a run does when its store fails part way, and
/// of how often it asks its store.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use agent_runtime::checkpoint::testing::{InterceptedStore, StoreCall};
/// use agent_runtime::checkpoint::{Checkpoint, CheckpointError, CheckpointStore, InMemoryCheckpointStore};
///
/// let reads = Arc::new(AtomicUsize::new(0));
/// let counted = reads.clone();
/// // The disk fills up after the first checkpoint; reads are counted.
/// let store = InterceptedStore::new(Arc::new(InMemoryCheckpointStore::new()), move |call| match call {
///     StoreCall::Save(checkpoint) if checkpoint.seq > 0 => {
///         Err(CheckpointError::Backend("disk full".into()))
///     }
///     StoreCall::Latest { .. } => {
///         counted.fetch_add(1, Ordering::SeqCst);
///         Ok(())
///     }
///     _ => Ok(()),
/// });
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let state = agent_runtime::checkpoint::JsonText::of(&serde_json::json!({}))?;
/// store.save(&Checkpoint::new("run", 0, "start", state.clone())).await?;
/// let full = store.save(&Checkpoint::new("run", 1, "next", state)).await;
/// assert!(matches!(full, Err(CheckpointError::Backend(reason)) if reason == "disk full"));
/// assert_eq!(store.latest("run").await?.map(|c| c.seq), Some(0));
/// assert_eq!(reads.load(Ordering::SeqCst), 1);
/// # Ok::<(), CheckpointError>(())
/// # }).unwrap();
/// ```
pub struct InterceptedStore {
    inner: Arc<dyn CheckpointStore>,
    hook: Box<Hook>,
}

impl InterceptedStore {
    /// `inner`, with `hook` shown every call first.
    pub fn new(
        inner: Arc<dyn CheckpointStore>,
        hook: impl Fn(StoreCall<'_>) -> Result<(), CheckpointError> + Send + Sync + 'static,
    ) -> Self {
        InterceptedStore {
            inner,
            hook: Box::new(hook),
        }
    }

    /// The store the calls go on to.
    pub fn inner(&self) -> &Arc<dyn CheckpointStore> {
        &self.inner
    }
}

impl fmt::Debug for InterceptedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InterceptedStore").finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl CheckpointStore for InterceptedStore {
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        (self.hook)(StoreCall::Save(checkpoint))?;
        self.inner.save(checkpoint).await
    }

    async fn latest(&self, run_id: &str) -> Result<Option<Checkpoint>, CheckpointError> {
        (self.hook)(StoreCall::Latest { run_id })?;
        self.inner.latest(run_id).await
    }

    async fn list(&self, run_id: &str) -> Result<Vec<Checkpoint>, CheckpointError> {
        (self.hook)(StoreCall::List { run_id })?;
        self.inner.list(run_id).await
    }

    async fn record_journal(
        &self,
        run_id: &str,
        key: &str,
        value: Value,
    ) -> Result<(), CheckpointError> {
        (self.hook)(StoreCall::RecordJournal { run_id, key })?;
        self.inner.record_journal(run_id, key, value).await
    }

    async fn journal(&self, run_id: &str) -> Result<BTreeMap<String, Value>, CheckpointError> {
        (self.hook)(StoreCall::Journal { run_id })?;
        self.inner.journal(run_id).await
    }

    async fn prune(&self, run_id: &str, keep_latest: usize) -> Result<usize, CheckpointError> {
        (self.hook)(StoreCall::Prune {
            run_id,
            keep_latest,
        })?;
        self.inner.prune(run_id, keep_latest).await
    }

    async fn prune_older_than(&self, age: Duration) -> Result<usize, CheckpointError> {
        (self.hook)(StoreCall::PruneOlderThan { age })?;
        self.inner.prune_older_than(age).await
    }

    async fn exists(&self, run_id: &str) -> Result<bool, CheckpointError> {
        (self.hook)(StoreCall::Exists { run_id })?;
        self.inner.exists(run_id).await
    }
}
