//! Gates: points where a run waits for a person's answer.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// What went wrong with a gate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    /// No gate with this id is or was pending in this session.
    #[error("unknown gate {0:?}")]
    Unknown(String),
    /// The gate was answered already; it takes one answer.
    #[error("gate {0:?} was already answered")]
    AlreadyAnswered(String),
    /// A gate with this id is already waiting.
    #[error("gate {0:?} is already waiting")]
    AlreadyPending(String),
    /// Nobody answered in time.
    #[error("gate {id:?} timed out after {after:?}")]
    TimedOut {
        /// The gate.
        id: String,
        /// Its timeout.
        after: Duration,
    },
    /// The run was cancelled while waiting.
    #[error("gate {0:?} was cancelled")]
    Cancelled(String),
    /// The payload to show does not serialize to JSON; the gate was not opened.
    #[error("the payload of gate {gate:?} does not serialize: {message}")]
    InvalidPayload {
        /// The gate's name.
        gate: String,
        /// The serialization error.
        message: String,
    },
    /// An answer given from code is for another kind of gate than the one waiting.
    #[error("gate {id:?} is a {kind:?} gate, not a {asked:?} gate")]
    WrongKind {
        /// The gate.
        id: String,
        /// The kind of the gate waiting.
        kind: String,
        /// The kind the answer was given as.
        asked: String,
    },
    /// The answer does not have the shape the waiting code expects.
    #[error("the answer to gate {id:?} is invalid: {message}")]
    InvalidAnswer {
        /// The gate.
        id: String,
        /// The deserialization error.
        message: String,
    },
}

impl From<GateError> for crate::graph::NodeError {
    /// A gate that failed (timed out, cancelled, answered wrongly) fails the node.
    fn from(error: GateError) -> Self {
        crate::graph::NodeError::fatal(error.to_string())
    }
}

/// A gate to wait at: its name, the declared gate it is an instance of, what to show the
/// user, and an optional timeout.
///
/// ```
/// use agent_runtime::GateRequest;
/// use std::time::Duration;
/// let gate = GateRequest::new("blueprint_review")
///     .with_payload(serde_json::json!({"sections": 5}))
///     .with_timeout(Duration::from_secs(3600));
/// assert_eq!(gate.name, "blueprint_review");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct GateRequest {
    /// The gate's name (the call site: `blueprint_review`).
    pub name: String,
    /// The declared [`Gate`](crate::Gate) it is an instance of, which says what answer it
    /// takes (the name itself when it was not made from a declared gate).
    pub kind: String,
    /// What the user is shown.
    pub payload: Value,
    /// How long to wait; `None` waits until answered or cancelled.
    pub timeout: Option<Duration>,
}

impl GateRequest {
    /// A gate with no payload and no timeout.
    pub fn new(name: impl Into<String>) -> Self {
        let name = name.into();
        GateRequest {
            kind: name.clone(),
            name,
            payload: Value::Null,
            timeout: None,
        }
    }

    /// Sets the declared gate it is an instance of.
    pub fn with_kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = kind.into();
        self
    }

    /// Sets what the user is shown.
    pub fn with_payload(mut self, payload: Value) -> Self {
        self.payload = payload;
        self
    }

    /// Sets the timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

impl From<&str> for GateRequest {
    fn from(name: &str) -> Self {
        GateRequest::new(name)
    }
}

/// A gate waiting for its answer, as a reconnecting client lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingGate {
    /// Stable id: `{agent}:{gate name}:{n}`, `n` counting from 1 per agent and name.
    pub id: String,
    /// The gate's name.
    pub name: String,
    /// The declared gate it is an instance of (see [`GateRequest::kind`]).
    #[serde(default)]
    pub kind: String,
    /// What the user is shown.
    pub payload: Value,
    /// When the wait began.
    pub since: DateTime<Utc>,
    /// When it times out, if it does.
    pub expires_at: Option<DateTime<Utc>>,
}

struct Waiting {
    gate: PendingGate,
    answer: oneshot::Sender<Value>,
}

#[derive(Default)]
struct Gates {
    pending: BTreeMap<String, Waiting>,
    answered: HashSet<String>,
    counters: HashMap<(String, String), u64>,
    /// Answers given before a restart, returned at once when their gate is waited at.
    recorded: HashMap<String, Value>,
    /// The timeout of a gate whose request names none.
    default_timeout: Option<Duration>,
    /// The gates that closed because their timeout passed, in order.
    expired: Vec<String>,
}

/// A gate being waited at; closes it (no longer pending, the listener told why) when the
/// wait ends without an answer, or is dropped.
struct OpenGate<'a> {
    registry: &'a GateRegistry,
    id: &'a str,
    /// Why it closes, unless it was answered.
    reason: Option<&'static str>,
}

impl Drop for OpenGate<'_> {
    fn drop(&mut self) {
        let Some(reason) = self.reason else {
            return;
        };
        let was_pending = self.registry.lock().pending.remove(self.id).is_some();
        if was_pending && let Some(listener) = &self.registry.inner.listener {
            listener.closed(self.id, reason);
        }
    }
}

/// Hears a registry's gates open and get answered, for example to persist them and to
/// tell a client. Called synchronously, under no lock; must not block.
pub trait GateListener: Send + Sync {
    /// A gate started waiting.
    fn opened(&self, gate: &PendingGate);
    /// A pending gate was answered through [`GateRegistry::respond`].
    fn answered(&self, id: &str, answer: &Value);
    /// A pending gate closed without an answer: `expired` (its timeout passed) or
    /// `cancelled` (its session was cancelled). By default nothing happens.
    fn closed(&self, id: &str, reason: &str) {
        let _ = (id, reason);
    }
}

/// The gates of one session: wait, answer exactly once, list what is pending.
/// Cheap to clone; clones share the registry.
///
/// ```
/// use agent_runtime::{GateRegistry, GateRequest};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let gates = GateRegistry::new();
/// let id = gates.next_id("coordinator", "approve");
/// let waiter = gates.clone();
/// let wait = tokio::spawn({ let id = id.clone(); async move {
///     waiter.wait(&id, GateRequest::new("approve"), None).await
/// }});
/// let pending = gates.next_pending().await;
/// assert_eq!(pending.id, id);
/// gates.respond(&id, serde_json::json!(true)).unwrap();
/// assert_eq!(wait.await.unwrap().unwrap(), serde_json::json!(true));
/// assert!(gates.respond(&id, serde_json::json!(false)).is_err()); // exactly once
/// # });
/// ```
#[derive(Clone, Default)]
pub struct GateRegistry {
    inner: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    gates: Mutex<Gates>,
    /// Woken whenever a gate starts waiting.
    opened: tokio::sync::Notify,
    /// Cancelled when a gate first times out; made when first asked for or needed (most
    /// sessions never are: a token is an allocation of its own).
    expiry: OnceLock<CancellationToken>,
    listener: Option<Arc<dyn GateListener>>,
}

impl std::fmt::Debug for GateRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateRegistry")
            .field("pending", &self.pending().len())
            .finish()
    }
}

impl GateRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        GateRegistry::default()
    }

    /// An empty registry that reports every gate opened and answered to `listener`.
    pub fn with_listener(listener: Arc<dyn GateListener>) -> Self {
        GateRegistry {
            inner: Arc::new(Shared {
                listener: Some(listener),
                ..Shared::default()
            }),
        }
    }

    /// Records answers given before a restart: waiting at one of these gates returns its
    /// answer at once, without opening it again. With stable ids ([`next_id`](Self::next_id)),
    /// a run replayed after a crash passes the gates it had passed and stops at the first
    /// one still unanswered.
    ///
    /// ```
    /// use agent_runtime::{GateRegistry, GateRequest};
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let gates = GateRegistry::new();
    /// gates.restore([("coordinator:approve:1".to_owned(), serde_json::json!("yes"))]);
    /// let id = gates.next_id("coordinator", "approve");
    /// let answer = gates.wait(&id, GateRequest::new("approve"), None).await.unwrap();
    /// assert_eq!(answer, "yes");
    /// assert!(gates.pending().is_empty());
    /// # });
    /// ```
    pub fn restore(&self, answers: impl IntoIterator<Item = (String, Value)>) {
        self.lock().recorded.extend(answers);
    }

    fn lock(&self) -> MutexGuard<'_, Gates> {
        self.inner.gates.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next stable id for `gate` waited at by `agent`: `agent:gate:1`, `agent:gate:2`, ...
    /// The same run makes the same ids in the same order, so an answer can be matched to
    /// its gate after a reconnect or a resume.
    pub fn next_id(&self, agent: &str, gate: &str) -> String {
        let mut gates = self.lock();
        let counter = gates
            .counters
            .entry((agent.to_owned(), gate.to_owned()))
            .or_insert(0);
        *counter += 1;
        format!("{agent}:{gate}:{counter}")
    }

    /// The counters behind [`next_id`](Self::next_id): `(agent, gate, ids handed out)`,
    /// sorted. A durable run saves them with every checkpoint so that, resumed in another
    /// process, it makes the same gate ids for the work it does again.
    pub fn id_counters(&self) -> Vec<(String, String, u64)> {
        let mut counters: Vec<(String, String, u64)> = self
            .lock()
            .counters
            .iter()
            .map(|((agent, gate), n)| (agent.clone(), gate.clone(), *n))
            .collect();
        counters.sort();
        counters
    }

    /// Replaces the counters behind [`next_id`](Self::next_id) with saved ones (see
    /// [`id_counters`](Self::id_counters)).
    ///
    /// ```
    /// use agent_runtime::GateRegistry;
    /// let before = GateRegistry::new();
    /// before.next_id("writer", "review");
    /// let after = GateRegistry::new();
    /// after.set_id_counters(before.id_counters());
    /// assert_eq!(after.next_id("writer", "review"), "writer:review:2");
    /// ```
    pub fn set_id_counters(&self, counters: impl IntoIterator<Item = (String, String, u64)>) {
        let mut gates = self.lock();
        gates.counters = counters
            .into_iter()
            .map(|(agent, gate, n)| ((agent, gate), n))
            .collect();
    }

    /// Gives every gate whose request names no timeout this one (`None`: such gates wait
    /// until answered or cancelled): an idle timeout for a whole session, so that a
    /// session its user abandoned ends instead of holding its run for ever.
    ///
    /// ```
    /// use agent_runtime::{GateError, GateRegistry, GateRequest};
    /// use std::time::Duration;
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let gates = GateRegistry::new();
    /// gates.set_default_timeout(Some(Duration::from_millis(10)));
    /// let waited = gates.wait("coordinator:approve:1", GateRequest::new("approve"), None).await;
    /// assert!(matches!(waited, Err(GateError::TimedOut { .. })));
    /// assert_eq!(gates.expired(), ["coordinator:approve:1"]);
    /// assert!(gates.expiry().is_cancelled());
    /// # });
    /// ```
    pub fn set_default_timeout(&self, timeout: Option<Duration>) {
        self.lock().default_timeout = timeout;
    }

    /// The gates that closed because their timeout passed (none answered), in order.
    pub fn expired(&self) -> Vec<String> {
        self.lock().expired.clone()
    }

    /// A token cancelled when a gate of this registry first times out: a run that must
    /// end when its user stops answering (not only the step that asked) waits on it.
    pub fn expiry(&self) -> CancellationToken {
        self.expiry_token().clone()
    }

    fn expiry_token(&self) -> &CancellationToken {
        self.inner.expiry.get_or_init(CancellationToken::new)
    }

    /// Registers the gate `id` and waits for its answer, the timeout (the request's, or
    /// the [default](Self::set_default_timeout)), or `cancel`.
    pub async fn wait(
        &self,
        id: &str,
        mut request: GateRequest,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, GateError> {
        let (sender, receiver) = oneshot::channel();
        let opened = {
            let mut gates = self.lock();
            request.timeout = request.timeout.or(gates.default_timeout);
            if gates.pending.contains_key(id) {
                return Err(GateError::AlreadyPending(id.to_owned()));
            }
            if gates.answered.contains(id) {
                return Err(GateError::AlreadyAnswered(id.to_owned()));
            }
            if let Some(answer) = gates.recorded.remove(id) {
                gates.answered.insert(id.to_owned());
                tracing::info!(gate = id, "answered before a restart");
                return Ok(answer);
            }
            // A cancelled run opens no gate.
            if cancel.is_some_and(CancellationToken::is_cancelled) {
                return Err(GateError::Cancelled(id.to_owned()));
            }
            let since = Utc::now();
            let expires_at = request
                .timeout
                .and_then(|t| chrono::Duration::from_std(t).ok())
                .map(|t| since + t);
            let gate = PendingGate {
                id: id.to_owned(),
                name: request.name.clone(),
                kind: request.kind.clone(),
                payload: request.payload,
                since,
                expires_at,
            };
            let opened = gate.clone();
            gates.pending.insert(
                id.to_owned(),
                Waiting {
                    gate,
                    answer: sender,
                },
            );
            opened
        };
        if let Some(listener) = &self.inner.listener {
            listener.opened(&opened);
        }
        self.inner.opened.notify_waiters();
        tracing::info!(gate = id, "waiting for the user");
        let wait = crate::process_metrics::GateWait::start(&opened.name);
        // Closes the gate as cancelled if the wait is dropped before it ends (its run was
        // cancelled around it).
        let mut open = OpenGate {
            registry: self,
            id,
            reason: Some("cancelled"),
        };
        let timeout = async {
            match request.timeout {
                Some(after) => tokio::time::sleep(after).await,
                None => std::future::pending().await,
            }
        };
        let cancelled = async {
            match cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            answer = receiver => answer.map_err(|_| GateError::Cancelled(id.to_owned())),
            _ = timeout => Err(GateError::TimedOut { id: id.to_owned(), after: request.timeout.unwrap_or_default() }),
            _ = cancelled => Err(GateError::Cancelled(id.to_owned())),
        };
        open.reason = match &outcome {
            Ok(_) => None,
            Err(GateError::TimedOut { .. }) => {
                self.lock().expired.push(id.to_owned());
                self.expiry_token().cancel();
                Some("expired")
            }
            Err(_) => Some("cancelled"),
        };
        wait.finish(open.reason.unwrap_or("answered"));
        drop(open);
        outcome
    }

    /// Answers the gate `id`. Fails if it is unknown or already answered.
    pub fn respond(&self, id: &str, answer: Value) -> Result<(), GateError> {
        let mut gates = self.lock();
        let Some(waiting) = gates.pending.remove(id) else {
            return Err(if gates.answered.contains(id) {
                GateError::AlreadyAnswered(id.to_owned())
            } else {
                GateError::Unknown(id.to_owned())
            });
        };
        gates.answered.insert(id.to_owned());
        drop(gates);
        if let Some(listener) = &self.inner.listener {
            listener.answered(id, &answer);
        }
        waiting
            .answer
            .send(answer)
            .map_err(|_| GateError::Cancelled(id.to_owned()))
    }

    /// The kind of the gate pending under `id`, if one is.
    pub(crate) fn pending_kind(&self, id: &str) -> Option<String> {
        self.lock().pending.get(id).map(|w| w.gate.kind.clone())
    }

    /// Waits until a gate is pending and returns the first one (oldest id first): what a
    /// UI or a test that answers gates waits on, instead of polling [`GateRegistry::pending`].
    pub async fn next_pending(&self) -> PendingGate {
        loop {
            // Registered before looking, so a gate opened in between is not missed.
            let opened = self.inner.opened.notified();
            if let Some(gate) = self.pending().into_iter().next() {
                return gate;
            }
            opened.await;
        }
    }

    /// The gates waiting now, oldest id first.
    pub fn pending(&self) -> Vec<PendingGate> {
        self.lock()
            .pending
            .values()
            .map(|w| w.gate.clone())
            .collect()
    }
}
