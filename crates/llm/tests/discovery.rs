//! `ProviderConfig::discover` against servers that publish their models and servers that
//! do not: discovery fits the configuration when it can and never stops a run when the
//! server simply does not say; only an unreachable server is an error.
#![cfg(test)]

mod support;

use agent_llm::{LlmError, ModelTier, ProviderConfig};
use serde_json::json;
use support::openai::{COMPLETIONS, json_ok, prompt};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A configuration for an OpenAI-compatible server at `base_url`.
fn config_for(base_url: &str) -> ProviderConfig {
    let base_url = base_url.to_owned();
    ProviderConfig::from_lookup(move |name| match name {
        "LLM_PROVIDER" => Some("openai".to_owned()),
        "OPENAI_BASE_URL" => Some(base_url.clone()),
        "OPENAI_API_KEY" => Some("sk-test".to_owned()),
        _ => None,
    })
    .unwrap()
    .unwrap()
}

/// A server whose `GET /v1/models` answers `models` and whose chat completions answer a
/// recorded body.
async fn server_with_models(models: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .respond_with(models)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .respond_with(json_ok("test_parse_pydantic_model.json"))
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn a_server_that_does_not_publish_its_models_keeps_the_configured_ones_and_answers() {
    let refusals = [
        ResponseTemplate::new(404).set_body_string("404 page not found"),
        ResponseTemplate::new(405).insert_header("allow", "POST"),
        ResponseTemplate::new(501).set_body_json(
            json!({"error": {"message": "not implemented", "type": "server_error"}}),
        ),
        ResponseTemplate::new(200).set_body_string("<html><body>gateway</body></html>"),
        ResponseTemplate::new(200).set_body_json(json!({"object": "list"})),
    ];
    for refusal in refusals {
        let server = server_with_models(refusal).await;
        let mut config = config_for(&format!("{}/v1", server.uri()));
        let configured = config.router.model(ModelTier::Primary).to_owned();

        let served = config.discover().await.unwrap();

        assert_eq!(served, None);
        assert_eq!(config.router.model(ModelTier::Primary), configured);
        assert_eq!(config.context_window, None);
        let model = config.chat_model(ModelTier::Primary).unwrap();
        let answer = model.chat(&prompt("Where is Paris?")).await.unwrap();
        assert!(!answer.text().is_empty());
    }
}

#[tokio::test]
async fn a_server_serving_one_model_fits_every_tier_to_it() {
    let server = server_with_models(ResponseTemplate::new(200).set_body_json(json!({
        "object": "list",
        "data": [{"id": "qwen2.5", "object": "model", "owned_by": "vllm", "max_model_len": 32768}]
    })))
    .await;
    let mut config = config_for(&format!("{}/v1", server.uri()));

    let served = config.discover().await.unwrap().unwrap();

    assert_eq!(served.models.len(), 1);
    for tier in ModelTier::ALL {
        assert_eq!(config.router.model(tier), "qwen2.5");
    }
    assert_eq!(config.context_window, Some(32768));
}

#[tokio::test]
async fn a_server_that_is_down_is_an_error_naming_its_address() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let mut config = config_for(&address);

    let error = config.discover().await.unwrap_err();

    assert!(matches!(error, LlmError::Transport(_)), "{error:?}");
    assert!(error.to_string().contains(&address), "{error}");
}
