//! The stored form of checkpoints, for stores kept outside this crate (a database in
//! `agent-backends`, say): full snapshots and deltas on the previous checkpoint, encoded
//! by a [`CheckpointEncoder`] and rebuilt by a [`CheckpointDecoder`].
//!
//! A record's JSON ([`EncodedCheckpoint::json`]) is exactly what
//! [`FileCheckpointStore`](super::FileCheckpointStore) writes in a checkpoint file, so a
//! store using these types keeps the same format and the same storage behaviour (see
//! [`SnapshotPolicy`]) as the built-in ones.
//!
//! A store keeps one encoder per run it writes to (the run's latest checkpoint, rebuilt:
//! the base of the next delta) and every record it encodes; to load checkpoint `n`, it
//! feeds a decoder the records from the nearest full snapshot at or before `n` up to `n`,
//! oldest first.
//!
//! ```
//! use agent_runtime::checkpoint::{
//!     Checkpoint, CheckpointDecoder, CheckpointEncoder, EncodedCheckpoint, JsonText,
//!     SnapshotPolicy,
//! };
//! use serde_json::json;
//!
//! let mut encoder = CheckpointEncoder::new(SnapshotPolicy::default());
//! let state = JsonText::of(&json!({"messages": ["hi"]}))?;
//! let first = Checkpoint::new("run-1", 1, "ask", state).with_next("answer");
//! let state = JsonText::of(&json!({"messages": ["hi", "hello"]}))?;
//! let second = Checkpoint::new("run-1", 2, "answer", state);
//! let mut stored = Vec::new();
//! for checkpoint in [&first, &second] {
//!     stored.push(encoder.encode(checkpoint)?.into_json());
//! }
//! // The second is kept as the message it appended.
//! assert!(!stored[1].contains("\"hi\""));
//!
//! let mut decoder = CheckpointDecoder::new();
//! for text in &stored {
//!     decoder.push(EncodedCheckpoint::from_json(text, "run-1")?)?;
//! }
//! assert_eq!(decoder.into_latest(), Some(second));
//! # Ok::<(), agent_runtime::checkpoint::CheckpointError>(())
//! ```

use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::body::Body;
use super::delta::{Head, StoredCheckpoint};
use super::rebuild::Rebuilder;
use super::{CHECKPOINT_SCHEMA_VERSION, Checkpoint, CheckpointError, SnapshotPolicy};

/// One checkpoint in its stored form: in full, or as a delta on the run's previous
/// checkpoint (the appended array items and the changed fields of its state).
///
/// Made by a [`CheckpointEncoder`] (or [`full`](Self::full)), kept as JSON text
/// ([`json`](Self::json), [`from_json`](Self::from_json)) and turned back into
/// checkpoints by a [`CheckpointDecoder`]. It holds its text, serialized once.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedCheckpoint {
    record: StoredCheckpoint,
    json: String,
}

impl EncodedCheckpoint {
    /// `checkpoint` in full, loadable without any other record (what a store writes over
    /// the oldest record it keeps when pruning removes the records before it).
    ///
    /// ```
    /// use agent_runtime::checkpoint::{Checkpoint, EncodedCheckpoint, JsonText};
    /// let state = JsonText::of(&serde_json::json!({}))?;
    /// let full = EncodedCheckpoint::full(&Checkpoint::new("r", 7, "n", state))?;
    /// assert!(full.is_full() && full.base_seq().is_none());
    /// # Ok::<(), agent_runtime::checkpoint::CheckpointError>(())
    /// ```
    ///
    /// Errors: [`CheckpointError::Serde`] only if the checkpoint holds something JSON
    /// cannot represent, which its JSON texts never do.
    pub fn full(checkpoint: &Checkpoint) -> Result<Self, CheckpointError> {
        let (record, json) =
            StoredCheckpoint::encode_to_json(checkpoint, &mut None, SnapshotPolicy::Every(1))?;
        Ok(Self { record, json })
    }

    /// The run.
    pub fn run_id(&self) -> &str {
        &self.record.run_id
    }

    /// The checkpoint's seq.
    pub fn seq(&self) -> u64 {
        self.record.seq
    }

    /// The node the checkpoint was taken after (or inside).
    pub fn node(&self) -> &str {
        &self.record.node
    }

    /// When the checkpoint was taken.
    pub fn at(&self) -> DateTime<Utc> {
        self.record.at
    }

    /// The checkpoint format version it was written with.
    pub fn schema_version(&self) -> u32 {
        self.record.schema_version
    }

    /// Whether it is a full snapshot, loadable on its own.
    pub fn is_full(&self) -> bool {
        self.record.is_full()
    }

    /// The seq of the checkpoint it is a delta on; `None` for a full snapshot.
    pub fn base_seq(&self) -> Option<u64> {
        match &self.record.body {
            Body::Full { .. } => None,
            Body::Delta { base_seq, .. } => Some(*base_seq),
        }
    }

    /// The record as JSON text (the format of a
    /// [`FileCheckpointStore`](super::FileCheckpointStore) file).
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The record as JSON text, taken out of it.
    pub fn into_json(self) -> String {
        self.json
    }

    /// Reads a record back from [`json`](Self::json)'s text. `ident` names the
    /// record in errors (its run and seq, a file, a database row).
    ///
    /// Errors: [`CheckpointError::Corrupt`] when the text is not a record;
    /// [`CheckpointError::SchemaVersion`] when a newer format wrote it.
    ///
    /// ```
    /// use agent_runtime::checkpoint::{CheckpointError, EncodedCheckpoint};
    /// let bad = EncodedCheckpoint::from_json("{\"oops\"", "run \"r\" seq 3");
    /// assert!(matches!(bad, Err(CheckpointError::Corrupt { ident, .. }) if ident == "run \"r\" seq 3"));
    /// ```
    pub fn from_json(text: &str, ident: &str) -> Result<Self, CheckpointError> {
        #[derive(Deserialize)]
        struct Probe {
            schema_version: u32,
        }
        let newer = |found: u32| CheckpointError::SchemaVersion {
            ident: ident.to_owned(),
            found,
            supported: CHECKPOINT_SCHEMA_VERSION,
        };
        match serde_json::from_str::<StoredCheckpoint>(text) {
            Ok(record) if record.schema_version > CHECKPOINT_SCHEMA_VERSION => {
                Err(newer(record.schema_version))
            }
            Ok(record) => Ok(Self {
                record,
                json: text.to_owned(),
            }),
            Err(error) => match serde_json::from_str::<Probe>(text) {
                Ok(probe) if probe.schema_version > CHECKPOINT_SCHEMA_VERSION => {
                    Err(newer(probe.schema_version))
                }
                _ => Err(CheckpointError::Corrupt {
                    ident: ident.to_owned(),
                    reason: error.to_string(),
                }),
            },
        }
    }
}

/// Encodes one run's checkpoints, each as a delta on the previous one when possible and
/// unless its [`SnapshotPolicy`] says a full snapshot is due, exactly as the built-in
/// stores do.
///
/// It holds the run's latest checkpoint (rebuilt in full) as the base of the next delta.
/// A store must only keep using an encoder while the records it encoded are what the
/// store holds for the run: after a write failed, or when another writer may have written
/// to the run, [`reset`](Self::reset) it (or make a new one) and the next checkpoint is
/// encoded in full.
///
/// ```
/// use agent_runtime::checkpoint::{Checkpoint, CheckpointEncoder, JsonText, SnapshotPolicy};
/// use serde_json::json;
///
/// let mut encoder = CheckpointEncoder::new(SnapshotPolicy::Every(2));
/// let mut kinds = Vec::new();
/// for seq in 1..=4 {
///     let state = JsonText::of(&json!({ "n": seq }))?;
///     kinds.push(encoder.encode(&Checkpoint::new("r", seq, "n", state))?.is_full());
/// }
/// assert_eq!(kinds, [true, false, true, false]);
/// assert_eq!(encoder.last_seq(), Some(4));
/// # Ok::<(), agent_runtime::checkpoint::CheckpointError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct CheckpointEncoder {
    head: Option<Head>,
    policy: SnapshotPolicy,
}

impl CheckpointEncoder {
    /// An encoder with no previous checkpoint: the first it encodes is a full snapshot.
    pub fn new(policy: SnapshotPolicy) -> Self {
        Self { head: None, policy }
    }

    /// When it writes a full snapshot instead of a delta.
    pub fn policy(&self) -> SnapshotPolicy {
        self.policy
    }

    /// The seq of the last checkpoint encoded (the base of the next delta), if any.
    pub fn last_seq(&self) -> Option<u64> {
        self.head.as_ref().map(|head| head.seq)
    }

    /// Encodes `checkpoint`, as a delta on the last checkpoint encoded when possible, and
    /// makes it the base of the next one. A checkpoint whose seq is not above the last
    /// one's, whose state or the previous one is not a JSON object, or whose completed
    /// list does not extend the previous one is encoded in full.
    ///
    /// Errors: [`CheckpointError::Serde`] only if the checkpoint holds something JSON
    /// cannot represent, which a [`serde_json::Value`] never does; the encoder is then
    /// reset.
    pub fn encode(
        &mut self,
        checkpoint: &Checkpoint,
    ) -> Result<EncodedCheckpoint, CheckpointError> {
        let (record, json) =
            StoredCheckpoint::encode_to_json(checkpoint, &mut self.head, self.policy)?;
        Ok(EncodedCheckpoint { record, json })
    }

    /// Forgets the last checkpoint: the next is encoded in full.
    pub fn reset(&mut self) {
        self.head = None;
    }
}

/// Rebuilds one run's checkpoints from its records, fed oldest first from a full
/// snapshot on, each delta right after the record it is based on.
///
/// After an error the decoder's state is unspecified; start again with a new one.
///
/// ```
/// use agent_runtime::checkpoint::{
///     Checkpoint, CheckpointDecoder, CheckpointEncoder, CheckpointError, JsonText,
///     SnapshotPolicy,
/// };
/// use serde_json::json;
///
/// let mut encoder = CheckpointEncoder::new(SnapshotPolicy::default());
/// let state = |log| JsonText::of(&json!({ "log": log }));
/// let a = encoder.encode(&Checkpoint::new("r", 1, "n", state([1].as_slice())?))?;
/// let b = encoder.encode(&Checkpoint::new("r", 2, "n", state([1, 2].as_slice())?))?;
///
/// let mut decoder = CheckpointDecoder::new();
/// decoder.push(a)?;
/// assert_eq!(decoder.current().unwrap().state.as_str(), r#"{"log":[1]}"#);
/// decoder.push(b.clone())?;
/// assert_eq!(decoder.current().unwrap().state.as_str(), r#"{"log":[1,2]}"#);
///
/// // A delta without the record it is based on cannot be rebuilt.
/// let orphan = CheckpointDecoder::new().with_location("in tests").push(b);
/// assert!(matches!(orphan, Err(CheckpointError::Corrupt { ident, .. })
///     if ident == "run \"r\" seq 2 (in tests)"));
/// # Ok::<(), CheckpointError>(())
/// ```
#[derive(Debug, Default)]
pub struct CheckpointDecoder {
    rebuild: Rebuilder,
    /// The last record pushed, its body taken out.
    last: Option<StoredCheckpoint>,
    location: Option<String>,
}

impl CheckpointDecoder {
    /// A decoder expecting a full snapshot first.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds where the records are kept (a database, say) to the ident of
    /// [`CheckpointError::Corrupt`] errors, after the run and seq:
    /// `run "r" seq 2 (location)`.
    pub fn with_location(mut self, location: impl Into<String>) -> Self {
        self.location = Some(location.into());
        self
    }

    /// Takes the next record in.
    ///
    /// Errors: [`CheckpointError::Corrupt`] naming the record's run and seq when it is a
    /// delta that does not follow the record it is based on (or no full snapshot came
    /// first), does not apply to the state rebuilt so far, or belongs to another run.
    pub fn push(&mut self, record: EncodedCheckpoint) -> Result<(), CheckpointError> {
        let mut record = record.record;
        if let Some(last) = &self.last
            && last.run_id != record.run_id
        {
            let reason = format!(
                "it belongs to run {:?}, not {:?}",
                record.run_id, last.run_id
            );
            return Err(self.corrupt(&record, reason));
        }
        if let Err(reason) = self.rebuild.push(&mut record) {
            return Err(self.corrupt(&record, reason));
        }
        self.last = Some(record);
        Ok(())
    }

    /// The checkpoint of the last record pushed, rebuilt (a copy); `None` before the
    /// first.
    pub fn current(&self) -> Option<Checkpoint> {
        let last = self.last.as_ref()?;
        let (completed, state) = self.rebuild.current()?;
        Some(last.to_checkpoint(&completed, state))
    }

    /// The checkpoint of the last record pushed, rebuilt; `None` if none was.
    pub fn into_latest(self) -> Option<Checkpoint> {
        let last = self.last?;
        let (completed, state) = self.rebuild.into_current()?;
        Some(last.to_checkpoint(&completed, state))
    }

    fn corrupt(&self, record: &StoredCheckpoint, reason: String) -> CheckpointError {
        let mut ident = format!("run {:?} seq {}", record.run_id, record.seq);
        if let Some(location) = &self.location {
            ident.push_str(&format!(" ({location})"));
        }
        CheckpointError::Corrupt { ident, reason }
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::checkpoint::JsonText;
    use serde_json::{Value, json};

    fn history(n: u64) -> Value {
        json!({"messages": (0..n).map(|i| format!("message {i}")).collect::<Vec<_>>(), "n": n})
    }

    fn cp(seq: u64) -> Checkpoint {
        let at = DateTime::from_timestamp(1_700_000_000 + seq as i64, 0).unwrap();
        Checkpoint::new("r", seq, "turn", JsonText::of(&history(seq)).unwrap())
            .with_completed((0..seq).map(|_| "turn"))
            .with_next("turn")
            .at(at)
    }

    #[test]
    fn records_round_trip_through_json_and_rebuild_every_checkpoint() {
        let mut encoder = CheckpointEncoder::new(SnapshotPolicy::SizeBased { max_chain: 4 });
        let originals: Vec<Checkpoint> = (1..=20)
            .map(|seq| {
                let mut c = cp(seq);
                c.progress = (seq % 3 == 0).then(|| JsonText::of(&json!({"round": seq})).unwrap());
                c.session = Some(JsonText::of(&json!({"events": seq})).unwrap());
                c
            })
            .collect();
        let texts: Vec<String> = originals
            .iter()
            .map(|c| encoder.encode(c).unwrap().into_json())
            .collect();
        let records: Vec<EncodedCheckpoint> = texts
            .iter()
            .map(|t| EncodedCheckpoint::from_json(t, "r").unwrap())
            .collect();
        assert!(records[0].is_full());
        assert_eq!(records[1].base_seq(), Some(1));
        assert!(records.iter().filter(|r| r.is_full()).count() >= 4);

        let mut decoder = CheckpointDecoder::new();
        for (record, original) in records.iter().zip(&originals) {
            decoder.push(record.clone()).unwrap();
            assert_eq!(decoder.current().as_ref(), Some(original));
        }
        // From the nearest snapshot on is enough.
        let from = records.iter().rposition(|r| r.is_full()).unwrap();
        let mut decoder = CheckpointDecoder::new();
        for record in &records[from..] {
            decoder.push(record.clone()).unwrap();
        }
        assert_eq!(decoder.into_latest().as_ref(), originals.last());
    }

    #[test]
    fn the_json_is_the_file_store_format() {
        let mut head = None;
        let mut encoder = CheckpointEncoder::new(SnapshotPolicy::default());
        for seq in 1..=3 {
            let direct = StoredCheckpoint::encode(&cp(seq), &mut head, SnapshotPolicy::default());
            assert_eq!(
                encoder.encode(&cp(seq)).unwrap().into_json(),
                serde_json::to_string(&direct).unwrap()
            );
        }
    }

    #[test]
    fn full_records_stand_alone_and_reset_restarts_the_chain() {
        let mut encoder = CheckpointEncoder::default();
        encoder.encode(&cp(1)).unwrap();
        assert!(!encoder.encode(&cp(2)).unwrap().is_full());
        encoder.reset();
        assert_eq!(encoder.last_seq(), None);
        assert!(encoder.encode(&cp(3)).unwrap().is_full());

        let full = EncodedCheckpoint::full(&cp(9)).unwrap();
        let mut decoder = CheckpointDecoder::new();
        decoder.push(full.clone()).unwrap();
        assert_eq!(decoder.into_latest(), Some(cp(9)));
        assert_eq!((full.run_id(), full.seq(), full.node()), ("r", 9, "turn"));
    }

    #[test]
    fn bad_records_are_corrupt_or_too_new() {
        let text = EncodedCheckpoint::full(&cp(1)).unwrap().into_json();
        let newer = text.replace(
            &format!("\"schema_version\":{CHECKPOINT_SCHEMA_VERSION}"),
            "\"schema_version\":99",
        );
        assert!(matches!(
            EncodedCheckpoint::from_json(&newer, "x"),
            Err(CheckpointError::SchemaVersion { found: 99, .. })
        ));
        let unknown_body = r#"{"schema_version":99,"body":{"kind":"future"}}"#;
        assert!(matches!(
            EncodedCheckpoint::from_json(unknown_body, "x"),
            Err(CheckpointError::SchemaVersion { found: 99, .. })
        ));
        assert!(matches!(
            EncodedCheckpoint::from_json("[]", "x"),
            Err(CheckpointError::Corrupt { .. })
        ));

        let mut other = cp(2);
        other.run_id = "other".into();
        let mut decoder = CheckpointDecoder::new();
        decoder
            .push(EncodedCheckpoint::full(&cp(1)).unwrap())
            .unwrap();
        let err = decoder
            .push(EncodedCheckpoint::full(&other).unwrap())
            .unwrap_err();
        assert!(
            matches!(err, CheckpointError::Corrupt { ref ident, .. } if ident == "run \"other\" seq 2")
        );
    }
}
