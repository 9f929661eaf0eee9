//! The queue of runs that several server instances' workers take from, and its
//! in-process implementation (a single process, or several servers in one, as tests run
//! them); a multi-instance deployment implements [`RunQueue`] on its coordination
//! service (NATS JetStream).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;

use super::StoreError;

/// A run a worker took from a [`RunQueue`]: which session, how many times it has been
/// handed out, and the ticket that settles it.
pub struct QueuedRun {
    /// The session to run (or resume).
    pub session: String,
    /// Its product.
    pub product: String,
    /// How many times the queue has handed this run out, this time included.
    pub deliveries: u64,
    /// Settles the run with the queue.
    pub ticket: Box<dyn RunTicket>,
}

impl std::fmt::Debug for QueuedRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueuedRun")
            .field("session", &self.session)
            .field("product", &self.product)
            .field("deliveries", &self.deliveries)
            .finish_non_exhaustive()
    }
}

/// How a worker settles a run it took: a run not settled, and whose worker stops saying
/// it is working on it, is handed to another worker.
#[async_trait]
pub trait RunTicket: Send + Sync {
    /// The worker is still on it (sent regularly while the run goes on).
    async fn working(&self) -> Result<(), StoreError>;
    /// The run is over (finished, or nothing left to run): it leaves the queue.
    async fn done(self: Box<Self>) -> Result<(), StoreError>;
    /// Hand it out again after `delay` (the session is leased elsewhere, or this
    /// instance is shutting down).
    async fn retry_after(self: Box<Self>, delay: Duration) -> Result<(), StoreError>;
    /// The run keeps failing: it leaves the queue for the dead letters, with why.
    async fn dead(self: Box<Self>, reason: &str) -> Result<(), StoreError>;
}

/// The queue of runs several instances' workers take from: starting a session enqueues
/// its run; any instance's worker takes it, says it is working while the run goes on,
/// and settles it when it ends.
#[async_trait]
pub trait RunQueue: Send + Sync {
    /// Enqueues the run of `session` (of `product`). Enqueuing a session already queued
    /// and not yet taken adds nothing.
    async fn enqueue(&self, product: &str, session: &str) -> Result<(), StoreError>;

    /// The runs handed to this instance's worker, as they come. `limit` is the most runs
    /// the worker keeps live at once. With one, a run must leave the queue only when the
    /// stream is polled for it: a worker at its limit does not poll, and the runs it did
    /// not ask for stay for other instances. Without one (`None`), runs may be handed out
    /// ahead, since each is started as it comes.
    async fn take(&self, limit: Option<usize>)
    -> Result<BoxStream<'static, QueuedRun>, StoreError>;

    /// Whether the queue holds a run of `session`: waiting, handed to a worker and not
    /// settled yet, or put back to wait out a delay. An unfinished session that runs
    /// nowhere and that the queue does not hold (its message was lost: a purged stream)
    /// would never run again; agent-server's sweep queues it again with
    /// [`requeue`](Self::requeue).
    async fn holds(&self, session: &str) -> Result<bool, StoreError>;

    /// Enqueues again the run of a session the queue lost. By default
    /// [`enqueue`](Self::enqueue); a queue that drops repeats of a message for a while
    /// (JetStream's duplicate window) does not take this one for a repeat of the lost one.
    async fn requeue(&self, product: &str, session: &str) -> Result<(), StoreError> {
        self.enqueue(product, session).await
    }
}

/// The runs queued in this process, for servers sharing one process (tests, and the
/// shape of a distributed queue): a run put back returns after its delay, and a run whose
/// ticket is dropped unsettled (its worker died) is handed out again at once.
///
/// ```
/// use agent_runtime::sessions::{InProcessRunQueue, RunQueue};
/// use futures::StreamExt;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let queue = InProcessRunQueue::default();
/// queue.enqueue("resume", "s1").await?;
/// let mut runs = queue.take(None).await?;
/// let run = runs.next().await.unwrap();
/// assert_eq!((run.session.as_str(), run.deliveries), ("s1", 1));
/// assert!(queue.holds("s1").await?, "handed out, not settled");
/// drop(run); // unsettled: handed out again
/// let run = runs.next().await.unwrap();
/// assert_eq!(run.deliveries, 2);
/// run.ticket.done().await?;
/// assert!(!queue.holds("s1").await?);
/// # Ok::<(), agent_runtime::sessions::StoreError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, Default)]
pub struct InProcessRunQueue {
    shared: Arc<QueueShared>,
}

#[derive(Debug, Default)]
struct QueueShared {
    /// `(product, session, deliveries so far)`.
    waiting: Mutex<std::collections::VecDeque<(String, String, u64)>>,
    /// Runs out of `waiting` but still held: handed out and not settled, or put back to
    /// wait out a delay; how many, by session.
    out: Mutex<HashMap<String, usize>>,
    arrived: tokio::sync::Notify,
    dead: Mutex<Vec<(String, String)>>,
}

impl QueueShared {
    fn push(&self, product: String, session: String, deliveries: u64) {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back((product, session, deliveries));
        self.arrived.notify_one();
    }

    /// Whether a run of `session` waits to be handed out.
    fn is_waiting(&self, session: &str) -> bool {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|(_, s, _)| s == session)
    }

    /// The next waiting run, counted out until it is settled.
    fn pop(&self) -> Option<(String, String, u64)> {
        let run = self
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()?;
        *self
            .out
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(run.1.clone())
            .or_default() += 1;
        Some(run)
    }

    /// A run of `session` that was out is settled, or back in `waiting`.
    fn settled(&self, session: &str) {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = out.get_mut(session) {
            *count -= 1;
            if *count == 0 {
                out.remove(session);
            }
        }
    }

    /// Puts a run that was out back in `waiting`.
    fn put_back(&self, product: String, session: String, deliveries: u64) {
        self.push(product, session.clone(), deliveries);
        self.settled(&session);
    }
}

impl InProcessRunQueue {
    /// Drops every waiting run, as purging a stream does (runs handed out stay with
    /// their workers); returns how many.
    pub fn purge(&self) -> usize {
        let mut waiting = self
            .shared
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let purged = waiting.len();
        waiting.clear();
        purged
    }

    /// The runs sent to the dead letters so far: `(session, reason)`.
    pub fn dead_letters(&self) -> Vec<(String, String)> {
        self.shared
            .dead
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// A run handed out in this process; dropped unsettled, it goes back to the queue.
struct InProcessTicket {
    shared: Arc<QueueShared>,
    /// `(product, session, deliveries)` until settled.
    run: Option<(String, String, u64)>,
}

impl Drop for InProcessTicket {
    fn drop(&mut self) {
        if let Some((product, session, deliveries)) = self.run.take() {
            self.shared.put_back(product, session, deliveries);
        }
    }
}

#[async_trait]
impl RunTicket for InProcessTicket {
    async fn working(&self) -> Result<(), StoreError> {
        Ok(())
    }

    async fn done(mut self: Box<Self>) -> Result<(), StoreError> {
        if let Some((_, session, _)) = self.run.take() {
            self.shared.settled(&session);
        }
        Ok(())
    }

    async fn retry_after(mut self: Box<Self>, delay: Duration) -> Result<(), StoreError> {
        if let Some((product, session, deliveries)) = self.run.take() {
            // Still held (counted out) while it waits out the delay.
            let shared = Arc::clone(&self.shared);
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                shared.put_back(product, session, deliveries);
            });
        }
        Ok(())
    }

    async fn dead(mut self: Box<Self>, reason: &str) -> Result<(), StoreError> {
        if let Some((_, session, _)) = self.run.take() {
            self.shared.settled(&session);
            self.shared
                .dead
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((session, reason.to_owned()));
        }
        Ok(())
    }
}

#[async_trait]
impl RunQueue for InProcessRunQueue {
    async fn enqueue(&self, product: &str, session: &str) -> Result<(), StoreError> {
        if !self.shared.is_waiting(session) {
            self.shared.push(product.to_owned(), session.to_owned(), 0);
        }
        Ok(())
    }

    async fn take(
        &self,
        _limit: Option<usize>,
    ) -> Result<BoxStream<'static, QueuedRun>, StoreError> {
        // Lazy already: a run leaves the queue when the stream is polled for it.
        let shared = Arc::clone(&self.shared);
        Ok(Box::pin(futures::stream::unfold(
            shared,
            |shared| async move {
                loop {
                    if let Some((product, session, deliveries)) = shared.pop() {
                        let deliveries = deliveries + 1;
                        let run = QueuedRun {
                            ticket: Box::new(InProcessTicket {
                                shared: Arc::clone(&shared),
                                run: Some((product.clone(), session.clone(), deliveries)),
                            }),
                            session,
                            product,
                            deliveries,
                        };
                        return Some((run, shared));
                    }
                    // A push since the pop left a permit: this returns at once.
                    shared.arrived.notified().await;
                }
            },
        )))
    }

    async fn holds(&self, session: &str) -> Result<bool, StoreError> {
        let waiting = self.shared.is_waiting(session);
        let out = self
            .shared
            .out
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(session);
        Ok(waiting || out)
    }
}
