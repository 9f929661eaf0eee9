//! [`JetStreamRunQueue`]: the runtime's [`RunQueue`] on NATS JetStream, the work queue of
//! runs that every server instance's worker takes from.
//!
//! - A work-queue stream `{PREFIX}_RUNS` holds `{prefix}.runs.{session}` messages (JSON
//!   `{"session", "product"}`, the session id as the message id, so enqueuing a run twice
//!   within the duplicate window adds one). A message stays in the stream until its run
//!   is settled, so the queue holds a session's run while its subject has a message; a
//!   run requeued after its message was lost gets a message id of its own.
//! - Workers share the durable pull consumer `workers`: a message goes to one worker at a
//!   time, and back to the queue when its worker neither settles it nor says it is still
//!   working within the ack wait (a worker that died). A worker with a limit of live runs
//!   pulls one run each time it asks for the next, so at its limit it holds none that
//!   others could run; one without a limit is handed runs ahead, in batches.
//! - A run that keeps failing is published to `{prefix}.dead.{session}` (kept by the
//!   stream `{PREFIX}_DEAD`) with its reason, and terminated in the work queue.

use std::time::Duration;

use agent_runtime::sessions::{QueuedRun, RunQueue, RunTicket, StoreError};
use async_nats::jetstream::stream::LastRawMessageErrorKind;
use async_nats::jetstream::{self, AckKind, consumer, stream};
use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::{Value, json};

use crate::NatsCoordination;

/// How long one pull for the next run waits for one before pulling again.
const PULL_WAIT: Duration = Duration::from_secs(5);

/// Runs queued in JetStream, shared by a deployment's instances.
#[derive(Clone)]
pub struct JetStreamRunQueue {
    context: jetstream::Context,
    prefix: String,
    consumer: consumer::PullConsumer,
    runs: stream::Stream,
}

impl std::fmt::Debug for JetStreamRunQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetStreamRunQueue")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

fn backend(what: &str, error: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("JetStream {what}: {error}"))
}

/// A stream name from the subject prefix (`agent.test` → `AGENT_TEST`).
fn stream_name(prefix: &str, suffix: &str) -> String {
    format!(
        "{}_{suffix}",
        prefix.replace(['.', '-'], "_").to_uppercase()
    )
}

impl JetStreamRunQueue {
    /// The queue on `nats`'s connection and subject prefix, creating its streams and
    /// consumer when missing. A worker that stops saying it works on a run for
    /// `ack_wait` loses it to another worker.
    ///
    /// Errors: [`StoreError::Backend`] when JetStream is not enabled on the server or
    /// refuses the streams.
    pub async fn new(nats: &NatsCoordination, ack_wait: Duration) -> Result<Self, StoreError> {
        let context = jetstream::new(nats.client().clone());
        let prefix = nats.prefix().to_owned();
        let runs = context
            .get_or_create_stream(stream::Config {
                name: stream_name(&prefix, "RUNS"),
                subjects: vec![format!("{prefix}.runs.>")],
                retention: stream::RetentionPolicy::WorkQueue,
                storage: stream::StorageType::File,
                duplicate_window: Duration::from_secs(120),
                ..Default::default()
            })
            .await
            .map_err(|e| backend("creating the run queue", e))?;
        context
            .get_or_create_stream(stream::Config {
                name: stream_name(&prefix, "DEAD"),
                subjects: vec![format!("{prefix}.dead.>")],
                storage: stream::StorageType::File,
                max_age: Duration::from_secs(30 * 24 * 3600),
                ..Default::default()
            })
            .await
            .map_err(|e| backend("creating the dead letters", e))?;
        let consumer = runs
            .get_or_create_consumer(
                "workers",
                consumer::pull::Config {
                    durable_name: Some("workers".to_owned()),
                    ack_policy: consumer::AckPolicy::Explicit,
                    ack_wait,
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| backend("creating the workers' consumer", e))?;
        Ok(JetStreamRunQueue {
            context,
            prefix,
            consumer,
            runs,
        })
    }

    /// The subject of `session`'s run.
    fn run_subject(&self, session: &str) -> String {
        format!(
            "{}.runs.{}",
            self.prefix,
            crate::nats_coordination::token(session)
        )
    }

    /// Publishes `session`'s run under the message id `id` and waits for JetStream's
    /// acknowledgement.
    async fn publish(&self, product: &str, session: &str, id: &str) -> Result<(), StoreError> {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(async_nats::header::NATS_MESSAGE_ID, id);
        let body = json!({"session": session, "product": product}).to_string();
        self.context
            .publish_with_headers(self.run_subject(session), headers, body.into_bytes().into())
            .await
            .map_err(|e| backend("enqueuing a run", e))?
            .await
            .map_err(|e| backend("enqueuing a run", e))?;
        Ok(())
    }

    /// Drops every queued run, as an operator's `nats stream purge` does (runs handed
    /// out stay with their workers until settled, then are gone too); returns how many.
    pub async fn purge(&self) -> Result<u64, StoreError> {
        let purged = self
            .runs
            .purge()
            .await
            .map_err(|e| backend("purging the run queue", e))?;
        Ok(purged.purged)
    }

    /// Deletes the queue's streams, queued runs and dead letters with them (a
    /// deployment's teardown; test runs).
    pub async fn delete_streams(&self) -> Result<(), StoreError> {
        for suffix in ["RUNS", "DEAD"] {
            self.context
                .delete_stream(stream_name(&self.prefix, suffix))
                .await
                .map_err(|e| backend("deleting a stream", e))?;
        }
        Ok(())
    }

    /// The dead letters so far, oldest first: `{"session", "product", "reason"}` each
    /// (for operators and tests).
    pub async fn dead_letters(&self) -> Result<Vec<Value>, StoreError> {
        let mut dead = self
            .context
            .get_stream(stream_name(&self.prefix, "DEAD"))
            .await
            .map_err(|e| backend("reading the dead letters", e))?;
        let count = dead
            .info()
            .await
            .map_err(|e| backend("reading the dead letters", e))?
            .state
            .messages;
        let mut letters = Vec::new();
        if count == 0 {
            return Ok(letters);
        }
        let reader = dead
            .create_consumer(consumer::pull::OrderedConfig::default())
            .await
            .map_err(|e| backend("reading the dead letters", e))?;
        let mut messages = reader
            .messages()
            .await
            .map_err(|e| backend("reading the dead letters", e))?;
        while (letters.len() as u64) < count {
            let next = tokio::time::timeout(Duration::from_secs(5), messages.next()).await;
            let Ok(Some(Ok(message))) = next else {
                break;
            };
            letters.push(serde_json::from_slice(&message.payload).unwrap_or(Value::Null));
        }
        Ok(letters)
    }
}

#[async_trait]
impl RunQueue for JetStreamRunQueue {
    async fn enqueue(&self, product: &str, session: &str) -> Result<(), StoreError> {
        self.publish(product, session, session).await
    }

    async fn requeue(&self, product: &str, session: &str) -> Result<(), StoreError> {
        // Not the lost message's id: within the duplicate window it would be dropped.
        let id = format!("{session}:requeued:{}", uuid::Uuid::new_v4());
        self.publish(product, session, &id).await
    }

    async fn holds(&self, session: &str) -> Result<bool, StoreError> {
        match self
            .runs
            .get_last_raw_message_by_subject(&self.run_subject(session))
            .await
        {
            Ok(_) => Ok(true),
            Err(error) if error.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(false),
            Err(error) => Err(backend("reading the run queue", error)),
        }
    }

    async fn take(
        &self,
        limit: Option<usize>,
    ) -> Result<BoxStream<'static, QueuedRun>, StoreError> {
        let messages = match limit {
            // The worker starts every run it gets at once: runs are handed out ahead, in
            // batches, the fastest way through a burst of starts.
            None => self
                .consumer
                .messages()
                .await
                .map_err(|e| backend("taking runs", e))?
                .map(|message| message.map_err(async_nats::Error::from))
                .boxed(),
            Some(_) => pulled_one_at_a_time(self.consumer.clone()),
        };
        let (context, prefix) = (self.context.clone(), self.prefix.clone());
        Ok(Box::pin(messages.filter_map(move |message| {
            let (context, prefix) = (context.clone(), prefix.clone());
            async move {
                let message = match message {
                    Ok(message) => message,
                    Err(error) => {
                        tracing::warn!(%error, "the run queue failed a delivery");
                        return None;
                    }
                };
                let body: Value = serde_json::from_slice(&message.payload).unwrap_or(Value::Null);
                let field = |name: &str| body.get(name).and_then(Value::as_str).map(str::to_owned);
                let (Some(session), Some(product)) = (field("session"), field("product")) else {
                    tracing::warn!(payload = %String::from_utf8_lossy(&message.payload), "an unreadable run: terminated");
                    let _ = message.ack_with(AckKind::Term).await;
                    return None;
                };
                let (deliveries, waiting) = message
                    .info()
                    .map(|info| (u64::try_from(info.delivered).unwrap_or(1), Some(info.pending)))
                    .unwrap_or((1, None));
                agent_runtime::process_metrics::run_delivered(&product, deliveries, waiting);
                Some(QueuedRun {
                    ticket: Box::new(Ticket {
                        message,
                        context,
                        dead_subject: format!(
                            "{prefix}.dead.{}",
                            crate::nats_coordination::token(&session)
                        ),
                        session: session.clone(),
                        product: product.clone(),
                    }),
                    session,
                    product,
                    deliveries,
                })
            }
        })))
    }
}

/// The consumer's messages, each pulled when the stream is polled for it: nothing waits
/// here for a worker at its limit while the ack wait runs out.
fn pulled_one_at_a_time(
    consumer: consumer::PullConsumer,
) -> BoxStream<'static, Result<jetstream::Message, async_nats::Error>> {
    futures::stream::unfold(consumer, |consumer| async move {
        loop {
            let pulled = consumer
                .batch()
                .max_messages(1)
                .expires(PULL_WAIT)
                .messages()
                .await;
            match pulled {
                Ok(mut pulled) => {
                    if let Some(message) = pulled.next().await {
                        return Some((message, consumer));
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "the run queue could not be read; pulling again");
                    tokio::time::sleep(PULL_WAIT).await;
                }
            }
        }
    })
    .boxed()
}

/// A run taken from JetStream.
struct Ticket {
    message: jetstream::Message,
    context: jetstream::Context,
    dead_subject: String,
    session: String,
    product: String,
}

#[async_trait]
impl RunTicket for Ticket {
    async fn working(&self) -> Result<(), StoreError> {
        self.message
            .ack_with(AckKind::Progress)
            .await
            .map_err(|e| backend("renewing a run", e))
    }

    async fn done(self: Box<Self>) -> Result<(), StoreError> {
        self.message
            .double_ack()
            .await
            .map_err(|e| backend("settling a run", e))
    }

    async fn retry_after(self: Box<Self>, delay: Duration) -> Result<(), StoreError> {
        self.message
            .ack_with(AckKind::Nak(Some(delay)))
            .await
            .map_err(|e| backend("putting a run back", e))
    }

    async fn dead(self: Box<Self>, reason: &str) -> Result<(), StoreError> {
        let letter = json!({"session": self.session, "product": self.product, "reason": reason});
        self.context
            .publish(
                self.dead_subject.clone(),
                letter.to_string().into_bytes().into(),
            )
            .await
            .map_err(|e| backend("writing a dead letter", e))?
            .await
            .map_err(|e| backend("writing a dead letter", e))?;
        self.message
            .ack_with(AckKind::Term)
            .await
            .map_err(|e| backend("terminating a run", e))
    }
}
