//! What a product gives the server ([`Product`]) and what the server gives a product's run
//! ([`SessionHandle`]).

use agent_runtime::EventSink;
use agent_runtime::GateRegistry;
use agent_runtime::sessions::StoreError;
use async_trait::async_trait;
use serde_json::Value;
use std::marker::PhantomData;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::writer::{Write, is_reserved_type};

/// A product the server hosts under `/api/{name}/...`: it checks start requests and runs
/// sessions.
///
/// `run` is called once for a new session and again, for the same session, after a server
/// restart ([`AgentServer::resume_unfinished`](crate::AgentServer::resume_unfinished)): then
/// [`SessionHandle::saved_state`] returns what it last saved with
/// [`SessionHandle::save_state`], and the gates it had passed (answered) pass again at once,
/// provided it makes the same gate ids in the same order
/// ([`GateRegistry::next_id`]). A run that skips work it has already done (because its
/// saved state says so) should still ask for the same gate ids.
#[async_trait]
pub trait Product: Send + Sync + 'static {
    /// The `{product}` path segment, for example `resume`. Must be URL-safe.
    fn name(&self) -> &str;

    /// Checks a start request (a JSON object). `Err` holds a message for the client, answered
    /// with status 422.
    fn validate_start(&self, body: &Value) -> Result<(), String>;

    /// Runs the session and returns its result, or an error message. A panic is caught and
    /// fails the session like an `Err`.
    async fn run(&self, session: SessionHandle) -> Result<Value, String>;

    /// Checks an answer to the gate named `gate` (the name, not the id) before it is
    /// passed on. `Err` holds a message for the client, answered with status 422 (code
    /// `invalid_answer`); the gate stays open. By default every answer is accepted.
    fn validate_answer(&self, gate: &str, answer: &Value) -> Result<(), String> {
        let _ = (gate, answer);
        Ok(())
    }

    /// An HTML page served at `GET /` (the first registered product that has one).
    fn page(&self) -> Option<String> {
        None
    }
}

/// A session as its run sees it: its request, its gates, where its events go, its saved
/// state. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct SessionHandle {
    inner: Arc<HandleInner>,
}

struct HandleInner {
    id: String,
    product: String,
    request: Value,
    gates: GateRegistry,
    writer: mpsc::UnboundedSender<Write>,
    saved_state: Option<Value>,
    cancel: CancellationToken,
}

impl std::fmt::Debug for SessionHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionHandle")
            .field("id", &self.inner.id)
            .field("product", &self.inner.product)
            .field("resumed", &self.inner.saved_state.is_some())
            .finish()
    }
}

impl SessionHandle {
    pub(crate) fn new(
        id: String,
        product: String,
        request: Value,
        gates: GateRegistry,
        writer: mpsc::UnboundedSender<Write>,
        saved_state: Option<Value>,
        cancel: CancellationToken,
    ) -> Self {
        SessionHandle {
            inner: Arc::new(HandleInner {
                id,
                product,
                request,
                gates,
                writer,
                saved_state,
                cancel,
            }),
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

    /// The start request, as [`Product::validate_start`] accepted it.
    pub fn request(&self) -> &Value {
        &self.inner.request
    }

    /// The session's gates. Give them to the runtime session
    /// ([`Session::with_gates`](agent_runtime::Session::with_gates)) so that the agents'
    /// `wait_for_user` is answered through `POST /api/{product}/respond`: a gate that opens
    /// is stored and announced (`gate_open`), an answer is stored and announced
    /// (`gate_answered`).
    pub fn gates(&self) -> &GateRegistry {
        &self.inner.gates
    }

    /// Sends a product event: a JSON object with a `"type"` field, which names the SSE
    /// event. It is stored and numbered, then sent to the live streams, in the order
    /// emitted. An event that does not serialize, or that uses one of the server's own
    /// types (`gate_open`, `gate_answered`, `session_complete`, `session_failed`), is
    /// dropped with a warning.
    pub fn emit<E: serde::Serialize>(&self, event: &E) {
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

    /// A sink for the runtime session
    /// ([`Session::with_events`](agent_runtime::Session::with_events) takes
    /// `move |e| sink.emit(e)`, or the handle itself, which is a sink too): every event
    /// goes through [`emit`](Self::emit).
    pub fn event_sink<E: serde::Serialize + Send + Sync + 'static>(&self) -> Arc<dyn EventSink<E>> {
        Arc::new(HandleSink {
            handle: self.clone(),
            _event: PhantomData,
        })
    }

    /// Persists the product's state and stage name (shown by the status route). Events
    /// emitted before this call are stored before the state is, so a restart never sees a
    /// state that is ahead of the events.
    pub async fn save_state(&self, stage: &str, state: &Value) -> Result<(), StoreError> {
        let (done, saved) = oneshot::channel();
        if self
            .inner
            .writer
            .send(Write::SaveState {
                stage: stage.to_owned(),
                state: state.clone(),
                done,
            })
            .is_err()
        {
            return Err(StoreError::Backend("the session has ended".to_owned()));
        }
        saved
            .await
            .map_err(|_| StoreError::Backend("the session has ended".to_owned()))?
    }

    /// The state saved before a restart, if this run resumes a session.
    pub fn saved_state(&self) -> Option<Value> {
        self.inner.saved_state.clone()
    }

    /// The session's cancellation token (give it to the runtime session with
    /// [`Session::with_cancellation`](agent_runtime::Session::with_cancellation)). It is
    /// cancelled once the run has ended, which stops agents the run left behind.
    pub fn cancellation(&self) -> CancellationToken {
        self.inner.cancel.clone()
    }

    fn send(&self, write: Write) {
        if self.inner.writer.send(write).is_err() {
            tracing::debug!(session = %self.inner.id, "event dropped: the session has ended");
        }
    }
}

/// A handle is an event sink for any serializable event type, so it can be given to
/// [`Session::with_events`](agent_runtime::Session::with_events) directly.
impl<E: serde::Serialize> EventSink<E> for SessionHandle {
    fn emit(&self, event: E) {
        SessionHandle::emit(self, &event);
    }
}

struct HandleSink<E> {
    handle: SessionHandle,
    _event: PhantomData<fn(E)>,
}

impl<E: serde::Serialize> EventSink<E> for HandleSink<E> {
    fn emit(&self, event: E) {
        self.handle.emit(&event);
    }
}
