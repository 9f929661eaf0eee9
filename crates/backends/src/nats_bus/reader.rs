//! One subscription's reading of its recipient's subject: one message fetched at a time
//! and acknowledged when the next is asked for, the lease looked at between fetches, and
//! what it held let go of when the stream is dropped.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_runtime::bus::{AgentMessage, BusError};
use async_nats::jetstream::{self, AckKind, consumer};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::{POLL, backend};
use crate::nats_leases::Leases;

/// One subscription's reading state.
pub(super) struct Reader {
    pub(super) consumer: consumer::Consumer<consumer::pull::Config>,
    pub(super) leases: Leases,
    pub(super) lease: String,
    pub(super) cutoff: String,
    pub(super) token: String,
    pub(super) taken: Arc<Mutex<Option<jetstream::Message>>>,
    pub(super) ending: Option<u64>,
    pub(super) _guard: ReaderGuard,
}

/// Lets go of the lease and acknowledges the taken message when the stream is dropped.
pub(super) struct ReaderGuard {
    pub(super) leases: Leases,
    pub(super) lease: String,
    pub(super) token: String,
    pub(super) taken: Arc<Mutex<Option<jetstream::Message>>>,
    pub(super) renewal: CancellationToken,
    pub(super) released: Arc<Mutex<HashSet<String>>>,
}

impl Drop for ReaderGuard {
    fn drop(&mut self) {
        self.renewal.cancel();
        if let Ok(mut released) = self.released.lock() {
            released.insert(self.token.clone());
        }
        let taken = self.taken.lock().ok().and_then(|mut t| t.take());
        let (leases, lease, token, released) = (
            self.leases.clone(),
            self.lease.clone(),
            self.token.clone(),
            self.released.clone(),
        );
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Some(message) = taken {
                    let _ = message.ack().await;
                }
                // Only the value this stream held: a subscriber that took the lease over
                // meanwhile keeps it (and the value is then gone: nothing to release).
                if let Ok(Some((holder, sequence))) = leases.get(&lease).await
                    && holder == token
                {
                    let _ = leases.release(sequence).await;
                }
                if let Ok(mut released) = released.lock() {
                    released.remove(&token);
                }
            });
        }
    }
}

/// Whether a read failed because the session's streams are gone (the bus was reset), not
/// because NATS could not be reached: the subscription ends at once.
fn gone(reason: &str) -> bool {
    reason.contains("not found")
}

/// How long a subscription keeps reading through NATS failures (a server restart, a
/// dropped connection) before its stream ends with the error.
const READ_THROUGH: Duration = Duration::from_secs(30);

impl Reader {
    /// The next message of the subscription; `None` once it has ended. Reads through
    /// NATS failures for up to [`READ_THROUGH`], pausing between tries: a restarted
    /// server loses the subscription nothing (a message whose acknowledgement failed is
    /// acknowledged again, or delivered again after its ack wait: at least once).
    pub(super) async fn next(&mut self) -> Result<Option<AgentMessage>, BusError> {
        let started = tokio::time::Instant::now();
        let mut pause = Duration::from_millis(100);
        loop {
            match self.try_next().await {
                Err(BusError::Backend(reason))
                    if started.elapsed() < READ_THROUGH && !gone(&reason) =>
                {
                    tracing::debug!(%reason, "bus: a subscription's read failed; trying again");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
                other => return other,
            }
        }
    }

    /// One try at [`next`](Self::next).
    async fn try_next(&mut self) -> Result<Option<AgentMessage>, BusError> {
        loop {
            let taken = self.taken.lock().ok().and_then(|mut t| t.take());
            if let Some(message) = taken
                && let Err(error) = message.ack().await
            {
                // Kept, to be acknowledged on the next try.
                if let Ok(mut slot) = self.taken.lock() {
                    *slot = Some(message);
                }
                return Err(backend("acknowledging", error));
            }
            if self.ending.is_none() {
                let holder = self.leases.get(&self.lease).await?;
                if holder.is_none_or(|(holder, _)| holder != self.token) {
                    let cutoff = self.leases.get(&self.cutoff).await?;
                    self.ending = Some(cutoff.and_then(|(c, _)| c.parse().ok()).unwrap_or(0));
                }
            }
            let wait = if self.ending.is_some() {
                Duration::from_millis(20)
            } else {
                POLL
            };
            let mut batch = self
                .consumer
                .fetch()
                .max_messages(1)
                .expires(wait)
                .messages()
                .await
                .map_err(|e| backend("fetching", e))?;
            match (batch.next().await, self.ending) {
                (Some(Ok(message)), ending) => {
                    let sequence = message
                        .info()
                        .map(|info| info.stream_sequence)
                        .map_err(|e| backend("reading a delivery", e))?;
                    if ending.is_some_and(|cutoff| sequence > cutoff) {
                        // For the next subscriber.
                        let _ = message.ack_with(AckKind::Nak(None)).await;
                        return Ok(None);
                    }
                    let parsed: AgentMessage = serde_json::from_slice(&message.payload)
                        .map_err(|e| backend("reading a message", e))?;
                    if let Ok(mut taken) = self.taken.lock() {
                        *taken = Some(message);
                    }
                    return Ok(Some(parsed));
                }
                (Some(Err(error)), _) => return Err(backend("fetching", error)),
                (None, Some(_)) => return Ok(None),
                (None, None) => {}
            }
        }
    }
}
