//! A hosted session whose model server fails under it, the model server being a real
//! process on loopback (this test binary run again as an OpenAI-compatible server): an
//! answer cut off mid-body is asked for again; a server killed with SIGKILL in the middle
//! of a call parks the session (not failed, nothing lost) until the model answers again,
//! and a session parked so is completed by the next server's restart too. Every event is
//! stored once, numbered without gaps.
#![cfg(test)]
// The model process tells its parent on stdout that it listens and that a call hangs.
#![allow(clippy::print_stdout)]

mod common;

use std::io::{BufRead, BufReader};
use std::net::TcpListener as StdListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agent_backends::SqliteSessionStore;
use agent_llm::openai::{OpenAiConfig, OpenAiModel};
use agent_llm::{ChatModel, ChatRequest, LlmError, Message, RetryPolicy, collect_stream};
use agent_runtime::sessions::SessionStore;
use agent_runtime::{AgentConfig, AgentContext, AgentIdentity, AgentLoop, StopCause, ToolError};
use agent_server::{AgentServer, Product, SessionHandle};
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use common::{PATIENCE, TestServer, names};
use futures::StreamExt;
use serde_json::{Value, json};

/// The environment variables of the child half: its port, and how it misbehaves.
const CHILD_PORT: &str = "MODEL_PROCESS_PORT";
const CHILD_MODE: &str = "MODEL_PROCESS_MODE";
/// What the child prints once a call it will never answer has arrived.
const HANGING: &str = "model call hanging";

/// How the model process misbehaves.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Answers every call.
    Answers,
    /// Cuts its first answer (a JSON body or an event stream) off in the middle.
    CutsFirst,
    /// Never answers the call after a tool result: it is killed in the middle of it.
    HangsAfterTool,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Answers => "answers",
            Mode::CutsFirst => "cuts-first",
            Mode::HangsAfterTool => "hangs-after-tool",
        }
    }
}

/// The model's answer to a request: a `note` call first, then, once the tool's result
/// is in, a final text. A chat completion as the OpenAI API documents it.
fn answer(request: &Value) -> Value {
    let after_tool = request["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .is_some_and(|last| last["role"] == "tool");
    let message = match after_tool {
        true => json!({"role": "assistant", "content": "All noted."}),
        false => json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{
                "id": "call_1",
                "type": "function",
                "function": {"name": "note", "arguments": "{\"text\":\"one\"}"}
            }]
        }),
    };
    let finish = if after_tool { "stop" } else { "tool_calls" };
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "local",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
    })
}

/// A response body that sends `sent`, then breaks the connection (after a pause, so that
/// what was sent reaches the client first).
fn breaking_off(sent: String) -> Body {
    let chunks = futures::stream::iter([
        Ok(sent),
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "cut",
        )),
    ])
    .then(|chunk| async move {
        if chunk.is_err() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        chunk
    });
    Body::from_stream(chunks)
}

/// The first half of `body`, then a broken connection.
fn cut_off(body: String) -> Response {
    breaking_off(body[..body.len() / 2].to_owned()).into_response()
}

/// A streamed answer as OpenAI documents its chunks, cut off after its first text delta.
fn cut_stream() -> Response {
    let first = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "local",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": "All "}, "finish_reason": null}]});
    let mut response = breaking_off(format!("data: {first}\n\n")).into_response();
    response.headers_mut().insert(
        "content-type",
        axum::http::HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// The child half of the tests: an OpenAI-compatible model server on `CHILD_PORT`,
/// misbehaving as `CHILD_MODE` says, until it is killed.
#[tokio::test]
#[ignore = "the model process of the model fault tests"]
async fn model_process() {
    let port: u16 = std::env::var(CHILD_PORT).unwrap().parse().unwrap();
    let mode = match std::env::var(CHILD_MODE).unwrap().as_str() {
        "cuts-first" => Mode::CutsFirst,
        "hangs-after-tool" => Mode::HangsAfterTool,
        _ => Mode::Answers,
    };
    let cut = Arc::new(AtomicBool::new(false));
    let completions = move |axum::Json(request): axum::Json<Value>| {
        let cut = Arc::clone(&cut);
        async move {
            let body = answer(&request);
            let final_answer = body["choices"][0]["finish_reason"] == "stop";
            if mode == Mode::HangsAfterTool && final_answer {
                println!("{HANGING}");
                std::future::pending::<()>().await;
            }
            if mode == Mode::CutsFirst && !cut.swap(true, Ordering::SeqCst) {
                return match request["stream"] == true {
                    true => cut_stream(),
                    false => cut_off(body.to_string()),
                };
            }
            axum::Json(body).into_response()
        }
    };
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(completions));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    println!("listening");
    axum::serve(listener, app).await.unwrap();
}

/// A model process: this test binary running [`model_process`], killed when dropped.
struct ModelProcess {
    child: Child,
    /// What it prints after it listens.
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl ModelProcess {
    /// Starts one on `port` and waits until it listens.
    fn start(port: u16, mode: Mode) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["model_process", "--exact", "--ignored", "--nocapture"])
            .env(CHILD_PORT, port.to_string())
            .env(CHILD_MODE, mode.name())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut output = BufReader::new(child.stdout.take().unwrap()).lines();
        loop {
            match output.next() {
                Some(Ok(line)) if line == "listening" => break,
                Some(_) => {}
                None => panic!("the model process stopped before it listened"),
            }
        }
        let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in output.map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        ModelProcess { child, lines }
    }

    /// Waits until it has a call it will never answer.
    async fn wait_for_hang(&mut self) {
        let hanging = async {
            while let Some(line) = self.lines.recv().await {
                if line == HANGING {
                    return;
                }
            }
            panic!("the model process stopped");
        };
        tokio::time::timeout(PATIENCE, hanging)
            .await
            .expect("no call reached the model process");
    }

    /// Kills it with SIGKILL, as a crash or the OOM killer does.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for ModelProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The model of the product: the model process at `port`, asked once per attempt of
/// the agent loop's retry policy (two attempts, 50 ms apart).
fn model(port: u16) -> OpenAiModel {
    let config =
        OpenAiConfig::local(format!("http://127.0.0.1:{port}/v1")).with_retry(RetryPolicy::none());
    OpenAiModel::new(config).unwrap()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Start {
    topic: String,
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    Noted { text: String },
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Note {
    text: String,
}

/// Why a noting session failed.
#[derive(Debug, thiserror::Error)]
#[error("the agent stopped: {0}")]
struct Stopped(String);

/// One agent that takes a note (a tool emitting `noted`) and then answers, on a model
/// process.
struct Noter {
    port: u16,
}

#[async_trait::async_trait]
impl Product for Noter {
    type Start = Start;
    type Event = Event;
    type Output = String;
    type Error = Stopped;

    fn name(&self) -> &str {
        "noter"
    }

    async fn run(&self, handle: SessionHandle<Event>, start: Start) -> Result<String, Stopped> {
        let session = handle.session(());
        let note = agent_runtime::tool(
            "note",
            "Takes a note.",
            |note: Note, ctx: AgentContext<(), Event>| async move {
                ctx.emit(Event::Noted { text: note.text });
                Ok::<_, ToolError>("noted")
            },
        );
        let retry = RetryPolicy::none()
            .with_max_attempts(2)
            .with_base_delay(Duration::from_millis(50))
            .with_jitter(false);
        let config = AgentConfig::new(AgentIdentity::new("noter", "faults"), "Take notes.")
            .with_tool(note)
            .with_retry(retry);
        let agent = AgentLoop::new(config, model(self.port));
        let ctx = session.context(agent.identity().clone());
        let result = agent.run(&ctx, start.topic.as_str()).await;
        match (result.stop, result.final_text) {
            (StopCause::Completed, Some(text)) => Ok(text),
            (cause, _) => Err(Stopped(format!("{cause:?}"))),
        }
    }
}

fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// A server on the SQLite database at `path`, its product on the model process at `port`.
async fn server(path: &std::path::Path, port: u16) -> (AgentServer, Arc<SqliteSessionStore>) {
    let store = Arc::new(SqliteSessionStore::open(path).await.unwrap());
    let server = AgentServer::new(store.clone()).with_product(Arc::new(Noter { port }));
    (server, store)
}

/// The session's stored events, once it has its terminal event.
async fn finished_events(store: &SqliteSessionStore, id: &str) -> Vec<Value> {
    tokio::time::timeout(PATIENCE * 2, async {
        loop {
            let events = store.events_after(id, 0).await.unwrap();
            let ended = events.last().is_some_and(|stored| {
                let kind = stored.event["type"].as_str().unwrap_or_default();
                kind.starts_with("session_")
            });
            if ended {
                let ids: Vec<u64> = events.iter().map(|stored| stored.seq).collect();
                assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());
                return events.into_iter().map(|stored| stored.event).collect();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the session did not end")
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|event| event["type"].as_str().unwrap_or_default())
        .collect()
}

/// Checks that the session is parked: unfinished, with no terminal event, for a while.
async fn assert_parked(store: &SqliteSessionStore, id: &str) {
    tokio::time::sleep(Duration::from_millis(800)).await;
    let record = store.get(id).await.unwrap().unwrap();
    assert!(
        !record.status.is_finished(),
        "the session ended: {:?} {:?}",
        record.status,
        record.error
    );
    let events = store.events_after(id, 0).await.unwrap();
    assert_eq!(
        kinds(&events.into_iter().map(|e| e.event).collect::<Vec<_>>()),
        ["noted"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cut_off_mid_body_is_asked_for_again_and_the_session_completes() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let _model = ModelProcess::start(port, Mode::CutsFirst);
    let (server, store) = server(&dir.path().join("sessions.db"), port).await;
    let http = TestServer::spawn(server).await;
    let started = http.start("noter", json!({"topic": "faults"})).await;

    let events = finished_events(&store, &started.id).await;
    assert_eq!(kinds(&events), ["noted", "session_complete"]);
    assert_eq!(events[1]["result"], "All noted.");
    let streamed = http.stream(&started, None).await.rest().await;
    assert_eq!(names(&streamed), [(1, "noted"), (2, "session_complete")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_off_mid_answer_is_a_transport_error_the_server_parks_on() {
    let port = free_port();
    let _model = ModelProcess::start(port, Mode::CutsFirst);
    let request = ChatRequest::new(vec![Message::user("Take notes.")]);
    let stream = model(port).chat_stream(&request).await.unwrap();
    let error = collect_stream(stream).await.unwrap_err();
    assert!(matches!(error, LlmError::Transport(_)), "{error:?}");
    assert!(error.is_outage(), "{error:?}");
    // The next call is answered in full.
    let answered = model(port).chat(&request).await.unwrap();
    assert_eq!(answered.tool_calls().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_killed_mid_call_parks_the_session_which_completes_once_it_answers_again() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut model_process = ModelProcess::start(port, Mode::HangsAfterTool);
    let (server, store) = server(&dir.path().join("sessions.db"), port).await;
    let http = TestServer::spawn(server).await;
    let started = http.start("noter", json!({"topic": "faults"})).await;

    // The note is taken; the model is killed in the middle of the next call.
    model_process.wait_for_hang().await;
    model_process.kill();
    assert_parked(&store, &started.id).await;
    let status = http.status(&started).await;
    assert_eq!(status["status"], "running", "{status}");

    // The model answers again: the session is taken up again and completes, its note
    // taken once.
    let _model = ModelProcess::start(port, Mode::Answers);
    let events = finished_events(&store, &started.id).await;
    assert_eq!(kinds(&events), ["noted", "session_complete"]);
    let streamed = http.stream(&started, None).await.rest().await;
    assert_eq!(names(&streamed), [(1, "noted"), (2, "session_complete")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_parked_for_its_model_is_completed_by_the_next_servers_restart() {
    init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let port = free_port();
    let mut model_process = ModelProcess::start(port, Mode::HangsAfterTool);
    let (first, store) = server(&path, port).await;
    let http = TestServer::spawn(first.clone()).await;
    let started = http.start("noter", json!({"topic": "faults"})).await;
    model_process.wait_for_hang().await;
    model_process.kill();
    assert_parked(&store, &started.id).await;

    // The server stops while the model is down; the next one starts once it is back.
    tokio::time::timeout(PATIENCE, first.park_all())
        .await
        .unwrap();
    drop((http, first, store));
    let _model = ModelProcess::start(port, Mode::Answers);
    let (second, store) = server(&path, port).await;
    assert_eq!(second.resume_unfinished().await.unwrap(), 1);
    let events = finished_events(&store, &started.id).await;
    assert_eq!(kinds(&events), ["noted", "session_complete"]);
}
