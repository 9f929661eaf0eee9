//! A run's checkpoint store and agent bus as the server gives them: the deployment's,
//! reporting what they refuse to the run's [`BackendFailure`], which parks the run.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use agent_runtime::bus::{AgentBus, AgentMessage, BusError, MessageStream, OutgoingMessage};
use agent_runtime::checkpoint::{Checkpoint, CheckpointError, CheckpointStore};
use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::backend_failure::BackendFailure;
use crate::writer::Write;

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
