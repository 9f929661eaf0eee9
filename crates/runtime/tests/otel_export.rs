//! The `otel` feature: an agent run's spans reach an OTLP/HTTP collector with their
//! GenAI attributes.
#![cfg(feature = "otel")]
#![cfg(test)]

use agent_llm::testing::ScriptedModel;
use agent_llm::testing::responses::{self, SCRIPTED_INPUT_TOKENS};
use agent_runtime::otel::{OtlpConfig, OtlpProtocol, otlp_layer};
use agent_runtime::{
    AgentConfig, AgentContext, AgentIdentity, AgentLoop, Session, ToolError, tool,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use tracing_subscriber::layer::SubscriberExt;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

type Ctx = AgentContext<(), ()>;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

/// An exported span: name, ids and attributes flattened to strings.
#[derive(Debug)]
struct ExportedSpan {
    name: String,
    span_id: String,
    parent_span_id: String,
    attributes: BTreeMap<String, String>,
}

impl ExportedSpan {
    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

/// An OTLP `AnyValue` as a string (JSON OTLP encodes 64-bit integers as strings or
/// numbers, depending on the encoder).
fn any_value(value: &Value) -> String {
    let (kind, inner) = value
        .as_object()
        .and_then(|object| object.iter().next())
        .expect("an AnyValue has one member");
    match (kind.as_str(), inner) {
        (_, Value::String(text)) => text.clone(),
        (_, other) => other.to_string(),
    }
}

/// Every span in every JSON export request the collector received, and the
/// `service.name` each came with.
fn exported_spans(bodies: &[Value]) -> (Vec<ExportedSpan>, Vec<String>) {
    let mut spans = Vec::new();
    let mut services = Vec::new();
    for body in bodies {
        for resource_spans in body["resourceSpans"].as_array().expect("resourceSpans") {
            for attribute in resource_spans["resource"]["attributes"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if attribute["key"] == "service.name" {
                    services.push(any_value(&attribute["value"]));
                }
            }
            for scope_spans in resource_spans["scopeSpans"].as_array().expect("scopeSpans") {
                for span in scope_spans["spans"].as_array().expect("spans") {
                    let attributes = span["attributes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|attribute| {
                            (
                                attribute["key"].as_str().unwrap().to_owned(),
                                any_value(&attribute["value"]),
                            )
                        })
                        .collect();
                    spans.push(ExportedSpan {
                        name: span["name"].as_str().unwrap().to_owned(),
                        span_id: span["spanId"].as_str().unwrap_or_default().to_owned(),
                        parent_span_id: span["parentSpanId"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                        attributes,
                    });
                }
            }
        }
    }
    (spans, services)
}

/// The names of `span`'s ancestors, from its parent up to the root.
fn ancestors<'a>(spans: &'a [ExportedSpan], span: &ExportedSpan) -> Vec<&'a str> {
    let mut names = Vec::new();
    let mut parent_id = span.parent_span_id.as_str();
    while let Some(parent) = spans
        .iter()
        .find(|candidate| !parent_id.is_empty() && candidate.span_id == parent_id)
    {
        names.push(parent.name.as_str());
        parent_id = parent.parent_span_id.as_str();
    }
    names
}

fn single<'a>(spans: &'a [ExportedSpan], name: &str) -> &'a ExportedSpan {
    let found: Vec<_> = spans.iter().filter(|span| span.name == name).collect();
    assert_eq!(found.len(), 1, "expected one {name} span in {spans:#?}");
    found[0]
}

#[tokio::test]
async fn an_agent_run_is_exported_over_otlp_http_json() {
    let collector = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/traces"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&collector)
        .await;

    let config = OtlpConfig::from_env()
        .with_endpoint(collector.uri())
        .with_service_name("otel-export-test")
        .with_protocol(OtlpProtocol::Json);
    let (layer, guard) = otlp_layer(config).unwrap();
    let subscriber = tracing_subscriber::registry().with(layer);

    {
        let _default = tracing::subscriber::set_default(subscriber);
        let agent_config = AgentConfig::new(AgentIdentity::new("calc", "test"), "Add.")
            .with_model("scripted-1")
            .with_tool(tool(
                "add",
                "Adds two integers.",
                |args: Add, _ctx: Ctx| async move { Ok::<_, ToolError>(args.a + args.b) },
            ));
        let model = ScriptedModel::new(vec![
            responses::tool_call("c1", "add", json!({"a": 2, "b": 3})),
            responses::text("5"),
        ]);
        let ctx = Session::new("s1", ()).context(AgentIdentity::new("calc", "test"));
        let result = AgentLoop::new(agent_config, model)
            .run(&ctx, "What is 2 + 3?")
            .await;
        assert!(result.is_complete(), "{:?}", result.stop);
    }
    guard.flush().unwrap();

    let requests = collector.received_requests().await.unwrap();
    assert!(!requests.is_empty(), "the collector received nothing");
    let bodies: Vec<Value> = requests
        .iter()
        .map(|request| {
            assert_eq!(request.url.path(), "/v1/traces");
            let content_type = request.headers.get("content-type").unwrap();
            assert_eq!(content_type.to_str().unwrap(), "application/json");
            serde_json::from_slice(&request.body).unwrap()
        })
        .collect();
    let (spans, services) = exported_spans(&bodies);
    assert!(
        services.iter().all(|service| service == "otel-export-test") && !services.is_empty(),
        "{services:?}"
    );

    let agent = single(&spans, "invoke_agent");
    assert!(agent.parent_span_id.is_empty(), "{agent:#?}");
    assert_eq!(
        agent.attribute("gen_ai.operation.name"),
        Some("invoke_agent")
    );
    assert_eq!(agent.attribute("gen_ai.agent.name"), Some("calc"));

    let chats: Vec<_> = spans.iter().filter(|span| span.name == "chat").collect();
    assert_eq!(chats.len(), 2, "{spans:#?}");
    for chat in chats {
        assert_eq!(ancestors(&spans, chat).last(), Some(&"invoke_agent"));
        assert_eq!(chat.attribute("gen_ai.request.model"), Some("scripted-1"));
        assert_eq!(
            chat.attribute("gen_ai.usage.input_tokens"),
            Some(SCRIPTED_INPUT_TOKENS.to_string().as_str()),
            "{chat:#?}"
        );
        assert!(chat.attribute("gen_ai.usage.output_tokens").is_some());
    }

    let tool = single(&spans, "execute_tool");
    assert_eq!(ancestors(&spans, tool).last(), Some(&"invoke_agent"));
    assert_eq!(tool.attribute("gen_ai.tool.name"), Some("add"));
    assert_eq!(tool.attribute("gen_ai.tool.call.id"), Some("c1"));

    guard.shutdown().unwrap();
}
