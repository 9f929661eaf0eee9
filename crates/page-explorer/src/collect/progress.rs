//! Where a collection stands, kept in the runtime's [`CheckpointStore`] after every listing
//! page and every detail page, so that an interrupted collection resumes where it stopped
//! instead of starting again.

use std::collections::VecDeque;
use std::sync::Arc;

use agent_runtime::checkpoint::{Checkpoint, CheckpointError, CheckpointStore};
use serde::{Deserialize, Serialize};

use super::{CollectEnd, CollectedJob, PageError};

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
    /// The checkpoint is not one a collection writes.
    #[error("checkpoint {seq} of {run_id:?} is not a collection's: {reason}")]
    NotACollection {
        /// The run.
        run_id: String,
        /// The checkpoint.
        seq: u64,
        /// What did not read.
        reason: String,
    },
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

impl Stage {
    /// The checkpoint node of the stage.
    fn node(&self) -> &'static str {
        match self {
            Stage::Listings { .. } => "listings",
            Stage::Details { .. } => "details",
            Stage::Done { .. } => "done",
        }
    }
}

/// What a checkpoint holds: everything collected so far and the stage to go on with.
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

impl Progress {
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

    /// Removes the collection's checkpoints, to start it afresh.
    pub(crate) async fn clear(&self) -> Result<(), CollectError> {
        self.store.prune(&self.run_id, 0).await?;
        Ok(())
    }

    /// The latest checkpoint's sequence number and what it holds.
    pub(crate) async fn load(&self) -> Result<(u64, Progress), CollectError> {
        let checkpoint = self.store.latest(&self.run_id).await?.ok_or_else(|| {
            CollectError::NothingToResume {
                run_id: self.run_id.clone(),
            }
        })?;
        checkpoint.check_version()?;
        let progress = serde_json::from_value(checkpoint.state).map_err(|error| {
            CollectError::NotACollection {
                run_id: self.run_id.clone(),
                seq: checkpoint.seq,
                reason: error.to_string(),
            }
        })?;
        Ok((checkpoint.seq, progress))
    }
}

/// Writes a collection's checkpoints, numbering them.
pub(crate) struct Saver {
    checkpoints: CollectCheckpoints,
    next_seq: u64,
}

impl Saver {
    /// A saver whose first checkpoint is number `next_seq`.
    pub(crate) fn new(checkpoints: CollectCheckpoints, next_seq: u64) -> Self {
        Saver {
            checkpoints,
            next_seq,
        }
    }

    /// Saves `progress`: resumable at its stage, finished at `Done`.
    pub(crate) async fn save(&mut self, progress: &Progress) -> Result<(), CollectError> {
        let state = serde_json::to_value(progress).map_err(CheckpointError::from)?;
        let node = progress.stage.node();
        let mut checkpoint = Checkpoint::new(&self.checkpoints.run_id, self.next_seq, node, state);
        if !matches!(progress.stage, Stage::Done { .. }) {
            checkpoint = checkpoint.with_next(node);
        }
        self.checkpoints.store.save(&checkpoint).await?;
        self.next_seq += 1;
        Ok(())
    }
}
