//! Helpers of the OpenAI wire tests: a model pointed at wiremock, response templates from
//! recorded bodies, and a reader for the newrelic VCR cassettes.

use super::{fixture, read, read_json, realdata};
use agent_llm::openai::{OpenAiConfig, OpenAiModel};
use agent_llm::{
    ChatModel, ChatRequest, ChatResponse, LlmError, RetryPolicy, ToolDefinition, Usage,
    collect_stream,
};
use serde_json::{Value, json};
use std::time::Duration;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub const KEY: &str = "sk-test-SECRET-0123456789";
pub const COMPLETIONS: &str = "/v1/chat/completions";
pub const OPENAI_CASSETTE: &str = "openai/newrelic-python-agent/mlmodel_openai_cassette.yaml";
pub const LANGCHAIN_CASSETTE: &str = "openai/newrelic-python-agent/mlmodel_langchain_cassette.yaml";
pub const LOCATION: &str = "test_parse_pydantic_model.json";
pub const LOCATION_SSE: &str = "test_parse_pydantic_model__7e5ea4d12e7c.sse";

pub fn config(server: &MockServer) -> OpenAiConfig {
    OpenAiConfig::openai(KEY)
        .with_base_url(format!("{}/v1", server.uri()))
        .with_retry(RetryPolicy::default().with_base_delay(Duration::from_millis(10)))
}

pub fn model(server: &MockServer) -> OpenAiModel {
    OpenAiModel::new(config(server)).unwrap()
}

pub fn prompt(text: &str) -> ChatRequest {
    ChatRequest::from_prompt(text)
}

pub fn usage(input_tokens: u64, output_tokens: u64) -> Usage {
    Usage {
        input_tokens,
        output_tokens,
        ..Usage::default()
    }
}

/// A recorded non-streaming body from openai-python.
pub fn json_ok(name: &str) -> ResponseTemplate {
    let body = read_json(realdata(&format!(
        "openai/openai-python/nonstreaming/{name}"
    )));
    ResponseTemplate::new(200).set_body_json(body)
}

/// A recorded SSE body from openai-python.
pub fn sse_ok(name: &str) -> ResponseTemplate {
    sse(read(realdata(&format!(
        "openai/openai-python/streaming/{name}"
    ))))
}

pub fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

pub fn error(status: u16, body: String) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_raw(body, "application/json")
}

pub fn error_fixture(status: u16, name: &str) -> ResponseTemplate {
    error(status, read(fixture(&format!("openai/{name}"))))
}

/// A server answering chat completions with `responses` in order, the last one for good.
pub async fn serve(responses: Vec<ResponseTemplate>) -> MockServer {
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

pub async fn chat(server: &MockServer, request: ChatRequest) -> Result<ChatResponse, LlmError> {
    model(server).chat(&request).await
}

/// Streams the answer and reassembles it.
pub async fn chat_streamed(
    server: &MockServer,
    request: ChatRequest,
) -> Result<ChatResponse, LlmError> {
    collect_stream(model(server).chat_stream(&request).await?).await
}

pub async fn sent_bodies(server: &MockServer) -> Vec<Value> {
    let requests = server.received_requests().await.unwrap();
    requests.iter().map(|r| r.body_json().unwrap()).collect()
}

pub async fn request_count(server: &MockServer) -> usize {
    server.received_requests().await.unwrap().len()
}

/// One recorded exchange of a VCR cassette.
pub struct Exchange {
    pub request: String,
    pub uri: String,
    pub status: u16,
    pub body: String,
}

/// Reads the exchanges of a newrelic VCR cassette (YAML). Only what these tests need:
/// the request text, `uri`, status code and the single-quoted response `string`.
pub fn cassette(relative: &str) -> Vec<Exchange> {
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
pub fn yaml_single_quoted(text: &str) -> String {
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

pub fn find_exchange(relative: &str, uri_end: &str, status: u16, request_has: &[&str]) -> Exchange {
    cassette(relative)
        .into_iter()
        .find(|e| {
            e.uri.ends_with(uri_end)
                && e.status == status
                && request_has.iter().all(|s| e.request.contains(s))
        })
        .unwrap_or_else(|| panic!("no {status} exchange for {uri_end} in {relative}"))
}

pub fn weather_tool() -> ToolDefinition {
    ToolDefinition::new(
        "GetWeatherArgs",
        "Get the temperature for the given country/city combo",
        json!({"type": "object", "properties": {
            "city": {"type": "string"}, "country": {"type": "string"},
            "units": {"type": "string", "enum": ["c", "f"]}
        }, "required": ["city", "country"]}),
    )
}

pub fn stock_tool() -> ToolDefinition {
    ToolDefinition::new(
        "get_stock_price",
        "Fetch the latest price for a given ticker",
        json!({"type": "object", "properties": {
            "ticker": {"type": "string"}, "exchange": {"type": "string"}
        }, "required": ["ticker", "exchange"]}),
    )
}
