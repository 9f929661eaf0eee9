//! Running a session again from what the store holds: after a restart
//! ([`AgentServer::resume_unfinished`]), or when a worker takes a run from the queue
//! (another instance died running it, or it was just started).

use std::collections::HashSet;
use std::sync::Arc;

use agent_runtime::sessions::{SessionOutcome, SessionRecord, StoreError};
use serde_json::Value;

use crate::hosted::Hosted;
use crate::launch::Launch;
use crate::server::AgentServer;
use crate::writer::{GATE_ANSWERED, GATE_OPEN, is_reserved_type, terminal_event};

/// Why [`AgentServer::relaunch`] runs a session again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relaunching {
    /// After a restart, or taken from the run queue: a session relaunched too often
    /// without progress is given up (its run may be what brings the process down).
    Restart,
    /// Its run parked because a backend failed it or its model could not be reached:
    /// not its own fault, never given up for it.
    AfterFault,
}

/// What [`AgentServer::relaunch`] did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Relaunch {
    /// The run started here.
    Started,
    /// It runs already (here, or another instance holds its lease).
    Running,
    /// It was relaunched too often without progress: ended `failed` with this reason.
    GaveUp(String),
}

impl AgentServer {
    /// After a restart: reruns every unfinished session (running or waiting) of every
    /// hosted product whose run is not live here already, with its saved state and the
    /// answers of its answered gates restored. Gates that were pending stay listed (and
    /// answerable) until the rerun reaches them again. Returns how many runs it started.
    pub async fn resume_unfinished(&self) -> Result<usize, StoreError> {
        let mut resumed = 0;
        for product in &self.inner.products {
            for record in self.inner.store.unfinished(product.name()).await? {
                if self.inner.live.get(&record.id).is_some() {
                    continue;
                }
                if self.relaunch(product, record, Relaunching::Restart).await? == Relaunch::Started
                {
                    resumed += 1;
                }
            }
        }
        Ok(resumed)
    }

    /// Runs an unfinished session from the store: its saved state, its gates (answered
    /// ones restored), the product events it emitted (so a rerun does not repeat them).
    /// On a [`Restart`](Relaunching::Restart), counts the relaunches that found no new
    /// event and gives up past
    /// [`ServerConfig::max_resume_attempts`](crate::ServerConfig::max_resume_attempts);
    /// a relaunch after a fault is not counted.
    pub(crate) async fn relaunch(
        &self,
        product: &Arc<dyn Hosted>,
        record: SessionRecord,
        why: Relaunching,
    ) -> Result<Relaunch, StoreError> {
        let store = &self.inner.store;
        let stored = store.events_after(&record.id, 0).await?;
        let attempts = match why {
            Relaunching::Restart => store.note_resume(&record.id, stored.len() as u64).await?,
            Relaunching::AfterFault => 0,
        };
        let limit = self.inner.config.max_resume_attempts;
        if attempts > limit {
            let reason =
                format!("gave up: {limit} restarts in a row resumed the session without progress");
            tracing::warn!(session = %record.id, %reason, "not resuming");
            self.end_not_running(&record.id, SessionOutcome::Failed(reason.clone()))
                .await?;
            return Ok(Relaunch::GaveUp(reason));
        }
        let gates = store.gates(&record.id).await?;
        let announced_as = |kind: &str| -> HashSet<String> {
            stored
                .iter()
                .filter(|stored| stored.event.get("type").and_then(Value::as_str) == Some(kind))
                .filter_map(|stored| stored.event.get("gate_id").and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        };
        let announced = announced_as(GATE_OPEN);
        let answers_announced = announced_as(GATE_ANSWERED);
        let unannounced_answers = gates
            .iter()
            .filter(|gate| gate.answer.is_some() && announced.contains(&gate.id))
            .filter(|gate| !answers_announced.contains(&gate.id))
            .map(|gate| gate.id.clone())
            .collect();
        let replayed: Vec<Value> = stored
            .into_iter()
            .map(|stored| stored.event)
            .filter(|event| {
                event
                    .get("type")
                    .and_then(Value::as_str)
                    .is_none_or(|kind| !is_reserved_type(kind))
            })
            .collect();
        tracing::info!(session = %record.id, product = product.name(), "resuming");
        let launched = self
            .launch(Launch {
                product: Arc::clone(product),
                id: record.id,
                request: record.request,
                status: record.status,
                gates,
                replayed,
                announced,
                unannounced_answers,
                slot: None,
                tenant_slot: None,
            })
            .await?;
        Ok(if launched {
            Relaunch::Started
        } else {
            Relaunch::Running
        })
    }

    /// Ends a session that no run holds here: its outcome and terminal event, stored.
    pub(crate) async fn end_not_running(
        &self,
        id: &str,
        outcome: SessionOutcome,
    ) -> Result<(), StoreError> {
        self.inner.store.finish(id, outcome.clone()).await?;
        self.append_here(id, terminal_event(&outcome)).await?;
        // Streams following the session (on any instance) end with it.
        self.inner.fanout.close(id);
        Ok(())
    }

    /// Stores an event of a session that no run holds here and sends it to the streams
    /// that follow the session, as a run's writer does.
    pub(crate) async fn append_here(&self, id: &str, event: Value) -> Result<u64, StoreError> {
        let seq = self.inner.store.append_event(id, &event).await?;
        self.inner.fanout.publish(id, seq, Arc::new(event));
        Ok(seq)
    }
}
