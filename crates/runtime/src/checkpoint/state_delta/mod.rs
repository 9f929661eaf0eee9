//! [`StateDelta`]: what changed between two states' top-level fields, as a checkpoint
//! delta keeps it, read from and applied to the states' JSON text (no `Value` tree is
//! built either way).

mod fields;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

pub(crate) use self::fields::{FieldLayout, FieldText};
use self::fields::{FieldName, Lookup};
use super::JsonText;
use super::names::{Name, Names};

/// Top-level fields of a state by name, each as its JSON text.
pub(super) type Fields = BTreeMap<Name, FieldText>;

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
    /// The fields of `new` that differ from `old`'s, and those of `old` it lacks, with
    /// `new`'s layout; `None` when either state is not a JSON object. `old_layout` is
    /// `old`'s when known (else it is read); names are shared through `names`.
    ///
    /// Fields are compared by their text, so a field whose value is the same but written
    /// otherwise (another key order in a map) counts as changed: the delta is larger than
    /// it needs to be, never wrong. Two states serialized from one type have their fields
    /// in the same order, so each is looked for where the other stood first.
    pub(super) fn between(
        old: &JsonText,
        old_layout: Option<&FieldLayout>,
        new: &JsonText,
        names: &mut Names,
    ) -> Option<(Self, FieldLayout)> {
        let read;
        let old_layout = match old_layout {
            Some(layout) => layout,
            None => {
                read = FieldLayout::read(old, None, names)?;
                &read
            }
        };
        let new_layout = FieldLayout::read(new, Some(old_layout), names)?;
        let mut delta = StateDelta::default();
        let mut lookup = Lookup::new(old_layout);
        for (position, (name, range)) in new_layout.0.iter().enumerate() {
            let after = &new.as_str()[range.clone()];
            let Some(at) = lookup.find(position, name) else {
                delta.set.insert(name.clone(), FieldText::copy(after));
                continue;
            };
            let before = &old.as_str()[old_layout.0[at].1.clone()];
            if before == after {
                continue;
            }
            match appended(before, after) {
                Some(items) => delta.append.insert(name.clone(), items),
                None => delta.set.insert(name.clone(), FieldText::copy(after)),
            };
        }
        delta.removed = lookup.unmatched(new_layout.len());
        Some((delta, new_layout))
    }

    /// Whether the delta changes nothing.
    pub(super) fn is_empty(&self) -> bool {
        self.set.is_empty() && self.append.is_empty() && self.removed.is_empty()
    }

    /// `base` with the delta applied: its fields in their order, those removed left out,
    /// those set replaced, the items appended added to their arrays, and new fields after
    /// them. Fields the delta does not touch keep their text byte for byte; an empty
    /// delta gives `base` back, shared.
    ///
    /// Errors: what is wrong (`base` is not an object, a field appended to is missing or
    /// not an array).
    pub(super) fn apply(&self, base: &JsonText) -> Result<JsonText, String> {
        if !base.is_object() {
            return Err("delta on a state that is not an object".to_owned());
        }
        if self.is_empty() {
            return Ok(base.clone());
        }
        let extra: usize = self.set.values().chain(self.append.values()).map(len).sum();
        let mut rewrite = Rewrite {
            delta: self,
            removed: self.removed.iter().map(String::as_str).collect(),
            out: Vec::with_capacity(base.as_str().len() + extra),
            written: 0,
            set_found: 0,
            appended: 0,
        };
        rewrite.out.push(b'{');
        let mut deserializer = serde_json::Deserializer::from_str(base.as_str());
        let read = (&mut rewrite)
            .deserialize(&mut deserializer)
            .and_then(|()| deserializer.end());
        read.map_err(|error| error.to_string())?;
        if rewrite.appended < self.append.len() || rewrite.set_found < self.set.len() {
            // Fields the base lacks: set ones are new, appended ones an error.
            let known = field_names(base)?;
            if let Some(name) = self.append.keys().find(|name| !known.contains(&***name)) {
                return Err(format!("field {name:?} cannot be appended to"));
            }
            for (name, value) in &self.set {
                if !known.contains(&**name) {
                    rewrite.field(name, &[value.as_str()]);
                }
            }
        }
        rewrite.out.push(b'}');
        let text = String::from_utf8(rewrite.out).map_err(|e| e.to_string())?;
        JsonText::from_string(text).map_err(|e| e.to_string())
    }
}

/// Writes a state's text with a delta applied, field by field as the state is read.
struct Rewrite<'d> {
    delta: &'d StateDelta,
    removed: BTreeSet<&'d str>,
    out: Vec<u8>,
    /// Fields written.
    written: usize,
    /// Fields of the delta's `set` met in the state.
    set_found: usize,
    /// Fields of the delta's `append` met in the state.
    appended: usize,
}

impl Rewrite<'_> {
    /// Writes a field, its value given in parts.
    fn field(&mut self, name: &str, value: &[&str]) {
        if self.written > 0 {
            self.out.push(b',');
        }
        self.written += 1;
        // Writing a string into a `Vec` cannot fail.
        if serde_json::to_writer(&mut self.out, name).is_ok() {
            self.out.push(b':');
        }
        for part in value {
            self.out.extend_from_slice(part.as_bytes());
        }
    }
}

impl<'de> DeserializeSeed<'de> for &mut Rewrite<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for &mut Rewrite<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(FieldName(name)) = map.next_key()? {
            let value: &'de RawValue = map.next_value()?;
            let delta = self.delta;
            if self.removed.contains(&*name) {
                continue;
            }
            if let Some(set) = delta.set.get(&*name) {
                self.set_found += 1;
                self.field(&name, &[set.as_str()]);
            } else if let Some(items) = delta.append.get(&*name) {
                self.appended += 1;
                let joined = joined_arrays(value.get(), items.as_str()).ok_or_else(|| {
                    de::Error::custom(format!("field {name:?} cannot be appended to"))
                })?;
                self.field(&name, &joined);
            } else {
                self.field(&name, &[value.get()]);
            }
        }
        Ok(())
    }
}

/// The names of the top-level fields of `state`.
fn field_names(state: &JsonText) -> Result<BTreeSet<String>, String> {
    let fields: BTreeMap<String, IgnoredAny> =
        serde_json::from_str(state.as_str()).map_err(|e| e.to_string())?;
    Ok(fields.into_keys().collect())
}

fn len(text: &FieldText) -> usize {
    text.as_str().len()
}

/// The items `after` appends to `before`, as a JSON array, when both are arrays and
/// `after` starts with `before`'s items.
fn appended(before: &str, after: &str) -> Option<FieldText> {
    if !before.starts_with('[') || !after.starts_with('[') {
        return None;
    }
    let before: Vec<&RawValue> = serde_json::from_str(before).ok()?;
    let after: Vec<&RawValue> = serde_json::from_str(after).ok()?;
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
    RawValue::from_string(items).ok().map(FieldText::from_raw)
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
mod tests;
