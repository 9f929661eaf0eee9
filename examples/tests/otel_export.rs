//! The spans of a product's dry run leave the process over OTLP/HTTP when the standard
//! variables ask for them: `resume_server --dry-run`, driven to the end of a session by
//! the Python client, exports to a local receiver that decodes every request with the
//! official OpenTelemetry protobuf definitions (`opentelemetry-proto`). The test checks
//! the structure a trace viewer shows (session run → graph run → node → agent → round →
//! model call and tool call) and the attributes on it.
#![cfg(test)]

mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use support::examples::{complete_resume_session, resume_server_with};

/// A span as received, with the service that sent it.
#[derive(Debug, Clone)]
struct Received {
    service: String,
    span: Span,
}

impl Received {
    fn attribute(&self, key: &str) -> Option<&any_value::Value> {
        find(&self.span.attributes, key)
    }

    fn text(&self, key: &str) -> Option<&str> {
        match self.attribute(key)? {
            any_value::Value::StringValue(text) => Some(text),
            _ => None,
        }
    }

    fn int(&self, key: &str) -> Option<i64> {
        match self.attribute(key)? {
            any_value::Value::IntValue(value) => Some(*value),
            any_value::Value::StringValue(text) => text.parse().ok(),
            _ => None,
        }
    }
}

fn find<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|AnyValue { value }| value.as_ref())
}

type Spans = Arc<Mutex<Vec<Received>>>;

/// `POST /v1/traces` as a collector answers it: protobuf in, protobuf out.
async fn traces(
    State(spans): State<Spans>,
    body: Bytes,
) -> (StatusCode, [(header::HeaderName, &'static str); 1], Vec<u8>) {
    let request = match ExportTraceServiceRequest::decode(body) {
        Ok(request) => request,
        Err(_) => {
            return (
                StatusCode::BAD_REQUEST,
                [(header::CONTENT_TYPE, "text/plain")],
                b"not an OTLP trace export".to_vec(),
            );
        }
    };
    let mut received = spans.lock().unwrap();
    for resource_spans in request.resource_spans {
        let service = resource_spans
            .resource
            .as_ref()
            .and_then(|resource| find(&resource.attributes, "service.name"))
            .map(|value| match value {
                any_value::Value::StringValue(name) => name.clone(),
                other => format!("{other:?}"),
            })
            .unwrap_or_default();
        for scope in resource_spans.scope_spans {
            received.extend(scope.spans.into_iter().map(|span| Received {
                service: service.clone(),
                span,
            }));
        }
    }
    let answer = ExportTraceServiceResponse::default().encode_to_vec();
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        answer,
    )
}

/// A receiver on a free loopback port, serving from its own thread for the whole test.
fn receiver() -> (String, Spans) {
    let spans: Spans = Arc::default();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/v1/traces", post(traces))
        .with_state(Arc::clone(&spans));
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    (url, spans)
}

/// The spans named `name`.
fn named<'a>(spans: &'a [Received], name: &str) -> Vec<&'a Received> {
    spans.iter().filter(|s| s.span.name == name).collect()
}

#[test]
fn a_dry_run_session_exports_its_trace_over_otlp() {
    let (endpoint, spans) = receiver();
    let dir = tempfile::tempdir().unwrap();
    let server = resume_server_with(
        &dir.path().join("sessions.db"),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_SERVICE_NAME", "resume-dry-run"),
            // Batches leave every 100 ms rather than every 5 s.
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );
    let printed = complete_resume_session(&server.url, &dir.path().join("resume.docx"));
    assert!(printed.contains("session_complete"), "{printed}");

    // The session's run span ends with the run: once it has arrived, so has its trace.
    let started = Instant::now();
    let spans = loop {
        let snapshot = spans.lock().unwrap().clone();
        let ended = named(&snapshot, "session_run")
            .iter()
            .any(|run| run.text("session.id").is_some_and(|id| !id.is_empty()));
        if ended && !named(&snapshot, "execute_tool").is_empty() {
            break snapshot;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no complete trace after 30 s; spans received: {:?}",
            snapshot.iter().map(|s| &s.span.name).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    drop(server);

    assert!(spans.iter().all(|s| s.service == "resume-dry-run"));
    let by_id: HashMap<&[u8], &Received> = spans
        .iter()
        .map(|s| (s.span.span_id.as_slice(), s))
        .collect();
    let parent = |span: &Received| by_id.get(span.span.parent_span_id.as_slice()).copied();
    let ancestors = |span: &Received| {
        std::iter::successors(parent(span), |span| parent(span))
            .map(|s| s.span.name.as_str())
            .collect::<Vec<_>>()
    };

    let session_run = named(&spans, "session_run")[0];
    assert_eq!(session_run.text("product"), Some("resume"));
    let session = session_run.text("session.id").unwrap();
    assert!(
        session_run.attribute("tenant.id").is_some(),
        "the tenant id is an attribute of the run"
    );

    // Each model call is made in a node of the session's run: by an agent in its round,
    // by a tool the agent called, or by the node itself.
    let chats = named(&spans, "chat");
    assert!(!chats.is_empty());
    let in_round = |chat: &Received| parent(chat).is_some_and(|p| p.span.name == "agent.round");
    assert!(chats.iter().any(|chat| in_round(chat)));
    assert!(
        chats
            .iter()
            .any(|chat| parent(chat).is_some_and(|p| p.span.name == "execute_tool")),
        "the tools' own model calls are traced too"
    );
    for chat in &chats {
        let above = ancestors(chat);
        if in_round(chat) {
            assert_eq!(
                above[..5],
                [
                    "agent.round",
                    "invoke_agent",
                    "graph.node",
                    "graph.run",
                    "session_run"
                ],
            );
        }
        let run_levels: Vec<&str> = above
            .iter()
            .copied()
            .filter(|name| ["graph.node", "graph.run", "session_run"].contains(name))
            .collect();
        assert_eq!(
            run_levels,
            ["graph.node", "graph.run", "session_run"],
            "{above:?}"
        );
        assert_eq!(chat.text("gen_ai.operation.name"), Some("chat"));
        assert!(
            chat.text("gen_ai.response.model")
                .is_some_and(|m| !m.is_empty())
        );
        assert!(
            chat.int("gen_ai.usage.input_tokens").is_some_and(|n| n > 0),
            "{chat:?}"
        );
        assert!(chat.int("gen_ai.usage.output_tokens").is_some());
        assert_eq!(chat.span.trace_id, session_run.span.trace_id);
    }
    let tools = named(&spans, "execute_tool");
    for tool in &tools {
        assert_eq!(ancestors(tool)[..2], ["agent.round", "invoke_agent"]);
        assert!(tool.text("gen_ai.tool.name").is_some_and(|n| !n.is_empty()));
        assert!(tool.text("gen_ai.tool.call.id").is_some());
    }
    let agents = named(&spans, "invoke_agent");
    assert!(agents.iter().all(|a| a.text("session.id") == Some(session)));
    assert!(agents.iter().all(|a| a.text("gen_ai.agent.name").is_some()));
    let graph_runs = named(&spans, "graph.run");
    assert!(graph_runs.iter().all(|run| run.text("run_id").is_some()));
}
