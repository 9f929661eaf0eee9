//! Starting a session's run: its writer, its handle, its lease kept while it runs, the
//! run itself on a task of its own (a panic fails the session), and what is written when
//! it ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_runtime::sessions::{SessionOutcome, SessionStatus, StoreError, StoredGate};
use agent_runtime::{GateRegistry, ModelOutages};
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::backend_failure::BackendFailure;
use crate::hosted::Hosted;
use crate::live::{LiveSession, StartClaim};
use crate::parking::{ParkingBus, ParkingCheckpoints};
use crate::product::{HandleParts, SessionHandle};
use crate::prometheus::RunningSession;
use crate::server::{AgentServer, CountedSlot};
use crate::writer::{Listener, RestoredGates, Write, Writer};

/// What a run starts from.
pub(crate) struct Launch {
    pub(crate) product: Arc<dyn Hosted>,
    /// The right to start it here, with its lease held ([`AgentServer::claim_run`]).
    pub(crate) claim: StartClaim,
    pub(crate) request: Value,
    /// The tenant its credential named, if any (recorded on the run's span).
    pub(crate) tenant: Option<String>,
    pub(crate) status: SessionStatus,
    /// Its gates as stored once the claim was taken: answered ones are restored,
    /// pending ones stay listed (and answerable) until the run reopens them.
    pub(crate) gates: Vec<StoredGate>,
    /// Product events stored before this run, in order.
    pub(crate) replayed: Vec<Value>,
    /// The session's place under [`ServerConfig::max_live_sessions`], held until the run
    /// ends; taken here when the start did not take one.
    ///
    /// [`ServerConfig::max_live_sessions`]: crate::ServerConfig::max_live_sessions
    pub(crate) slot: Option<OwnedSemaphorePermit>,
    /// The session's place among its tenant's
    /// ([`ServerConfig::max_sessions_per_tenant`](crate::ServerConfig::max_sessions_per_tenant)),
    /// held until the run ends; only a start takes one.
    pub(crate) tenant_slot: Option<CountedSlot>,
}

impl AgentServer {
    /// Starts the run of a session just created, holding its places (among the live
    /// sessions, among its tenant's) while it runs.
    pub(crate) async fn start_run(
        &self,
        product: Arc<dyn Hosted>,
        id: String,
        request: Value,
        tenant: Option<String>,
        (slot, tenant_slot): (OwnedSemaphorePermit, Option<CountedSlot>),
    ) -> Result<(), StoreError> {
        if let Some(queue) = &self.inner.run_queue {
            return queue.enqueue(product.name(), &id).await;
        }
        let Some(claim) = self.claim_run(&id).await? else {
            return Ok(());
        };
        self.launch(Launch {
            product,
            claim,
            request,
            tenant,
            status: SessionStatus::Running,
            gates: Vec::new(),
            replayed: Vec::new(),
            slot: Some(slot),
            tenant_slot,
        })
        .await
    }

    /// The right to start a run of session `id` here: none is live or being started
    /// here, the server is not shutting down, and this instance took the session's
    /// lease. From then on no other run of the session writes to the store (one that
    /// ended wrote everything before giving its lease back), so the run starts from what
    /// the store holds *now*. `None` when a run is live or starting, here or elsewhere.
    pub(crate) async fn claim_run(&self, id: &str) -> Result<Option<StartClaim>, StoreError> {
        if self.inner.shutting_down.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let Some(claim) = self.inner.live.claim(id) else {
            return Ok(None);
        };
        let ttl = self.inner.config.lease_ttl;
        if !self
            .inner
            .leases
            .acquire(id, &self.inner.instance, ttl)
            .await?
        {
            tracing::info!(session = %id, "another instance runs it");
            return Ok(None);
        }
        Ok(Some(claim))
    }

    /// Gives back a claim no run was started under, with its lease.
    pub(crate) async fn release_claim(&self, claim: StartClaim) {
        let id = claim.session();
        if let Err(error) = self.inner.leases.release(id, &self.inner.instance).await {
            tracing::warn!(session = %id, %error, "lease not released");
        }
    }

    /// Starts the run its claim allows.
    pub(crate) async fn launch(&self, launch: Launch) -> Result<(), StoreError> {
        let Launch {
            product,
            claim,
            request,
            tenant,
            status,
            gates: stored_gates,
            replayed,
            slot,
            tenant_slot,
        } = launch;
        let id = claim.session().to_owned();
        // Resumed runs are not refused: they take a place if there is one.
        let slot = slot.or_else(|| {
            Arc::clone(&self.inner.session_slots)
                .try_acquire_owned()
                .ok()
        });
        let (leases, instance) = (Arc::clone(&self.inner.leases), self.inner.instance.clone());
        let ttl = self.inner.config.lease_ttl;
        let (writer_tx, writer_rx) = mpsc::unbounded_channel();
        let restored = Arc::new(RestoredGates::default());
        let parked = Arc::new(AtomicBool::new(false));
        let cancel = CancellationToken::new();
        let failure = Arc::new(BackendFailure::new(
            &id,
            Arc::clone(&parked),
            cancel.clone(),
        ));
        let gates = GateRegistry::with_listener(Arc::new(Listener {
            writer: writer_tx.clone(),
            restored: Arc::clone(&restored),
            parked: Arc::clone(&parked),
        }));
        let mut answers = Vec::new();
        {
            let mut pending = restored.lock();
            for gate in stored_gates {
                match gate.answer {
                    Some(answer) => answers.push((gate.id, answer)),
                    None if gate.closed.is_some() => {}
                    None => {
                        pending.insert(gate.id.clone(), gate);
                    }
                }
            }
        }
        gates.restore(answers);
        let live = Arc::new(LiveSession {
            gates: gates.clone(),
            writer: writer_tx.clone(),
            restored: Arc::clone(&restored),
            respond_lock: tokio::sync::Mutex::new(()),
            cancel: cancel.clone(),
            cancelled: Mutex::new(None),
            ended: CancellationToken::new(),
            parked,
            failure: Arc::clone(&failure),
        });
        let this_run = Arc::clone(&live);
        // The claim ensures no run of it is live here.
        self.inner.live.lock().insert(id.clone(), live);
        drop(claim);
        // Other instances reach the run from now on.
        let control = match self.serve_control(&id).await {
            Ok(task) => task,
            Err(error) => {
                // The lease first: a run claimed once this one is gone takes it afresh.
                if let Err(error) = leases.release(&id, &instance).await {
                    tracing::warn!(%error, "lease not released");
                }
                self.inner.live.lock().remove(&id);
                return Err(error);
            }
        };

        let writer = Writer {
            store: Arc::clone(&self.inner.store),
            session: id.clone(),
            product: product.name().to_owned(),
            fanout: Arc::clone(&self.inner.fanout),
            gates: gates.clone(),
            restored,
            status,
            max_event_bytes: self.inner.config.max_event_bytes,
            failure: Arc::clone(&failure),
        };
        let span = tracing::info_span!(
            "session_run",
            session.id = %id,
            product = product.name(),
            tenant.id = tenant.as_deref().unwrap_or_default(),
            resumed = !replayed.is_empty()
        );
        let tasks = &self.inner.tasks;
        tasks.spawn(writer.run(writer_rx).instrument(span.clone()));

        let handle = SessionHandle::new(HandleParts {
            id: id.clone(),
            product: product.name().to_owned(),
            request,
            gates,
            writer: writer_tx.clone(),
            cancel: cancel.clone(),
            // A checkpoint the store refuses parks the run, as a refused event does.
            checkpoints: Arc::new(ParkingCheckpoints {
                inner: Arc::clone(&self.inner.checkpoints),
                failure: Arc::clone(&failure),
                writer: writer_tx.clone(),
            }),
            bus: Arc::new(ParkingBus {
                inner: (self.inner.buses)(&id),
                failure: Arc::clone(&failure),
            }),
            outages: Arc::clone(&failure) as Arc<dyn ModelOutages>,
            replayed,
        });
        // Renew the lease while the run goes on; a lost lease parks the run.
        let renewing = {
            let (leases, id, instance, run) = (
                Arc::clone(&leases),
                id.clone(),
                instance.clone(),
                Arc::clone(&this_run),
            );
            tasks.spawn(async move {
                loop {
                    tokio::time::sleep(ttl / 3).await;
                    match leases.renew(&id, &instance, ttl).await {
                        Ok(true) => {}
                        Ok(false) => {
                            tracing::warn!(session = %id, "lease lost: parking the run");
                            run.park();
                            return;
                        }
                        Err(error) => tracing::warn!(session = %id, %error, "lease not renewed"),
                    }
                }
            })
        };
        let live_map = Arc::clone(&self.inner.live);
        let run_tasks = tasks.clone();
        // Without a run queue, a run its store failed is taken up again here.
        let retaker = self.inner.run_queue.is_none().then(|| self.clone());
        let product_name = product.name().to_owned();
        tasks.spawn(
            async move {
                tracing::info!("run started");
                let running = RunningSession::start(&product_name);
                // The run is its own task, so a panic is caught by its JoinHandle.
                let run =
                    run_tasks.spawn(async move { product.run(handle).await }.in_current_span());
                let outcome = match run.await {
                    Ok(outcome) => outcome,
                    Err(error) if error.is_panic() => {
                        Err(panic_message(error.into_panic().as_ref()))
                    }
                    Err(_) => Err("the run was cancelled".to_owned()),
                };
                // A run that failed once a gate had timed out was abandoned by its user.
                let outcome = match (this_run.cancel_reason(), outcome) {
                    (Some(reason), _) => SessionOutcome::Cancelled(reason),
                    (None, Ok(result)) => SessionOutcome::Complete(result),
                    (None, Err(error)) if !this_run.gates.expired().is_empty() => {
                        SessionOutcome::Expired(error)
                    }
                    (None, Err(error)) => SessionOutcome::Failed(error),
                };
                // A run that fails after its backends failed it, or after its model could
                // not be reached, failed for a fault not its own: it parks.
                let model_outage = this_run.failure.model_outage();
                let parked = (this_run.parked.load(Ordering::SeqCst) || model_outage.is_some())
                    && matches!(outcome, SessionOutcome::Failed(_));
                if parked {
                    // The gates its stopping closes stay pending for the run taken up again.
                    this_run.parked.store(true, Ordering::SeqCst);
                }
                running.ended(match &outcome {
                    _ if parked => "parked",
                    SessionOutcome::Complete(_) => "complete",
                    SessionOutcome::Failed(_) => "failed",
                    SessionOutcome::Cancelled(_) => "cancelled",
                    SessionOutcome::Expired(_) => "expired",
                });
                match &outcome {
                    _ if parked => match &model_outage {
                        Some(outage) => tracing::warn!(%outage, "run parked: its model could not be reached; it is run again later"),
                        None => tracing::info!("run parked"),
                    },
                    SessionOutcome::Complete(_) => tracing::info!("run complete"),
                    SessionOutcome::Failed(error) => tracing::warn!(%error, "run failed"),
                    SessionOutcome::Cancelled(reason) => tracing::info!(%reason, "run cancelled"),
                    SessionOutcome::Expired(reason) => tracing::info!(%reason, "run expired"),
                }
                cancel.cancel();
                let (done, written) = oneshot::channel();
                let last = if parked {
                    Write::Park(done)
                } else {
                    Write::Finish { outcome, done }
                };
                if writer_tx.send(last).is_ok() {
                    let _ = written.await;
                }
                // Parked for a fault, or its ending refused by the store (the writer
                // parked it then): the session is unfinished, and is taken up again.
                let retake = this_run.parked.load(Ordering::SeqCst) && this_run.failure.is_fault();
                renewing.abort();
                control.abort();
                if let Err(error) = leases.release(&id, &instance).await {
                    tracing::warn!(%error, "lease not released");
                }
                live_map.lock().remove(&id);
                drop((slot, tenant_slot));
                this_run.ended.cancel();
                // Unless a retake of this session, waiting for this run, takes it up again.
                if let Some(server) = retaker.filter(|server| retake && !server.is_retaking(&id)) {
                    server.retake_after_fault(product_name, id).await;
                }
            }
            .instrument(span),
        );
        Ok(())
    }
}

/// The message of a caught panic.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let detail = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned());
    format!("the run panicked: {detail}")
}
