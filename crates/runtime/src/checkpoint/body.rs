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
