//! [`JsonText`]: a JSON value kept as the text it was serialized to.

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON value kept as its serialized text, copied as it is into whatever holds it and
/// parsed only when it is read.
///
/// What a checkpoint carries besides the state ([`Checkpoint::progress`],
/// [`Checkpoint::session`](super::Checkpoint::session)) is kept so: a durable agent
/// saves the node's progress after every round, and building a [`Value`] tree of every
/// transcript each time, then copying and serializing it again to store it, was most of
/// what a checkpoint cost. As text it is serialized once, stored by copying bytes, and
/// parsed when a run resumes.
///
/// The text is shared, not copied, between the clones of a `JsonText` (a checkpoint and
/// the record a store keeps of it). Two texts are equal when they are the same text
/// (what this crate writes is compact JSON, so the same value gives the same text).
///
/// ```
/// use agent_runtime::checkpoint::JsonText;
/// use serde_json::json;
///
/// let text = JsonText::of(&json!({"round": 3}))?;
/// assert_eq!(text.as_str(), r#"{"round":3}"#);
/// assert_eq!(text.parse::<serde_json::Value>()?, json!({"round": 3}));
///
/// // Inside a struct it is written as the JSON it holds, not as a string.
/// #[derive(serde::Serialize)]
/// struct Saved { progress: JsonText }
/// assert_eq!(serde_json::to_string(&Saved { progress: text })?, r#"{"progress":{"round":3}}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
///
/// [`Checkpoint::progress`]: super::Checkpoint::progress
#[derive(Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JsonText(Arc<Box<RawValue>>);

impl JsonText {
    /// `value` serialized.
    ///
    /// Errors: what serializing `value` fails with (a map whose keys are not strings, a
    /// `Serialize` implementation that fails).
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        // Shared as the box serde_json made: turning it into an `Arc<RawValue>` would
        // copy the text.
        serde_json::value::to_raw_value(value).map(|raw| Self(Arc::new(raw)))
    }

    /// JSON text as it is, checked to be JSON.
    pub(crate) fn from_string(text: String) -> Result<Self, serde_json::Error> {
        RawValue::from_string(text).map(|raw| Self(Arc::new(raw)))
    }

    /// `null`.
    pub(crate) fn null() -> Self {
        Self(Arc::new(RawValue::NULL.to_owned()))
    }

    /// Whether the text is a JSON object (what a checkpoint delta applies to).
    pub(crate) fn is_object(&self) -> bool {
        self.as_str().trim_start().starts_with('{')
    }

    /// Whether `self` and `other` share one text (clones of one another).
    pub(crate) fn shares(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// How many values share this text.
    #[cfg(test)]
    pub(crate) fn holders(&self) -> usize {
        Arc::strong_count(&self.0)
    }

    /// The text as a [`RawValue`], to write inside other JSON as it is.
    pub(crate) fn raw(&self) -> &RawValue {
        &self.0
    }

    /// Reads the text as a `T`.
    ///
    /// Errors: the text does not fit `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.0.get())
    }

    /// The text parsed into a [`Value`].
    ///
    /// Errors: never for text this type holds (it is valid JSON); the signature is
    /// [`parse`](Self::parse)'s.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        self.parse()
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &Self) -> bool {
        self.shares(other) || self.as_str() == other.as_str()
    }
}

impl fmt::Debug for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Serialize, Deserialize)]
    struct Holder {
        inner: JsonText,
    }

    #[test]
    fn it_is_written_and_read_back_as_the_json_it_holds() {
        let holder = Holder {
            inner: JsonText::of(&json!({"messages": ["a", "b"]})).unwrap(),
        };
        let text = serde_json::to_string(&holder).unwrap();
        assert_eq!(text, r#"{"inner":{"messages":["a","b"]}}"#);
        let back: Holder = serde_json::from_str(&text).unwrap();
        assert_eq!(back.inner, holder.inner);
        assert_eq!(
            back.inner.to_value().unwrap(),
            json!({"messages": ["a", "b"]})
        );
    }

    #[test]
    fn a_value_that_does_not_fit_is_an_error() {
        let text = JsonText::of(&json!({"round": "three"})).unwrap();
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Round {
            round: u32,
        }
        assert!(text.parse::<Round>().is_err());
    }
}
