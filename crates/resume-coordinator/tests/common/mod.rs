//! A resume server on loopback, an SSE reader, and a session driver.
#![allow(dead_code)]

pub use agent_server::testing::{SseEvent, SseReader, Started};
use agent_server::{AgentServer, InMemorySessionStore, SessionStore};
use resume_coordinator::ResumeProduct;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How long any single wait may take.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// `fixtures/resume` at the workspace root.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/resume")
}

pub fn fixture_text(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).unwrap()
}

/// The recorded sample's start body.
pub fn sample_body() -> Value {
    resume_coordinator::dry_run::sample_body(&fixtures()).unwrap()
}

pub fn dry_run_product() -> Arc<ResumeProduct> {
    Arc::new(ResumeProduct::dry_run(fixtures()).unwrap())
}

/// The dry-run product's server on the SQLite file `path`, with its checkpoints there:
/// a server that a test can stop and start again on the same file.
pub async fn durable_server(path: &std::path::Path) -> AgentServer {
    let store = Arc::new(
        agent_backends::SqliteSessionStore::open(path)
            .await
            .unwrap(),
    );
    AgentServer::new(store).with_product(dry_run_product())
}

/// The resume product's server on a loopback port: agent-server's test server (its
/// `url`, `status`, `client`, `task` through `Deref`), with the product's routes.
pub struct TestServer(agent_server::testing::TestServer);

impl std::ops::Deref for TestServer {
    type Target = agent_server::testing::TestServer;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for TestServer {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl TestServer {
    pub async fn spawn(server: AgentServer) -> Self {
        TestServer(agent_server::testing::TestServer::spawn(server).await)
    }

    /// A server over an in-memory store hosting `product`.
    pub async fn with_product(product: Arc<ResumeProduct>) -> Self {
        let store: Arc<dyn SessionStore> = Arc::new(InMemorySessionStore::new());
        TestServer::spawn(AgentServer::new(store).with_product(product)).await
    }

    pub async fn start(&self, body: Value) -> Started {
        self.0.start("resume", body).await
    }

    pub async fn stream(&self, started: &Started, last_event_id: Option<u64>) -> SseReader {
        self.0
            .stream(started, last_event_id)
            .await
            .with_patience(PATIENCE)
    }

    pub async fn respond(&self, started: &Started, gate: &str, answer: Value) -> u16 {
        self.0.respond(started, gate, answer).await.0
    }

    /// Follows the stream from the start, answering every `gate_open` with
    /// `answer(gate name, payload)`, until the stream ends. Returns every event.
    /// Every event of the session from the first, until the stream ends.
    pub async fn replay(&self, started: &Started) -> Vec<SseEvent> {
        let mut stream = self.stream(started, None).await;
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            events.push(event);
        }
        events
    }

    pub async fn drive(
        &self,
        started: &Started,
        mut answer: impl FnMut(&str, &Value) -> Value,
    ) -> Vec<SseEvent> {
        let mut stream = self.stream(started, None).await;
        let mut seen = Vec::new();
        while let Some(event) = stream.next().await {
            if event.event == "gate_open" {
                let name = event.data["name"].as_str().unwrap().to_owned();
                let reply = answer(&name, &event.data["payload"]);
                let gate = event.data["gate_id"].as_str().unwrap();
                assert_eq!(self.respond(started, gate, reply).await, 200, "{gate}");
            }
            seen.push(event);
        }
        seen
    }

    /// Starts a session with `body` that must fail before any gate opens; its
    /// `pipeline_error` (`stage`, `error`) and the session.
    pub async fn failure_before_any_gate(&self, body: Value) -> (Value, Started) {
        let session = self.start(body).await;
        let events = self.drive(&session, |name, _| panic!("gate {name}")).await;
        let error = named(&events, "pipeline_error")
            .first()
            .unwrap_or_else(|| panic!("no pipeline_error: {events:?}"))
            .data
            .clone();
        (error, session)
    }
}

#[allow(unused_imports)]
pub use resume_coordinator::dry_run::approve_all;

/// The stages in the order their `stage_start` events came.
pub fn stages_started(events: &[SseEvent]) -> Vec<&str> {
    named(events, "stage_start")
        .iter()
        .map(|e| e.data["stage"].as_str().unwrap())
        .collect()
}

/// Every stage of the pipeline, in order.
pub fn every_stage() -> Vec<&'static str> {
    resume_coordinator::Stage::ALL.map(|s| s.as_str()).to_vec()
}

/// Whether the events are numbered 1, 2, 3, ... with none missing or repeated.
pub fn numbered_in_order(events: &[SseEvent]) -> bool {
    events.iter().zip(1..).all(|(e, n)| e.id == n)
}

/// The events named `name`.
pub fn named<'a>(events: &'a [SseEvent], name: &str) -> Vec<&'a SseEvent> {
    events.iter().filter(|e| e.event == name).collect()
}

/// Standard base64 decoding (the DOCX of `pipeline_complete`).
pub fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let mut out = Vec::new();
    for chunk in text.as_bytes().chunks(4) {
        let digits: Vec<u8> = chunk.iter().copied().filter(|c| *c != b'=').collect();
        let mut n = 0u32;
        for (i, c) in digits.iter().enumerate() {
            n |= value(*c) << (18 - 6 * i);
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..digits.len().saturating_sub(1)]);
    }
    out
}
