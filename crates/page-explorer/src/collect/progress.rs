//! Where a collection stands: the state of its graph (see [`durable`](super::durable)),
//! saved in the runtime's [`CheckpointStore`] after every listing page and every detail
//! page, so that an interrupted collection resumes where it stopped instead of starting
//! again.

use std::collections::VecDeque;
use std::sync::Arc;

use agent_runtime::checkpoint::{CheckpointError, CheckpointStore};
use agent_runtime::graph::GraphError;
use serde::{Deserialize, Serialize};

use super::{CollectEnd, CollectedJob, Collection, PageError};

/// Where a collection keeps its checkpoints: a store and the collection's run id in it.
///
/// ```
/// use std::sync::Arc;
/// use agent_runtime::checkpoint::FileCheckpointStore;
/// use page_explorer::collect::CollectCheckpoints;
///
/// let checkpoints = CollectCheckpoints::new(
///     Arc::new(FileCheckpointStore::new("collect-out/checkpoints")),
///     "collect",
/// );
/// assert_eq!(checkpoints.run_id(), "collect");
/// ```
#[derive(Clone)]
pub struct CollectCheckpoints {
    store: Arc<dyn CheckpointStore>,
    run_id: String,
}

impl std::fmt::Debug for CollectCheckpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CollectCheckpoints")
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

/// What can keep a checkpointed collection from starting or resuming. Once it runs, what
/// goes wrong is recorded in the [`Collection`](super::Collection) instead.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    /// The checkpoint store failed.
    #[error("the collection's checkpoints: {0}")]
    Checkpoint(#[from] CheckpointError),
    /// Resuming was asked for, but the run has no checkpoint.
    #[error("there is no collection {run_id:?} to resume")]
    NothingToResume {
        /// The run asked for.
        run_id: String,
    },
    /// The run stopped for another reason than the collection's own.
    #[error("the collection {run_id:?} stopped: {reason}")]
    Stopped {
        /// The run.
        run_id: String,
        /// Why.
        reason: String,
    },
    /// The collection's graph did not build (a bug).
    #[error("the collection's graph: {0}")]
    Graph(#[from] GraphError),
}

/// The step a checkpoint was taken before (or `Done`): what resuming does next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "snake_case")]
pub(crate) enum Stage {
    /// Reading listings: open `url` (the page shown when `None`) and read it and the pages
    /// after it. `in_place` when the listing grows on one page (load more, infinite
    /// scroll): then it is read again from its start, the jobs already collected skipped.
    Listings { url: Option<String>, in_place: bool },
    /// Every listing is read (the walk ended as `end`); detail pages are left to read.
    Details { end: CollectEnd },
    /// Finished as `end`.
    Done { end: CollectEnd },
}

/// What a checkpoint holds: everything collected so far and the stage to go on with (the
/// graph's state, and its nodes' saved step).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Progress {
    pub(crate) stage: Stage,
    pub(crate) jobs: Vec<CollectedJob>,
    /// Each job's `details_text` (which the jobs do not serialize), in job order.
    pub(crate) details_texts: Vec<String>,
    pub(crate) pages: usize,
    pub(crate) duplicates: usize,
    pub(crate) errors: Vec<PageError>,
    /// The jobs (by index) whose detail page is still to be read.
    pub(crate) detail_pending: VecDeque<usize>,
}

impl Default for Progress {
    /// A collection starting on the page shown.
    fn default() -> Self {
        Progress {
            stage: Stage::Listings {
                url: None,
                in_place: false,
            },
            jobs: Vec::new(),
            details_texts: Vec::new(),
            pages: 1,
            duplicates: 0,
            errors: Vec::new(),
            detail_pending: VecDeque::new(),
        }
    }
}

impl Progress {
    /// The collection as it stands, ended as `end`.
    pub(crate) fn into_collection(mut self, end: CollectEnd, resumed_jobs: usize) -> Collection {
        Collection {
            jobs: self.take_jobs(),
            pages: self.pages,
            duplicates: self.duplicates,
            end,
            errors: self.errors,
            resumed_jobs,
        }
    }

    /// The jobs with their `details_text` put back.
    pub(crate) fn take_jobs(&mut self) -> Vec<CollectedJob> {
        let mut jobs = std::mem::take(&mut self.jobs);
        for (job, text) in jobs.iter_mut().zip(std::mem::take(&mut self.details_texts)) {
            job.details_text = text;
        }
        jobs
    }
}

impl CollectCheckpoints {
    /// Checkpoints of the collection `run_id` in `store`.
    pub fn new(store: Arc<dyn CheckpointStore>, run_id: impl Into<String>) -> Self {
        CollectCheckpoints {
            store,
            run_id: run_id.into(),
        }
    }

    /// The collection's run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Whether the collection has a checkpoint to resume from (finished or not).
    pub async fn exists(&self) -> Result<bool, CollectError> {
        Ok(self.store.exists(&self.run_id).await?)
    }

    /// The store.
    pub(crate) fn store(&self) -> Arc<dyn CheckpointStore> {
        self.store.clone()
    }

    /// Removes the collection's checkpoints, to start it afresh.
    pub(crate) async fn clear(&self) -> Result<(), CollectError> {
        self.store.prune(&self.run_id, 0).await?;
        Ok(())
    }
}
