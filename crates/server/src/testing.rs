//! Test support for products hosted on agent-server (feature `testing`): a server on a
//! loopback port, its start/respond/status routes, and one SSE reader that checks every
//! message's framing. Failures panic, as test assertions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use futures::{Stream, StreamExt};
use serde_json::{Value, json};
use std::pin::Pin;
use std::time::Duration;

use crate::AgentServer;

/// How long any single wait in a test may take.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// A server on a loopback port.
pub struct TestServer {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The serving task.
    pub task: tokio::task::JoinHandle<std::io::Result<()>>,
    /// The client the helpers use.
    pub client: reqwest::Client,
    /// The credential (API key or JWT) the helpers present, if any: as the bearer, with
    /// the session token in `X-Session-Token`. Without one, the session token is the
    /// bearer (a server without credentials).
    pub credential: Option<String>,
}

impl TestServer {
    /// Serves `server` on a free loopback port.
    pub async fn spawn(server: AgentServer) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(server.serve(listener));
        TestServer {
            base,
            task,
            client: reqwest::Client::new(),
            credential: None,
        }
    }

    /// The same server, its helpers presenting `credential`.
    pub fn with_credential(mut self, credential: &str) -> Self {
        self.credential = Some(credential.to_owned());
        self
    }

    /// `request` with the credential, if any, and the session token `token`.
    pub fn authorized(
        &self,
        request: reqwest::RequestBuilder,
        token: Option<&str>,
    ) -> reqwest::RequestBuilder {
        match (&self.credential, token) {
            (Some(credential), Some(token)) => request
                .bearer_auth(credential)
                .header("x-session-token", token),
            (Some(credential), None) => request.bearer_auth(credential),
            (None, Some(token)) => request.bearer_auth(token),
            (None, None) => request,
        }
    }

    /// The address of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Starts a session; panics unless 201.
    pub async fn start(&self, product: &str, body: Value) -> Started {
        let request = self.client.post(self.url(&format!("/api/{product}/start")));
        let response = self
            .authorized(request, None)
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

    /// Opens the session's stream with the bearer token, after `last_event_id` if given;
    /// panics unless 200.
    pub async fn stream(&self, started: &Started, last_event_id: Option<u64>) -> SseReader {
        let response = self.stream_response(started, last_event_id).await;
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        SseReader::new(response)
    }

    /// Asks for the session's stream as [`stream`](Self::stream) does, and answers the
    /// response whatever its status (its body unread).
    pub async fn stream_response(
        &self,
        started: &Started,
        last_event_id: Option<u64>,
    ) -> reqwest::Response {
        let mut request = self.authorized(
            self.client.get(self.url(&started.stream_url)),
            Some(&started.token),
        );
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        request.send().await.unwrap()
    }

    /// Answers `gate`; the status and the body.
    pub async fn respond(&self, started: &Started, gate: &str, answer: Value) -> (u16, Value) {
        let request = self
            .client
            .post(self.url(&format!("/api/{}/respond", started.product)));
        let response = self
            .authorized(request, Some(&started.token))
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

    /// The session's status (`GET /api/{product}/{session}`).
    pub async fn status(&self, started: &Started) -> Value {
        let response = self
            .authorized(
                self.client.get(self.url(&started.status_url)),
                Some(&started.token),
            )
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
    /// The product.
    pub product: String,
    /// The session id.
    pub id: String,
    /// Its token.
    pub token: String,
    /// Its stream's path.
    pub stream_url: String,
    /// Its status's path.
    pub status_url: String,
}

/// One SSE message.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    /// The `id:` field.
    pub id: u64,
    /// The `event:` field.
    pub event: String,
    /// The `data:` field, parsed.
    pub data: Value,
}

/// Reads SSE messages from a response body.
pub struct SseReader {
    body: Pin<Box<dyn Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>>,
    buffer: String,
    patience: Duration,
    /// Keep-alive comments seen so far.
    pub comments: usize,
}

impl SseReader {
    /// Reads `response`'s body.
    pub fn new(response: reqwest::Response) -> Self {
        SseReader {
            body: Box::pin(response.bytes_stream()),
            buffer: String::new(),
            comments: 0,
            patience: PATIENCE,
        }
    }

    /// Waits up to `patience` for each message (default [`PATIENCE`]).
    pub fn with_patience(mut self, patience: Duration) -> Self {
        self.patience = patience;
        self
    }

    /// The next message, or `None` when the stream ends. Panics after the reader's
    /// patience.
    pub async fn next(&mut self) -> Option<SseEvent> {
        tokio::time::timeout(self.patience, self.next_message())
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

    /// Every data-only message to the end of the stream, as OpenAI-style streams send
    /// them (`data: <payload>` and nothing else; keep-alive comments skipped). Panics on
    /// any other field, or after the reader's patience for a message.
    pub async fn data_messages(&mut self) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let block = tokio::time::timeout(self.patience, self.next_block())
                .await
                .expect("no SSE message in time");
            let Some(block) = block else { return seen };
            let mut data: Option<String> = None;
            for line in block.lines().filter(|line| !line.starts_with(':')) {
                let value = line
                    .strip_prefix("data:")
                    .unwrap_or_else(|| panic!("a data-only stream sent {line:?}"));
                let value = value.strip_prefix(' ').unwrap_or(value);
                data = Some(match data {
                    Some(before) => format!("{before}\n{value}"),
                    None => value.to_owned(),
                });
            }
            match data {
                Some(data) => seen.push(data),
                None => self.comments += 1,
            }
        }
    }
}

/// The `(id, event)` pairs of `events`.
pub fn names(events: &[SseEvent]) -> Vec<(u64, &str)> {
    events.iter().map(|e| (e.id, e.event.as_str())).collect()
}
