//! What a product gives the server ([`Product`]) and what the server gives a product's run
//! ([`SessionHandle`]).

use agent_runtime::bus::AgentBus;
use agent_runtime::checkpoint::CheckpointStore;
use agent_runtime::{AnswerError, EventSink, GateRegistry, GateSpec, ModelOutages, Session};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::marker::PhantomData;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::writer::{Write, is_reserved_type};

/// A product the server hosts under `/api/{name}/...`, with typed contracts: the start
/// request, the events it emits, its result, and the gates it waits at. The server reads
/// and checks start bodies and gate answers against them (422 naming the field), and
/// publishes their JSON Schemas as an OpenAPI document (`GET /api/{name}/openapi.json`).
///
/// `run` is called once for a new session and again, for the same session, after a server
/// restart ([`AgentServer::resume_unfinished`](crate::AgentServer::resume_unfinished)): a
/// product running its graph with
/// [`CompiledGraph::run_durable`](agent_runtime::graph::CompiledGraph::run_durable) on
/// [`SessionHandle::checkpoints`] goes on where it was, and the gates it had passed pass
/// again at once (see [`SessionHandle`] for the two lines, and `examples/embed_runtime.rs`
/// for a whole product).
///
/// ```
/// use agent_server::{Product, SessionHandle};
/// use agent_runtime::{Gate, GateSpec};
///
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct Start { text: String }
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// #[serde(tag = "type", rename_all = "snake_case")]
/// enum Event { Echoed { text: String } }
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Question { text: String }
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct Approval { approved: bool }
/// const APPROVE: Gate<Question, Approval> = Gate::new("approve");
///
/// struct Echo;
///
/// #[async_trait::async_trait]
/// impl Product for Echo {
///     type Start = Start;
///     type Event = Event;
///     type Output = String;
///     type Error = std::io::Error;
///
///     fn name(&self) -> &str { "echo" }
///
///     fn gates(&self) -> Vec<GateSpec> { vec![APPROVE.spec()] }
///
///     async fn run(&self, session: SessionHandle<Event>, start: Start) -> Result<String, std::io::Error> {
///         session.emit(&Event::Echoed { text: start.text.clone() });
///         Ok(start.text)
///     }
/// }
/// ```
#[async_trait]
pub trait Product: Send + Sync + 'static {
    /// The start request (`POST /api/{name}/start`).
    type Start: DeserializeOwned + JsonSchema + Send + 'static;
    /// The product's own events: JSON objects with a `"type"` field.
    type Event: Serialize + JsonSchema + Send + Sync + 'static;
    /// The result of a complete session.
    type Output: Serialize + JsonSchema + Send;
    /// Why a session failed (its message is the session's error).
    type Error: std::error::Error + Send;

    /// The `{product}` path segment, for example `resume`. Must be URL-safe.
    fn name(&self) -> &str;

    /// Checks a start request beyond its type (lengths, non-empty text). `Err` is
    /// answered with status 422 naming the field. By default every request is accepted.
    fn check_start(&self, start: &Self::Start) -> Result<(), AnswerError> {
        let _ = start;
        Ok(())
    }

    /// Admits a start request before its session is created (after it was read and
    /// checked): a request the product cannot serve as given (400), a caller over its
    /// quota (429) or one naming what it cannot see (404) is refused with the refusal's code and message, and no session is
    /// made. A product that counts admissions counts them here. By default every
    /// request is admitted.
    async fn admit(&self, start: &Self::Start) -> Result<(), Refusal> {
        let _ = start;
        Ok(())
    }

    /// Runs the session and returns its result. A panic is caught and fails the session
    /// like an `Err`.
    async fn run(
        &self,
        session: SessionHandle<Self::Event>,
        start: Self::Start,
    ) -> Result<Self::Output, Self::Error>;

    /// The gates the product waits at, declared once as [`Gate`](agent_runtime::Gate)s:
    /// an answer to a gate whose kind is listed here is checked before it is passed on
    /// (422 `invalid_answer` naming the field; the gate stays open). By default none.
    fn gates(&self) -> Vec<GateSpec> {
        Vec::new()
    }

    /// An HTML page served at `GET /` (the first registered product that has one).
    fn page(&self) -> Option<String> {
        None
    }
}

/// Why a product refused a start request ([`Product::admit`]).
///
/// ```
/// let refusal = agent_server::Refusal::QuotaExceeded("20 optimizations a day".into());
/// assert_eq!((refusal.status(), refusal.code()), (429, "quota_exceeded"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// 400 `refused`: the request cannot be served as given.
    #[error("{0}")]
    BadRequest(String),
    /// 429 `quota_exceeded`: the caller has used up its quota.
    #[error("{0}")]
    QuotaExceeded(String),
    /// 404 `not_found`: the request names something its caller cannot see (another
    /// tenant's, or nothing at all).
    #[error("{0}")]
    NotFound(String),
}

impl Refusal {
    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::BadRequest(_) => 400,
            Refusal::QuotaExceeded(_) => 429,
            Refusal::NotFound(_) => 404,
        }
    }

    /// The error code in the body.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::BadRequest(_) => "refused",
            Refusal::QuotaExceeded(_) => "quota_exceeded",
            Refusal::NotFound(_) => "not_found",
        }
    }
}

/// A session as its run sees it: its request, its gates, where its events go (the
/// product's own `E`), the deployment's checkpoint store. Cheap to clone; clones share
/// everything.
///
/// [`session`](Self::session) makes the runtime [`Session`] a run works in, wired to all
/// of it, and [`CompiledGraph::run_durable`](agent_runtime::graph::CompiledGraph::run_durable)
/// on [`checkpoints`](Self::checkpoints) starts the graph, or resumes it after a restart:
///
/// ```
/// # use agent_server::SessionHandle;
/// # use agent_runtime::graph::{CompiledGraph, RunOptions, RunResult};
/// # use agent_runtime::checkpoint::CheckpointError;
/// # #[derive(Clone, serde::Serialize, serde::Deserialize)] struct Trip;
/// # #[derive(serde::Serialize)] struct Event;
/// async fn plan(
///     handle: SessionHandle<Event>,
///     graph: &CompiledGraph<Trip, Event>,
///     trip: Trip,
/// ) -> Result<RunResult<Trip>, CheckpointError> {
///     let session = handle.session(trip);
///     graph.run_durable(&session, handle.checkpoints(), RunOptions::new()).await
/// }
/// ```
pub struct SessionHandle<E> {
    inner: Arc<HandleParts>,
    event: PhantomData<fn(E)>,
}

impl<E> Clone for SessionHandle<E> {
    fn clone(&self) -> Self {
        SessionHandle {
            inner: Arc::clone(&self.inner),
            event: PhantomData,
        }
    }
}

impl<E> std::fmt::Debug for SessionHandle<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionHandle")
            .field("id", &self.inner.id)
            .field("product", &self.inner.product)
            .field("replayed_events", &self.inner.replayed.len())
            .finish()
    }
}

impl<E> SessionHandle<E> {
    pub(crate) fn new(parts: HandleParts) -> Self {
        SessionHandle {
            inner: Arc::new(parts),
            event: PhantomData,
        }
    }

    /// The same session, for a product whose events are `F` (the server hands each
    /// product its own).
    pub(crate) fn retyped<F>(self) -> SessionHandle<F> {
        SessionHandle {
            inner: self.inner,
            event: PhantomData,
        }
    }

    /// The session id (a v4 uuid).
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The product's name.
    pub fn product(&self) -> &str {
        &self.inner.product
    }

    /// The start request, as the server read and checked it.
    pub fn request(&self) -> &Value {
        &self.inner.request
    }

    /// The session's gates, which [`session`](Self::session) gives the runtime session:
    /// a gate a tool asks ([`AgentContext::ask`](agent_runtime::AgentContext::ask)) is
    /// answered through `POST /api/{product}/respond`; a gate that opens is stored and
    /// announced (`gate_open`), an answer is stored and announced (`gate_answered`).
    pub fn gates(&self) -> &GateRegistry {
        &self.inner.gates
    }

    /// Whether the user cancelled the session (`POST /api/{product}/{session}/cancel`):
    /// the run should end, and its gates are closed. Its cancellation token fires too.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Records the product's stage name, shown by the status route (in order with the
    /// events emitted before).
    pub fn set_stage(&self, stage: &str) {
        self.send(Write::Stage(stage.to_owned()));
    }

    /// The deployment's checkpoint store (the same database as the sessions with the
    /// SQLite backend). A product running a graph runs it here under the session id with
    /// [`CompiledGraph::run_durable`](agent_runtime::graph::CompiledGraph::run_durable),
    /// which resumes it after a restart.
    pub fn checkpoints(&self) -> Arc<dyn CheckpointStore> {
        Arc::clone(&self.inner.checkpoints)
    }

    /// The session's agent bus, from the deployment
    /// ([`AgentServer::with_buses`](crate::AgentServer::with_buses); in process by
    /// default), which [`session`](Self::session) gives the runtime session.
    pub fn bus(&self) -> Arc<dyn AgentBus> {
        Arc::clone(&self.inner.bus)
    }

    /// How many product events the session had stored when this run started (0 for a new
    /// session). A resumed run's numbered event ([`EventSink::emit_numbered`]) that equals
    /// the stored event with its ordinal is a replay of work done again after the last
    /// checkpoint: it is dropped rather than stored twice. Any other event is stored, so
    /// nothing is lost.
    pub fn replayed_events(&self) -> u64 {
        self.inner.replayed.len() as u64
    }

    /// The session's cancellation token, which [`session`](Self::session) gives the
    /// runtime session. It is cancelled once the run has ended, which stops agents the
    /// run left behind.
    pub fn cancellation(&self) -> CancellationToken {
        self.inner.cancel.clone()
    }

    fn send(&self, write: Write) {
        if self.inner.writer.send(write).is_err() {
            tracing::debug!(session = %self.inner.id, "event dropped: the session has ended");
        }
    }
}

impl<E: Serialize + Send + Sync + 'static> SessionHandle<E> {
    /// The runtime session this server session runs in, holding `state`: its id, its
    /// gates, its events (numbered, to this handle), its agent bus and its cancellation
    /// are the server session's, and the model outages it reports
    /// ([`ModelOutages`](agent_runtime::ModelOutages)) reach the server: a run that then
    /// ends in an error parks at its last checkpoint and is run again later, instead of
    /// failing. Add what the product's agents need (a router, a meter) with the session's
    /// own `with_*` methods.
    pub fn session<S>(&self, state: S) -> Session<S, E> {
        Session::new(self.id(), state)
            .with_gates(self.gates().clone())
            .with_events(Arc::new(self.clone()))
            .with_bus(self.bus())
            .with_cancellation(self.cancellation())
            .with_model_outages(Arc::clone(&self.inner.outages))
    }

    /// Sends a product event: its `"type"` field names the SSE event. It is stored and
    /// numbered, then sent to the live streams, in the order emitted. An event that does
    /// not serialize to an object with a string `"type"`, or that uses one of the
    /// server's own types (`gate_open`, `gate_answered`, `session_complete`,
    /// `session_failed`), is dropped with a warning.
    pub fn emit(&self, event: &E) {
        let value = match serde_json::to_value(event) {
            Ok(value) => value,
            Err(error) => {
                tracing::warn!(session = %self.inner.id, %error, "event dropped: it does not serialize");
                return;
            }
        };
        match value.get("type").and_then(Value::as_str) {
            None => {
                tracing::warn!(session = %self.inner.id, "event without a string \"type\" field");
            }
            Some(kind) if is_reserved_type(kind) => {
                tracing::warn!(session = %self.inner.id, kind, "event dropped: the type is the server's own");
                return;
            }
            Some(_) => {}
        }
        self.send(Write::Event(value));
    }

    /// Sends a numbered product event, unless it replays a stored one.
    fn emit_numbered(&self, ordinal: u64, event: &E) {
        let stored = usize::try_from(ordinal)
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|index| self.inner.replayed.get(index));
        if let Some(stored) = stored
            && serde_json::to_value(event).is_ok_and(|event| event == *stored)
        {
            tracing::debug!(session = %self.inner.id, ordinal, "replayed event already stored");
            return;
        }
        self.emit(event);
    }
}

/// A handle is the sink of its product's events, which is how
/// [`session`](SessionHandle::session) wires the runtime session to the server.
impl<E: Serialize + Send + Sync + 'static> EventSink<E> for SessionHandle<E> {
    fn emit(&self, event: E) {
        SessionHandle::emit(self, &event);
    }

    fn emit_numbered(&self, ordinal: u64, event: E) {
        SessionHandle::emit_numbered(self, ordinal, &event);
    }
}

/// What a handle is made of.
pub(crate) struct HandleParts {
    pub(crate) id: String,
    pub(crate) product: String,
    pub(crate) request: Value,
    pub(crate) gates: GateRegistry,
    pub(crate) writer: mpsc::UnboundedSender<Write>,
    pub(crate) cancel: CancellationToken,
    pub(crate) checkpoints: Arc<dyn CheckpointStore>,
    pub(crate) bus: Arc<dyn AgentBus>,
    /// Told of the model outages of the session's runtime sessions.
    pub(crate) outages: Arc<dyn ModelOutages>,
    /// Product events stored before this run started (a resumed session), in order: a
    /// numbered event equal to the stored one with its ordinal is a replay, not stored
    /// again.
    pub(crate) replayed: Vec<Value>,
}
