//! No API key appears in any log line at TRACE level, or in any error, for either provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use agent_llm::{
    AnthropicConfig, AnthropicModel, ChatModel, ChatRequest, OpenAiConfig, OpenAiModel,
    RetryPolicy, collect_stream,
};
use std::io::Write;
use std::sync::{Arc, Mutex};
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

fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
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
        .with_base_delay(std::time::Duration::from_millis(5));
    let mut errors = Vec::new();

    let anthropic = |uri: String| {
        AnthropicModel::new(
            AnthropicConfig::new(ANTHROPIC_KEY)
                .with_base_url(uri)
                .with_retry(retry.clone()),
        )
        .unwrap()
    };
    let ok = server_answering(ResponseTemplate::new(200).set_body_json(read_json(realdata(
        "anthropic/ai-sdk-anthropic-3.0.21/anthropic-json-tool.1.json",
    ))))
    .await;
    anthropic(ok.uri())
        .chat(ChatRequest::from_prompt("hi"))
        .await
        .unwrap();
    let streaming = server_answering(sse(read(realdata(
        "anthropic/sdk-python/tests/lib/streaming/fixtures/tool_use_response.txt",
    ))))
    .await;
    collect_stream(
        anthropic(streaming.uri())
            .chat_stream(ChatRequest::from_prompt("hi"))
            .await
            .unwrap(),
    )
    .await
    .unwrap();
    let unauthorized = server_answering(ResponseTemplate::new(401).set_body_string(
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    ))
    .await;
    errors.push(
        anthropic(unauthorized.uri())
            .chat(ChatRequest::from_prompt("hi"))
            .await
            .unwrap_err(),
    );
    let limited = server_answering(
        ResponseTemplate::new(429)
            .insert_header("retry-after", "0")
            .set_body_string(
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
            ),
    )
    .await;
    errors.push(
        anthropic(limited.uri())
            .chat(ChatRequest::from_prompt("hi"))
            .await
            .unwrap_err(),
    );

    let openai = |uri: String| {
        OpenAiModel::new(
            OpenAiConfig::openai(OPENAI_KEY)
                .with_base_url(uri)
                .with_retry(retry.clone()),
        )
        .unwrap()
    };
    let ok = server_answering(ResponseTemplate::new(200).set_body_json(read_json(realdata(
        "openai/openai-python/nonstreaming/test_parse_pydantic_model.json",
    ))))
    .await;
    openai(ok.uri())
        .chat(ChatRequest::from_prompt("hi"))
        .await
        .unwrap();
    let streaming = server_answering(sse(read(realdata(
        "openai/openai-python/streaming/test_parse_multiple_pydantic_tools__f82268f2fefd.sse",
    ))))
    .await;
    collect_stream(
        openai(streaming.uri())
            .chat_stream(ChatRequest::from_prompt("hi"))
            .await
            .unwrap(),
    )
    .await
    .unwrap();
    let unauthorized = server_answering(ResponseTemplate::new(401).set_body_string(
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
    ))
    .await;
    errors.push(
        openai(unauthorized.uri())
            .chat(ChatRequest::from_prompt("hi"))
            .await
            .unwrap_err(),
    );
    let azure = OpenAiModel::new(
        OpenAiConfig::azure(ok.uri(), OPENAI_KEY, "2024-10-21").with_retry(retry.clone()),
    )
    .unwrap();
    azure.chat(ChatRequest::from_prompt("hi")).await.unwrap();

    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("TRACE"),
        "the capture saw trace-level records"
    );
    assert!(
        logs.contains("sending request"),
        "the capture saw the providers' own records"
    );
    for key in [ANTHROPIC_KEY, OPENAI_KEY] {
        assert!(!logs.contains(key), "a key leaked into the logs");
        for error in &errors {
            assert!(!error.to_string().contains(key) && !format!("{error:?}").contains(key));
        }
    }
    let debug_of_models = format!("{:?} {:?}", anthropic(ok.uri()), openai(ok.uri()));
    assert!(!debug_of_models.contains(ANTHROPIC_KEY) && !debug_of_models.contains(OPENAI_KEY));
}
