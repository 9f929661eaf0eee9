//! [`StateDelta`]: what changed between two states' top-level fields, as a checkpoint
//! delta keeps it.

use serde_json::{Map, Value};

/// What changed between two states' top-level fields.
#[derive(Default)]
pub(super) struct StateDelta {
    /// Fields new or changed otherwise than by appending.
    pub(super) set: Map<String, Value>,
    /// Arrays that grew: the items appended.
    pub(super) append: Map<String, Value>,
    /// Fields gone.
    pub(super) removed: Vec<String>,
}

impl StateDelta {
    /// The fields of `new` that differ from `old`'s, and those of `old` it lacks.
    pub(super) fn between(old: &Map<String, Value>, new: &Map<String, Value>) -> Self {
        let mut delta = StateDelta::default();
        for (key, value) in new {
            match (old.get(key), value) {
                (Some(before), _) if before == value => {}
                (Some(Value::Array(before)), Value::Array(after))
                    if after.len() > before.len() && after[..before.len()] == before[..] =>
                {
                    let appended = Value::Array(after[before.len()..].to_vec());
                    delta.append.insert(key.clone(), appended);
                }
                _ => {
                    delta.set.insert(key.clone(), value.clone());
                }
            }
        }
        delta.removed = old
            .keys()
            .filter(|key| !new.contains_key(*key))
            .cloned()
            .collect();
        delta
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("an object"),
        }
    }

    #[test]
    fn appended_items_changed_fields_and_removed_ones_are_told_apart() {
        let old = object(json!({"log": [1, 2], "name": "a", "same": {"k": 1}, "gone": 0}));
        let new = object(json!({"log": [1, 2, 3], "name": "b", "same": {"k": 1}, "added": []}));
        let delta = StateDelta::between(&old, &new);
        assert_eq!(Value::Object(delta.append), json!({"log": [3]}));
        assert_eq!(Value::Object(delta.set), json!({"name": "b", "added": []}));
        assert_eq!(delta.removed, ["gone"]);
        let unchanged = StateDelta::between(&old, &old);
        assert!(unchanged.set.is_empty() && unchanged.append.is_empty());
        assert!(unchanged.removed.is_empty());
    }
}
