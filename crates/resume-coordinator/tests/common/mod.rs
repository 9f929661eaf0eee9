//! A resume server on loopback, an SSE reader, and a session driver.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

pub use agent_server::testing::{SseEvent, SseReader};
use agent_server::{AgentServer, InMemorySessionStore, SessionStore};
use resume_coordinator::ResumeProduct;
use serde_json::{Value, json};
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
    json!({
        "resume_text": fixture_text("resume.txt"),
        "job_description": fixture_text("job.txt"),
        "company": "Northwind Freight",
    })
}

pub fn dry_run_product() -> Arc<ResumeProduct> {
    Arc::new(ResumeProduct::dry_run(fixtures()).unwrap())
}

/// A server on a loopback port.
pub struct TestServer {
    pub base: String,
    pub task: tokio::task::JoinHandle<std::io::Result<()>>,
    pub client: reqwest::Client,
}

/// What `POST /start` answered.
#[derive(Debug, Clone)]
pub struct Started {
    pub id: String,
    pub token: String,
    pub stream_url: String,
    pub status_url: String,
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

    /// A server over an in-memory store hosting `product`.
    pub async fn with_product(product: Arc<ResumeProduct>) -> Self {
        let store: Arc<dyn SessionStore> = Arc::new(InMemorySessionStore::new());
        TestServer::spawn(AgentServer::new(store).with_product(product)).await
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn start(&self, body: Value) -> Started {
        let response = self
            .client
            .post(self.url("/api/resume/start"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        let body: Value = response.json().await.unwrap();
        Started {
            id: body["session_id"].as_str().unwrap().to_owned(),
            token: body["token"].as_str().unwrap().to_owned(),
            stream_url: body["stream_url"].as_str().unwrap().to_owned(),
            status_url: body["status_url"].as_str().unwrap().to_owned(),
        }
    }

    pub async fn stream(&self, started: &Started, last_event_id: Option<u64>) -> SseReader {
        let mut request = self
            .client
            .get(self.url(&started.stream_url))
            .query(&[("token", started.token.as_str())]);
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        SseReader::new(response).with_patience(PATIENCE)
    }

    pub async fn respond(&self, started: &Started, gate: &str, answer: Value) -> u16 {
        self.client
            .post(self.url("/api/resume/respond"))
            .bearer_auth(&started.token)
            .json(&json!({"session_id": started.id, "gate": gate, "answer": answer}))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
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
}

/// The answer a cooperative user gives: every question answered, everything approved.
pub fn approve_all(name: &str, payload: &Value) -> Value {
    if name.starts_with("questionnaire_") {
        let answers: serde_json::Map<String, Value> = payload["questions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| {
                (
                    q["id"].as_str().unwrap().to_owned(),
                    json!(format!("My answer to: {}", q["question"].as_str().unwrap())),
                )
            })
            .collect();
        json!({ "answers": answers })
    } else if name.starts_with("positioning_q_") {
        json!({"answer": "Yes: I built Prometheus alerting used by six teams."})
    } else if name.starts_with("section_review_") {
        json!({"action": "approve"})
    } else {
        json!({"approved": true})
    }
}

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
