//! What several server instances need to share one set of sessions: a lease per running
//! session (one instance runs it at a time), the fan-out of its events to whichever
//! instance holds a client's stream, and a way to reach the instance that runs a session
//! (to answer its gates, to cancel it) from any other. The in-process implementations
//! here serve a single process (or several servers in one, as tests run them); a
//! multi-instance deployment implements the same traits on its coordination service
//! (PostgreSQL, NATS).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::StoreError;
use super::event_channel::{EventChannel, Missed, Receiver};

/// The right to run a session, held by one instance at a time for a limited time and
/// renewed while the run goes on; a lease that is not renewed expires, and another
/// instance may take the session over.
#[async_trait]
pub trait SessionLeases: Send + Sync {
    /// Takes the lease of `session` for `holder` for `ttl`, unless another holder has one
    /// that has not expired. Returns whether `holder` holds it now (taking one it already
    /// holds renews it).
    async fn acquire(&self, session: &str, holder: &str, ttl: Duration)
    -> Result<bool, StoreError>;

    /// Extends the lease `holder` holds by `ttl` from now; `false` when it does not hold
    /// it any more (it expired and was taken over).
    async fn renew(&self, session: &str, holder: &str, ttl: Duration) -> Result<bool, StoreError>;

    /// Gives the lease up, if `holder` holds it.
    async fn release(&self, session: &str, holder: &str) -> Result<(), StoreError>;
}

/// Who holds each lease, and until when.
type Held = HashMap<String, (String, Instant)>;

/// Leases in this process's memory: enough for one server.
///
/// ```
/// use agent_runtime::sessions::{InProcessLeases, SessionLeases};
/// use std::time::Duration;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let leases = InProcessLeases::default();
/// let ttl = Duration::from_secs(30);
/// assert!(leases.acquire("s1", "instance-a", ttl).await?);
/// assert!(!leases.acquire("s1", "instance-b", ttl).await?); // held by a
/// leases.release("s1", "instance-a").await?;
/// assert!(leases.acquire("s1", "instance-b", ttl).await?);
/// # Ok::<(), agent_runtime::sessions::StoreError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Default)]
pub struct InProcessLeases {
    held: Mutex<Held>,
}

impl InProcessLeases {
    fn lock(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl SessionLeases for InProcessLeases {
    async fn acquire(
        &self,
        session: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let mut held = self.lock();
        let now = Instant::now();
        match held.get(session) {
            Some((other, until)) if other != holder && *until > now => Ok(false),
            _ => {
                held.insert(session.to_owned(), (holder.to_owned(), now + ttl));
                Ok(true)
            }
        }
    }

    async fn renew(&self, session: &str, holder: &str, ttl: Duration) -> Result<bool, StoreError> {
        let mut held = self.lock();
        match held.get_mut(session) {
            Some((owner, until)) if owner == holder => {
                *until = Instant::now() + ttl;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn release(&self, session: &str, holder: &str) -> Result<(), StoreError> {
        let mut held = self.lock();
        if held.get(session).is_some_and(|(owner, _)| owner == holder) {
            held.remove(session);
        }
        Ok(())
    }
}

/// What a subscriber to a session's events receives.
#[derive(Debug, Clone, PartialEq)]
pub enum Fanned {
    /// A stored event and its number.
    Event(u64, Arc<Value>),
    /// The subscriber fell behind and missed events: read them from the store.
    Lagged,
}

/// Carries a session's events, as they are stored, to every stream that follows it, on
/// whichever instance that stream is served.
#[async_trait]
pub trait EventFanout: Send + Sync {
    /// Sends a stored event (numbered `seq`) to the session's subscribers. Events of one
    /// session are delivered in the order they are published.
    fn publish(&self, session: &str, seq: u64, event: Arc<Value>);

    /// The session's events from now on, until [`close`](Self::close) (the stream ends).
    /// The subscription is in place when this returns: an event published afterwards
    /// reaches it.
    async fn subscribe(&self, session: &str) -> Result<BoxStream<'static, Fanned>, StoreError>;

    /// The session's run has ended here: its subscribers' streams end.
    fn close(&self, session: &str);
}

/// Fan-out within this process: a channel per followed session, holding the events its
/// subscribers have yet to read.
///
/// ```
/// use agent_runtime::sessions::{EventFanout, Fanned, InProcessFanout};
/// use futures::StreamExt;
/// use std::sync::Arc;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let fanout = InProcessFanout::default();
/// let mut events = fanout.subscribe("s1").await?;
/// fanout.publish("s1", 1, Arc::new(serde_json::json!({"type": "started"})));
/// fanout.close("s1");
/// assert!(matches!(events.next().await, Some(Fanned::Event(1, _))));
/// assert_eq!(events.next().await, None);
/// # Ok::<(), agent_runtime::sessions::StoreError>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct InProcessFanout {
    capacity: usize,
    sessions: Mutex<HashMap<String, Arc<EventChannel>>>,
}

impl Default for InProcessFanout {
    fn default() -> Self {
        Self::with_capacity(256)
    }
}

impl InProcessFanout {
    /// A fan-out letting a slow subscriber fall `capacity` events behind before it is
    /// told it lagged. The events are held only while a subscriber has yet to read them.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<EventChannel>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new receiver of `session`'s channel, made if needed. It subscribes under the
    /// lock: a publish finding the channel without receivers drops it, so a channel made
    /// but not yet subscribed to could be dropped in between, and the new receiver would
    /// never hear of the session's events.
    fn receiver(&self, session: &str) -> Receiver {
        self.lock()
            .entry(session.to_owned())
            .or_insert_with(|| Arc::new(EventChannel::new(self.capacity)))
            .subscribe()
    }
}

#[async_trait]
impl EventFanout for InProcessFanout {
    fn publish(&self, session: &str, seq: u64, event: Arc<Value>) {
        // A session nobody follows has no channel: it is made by the first subscriber and
        // dropped when a publish finds the last one gone.
        let mut sessions = self.lock();
        if let Some(channel) = sessions.get(session)
            && !channel.publish(seq, event)
        {
            sessions.remove(session);
        }
    }

    async fn subscribe(&self, session: &str) -> Result<BoxStream<'static, Fanned>, StoreError> {
        let receiver = self.receiver(session);
        Ok(Box::pin(futures::stream::unfold(
            receiver,
            |mut receiver| async move {
                match receiver.recv().await {
                    Ok((seq, event)) => Some((Fanned::Event(seq, event), receiver)),
                    Err(Missed::Lagged) => Some((Fanned::Lagged, receiver)),
                    Err(Missed::Closed) => None,
                }
            },
        )))
    }

    fn close(&self, session: &str) {
        if let Some(channel) = self.lock().remove(session) {
            channel.close();
        }
    }
}

/// A request for the instance that runs a session, with the way back for its reply. What
/// the body means is the server's business (answer a gate, cancel, are you there).
#[derive(Debug)]
pub struct ControlRequest {
    /// The request.
    pub body: Value,
    /// Where the reply goes; dropping it leaves the asker without one (it times out).
    pub reply: oneshot::Sender<Value>,
}

/// Reaches the instance that runs a session from any other: an instance that takes a
/// gate's answer or a cancellation for a session it does not run asks the one that does.
#[async_trait]
pub trait SessionControl: Send + Sync {
    /// Sends `body` to the instance that runs `session` and waits up to `timeout` for its
    /// reply; `Ok(None)` when no instance serves the session.
    async fn ask(
        &self,
        session: &str,
        body: Value,
        timeout: Duration,
    ) -> Result<Option<Value>, StoreError>;

    /// The requests for `session`, which this instance runs now, until the stream is
    /// dropped. The subscription is in place when this returns.
    async fn serve(&self, session: &str) -> Result<BoxStream<'static, ControlRequest>, StoreError>;
}

/// Who serves each session in this process, with a number telling a registration apart
/// from a later one for the same session.
type Served = HashMap<String, (u64, mpsc::UnboundedSender<ControlRequest>)>;

/// Session control within one process: servers sharing it reach each other's sessions.
///
/// ```
/// use agent_runtime::sessions::{InProcessControl, SessionControl};
/// use futures::StreamExt;
/// use std::time::Duration;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let control = InProcessControl::default();
/// let second = Duration::from_secs(1);
/// assert_eq!(control.ask("s1", serde_json::json!("ping"), second).await?, None);
/// let mut requests = control.serve("s1").await?;
/// tokio::spawn(async move {
///     while let Some(request) = requests.next().await {
///         let _ = request.reply.send(serde_json::json!("pong"));
///     }
/// });
/// let reply = control.ask("s1", serde_json::json!("ping"), second).await?;
/// assert_eq!(reply, Some(serde_json::json!("pong")));
/// # Ok::<(), agent_runtime::sessions::StoreError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Default)]
pub struct InProcessControl {
    served: Arc<Mutex<Served>>,
    next: std::sync::atomic::AtomicU64,
}

fn lock_served(served: &Mutex<Served>) -> MutexGuard<'_, Served> {
    served.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Ends a registration when the stream serving it is dropped.
struct Registration {
    served: Arc<Mutex<Served>>,
    session: String,
    number: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut served = lock_served(&self.served);
        if served
            .get(&self.session)
            .is_some_and(|(number, _)| *number == self.number)
        {
            served.remove(&self.session);
        }
    }
}

#[async_trait]
impl SessionControl for InProcessControl {
    async fn ask(
        &self,
        session: &str,
        body: Value,
        timeout: Duration,
    ) -> Result<Option<Value>, StoreError> {
        let sender = lock_served(&self.served)
            .get(session)
            .map(|(_, sender)| sender.clone());
        let Some(sender) = sender else {
            return Ok(None);
        };
        let (reply, replied) = oneshot::channel();
        if sender.send(ControlRequest { body, reply }).is_err() {
            return Ok(None);
        }
        match tokio::time::timeout(timeout, replied).await {
            Ok(Ok(reply)) => Ok(Some(reply)),
            Ok(Err(_)) => Ok(None),
            Err(_) => Err(StoreError::Backend(format!(
                "the instance running session {session:?} did not reply within {timeout:?}"
            ))),
        }
    }

    async fn serve(&self, session: &str) -> Result<BoxStream<'static, ControlRequest>, StoreError> {
        let (sender, receiver) = mpsc::unbounded_channel();
        let number = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock_served(&self.served).insert(session.to_owned(), (number, sender));
        let registration = Registration {
            served: Arc::clone(&self.served),
            session: session.to_owned(),
            number,
        };
        Ok(Box::pin(futures::stream::unfold(
            (receiver, registration),
            |(mut receiver, registration)| async move {
                let request = receiver.recv().await?;
                Some((request, (receiver, registration)))
            },
        )))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A session nobody follows holds no channel: publishing to it makes none, the first
    /// subscriber makes one, and the first event published after the last subscriber
    /// has gone drops it.
    #[tokio::test]
    async fn the_in_process_fanout_keeps_a_channel_only_while_someone_follows() {
        let fanout = InProcessFanout::default();
        fanout.publish("s", 1, Arc::new(serde_json::json!({})));
        assert!(fanout.lock().is_empty());
        let follower = fanout.subscribe("s").await.unwrap();
        assert_eq!(fanout.lock().len(), 1);
        drop(follower);
        fanout.publish("s", 2, Arc::new(serde_json::json!({})));
        assert!(fanout.lock().is_empty());
    }

    /// A subscriber whose session is published to while it subscribes stays subscribed
    /// until the session is closed: its stream never ends early (the race of a channel
    /// made, found without receivers by a publish and dropped, before the subscriber
    /// took its receiver).
    #[test]
    fn a_publish_racing_a_subscribe_never_ends_the_new_stream() {
        use futures::{FutureExt as _, StreamExt as _};
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

        let fanout = Arc::new(InProcessFanout::default());
        for round in 0..1_000_u64 {
            let session = format!("s{round}");
            let publishing = Arc::new(AtomicBool::new(true));
            let published = Arc::new(AtomicU64::new(0));
            let publisher = {
                let (fanout, publishing, published, session) = (
                    Arc::clone(&fanout),
                    Arc::clone(&publishing),
                    Arc::clone(&published),
                    session.clone(),
                );
                std::thread::spawn(move || {
                    let mut seq = 0;
                    while publishing.load(Ordering::Relaxed) {
                        seq += 1;
                        fanout.publish(&session, seq, Arc::new(Value::Null));
                        published.store(seq, Ordering::Relaxed);
                    }
                })
            };
            while published.load(Ordering::Relaxed) == 0 {
                std::hint::spin_loop();
            }
            let mut events = fanout.subscribe(&session).now_or_never().unwrap().unwrap();
            publishing.store(false, Ordering::Relaxed);
            publisher.join().unwrap();
            // Whatever arrived (or was missed), the stream is open until the close.
            while let Some(next) = events.next().now_or_never() {
                assert!(
                    next.is_some(),
                    "round {round}: the stream ended before its session was closed"
                );
            }
            fanout.close(&session);
            assert_eq!(events.next().now_or_never(), Some(None));
        }
    }
}
