//! Leases on NATS JetStream without its key-value store (which needs a newer server than
//! 2.9): a subject of a stream that keeps one message per subject holds a value, taken by
//! publishing with an expected last subject sequence, so that only one taker wins.

use agent_runtime::bus::BusError;
use async_nats::header::NATS_EXPECTED_LAST_SUBJECT_SEQUENCE;
use async_nats::jetstream::{self, stream};

fn backend(what: &str, error: impl std::fmt::Display) -> BusError {
    BusError::Backend(format!("NATS {what}: {error}"))
}

/// Leases and cutoffs: one message per subject in the `BUSLEASE_<s>` stream.
#[derive(Clone)]
pub(crate) struct Leases {
    js: jetstream::Context,
    stream: stream::Stream,
}

impl Leases {
    /// Leases on the subjects of `stream` (which keeps one message per subject).
    pub(crate) fn new(js: jetstream::Context, stream: stream::Stream) -> Self {
        Leases { js, stream }
    }

    /// The message on `subject`: its text and sequence.
    pub(crate) async fn get(&self, subject: &str) -> Result<Option<(String, u64)>, BusError> {
        match self.stream.get_last_raw_message_by_subject(subject).await {
            Ok(message) => Ok(Some((
                String::from_utf8_lossy(&message.payload).into_owned(),
                message.sequence,
            ))),
            Err(error)
                if matches!(
                    error.kind(),
                    stream::LastRawMessageErrorKind::NoMessageFound
                ) =>
            {
                Ok(None)
            }
            Err(error) => Err(backend("reading a lease", error)),
        }
    }

    /// Publishes `value` on `subject` when the subject's last sequence is `expected`
    /// (0: it holds nothing); the new sequence, or `None` when another got there first.
    pub(crate) async fn publish_if(
        &self,
        subject: &str,
        value: &str,
        expected: Option<u64>,
    ) -> Result<Option<u64>, BusError> {
        let mut headers = async_nats::HeaderMap::new();
        if let Some(expected) = expected {
            headers.insert(
                NATS_EXPECTED_LAST_SUBJECT_SEQUENCE,
                expected.to_string().as_str(),
            );
        }
        let ack = self
            .js
            .publish_with_headers(subject.to_owned(), headers, value.to_owned().into())
            .await
            .map_err(|e| backend("writing a lease", e))?
            .await;
        match ack {
            Ok(ack) => Ok(Some(ack.sequence)),
            Err(error)
                if expected.is_some()
                    && error.kind() == jetstream::context::PublishErrorKind::WrongLastSequence =>
            {
                Ok(None)
            }
            Err(error) => Err(backend("writing a lease", error)),
        }
    }

    /// Removes the value stored at `sequence`, and only that one: a value written on its
    /// subject since (a lease taken over) stays. Fails when the value is already gone.
    pub(crate) async fn release(&self, sequence: u64) -> Result<(), BusError> {
        self.stream
            .delete_message(sequence)
            .await
            .map(drop)
            .map_err(|e| backend("releasing a lease", e))
    }

    /// Removes whatever `subject` holds.
    pub(crate) async fn clear(&self, subject: &str) -> Result<(), BusError> {
        self.stream
            .purge()
            .filter(subject)
            .await
            .map_err(|e| backend("clearing a lease", e))?;
        Ok(())
    }
}
