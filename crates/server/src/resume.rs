//! Running a session again from what the store holds: after a restart
//! ([`AgentServer::resume_unfinished`]), or when a worker takes a run from the queue
//! (another instance died running it, or it was just started).

use std::sync::Arc;

use agent_runtime::sessions::{SessionOutcome, SessionRecord, StoreError, StoredEvent, StoredGate};
use serde_json::Value;

use crate::hosted::Hosted;
use crate::launch::Launch;
use crate::server::AgentServer;
use crate::writer::{is_reserved_type, terminal_event};

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
    /// It has ended: there is nothing to run.
    Ended,
    /// It was relaunched too often without progress: ended `failed` with this reason.
    GaveUp(String),
}

/// What [`AgentServer::read_to_relaunch`] found.
enum Reread {
    /// The session is unfinished: its record, every event and every gate it has.
    Run {
        record: Box<SessionRecord>,
        events: Vec<StoredEvent>,
        gates: Vec<StoredGate>,
    },
    /// It has ended.
    Ended,
    /// It was relaunched too often without progress: now failed, for this reason.
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
                if self
                    .relaunch(product, &record.id, Relaunching::Restart)
                    .await?
                    == Relaunch::Started
                {
                    resumed += 1;
                }
            }
        }
        Ok(resumed)
    }

    /// Runs an unfinished session from the store: its saved state, its gates (answered
    /// ones restored), the product events it emitted (so a rerun does not repeat them),
    /// all read once the run is claimed ([`claim_run`](Self::claim_run)), so nothing
    /// another run wrote before is missed. On a [`Restart`](Relaunching::Restart), counts
    /// the relaunches that found no new event and gives up past
    /// [`ServerConfig::max_resume_attempts`](crate::ServerConfig::max_resume_attempts);
    /// a relaunch after a fault is not counted.
    pub(crate) async fn relaunch(
        &self,
        product: &Arc<dyn Hosted>,
        id: &str,
        why: Relaunching,
    ) -> Result<Relaunch, StoreError> {
        let Some(claim) = self.claim_run(id).await? else {
            return Ok(Relaunch::Running);
        };
        let (record, stored, gates) = match self.read_to_relaunch(id, why).await {
            Ok(Reread::Run {
                record,
                events,
                gates,
            }) => (record, events, gates),
            Ok(Reread::Ended) => {
                self.release_claim(claim).await;
                return Ok(Relaunch::Ended);
            }
            Ok(Reread::GaveUp(reason)) => {
                self.release_claim(claim).await;
                return Ok(Relaunch::GaveUp(reason));
            }
            Err(error) => {
                self.release_claim(claim).await;
                return Err(error);
            }
        };
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
        tracing::info!(session = %id, product = product.name(), "resuming");
        self.launch(Launch {
            product: Arc::clone(product),
            claim,
            request: record.request,
            tenant: record.tenant,
            status: record.status,
            gates,
            replayed,
            slot: None,
            tenant_slot: None,
        })
        .await?;
        Ok(Relaunch::Started)
    }

    /// The session, its events and gates as a claimed relaunch finds them; on a restart, the
    /// relaunch counted, and the session failed when it was relaunched too often without
    /// progress.
    async fn read_to_relaunch(&self, id: &str, why: Relaunching) -> Result<Reread, StoreError> {
        let store = &self.inner.store;
        let record = match store.get(id).await? {
            Some(record) if !record.status.is_finished() => record,
            _ => return Ok(Reread::Ended),
        };
        let events = store.events_after(id, 0).await?;
        let attempts = match why {
            Relaunching::Restart => store.note_resume(id, events.len() as u64).await?,
            Relaunching::AfterFault => 0,
        };
        let limit = self.inner.config.max_resume_attempts;
        if attempts > limit {
            let reason =
                format!("gave up: {limit} restarts in a row resumed the session without progress");
            tracing::warn!(session = %id, %reason, "not resuming");
            self.end_not_running(id, SessionOutcome::Failed(reason.clone()))
                .await?;
            return Ok(Reread::GaveUp(reason));
        }
        let gates = store.gates(id).await?;
        Ok(Reread::Run {
            record: Box::new(record),
            events,
            gates,
        })
    }

    /// Ends a session that no run holds here: its outcome and terminal event, stored.
    pub(crate) async fn end_not_running(
        &self,
        id: &str,
        outcome: SessionOutcome,
    ) -> Result<(), StoreError> {
        let terminal = terminal_event(&outcome);
        if let Some(seq) = self.inner.store.finish(id, outcome, &terminal).await? {
            self.inner.fanout.publish(id, seq, Arc::new(terminal));
        }
        // Streams following the session (on any instance) end with it.
        self.inner.fanout.close(id);
        Ok(())
    }
}
