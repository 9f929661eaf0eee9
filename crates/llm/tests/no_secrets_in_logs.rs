//! No API key appears in any log line at TRACE level, or in any error, for either provider.
#![cfg(test)]

mod support;

use agent_llm::{
    AnthropicConfig, AnthropicModel, ChatModel, ChatRequest, LlmError, OpenAiConfig, OpenAiModel,
    RetryPolicy, collect_stream,
};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{read, read_json, realdata};
use tracing_subscriber::util::SubscriberInitExt;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const ANTHROPIC_KEY: &str = "sk-ant-LEAKCHECK-anthropic-0001";
const OPENAI_KEY: &str = "sk-LEAKCHECK-openai-0002";

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

async fn server_answering(body: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(body)
        .mount(&server)
        .await;
    server
}

fn json_ok(recorded: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(read_json(realdata(recorded)))
}

fn failure(status: u16, body: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_string(body)
}

fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

/// Runs one provider through a success, a stream and each failure, each against its own
/// local server, and returns the errors.
async fn exercise(
    build: impl Fn(String) -> Arc<dyn ChatModel>,
    ok: ResponseTemplate,
    stream: ResponseTemplate,
    failures: Vec<ResponseTemplate>,
) -> Vec<LlmError> {
    let prompt = || ChatRequest::from_prompt("hi");
    build(server_answering(ok).await.uri())
        .chat(&prompt())
        .await
        .unwrap();
    let streamed = build(server_answering(stream).await.uri())
        .chat_stream(&prompt())
        .await;
    collect_stream(streamed.unwrap()).await.unwrap();
    let mut errors = Vec::new();
    for failure in failures {
        let model = build(server_answering(failure).await.uri());
        errors.push(model.chat(&prompt()).await.unwrap_err());
    }
    errors
}

#[tokio::test]
async fn keys_never_reach_logs_or_errors() {
    let captured = Captured::default();
    let sink = captured.clone();
    // Global, so log-crate records (reqwest) are captured too; this file holds one test.
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .finish()
        .try_init()
        .unwrap();
    let retry = RetryPolicy::default()
        .with_max_attempts(2)
        .with_base_delay(Duration::from_millis(5));

    let anthropic = |uri: String| -> Arc<dyn ChatModel> {
        let config = AnthropicConfig::new(ANTHROPIC_KEY).with_base_url(uri);
        Arc::new(AnthropicModel::new(config.with_retry(retry.clone())).unwrap())
    };
    let mut errors = exercise(
        anthropic,
        json_ok("anthropic/ai-sdk-anthropic-3.0.21/anthropic-json-tool.1.json"),
        sse(read(realdata("anthropic/sdk-python/tests/lib/streaming/fixtures/tool_use_response.txt"))),
        vec![
            failure(401, r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#),
            failure(429, r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#)
                .insert_header("retry-after", "0"),
        ],
    )
    .await;

    let openai: &dyn Fn(String) -> Arc<dyn ChatModel> = &|uri: String| {
        let config = OpenAiConfig::openai(OPENAI_KEY).with_base_url(uri);
        Arc::new(OpenAiModel::new(config.with_retry(retry.clone())).unwrap())
    };
    let azure: &dyn Fn(String) -> Arc<dyn ChatModel> = &|uri: String| {
        let config = OpenAiConfig::azure(uri, OPENAI_KEY, "2024-10-21");
        Arc::new(OpenAiModel::new(config.with_retry(retry.clone())).unwrap())
    };
    let openai_ok = "openai/openai-python/nonstreaming/test_parse_pydantic_model.json";
    let openai_sse =
        "openai/openai-python/streaming/test_parse_multiple_pydantic_tools__f82268f2fefd.sse";
    let unauthorized = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
    for build in [openai, azure] {
        let failures = vec![failure(401, unauthorized), failure(500, "{}")];
        errors.extend(
            exercise(
                build,
                json_ok(openai_ok),
                sse(read(realdata(openai_sse))),
                failures,
            )
            .await,
        );
    }

    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("TRACE"),
        "the capture saw trace-level records"
    );
    assert!(
        logs.contains("sending request"),
        "the capture saw the providers' own records"
    );
    assert!(
        logs.contains("hyper_util"),
        "the capture saw the HTTP stack's records"
    );
    assert_eq!(errors.len(), 6);
    for key in [ANTHROPIC_KEY, OPENAI_KEY] {
        assert!(!logs.contains(key), "a key leaked into the logs");
        for error in &errors {
            assert!(!error.to_string().contains(key) && !format!("{error:?}").contains(key));
        }
    }
    let debug = format!(
        "{:?} {:?}",
        AnthropicModel::new(AnthropicConfig::new(ANTHROPIC_KEY)).unwrap(),
        OpenAiModel::new(OpenAiConfig::azure("http://h", OPENAI_KEY, "v")).unwrap()
    );
    assert!(!debug.contains(ANTHROPIC_KEY) && !debug.contains(OPENAI_KEY));
}
