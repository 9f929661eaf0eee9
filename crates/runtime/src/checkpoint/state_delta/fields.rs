//! A state's top-level fields read from its JSON text: where each lies ([`FieldLayout`]),
//! one field's text ([`FieldText`]), and finding the fields of one state among another's
//! ([`Lookup`]).

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

use super::super::JsonText;
use super::super::names::{Name, Names};

/// One field's value in a delta: its JSON text, copied out of the state's (a record
/// kept in memory holds only the fields it changed, not the state they came from).
#[derive(Clone)]
pub(crate) struct FieldText(Box<str>);

impl FieldText {
    /// A copy of `text` (a whole JSON value).
    pub(super) fn copy(text: &str) -> Self {
        Self(text.into())
    }

    /// `text`, taken as it is (a whole JSON value).
    pub(super) fn from_raw(text: Box<RawValue>) -> Self {
        Self(text.into())
    }

    /// The field's JSON text.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl Serialize for FieldText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // serde_json writes JSON text as it is only from a `RawValue`, and makes one from
        // a borrowed text by reading it (the field, not the whole state).
        let raw: &RawValue =
            serde_json::from_str(self.as_str()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for FieldText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(Self::from_raw)
    }
}

impl PartialEq for FieldText {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl fmt::Debug for FieldText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a state's top-level fields lie in its text, in the text's order: each field's
/// name (shared with the encoder's other names) and the range of its value.
///
/// The encoder's head keeps its state's layout, so the next state is compared with it
/// without reading the head's text again.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldLayout(pub(super) Vec<(Name, Range<usize>)>);

impl FieldLayout {
    /// The layout of `state`; `None` when it is not a JSON object. Names are taken from
    /// `previous` where a field stands where it stood there, else from `names`.
    pub(crate) fn read(
        state: &JsonText,
        previous: Option<&FieldLayout>,
        names: &mut Names,
    ) -> Option<Self> {
        if !state.is_object() {
            return None;
        }
        let text = state.as_str();
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let seed = LayoutSeed {
            text,
            previous,
            names,
        };
        let layout = seed.deserialize(&mut deserializer).ok()?;
        deserializer.end().ok()?;
        Some(layout)
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

/// Reads a [`FieldLayout`] from the text it borrows.
struct LayoutSeed<'t, 'n> {
    text: &'t str,
    previous: Option<&'n FieldLayout>,
    names: &'n mut Names,
}

impl<'de> DeserializeSeed<'de> for LayoutSeed<'de, '_> {
    type Value = FieldLayout;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<FieldLayout, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LayoutSeed<'de, '_> {
    type Value = FieldLayout;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FieldLayout, A::Error> {
        let expected = self.previous.map_or(8, FieldLayout::len);
        let mut fields: Vec<(Name, Range<usize>)> = Vec::with_capacity(expected);
        while let Some(FieldName(key)) = map.next_key()? {
            let value: &'de RawValue = map.next_value()?;
            let name = match self.previous.and_then(|p| p.0.get(fields.len())) {
                Some((name, _)) if **name == *key => name.clone(),
                _ => self.names.get(&key),
            };
            let range = span(self.text, value.get()).ok_or_else(|| {
                de::Error::custom("a field's value is not a part of the text read")
            })?;
            fields.push((name, range));
        }
        Ok(FieldLayout(fields))
    }
}

/// Where `part` (borrowed from `text`) lies in `text`.
fn span(text: &str, part: &str) -> Option<Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let end = start + part.len();
    (end <= text.len()).then_some(start..end)
}

/// A field's name, borrowed from the text when it has no escapes.
pub(super) struct FieldName<'a>(pub(super) Cow<'a, str>);

impl<'de> Deserialize<'de> for FieldName<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl<'de> Visitor<'de> for Name {
            type Value = FieldName<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_str<E>(self, name: &'de str) -> Result<Self::Value, E> {
                Ok(FieldName(Cow::Borrowed(name)))
            }
            fn visit_str<E>(self, name: &str) -> Result<Self::Value, E> {
                Ok(FieldName(Cow::Owned(name.to_owned())))
            }
        }
        deserializer.deserialize_str(Name)
    }
}

/// Finds the fields of an old state by name, for the fields of a new one taken in order.
pub(super) struct Lookup<'o> {
    fields: &'o [(Name, Range<usize>)],
    /// Whether every field so far was found where the new one stands.
    in_place: bool,
    /// The old fields found, once one was not in place.
    found: Vec<bool>,
    /// The old fields' positions sorted by name, for a large object out of order.
    by_name: Vec<usize>,
}

impl<'o> Lookup<'o> {
    /// Objects up to this many fields are searched field by field.
    const SCAN: usize = 16;

    pub(super) fn new(old: &'o FieldLayout) -> Self {
        Self {
            fields: &old.0,
            in_place: true,
            found: Vec::new(),
            by_name: Vec::new(),
        }
    }

    /// Where the old field `name` is, the new one being field number `position`.
    pub(super) fn find(&mut self, position: usize, name: &str) -> Option<usize> {
        let fields = self.fields;
        if self.in_place {
            match fields.get(position) {
                Some((old, _)) if **old == *name => return Some(position),
                _ => {
                    self.in_place = false;
                    self.found = vec![false; fields.len()];
                    self.found[..position.min(fields.len())].fill(true);
                }
            }
        }
        let at = match fields.len() <= Self::SCAN {
            true => fields.iter().position(|(old, _)| **old == *name),
            false => {
                if self.by_name.is_empty() {
                    self.by_name = (0..fields.len()).collect();
                    self.by_name.sort_by(|a, b| fields[*a].0.cmp(&fields[*b].0));
                }
                self.by_name
                    .binary_search_by(|at| (*fields[*at].0).cmp(name))
                    .ok()
                    .map(|found| self.by_name[found])
            }
        }?;
        self.found[at] = true;
        Some(at)
    }

    /// The names of the old fields not found, the new state having had `new_len`
    /// fields.
    pub(super) fn unmatched(&self, new_len: usize) -> Vec<String> {
        let fields = self.fields;
        match self.in_place {
            true => fields[new_len.min(fields.len())..]
                .iter()
                .map(|(name, _)| name.to_string())
                .collect(),
            false => fields
                .iter()
                .zip(&self.found)
                .filter(|(_, found)| !**found)
                .map(|((name, _), _)| name.to_string())
                .collect(),
        }
    }
}
