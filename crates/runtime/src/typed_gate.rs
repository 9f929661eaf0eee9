//! Gates declared once as typed values: [`Gate<Payload, Answer>`] is what a tool asks
//! ([`AgentContext::ask`](crate::AgentContext::ask)), what code answers
//! ([`GateRegistry::answer`](crate::GateRegistry::answer)) and what a server checks
//! answers against and publishes ([`GateSpec`]), so none of them can disagree.

use std::fmt;
use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::gates::{GateError, GateRegistry, GateRequest};

/// A gate that shows the user a `P` and takes an `A` for an answer, declared once
/// (usually as a `const`) and used where the run waits, where code answers and where a
/// server checks answers and describes the gate.
///
/// A gate waited at many times in a run (a review per section) gets one *instance* name
/// per wait with [`request_for`](Self::request_for): `section_review_skills` is an
/// instance of `section_review`, and takes its types.
///
/// ```
/// use agent_runtime::Gate;
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Draft { bullets: u32 }
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct Review { approved: bool }
///
/// const SECTION_REVIEW: Gate<Draft, Review> = Gate::new("section_review");
///
/// let request = SECTION_REVIEW.request_for("skills", &Draft { bullets: 3 })?;
/// assert_eq!((request.name.as_str(), request.kind.as_str()), ("section_review_skills", "section_review"));
/// assert_eq!(request.payload, serde_json::json!({"bullets": 3}));
///
/// let spec = SECTION_REVIEW.spec();
/// assert!(spec.check(&serde_json::json!({"approved": true})).is_ok());
/// let refused = spec.check(&serde_json::json!({"approved": "yes"})).unwrap_err();
/// assert_eq!(refused.path, "approved");
/// assert_eq!(spec.payload_schema["properties"]["bullets"]["type"], "integer");
/// # Ok::<(), agent_runtime::GateError>(())
/// ```
pub struct Gate<P, A> {
    name: &'static str,
    _types: PhantomData<fn(P) -> A>,
}

impl<P, A> Gate<P, A> {
    /// A gate named `name` (its kind, and the name of its single instance).
    pub const fn new(name: &'static str) -> Self {
        Gate {
            name,
            _types: PhantomData,
        }
    }

    /// The gate's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The name of its instance `instance`: `{name}_{instance}`.
    pub fn instance_name(&self, instance: impl fmt::Display) -> String {
        format!("{}_{instance}", self.name)
    }
}

impl<P: Serialize, A> Gate<P, A> {
    /// A request to wait at this gate, showing the user `payload`. Fails only when the
    /// payload does not serialize to JSON.
    pub fn request(&self, payload: &P) -> Result<GateRequest, GateError> {
        Ok(GateRequest::new(self.name).with_payload(self.payload(self.name, payload)?))
    }

    /// A request to wait at the instance `{name}_{instance}` of this gate.
    pub fn request_for(
        &self,
        instance: impl fmt::Display,
        payload: &P,
    ) -> Result<GateRequest, GateError> {
        let name = self.instance_name(instance);
        let payload = self.payload(&name, payload)?;
        Ok(GateRequest::new(name)
            .with_kind(self.name)
            .with_payload(payload))
    }

    fn payload(&self, name: &str, payload: &P) -> Result<Value, GateError> {
        serde_json::to_value(payload).map_err(|e| GateError::InvalidPayload {
            gate: name.to_owned(),
            message: e.to_string(),
        })
    }
}

impl<P: JsonSchema, A: DeserializeOwned + JsonSchema> Gate<P, A> {
    /// What a server needs to know about the gate: its name, the JSON Schemas of its
    /// payload and its answer, and a check of an answer.
    pub fn spec(&self) -> GateSpec {
        GateSpec {
            name: self.name,
            payload_schema: schemars::schema_for!(P).to_value(),
            answer_schema: schemars::schema_for!(A).to_value(),
            check: check_as::<A>,
        }
    }
}

impl<P, A> Clone for Gate<P, A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P, A> Copy for Gate<P, A> {}

impl<P, A> fmt::Debug for Gate<P, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gate").field("name", &self.name).finish()
    }
}

/// A gate as a server sees it: the name, the schemas of its payload and its answer, and
/// a check of an answer.
#[derive(Clone)]
pub struct GateSpec {
    /// The gate's name: its instances' [`kind`](crate::PendingGate::kind).
    pub name: &'static str,
    /// The JSON Schema of what the gate shows the user (self-contained: definitions
    /// under `$defs`).
    pub payload_schema: Value,
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

impl GateRegistry {
    /// Answers the gate `id`, an instance of `gate`, with a typed answer: how code (a
    /// test, a UI in the same process, a simulated user) answers, with the same types the
    /// waiting tool reads. Fails when the gate waiting under `id` is of another kind, and
    /// as [`respond`](Self::respond) does.
    ///
    /// ```
    /// use agent_runtime::{AgentIdentity, Gate, Session};
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// const CONFIRM: Gate<String, bool> = Gate::new("confirm");
    /// let session: Session<(), ()> = Session::new("s1", ());
    /// let gates = session.gates().clone();
    /// tokio::spawn(async move {
    ///     let waiting = gates.next_pending().await;
    ///     gates.answer(&CONFIRM, &waiting.id, &true).unwrap();
    /// });
    /// let ctx = session.context(AgentIdentity::new("booker", "trips"));
    /// assert!(ctx.ask(&CONFIRM, &"Book the 9:40 train?".to_owned()).await.unwrap());
    /// # });
    /// ```
    pub fn answer<P, A: Serialize>(
        &self,
        gate: &Gate<P, A>,
        id: &str,
        answer: &A,
    ) -> Result<(), GateError> {
        let kind = self.pending_kind(id);
        if let Some(kind) = kind
            && kind != gate.name()
        {
            return Err(GateError::WrongKind {
                id: id.to_owned(),
                kind,
                asked: gate.name().to_owned(),
            });
        }
        let answer = serde_json::to_value(answer).map_err(|e| GateError::InvalidAnswer {
            id: id.to_owned(),
            message: e.to_string(),
        })?;
        self.respond(id, answer)
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
