//! [`NatsCoordination`]: the runtime's [`EventFanout`] and [`SessionControl`] on core
//! NATS, so server instances share live events and reach each other's sessions.
//!
//! Subjects, under a prefix (`agent` by default), with the session id as one token
//! (characters NATS gives a meaning to are escaped):
//!
//! - `{prefix}.events.{session}`: the session's stored events as `{"seq", "event"}`, in
//!   the order they were stored (one publisher task per connection keeps it), then
//!   `{"end": true}` when the run ends on its instance.
//! - `{prefix}.control.{session}`: requests for the instance that runs the session, as
//!   NATS requests (the reply goes to the request's inbox). The running instance
//!   subscribes in the queue group `runner`, so one reply comes back even while a run is
//!   being taken over; no subscriber is NATS's "no responders", read as "runs nowhere".
//!
//! Events are not kept by NATS: a stream that misses one (a slow consumer) sees the gap
//! in the numbers and reads it from the store, as every stream does.

use std::sync::Arc;
use std::time::Duration;

use agent_runtime::sessions::{ControlRequest, EventFanout, Fanned, SessionControl, StoreError};
use async_nats::{Client, RequestError, RequestErrorKind};
use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// The NATS coordination of a deployment's server instances: live events and session
/// control. Cheap to clone.
///
/// ```no_run
/// use std::sync::Arc;
/// use agent_backends::NatsCoordination;
/// # async fn run() -> Result<(), agent_runtime::sessions::StoreError> {
/// let nats = Arc::new(NatsCoordination::connect("nats://127.0.0.1:4222").await?);
/// // agent_server::AgentServer::new(store).with_fanout(nats.clone()).with_control(nats)
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct NatsCoordination {
    client: Client,
    prefix: String,
    /// Events to publish, in order, by one task.
    outgoing: mpsc::UnboundedSender<(String, Value)>,
}

impl std::fmt::Debug for NatsCoordination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsCoordination")
            .field("prefix", &self.prefix)
            .field("state", &self.client.connection_state())
            .finish()
    }
}

/// Waits until the server has read everything this client sent before, its new
/// subscriptions included: a request nobody answers comes back as "no responders" only
/// after that. (`Client::flush` only empties the client's own write buffer, so another
/// client's message could still miss a subscription just made.)
pub(crate) async fn server_caught_up(client: &Client) -> Result<(), RequestError> {
    match client.request(client.new_inbox(), Vec::new().into()).await {
        Err(error) if error.kind() != RequestErrorKind::NoResponders => Err(error),
        _ => Ok(()),
    }
}

/// A session id as one subject token: letters, digits, `-` and `_` kept, anything else
/// escaped as `~` and its code point in hex.
pub(crate) fn token(session: &str) -> String {
    let mut out = String::with_capacity(session.len());
    for c in session.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            out.push(c);
        } else {
            out.push_str(&format!("~{:x}~", u32::from(c)));
        }
    }
    if out.is_empty() { "~".to_owned() } else { out }
}

fn backend(what: &str, error: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("NATS {what}: {error}"))
}

impl NatsCoordination {
    /// Connects to the NATS server at `url`, with subjects under `agent`.
    ///
    /// Errors: [`StoreError::Backend`] when the server cannot be reached.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with_prefix(url, "agent").await
    }

    /// As [`connect`](Self::connect), with subjects under `prefix` (letters, digits, `-`,
    /// `_` and `.`): several deployments, or test runs, on one server.
    pub async fn connect_with_prefix(url: &str, prefix: &str) -> Result<Self, StoreError> {
        let valid = !prefix.is_empty()
            && prefix
                .split('.')
                .all(|part| !part.is_empty() && token(part) == part);
        if !valid {
            return Err(StoreError::Backend(format!(
                "NATS subject prefix {prefix:?}: use letters, digits, '-', '_' and '.'"
            )));
        }
        let client = async_nats::ConnectOptions::new()
            .connection_timeout(Duration::from_secs(5))
            .name("agent-server")
            .connect(url)
            .await
            .map_err(|e| backend(&format!("connecting to {url}"), e))?;
        let (outgoing, mut queue) = mpsc::unbounded_channel::<(String, Value)>();
        let publisher = client.clone();
        tokio::spawn(async move {
            while let Some((subject, body)) = queue.recv().await {
                let payload = body.to_string().into_bytes();
                if let Err(error) = publisher.publish(subject, payload.into()).await {
                    tracing::warn!(%error, "an event was not published; streams read it from the store");
                }
            }
        });
        Ok(NatsCoordination {
            client,
            prefix: prefix.to_owned(),
            outgoing,
        })
    }

    /// The underlying client (for the JetStream run queue on the same connection).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The subject prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn events_subject(&self, session: &str) -> String {
        format!("{}.events.{}", self.prefix, token(session))
    }

    fn control_subject(&self, session: &str) -> String {
        format!("{}.control.{}", self.prefix, token(session))
    }

    fn enqueue(&self, session: &str, body: Value) {
        if self
            .outgoing
            .send((self.events_subject(session), body))
            .is_err()
        {
            tracing::warn!(session, "the NATS publisher has stopped");
        }
    }
}

/// A message on an events subject, as a subscriber reads it; `None` ends the stream.
fn fanned(payload: &[u8]) -> Option<Fanned> {
    let Ok(body) = serde_json::from_slice::<Value>(payload) else {
        return Some(Fanned::Lagged);
    };
    if body.get("end").is_some() {
        return None;
    }
    match (body.get("seq").and_then(Value::as_u64), body.get("event")) {
        (Some(seq), Some(event)) => Some(Fanned::Event(seq, Arc::new(event.clone()))),
        _ => Some(Fanned::Lagged),
    }
}

#[async_trait]
impl EventFanout for NatsCoordination {
    fn publish(&self, session: &str, seq: u64, event: Arc<Value>) {
        self.enqueue(session, json!({"seq": seq, "event": &*event}));
    }

    async fn subscribe(&self, session: &str) -> Result<BoxStream<'static, Fanned>, StoreError> {
        let subscriber = self
            .client
            .subscribe(self.events_subject(session))
            .await
            .map_err(|e| backend("subscribing", e))?;
        server_caught_up(&self.client)
            .await
            .map_err(|e| backend("subscribing", e))?;
        Ok(Box::pin(
            subscriber
                .map(|message| fanned(&message.payload))
                .take_while(|item| std::future::ready(item.is_some()))
                .filter_map(std::future::ready),
        ))
    }

    fn close(&self, session: &str) {
        self.enqueue(session, json!({"end": true}));
    }
}

#[async_trait]
impl SessionControl for NatsCoordination {
    async fn ask(
        &self,
        session: &str,
        body: Value,
        timeout: Duration,
    ) -> Result<Option<Value>, StoreError> {
        let subject = self.control_subject(session);
        let request = self
            .client
            .request(subject, body.to_string().into_bytes().into());
        let reply = match tokio::time::timeout(timeout, request).await {
            Err(_) => {
                return Err(backend(
                    "control",
                    format!("no reply for session {session:?} within {timeout:?}"),
                ));
            }
            Ok(Err(error)) if error.kind() == RequestErrorKind::NoResponders => return Ok(None),
            Ok(Err(error)) => return Err(backend("control", error)),
            Ok(Ok(reply)) => reply,
        };
        serde_json::from_slice(&reply.payload)
            .map(Some)
            .map_err(|e| backend("control", format!("an unreadable reply: {e}")))
    }

    async fn serve(&self, session: &str) -> Result<BoxStream<'static, ControlRequest>, StoreError> {
        let subscriber = self
            .client
            .queue_subscribe(self.control_subject(session), "runner".to_owned())
            .await
            .map_err(|e| backend("serving control", e))?;
        server_caught_up(&self.client)
            .await
            .map_err(|e| backend("serving control", e))?;
        let client = self.client.clone();
        Ok(Box::pin(subscriber.filter_map(move |message| {
            let client = client.clone();
            async move {
                let reply_to = message.reply?;
                let body = serde_json::from_slice(&message.payload).unwrap_or(Value::Null);
                let (reply, replied) = oneshot::channel::<Value>();
                tokio::spawn(async move {
                    if let Ok(answer) = replied.await {
                        let payload = answer.to_string().into_bytes();
                        if let Err(error) = client.publish(reply_to, payload.into()).await {
                            tracing::warn!(%error, "a control reply was not sent");
                        }
                    }
                });
                Some(ControlRequest { body, reply })
            }
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_become_one_subject_token() {
        assert_eq!(token("3f2a-9c_x"), "3f2a-9c_x");
        assert_eq!(token("a.b*c >"), "a~2e~b~2a~c~20~~3e~");
        assert_eq!(token(""), "~");
    }

    #[test]
    fn event_messages_read_back() {
        assert!(matches!(
            fanned(br#"{"seq": 3, "event": {"type": "x"}}"#),
            Some(Fanned::Event(3, _))
        ));
        assert_eq!(fanned(br#"{"end": true}"#), None);
        assert_eq!(fanned(b"not json"), Some(Fanned::Lagged));
    }
}
