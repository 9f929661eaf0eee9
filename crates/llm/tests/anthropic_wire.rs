//! The Anthropic provider against a local server replaying recorded Messages API bodies.
#![cfg(test)]

mod support;

use agent_llm::{
    AnthropicConfig, AnthropicModel, ChatModel, ChatRequest, ContentBlock, LlmError, Message,
    RetryPolicy, Role, StopReason, ToolChoice, ToolDefinition, Usage, collect_stream,
};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::{fixture, read, read_json, realdata};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-ant-test-SECRET-0123456789";

fn model(server: &MockServer) -> AnthropicModel {
    let config = AnthropicConfig::new(KEY)
        .with_base_url(server.uri())
        .with_default_model("claude-haiku-4-5")
        .with_retry(RetryPolicy::default().with_base_delay(Duration::from_millis(5)));
    AnthropicModel::new(config).unwrap()
}

fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

/// Re-wraps ai-sdk's one-JSON-per-line chunk files as SSE (`event:` + `data:`).
fn chunks_as_sse(relative: &str) -> String {
    read(realdata(relative))
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let kind = serde_json::from_str::<Value>(line).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned();
            format!("event: {kind}\ndata: {line}\n\n")
        })
        .collect()
}

async fn mount(server: &MockServer, response: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(response)
        .mount(server)
        .await;
}

async fn sent_bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.body_json().unwrap())
        .collect()
}

fn weather_tool() -> ToolDefinition {
    ToolDefinition::new(
        "get_weather",
        "Current weather for a location.",
        json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}),
    )
}

#[tokio::test]
async fn non_streaming_tool_use_is_read_with_usage() {
    let server = MockServer::start().await;
    let body = read_json(realdata(
        "anthropic/ai-sdk-anthropic-3.0.21/anthropic-json-tool.1.json",
    ));
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .mount(&server)
        .await;
    let response = model(&server)
        .chat(&ChatRequest::from_prompt("weather?"))
        .await
        .unwrap();
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.model, "claude-haiku-4-5-20251001");
    let calls = response.tool_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, "toolu_01Q9ExVZnzZj7E2QQYHYtNUa");
    assert_eq!(calls[0].1, "json");
    assert_eq!(calls[0].2["elements"][2]["location"], "Paris");
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 1151,
            output_tokens: 87,
            cache_read_input_tokens: 0,
            cache_creation_input_tokens: 0
        }
    );
}

#[tokio::test]
async fn server_tool_blocks_are_kept_verbatim() {
    let server = MockServer::start().await;
    let body = read_json(realdata(
        "anthropic/ai-sdk-anthropic-3.0.21/anthropic-web-fetch-tool.error.json",
    ));
    mount(&server, ResponseTemplate::new(200).set_body_json(&body)).await;
    let response = model(&server)
        .chat(&ChatRequest::from_prompt("fetch"))
        .await
        .unwrap();
    let expected_opaque = body["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| !matches!(b["type"].as_str(), Some("text" | "tool_use" | "thinking")))
        .count();
    let opaque = response
        .content
        .iter()
        .filter(|b| matches!(b, ContentBlock::Opaque { .. }))
        .count();
    assert!(expected_opaque > 0);
    assert_eq!(opaque, expected_opaque);
}

#[tokio::test]
async fn streaming_text_then_tool_call_with_partial_json() {
    let server = MockServer::start().await;
    mount(
        &server,
        sse(read(realdata(
            "anthropic/sdk-python/tests/lib/streaming/fixtures/tool_use_response.txt",
        ))),
    )
    .await;
    let stream = model(&server)
        .chat_stream(&ChatRequest::from_prompt("weather in Paris?").with_tool(weather_tool()))
        .await
        .unwrap();
    let response = collect_stream(stream).await.unwrap();
    assert_eq!(
        response.text(),
        "I'll check the current weather in Paris for you."
    );
    let calls = response.tool_calls();
    assert_eq!(
        calls,
        vec![(
            "toolu_01NRLabsLyVHZPKxbKvkfSMn",
            "get_weather",
            &json!({"location": "Paris"})
        )]
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.usage.input_tokens, 377);
    assert!(
        response.usage.output_tokens > 1,
        "message_delta output tokens replace message_start's"
    );
    let sent = sent_bodies(&server).await;
    assert_eq!(sent[0]["stream"], json!(true));
}

#[tokio::test]
async fn streaming_usage_in_message_delta_includes_input_tokens() {
    let server = MockServer::start().await;
    mount(
        &server,
        sse(chunks_as_sse(
            "anthropic/ai-sdk-anthropic-3.0.21/anthropic-message-delta-input-tokens.chunks.txt",
        )),
    )
    .await;
    let stream = model(&server)
        .chat_stream(&ChatRequest::from_prompt("ping"))
        .await
        .unwrap();
    let response = collect_stream(stream).await.unwrap();
    assert_eq!(response.text(), "pong");
    assert_eq!(response.usage.input_tokens, 61);
    assert_eq!(response.usage.output_tokens, 2);
}

#[tokio::test]
async fn truncated_tool_json_is_kept_verbatim_with_max_tokens() {
    let server = MockServer::start().await;
    mount(&server, sse(read(realdata("anthropic/sdk-python/tests/lib/streaming/fixtures/incomplete_partial_json_response.txt")))).await;
    let stream = model(&server)
        .chat_stream(&ChatRequest::from_prompt("write"))
        .await
        .unwrap();
    let response = collect_stream(stream).await.unwrap();
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    let (_, _, input) = response.tool_calls()[0];
    let raw = input
        .as_str()
        .expect("invalid JSON arguments are kept as a string");
    assert!(raw.ends_with("Filing taxes"));
}

#[tokio::test]
async fn refusal_stop_reason_is_mapped() {
    let server = MockServer::start().await;
    mount(
        &server,
        sse(read(realdata(
            "anthropic/sdk-python/tests/lib/streaming/fixtures/refusal_response.txt",
        ))),
    )
    .await;
    let stream = model(&server)
        .chat_stream(&ChatRequest::from_prompt("?"))
        .await
        .unwrap();
    assert_eq!(
        collect_stream(stream).await.unwrap().stop_reason,
        StopReason::Refusal
    );
}

#[tokio::test]
async fn error_event_in_the_middle_of_a_stream_is_an_error() {
    let server = MockServer::start().await;
    mount(
        &server,
        sse(read(fixture("anthropic/stream_overloaded_midway.sse"))),
    )
    .await;
    let stream = model(&server)
        .chat_stream(&ChatRequest::from_prompt("?"))
        .await
        .unwrap();
    let error = collect_stream(stream).await.unwrap_err();
    assert!(matches!(error, LlmError::Overloaded { .. }), "{error:?}");
}

#[tokio::test]
async fn recorded_rate_limits_are_retried_until_success() {
    let server = MockServer::start().await;
    let exchanges = read_json(realdata(
        "anthropic/sdk-python/tests/lib/_parse/__inline_snapshot__/test_messages/TestAsyncParse/d743d628-16aa-4c9f-ae78-51deb578f746.json",
    ));
    let [first, second, success] = exchanges.as_array().unwrap().as_slice() else {
        panic!("three exchanges")
    };
    for (priority, exchange) in [(1u8, first), (2, second), (3, success)] {
        let response = &exchange["response"];
        let mut template = ResponseTemplate::new(response["status_code"].as_u64().unwrap() as u16)
            .set_body_json(&response["body"]);
        if let Some(retry) = response["headers"]["x-should-retry"].as_str() {
            template = template.insert_header("x-should-retry", retry);
        }
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(template)
            .up_to_n_times(1)
            .with_priority(priority)
            .mount(&server)
            .await;
    }
    let response = model(&server)
        .chat(&ChatRequest::from_prompt("Extract order"))
        .await
        .unwrap();
    assert!(response.text().contains("Green Tea"));
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

async fn error_after(
    status: u16,
    body_file: &str,
    retry_after: Option<&str>,
    attempts: u32,
) -> (LlmError, usize, Duration) {
    let server = MockServer::start().await;
    let mut template = ResponseTemplate::new(status).set_body_string(read(fixture(body_file)));
    if let Some(value) = retry_after {
        template = template.insert_header("retry-after", value);
    }
    mount(&server, template).await;
    let config = AnthropicConfig::new(KEY)
        .with_base_url(server.uri())
        .with_retry(
            RetryPolicy::default()
                .with_max_attempts(attempts)
                .with_base_delay(Duration::from_millis(5)),
        );
    let started = Instant::now();
    let error = AnthropicModel::new(config)
        .unwrap()
        .chat(&ChatRequest::from_prompt("hi"))
        .await
        .unwrap_err();
    (
        error,
        server.received_requests().await.unwrap().len(),
        started.elapsed(),
    )
}

#[tokio::test]
async fn error_statuses_map_to_error_classes_and_retry_only_when_allowed() {
    let (error, calls, _) = error_after(400, "anthropic/invalid_request_error.json", None, 3).await;
    assert!(
        matches!(error, LlmError::InvalidRequest { status: 400, .. }),
        "{error:?}"
    );
    assert_eq!(calls, 1, "400 is not retried");
    let (error, calls, _) = error_after(401, "anthropic/authentication_error.json", None, 3).await;
    assert!(matches!(error, LlmError::Auth { status: 401, .. }));
    assert_eq!(calls, 1, "401 is not retried");
    let (error, calls, _) = error_after(500, "anthropic/api_error.json", None, 3).await;
    assert!(matches!(error, LlmError::Server { status: 500, .. }));
    assert_eq!(calls, 3, "500 is retried");
    let (error, calls, _) = error_after(529, "anthropic/overloaded_error.json", None, 2).await;
    assert!(matches!(error, LlmError::Overloaded { .. }));
    assert_eq!(calls, 2, "529 is retried");
    for text in [error.to_string(), format!("{error:?}")] {
        assert!(!text.contains(KEY));
    }
}

#[tokio::test]
async fn retry_after_header_is_waited_for() {
    let (error, calls, elapsed) =
        error_after(529, "anthropic/overloaded_error.json", Some("1"), 2).await;
    assert_eq!(error.retry_after(), Some(Duration::from_secs(1)));
    assert_eq!(calls, 2);
    assert!(elapsed >= Duration::from_secs(1), "waited only {elapsed:?}");
}

#[tokio::test]
async fn dead_server_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let uri = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let config = AnthropicConfig::new(KEY)
        .with_base_url(uri)
        .with_retry(RetryPolicy::none());
    let error = AnthropicModel::new(config)
        .unwrap()
        .chat(&ChatRequest::from_prompt("hi"))
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::Transport(_)), "{error:?}");
}

#[tokio::test]
async fn request_bodies_are_pinned() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(read_json(realdata(
            "anthropic/ai-sdk-anthropic-3.0.21/anthropic-json-tool.1.json",
        ))),
    )
    .await;
    let model = model(&server);
    let plain = ChatRequest::from_prompt("Hello")
        .with_system("Be terse.")
        .with_max_tokens(256)
        .with_temperature(0.5);
    let tool_round_trip = ChatRequest::new(vec![
        Message::user("Weather in Paris?"),
        Message::new(
            Role::Assistant,
            vec![
                ContentBlock::text("Checking."),
                ContentBlock::ToolUse {
                    id: "toolu_1".into(),
                    name: "get_weather".into(),
                    input: json!({"location": "Paris"}),
                },
            ],
        ),
        Message::new(
            Role::User,
            vec![
                ContentBlock::tool_result("toolu_1", "18C, cloudy"),
                ContentBlock::tool_error("toolu_x", "unknown"),
            ],
        ),
    ])
    .with_system("You report weather.")
    .with_tool(weather_tool())
    .with_tool_choice(ToolChoice::Auto)
    .caching_conversation();
    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    struct ChatAnswer {
        answer: String,
        confidence: f64,
    }
    let extraction = ChatRequest::from_prompt("2+2?").with_model("claude-sonnet-4-5");
    model.chat(&plain).await.unwrap();
    model.chat(&tool_round_trip).await.unwrap();
    let _ = agent_llm::extract::<ChatAnswer, _>(&model, extraction).await;
    let bodies = sent_bodies(&server).await;
    insta::assert_json_snapshot!("anthropic_plain_request", bodies[0]);
    insta::assert_json_snapshot!("anthropic_tool_round_trip_request", bodies[1]);
    insta::assert_json_snapshot!("anthropic_extract_forced_tool_request", bodies[2]);
}

#[tokio::test]
async fn recorded_rate_limit_with_retry_after_waits_then_succeeds() {
    let server = MockServer::start().await;
    let exchanges = read_json(realdata(
        "anthropic/sdk-python/tests/lib/_parse/__inline_snapshot__/test_messages/TestAsyncParse/d743d628-16aa-4c9f-ae78-51deb578f746.json",
    ));
    let limited = ResponseTemplate::new(429)
        .set_body_json(&exchanges[0]["response"]["body"])
        .insert_header("retry-after", "1");
    Mock::given(method("POST"))
        .respond_with(limited)
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(&exchanges[2]["response"]["body"]),
    )
    .await;
    let started = Instant::now();
    let response = model(&server)
        .chat(&ChatRequest::from_prompt("Extract order"))
        .await
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "retried after {:?}",
        started.elapsed()
    );
    assert_eq!(
        response.usage.input_tokens,
        exchanges[2]["response"]["body"]["usage"]["input_tokens"]
            .as_u64()
            .unwrap()
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}
