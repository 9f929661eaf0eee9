//! [`StateDelta`]: what changed between two states' top-level fields, as a checkpoint
//! delta keeps it, read from and applied to the states' JSON text.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::JsonText;

/// Top-level fields of a state, each as its JSON text.
pub(super) type Fields = BTreeMap<String, JsonText>;

/// What changed between two states' top-level fields.
#[derive(Debug, Default)]
pub(super) struct StateDelta {
    /// Fields new or changed otherwise than by appending.
    pub(super) set: Fields,
    /// Arrays that grew: the items appended.
    pub(super) append: Fields,
    /// Fields gone.
    pub(super) removed: Vec<String>,
}

impl StateDelta {
    /// The fields of `new` that differ from `old`'s, and those of `old` it lacks; `None`
    /// when either state is not a JSON object.
    ///
    /// Fields are compared by their text, so a field whose value is the same but written
    /// otherwise (another key order in a map) counts as changed: the delta is larger than
    /// it needs to be, never wrong.
    pub(super) fn between(old: &JsonText, new: &JsonText) -> Option<Self> {
        let old: BTreeMap<String, &RawValue> = ObjectFields::of(old)?.0.into_iter().collect();
        let new = ObjectFields::of(new)?.0;
        let mut delta = StateDelta::default();
        for (key, value) in &new {
            let Some(before) = old.get(key) else {
                delta.set.insert(key.clone(), JsonText::from_raw(value));
                continue;
            };
            if before.get() == value.get() {
                continue;
            }
            match appended(before, value) {
                Some(items) => delta.append.insert(key.clone(), items),
                None => delta.set.insert(key.clone(), JsonText::from_raw(value)),
            };
        }
        let kept: BTreeSet<&str> = new.iter().map(|(key, _)| key.as_str()).collect();
        delta.removed = old
            .keys()
            .filter(|key| !kept.contains(key.as_str()))
            .cloned()
            .collect();
        Some(delta)
    }

    /// `base` with the delta applied: its fields in their order, those removed left out,
    /// those set replaced, the items appended added to their arrays, and new fields after
    /// them. Fields the delta does not touch keep their text byte for byte.
    ///
    /// Errors: what is wrong (`base` is not an object, a field appended to is missing or
    /// not an array).
    pub(super) fn apply(&self, base: &JsonText) -> Result<JsonText, String> {
        let fields =
            ObjectFields::of(base).ok_or("delta on a state that is not an object".to_owned())?;
        let extra: usize = self.set.values().chain(self.append.values()).map(len).sum();
        let mut out = Vec::with_capacity(base.as_str().len() + extra);
        out.push(b'{');
        let mut written = 0usize;
        let mut field = |out: &mut Vec<u8>, key: &str, value: &[&str]| {
            if written > 0 {
                out.push(b',');
            }
            written += 1;
            write_key(out, key);
            value
                .iter()
                .for_each(|part| out.extend_from_slice(part.as_bytes()));
        };
        let removed: BTreeSet<&str> = self.removed.iter().map(String::as_str).collect();
        for (key, value) in &fields.0 {
            if removed.contains(key.as_str()) {
                continue;
            }
            if let Some(set) = self.set.get(key) {
                field(&mut out, key, &[set.as_str()]);
            } else if let Some(items) = self.append.get(key) {
                let joined = joined_arrays(value.get(), items.as_str())
                    .ok_or_else(|| format!("field {key:?} cannot be appended to"))?;
                field(&mut out, key, &joined);
            } else {
                field(&mut out, key, &[value.get()]);
            }
        }
        let known: BTreeSet<&str> = fields.0.iter().map(|(key, _)| key.as_str()).collect();
        if let Some(key) = self.append.keys().find(|key| !known.contains(key.as_str())) {
            return Err(format!("field {key:?} cannot be appended to"));
        }
        for (key, value) in &self.set {
            if !known.contains(key.as_str()) {
                field(&mut out, key, &[value.as_str()]);
            }
        }
        out.push(b'}');
        let text = String::from_utf8(out).map_err(|e| e.to_string())?;
        JsonText::from_string(text).map_err(|e| e.to_string())
    }
}

/// A JSON object's fields in the order its text has them, each value borrowed as text.
struct ObjectFields<'a>(Vec<(String, &'a RawValue)>);

impl<'a> ObjectFields<'a> {
    /// The fields of `state`; `None` when it is not an object.
    fn of(state: &'a JsonText) -> Option<Self> {
        serde_json::from_str(state.as_str()).ok()
    }
}

impl<'de> Deserialize<'de> for ObjectFields<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = ObjectFields<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(field) = map.next_entry::<String, &'de RawValue>()? {
                    fields.push(field);
                }
                Ok(ObjectFields(fields))
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

fn len(text: &JsonText) -> usize {
    text.as_str().len()
}

/// Writes `key` as a JSON string and a colon.
fn write_key(out: &mut Vec<u8>, key: &str) {
    // Writing a string into a Vec cannot fail.
    if serde_json::to_writer(&mut *out, key).is_ok() {
        out.push(b':');
    }
}

/// The items `after` appends to `before`, as a JSON array, when both are arrays and
/// `after` starts with `before`'s items.
fn appended(before: &RawValue, after: &RawValue) -> Option<JsonText> {
    let before: Vec<&RawValue> = serde_json::from_str(before.get()).ok()?;
    let after: Vec<&RawValue> = serde_json::from_str(after.get()).ok()?;
    let kept = before.len();
    let grown = after.len() > kept
        && before
            .iter()
            .zip(&after)
            .all(|(was, is)| was.get() == is.get());
    if !grown {
        return None;
    }
    let mut items = String::from("[");
    for (n, item) in after[kept..].iter().enumerate() {
        if n > 0 {
            items.push(',');
        }
        items.push_str(item.get());
    }
    items.push(']');
    JsonText::from_string(items).ok()
}

/// The parts of the array of `array`'s items followed by `items`' (both JSON arrays);
/// `None` when either is not an array.
fn joined_arrays<'a>(array: &'a str, items: &'a str) -> Option<[&'a str; 3]> {
    let head = array.trim_end().strip_suffix(']')?;
    if !array.trim_start().starts_with('[') {
        return None;
    }
    let tail = items.trim_start().strip_prefix('[')?;
    let separator = match (
        head.trim_end().ends_with('['),
        tail.trim_start().starts_with(']'),
    ) {
        (false, false) => ",",
        _ => "",
    };
    Some([head, separator, tail])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn text(value: Value) -> JsonText {
        JsonText::of(&value).unwrap()
    }

    fn values(fields: &Fields) -> Value {
        fields
            .iter()
            .map(|(key, value)| (key.clone(), value.to_value().unwrap()))
            .collect()
    }

    /// The delta from `old` to `new`, checked to give `new` back (a new field comes
    /// after the others).
    fn delta(old: &JsonText, new: &JsonText) -> StateDelta {
        let delta = StateDelta::between(old, new).unwrap();
        let rebuilt = delta.apply(old).unwrap();
        assert_eq!(rebuilt.to_value().unwrap(), new.to_value().unwrap());
        delta
    }

    #[test]
    fn appended_items_changed_fields_and_removed_ones_are_told_apart() {
        let old = text(json!({"log": [1, 2], "name": "a", "same": {"k": 1}, "gone": 0}));
        let new = text(json!({"log": [1, 2, 3], "name": "b", "same": {"k": 1}, "added": []}));
        let changed = delta(&old, &new);
        assert_eq!(values(&changed.append), json!({"log": [3]}));
        assert_eq!(values(&changed.set), json!({"name": "b", "added": []}));
        assert_eq!(changed.removed, ["gone"]);
        let unchanged = delta(&old, &old);
        assert!(unchanged.set.is_empty() && unchanged.append.is_empty());
        assert!(unchanged.removed.is_empty());
    }

    #[test]
    fn an_array_that_changed_otherwise_than_at_its_end_is_set() {
        let old = text(json!({"log": ["a", {"k": [1]}], "n": [1]}));
        let new = text(json!({"log": ["a", {"k": [1, 2]}, "c"], "n": [12]}));
        let changed = delta(&old, &new);
        assert!(changed.append.is_empty());
        assert_eq!(
            values(&changed.set),
            json!({"log": ["a", {"k": [1, 2]}, "c"], "n": [12]})
        );
        let emptied = delta(&new, &text(json!({"log": [], "n": [12]})));
        assert_eq!(values(&emptied.set), json!({"log": []}));
        let from_empty = delta(&text(json!({"log": []})), &text(json!({"log": ["a"]})));
        assert_eq!(values(&from_empty.append), json!({"log": ["a"]}));
    }

    /// A state serialized from a struct keeps its fields in the struct's order, and a
    /// nested map its own order: the state rebuilt is the same text.
    #[test]
    fn the_order_of_fields_is_kept() {
        let old = JsonText::from_string(r#"{"z":[1],"b":{"y":1,"x":2},"a":1}"#.into()).unwrap();
        let new =
            JsonText::from_string(r#"{"z":[1,{"q":0,"p":1}],"b":{"y":1,"x":2},"c":0}"#.into())
                .unwrap();
        let changed = delta(&old, &new);
        assert_eq!(changed.apply(&old).unwrap().as_str(), new.as_str());
        assert_eq!(values(&changed.append), json!({"z": [{"q": 0, "p": 1}]}));
        assert_eq!(changed.removed, ["a"]);
    }

    #[test]
    fn keys_with_escapes_are_read_and_written_back() {
        let old = text(json!({"say \"hi\"": [1], "é\n": "x"}));
        let new = text(json!({"say \"hi\"": [1, 2], "é\n": "y"}));
        let changed = delta(&old, &new);
        assert_eq!(values(&changed.append), json!({"say \"hi\"": [2]}));
        assert_eq!(values(&changed.set), json!({"é\n": "y"}));
    }

    #[test]
    fn a_state_that_is_not_an_object_has_no_delta() {
        let object = text(json!({"a": 1}));
        assert!(StateDelta::between(&text(json!([1])), &object).is_none());
        assert!(StateDelta::between(&object, &text(json!(null))).is_none());
        let appending = StateDelta::between(&object, &text(json!({"a": 1, "b": [1]}))).unwrap();
        assert!(appending.apply(&text(json!([1]))).is_err());
    }

    #[test]
    fn appending_to_a_field_that_is_not_an_array_is_an_error() {
        let append = |field: &str, base: Value| {
            let delta = StateDelta {
                append: [(field.to_owned(), text(json!([2])))].into(),
                ..StateDelta::default()
            };
            delta.apply(&text(base))
        };
        assert_eq!(
            append("log", json!({"log": [1]})).unwrap().as_str(),
            r#"{"log":[1,2]}"#
        );
        let error = append("log", json!({"log": "x"})).unwrap_err();
        assert!(error.contains("\"log\" cannot be appended to"), "{error}");
        assert!(append("gone", json!({"log": [1]})).is_err());
    }

    /// Arrays as another writer may have stored them, with spaces, join all the same.
    #[test]
    fn arrays_written_with_spaces_are_joined() {
        assert_eq!(
            joined_arrays("[ 1 ]", "[2]").map(|p| p.concat()).as_deref(),
            Some("[ 1 ,2]")
        );
        assert_eq!(
            joined_arrays("[ ]", " [2]").map(|p| p.concat()).as_deref(),
            Some("[ 2]")
        );
        assert_eq!(
            joined_arrays("[1]", "[ ]").map(|p| p.concat()).as_deref(),
            Some("[1 ]")
        );
        assert_eq!(joined_arrays("{}", "[1]"), None);
    }
}
