//! `llm_chat` pointed at servers that, like many gateways, do not publish `GET
//! /v1/models`: it completes its tool round trip on both providers' wire formats, each
//! request checked against the vendor's shape (model, messages, the tool declared, the
//! tool's result sent back under the call's id).
#![cfg(test)]

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::examples::run_example;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// An OpenAI Chat Completions endpoint: a `get_time` call first, then the answer once
/// the tool's result comes back.
struct OpenAiToolRoundTrip;

impl Respond for OpenAiToolRoundTrip {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let bad = |why: &str| {
            ResponseTemplate::new(400).set_body_json(
                json!({"error": {"message": why, "type": "invalid_request_error", "param": null, "code": null}}),
            )
        };
        let Some(messages) = body["messages"].as_array() else {
            return bad("messages is required");
        };
        if !body["model"].is_string() {
            return bad("model is required");
        }
        if !body["tools"].as_array().is_some_and(|tools| {
            tools.iter().any(|t| {
                t["type"] == "function"
                    && t["function"]["name"] == "get_time"
                    && t["function"]["parameters"]["type"] == "object"
            })
        }) {
            return bad("the get_time function tool is missing");
        }
        let answered = messages.iter().any(|m| {
            m["role"] == "tool" && m["tool_call_id"] == "call_1" && m["content"].is_string()
        });
        let message = if answered {
            json!({"role": "assistant", "content": "It is noon in UTC."})
        } else {
            json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": "get_time", "arguments": "{\"timezone\": \"UTC\"}"}
            }]})
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": if answered { "stop" } else { "tool_calls" }}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28}
        }))
    }
}

/// An Anthropic Messages endpoint: a `get_time` tool use first, then the answer once the
/// tool's result comes back.
struct AnthropicToolRoundTrip;

impl Respond for AnthropicToolRoundTrip {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let bad = |why: &str| {
            ResponseTemplate::new(400).set_body_json(
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": why}}),
            )
        };
        if request.headers.get("anthropic-version").is_none() {
            return bad("anthropic-version header is required");
        }
        if !body["max_tokens"].is_u64() || !body["model"].is_string() {
            return bad("model and max_tokens are required");
        }
        let Some(messages) = body["messages"].as_array() else {
            return bad("messages is required");
        };
        if !body["tools"].as_array().is_some_and(|tools| {
            tools
                .iter()
                .any(|t| t["name"] == "get_time" && t["input_schema"]["type"] == "object")
        }) {
            return bad("the get_time tool is missing");
        }
        let answered = messages.iter().any(|m| {
            m["role"] == "user"
                && m["content"].as_array().is_some_and(|blocks| {
                    blocks
                        .iter()
                        .any(|b| b["type"] == "tool_result" && b["tool_use_id"] == "toolu_1")
                })
        });
        let content = if answered {
            json!([{"type": "text", "text": "It is noon in UTC."}])
        } else {
            json!([{"type": "tool_use", "id": "toolu_1", "name": "get_time", "input": {"timezone": "UTC"}}])
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
            "content": content, "stop_reason": if answered { "end_turn" } else { "tool_use" },
            "stop_sequence": null, "usage": {"input_tokens": 20, "output_tokens": 8}
        }))
    }
}

/// A server answering `GET /v1/models` with `status` and the chat endpoint at
/// `endpoint` with `responder`.
async fn server(status: u16, endpoint: &str, responder: impl Respond + 'static) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .respond_with(ResponseTemplate::new(status))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(endpoint))
        .respond_with(responder)
        .mount(&server)
        .await;
    server
}

fn llm_chat(env: &[(&str, String)]) -> support::examples::Finished {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    run_example(
        "llm_chat",
        &["What time is it in UTC?"],
        &env,
        Duration::from_secs(60),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn an_openai_compatible_server_without_a_model_list_completes_the_tool_round_trip() {
    for status in [404, 405, 501] {
        let server = server(status, "/v1/chat/completions", OpenAiToolRoundTrip).await;
        let run = llm_chat(&[
            ("LLM_PROVIDER", "openai".into()),
            ("OPENAI_BASE_URL", format!("{}/v1", server.uri())),
            ("OPENAI_API_KEY", "sk-local".into()),
        ]);
        assert_eq!(run.code, Some(0), "{status}: {}{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("It is noon in UTC."), "{}", run.stdout);
        assert!(
            run.stderr.contains("does not publish its models"),
            "{}",
            run.stderr
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_anthropic_server_completes_the_tool_round_trip() {
    let server = server(404, "/v1/messages", AnthropicToolRoundTrip).await;
    let run = llm_chat(&[
        ("LLM_PROVIDER", "anthropic".into()),
        ("ANTHROPIC_BASE_URL", server.uri()),
        ("ANTHROPIC_API_KEY", "sk-ant-local".into()),
    ]);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("It is noon in UTC."), "{}", run.stdout);
}
