//! The stored form of checkpoints: full snapshots, and deltas that keep only what changed
//! since the previous checkpoint (appended array items, replaced and removed fields, the
//! changed middle of the node's progress).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::body::Body;
use super::names::{Name, Names};
use super::state_delta::{FieldLayout, StateDelta};
use super::text_edit::TextEdit;
use super::{Checkpoint, JsonText, SnapshotPolicy};
use crate::json_len::json_len;
use crate::node_failure::NodeFailure;

/// A checkpoint as the built-in stores keep it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredCheckpoint {
    pub(crate) schema_version: u32,
    pub(crate) run_id: Name,
    pub(crate) seq: u64,
    pub(crate) node: Name,
    pub(crate) next: Option<Name>,
    pub(crate) at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) errors: Vec<NodeFailure>,
    /// The node's progress in full; in a delta, only when [`progress_edit`] is not
    /// shorter. Once a record is read in, the full progress.
    ///
    /// [`progress_edit`]: Self::progress_edit
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) progress: Option<JsonText>,
    /// A delta's progress as an edit of its base's (schema version 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) progress_edit: Option<TextEdit>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) session: Option<JsonText>,
    pub(crate) body: Body,
}

/// The latest checkpoint of a run, rebuilt in full: the base for the next delta.
#[derive(Debug, Clone)]
pub(crate) struct Head {
    pub(crate) seq: u64,
    pub(crate) completed: Vec<Name>,
    /// The checkpoint's state, shared with it (and with the next one's when the state did
    /// not change).
    pub(crate) state: JsonText,
    /// Where the state's top-level fields lie in its text, once read (when the state is
    /// compared with the next).
    layout: Option<FieldLayout>,
    /// The node's progress (the base of the next progress edit).
    pub(crate) progress: Option<JsonText>,
    /// Deltas since the last full snapshot.
    pub(crate) chain: usize,
    /// Serialized bytes of the deltas (whole records) since the last full snapshot;
    /// kept for [`SnapshotPolicy::SizeBased`] only.
    pub(crate) delta_bytes: usize,
    /// The run id and node names its records share.
    names: Names,
}

impl Head {
    fn snapshot_due(&mut self, policy: SnapshotPolicy) -> bool {
        match policy {
            SnapshotPolicy::Every(every) => self.chain.saturating_add(1) >= every,
            SnapshotPolicy::SizeBased { max_chain } => {
                if self.chain >= max_chain {
                    return true;
                }
                let body = self.full_body_len();
                // A snapshot also writes the node's progress in full.
                let progress = self.progress.as_ref().map_or(0, |p| p.as_str().len());
                self.delta_bytes >= body + progress
            }
        }
    }

    /// The serialized size of a full body of the head's completed list and state.
    fn full_body_len(&self) -> usize {
        Body::full_len(&self.completed, &self.state)
    }
}

impl StoredCheckpoint {
    /// Encodes `cp` relative to `head` (the run's previous checkpoint), as a delta when
    /// possible and unless `policy` says a full snapshot is due, and moves `head` on to
    /// `cp`.
    pub(crate) fn encode(cp: &Checkpoint, head: &mut Option<Head>, policy: SnapshotPolicy) -> Self {
        let record = Self::encode_uncounted(cp, head, policy);
        record.count(head, policy);
        record
    }

    /// Like [`encode`](Self::encode), for a store that keeps the record as JSON text:
    /// the record and its text, serialized once.
    pub(crate) fn encode_to_json(
        cp: &Checkpoint,
        head: &mut Option<Head>,
        policy: SnapshotPolicy,
    ) -> Result<(Self, String), serde_json::Error> {
        let record = Self::encode_uncounted(cp, head, policy);
        match serde_json::to_string(&record) {
            Ok(text) => {
                record.count(head, policy);
                Ok((record, text))
            }
            Err(error) => {
                // The head moved on to a record that will not be stored.
                *head = None;
                Err(error)
            }
        }
    }

    /// Adds a delta's serialized size to what the size-based policy counts.
    fn count(&self, head: &mut Option<Head>, policy: SnapshotPolicy) {
        if let (Body::Delta { .. }, SnapshotPolicy::SizeBased { .. }, Some(h)) =
            (&self.body, policy, head.as_mut())
        {
            h.delta_bytes = h.delta_bytes.saturating_add(self.approx_len());
        }
    }

    /// The record's serialized size, nearly: its body measured, the rest summed from the
    /// lengths of its parts (escapes in names and the digits of its time estimated).
    /// What the size-based policy counts, the same for every store, without serializing
    /// the record (the time alone costs more to format than a small delta).
    fn approx_len(&self) -> usize {
        // `{"schema_version":3,"run_id":"","seq":,"node":"","next":"","at":"<30>","body":}`
        const FIELDS: usize = 105;
        let text = |text: Option<&JsonText>| text.map_or(0, |text| text.as_str().len() + 12);
        let edit = self.progress_edit.as_ref().map_or(0, TextEdit::approx_len);
        let errors = match self.errors.is_empty() {
            true => 0,
            false => json_len(&self.errors) + 10,
        };
        FIELDS
            + self.seq.checked_ilog10().unwrap_or(0) as usize
            + 1
            + self.run_id.len()
            + self.node.len()
            + self.next.as_ref().map_or(2, |next| next.len())
            + errors
            + text(self.progress.as_ref())
            + text(self.session.as_ref())
            + edit
            + self.body.approx_len()
    }

    fn encode_uncounted(cp: &Checkpoint, head: &mut Option<Head>, policy: SnapshotPolicy) -> Self {
        let mut progress_edit = None;
        let delta = match head.as_mut() {
            Some(h) if h.seq < cp.seq => {
                if h.snapshot_due(policy) {
                    None
                } else {
                    diff(h, cp).inspect(|body| {
                        progress_edit = edit_progress(h.progress.as_ref(), cp.progress.as_ref());
                        apply_to_head(h, body, cp);
                    })
                }
            }
            _ => None,
        };
        let (body, head) = match (delta, head) {
            (Some(body), Some(head)) => (body, head),
            (_, head) => full(cp, head),
        };
        let names = &mut head.names;
        Self {
            schema_version: cp.schema_version,
            run_id: names.get(&cp.run_id),
            seq: cp.seq,
            node: names.get(&cp.node),
            next: cp.next.as_deref().map(|next| names.get(next)),
            at: cp.at,
            errors: cp.errors.clone(),
            progress: match progress_edit {
                Some(_) => None,
                None => cp.progress.clone(),
            },
            progress_edit,
            session: cp.session.clone(),
            body,
        }
    }

    pub(crate) fn is_full(&self) -> bool {
        matches!(self.body, Body::Full { .. })
    }

    /// The checkpoint, given its rebuilt completed list and state.
    pub(crate) fn to_checkpoint(&self, completed: &[Name], state: JsonText) -> Checkpoint {
        Checkpoint {
            run_id: self.run_id.to_string(),
            seq: self.seq,
            node: self.node.to_string(),
            completed: completed.iter().map(|name| name.to_string()).collect(),
            next: self.next.as_deref().map(str::to_owned),
            state,
            schema_version: self.schema_version,
            at: self.at,
            errors: self.errors.clone(),
            progress: self.progress.clone(),
            session: self.session.clone(),
        }
    }
}

/// A full body of `cp`, and `head` moved on to it. The previous head's completed list is
/// reused (it is mostly a prefix of the new one); the state is the checkpoint's, shared.
fn full<'h>(cp: &Checkpoint, head: &'h mut Option<Head>) -> (Body, &'h mut Head) {
    let head = head.get_or_insert_with(|| Head {
        seq: cp.seq,
        completed: Vec::new(),
        state: cp.state.clone(),
        layout: None,
        progress: None,
        chain: 0,
        delta_bytes: 0,
        names: Names::default(),
    });
    head.seq = cp.seq;
    let kept = head
        .completed
        .iter()
        .zip(&cp.completed)
        .take_while(|(kept, name)| ***kept == ***name)
        .count();
    head.completed.truncate(kept);
    for name in &cp.completed[kept..] {
        let name = head.names.get(name);
        head.completed.push(name);
    }
    if !head.state.shares(&cp.state) {
        head.state = cp.state.clone();
        head.layout = None;
    }
    head.progress.clone_from(&cp.progress);
    head.chain = 0;
    head.delta_bytes = 0;
    let body = Body::Full {
        completed: head.completed.clone(),
        state: cp.state.clone(),
    };
    (body, head)
}

/// The delta from `head` to `cp`, when both states are objects and the completed list
/// only grew. A state shared with the head (the run did not change it) is not compared.
fn diff(head: &mut Head, cp: &Checkpoint) -> Option<Body> {
    let grown = cp.completed.len() >= head.completed.len()
        && head
            .completed
            .iter()
            .zip(&cp.completed)
            .all(|(kept, name)| **kept == **name);
    if !grown {
        return None;
    }
    let StateDelta {
        set,
        append,
        removed,
    } = match head.state.shares(&cp.state) && cp.state.is_object() {
        true => StateDelta::default(),
        false => {
            let layout = head.layout.as_ref();
            let (delta, layout) =
                StateDelta::between(&head.state, layout, &cp.state, &mut head.names)?;
            // The head moves on to `cp` with this delta.
            head.layout = Some(layout);
            delta
        }
    };
    let names = &mut head.names;
    Some(Body::Delta {
        base_seq: head.seq,
        completed_append: cp.completed[head.completed.len()..]
            .iter()
            .map(|name| names.get(name))
            .collect(),
        set,
        append,
        removed,
    })
}

/// The progress `to` as an edit of `from`, when both are there and the edit is shorter.
fn edit_progress(from: Option<&JsonText>, to: Option<&JsonText>) -> Option<TextEdit> {
    TextEdit::between(from?.as_str(), to?.as_str())
}

/// Moves the head on to `cp` by a delta just computed from it: the head takes the
/// checkpoint's state (shared).
fn apply_to_head(head: &mut Head, body: &Body, cp: &Checkpoint) {
    let Body::Delta {
        completed_append, ..
    } = body
    else {
        return;
    };
    head.completed.extend_from_slice(completed_append);
    head.state = cp.state.clone();
    head.seq = cp.seq;
    head.progress.clone_from(&cp.progress);
    head.chain += 1;
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::checkpoint::rebuild::Rebuilder;
    use crate::checkpoint::state_delta::Fields;
    use serde_json::{Value, json};
    use std::sync::Arc;

    fn cp(seq: u64, completed: &[&str], state: Value) -> Checkpoint {
        Checkpoint::new("r", seq, "n", JsonText::of(&state).unwrap())
            .with_completed(completed.iter().copied())
    }

    fn fields(object: Value) -> Fields {
        let Value::Object(map) = object else {
            unreachable!("an object")
        };
        map.into_iter()
            .map(|(key, value)| {
                let text = serde_json::value::to_raw_value(&value).unwrap();
                (Name::from(key), serde_json::from_str(text.get()).unwrap())
            })
            .collect()
    }

    #[test]
    fn a_runs_records_share_its_id_and_node_names() {
        let mut head = None;
        let policy = SnapshotPolicy::Every(2);
        let step = |seq, completed: &[&str]| cp(seq, completed, json!({"x": seq})).with_next("b");
        let records: Vec<StoredCheckpoint> =
            [(1, &["a"][..]), (2, &["a", "b"]), (3, &["a", "b", "b"])]
                .into_iter()
                .map(|(seq, completed)| {
                    StoredCheckpoint::encode(&step(seq, completed), &mut head, policy)
                })
                .collect();
        assert_eq!(
            records
                .iter()
                .map(StoredCheckpoint::is_full)
                .collect::<Vec<_>>(),
            [true, false, true]
        );
        let [first, second, third] = &records[..] else {
            unreachable!()
        };
        assert!(Arc::ptr_eq(&first.run_id, &third.run_id));
        assert!(Arc::ptr_eq(&first.node, &second.node));
        let (
            Body::Full {
                completed: before, ..
            },
            Body::Full {
                completed: after, ..
            },
        ) = (&first.body, &third.body)
        else {
            unreachable!()
        };
        assert!(Arc::ptr_eq(&before[0], &after[0]));
        assert!(Arc::ptr_eq(&after[1], &after[2]));
        assert!(Arc::ptr_eq(second.next.as_ref().unwrap(), &after[1]));
    }

    #[test]
    fn deltas_keep_appended_items_and_changed_fields_only() {
        let mut head = None;
        let a = StoredCheckpoint::encode(
            &cp(1, &["a"], json!({"m": [1, 2], "x": 1, "gone": true})),
            &mut head,
            SnapshotPolicy::Every(16),
        );
        let b = StoredCheckpoint::encode(
            &cp(2, &["a", "b"], json!({"m": [1, 2, 3], "x": 2})),
            &mut head,
            SnapshotPolicy::Every(16),
        );
        assert!(a.is_full());
        assert_eq!(
            b.body,
            Body::Delta {
                base_seq: 1,
                completed_append: vec!["b".into()],
                set: fields(json!({"x": 2})),
                append: fields(json!({"m": [3]})),
                removed: vec!["gone".into()],
            }
        );
        let mut rebuild = Rebuilder::default();
        rebuild.push(&mut a.clone()).unwrap();
        rebuild.push(&mut b.clone()).unwrap();
        let (completed, state) = rebuild.into_current().unwrap();
        assert_eq!(completed, [Name::from("a"), Name::from("b")]);
        assert_eq!(state.as_str(), r#"{"m":[1,2,3],"x":2}"#);
        assert_eq!(head.unwrap().state, state);
    }

    /// A delta holds copies of the fields it changed, not its checkpoint's state: a
    /// record kept in memory costs what changed.
    #[test]
    fn a_delta_keeps_its_fields_not_the_state() {
        let mut head = None;
        let big = "x".repeat(10_000);
        let policy = SnapshotPolicy::Every(16);
        StoredCheckpoint::encode(&cp(1, &[], json!({"big": big, "n": 1})), &mut head, policy);
        let second = cp(2, &[], json!({"big": big, "n": 2}));
        let record = StoredCheckpoint::encode(&second, &mut head, policy);
        // The head shares the state, as it should; the record must not.
        drop(head);
        assert!(matches!(&record.body, Body::Delta { set, .. } if set["n"].as_str() == "2"));
        assert_eq!(second.state.holders(), 1, "the record holds the state");
    }

    /// The encoder's head holds the checkpoint's own state, not a copy, and the next
    /// checkpoint of a run that did not change its state (the same shared value) is a
    /// delta with no state in it.
    #[test]
    fn the_head_shares_the_state_and_an_unchanged_one_adds_nothing() {
        let mut head = None;
        let policy = SnapshotPolicy::Every(16);
        let first = cp(1, &["a"], json!({"log": [1, 2], "x": 1}));
        StoredCheckpoint::encode(&first, &mut head, policy);
        assert!(head.as_ref().unwrap().state.shares(&first.state));

        let mut second = cp(2, &["a", "b"], Value::Null);
        second.state = first.state.clone();
        let record = StoredCheckpoint::encode(&second, &mut head, policy);
        assert_eq!(
            record.body,
            Body::Delta {
                base_seq: 1,
                completed_append: vec!["b".into()],
                set: Fields::new(),
                append: Fields::new(),
                removed: Vec::new(),
            }
        );
        assert!(head.unwrap().state.shares(&first.state));
    }

    #[test]
    fn a_full_snapshot_is_due_every_k_and_for_non_objects() {
        let mut head = None;
        let kinds: Vec<bool> = (1..=6)
            .map(|i| {
                StoredCheckpoint::encode(
                    &cp(i, &[], json!({"n": i})),
                    &mut head,
                    SnapshotPolicy::Every(3),
                )
                .is_full()
            })
            .collect();
        assert_eq!(kinds, [true, false, false, true, false, false]);
        let s =
            StoredCheckpoint::encode(&cp(7, &[], json!([1])), &mut head, SnapshotPolicy::Every(3));
        assert!(s.is_full());
    }

    fn history(len: usize) -> Value {
        let messages: Vec<Value> = (0..len)
            .map(|i| json!({"role": "user", "content": format!("message {i} {}", "x".repeat(60))}))
            .collect();
        json!({"messages": messages, "turn": len})
    }

    #[test]
    fn size_based_snapshots_are_spaced_geometrically_and_capped() {
        let policy = SnapshotPolicy::SizeBased { max_chain: 256 };
        let mut head = None;
        let fulls: Vec<u64> = (1..=400u64)
            .filter(|&i| {
                let cp = cp(i, &[], history(i as usize));
                StoredCheckpoint::encode(&cp, &mut head, policy).is_full()
            })
            .collect();
        assert_eq!(fulls[0], 1);
        let gaps: Vec<u64> = fulls.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.windows(2).all(|w| w[1] >= w[0]), "{fulls:?}");
        assert!(fulls.len() < 16, "{fulls:?}");

        // The full body's size is counted exactly.
        let h = head.unwrap();
        let body = Body::Full {
            completed: h.completed.clone(),
            state: h.state.clone(),
        };
        assert_eq!(
            h.full_body_len(),
            serde_json::to_string(&body).unwrap().len()
        );

        let capped = SnapshotPolicy::SizeBased { max_chain: 3 };
        let mut head = None;
        let kinds: Vec<bool> = (1..=9)
            .map(|i| {
                let cp = cp(i, &[], json!({"big": "x".repeat(10_000), "n": i}));
                StoredCheckpoint::encode(&cp, &mut head, capped).is_full()
            })
            .collect();
        assert_eq!(
            kinds,
            [true, false, false, false, true, false, false, false, true]
        );
    }

    #[test]
    fn a_changed_big_field_is_snapshotted_rather_than_chained() {
        let mut head = None;
        let kinds: Vec<bool> = (1..=6)
            .map(|i| {
                let cp = cp(i, &[], json!({"scratch": i.to_string().repeat(5_000)}));
                StoredCheckpoint::encode(&cp, &mut head, SnapshotPolicy::default()).is_full()
            })
            .collect();
        assert_eq!(kinds, [true, false, true, false, true, false]);
    }

    #[test]
    fn the_counted_size_of_a_record_is_close_to_its_json() {
        let mut head = None;
        for seq in 1..=30u64 {
            let mut checkpoint =
                cp(seq, &["intake", "research"], history(seq as usize)).with_next("craft");
            checkpoint.session = Some(JsonText::of(&json!({"events": seq, "calls": 2})).unwrap());
            if seq % 3 == 0 {
                checkpoint.progress = Some(JsonText::of(&json!({"agents": {"a#1": seq}})).unwrap());
            }
            let record = StoredCheckpoint::encode(&checkpoint, &mut head, SnapshotPolicy::Every(4));
            let real = serde_json::to_string(&record).unwrap().len();
            let counted = record.approx_len();
            assert!(
                counted.abs_diff(real) <= 8,
                "seq {seq}: {counted} counted, {real} real"
            );
        }
    }

    #[test]
    fn a_delta_without_its_base_is_an_error() {
        let mut head = None;
        StoredCheckpoint::encode(
            &cp(1, &[], json!({"a": 1})),
            &mut head,
            SnapshotPolicy::Every(16),
        );
        let b = StoredCheckpoint::encode(
            &cp(2, &[], json!({"a": 2})),
            &mut head,
            SnapshotPolicy::Every(16),
        );
        let err = Rebuilder::default().push(&mut b.clone()).unwrap_err();
        assert!(err.contains("no full snapshot"), "{err}");
    }
}
