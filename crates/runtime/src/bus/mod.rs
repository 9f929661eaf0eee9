//! The agent bus: messages between the agents of one session (spec 001 sections 4 and 9).
//!
//! [`AgentBus`] is the contract; [`InMemoryBus`] serves one session in one process, and
//! distributed buses (Redis Streams with one stream per session and agent, NATS JetStream)
//! implement the same trait in `agent-backends`, so callers do not change.

mod memory;
mod message;
#[cfg(feature = "testing")]
pub mod suite;

pub use memory::InMemoryBus;
pub use message::{AgentMessage, MessageType, OutgoingMessage};

use async_trait::async_trait;
use futures::stream::BoxStream;
use std::time::Duration;

/// The messages delivered to one subscriber, in the order they were sent.
pub type MessageStream = BoxStream<'static, AgentMessage>;

/// What went wrong on the bus.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BusError {
    /// The recipient has no subscriber and the bus could not hold the message for it.
    #[error("message to {domain}/{to} is undeliverable: {reason}")]
    Undeliverable {
        /// Domain of the recipient.
        domain: String,
        /// The recipient.
        to: String,
        /// Why.
        reason: String,
    },
    /// The agent already has a subscriber.
    #[error("{domain}/{agent} is already subscribed")]
    AlreadySubscribed {
        /// Domain.
        domain: String,
        /// Agent name.
        agent: String,
    },
    /// No response to a request arrived in time.
    #[error("no response to request {id} within {after:?}")]
    Timeout {
        /// The request's message id.
        id: String,
        /// The timeout.
        after: Duration,
    },
    /// The message is not valid for the operation (a request without a recipient, ...).
    #[error("invalid message: {0}")]
    Invalid(String),
    /// The bus's backing service failed (distributed buses).
    #[error("bus backend error: {0}")]
    Backend(String),
}

/// What every bus does with a message before taking it ([`AgentBus::send`]): checks it
/// has a recipient, a sender and a domain, and a response its `correlation_id`, then
/// stamps it with a new id and the current time.
///
/// ```
/// use agent_runtime::bus::{MessageType, OutgoingMessage, accept};
/// let note = OutgoingMessage::new("a", "b", MessageType::Notification, "resume", serde_json::json!(1));
/// assert_eq!(accept(note).unwrap().to, "b");
/// let orphan = OutgoingMessage::new("a", "b", MessageType::Response, "resume", serde_json::json!(1));
/// assert!(accept(orphan).is_err());
/// ```
pub fn accept(message: OutgoingMessage) -> Result<AgentMessage, BusError> {
    validate(&message)?;
    Ok(message.into_message())
}

/// [`accept`], for a message that must be a `Request`: what [`AgentBus::request`] sends.
pub fn accept_request(message: OutgoingMessage) -> Result<AgentMessage, BusError> {
    if message.kind != MessageType::Request {
        return Err(BusError::Invalid(format!(
            "`request` sends a `request` message, not a `{:?}`",
            message.kind
        )));
    }
    accept(message)
}

/// Checks a message has what every bus requires of it.
fn validate(message: &OutgoingMessage) -> Result<(), BusError> {
    for (field, value) in [
        ("to", &message.to),
        ("from", &message.from),
        ("domain", &message.domain),
    ] {
        if value.trim().is_empty() {
            return Err(BusError::Invalid(format!("`{field}` must not be empty")));
        }
    }
    if message.kind == MessageType::Response
        && message
            .correlation_id
            .as_deref()
            .is_none_or(|id| id.trim().is_empty())
    {
        return Err(BusError::Invalid(
            "a `response` must carry the `correlation_id` of the request it answers".to_owned(),
        ));
    }
    Ok(())
}

/// Checks a subscriber's name: neither `domain` nor `agent` may be empty.
pub fn validate_agent(domain: &str, agent: &str) -> Result<(), BusError> {
    for (field, value) in [("domain", domain), ("agent", agent)] {
        if value.trim().is_empty() {
            return Err(BusError::Invalid(format!("`{field}` must not be empty")));
        }
    }
    Ok(())
}

/// Messaging between the agents of one session.
///
/// Delivery is per `(domain, agent)`: a message for an agent that has not subscribed yet
/// is held until it does, or reported as [`BusError::Undeliverable`]; it is never dropped
/// silently. A `Response` whose `correlation_id` matches a pending [`AgentBus::request`]
/// goes to that request instead of the subscriber.
#[async_trait]
pub trait AgentBus: Send + Sync {
    /// Starts delivering `agent`'s messages (held ones first).
    async fn subscribe(&self, domain: &str, agent: &str) -> Result<MessageStream, BusError>;

    /// Stops delivering `agent`'s messages; its stream ends. Later messages are held again.
    async fn unsubscribe(&self, domain: &str, agent: &str) -> Result<(), BusError>;

    /// Sends a message; returns it as delivered, with id and time.
    async fn send(&self, message: OutgoingMessage) -> Result<AgentMessage, BusError>;

    /// Sends a `Request` and waits up to `timeout` for the `Response` correlated to it.
    async fn request(
        &self,
        message: OutgoingMessage,
        timeout: Duration,
    ) -> Result<AgentMessage, BusError>;

    /// The messages sent so far, oldest first (capped; see the implementation).
    async fn log(&self) -> Result<Vec<AgentMessage>, BusError>;

    /// Forgets subscribers, held messages and the log.
    async fn reset(&self) -> Result<(), BusError>;
}
