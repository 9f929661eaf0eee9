//! The recording file: its serde types, and the checks made when it is read.

use crate::types::Usage;
use serde::Deserialize;
use serde_json::Value;
use std::path::PathBuf;

/// A recording could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// The file could not be read.
    #[error("reading the recording {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The text is not a recording: bad JSON, or a field of the wrong shape.
    #[error("{origin} is not a recording of model answers: at {field}: {source}")]
    Parse {
        /// The file (or what the caller named the text).
        origin: String,
        /// The path to the failing field (`answers[3].turn`), `.` for the whole text.
        field: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A recorded answer is well formed JSON but cannot be used.
    #[error("{origin}: recorded answer {index} (route {route:?}): {problem}")]
    Invalid {
        /// The file (or what the caller named the text).
        origin: String,
        /// The answer's position in `answers`, from 0.
        index: usize,
        /// The answer's route.
        route: String,
        /// What is wrong with it.
        problem: String,
    },
}

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Recording {
    /// What the recording is for; not used.
    #[serde(default)]
    #[allow(dead_code)]
    pub(super) about: Option<String>,
    pub(super) answers: Vec<Entry>,
}

/// One recorded answer: when it applies, and what it answers.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Entry {
    pub(super) route: String,
    #[serde(default)]
    pub(super) when: Markers,
    #[serde(default)]
    pub(super) n: Option<u32>,
    #[serde(default)]
    pub(super) turn: Option<u32>,
    #[serde(default)]
    pub(super) after: Option<After>,
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) tool_calls: Vec<Call>,
    #[serde(default)]
    pub(super) output: Option<Value>,
    #[serde(default)]
    pub(super) batch: Option<Batch>,
    #[serde(default)]
    pub(super) usage: Option<Usage>,
}

/// Texts that must all occur in the request's user messages: one string or a list.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(from = "OneOrMany")]
pub(super) struct Markers(pub(super) Vec<String>);

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl From<OneOrMany> for Markers {
    fn from(value: OneOrMany) -> Self {
        match value {
            OneOrMany::One(marker) => Markers(vec![marker]),
            OneOrMany::Many(markers) => Markers(markers),
        }
    }
}

/// A reaction's condition: the last message carries a successful result of `tool`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct After {
    pub(super) tool: String,
    #[serde(default)]
    pub(super) contains: Option<String>,
}

/// One recorded tool call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Call {
    pub(super) name: String,
    #[serde(default = "empty_object")]
    pub(super) input: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// A structured answer assembled from the recorded items the request lists.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Batch {
    pub(super) into: String,
    #[serde(default)]
    pub(super) per: Option<String>,
    pub(super) items: Vec<Item>,
}

/// One item of a batch.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Item {
    pub(super) when: Markers,
    pub(super) value: Value,
}

/// Parses and checks a recording.
pub(super) fn parse(text: &str, origin: &str) -> Result<Vec<Entry>, RecordingError> {
    let deserializer = &mut serde_json::Deserializer::from_str(text);
    let recording: Recording =
        serde_path_to_error::deserialize(deserializer).map_err(|error| RecordingError::Parse {
            origin: origin.to_owned(),
            field: error.path().to_string(),
            source: error.into_inner(),
        })?;
    for (index, entry) in recording.answers.iter().enumerate() {
        if let Some(problem) = problem(entry) {
            return Err(RecordingError::Invalid {
                origin: origin.to_owned(),
                index,
                route: entry.route.clone(),
                problem: problem.to_owned(),
            });
        }
    }
    Ok(recording.answers)
}

/// What makes an entry unusable, if anything.
fn problem(entry: &Entry) -> Option<&'static str> {
    let conversational = entry.text.is_some() || !entry.tool_calls.is_empty();
    let kinds = [
        conversational,
        entry.output.is_some(),
        entry.batch.is_some(),
    ]
    .into_iter()
    .filter(|kind| *kind)
    .count();
    if entry.route.is_empty() {
        Some("the route is empty")
    } else if entry.n.is_some() && entry.turn.is_some() {
        Some("give `n` or `turn`, not both")
    } else if entry.n == Some(0) || entry.turn == Some(0) {
        Some("`n` and `turn` count from 1")
    } else if kinds == 0 {
        Some("no answer: give `text` and/or `tool_calls`, or `output`, or `batch`")
    } else if kinds > 1 {
        Some("give one answer: `text`/`tool_calls`, `output` or `batch`")
    } else if entry.when.0.iter().any(String::is_empty) {
        Some("an empty `when` marker")
    } else if entry
        .batch
        .as_ref()
        .is_some_and(|batch| batch.items.iter().any(|item| item.when.0.is_empty()))
    {
        Some("every batch item needs a `when` marker")
    } else {
        None
    }
}
