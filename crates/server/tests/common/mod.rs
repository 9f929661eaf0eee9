//! A test product ("echo"), a server on loopback, and an SSE reader.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use agent_runtime::{AgentIdentity, GateRegistry, GateRequest, Session};
use agent_server::{Product, SessionHandle};
use serde_json::{Value, json};
use std::sync::Mutex;
use std::time::Duration;

#[allow(unused_imports)]
pub use agent_server::testing::{PATIENCE, SseEvent, SseReader, Started, TestServer, names};

/// Emits `started`, waits at `coordinator:approve:1`, emits `approved` and saves state
/// `approved`, waits at `coordinator:approve:2`, emits `confirmed`, returns both answers.
/// `"mode"` in the start request: `fail` (returns Err), `panic`, `hang` (never ends),
/// `expire` (the first gate times out after 200 ms).
/// A rerun after a restart skips the events and the save it did before.
pub struct Echo {
    pub name: String,
    pub page: Option<String>,
    /// A rerun sleeps this long before going on (to answer a gate before it reopens).
    pub resume_delay: Duration,
    /// The saved state each run started with.
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
pub const APPROVE: agent_runtime::Gate<Value> = agent_runtime::Gate::new("approve");

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

    async fn run(&self, session: SessionHandle, start: EchoStart) -> Result<Value, EchoError> {
        let saved = session.saved_state();
        self.runs.lock().unwrap().push(saved.clone());
        *self.gates.lock().unwrap() = Some(session.gates().clone());
        let EchoStart { text, mode } = start;

        let runtime: Session<(), Value> = Session::new(session.id(), ())
            .with_gates(session.gates().clone())
            .with_event_sink(session.event_sink())
            .with_cancellation(session.cancellation());
        let ctx = runtime.context(AgentIdentity::new("coordinator", "echo"));

        if saved.is_none() {
            ctx.emit(json!({"type": "started", "text": text}));
        } else {
            tokio::time::sleep(self.resume_delay).await;
        }
        match mode.as_str() {
            "fail" => return Err(EchoError("asked to fail".to_owned())),
            "panic" => panic!("asked to panic"),
            "hang" => std::future::pending::<()>().await,
            _ => {}
        }

        let gates = runtime.gates();
        let cancel = session.cancellation();
        let first_id = gates.next_id("coordinator", "approve");
        let mut request =
            GateRequest::new("approve").with_payload(json!({"question": "approve?", "text": text}));
        if mode == "expire" {
            request = request.with_timeout(Duration::from_millis(200));
        }
        let first = gates.wait(&first_id, request, Some(&cancel)).await?;
        if saved.is_none() {
            ctx.emit(json!({"type": "approved", "answer": first}));
            session
                .save_state("approved", &json!({"first": first}))
                .await?;
        }

        let second_id = gates.next_id("coordinator", "approve");
        let request = GateRequest::new("approve").with_payload(json!({"question": "confirm?"}));
        let second = gates.wait(&second_id, request, Some(&cancel)).await?;
        ctx.emit(json!({"type": "confirmed", "answer": second}));
        Ok(json!({"text": text, "first": first, "second": second}))
    }

    fn page(&self) -> Option<String> {
        self.page.clone()
    }
}
