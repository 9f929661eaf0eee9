//! Gates declared once as typed values: [`Gate<Answer>`] is what a tool asks
//! ([`AgentContext::ask`](crate::AgentContext::ask)) and what a server checks answers
//! against ([`GateSpec`]), so the two cannot disagree.

use std::fmt;
use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::gates::GateRequest;

/// A gate whose answer is an `A`, declared once (usually as a `const`) and used both where
/// the run waits and where answers are checked.
///
/// A gate waited at many times in a run (a review per section) gets one *instance* name
/// per wait with [`request_for`](Self::request_for): `section_review_skills` is an
/// instance of `section_review`, and takes its answer type.
///
/// ```
/// use agent_runtime::Gate;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Review { approved: bool }
///
/// const SECTION_REVIEW: Gate<Review> = Gate::new("section_review");
///
/// let request = SECTION_REVIEW.request_for("skills", serde_json::json!({"bullets": 3}));
/// assert_eq!((request.name.as_str(), request.kind.as_str()), ("section_review_skills", "section_review"));
///
/// let spec = SECTION_REVIEW.spec();
/// assert!(spec.check(&serde_json::json!({"approved": true})).is_ok());
/// let refused = spec.check(&serde_json::json!({"approved": "yes"})).unwrap_err();
/// assert_eq!(refused.path, "approved");
/// ```
pub struct Gate<A> {
    name: &'static str,
    _answer: PhantomData<fn() -> A>,
}

impl<A> Gate<A> {
    /// A gate named `name` (its kind, and the name of its single instance).
    pub const fn new(name: &'static str) -> Self {
        Gate {
            name,
            _answer: PhantomData,
        }
    }

    /// The gate's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// A request to wait at this gate, showing the user `payload`.
    pub fn request(&self, payload: Value) -> GateRequest {
        GateRequest::new(self.name).with_payload(payload)
    }

    /// A request to wait at the instance `{name}_{instance}` of this gate.
    pub fn request_for(&self, instance: impl fmt::Display, payload: Value) -> GateRequest {
        GateRequest::new(format!("{}_{instance}", self.name))
            .with_kind(self.name)
            .with_payload(payload)
    }
}

impl<A: DeserializeOwned + JsonSchema> Gate<A> {
    /// What a server needs to know about the gate: its name, the JSON Schema of its
    /// answer, and a check of an answer.
    pub fn spec(&self) -> GateSpec {
        GateSpec {
            name: self.name,
            answer_schema: schemars::schema_for!(A).to_value(),
            check: check_as::<A>,
        }
    }
}

impl<A> Clone for Gate<A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A> Copy for Gate<A> {}

impl<A> fmt::Debug for Gate<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gate").field("name", &self.name).finish()
    }
}

/// A gate as a server sees it: the name, the schema of its answer, and a check.
#[derive(Clone)]
pub struct GateSpec {
    /// The gate's name: its instances' [`kind`](crate::PendingGate::kind).
    pub name: &'static str,
    /// The JSON Schema of its answer (self-contained: definitions under `$defs`).
    pub answer_schema: Value,
    check: fn(&Value) -> Result<(), AnswerError>,
}

impl GateSpec {
    /// Checks an answer: `Err` names the field that does not fit.
    pub fn check(&self, answer: &Value) -> Result<(), AnswerError> {
        (self.check)(answer)
    }
}

impl fmt::Debug for GateSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GateSpec")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// An answer (or any JSON body) that does not fit its type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if path.is_empty() || path == "." { String::new() } else { format!("at {path}: ") })]
pub struct AnswerError {
    /// The path of the field that does not fit (`flags.intake_quiz`, `answers[2]`), `.`
    /// for the value itself.
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

/// Reads `value` as a `T`, naming the path of the first field that does not fit.
///
/// ```
/// #[derive(Debug, serde::Deserialize)]
/// struct Start { flags: Flags }
/// #[derive(Debug, serde::Deserialize)]
/// struct Flags { quiz: bool }
///
/// let error = agent_runtime::read_as::<Start>(&serde_json::json!({"flags": {"quiz": 1}})).unwrap_err();
/// assert_eq!(error.path, "flags.quiz");
/// ```
pub fn read_as<T: DeserializeOwned>(value: &Value) -> Result<T, AnswerError> {
    serde_path_to_error::deserialize(value).map_err(|error| AnswerError {
        path: error.path().to_string(),
        message: error.inner().to_string(),
    })
}

fn check_as<A: DeserializeOwned>(answer: &Value) -> Result<(), AnswerError> {
    read_as::<A>(answer).map(|_| ())
}
