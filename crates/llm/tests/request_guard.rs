//! The switch that stops real requests: remote hosts are refused, loopback servers still work.
#![cfg(test)]

use agent_llm::testing::{allow_network_requests, deny_network_requests, network_requests_denied};
use agent_llm::{
    AnthropicConfig, AnthropicModel, ChatModel, ChatRequest, EmbeddingModel, EmbeddingRequest,
    LlmError, OpenAiConfig, OpenAiModel, RetryPolicy,
};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

#[tokio::test]
async fn denied_requests_never_leave_the_machine_but_loopback_works() {
    deny_network_requests();
    assert!(network_requests_denied());

    let anthropic =
        AnthropicModel::new(AnthropicConfig::new("k").with_retry(RetryPolicy::none())).unwrap();
    let error = anthropic
        .chat(&ChatRequest::from_prompt("hi"))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        LlmError::RequestsDisabled("api.anthropic.com".into())
    );
    assert!(!error.is_retryable());
    assert!(
        anthropic
            .chat_stream(&ChatRequest::from_prompt("hi"))
            .await
            .is_err()
    );

    let openai = OpenAiModel::new(OpenAiConfig::openai("k")).unwrap();
    let error = openai
        .chat(&ChatRequest::from_prompt("hi"))
        .await
        .unwrap_err();
    assert_eq!(error, LlmError::RequestsDisabled("api.openai.com".into()));
    let request = EmbeddingRequest {
        inputs: vec!["a".into()],
        ..Default::default()
    };
    assert!(matches!(
        openai.embed(request).await,
        Err(LlmError::RequestsDisabled(_))
    ));

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": "local"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1}
        })))
        .mount(&server)
        .await;
    let local = AnthropicModel::new(AnthropicConfig::new("k").with_base_url(server.uri())).unwrap();
    assert_eq!(
        local
            .chat(&ChatRequest::from_prompt("hi"))
            .await
            .unwrap()
            .text(),
        "local"
    );
    let by_name = server.uri().replace("127.0.0.1", "localhost");
    let local = AnthropicModel::new(AnthropicConfig::new("k").with_base_url(by_name)).unwrap();
    assert_eq!(
        local
            .chat(&ChatRequest::from_prompt("hi"))
            .await
            .unwrap()
            .text(),
        "local"
    );

    allow_network_requests();
    assert!(!network_requests_denied());
}
