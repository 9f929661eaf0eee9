//! [`NatsBus`]: the runtime's [`AgentBus`] on NATS JetStream, for a session whose agents
//! run in several processes: a subject per session and agent.
//!
//! Per session `<s>` (the session id in hex):
//!
//! - the stream `BUS_<s>` (work-queue retention) on `bus.<s>.in.<domain>.<agent>`: a
//!   recipient's subject *is* its held queue, at most the held cap per subject (the server
//!   refuses more: [`BusError::Undeliverable`]); each subscriber reads through a durable
//!   pull consumer of its own (its offset kept by JetStream), one message at a time, and
//!   acknowledges a message when it asks for the next (or drops its stream): at least once;
//! - the stream `BUSLOG_<s>` on `bus.<s>.log`: the audit log, capped at the log cap;
//! - the stream `BUSLEASE_<s>` (one message per subject, kept 30 s): on
//!   `bus.<s>.sub.<domain>.<agent>` the lease that makes one subscriber per agent (taken
//!   by publishing with an expected last subject sequence of 0, so only one taker wins;
//!   renewed by publishing over it with the sequence it holds), and on
//!   `bus.<s>.cut.<domain>.<agent>` what `unsubscribe` lets the ended stream still
//!   deliver (JetStream's key-value store would do, but needs a newer server than 2.9);
//! - core subjects `bus.<s>.reply.<request id>` (a waiting request takes its response
//!   there: the sender asks that subject first, and "no responders" means nobody waits,
//!   so the response goes to the recipient) and `bus.<s>.reset`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_runtime::bus::{
    AgentBus, AgentMessage, BusError, MessageStream, MessageType, OutgoingMessage, accept,
    accept_request, validate_agent,
};
use async_nats::jetstream::{self, consumer, stream};
use async_trait::async_trait;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::nats_coordination::server_caught_up;
use crate::nats_leases::Leases;

mod reader;

use reader::{Reader, ReaderGuard};

/// How long a subscription's lease lasts unless renewed (renewed every third of it).
const LEASE: Duration = Duration::from_secs(30);
/// How many times a subscriber looks again for a lease a dropped stream is letting go of.
const LEASE_TAKEOVER_TRIES: usize = 4;
/// How long one fetch waits for a message before looking at the lease again.
const POLL: Duration = Duration::from_millis(100);
/// How long a taken message may go unacknowledged before JetStream offers it again.
const ACK_WAIT: Duration = Duration::from_secs(300);

fn backend(what: &str, error: impl std::fmt::Display) -> BusError {
    BusError::Backend(format!("NATS {what}: {error}"))
}

/// The session's JetStream parts.
#[derive(Clone)]
struct Parts {
    inbox: stream::Stream,
    log: Option<stream::Stream>,
    leases: Leases,
}

/// The agent bus of one session on NATS JetStream. Cheap to clone.
#[derive(Clone)]
pub struct NatsBus {
    client: async_nats::Client,
    js: jetstream::Context,
    id: String,
    log_cap: usize,
    held_cap: usize,
    parts: Arc<tokio::sync::Mutex<Option<Parts>>>,
    /// Leases this process let go of but has not deleted yet.
    released: Arc<Mutex<HashSet<String>>>,
}

impl std::fmt::Debug for NatsBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsBus")
            .field("session", &self.id)
            .field("log_cap", &self.log_cap)
            .field("held_cap", &self.held_cap)
            .finish_non_exhaustive()
    }
}

impl NatsBus {
    /// The bus of `session` at `url` (`nats://127.0.0.1:4222`, JetStream enabled), with
    /// the in-memory bus's limits: the 500 most recent messages logged, 1,000 held per
    /// recipient.
    pub async fn connect(url: &str, session: &str) -> Result<Self, BusError> {
        let client = async_nats::connect(url)
            .await
            .map_err(|e| backend("connecting", e))?;
        Ok(NatsBus::new(client, session))
    }

    /// The bus of `session` on an existing connection.
    pub fn new(client: async_nats::Client, session: &str) -> Self {
        NatsBus {
            js: jetstream::new(client.clone()),
            client,
            id: hex::encode(session),
            log_cap: 500,
            held_cap: 1_000,
            parts: Arc::default(),
            released: Arc::default(),
        }
    }

    /// Other limits: the `log_cap` most recent messages in the log, `held_cap` held per
    /// recipient.
    pub fn with_limits(mut self, log_cap: usize, held_cap: usize) -> Self {
        self.log_cap = log_cap;
        self.held_cap = held_cap;
        self
    }

    fn inbox_subject(&self, domain: &str, agent: &str) -> String {
        format!(
            "bus.{}.in.{}.{}",
            self.id,
            hex::encode(domain),
            hex::encode(agent)
        )
    }

    fn name(&self, prefix: &str) -> String {
        format!("{prefix}_{}", self.id)
    }

    fn lease_subject(&self, domain: &str, agent: &str) -> String {
        format!(
            "bus.{}.sub.{}.{}",
            self.id,
            hex::encode(domain),
            hex::encode(agent)
        )
    }

    fn cutoff_subject(&self, domain: &str, agent: &str) -> String {
        format!(
            "bus.{}.cut.{}.{}",
            self.id,
            hex::encode(domain),
            hex::encode(agent)
        )
    }

    fn reset_subject(&self) -> String {
        format!("bus.{}.reset", self.id)
    }

    fn reply_subject(&self, request: &str) -> String {
        format!("bus.{}.reply.{}", self.id, hex::encode(request))
    }

    /// The session's streams and bucket, made when missing.
    async fn parts(&self) -> Result<Parts, BusError> {
        let mut cached = self.parts.lock().await;
        if let Some(parts) = cached.as_ref() {
            return Ok(parts.clone());
        }
        let inbox = self
            .js
            .get_or_create_stream(stream::Config {
                name: self.name("BUS"),
                subjects: vec![format!("bus.{}.in.>", self.id)],
                retention: stream::RetentionPolicy::WorkQueue,
                // A cap of 0 is checked before publishing: 0 means "no limit" here.
                max_messages_per_subject: i64::try_from(self.held_cap.max(1)).unwrap_or(i64::MAX),
                discard: stream::DiscardPolicy::New,
                discard_new_per_subject: true,
                ..Default::default()
            })
            .await
            .map_err(|e| backend("creating the bus stream", e))?;
        let log = if self.log_cap == 0 {
            None
        } else {
            Some(
                self.js
                    .get_or_create_stream(stream::Config {
                        name: self.name("BUSLOG"),
                        subjects: vec![format!("bus.{}.log", self.id)],
                        max_messages: i64::try_from(self.log_cap).unwrap_or(i64::MAX),
                        discard: stream::DiscardPolicy::Old,
                        ..Default::default()
                    })
                    .await
                    .map_err(|e| backend("creating the log stream", e))?,
            )
        };
        let lease_stream = self
            .js
            .get_or_create_stream(stream::Config {
                name: self.name("BUSLEASE"),
                subjects: vec![
                    format!("bus.{}.sub.>", self.id),
                    format!("bus.{}.cut.>", self.id),
                ],
                max_messages_per_subject: 1,
                max_age: LEASE,
                ..Default::default()
            })
            .await
            .map_err(|e| backend("creating the lease stream", e))?;
        let leases = Leases::new(self.js.clone(), lease_stream);
        let parts = Parts { inbox, log, leases };
        *cached = Some(parts.clone());
        Ok(parts)
    }

    /// Logs a stamped message, then routes it: to the request waiting for it, else to
    /// its recipient's subject.
    async fn route(&self, message: &AgentMessage) -> Result<(), BusError> {
        let parts = self.parts().await?;
        let json = serde_json::to_vec(message)
            .map_err(|e| BusError::Invalid(format!("the payload is not JSON: {e}")))?;
        if parts.log.is_some() {
            self.js
                .publish(format!("bus.{}.log", self.id), json.clone().into())
                .await
                .map_err(|e| backend("logging", e))?
                .await
                .map_err(|e| backend("logging", e))?;
        }
        if message.kind == MessageType::Response
            && let Some(correlation) = &message.correlation_id
        {
            let asked = self
                .client
                .request(self.reply_subject(correlation), json.clone().into());
            if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(2), asked).await {
                return Ok(());
            }
        }
        let undeliverable = |held: String| BusError::Undeliverable {
            domain: message.domain.clone(),
            to: message.to.clone(),
            reason: format!("no subscriber, and {held} messages are already held (the limit)"),
        };
        if self.held_cap == 0
            && parts
                .leases
                .get(&self.lease_subject(&message.domain, &message.to))
                .await?
                .is_none()
        {
            return Err(undeliverable("0".into()));
        }
        let published = self
            .js
            .publish(
                self.inbox_subject(&message.domain, &message.to),
                json.into(),
            )
            .await
            .map_err(|e| backend("sending", e))?
            .await;
        match published {
            Ok(_) => Ok(()),
            Err(error) if store_refused(&error) => {
                tracing::warn!(domain = %message.domain, to = %message.to, id = %message.id, %error, "bus: held queue full; message undeliverable");
                Err(undeliverable(self.held_cap.to_string()))
            }
            Err(error) => Err(backend("sending", error)),
        }
    }
}

/// Whether JetStream's store refused a publish (`STREAM_STORE_FAILED`): on a recipient's
/// subject, whose stream discards new messages past the held cap, the cap is full.
fn store_refused(error: &jetstream::context::PublishError) -> bool {
    use std::error::Error as _;
    error.source().is_some_and(|source| {
        source
            .downcast_ref::<jetstream::Error>()
            .is_some_and(|api| api.error_code() == jetstream::ErrorCode::STREAM_STORE_FAILED)
    })
}

impl NatsBus {
    /// Takes the subscriber's lease for `token` when it is free, or held by a stream this
    /// process dropped a moment ago; answers its sequence, or `None` when a live
    /// subscriber holds it. The dropped stream's clean-up runs meanwhile on another task
    /// (it may renew the lease once more, then clear it), so a takeover that finds the
    /// lease moved looks again.
    async fn take_lease(
        &self,
        leases: &Leases,
        lease: &str,
        token: &str,
    ) -> Result<Option<u64>, BusError> {
        for _ in 0..LEASE_TAKEOVER_TRIES {
            if let Some(sequence) = leases.publish_if(lease, token, Some(0)).await? {
                return Ok(Some(sequence));
            }
            let Some((holder, sequence)) = leases.get(lease).await? else {
                continue;
            };
            if !self.released.lock().is_ok_and(|r| r.contains(&holder)) {
                return Ok(None);
            }
            if let Some(sequence) = leases.publish_if(lease, token, Some(sequence)).await? {
                return Ok(Some(sequence));
            }
        }
        Ok(None)
    }
}

#[async_trait]
impl AgentBus for NatsBus {
    async fn subscribe(&self, domain: &str, agent: &str) -> Result<MessageStream, BusError> {
        validate_agent(domain, agent)?;
        let parts = self.parts().await?;
        let lease = self.lease_subject(domain, agent);
        let token = uuid::Uuid::new_v4().to_string();
        let Some(mut sequence) = self.take_lease(&parts.leases, &lease, &token).await? else {
            return Err(BusError::AlreadySubscribed {
                domain: domain.to_owned(),
                agent: agent.to_owned(),
            });
        };
        let cutoff = self.cutoff_subject(domain, agent);
        parts.leases.clear(&cutoff).await?;
        let durable = format!("in_{}_{}", hex::encode(domain), hex::encode(agent));
        let consumer = parts
            .inbox
            .get_or_create_consumer(
                &durable,
                consumer::pull::Config {
                    durable_name: Some(durable.clone()),
                    filter_subject: self.inbox_subject(domain, agent),
                    ack_policy: consumer::AckPolicy::Explicit,
                    ack_wait: ACK_WAIT,
                    max_ack_pending: 1,
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| backend("creating the subscriber's consumer", e))?;

        let renewal = CancellationToken::new();
        {
            let (stop, leases, lease, token) = (
                renewal.clone(),
                parts.leases.clone(),
                lease.clone(),
                token.clone(),
            );
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(LEASE / 3) => {}
                    }
                    match leases.publish_if(&lease, &token, Some(sequence)).await {
                        Ok(Some(renewed)) => sequence = renewed,
                        _ => return,
                    }
                }
            });
        }
        let taken = Arc::new(Mutex::new(None));
        let reader = Reader {
            consumer,
            leases: parts.leases.clone(),
            lease: lease.clone(),
            cutoff,
            token: token.clone(),
            taken: taken.clone(),
            ending: None,
            _guard: ReaderGuard {
                leases: parts.leases,
                lease,
                token,
                taken,
                renewal,
                released: self.released.clone(),
            },
        };
        let stream = futures::stream::unfold(reader, |mut reader| async move {
            match reader.next().await {
                Ok(Some(message)) => Some((message, reader)),
                Ok(None) => None,
                Err(error) => {
                    tracing::warn!(%error, "bus: the subscription's reads failed; its stream ends");
                    None
                }
            }
        });
        Ok(Box::pin(stream))
    }

    async fn unsubscribe(&self, domain: &str, agent: &str) -> Result<(), BusError> {
        let parts = self.parts().await?;
        let lease = self.lease_subject(domain, agent);
        if parts.leases.get(&lease).await?.is_none() {
            return Ok(());
        }
        let last = parts
            .inbox
            .get_last_raw_message_by_subject(&self.inbox_subject(domain, agent))
            .await
            .map(|m| m.sequence)
            .unwrap_or(0);
        let cutoff = self.cutoff_subject(domain, agent);
        parts
            .leases
            .publish_if(&cutoff, &last.to_string(), None)
            .await?;
        parts.leases.clear(&lease).await?;
        Ok(())
    }

    async fn send(&self, message: OutgoingMessage) -> Result<AgentMessage, BusError> {
        let message = accept(message)?;
        self.route(&message).await?;
        Ok(message)
    }

    async fn request(
        &self,
        message: OutgoingMessage,
        timeout: Duration,
    ) -> Result<AgentMessage, BusError> {
        let message = accept_request(message)?;
        let mut replies = self
            .client
            .subscribe(self.reply_subject(&message.id))
            .await
            .map_err(|e| backend("waiting for a response", e))?;
        let mut resets = self
            .client
            .subscribe(self.reset_subject())
            .await
            .map_err(|e| backend("waiting for a response", e))?;
        server_caught_up(&self.client)
            .await
            .map_err(|e| backend("waiting for a response", e))?;
        self.route(&message).await?;
        tokio::select! {
            reply = replies.next() => {
                let Some(reply) = reply else {
                    return Err(backend("waiting for a response", "the subscription ended"));
                };
                if let Some(to) = reply.reply.clone() {
                    let _ = self.client.publish(to, "taken".into()).await;
                }
                serde_json::from_slice(&reply.payload).map_err(|e| backend("reading a response", e))
            }
            _ = resets.next() => Err(BusError::Backend(format!(
                "the bus was reset while request {} waited for its response",
                message.id
            ))),
            () = tokio::time::sleep(timeout) => Err(BusError::Timeout { id: message.id, after: timeout }),
        }
    }

    async fn log(&self) -> Result<Vec<AgentMessage>, BusError> {
        let parts = self.parts().await?;
        let Some(mut log) = parts.log else {
            return Ok(Vec::new());
        };
        let count = log
            .info()
            .await
            .map_err(|e| backend("reading the log", e))?
            .state
            .messages;
        let mut messages = Vec::new();
        if count == 0 {
            return Ok(messages);
        }
        let reader = log
            .create_consumer(consumer::pull::OrderedConfig::default())
            .await
            .map_err(|e| backend("reading the log", e))?;
        let mut stream = reader
            .messages()
            .await
            .map_err(|e| backend("reading the log", e))?;
        while (messages.len() as u64) < count {
            match tokio::time::timeout(Duration::from_secs(5), stream.next()).await {
                Ok(Some(Ok(message))) => messages.push(
                    serde_json::from_slice(&message.payload)
                        .map_err(|e| backend("reading the log", e))?,
                ),
                _ => break,
            }
        }
        Ok(messages)
    }

    async fn reset(&self) -> Result<(), BusError> {
        self.client
            .publish(self.reset_subject(), "reset".into())
            .await
            .map_err(|e| backend("resetting", e))?;
        self.client
            .flush()
            .await
            .map_err(|e| backend("resetting", e))?;
        let mut cached = self.parts.lock().await;
        *cached = None;
        for name in [self.name("BUS"), self.name("BUSLOG"), self.name("BUSLEASE")] {
            let _ = self.js.delete_stream(&name).await;
        }
        Ok(())
    }
}
