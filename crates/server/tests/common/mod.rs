//! A test product ("echo"), a server on loopback, and an SSE reader.
#![allow(dead_code)]

use agent_runtime::graph::{
    CompiledGraph, NodeContext, NodeError, RunOptions, StateGraph, node_fn,
};
use agent_runtime::{AgentIdentity, GateRegistry};
use agent_server::{Product, SessionHandle};
use serde_json::{Value, json};
use std::sync::Mutex;
use std::time::Duration;

#[allow(unused_imports)]
pub use agent_server::testing::{PATIENCE, SseEvent, SseReader, Started, TestServer, names};

/// A graph product of two nodes. `approve` emits `started`, waits at
/// `coordinator:approve:1`, emits `approved` and sets stage `approved`; `confirm` waits at
/// `coordinator:approve:2`, emits `confirmed`; the result holds both answers. The graph
/// runs durably in the server's checkpoint store, so a run after a restart resumes at the
/// node it had reached. `"mode"` in the start request: `fail` (the node fails), `panic`,
/// `hang` (never ends, deaf to cancellation), `expire` (the first gate times out after
/// 200 ms).
pub struct Echo {
    pub name: String,
    pub page: Option<String>,
    /// A resumed run sleeps this long before it goes on (to answer a gate before it
    /// reopens).
    pub resume_delay: Duration,
    /// Each run: `None` when it started the graph, else the first answer its checkpoint
    /// held (`Null` before the first gate was answered).
    pub runs: Mutex<Vec<Option<Value>>>,
    /// The gates of the last run.
    pub gates: Mutex<Option<GateRegistry>>,
}

impl Echo {
    pub fn new(name: &str) -> Self {
        Echo {
            name: name.to_owned(),
            page: None,
            resume_delay: Duration::ZERO,
            runs: Mutex::new(Vec::new()),
            gates: Mutex::new(None),
        }
    }

    pub fn last_gates(&self) -> GateRegistry {
        self.gates.lock().unwrap().clone().expect("no run yet")
    }
}

/// Echo's graph state: what was asked and the answers so far.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct EchoState {
    pub text: String,
    pub mode: String,
    pub first: Option<Value>,
    pub second: Option<Value>,
}

/// Echo's graph: `approve`, then `confirm` after `resume_delay`.
fn echo_graph(
    handle: SessionHandle<Value>,
    resume_delay: Duration,
) -> CompiledGraph<EchoState, Value> {
    let approve = node_fn(move |ctx: &NodeContext<EchoState, Value>| {
        let handle = handle.clone();
        Box::pin(async move {
            let EchoState { text, mode, .. } = ctx.state();
            // A stage opened by an event, as products do: both are stored in one batch.
            handle.set_stage("started");
            ctx.emit(json!({"type": "started", "text": text}));
            match mode.as_str() {
                "fail" => return Err(NodeError::fatal("asked to fail")),
                "panic" => panic!("asked to panic"),
                "hang" => std::future::pending::<()>().await,
                _ => {}
            }
            let mut request = APPROVE
                .request(&json!({"question": "approve?", "text": text}))
                .map_err(|e| NodeError::fatal(e.to_string()))?;
            if mode == "expire" {
                request = request.with_timeout(Duration::from_millis(200));
            }
            let asker = ctx.agent_context(AgentIdentity::new("coordinator", "echo"));
            let first = asker
                .ask_with(&APPROVE, request)
                .await
                .map_err(|e| NodeError::fatal(e.to_string()))?;
            ctx.update(|s| s.first = Some(first.clone()));
            ctx.emit(json!({"type": "approved", "answer": first}));
            handle.set_stage("approved");
            Ok(())
        })
    });
    let confirm = node_fn(move |ctx: &NodeContext<EchoState, Value>| {
        Box::pin(async move {
            tokio::time::sleep(resume_delay).await;
            let asker = ctx.agent_context(AgentIdentity::new("coordinator", "echo"));
            let second = asker
                .ask(&APPROVE, &json!({"question": "confirm?"}))
                .await
                .map_err(|e| NodeError::fatal(e.to_string()))?;
            ctx.emit(json!({"type": "confirmed", "answer": second}));
            ctx.update(|s| s.second = Some(second));
            Ok(())
        })
    });
    StateGraph::sequence([("approve", approve), ("confirm", confirm)])
        .compile()
        .unwrap()
}

/// Echo's start request.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct EchoStart {
    pub text: String,
    #[serde(default)]
    pub mode: String,
}

/// Why an echo session failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EchoError(pub String);

impl From<agent_runtime::GateError> for EchoError {
    fn from(error: agent_runtime::GateError) -> Self {
        EchoError(error.to_string())
    }
}

impl From<agent_runtime::sessions::StoreError> for EchoError {
    fn from(error: agent_runtime::sessions::StoreError) -> Self {
        EchoError(error.to_string())
    }
}

/// Echo's gate: any answer.
pub const APPROVE: agent_runtime::Gate<Value, Value> = agent_runtime::Gate::new("approve");

#[async_trait::async_trait]
impl Product for Echo {
    type Start = EchoStart;
    type Event = Value;
    type Output = Value;
    type Error = EchoError;

    fn name(&self) -> &str {
        &self.name
    }

    fn gates(&self) -> Vec<agent_runtime::GateSpec> {
        vec![APPROVE.spec()]
    }

    /// `"mode": "refuse"` is refused with 400, `"over_quota"` with 429.
    async fn admit(&self, start: &EchoStart) -> Result<(), agent_server::Refusal> {
        match start.mode.as_str() {
            "refuse" => Err(agent_server::Refusal::BadRequest(
                "echo cannot say that".into(),
            )),
            "over_quota" => Err(agent_server::Refusal::QuotaExceeded(
                "one echo a day".into(),
            )),
            _ => Ok(()),
        }
    }

    async fn run(
        &self,
        handle: SessionHandle<Value>,
        start: EchoStart,
    ) -> Result<Value, EchoError> {
        let checkpoints = handle.checkpoints();
        let resumed = checkpoints
            .latest(handle.id())
            .await
            .map_err(|e| EchoError(e.to_string()))?
            .map(|checkpoint| {
                let state: Value = checkpoint.state.parse().unwrap_or_default();
                state["first"].clone()
            });
        self.runs.lock().unwrap().push(resumed.clone());
        *self.gates.lock().unwrap() = Some(handle.gates().clone());

        let EchoStart { text, mode } = start;
        let delay = match resumed {
            Some(_) => self.resume_delay,
            None => Duration::ZERO,
        };
        let graph = echo_graph(handle.clone(), delay);
        let session = handle.session(EchoState {
            text,
            mode,
            ..EchoState::default()
        });
        let run = graph
            .run_durable(&session, checkpoints, RunOptions::new())
            .await
            .map_err(|e| EchoError(e.to_string()))?;
        if !run.is_success() {
            let failure = run.errors.last().map(|f| f.message.clone());
            return Err(EchoError(failure.or(run.reason).unwrap_or_default()));
        }
        let EchoState {
            text,
            first,
            second,
            ..
        } = run.state;
        Ok(json!({"text": text, "first": first, "second": second}))
    }

    fn page(&self) -> Option<String> {
        self.page.clone()
    }
}

/// What an [`Echo`] session shows from start to end when nothing interrupts it.
pub const UNINTERRUPTED: [&str; 8] = [
    "started",
    "gate_open",
    "gate_answered",
    "approved",
    "gate_open",
    "gate_answered",
    "confirmed",
    "session_complete",
];

/// Asserts that `events`, read from event 0, are numbered 1, 2, 3, ... and are an
/// uninterrupted [`Echo`] session's, each once.
pub fn assert_each_event_once(events: &[SseEvent]) {
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());
    let kinds: Vec<&str> = names(events).into_iter().map(|(_, name)| name).collect();
    assert_eq!(kinds, UNINTERRUPTED);
}

/// Waits until `gate` is listed pending.
pub async fn wait_for_gate(server: &TestServer, started: &Started, gate: &str) {
    tokio::time::timeout(PATIENCE, async {
        loop {
            let status = server.status(started).await;
            if status["pending_gates"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["id"] == gate)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the gate did not open");
}

/// Reads the session from event 0 to `session_complete` and asserts it is an
/// uninterrupted [`Echo`] session's, each event once ([`assert_each_event_once`]).
pub async fn assert_replays_once(server: &TestServer, started: &Started) -> Vec<SseEvent> {
    let events = server
        .stream(started, None)
        .await
        .until("session_complete")
        .await;
    assert_each_event_once(&events);
    events
}
