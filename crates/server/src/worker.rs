//! The worker of a server with a run queue: it takes runs from the queue, runs each here
//! (resuming it from the store: a run another instance died running goes on from its
//! checkpoints), tells the queue it is still working while the run goes on, and settles
//! it when the run ends. And the sweep that queues again a session whose run the queue
//! lost.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use agent_runtime::sessions::{QueuedRun, RunTicket, SessionOutcome, StoreError};
use futures::StreamExt;
use tokio::sync::Semaphore;

use crate::resume::{Relaunch, Relaunching};
use crate::retake::{FIRST_PAUSE, MAX_PAUSE};
use crate::server::AgentServer;

/// How long a run waits before it is handed out again when its session is leased by
/// another instance or the store failed.
const RETRY_DELAY: Duration = Duration::from_secs(2);

/// How a taken run ended here.
enum Settle {
    Done,
    Retry(Duration),
    Dead(String),
}

impl AgentServer {
    /// Takes runs from the server's run queue and runs them, until the queue's stream
    /// ends or the server shuts down. [`serve_until`](Self::serve_until) runs it.
    ///
    /// Errors: [`StoreError::Backend`] when the server has no run queue or the queue
    /// cannot be read.
    pub async fn run_worker(&self) -> Result<(), StoreError> {
        let Some(queue) = self.inner.run_queue.clone() else {
            return Err(StoreError::Backend(
                "this server has no run queue".to_owned(),
            ));
        };
        let limit = self.inner.config.max_concurrent_runs;
        let mut runs = queue.take(limit).await?;
        // Without a limit, more permits than runs could ever be live.
        let slots = Arc::new(Semaphore::new(limit.unwrap_or(Semaphore::MAX_PERMITS)));
        tracing::info!(instance = %self.inner.instance, ?limit, "worker taking runs");
        loop {
            // A slot first: at the limit, the next run stays in the queue for others.
            let Ok(slot) = slots.clone().acquire_owned().await else {
                break;
            };
            let Some(run) = runs.next().await else {
                break;
            };
            if self.inner.shutting_down.load(Ordering::SeqCst) {
                // Another instance takes it.
                settle(run.ticket, &run.session, Settle::Retry(Duration::ZERO)).await;
                break;
            }
            let server = self.clone();
            self.inner.tasks.spawn(async move {
                let outcome = server.work_on(&run).await;
                settle(run.ticket, &run.session, outcome).await;
                drop(slot);
            });
        }
        Ok(())
    }

    /// Runs one queued run here, keeping it alive in the queue while it goes on. A run
    /// that parks because a backend failed it or its model could not be reached is taken
    /// up again here after a pause (longer each time), still holding its place in the
    /// queue: a fault that is not the session's own spends none of its deliveries.
    async fn work_on(&self, run: &QueuedRun) -> Settle {
        let store = &self.inner.store;
        let Some(product) = self.product(&run.product).cloned() else {
            return Settle::Dead(format!(
                "no instance that took it hosts product {:?}",
                run.product
            ));
        };
        let mut why = Relaunching::Restart;
        let mut pause = FIRST_PAUSE;
        loop {
            let record = match store.get(&run.session).await {
                Ok(Some(record)) => record,
                Ok(None) => {
                    tracing::warn!(session = %run.session, "a queued run of no session: dropped");
                    return Settle::Done;
                }
                Err(error) => {
                    tracing::warn!(session = %run.session, %error, "the store failed; run put back");
                    return Settle::Retry(RETRY_DELAY);
                }
            };
            if record.status.is_finished() {
                return Settle::Done;
            }
            let limit = self.inner.config.max_deliveries;
            if run.deliveries > limit {
                if self.runs_elsewhere(&run.session).await {
                    // A repeat of a run another instance has.
                    return Settle::Done;
                }
                let reason = format!("handed out {limit} times without finishing");
                if let Err(error) = self
                    .end_not_running(&run.session, SessionOutcome::Failed(reason.clone()))
                    .await
                {
                    tracing::warn!(session = %run.session, %error, "the failed session was not recorded");
                }
                return Settle::Dead(reason);
            }
            if self.inner.live.get(&run.session).is_none() {
                match self.relaunch(&product, &run.session, why).await {
                    Ok(Relaunch::Started) => {}
                    Ok(Relaunch::Ended) => return Settle::Done,
                    Ok(Relaunch::Running) if self.inner.shutting_down.load(Ordering::SeqCst) => {
                        return Settle::Retry(Duration::ZERO);
                    }
                    // Another instance runs it and answers for it (holding a run of its
                    // own, or swept up again if it dies): this one is a repeat. Put back,
                    // it would spend deliveries until the session failed under its run.
                    Ok(Relaunch::Running) if self.runs_elsewhere(&run.session).await => {
                        return Settle::Done;
                    }
                    // Its lease is held by an instance that does not answer: wait for it.
                    Ok(Relaunch::Running) => return Settle::Retry(RETRY_DELAY),
                    Ok(Relaunch::GaveUp(reason)) => return Settle::Dead(reason),
                    Err(error) => {
                        tracing::warn!(session = %run.session, %error, "the run did not start; put back");
                        return Settle::Retry(RETRY_DELAY);
                    }
                }
            }
            let Some(live) = self.inner.live.get(&run.session) else {
                // It ended already.
                return self.after_run(&run.session, false).await;
            };
            self.keep_working(run, live.ended.cancelled()).await;
            let parked = live.parked.load(Ordering::SeqCst);
            // Parked for a fault (not a run that coped with one and finished).
            let fault = parked && live.failure.is_fault();
            drop(live);
            if !fault {
                return self.after_run(&run.session, parked).await;
            }
            // Taken up again once the store or the model answers: not at once, while it
            // still fails.
            self.keep_working(run, tokio::time::sleep(pause)).await;
            if self.inner.shutting_down.load(Ordering::SeqCst) {
                return Settle::Retry(Duration::ZERO);
            }
            pause = (pause * 2).min(MAX_PAUSE);
            why = Relaunching::AfterFault;
        }
    }

    /// Waits for `until`, telling the queue every heartbeat that the run is still being
    /// worked on.
    async fn keep_working(&self, run: &QueuedRun, until: impl Future<Output = ()>) {
        let heartbeat = self.inner.config.queue_heartbeat;
        tokio::pin!(until);
        loop {
            tokio::select! {
                () = &mut until => return,
                () = tokio::time::sleep(heartbeat) => {
                    if let Err(error) = run.ticket.working().await {
                        tracing::warn!(session = %run.session, %error, "progress not reported");
                    }
                }
            }
        }
    }

    /// Queues again every unfinished session of this server's products that nothing
    /// holds: not running here, no run of it in the queue (waiting, or taken and not
    /// settled), no instance answering for it, and untouched for a
    /// [`queue_sweep_interval`](crate::ServerConfig::queue_sweep_interval) (a session just
    /// started may not be queued yet). Such a session lost its run (a purged stream) and
    /// would never finish. Returns how many it queued again. [`serve_until`](Self::serve_until)
    /// sweeps every interval on a server with a run queue.
    ///
    /// Errors: [`StoreError::Backend`] when the server has no run queue, or the store or
    /// the queue cannot be read.
    pub async fn sweep_run_queue(&self) -> Result<usize, StoreError> {
        let Some(queue) = self.inner.run_queue.clone() else {
            return Err(StoreError::Backend(
                "this server has no run queue".to_owned(),
            ));
        };
        let settled_for = chrono::Duration::from_std(self.inner.config.queue_sweep_interval)
            .unwrap_or(chrono::Duration::MAX);
        let mut requeued = 0;
        for product in &self.inner.products {
            for record in self.inner.store.unfinished(product.name()).await? {
                let recent = chrono::Utc::now() - record.updated_at < settled_for;
                if recent
                    || self.inner.live.get(&record.id).is_some()
                    || queue.holds(&record.id).await?
                    || self.runs_elsewhere(&record.id).await
                {
                    continue;
                }
                tracing::warn!(session = %record.id, product = product.name(), "an unfinished session the run queue lost: queued again");
                queue.requeue(product.name(), &record.id).await?;
                requeued += 1;
            }
        }
        Ok(requeued)
    }

    /// Sweeps the run queue every [`ServerConfig::queue_sweep_interval`](crate::ServerConfig::queue_sweep_interval),
    /// but while the server shuts down; never ends (its owner drops it with the worker).
    pub(crate) async fn sweep_run_queue_every_interval(&self) {
        let interval = self.inner.config.queue_sweep_interval;
        loop {
            tokio::time::sleep(interval).await;
            if self.inner.shutting_down.load(Ordering::SeqCst) {
                continue;
            }
            if let Err(error) = self.sweep_run_queue().await {
                tracing::warn!(%error, "the run queue was not swept");
            }
        }
    }

    /// How a run that ended here settles: done when its session finished, back to the
    /// queue when it parked (this instance shuts down or lost its lease).
    async fn after_run(&self, session: &str, parked: bool) -> Settle {
        match self.inner.store.get(session).await {
            Ok(Some(record)) if record.status.is_finished() => Settle::Done,
            Ok(None) => Settle::Done,
            _ if parked => Settle::Retry(Duration::ZERO),
            _ => Settle::Retry(RETRY_DELAY),
        }
    }
}

async fn settle(ticket: Box<dyn RunTicket>, session: &str, outcome: Settle) {
    let settled = match outcome {
        Settle::Done => ticket.done().await,
        Settle::Retry(delay) => ticket.retry_after(delay).await,
        Settle::Dead(reason) => {
            tracing::warn!(session, %reason, "run sent to the dead letters");
            ticket.dead(&reason).await
        }
    };
    if let Err(error) = settled {
        // Not settled: the queue hands it out again after its ack wait.
        tracing::warn!(session, %error, "a run was not settled with the queue");
    }
}
