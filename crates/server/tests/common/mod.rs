//! A test product ("echo"), a server on loopback, and an SSE reader.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use agent_runtime::{AgentIdentity, GateRegistry, GateRequest, Session};
use agent_server::{AgentServer, Product, SessionHandle};
use futures::{Stream, StreamExt};
use serde_json::{Value, json};
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

/// How long any single wait in a test may take.
pub const PATIENCE: Duration = Duration::from_secs(10);

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

/// A server on a loopback port.
pub struct TestServer {
    pub base: String,
    pub task: tokio::task::JoinHandle<std::io::Result<()>>,
    pub client: reqwest::Client,
}

impl TestServer {
    pub async fn spawn(server: AgentServer) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(server.serve(listener));
        TestServer {
            base,
            task,
            client: reqwest::Client::new(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Starts a session; panics unless 201.
    pub async fn start(&self, product: &str, body: Value) -> Started {
        let response = self
            .client
            .post(self.url(&format!("/api/{product}/start")))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        let body: Value = response.json().await.unwrap();
        Started {
            product: product.to_owned(),
            id: body["session_id"].as_str().unwrap().to_owned(),
            token: body["token"].as_str().unwrap().to_owned(),
            stream_url: body["stream_url"].as_str().unwrap().to_owned(),
            status_url: body["status_url"].as_str().unwrap().to_owned(),
        }
    }

    /// Opens the session's stream with the bearer token, after `last_event_id` if given.
    pub async fn stream(&self, started: &Started, last_event_id: Option<u64>) -> SseReader {
        let mut request = self
            .client
            .get(self.url(&started.stream_url))
            .bearer_auth(&started.token);
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        SseReader::new(response)
    }

    pub async fn respond(&self, started: &Started, gate: &str, answer: Value) -> (u16, Value) {
        let response = self
            .client
            .post(self.url(&format!("/api/{}/respond", started.product)))
            .bearer_auth(&started.token)
            .json(&json!({"session_id": started.id, "gate": gate, "answer": answer}))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }

    /// Waits until `gate` is pending (by the status route), then answers it.
    pub async fn respond_when_open(&self, started: &Started, gate: &str, answer: Value) -> u16 {
        tokio::time::timeout(PATIENCE, async {
            loop {
                let status = self.status(started).await;
                let open = status["pending_gates"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|g| g["id"] == gate);
                if open {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the gate did not open in time");
        self.respond(started, gate, answer).await.0
    }

    pub async fn status(&self, started: &Started) -> Value {
        let response = self
            .client
            .get(self.url(&started.status_url))
            .bearer_auth(&started.token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.json().await.unwrap()
    }
}

/// What `POST /start` answered.
#[derive(Debug, Clone)]
pub struct Started {
    pub product: String,
    pub id: String,
    pub token: String,
    pub stream_url: String,
    pub status_url: String,
}

/// One SSE message.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    pub id: u64,
    pub event: String,
    pub data: Value,
}

/// Reads SSE messages from a response body.
pub struct SseReader {
    body: Pin<Box<dyn Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>>,
    buffer: String,
    /// Keep-alive comments seen so far.
    pub comments: usize,
}

impl SseReader {
    pub fn new(response: reqwest::Response) -> Self {
        SseReader {
            body: Box::pin(response.bytes_stream()),
            buffer: String::new(),
            comments: 0,
        }
    }

    /// The next message, or `None` when the stream ends. Panics after [`PATIENCE`].
    pub async fn next(&mut self) -> Option<SseEvent> {
        tokio::time::timeout(PATIENCE, self.next_message())
            .await
            .expect("no SSE message in time")
    }

    /// The next block (message or comment), `None` at the end.
    pub async fn next_block(&mut self) -> Option<String> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block = self.buffer[..end].to_owned();
                self.buffer.drain(..end + 2);
                return Some(block);
            }
            match self.body.next().await {
                Some(chunk) => self
                    .buffer
                    .push_str(std::str::from_utf8(&chunk.unwrap()).unwrap()),
                None => {
                    assert!(self.buffer.trim().is_empty(), "stream ended mid-message");
                    return None;
                }
            }
        }
    }

    async fn next_message(&mut self) -> Option<SseEvent> {
        loop {
            let block = self.next_block().await?;
            let (mut id, mut event, mut data) = (None, None, String::new());
            for line in block.lines() {
                if line.starts_with(':') {
                    continue;
                }
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "id" => id = Some(value.parse::<u64>().unwrap()),
                    "event" => event = Some(value.to_owned()),
                    "data" => data.push_str(value),
                    other => panic!("unexpected SSE field {other:?}"),
                }
            }
            if id.is_none() && event.is_none() && data.is_empty() {
                self.comments += 1;
                continue;
            }
            let data: Value = serde_json::from_str(&data).unwrap();
            let event = event.expect("every message names its event");
            assert_eq!(data["type"], event.as_str(), "event name is the type");
            return Some(SseEvent {
                id: id.expect("every message has an id"),
                event,
                data,
            });
        }
    }

    /// Reads until (and including) the message named `event`.
    pub async fn until(&mut self, event: &str) -> Vec<SseEvent> {
        let mut seen = Vec::new();
        loop {
            let message = self
                .next()
                .await
                .unwrap_or_else(|| panic!("stream ended before {event:?}: {seen:?}"));
            let done = message.event == event;
            seen.push(message);
            if done {
                return seen;
            }
        }
    }

    /// Reads every message to the end of the stream.
    pub async fn rest(&mut self) -> Vec<SseEvent> {
        let mut seen = Vec::new();
        while let Some(message) = self.next().await {
            seen.push(message);
        }
        seen
    }
}

/// The `(id, event)` pairs of `events`.
pub fn names(events: &[SseEvent]) -> Vec<(u64, &str)> {
    events.iter().map(|e| (e.id, e.event.as_str())).collect()
}
