//! A session whose backends fail under it stops at its last checkpoint instead of running
//! on past a write nobody will see, or failing for a fault that is not its own: an event,
//! a gate, a checkpoint or a journal entry the store refused, or a message the agent bus
//! could not carry, parks the run (nothing of it is finished), and the run is taken up
//! again from the store once it answers: by this instance after a pause, or by the run
//! queue's next worker. A run that ends in an error after its model could not be reached
//! ([`ModelOutages`]) parks and is taken up again in the same way.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agent_llm::LlmError;
use agent_runtime::ModelOutages;
use agent_runtime::bus::{AgentBus, AgentMessage, BusError, MessageStream, OutgoingMessage};
use agent_runtime::checkpoint::{Checkpoint, CheckpointError, CheckpointStore};
use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::resume::{Relaunch, Relaunching};
use crate::server::AgentServer;
use crate::writer::Write;

/// Whether a run's backends (its store, its agent bus) failed it, and how to stop the run
/// when they do; and whether its model could not be reached.
#[derive(Debug)]
pub(crate) struct BackendFailure {
    session: String,
    /// The run's park flag and cancellation ([`LiveSession`](crate::server::LiveSession)).
    parked: Arc<AtomicBool>,
    cancel: CancellationToken,
    reason: OnceLock<String>,
    /// The last model outage the run reported: the run goes on (its product may cope),
    /// and parks if it then ends in an error.
    model_outage: Mutex<Option<String>>,
}

impl BackendFailure {
    pub(crate) fn new(session: &str, parked: Arc<AtomicBool>, cancel: CancellationToken) -> Self {
        BackendFailure {
            session: session.to_owned(),
            parked,
            cancel,
            reason: OnceLock::new(),
            model_outage: Mutex::new(None),
        }
    }

    /// A backend refused `what` for `reason`: parks the run (once).
    pub(crate) fn failed(&self, what: &str, reason: &str) {
        let first = self.reason.set(format!("{what}: {reason}")).is_ok();
        if first {
            tracing::error!(
                session = %self.session,
                what,
                reason,
                "a backend failed the run: the session parks at its last checkpoint and resumes once the store answers"
            );
            self.parked.store(true, Ordering::SeqCst);
            self.cancel.cancel();
        }
    }

    /// Why a backend failed the run, if one did.
    pub(crate) fn reason(&self) -> Option<&str> {
        self.reason.get().map(String::as_str)
    }

    /// Whether a backend failed the run or its model could not be reached: a run that
    /// then ends in an error parks, to be taken up again.
    pub(crate) fn is_fault(&self) -> bool {
        self.reason().is_some() || self.model_outage().is_some()
    }

    /// The last model outage the run reported, if any.
    pub(crate) fn model_outage(&self) -> Option<String> {
        self.model_outage
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl ModelOutages for BackendFailure {
    fn model_unreachable(&self, error: &LlmError) {
        tracing::warn!(session = %self.session, %error, "the model could not be reached");
        *self.model_outage.lock().unwrap_or_else(|p| p.into_inner()) = Some(error.to_string());
    }
}

/// A run's checkpoint store: the deployment's, parking the run when it fails. A
/// checkpoint is saved only once every event emitted before it is stored: a run never
/// resumes past an event its store refused.
pub(crate) struct ParkingCheckpoints {
    pub(crate) inner: Arc<dyn CheckpointStore>,
    pub(crate) failure: Arc<BackendFailure>,
    /// The session's writer, flushed before each checkpoint.
    pub(crate) writer: mpsc::UnboundedSender<Write>,
}

impl ParkingCheckpoints {
    /// Waits until the writer has written every event sent before; refuses when the
    /// store failed any of them.
    async fn events_stored(&self) -> Result<(), CheckpointError> {
        let (done, flushed) = oneshot::channel();
        if self.writer.send(Write::Flush(done)).is_ok() {
            let _ = flushed.await;
        }
        match self.failure.reason() {
            Some(reason) => Err(CheckpointError::Backend(format!(
                "not saved: the session's events before it were not all stored ({reason})"
            ))),
            None => Ok(()),
        }
    }

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
        self.events_stored().await?;
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

/// A run's agent bus: the deployment's, parking the run when the bus itself fails (not
/// when a message is undeliverable or a request times out: those are the agents' to
/// handle).
pub(crate) struct ParkingBus {
    pub(crate) inner: Arc<dyn AgentBus>,
    pub(crate) failure: Arc<BackendFailure>,
}

impl ParkingBus {
    fn watch<T>(&self, result: Result<T, BusError>) -> Result<T, BusError> {
        if let Err(BusError::Backend(reason)) = &result {
            self.failure.failed("the agent bus", reason);
        }
        result
    }
}

#[async_trait]
impl AgentBus for ParkingBus {
    async fn subscribe(&self, domain: &str, agent: &str) -> Result<MessageStream, BusError> {
        self.watch(self.inner.subscribe(domain, agent).await)
    }

    async fn unsubscribe(&self, domain: &str, agent: &str) -> Result<(), BusError> {
        self.watch(self.inner.unsubscribe(domain, agent).await)
    }

    async fn send(&self, message: OutgoingMessage) -> Result<AgentMessage, BusError> {
        self.watch(self.inner.send(message).await)
    }

    async fn request(
        &self,
        message: OutgoingMessage,
        timeout: Duration,
    ) -> Result<AgentMessage, BusError> {
        self.watch(self.inner.request(message, timeout).await)
    }

    async fn log(&self) -> Result<Vec<AgentMessage>, BusError> {
        self.watch(self.inner.log().await)
    }

    async fn reset(&self) -> Result<(), BusError> {
        self.watch(self.inner.reset().await)
    }
}

/// The first pause before a run its backends failed is taken up again; it doubles up to
/// [`MAX_PAUSE`].
pub(crate) const FIRST_PAUSE: Duration = Duration::from_millis(500);
pub(crate) const MAX_PAUSE: Duration = Duration::from_secs(30);

impl AgentServer {
    /// Takes up again, here, a session whose run its backends failed, or whose model
    /// could not be reached: after a pause (longer each time the store still fails or the
    /// run parks again), from what the store holds, until it ends, another instance runs
    /// it, or the server shuts down. A fault is not the session's own: however often it
    /// parks, it is not given up. Boxed: it launches runs, and is called where a run
    /// ends.
    pub(crate) fn resume_after_backend_failure(
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

    /// The waits and tries of [`resume_after_backend_failure`](Self::resume_after_backend_failure).
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
            match self
                .relaunch(&hosted, record, Relaunching::AfterFault)
                .await
            {
                Ok(Relaunch::Started) => {
                    // Its end decides: finished, or parked by a fault again (then the next
                    // try waits longer).
                    if let Some(live) = self.inner.live.get(id) {
                        live.ended.cancelled().await;
                    }
                }
                Ok(Relaunch::Running | Relaunch::GaveUp(_)) => return,
                Err(error) => {
                    tracing::warn!(session = %id, %error, "the store still fails: the session waits");
                }
            }
        }
    }

    /// Whether the session waits here to be taken up again after its backends failed it.
    pub(crate) fn is_retaking(&self, id: &str) -> bool {
        lock(&self.inner.retaking).contains(id)
    }
}

fn lock(set: &Mutex<HashSet<String>>) -> std::sync::MutexGuard<'_, HashSet<String>> {
    set.lock().unwrap_or_else(|p| p.into_inner())
}
