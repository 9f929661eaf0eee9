//! Messages between agents.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a message is for (spec 001 section 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageType {
    /// One agent passes its primary output to the next.
    Handoff,
    /// One agent asks another to do work; answered by a `Response`.
    Request,
    /// The reply to a `Request`, carrying its `correlation_id`.
    Response,
    /// One-way information.
    Notification,
}

/// A message as the bus delivers it: with its id and time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentMessage {
    /// Assigned by the bus (a UUID).
    pub id: String,
    /// Sending agent's name.
    pub from: String,
    /// Receiving agent's name.
    pub to: String,
    /// What it is for.
    #[serde(rename = "type")]
    pub kind: MessageType,
    /// Product domain; the bus routes on `(domain, to)`.
    pub domain: String,
    /// The content.
    pub payload: Value,
    /// When the bus accepted it.
    pub timestamp: DateTime<Utc>,
    /// For a `Response`, the id of the `Request` it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
}

/// A message to send: everything but the id and time the bus assigns.
///
/// ```
/// use agent_runtime::bus::{MessageType, OutgoingMessage};
/// let message = OutgoingMessage::new("producer", "craftsman", MessageType::Request, "resume", serde_json::json!({"section": "summary"}));
/// assert_eq!(message.to, "craftsman");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutgoingMessage {
    /// Sending agent's name.
    pub from: String,
    /// Receiving agent's name.
    pub to: String,
    /// What it is for.
    #[serde(rename = "type")]
    pub kind: MessageType,
    /// Product domain.
    pub domain: String,
    /// The content.
    pub payload: Value,
    /// For a `Response`, the id of the `Request` it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
}

impl OutgoingMessage {
    /// A message with no correlation id.
    pub fn new(
        from: impl Into<String>,
        to: impl Into<String>,
        kind: MessageType,
        domain: impl Into<String>,
        payload: Value,
    ) -> Self {
        OutgoingMessage {
            from: from.into(),
            to: to.into(),
            kind,
            domain: domain.into(),
            payload,
            correlation_id: None,
        }
    }

    /// The response to `request`: from its recipient back to its sender, correlated.
    pub fn response_to(request: &AgentMessage, payload: Value) -> Self {
        OutgoingMessage {
            from: request.to.clone(),
            to: request.from.clone(),
            kind: MessageType::Response,
            domain: request.domain.clone(),
            payload,
            correlation_id: Some(request.id.clone()),
        }
    }

    /// Stamps the message with a new id and the current time.
    pub fn into_message(self) -> AgentMessage {
        AgentMessage {
            id: uuid::Uuid::new_v4().to_string(),
            from: self.from,
            to: self.to,
            kind: self.kind,
            domain: self.domain,
            payload: self.payload,
            timestamp: Utc::now(),
            correlation_id: self.correlation_id,
        }
    }
}
