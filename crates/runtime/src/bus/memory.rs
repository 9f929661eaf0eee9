//! The in-memory [`AgentBus`]: one per session, in one process.
//!
//! Create one [`InMemoryBus`] per session and hand clones of it to that session's agents and
//! coordinator; nothing is global, so concurrent sessions never see each other's messages.
//! Routing is on `(domain, to)`. A recipient without a subscriber gets its messages held (in
//! order, up to a per-recipient cap) until it subscribes; past the cap, `send` reports
//! [`BusError::Undeliverable`]. Nothing is dropped silently.
//!
//! # A Redis Streams bus behind the same trait
//!
//! `agent_backends::RedisBus` keeps the [`AgentBus`] contract on Redis Streams and passes
//! the same suite (`bus::suite`, feature `testing`). The design it started from:
//!
//! - **Streams.** One stream per session and recipient: `bus:{session}:{domain}:{agent}`.
//!   `send` is an `XADD` of the serialized [`AgentMessage`] to the
//!   recipient's stream (the entry id gives the order), plus an `XADD` to a capped audit
//!   stream `bus:{session}:log` (`MAXLEN ~ 500`), which backs [`AgentBus::log`].
//! - **Holding.** A stream *is* the held queue: entries wait until someone reads them, and
//!   survive restarts. `MAXLEN` (or a length check before `XADD`) plays the role of the held
//!   cap and turns into [`BusError::Undeliverable`].
//! - **Subscribing.** `subscribe` creates (or joins) a consumer group on the recipient's
//!   stream and reads with `XREADGROUP ... >` in a background task that feeds the returned
//!   [`MessageStream`]; `AlreadySubscribed` is enforced with a
//!   short-lived lease key (`SET NX PX`) refreshed while the stream is alive.
//! - **Acknowledging.** A message is `XACK`ed after it has been handled, so an agent that
//!   crashes mid-message gets it again from the group's pending list (`XAUTOCLAIM`) when it
//!   comes back: at-least-once delivery, so handlers should be idempotent on the message id.
//! - **Requests.** `request` first reads from a reply stream of its own
//!   (`bus:{session}:reply:{request id}`, or one per requesting process filtered by
//!   `correlation_id`), then sends the request, then blocks on `XREAD BLOCK` for at most the
//!   timeout; a `Response` whose `correlation_id` names a pending request is written to that
//!   reply stream instead of the recipient's stream. Reply streams get a TTL.
//! - **Reset.** `reset` deletes the session's keys (`bus:{session}:*`, tracked in a set so
//!   no `KEYS` scan is needed).

use super::{
    AgentBus, AgentMessage, BusError, MessageStream, MessageType, OutgoingMessage, accept,
    accept_request, validate_agent,
};
use async_trait::async_trait;
use futures::StreamExt;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// `(domain, agent)`.
type Key = (String, String);

fn key(domain: &str, agent: &str) -> Key {
    (domain.to_owned(), agent.to_owned())
}

/// A live subscription: the sender feeding the subscriber's stream, and a token that tells
/// this subscription apart from a later one for the same agent.
struct Subscriber {
    token: u64,
    sender: mpsc::UnboundedSender<AgentMessage>,
}

#[derive(Default)]
struct State {
    subscribers: HashMap<Key, Subscriber>,
    held: HashMap<Key, VecDeque<AgentMessage>>,
    pending: HashMap<String, oneshot::Sender<AgentMessage>>,
    log: VecDeque<AgentMessage>,
    /// Source of subscription tokens; never reset, so tokens stay unique.
    next_token: u64,
    /// Incremented by `reset`, so subscriptions from before a reset leave the bus alone.
    generation: u64,
}

struct Inner {
    state: Mutex<State>,
    log_cap: usize,
    held_cap: usize,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn append_log(&self, state: &mut State, message: &AgentMessage) {
        if self.log_cap == 0 {
            return;
        }
        while state.log.len() >= self.log_cap {
            state.log.pop_front();
        }
        state.log.push_back(message.clone());
    }

    /// Routes an accepted (already logged) message: to a pending request, else to the
    /// subscriber, else into the held queue.
    fn route(&self, state: &mut State, mut message: AgentMessage) -> Result<(), BusError> {
        if message.kind == MessageType::Response {
            let waiter = message
                .correlation_id
                .as_ref()
                .and_then(|id| state.pending.remove(id));
            if let Some(waiter) = waiter {
                match waiter.send(message) {
                    Ok(()) => return Ok(()),
                    // The requester stopped waiting just now: treat it as an ordinary message.
                    Err(returned) => message = returned,
                }
            }
        }

        let key = key(&message.domain, &message.to);
        if let Some(subscriber) = state.subscribers.get(&key) {
            match subscriber.sender.send(message) {
                Ok(()) => return Ok(()),
                Err(mpsc::error::SendError(returned)) => {
                    // The stream was dropped without unsubscribing: the agent is gone.
                    state.subscribers.remove(&key);
                    message = returned;
                }
            }
        }

        let held = state.held.entry(key).or_default();
        if held.len() >= self.held_cap {
            let held_count = held.len();
            tracing::warn!(
                domain = %message.domain,
                to = %message.to,
                id = %message.id,
                held = held_count,
                "bus: recipient has no subscriber and its held queue is full; message undeliverable"
            );
            return Err(BusError::Undeliverable {
                domain: message.domain,
                to: message.to,
                reason: format!(
                    "no subscriber, and {held_count} messages are already held (the limit)"
                ),
            });
        }
        held.push_back(message);
        Ok(())
    }
}

/// The receiving end of one subscription. When the stream that owns it is dropped, messages
/// still buffered in the channel go back to the bus (held again), so none are lost.
struct Subscription {
    receiver: mpsc::UnboundedReceiver<AgentMessage>,
    bus: Weak<Inner>,
    key: Key,
    token: u64,
    generation: u64,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let Some(inner) = self.bus.upgrade() else {
            return;
        };
        let mut state = inner.lock();
        // Closing under the lock means no `send` can slip a message in after the drain.
        self.receiver.close();
        let mut unread = VecDeque::new();
        while let Ok(message) = self.receiver.try_recv() {
            unread.push_back(message);
        }
        if state.generation != self.generation {
            // The bus was reset since this subscription began: it forgot these messages.
            return;
        }
        if state
            .subscribers
            .get(&self.key)
            .is_some_and(|subscriber| subscriber.token == self.token)
        {
            state.subscribers.remove(&self.key);
        }
        // A newer live subscriber takes the unread messages; otherwise they are held again,
        // ahead of anything held since (they are older). They were accepted already, so the
        // held cap does not apply to them.
        if let Some(subscriber) = state.subscribers.get(&self.key) {
            while let Some(message) = unread.pop_front() {
                if let Err(mpsc::error::SendError(message)) = subscriber.sender.send(message) {
                    unread.push_front(message);
                    state.subscribers.remove(&self.key);
                    break;
                }
            }
        }
        if unread.is_empty() {
            return;
        }
        let held = state.held.entry(self.key.clone()).or_default();
        while let Some(message) = unread.pop_back() {
            held.push_front(message);
        }
    }
}

/// Removes a request's waiter when the request ends, however it ends (response, timeout,
/// error, or the caller dropping the future).
struct PendingGuard<'a> {
    inner: &'a Inner,
    id: String,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.inner.lock().pending.remove(&self.id);
    }
}

/// The [`AgentBus`] of one session, in one process.
///
/// Create one per session (nothing is global) and clone it freely: clones share the same
/// subscribers, held messages, pending requests and log.
///
/// - Routing is on `(domain, to)`: two agents with the same name in different domains are
///   different recipients.
/// - A message for an agent without a subscriber is held, in order, and delivered first when
///   it subscribes; at most `held_cap_per_agent` messages are held per recipient (default
///   [`InMemoryBus::DEFAULT_HELD_CAP`]), after which `send` returns
///   [`BusError::Undeliverable`] (the message is still in the log).
/// - Dropping a [`MessageStream`] without unsubscribing unsubscribes the agent, and messages
///   it had not read yet are held again; a `send` that finds the stream gone does the same.
/// - A `Response` whose `correlation_id` names a pending [`AgentBus::request`] completes
///   that request and is not delivered to the subscriber.
/// - The log keeps the `log_cap` most recent messages (default
///   [`InMemoryBus::DEFAULT_LOG_CAP`]), oldest first.
///
/// ```
/// use agent_runtime::bus::{AgentBus, InMemoryBus, MessageType, OutgoingMessage};
/// use futures::StreamExt;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let bus = InMemoryBus::new(); // one per session
/// let mut inbox = bus.subscribe("resume", "craftsman").await?;
///
/// let sent = bus
///     .send(OutgoingMessage::new(
///         "producer",
///         "craftsman",
///         MessageType::Request,
///         "resume",
///         serde_json::json!({"section": "summary"}),
///     ))
///     .await?;
///
/// let received = inbox.next().await.unwrap();
/// assert_eq!(received, sent);
/// assert_eq!(received.payload["section"], "summary");
/// assert_eq!(bus.log().await?.len(), 1);
/// # Ok::<(), agent_runtime::bus::BusError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct InMemoryBus {
    inner: Arc<Inner>,
}

impl InMemoryBus {
    /// How many messages the log keeps by default (the most recent ones).
    pub const DEFAULT_LOG_CAP: usize = 500;
    /// How many messages are held by default for one recipient without a subscriber.
    pub const DEFAULT_HELD_CAP: usize = 1_000;

    /// A bus with the default limits ([`Self::DEFAULT_LOG_CAP`], [`Self::DEFAULT_HELD_CAP`]).
    pub fn new() -> Self {
        Self::with_limits(Self::DEFAULT_LOG_CAP, Self::DEFAULT_HELD_CAP)
    }

    /// A bus whose log keeps the `log_cap` most recent messages (0 keeps none) and which
    /// holds at most `held_cap_per_agent` messages for each recipient without a subscriber
    /// (0 holds none: such messages are undeliverable).
    pub fn with_limits(log_cap: usize, held_cap_per_agent: usize) -> Self {
        InMemoryBus {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                log_cap,
                held_cap: held_cap_per_agent,
            }),
        }
    }
}

impl Default for InMemoryBus {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for InMemoryBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.lock();
        f.debug_struct("InMemoryBus")
            .field("log_cap", &self.inner.log_cap)
            .field("held_cap", &self.inner.held_cap)
            .field("subscribers", &state.subscribers.len())
            .field(
                "held",
                &state.held.values().map(VecDeque::len).sum::<usize>(),
            )
            .field("pending_requests", &state.pending.len())
            .field("logged", &state.log.len())
            .finish()
    }
}

#[async_trait]
impl AgentBus for InMemoryBus {
    async fn subscribe(&self, domain: &str, agent: &str) -> Result<MessageStream, BusError> {
        validate_agent(domain, agent)?;
        let key = key(domain, agent);
        let (sender, receiver) = mpsc::unbounded_channel();
        let (token, generation) = {
            let mut state = self.inner.lock();
            if state
                .subscribers
                .get(&key)
                .is_some_and(|subscriber| !subscriber.sender.is_closed())
            {
                return Err(BusError::AlreadySubscribed {
                    domain: domain.to_owned(),
                    agent: agent.to_owned(),
                });
            }
            if let Some(held) = state.held.remove(&key) {
                for message in held {
                    // Cannot fail: the receiver is alive, right here.
                    let _ = sender.send(message);
                }
            }
            state.next_token = state.next_token.wrapping_add(1);
            let token = state.next_token;
            state
                .subscribers
                .insert(key.clone(), Subscriber { token, sender });
            (token, state.generation)
        };
        let subscription = Subscription {
            receiver,
            bus: Arc::downgrade(&self.inner),
            key,
            token,
            generation,
        };
        let stream = futures::stream::unfold(subscription, |mut subscription| async move {
            let message = subscription.receiver.recv().await?;
            Some((message, subscription))
        });
        Ok(stream.boxed())
    }

    async fn unsubscribe(&self, domain: &str, agent: &str) -> Result<(), BusError> {
        let removed = self.inner.lock().subscribers.remove(&key(domain, agent));
        // Dropping the sender ends the stream once it has yielded what was already delivered.
        drop(removed);
        Ok(())
    }

    async fn send(&self, message: OutgoingMessage) -> Result<AgentMessage, BusError> {
        let message = accept(message)?;
        let mut state = self.inner.lock();
        self.inner.append_log(&mut state, &message);
        self.inner.route(&mut state, message.clone())?;
        Ok(message)
    }

    async fn request(
        &self,
        message: OutgoingMessage,
        timeout: Duration,
    ) -> Result<AgentMessage, BusError> {
        let message = accept_request(message)?;
        let id = message.id.clone();
        let (waiter, response) = oneshot::channel();
        let _pending = PendingGuard {
            inner: &self.inner,
            id: id.clone(),
        };
        {
            let mut state = self.inner.lock();
            // Registered before delivery, so even an immediate response finds it.
            state.pending.insert(id.clone(), waiter);
            self.inner.append_log(&mut state, &message);
            self.inner.route(&mut state, message)?;
        }
        match tokio::time::timeout(timeout, response).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(_)) => Err(BusError::Backend(format!(
                "the bus was reset while request {id} was waiting for its response"
            ))),
            Err(_) => Err(BusError::Timeout { id, after: timeout }),
        }
    }

    async fn log(&self) -> Result<Vec<AgentMessage>, BusError> {
        Ok(self.inner.lock().log.iter().cloned().collect())
    }

    async fn reset(&self) -> Result<(), BusError> {
        let forgotten = {
            let mut state = self.inner.lock();
            state.generation = state.generation.wrapping_add(1);
            (
                std::mem::take(&mut state.subscribers),
                std::mem::take(&mut state.held),
                std::mem::take(&mut state.pending),
                std::mem::take(&mut state.log),
            )
        };
        // Dropped outside the lock: subscribers' streams end, pending requests fail.
        drop(forgotten);
        Ok(())
    }
}
