//! Rebuilding checkpoints from a run's stored records: full snapshots, and deltas applied
//! in order to the checkpoint they were encoded against.

use std::sync::Arc;

use serde_json::Value;

use super::JsonText;
use super::delta::{Body, StoredCheckpoint};
use super::names::Name;

/// Rebuilds checkpoints from a run's stored records, oldest first. The first record fed
/// in must be a full snapshot and every delta must follow its base.
#[derive(Debug, Default)]
pub(crate) struct Rebuilder {
    current: Option<Rebuilt>,
}

/// The checkpoint rebuilt last: its seq, completed list, state and progress.
#[derive(Debug)]
struct Rebuilt {
    seq: u64,
    completed: Vec<Name>,
    state: Value,
    progress: Option<JsonText>,
}

impl Rebuilder {
    /// Takes the next record in, its body taken out of it, and makes its progress the
    /// full one (a delta may hold an edit of its base's); `Err` says what is wrong with
    /// it.
    pub(crate) fn push(&mut self, record: &mut StoredCheckpoint) -> Result<(), String> {
        let body = std::mem::replace(&mut record.body, Body::empty());
        let progress = self.progress_of(record, &body)?;
        self.push_body(record.seq, body, progress.clone())?;
        record.progress = progress;
        record.progress_edit = None;
        Ok(())
    }

    /// The record's full progress: its own, or its edit applied to its base's.
    fn progress_of(
        &self,
        record: &StoredCheckpoint,
        body: &Body,
    ) -> Result<Option<JsonText>, String> {
        let Some(edit) = &record.progress_edit else {
            return Ok(record.progress.clone());
        };
        let base = match (body, &self.current) {
            (Body::Delta { base_seq, .. }, Some(current)) if current.seq == *base_seq => {
                current.progress.as_ref()
            }
            // The body's own check says what is wrong.
            (Body::Delta { .. }, _) => return Ok(None),
            (Body::Full { .. }, _) => {
                return Err("a full snapshot holds a progress edit".to_owned());
            }
        };
        match base {
            Some(base) => edit.apply(base).map(Some),
            None => Err("a progress edit on a checkpoint without progress".to_owned()),
        }
    }

    fn push_body(
        &mut self,
        seq: u64,
        body: Body,
        progress: Option<JsonText>,
    ) -> Result<(), String> {
        match body {
            Body::Full { completed, state } => {
                self.current = Some(Rebuilt {
                    seq,
                    completed,
                    // A record read in holds the only reference: nothing is copied.
                    state: Arc::unwrap_or_clone(state),
                    progress,
                });
                Ok(())
            }
            Body::Delta {
                base_seq,
                completed_append,
                set,
                append,
                removed,
            } => {
                let Some(current) = self.current.as_mut() else {
                    return Err(format!(
                        "delta on checkpoint {base_seq}, but no full snapshot precedes it"
                    ));
                };
                if current.seq != base_seq {
                    return Err(format!(
                        "delta on checkpoint {base_seq}, but the checkpoint before it is {}",
                        current.seq
                    ));
                }
                let Value::Object(map) = &mut current.state else {
                    return Err("delta on a state that is not an object".to_owned());
                };
                current.completed.extend(completed_append);
                for key in removed {
                    map.remove(&key);
                }
                for (key, value) in set {
                    map.insert(key, value);
                }
                for (key, items) in append {
                    match (map.get_mut(&key), items) {
                        (Some(Value::Array(into)), Value::Array(items)) => into.extend(items),
                        _ => return Err(format!("field {key:?} cannot be appended to")),
                    }
                }
                current.seq = seq;
                current.progress = progress;
                Ok(())
            }
        }
    }

    /// The completed list and state rebuilt so far (cloned).
    pub(crate) fn current(&self) -> Option<(Vec<Name>, Arc<Value>)> {
        self.current
            .as_ref()
            .map(|current| (current.completed.clone(), Arc::new(current.state.clone())))
    }

    /// The completed list and state rebuilt so far.
    pub(crate) fn into_current(self) -> Option<(Vec<Name>, Arc<Value>)> {
        self.current
            .map(|current| (current.completed, Arc::new(current.state)))
    }
}
