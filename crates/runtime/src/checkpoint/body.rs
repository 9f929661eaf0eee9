//! [`Body`]: what a stored checkpoint holds of its completed list and state, in full or
//! as a delta on an earlier checkpoint.

use serde::{Deserialize, Deserializer, Serialize};

use super::JsonText;
use super::names::Name;
use super::state_delta::Fields;

/// The completed list and the state: in full, or relative to the checkpoint `base_seq`.
///
/// Read through [`StoredBody`]: serde reads an internally tagged enum by buffering its
/// fields, and a buffered field cannot be read as the raw JSON text a [`JsonText`] is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", try_from = "StoredBody")]
pub(crate) enum Body {
    Full {
        completed: Vec<Name>,
        /// The checkpoint's own state, shared, not copied.
        state: JsonText,
    },
    Delta {
        base_seq: u64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        completed_append: Vec<Name>,
        /// Top-level fields that are new or changed otherwise than by appending.
        #[serde(default, skip_serializing_if = "Fields::is_empty")]
        set: Fields,
        /// Top-level arrays that grew: the items appended.
        #[serde(default, skip_serializing_if = "Fields::is_empty")]
        append: Fields,
        /// Top-level fields that are gone.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        removed: Vec<String>,
    },
}

impl Body {
    /// An empty full body, left where a body was taken out.
    pub(crate) fn empty() -> Self {
        Body::Full {
            completed: Vec::new(),
            state: JsonText::null(),
        }
    }

    /// The serialized size of a full body of `completed` and `state`, nearly (escapes
    /// in names are not counted).
    pub(crate) fn full_len(completed: &[Name], state: &JsonText) -> usize {
        // `{"kind":"full","completed":,"state":}`
        const AROUND: usize = 37;
        AROUND + names_len(completed) + state.as_str().len()
    }

    /// The body's serialized size, nearly (escapes in names are not counted), from the
    /// lengths of its parts: what the size-based snapshot rule counts, without writing
    /// the body.
    pub(crate) fn approx_len(&self) -> usize {
        match self {
            Body::Full { completed, state } => Self::full_len(completed, state),
            Body::Delta {
                base_seq,
                completed_append,
                set,
                append,
                removed,
            } => {
                // `{"kind":"delta","base_seq":}`, then each part with its `,"name":`.
                let mut len = 28 + digits(*base_seq);
                if !completed_append.is_empty() {
                    len += 20 + names_len(completed_append);
                }
                if !set.is_empty() {
                    len += 7 + fields_len(set);
                }
                if !append.is_empty() {
                    len += 10 + fields_len(append);
                }
                if !removed.is_empty() {
                    len += 11 + list_len(removed.iter().map(|name| name.len() + 2));
                }
                len
            }
        }
    }
}

/// The written size of a JSON array or object whose items are `lens` long.
fn list_len(lens: impl Iterator<Item = usize>) -> usize {
    let (count, sum) = lens.fold((0usize, 0), |(count, sum), len| (count + 1, sum + len));
    2 + sum + count.saturating_sub(1)
}

fn names_len(names: &[Name]) -> usize {
    list_len(names.iter().map(|name| name.len() + 2))
}

fn fields_len(fields: &Fields) -> usize {
    list_len(
        fields
            .iter()
            .map(|(name, value)| name.len() + 3 + value.as_str().len()),
    )
}

/// The number of decimal digits of `n`.
fn digits(n: u64) -> usize {
    n.checked_ilog10().unwrap_or(0) as usize + 1
}

/// A [`Body`] as read: the fields of both kinds, checked against its kind.
#[derive(Deserialize)]
struct StoredBody {
    kind: Kind,
    #[serde(default)]
    completed: Vec<Name>,
    /// Present, even when it is `null` (which an `Option` would read as absent).
    #[serde(default, deserialize_with = "present")]
    state: Option<JsonText>,
    base_seq: Option<u64>,
    #[serde(default)]
    completed_append: Vec<Name>,
    #[serde(default)]
    set: Fields,
    #[serde(default)]
    append: Fields,
    #[serde(default)]
    removed: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Full,
    Delta,
}

fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<JsonText>, D::Error> {
    JsonText::deserialize(deserializer).map(Some)
}

/// What is missing from a stored body of its kind.
#[derive(Debug, thiserror::Error)]
#[error("a {kind} checkpoint body without its {field}")]
pub(crate) struct IncompleteBody {
    kind: &'static str,
    field: &'static str,
}

impl TryFrom<StoredBody> for Body {
    type Error = IncompleteBody;

    fn try_from(body: StoredBody) -> Result<Self, Self::Error> {
        let missing = |kind, field| IncompleteBody { kind, field };
        Ok(match body.kind {
            Kind::Full => Body::Full {
                completed: body.completed,
                state: body.state.ok_or(missing("full", "state"))?,
            },
            Kind::Delta => Body::Delta {
                base_seq: body.base_seq.ok_or(missing("delta", "base_seq"))?,
                completed_append: body.completed_append,
                set: body.set,
                append: body.append,
                removed: body.removed,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Body, serde_json::Error> {
        serde_json::from_str(text)
    }

    #[test]
    fn both_kinds_read_back_as_written() {
        let full = read(r#"{"kind":"full","completed":["a"],"state":{"log":[1]}}"#).unwrap();
        let Body::Full { completed, state } = &full else {
            panic!("{full:?}")
        };
        assert_eq!((&*completed[0], state.as_str()), ("a", r#"{"log":[1]}"#));
        let written = serde_json::to_string(&full).unwrap();
        assert_eq!(
            written,
            r#"{"kind":"full","completed":["a"],"state":{"log":[1]}}"#
        );

        let delta = r#"{"kind":"delta","base_seq":3,"set":{"x":{"k":2}},"append":{"log":[2]},"removed":["y"]}"#;
        let body = read(delta).unwrap();
        assert_eq!(serde_json::to_string(&body).unwrap(), delta);
    }

    #[test]
    fn the_counted_length_is_the_written_one() {
        let bodies = [
            r#"{"kind":"full","completed":[],"state":{}}"#,
            r#"{"kind":"full","completed":["a","bb"],"state":{"log":[1,2]}}"#,
            r#"{"kind":"delta","base_seq":0}"#,
            r#"{"kind":"delta","base_seq":123,"completed_append":["n"],"set":{"x":{"k":2},"y":1},"append":{"log":[2,3]},"removed":["y","zz"]}"#,
        ];
        for text in bodies {
            let body = read(text).unwrap();
            assert_eq!(serde_json::to_string(&body).unwrap(), text);
            assert_eq!(body.approx_len(), text.len(), "{text}");
        }
    }

    #[test]
    fn a_null_state_is_kept_and_a_missing_one_is_an_error() {
        let null = read(r#"{"kind":"full","completed":[],"state":null}"#).unwrap();
        assert_eq!(null, Body::empty());
        let error = read(r#"{"kind":"full","completed":[]}"#).unwrap_err();
        assert!(error.to_string().contains("without its state"), "{error}");
        let error = read(r#"{"kind":"delta"}"#).unwrap_err();
        assert!(
            error.to_string().contains("without its base_seq"),
            "{error}"
        );
        assert!(read(r#"{"kind":"future"}"#).is_err());
    }
}
