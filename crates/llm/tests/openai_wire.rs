//! The OpenAI-compatible provider against a local server replaying recorded Chat
//! Completions and embeddings bodies.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use agent_llm::openai::{OpenAiConfig, OpenAiModel};
use agent_llm::{
    ChatModel, ChatRequest, ChatResponse, ContentBlock, EmbeddingModel, EmbeddingRequest, LlmError,
    Message, RetryPolicy, Role, StopReason, StreamEvent, ToolChoice, ToolDefinition, Usage,
    collect_stream, extract,
};
use futures::StreamExt;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::{fixture, read, read_json, realdata};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-test-SECRET-0123456789";
const COMPLETIONS: &str = "/v1/chat/completions";
const OPENAI_CASSETTE: &str = "openai/newrelic-python-agent/mlmodel_openai_cassette.yaml";
const LANGCHAIN_CASSETTE: &str = "openai/newrelic-python-agent/mlmodel_langchain_cassette.yaml";
const LOCATION: &str = "test_parse_pydantic_model.json";
const LOCATION_SSE: &str = "test_parse_pydantic_model__7e5ea4d12e7c.sse";

fn config(server: &MockServer) -> OpenAiConfig {
    OpenAiConfig::openai(KEY)
        .with_base_url(format!("{}/v1", server.uri()))
        .with_retry(RetryPolicy::default().with_base_delay(Duration::from_millis(10)))
}

fn model(server: &MockServer) -> OpenAiModel {
    OpenAiModel::new(config(server)).unwrap()
}

fn prompt(text: &str) -> ChatRequest {
    ChatRequest::from_prompt(text)
}

fn usage(input_tokens: u64, output_tokens: u64) -> Usage {
    Usage {
        input_tokens,
        output_tokens,
        ..Usage::default()
    }
}

/// A recorded non-streaming body from openai-python.
fn json_ok(name: &str) -> ResponseTemplate {
    let body = read_json(realdata(&format!(
        "openai/openai-python/nonstreaming/{name}"
    )));
    ResponseTemplate::new(200).set_body_json(body)
}

/// A recorded SSE body from openai-python.
fn sse_ok(name: &str) -> ResponseTemplate {
    sse(read(realdata(&format!(
        "openai/openai-python/streaming/{name}"
    ))))
}

fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

fn error(status: u16, body: String) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_raw(body, "application/json")
}

fn error_fixture(status: u16, name: &str) -> ResponseTemplate {
    error(status, read(fixture(&format!("openai/{name}"))))
}

/// A server answering chat completions with `responses` in order, the last one for good.
async fn serve(responses: Vec<ResponseTemplate>) -> MockServer {
    let server = MockServer::start().await;
    let last = responses.len().saturating_sub(1);
    for (i, response) in responses.into_iter().enumerate() {
        let mock = Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .respond_with(response);
        let mock = if i < last {
            mock.up_to_n_times(1)
        } else {
            mock
        };
        mock.mount(&server).await;
    }
    server
}

async fn chat(server: &MockServer, request: ChatRequest) -> Result<ChatResponse, LlmError> {
    model(server).chat(request).await
}

/// Streams the answer and reassembles it.
async fn chat_streamed(
    server: &MockServer,
    request: ChatRequest,
) -> Result<ChatResponse, LlmError> {
    collect_stream(model(server).chat_stream(request).await?).await
}

async fn sent_bodies(server: &MockServer) -> Vec<Value> {
    let requests = server.received_requests().await.unwrap();
    requests.iter().map(|r| r.body_json().unwrap()).collect()
}

async fn request_count(server: &MockServer) -> usize {
    server.received_requests().await.unwrap().len()
}

/// One recorded exchange of a VCR cassette.
struct Exchange {
    request: String,
    uri: String,
    status: u16,
    body: String,
}

/// Reads the exchanges of a newrelic VCR cassette (YAML). Only what these tests need:
/// the request text, `uri`, status code and the single-quoted response `string`.
fn cassette(relative: &str) -> Vec<Exchange> {
    let text = read(realdata(relative));
    text.split("\n- request:")
        .skip(1)
        .map(|exchange| {
            let (request, response) = exchange.split_once("\n  response:").unwrap();
            let field = |part: &str, key: &str| {
                part.lines()
                    .find_map(|l| l.trim().strip_prefix(key).map(str::to_owned))
                    .unwrap()
            };
            let body = match response.find("string: '") {
                Some(start) => yaml_single_quoted(&response[start + "string: '".len()..]),
                None => String::new(),
            };
            Exchange {
                uri: field(request, "uri: "),
                status: field(response, "code: ").parse().unwrap(),
                request: request.to_owned(),
                body,
            }
        })
        .collect()
}

/// The value of a YAML single-quoted scalar starting right after its opening quote:
/// `''` is a quote, a line break folds to a space, and each empty line is a newline.
fn yaml_single_quoted(text: &str) -> String {
    let mut raw = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            if chars.peek() == Some(&'\'') {
                chars.next();
            } else {
                break;
            }
        }
        raw.push(c);
    }
    let lines: Vec<&str> = raw.split('\n').collect();
    let mut out = String::new();
    let mut breaks = 0;
    for (i, line) in lines.iter().enumerate() {
        let line = if i == 0 { line.trim_end() } else { line.trim() };
        if i == 0 {
            out.push_str(line);
        } else if line.is_empty() && i + 1 < lines.len() {
            breaks += 1;
        } else {
            if breaks > 0 {
                out.push_str(&"\n".repeat(breaks));
                breaks = 0;
            } else {
                out.push(' ');
            }
            out.push_str(line);
        }
    }
    out.trim_end_matches(' ').to_owned()
}

fn find_exchange(relative: &str, uri_end: &str, status: u16, request_has: &[&str]) -> Exchange {
    cassette(relative)
        .into_iter()
        .find(|e| {
            e.uri.ends_with(uri_end)
                && e.status == status
                && request_has.iter().all(|s| e.request.contains(s))
        })
        .unwrap_or_else(|| panic!("no {status} exchange for {uri_end} in {relative}"))
}

fn weather_tool() -> ToolDefinition {
    ToolDefinition::new(
        "GetWeatherArgs",
        "Get the temperature for the given country/city combo",
        json!({"type": "object", "properties": {
            "city": {"type": "string"}, "country": {"type": "string"},
            "units": {"type": "string", "enum": ["c", "f"]}
        }, "required": ["city", "country"]}),
    )
}

fn stock_tool() -> ToolDefinition {
    ToolDefinition::new(
        "get_stock_price",
        "Fetch the latest price for a given ticker",
        json!({"type": "object", "properties": {
            "ticker": {"type": "string"}, "exchange": {"type": "string"}
        }, "required": ["ticker", "exchange"]}),
    )
}

#[tokio::test]
async fn non_streaming_text_with_system_prompt() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(json_ok(LOCATION))
        .mount(&server)
        .await;
    let request = prompt("What's the weather like in SF?")
        .with_system("You are a helpful assistant.")
        .with_max_tokens(256)
        .with_temperature(0.7);
    let response = chat(&server, request).await.unwrap();
    assert_eq!(response.id, "chatcmpl-ABfvbtVnTu5DeC4EFnRYj8mtfOM99");
    assert_eq!(response.model, "gpt-4o-2024-08-06");
    assert_eq!(
        response.text(),
        r#"{"city":"San Francisco","temperature":65,"units":"f"}"#
    );
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(response.usage, usage(79, 14));
    insta::assert_json_snapshot!("openai_plain_request", sent_bodies(&server).await[0]);
}

#[tokio::test]
async fn parallel_tool_calls_and_the_tool_round_trip_request() {
    let server = serve(vec![
        json_ok("test_parse_multiple_pydantic_tools.json"),
        json_ok(LOCATION),
    ])
    .await;
    let model = model(&server);
    let mut request = prompt("What's the weather like in Edinburgh? What's the price of AAPL?")
        .with_tool(weather_tool())
        .with_tool(stock_tool())
        .with_tool_choice(ToolChoice::Any);
    let first = model.chat(request.clone()).await.unwrap();
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    assert_eq!(first.text(), "");
    let weather = json!({"city": "Edinburgh", "country": "GB", "units": "c"});
    let stock = json!({"ticker": "AAPL", "exchange": "NASDAQ"});
    assert_eq!(
        first.tool_calls(),
        vec![
            ("call_fdNz3vOBKYgOIpMdWotB9MjY", "GetWeatherArgs", &weather),
            ("call_h1DWI1POMJLb0KwIyQHWXD4p", "get_stock_price", &stock),
        ]
    );
    assert_eq!(first.usage, usage(149, 60));

    request.messages.push(first.to_message());
    request.messages.push(Message::new(
        Role::User,
        vec![
            ContentBlock::text("Answer in one line."),
            ContentBlock::tool_result("call_fdNz3vOBKYgOIpMdWotB9MjY", r#"{"temp_c": 11}"#),
            ContentBlock::tool_error("call_h1DWI1POMJLb0KwIyQHWXD4p", "market closed"),
        ],
    ));
    request.tool_choice = Some(ToolChoice::Tool {
        name: "GetWeatherArgs".into(),
    });
    model.chat(request).await.unwrap();
    let bodies = sent_bodies(&server).await;
    assert_eq!(bodies[0]["tool_choice"], "required");
    insta::assert_json_snapshot!("openai_tool_round_trip_request", bodies[1]);
}

#[tokio::test]
async fn streamed_parallel_tool_calls() {
    let server = serve(vec![sse_ok(
        "test_parse_multiple_pydantic_tools__f82268f2fefd.sse",
    )])
    .await;
    let request = prompt("weather and stock")
        .with_tool(weather_tool())
        .with_tool(stock_tool());
    let stream = model(&server).chat_stream(request).await.unwrap();
    let events: Vec<StreamEvent> = stream.map(Result::unwrap).collect().await;
    let starts: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolUseStart { index, id, name } => {
                Some((*index, id.as_str(), name.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        vec![
            (2, "call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs"),
            (3, "call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price"),
        ]
    );
    assert_eq!(events.last(), Some(&StreamEvent::Stop(StopReason::ToolUse)));
    let replay = futures::stream::iter(events.into_iter().map(Ok)).boxed();
    let response = collect_stream(replay).await.unwrap();
    assert_eq!(response.id, "chatcmpl-ABfwAwrNePHUgBBezonVC6MX3zd63");
    let calls = response.tool_calls();
    assert_eq!(
        calls[0].2,
        &json!({"city": "Edinburgh", "country": "GB", "units": "c"})
    );
    assert_eq!(calls[1].2, &json!({"ticker": "AAPL", "exchange": "NASDAQ"}));
    assert_eq!(response.usage, usage(149, 60));
}

#[tokio::test]
async fn streamed_text_with_final_usage_chunk() {
    let server = serve(vec![sse_ok(LOCATION_SSE)]).await;
    let mut request = prompt("What's the weather like in SF?")
        .with_system("Answer in JSON.")
        .with_max_tokens(100);
    request.stop = vec!["\n\n".into()];
    let response = chat_streamed(&server, request).await.unwrap();
    assert_eq!(
        response.text(),
        r#"{"city":"San Francisco","temperature":61,"units":"f"}"#
    );
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(response.usage, usage(79, 14));
    insta::assert_json_snapshot!("openai_streaming_request", sent_bodies(&server).await[0]);
}

#[tokio::test]
async fn streamed_tool_call_from_the_cassette_with_null_usage_chunks() {
    let request_has = ["\"stream\":true", "add_exclamation"];
    let exchange = find_exchange(LANGCHAIN_CASSETTE, "/chat/completions", 200, &request_has);
    let server = serve(vec![sse(exchange.body)]).await;
    let response = chat_streamed(&server, prompt("Call add_exclamation"))
        .await
        .unwrap();
    assert_eq!(response.model, "gpt-5.1-2025-11-13");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    let calls = response.tool_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].1, calls[0].2),
        ("add_exclamation", &json!({"message": "Hello"}))
    );
    assert_eq!(response.usage, usage(161, 24));
}

#[tokio::test]
async fn length_stop_streamed_and_not() {
    let server = serve(vec![
        json_ok("test_parse_max_tokens_reached.json"),
        sse_ok("test_parse_max_tokens_reached__4cc50a6135d2.sse"),
    ])
    .await;
    let request = prompt("x").with_max_tokens(1);
    let whole = chat(&server, request.clone()).await.unwrap();
    assert_eq!(
        (&whole.stop_reason, whole.text()),
        (&StopReason::MaxTokens, "{\"".to_owned())
    );
    let streamed = chat_streamed(&server, request).await.unwrap();
    assert_eq!(
        (&streamed.stop_reason, streamed.text()),
        (&StopReason::MaxTokens, "{\"".to_owned())
    );
    assert_eq!(streamed.usage, usage(79, 1));
}

#[tokio::test]
async fn refusals_streamed_and_not() {
    let server = serve(vec![
        json_ok("test_parse_pydantic_model_refusal.json"),
        sse_ok("test_parse_pydantic_model_refusal__173417d55340.sse"),
    ])
    .await;
    let request = prompt("How do I make anthrax?");
    let whole = chat(&server, request.clone()).await.unwrap();
    assert_eq!(whole.stop_reason, StopReason::Refusal);
    assert_eq!(
        whole.text(),
        "I'm very sorry, but I can't assist with that."
    );
    let streamed = chat_streamed(&server, request).await.unwrap();
    assert_eq!(streamed.stop_reason, StopReason::Refusal);
    assert_eq!(
        streamed.text(),
        "I'm sorry, I can't assist with that request."
    );
}

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Units {
    C,
    F,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Location {
    city: String,
    temperature: f64,
    units: Units,
}

#[tokio::test]
async fn extract_sends_a_strict_json_schema() {
    let server = serve(vec![json_ok(LOCATION)]).await;
    let out = extract::<Location, _>(&model(&server), prompt("What's the weather like in SF?"))
        .await
        .unwrap();
    assert_eq!(out.value.city, "San Francisco");
    assert_eq!(out.value.temperature, 65.0);
    assert_eq!(out.value.units, Units::F);
    assert_eq!(out.attempts, 1);
    let bodies = sent_bodies(&server).await;
    assert_eq!(bodies[0]["response_format"]["json_schema"]["strict"], true);
    insta::assert_json_snapshot!("openai_json_schema_request", bodies[0]);
}

#[tokio::test]
async fn bad_request_and_auth_errors_are_not_retried() {
    // The recorded 400 comes from /v1/responses; its body is the same `ErrorResponse`.
    let bad = find_exchange(OPENAI_CASSETTE, "/responses", 400, &[]);
    let server = serve(vec![error(400, bad.body)]).await;
    let err = chat(&server, prompt("x")).await.unwrap_err();
    assert!(
        matches!(&err, LlmError::InvalidRequest { status: 400, message } if message.contains("does not exist")),
        "{err:?}"
    );
    assert_eq!(request_count(&server).await, 1);

    let unauthorized = find_exchange(OPENAI_CASSETTE, "/chat/completions", 401, &[]);
    let server = serve(vec![error(401, unauthorized.body)]).await;
    let err = chat(&server, prompt("x")).await.unwrap_err();
    let LlmError::Auth {
        status: 401,
        message,
    } = &err
    else {
        panic!("expected an auth error, got {err:?}");
    };
    assert!(message.contains("Incorrect API key provided"), "{message}");
    assert!(!err.to_string().contains(KEY));
    assert_eq!(request_count(&server).await, 1);
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_then_succeed() {
    // 429 without retry-after: exponential backoff, twice.
    let limited = || error_fixture(429, "rate_limit_exceeded.json");
    let server = serve(vec![limited(), limited(), json_ok(LOCATION)]).await;
    assert_eq!(
        chat(&server, prompt("x")).await.unwrap().stop_reason,
        StopReason::EndTurn
    );
    assert_eq!(request_count(&server).await, 3);

    // 429 with retry-after-ms.
    let server = serve(vec![
        limited().insert_header("retry-after-ms", "20"),
        json_ok(LOCATION),
    ])
    .await;
    chat(&server, prompt("x")).await.unwrap();
    assert_eq!(request_count(&server).await, 2);

    // 500, then success, when opening a stream.
    let server = serve(vec![
        error_fixture(500, "server_error.json"),
        sse_ok(LOCATION_SSE),
    ])
    .await;
    assert_eq!(
        chat_streamed(&server, prompt("x"))
            .await
            .unwrap()
            .stop_reason,
        StopReason::EndTurn
    );
    assert_eq!(request_count(&server).await, 2);

    // Retries run out: the last error comes back.
    let server = serve(vec![error_fixture(500, "server_error.json")]).await;
    let err = chat(&server, prompt("x")).await.unwrap_err();
    assert!(
        matches!(err, LlmError::Server { status: 500, .. }),
        "{err:?}"
    );
    assert_eq!(request_count(&server).await, 3);
}

#[tokio::test]
async fn quota_exhaustion_is_not_retried() {
    let server = serve(vec![error_fixture(429, "insufficient_quota.json")]).await;
    let err = chat(&server, prompt("x")).await.unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::RateLimited {
                retryable: false,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(request_count(&server).await, 1);
}

#[tokio::test]
async fn retry_after_is_waited_for() {
    let limited = error_fixture(429, "rate_limit_exceeded.json").insert_header("retry-after", "1");
    let server = serve(vec![limited, json_ok(LOCATION)]).await;
    let started = Instant::now();
    chat(&server, prompt("x")).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(request_count(&server).await, 2);
}

#[tokio::test]
async fn error_in_the_middle_of_a_stream() {
    let server = serve(vec![sse(read(fixture("openai/stream_error_midway.sse")))]).await;
    let stream = model(&server).chat_stream(prompt("x")).await.unwrap();
    let items: Vec<_> = stream.collect().await;
    assert!(matches!(
        items[1],
        Ok(StreamEvent::TextDelta { index: 1, ref text }) if text == "The answer"
    ));
    assert!(
        matches!(
            items.last(),
            Some(Err(LlmError::Server { status: 500, .. }))
        ),
        "{items:?}"
    );
    // Errors mid-stream are returned as they come, not retried.
    assert_eq!(request_count(&server).await, 1);
}

#[tokio::test]
async fn azure_deployment_url_api_key_header_and_api_version() {
    let server = MockServer::start().await;
    let embeddings = find_exchange(
        OPENAI_CASSETTE,
        "/embeddings",
        200,
        &["text-embedding-3-small"],
    );
    let answers = [
        (
            "/openai/deployments/gpt-4o-prod/chat/completions",
            json_ok(LOCATION),
        ),
        (
            "/openai/deployments/text-embedding-3-small/embeddings",
            ResponseTemplate::new(200).set_body_raw(embeddings.body, "application/json"),
        ),
    ];
    for (url_path, response) in answers {
        Mock::given(method("POST"))
            .and(path(url_path))
            .and(query_param("api-version", "2024-10-21"))
            .and(header("api-key", KEY))
            .respond_with(response)
            .mount(&server)
            .await;
    }
    let config = OpenAiConfig::azure(server.uri(), KEY, "2024-10-21")
        .with_default_model("gpt-4o-prod")
        .with_retry(RetryPolicy::none());
    let model = OpenAiModel::new(config).unwrap();
    let response = model.chat(prompt("x")).await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let inputs = vec!["This is an embedding test.".to_owned()];
    let embedded = model
        .embed(EmbeddingRequest {
            inputs,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(embedded.vectors.len(), 1);
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    assert!(
        requests
            .iter()
            .all(|r| r.headers.get("authorization").is_none())
    );
    assert_eq!(
        requests[0].body_json::<Value>().unwrap()["model"],
        "gpt-4o-prod"
    );
}

#[tokio::test]
async fn embeddings_from_the_cassette() {
    let exchange = find_exchange(
        OPENAI_CASSETTE,
        "/embeddings",
        200,
        &["text-embedding-3-small"],
    );
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_raw(exchange.body, "application/json"))
        .mount(&server)
        .await;
    let model = model(&server);
    let inputs = vec!["This is an embedding test.".to_owned()];
    let request = EmbeddingRequest {
        model: None,
        inputs,
        dimensions: Some(1536),
    };
    let response = model.embed(request).await.unwrap();
    assert_eq!(response.model, "text-embedding-3-small");
    assert_eq!(response.vectors.len(), 1);
    // The recorded body is base64 (little-endian f32s): text-embedding-3-small has 1536
    // dimensions and its vectors are normalized to length 1.
    let vector = &response.vectors[0];
    assert_eq!(vector.len(), 1536);
    let norm: f32 = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 0.01, "norm {norm}");
    assert_eq!(response.usage.input_tokens, 6);
    assert_eq!(
        sent_bodies(&server).await[0],
        json!({
            "model": "text-embedding-3-small",
            "input": ["This is an embedding test."],
            "encoding_format": "float",
            "dimensions": 1536,
        })
    );
    // Nothing to embed: no request.
    assert!(
        model
            .embed(EmbeddingRequest::default())
            .await
            .unwrap()
            .vectors
            .is_empty()
    );
    assert_eq!(request_count(&server).await, 1);
}

#[test]
fn yaml_folding_matches_the_recorded_json() {
    let folded = yaml_single_quoted("{\"a\": \"it''s a\n        b\"}\n\n\n        next'");
    assert_eq!(folded, "{\"a\": \"it's a b\"}\n\nnext");
}
