//! A session whose store fails under it stops at its last checkpoint instead of running on
//! past a write nobody will see: an event, a gate, a checkpoint or a journal entry the
//! store refused parks the run (nothing of it is finished), and the run is taken up again
//! from the store once it answers: by this instance after a pause, or by the run queue's
//! next worker.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agent_runtime::checkpoint::{Checkpoint, CheckpointError, CheckpointStore};
use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::resume::Relaunch;
use crate::server::AgentServer;

/// Whether a run's store failed it, and how to stop the run when it does.
#[derive(Debug)]
pub(crate) struct StoreFailure {
    session: String,
    /// The run's park flag and cancellation ([`LiveSession`](crate::server::LiveSession)).
    parked: Arc<AtomicBool>,
    cancel: CancellationToken,
    reason: OnceLock<String>,
}

impl StoreFailure {
    pub(crate) fn new(session: &str, parked: Arc<AtomicBool>, cancel: CancellationToken) -> Self {
        StoreFailure {
            session: session.to_owned(),
            parked,
            cancel,
            reason: OnceLock::new(),
        }
    }

    /// The store refused `what` for `reason`: parks the run (once).
    pub(crate) fn failed(&self, what: &str, reason: &str) {
        let first = self.reason.set(format!("{what}: {reason}")).is_ok();
        if first {
            tracing::error!(
                session = %self.session,
                what,
                reason,
                "the store refused a write: the session parks at its last checkpoint and resumes once the store answers"
            );
            self.parked.store(true, Ordering::SeqCst);
            self.cancel.cancel();
        }
    }

    /// Why the store failed the run, if it did.
    pub(crate) fn reason(&self) -> Option<&str> {
        self.reason.get().map(String::as_str)
    }
}

/// A run's checkpoint store: the deployment's, parking the run when it fails.
pub(crate) struct ParkingCheckpoints {
    pub(crate) inner: Arc<dyn CheckpointStore>,
    pub(crate) failure: Arc<StoreFailure>,
}

impl ParkingCheckpoints {
    fn watch<T>(
        &self,
        what: &str,
        result: Result<T, CheckpointError>,
    ) -> Result<T, CheckpointError> {
        if let Err(CheckpointError::Backend(reason)) = &result {
            self.failure.failed(what, reason);
        }
        result
    }
}

#[async_trait]
impl CheckpointStore for ParkingCheckpoints {
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        self.watch("a checkpoint", self.inner.save(checkpoint).await)
    }

    async fn latest(&self, run_id: &str) -> Result<Option<Checkpoint>, CheckpointError> {
        self.watch("reading a checkpoint", self.inner.latest(run_id).await)
    }

    async fn list(&self, run_id: &str) -> Result<Vec<Checkpoint>, CheckpointError> {
        self.watch("reading checkpoints", self.inner.list(run_id).await)
    }

    async fn record_journal(
        &self,
        run_id: &str,
        key: &str,
        value: Value,
    ) -> Result<(), CheckpointError> {
        let recorded = self.inner.record_journal(run_id, key, value).await;
        self.watch("a journal entry", recorded)
    }

    async fn journal(&self, run_id: &str) -> Result<BTreeMap<String, Value>, CheckpointError> {
        self.watch("reading the journal", self.inner.journal(run_id).await)
    }

    async fn prune(&self, run_id: &str, keep_latest: usize) -> Result<usize, CheckpointError> {
        self.inner.prune(run_id, keep_latest).await
    }

    async fn prune_older_than(&self, age: Duration) -> Result<usize, CheckpointError> {
        self.inner.prune_older_than(age).await
    }

    async fn exists(&self, run_id: &str) -> Result<bool, CheckpointError> {
        self.watch("reading a checkpoint", self.inner.exists(run_id).await)
    }
}

/// The first pause before a run its store failed is taken up again; it doubles up to
/// [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(500);
const MAX_PAUSE: Duration = Duration::from_secs(30);

impl AgentServer {
    /// Takes up again, here, a session whose run its store failed: after a pause (longer
    /// each time the store still fails), from what the store holds, until it runs, ends,
    /// or the server shuts down. Boxed: it launches runs, and is called where a run ends.
    pub(crate) fn resume_after_store_failure(
        self,
        product: String,
        id: String,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let retaking = Arc::clone(&self.inner.retaking);
            lock(&retaking).insert(id.clone());
            self.retake(&product, &id).await;
            lock(&retaking).remove(&id);
        })
    }

    /// The waits and tries of [`resume_after_store_failure`](Self::resume_after_store_failure).
    async fn retake(&self, product: &str, id: &str) {
        let mut pause = FIRST_PAUSE;
        loop {
            // A shutdown ends the wait: the next start resumes the session.
            let woke = tokio::time::Instant::now() + pause;
            while tokio::time::Instant::now() < woke {
                if self.inner.shutting_down.load(Ordering::SeqCst) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100).min(pause)).await;
            }
            pause = (pause * 2).min(MAX_PAUSE);
            let Some(hosted) = self.product(product).cloned() else {
                return;
            };
            let record = match self.inner.store.get(id).await {
                Ok(Some(record)) if !record.status.is_finished() => record,
                Ok(_) => return,
                Err(error) => {
                    tracing::warn!(session = %id, %error, "the store still fails: the session waits");
                    continue;
                }
            };
            match self.relaunch(&hosted, record).await {
                Ok(Relaunch::Started | Relaunch::Running | Relaunch::GaveUp(_)) => return,
                Err(error) => {
                    tracing::warn!(session = %id, %error, "the store still fails: the session waits");
                }
            }
        }
    }

    /// Whether the session waits here to be taken up again after its store failed it.
    pub(crate) fn is_retaking(&self, id: &str) -> bool {
        lock(&self.inner.retaking).contains(id)
    }
}

fn lock(set: &Mutex<HashSet<String>>) -> std::sync::MutexGuard<'_, HashSet<String>> {
    set.lock().unwrap_or_else(|p| p.into_inner())
}
