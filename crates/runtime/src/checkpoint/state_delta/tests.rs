//! Tests of reading, comparing and applying states' fields.

use super::*;
use serde_json::{Value, json};

fn text(value: Value) -> JsonText {
    JsonText::of(&value).unwrap()
}

fn values(fields: &Fields) -> Value {
    fields
        .iter()
        .map(|(key, value)| {
            (
                key.to_string(),
                serde_json::from_str::<Value>(value.as_str()).unwrap(),
            )
        })
        .collect()
}

fn between(old: &JsonText, new: &JsonText) -> Option<StateDelta> {
    let (delta, layout) = StateDelta::between(old, None, new, &mut Names::default())?;
    let names: Vec<&str> = layout.0.iter().map(|(name, _)| &**name).collect();
    let spans: Vec<&str> = layout
        .0
        .iter()
        .map(|(_, range)| &new.as_str()[range.clone()])
        .collect();
    let fields: Vec<(String, Value)> =
        serde_json::from_str::<serde_json::Map<String, Value>>(new.as_str())
            .unwrap()
            .into_iter()
            .collect();
    // The layout names every field of `new` and spans its value's text.
    assert_eq!(names.len(), fields.len());
    for (name, span) in names.iter().zip(&spans) {
        let value: Value = serde_json::from_str(span).unwrap();
        assert!(
            fields.contains(&(name.to_string(), value)),
            "{name}: {span}"
        );
    }
    Some(delta)
}

/// The delta from `old` to `new`, checked to give `new` back (a new field comes
/// after the others).
fn delta(old: &JsonText, new: &JsonText) -> StateDelta {
    let delta = between(old, new).unwrap();
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
        JsonText::from_string(r#"{"z":[1,{"q":0,"p":1}],"b":{"y":1,"x":2},"c":0}"#.into()).unwrap();
    let changed = delta(&old, &new);
    assert_eq!(changed.apply(&old).unwrap().as_str(), new.as_str());
    assert_eq!(values(&changed.append), json!({"z": [{"q": 0, "p": 1}]}));
    assert_eq!(changed.removed, ["a"]);
}

/// Fields in another order (a map serialized from a hash map) are found by name,
/// by a scan in a small object and by a sorted index in a large one.
#[test]
fn fields_out_of_order_are_found_by_name() {
    let object = |fields: &[(usize, usize)]| {
        let fields: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!(r#""k{k}":{v}"#))
            .collect();
        JsonText::from_string(format!("{{{}}}", fields.join(","))).unwrap()
    };
    for n in [5, 40] {
        let old: Vec<(usize, usize)> = (0..n).map(|k| (k, k)).collect();
        // Reversed, field 1 changed, field 2 gone, field n added.
        let mut new: Vec<(usize, usize)> = old.iter().rev().copied().collect();
        new.retain(|(k, _)| *k != 2);
        new.iter_mut()
            .filter(|(k, _)| *k == 1)
            .for_each(|(_, v)| *v = 100);
        new.push((n, n));
        let changed = delta(&object(&old), &object(&new));
        let expected: Value = [("k1".to_owned(), json!(100)), (format!("k{n}"), json!(n))]
            .into_iter()
            .collect();
        assert_eq!(values(&changed.set), expected, "{n} fields");
        assert_eq!(changed.removed, ["k2"], "{n} fields");
    }
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
    assert!(between(&text(json!([1])), &object).is_none());
    assert!(between(&object, &text(json!(null))).is_none());
    let appending = between(&object, &text(json!({"a": 1, "b": [1]}))).unwrap();
    assert!(appending.apply(&text(json!([1]))).is_err());
}

#[test]
fn appending_to_a_field_that_is_not_an_array_is_an_error() {
    let append = |field: &str, base: Value| {
        let delta = StateDelta {
            append: [(Name::from(field), FieldText::copy("[2]"))].into(),
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

/// A layout known from the previous comparison is used as it is, and the names read
/// again where they stood are the ones it holds.
#[test]
fn a_known_layout_is_used_and_its_names_shared() {
    let mut names = Names::default();
    let first = text(json!({"log": [1], "n": 1}));
    let second = text(json!({"log": [1, 2], "n": 1}));
    let third = text(json!({"log": [1, 2], "n": 2}));
    let layout = FieldLayout::read(&first, None, &mut names).unwrap();
    let (appended, layout_2) =
        StateDelta::between(&first, Some(&layout), &second, &mut names).unwrap();
    assert_eq!(values(&appended.append), json!({"log": [2]}));
    assert!(std::sync::Arc::ptr_eq(&layout.0[0].0, &layout_2.0[0].0));
    let (set, _) = StateDelta::between(&second, Some(&layout_2), &third, &mut names).unwrap();
    assert_eq!(values(&set.set), json!({"n": 2}));
    assert!(set.append.is_empty() && set.removed.is_empty());
}

#[test]
fn an_empty_delta_gives_its_base_back_shared() {
    let base = text(json!({"a": 1}));
    assert!(StateDelta::default().apply(&base).unwrap().shares(&base));
    assert!(StateDelta::default().apply(&text(json!([]))).is_err());
}
