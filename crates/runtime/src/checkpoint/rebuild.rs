//! Rebuilding checkpoints from a run's stored records: full snapshots, and deltas applied
//! in order to the checkpoint they were encoded against.

use super::JsonText;
use super::body::Body;
use super::delta::StoredCheckpoint;
use super::names::Name;
use super::state_delta::StateDelta;

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
    state: JsonText,
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
                    // Shared with the record, not copied.
                    state,
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
                current.completed.extend(completed_append);
                let delta = StateDelta {
                    set,
                    append,
                    removed,
                };
                current.state = delta.apply(&current.state)?;
                current.seq = seq;
                current.progress = progress;
                Ok(())
            }
        }
    }

    /// The completed list and state rebuilt so far (the list cloned, the state shared).
    pub(crate) fn current(&self) -> Option<(Vec<Name>, JsonText)> {
        self.current
            .as_ref()
            .map(|current| (current.completed.clone(), current.state.clone()))
    }

    /// The completed list and state rebuilt so far.
    pub(crate) fn into_current(self) -> Option<(Vec<Name>, JsonText)> {
        self.current
            .map(|current| (current.completed, current.state))
    }
}
