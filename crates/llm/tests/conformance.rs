//! The one conformance suite every provider passes (DESIGN.md section 7): plain text,
//! a tool call, parallel tool calls, streamed tool-call deltas, usage, and each error
//! class, each replayed from recorded or documented bodies by a local server.
#![cfg(test)]

mod support;

use agent_llm::openai::{OpenAiConfig, OpenAiModel};
use agent_llm::{
    AnthropicConfig, AnthropicModel, ChatModel, ChatRequest, LlmError, RetryPolicy, StopReason,
    ToolDefinition, Usage, collect_stream,
};
use serde_json::{Value, json};
use std::sync::Arc;
use support::openai::{OPENAI_CASSETTE, find_exchange};
use support::{fixture, read, read_json, realdata};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The error classes a provider must tell apart.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ErrorClass {
    InvalidRequest,
    Auth,
    RateLimited,
    Server,
    Overloaded,
    ContextTooLong,
}

fn class_of(error: &LlmError) -> Option<ErrorClass> {
    Some(match error {
        LlmError::InvalidRequest { .. } => ErrorClass::InvalidRequest,
        LlmError::Auth { .. } => ErrorClass::Auth,
        LlmError::RateLimited { .. } => ErrorClass::RateLimited,
        LlmError::Server { .. } => ErrorClass::Server,
        LlmError::Overloaded { .. } => ErrorClass::Overloaded,
        LlmError::ContextTooLong(_) => ErrorClass::ContextTooLong,
        _ => return None,
    })
}

type Call = (&'static str, &'static str, Value);

/// What one provider must answer to the suite's scenarios.
struct Provider {
    name: &'static str,
    build: fn(&MockServer) -> Arc<dyn ChatModel>,
    text: (ResponseTemplate, &'static str, Usage),
    tool_call: (ResponseTemplate, Vec<Call>),
    parallel_tool_calls: (ResponseTemplate, Vec<Call>),
    streamed_tool_calls: (ResponseTemplate, Vec<Call>, Usage),
    errors: Vec<(ResponseTemplate, ErrorClass)>,
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    }
}

fn json_body(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

fn sse_body(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

fn error_body(status: u16, body: String) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("content-type", "application/json")
        .set_body_string(body)
}

fn no_retry() -> RetryPolicy {
    RetryPolicy::none()
}

fn anthropic() -> Provider {
    let runner = read_json(realdata(
        "anthropic/sdk-typescript/tests/lib/tools/nockFixtures/ToolRunner.json",
    ));
    let recorded = |i: usize| json_body(runner[i]["response"].clone());
    let rate_limited = read_json(realdata(
        "anthropic/sdk-python/tests/lib/_parse/__inline_snapshot__/test_messages/TestAsyncParse/d743d628-16aa-4c9f-ae78-51deb578f746.json",
    ))[0]["response"]["body"]
        .to_string();
    let own = |name: &str| read(fixture(&format!("anthropic/{name}")));
    Provider {
        name: "anthropic",
        build: |server| {
            let config = AnthropicConfig::new("k")
                .with_base_url(server.uri())
                .with_retry(no_retry());
            Arc::new(AnthropicModel::new(config).unwrap())
        },
        text: (
            recorded(1),
            "I have successfully executed the test_tool",
            usage(505, 41),
        ),
        tool_call: (
            recorded(0),
            vec![(
                "toolu_011LF2VkWpAfJnTKJcmh1PNf",
                "test_tool",
                json!({"value": "test"}),
            )],
        ),
        parallel_tool_calls: (
            recorded(2),
            vec![
                (
                    "toolu_01L8GVQapA1HmggQcrwboukH",
                    "test_tool",
                    json!({"count": 1}),
                ),
                (
                    "toolu_01J5Fvzxu7DP1Uh59c1kr5JD",
                    "test_tool",
                    json!({"count": 2}),
                ),
            ],
        ),
        streamed_tool_calls: (
            sse_body(read(realdata(
                "anthropic/sdk-python/tests/lib/streaming/fixtures/tool_use_response.txt",
            ))),
            vec![(
                "toolu_01NRLabsLyVHZPKxbKvkfSMn",
                "get_weather",
                json!({"location": "Paris"}),
            )],
            usage(377, 65),
        ),
        errors: vec![
            (
                error_body(400, own("invalid_request_error.json")),
                ErrorClass::InvalidRequest,
            ),
            (
                error_body(401, own("authentication_error.json")),
                ErrorClass::Auth,
            ),
            (error_body(429, rate_limited), ErrorClass::RateLimited),
            (error_body(500, own("api_error.json")), ErrorClass::Server),
            (
                error_body(529, own("overloaded_error.json")),
                ErrorClass::Overloaded,
            ),
            (
                error_body(400, own("prompt_too_long.json")),
                ErrorClass::ContextTooLong,
            ),
        ],
    }
}

fn openai() -> Provider {
    let recorded = |name: &str| {
        read_json(realdata(&format!(
            "openai/openai-python/nonstreaming/{name}"
        )))
    };
    let own = |name: &str| read(fixture(&format!("openai/{name}")));
    let text = read_json(realdata(
        "openai/openai-openapi/examples/chat_completions_default.response.txt",
    ));
    let weather = json!({"city": "Edinburgh", "country": "GB", "units": "c"});
    let stock = json!({"ticker": "AAPL", "exchange": "NASDAQ"});
    Provider {
        name: "openai",
        build: |server| {
            let config = OpenAiConfig::openai("k")
                .with_base_url(server.uri())
                .with_retry(no_retry());
            Arc::new(OpenAiModel::new(config).unwrap())
        },
        text: (
            json_body(text),
            "Hello! How can I assist you today?",
            usage(19, 10),
        ),
        tool_call: (
            json_body(recorded("test_parse_pydantic_tool.json")),
            vec![(
                "call_Y6qJ7ofLgOrBnMD5WbVAeiRV",
                "GetWeatherArgs",
                json!({"city": "Edinburgh", "country": "UK", "units": "c"}),
            )],
        ),
        parallel_tool_calls: (
            json_body(recorded("test_parse_multiple_pydantic_tools.json")),
            vec![
                (
                    "call_fdNz3vOBKYgOIpMdWotB9MjY",
                    "GetWeatherArgs",
                    weather.clone(),
                ),
                (
                    "call_h1DWI1POMJLb0KwIyQHWXD4p",
                    "get_stock_price",
                    stock.clone(),
                ),
            ],
        ),
        streamed_tool_calls: (
            sse_body(read(realdata(
                "openai/openai-python/streaming/test_parse_multiple_pydantic_tools__f82268f2fefd.sse",
            ))),
            vec![
                ("call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs", weather),
                ("call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price", stock),
            ],
            usage(149, 60),
        ),
        errors: vec![
            (
                error_body(400, own("invalid_request.json")),
                ErrorClass::InvalidRequest,
            ),
            (
                error_body(
                    401,
                    find_exchange(OPENAI_CASSETTE, "/chat/completions", 401, &[]).body,
                ),
                ErrorClass::Auth,
            ),
            (
                error_body(429, own("rate_limit_exceeded.json")),
                ErrorClass::RateLimited,
            ),
            (
                error_body(500, own("server_error.json")),
                ErrorClass::Server,
            ),
            (
                error_body(503, own("server_error.json")),
                ErrorClass::Server,
            ),
            (
                error_body(400, own("context_length_exceeded.json")),
                ErrorClass::ContextTooLong,
            ),
        ],
    }
}

async fn answering(template: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(template)
        .mount(&server)
        .await;
    server
}

fn request() -> ChatRequest {
    ChatRequest::from_prompt("conformance").with_tool(ToolDefinition::new(
        "test_tool",
        "A tool.",
        json!({"type": "object", "properties": {"value": {"type": "string"}}}),
    ))
}

fn calls_of(response: &agent_llm::ChatResponse) -> Vec<(String, String, Value)> {
    response
        .tool_calls()
        .into_iter()
        .map(|(id, name, input)| (id.into(), name.into(), input.clone()))
        .collect()
}

fn expected(calls: &[Call]) -> Vec<(String, String, Value)> {
    calls
        .iter()
        .map(|(id, name, input)| ((*id).into(), (*name).into(), input.clone()))
        .collect()
}

async fn run_suite(provider: Provider) {
    let name = provider.name;

    let (template, text, want_usage) = provider.text;
    let server = answering(template).await;
    let response = (provider.build)(&server).chat(&request()).await.unwrap();
    assert!(
        response.text().starts_with(text),
        "{name}: text was {:?}",
        response.text()
    );
    assert_eq!(response.stop_reason, StopReason::EndTurn, "{name}");
    assert_eq!(response.usage, want_usage, "{name}: usage");
    assert!(
        !response.id.is_empty() && !response.model.is_empty(),
        "{name}: id and model"
    );

    for (template, calls) in [provider.tool_call, provider.parallel_tool_calls] {
        let server = answering(template).await;
        let response = (provider.build)(&server).chat(&request()).await.unwrap();
        assert_eq!(calls_of(&response), expected(&calls), "{name}: tool calls");
        assert_eq!(response.stop_reason, StopReason::ToolUse, "{name}");
    }

    let (template, calls, want_usage) = provider.streamed_tool_calls;
    let server = answering(template).await;
    let stream = (provider.build)(&server)
        .chat_stream(&request())
        .await
        .unwrap();
    let response = collect_stream(stream).await.unwrap();
    assert_eq!(
        calls_of(&response),
        expected(&calls),
        "{name}: streamed tool calls"
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse, "{name}");
    assert_eq!(
        response.usage.input_tokens, want_usage.input_tokens,
        "{name}: streamed usage"
    );
    assert_eq!(
        response.usage.output_tokens, want_usage.output_tokens,
        "{name}: streamed usage"
    );

    for (template, class) in provider.errors {
        let server = answering(template).await;
        let error = (provider.build)(&server)
            .chat(&request())
            .await
            .unwrap_err();
        assert_eq!(class_of(&error), Some(class), "{name}: {error:?}");
        let retryable = matches!(
            class,
            ErrorClass::RateLimited | ErrorClass::Server | ErrorClass::Overloaded
        );
        assert_eq!(
            error.is_retryable(),
            retryable,
            "{name}: retryability of {error:?}"
        );
    }
}

#[tokio::test]
async fn anthropic_passes_the_conformance_suite() {
    run_suite(anthropic()).await;
}

#[tokio::test]
async fn openai_passes_the_conformance_suite() {
    run_suite(openai()).await;
}
