//! What the command line builds a live run from: the provider fitted to the model a local
//! server serves, the spending summary, and the fixtures directory of a dry run.
#![cfg(test)]

use agent_llm::{ChatRequest, ModelPrice, PricingTable, Usage};
use agent_runtime::{CostLimits, CostMeter, CostSnapshot};
use job_hunter::llm::describe_cost;
use job_hunter::{Deps, Settings};
use serde_json::json;
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const SERVED: &str = "qwen2.5-7b-instruct-q4";

#[tokio::test]
async fn a_discovered_provider_names_and_calls_the_model_its_server_serves() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "object": "list",
            "data": [{"id": SERVED, "object": "model", "owned_by": "local"}]
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_partial_json(json!({"model": SERVED})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": SERVED,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
        })))
        .mount(&server)
        .await;
    let base = format!("{}/v1", server.uri());
    let mut provider = job_hunter::deps::live_provider_from(|name| match name {
        "LLM_PROVIDER" => Some("local".into()),
        "OPENAI_BASE_URL" => Some(base.clone()),
        _ => None,
    })
    .unwrap();
    assert!(!provider.describe().contains(SERVED));
    provider.discover().await.unwrap();
    assert!(
        provider.describe().contains(SERVED),
        "{}",
        provider.describe()
    );

    let mut settings = Settings::default();
    settings.adopt_provider_models(&provider, |_| None);
    assert_eq!(settings.sonnet_model, SERVED);
    assert_eq!(settings.haiku_model, SERVED);
    // The services use that provider: a call naming the served model reaches it.
    let deps = Deps::from_provider(&provider, &settings).unwrap();
    let answer = deps
        .model
        .chat(&ChatRequest::from_prompt("hi").with_model(settings.sonnet_model.clone()))
        .await
        .unwrap();
    assert_eq!(answer.model, SERVED);
}

/// What a meter priced by `pricing` holds after one call of `model`.
fn spent(pricing: PricingTable, model: &str, usage: Usage) -> CostSnapshot {
    let meter = CostMeter::with_pricing(CostLimits::default(), pricing);
    meter.record(model, usage);
    meter.snapshot()
}

#[test]
fn the_summary_counts_cached_input_and_says_when_the_cost_is_unknown() {
    let usage = Usage {
        input_tokens: 1_000,
        output_tokens: 200,
        cache_read_input_tokens: 4_000,
        cache_creation_input_tokens: 500,
    };
    let priced =
        PricingTable::default().with_price("my-model", ModelPrice::new(1.0, 2.0, 0.1, 1.25));
    let known = spent(priced, "my-model", usage);
    assert_eq!(known.usage.prompt_tokens(), 5_500);
    assert!(known.unpriced_models.is_empty());
    assert_eq!(
        describe_cost(&known, 5.0, 10),
        "cost: 5,700 tokens (5,500 in, 200 out), $0.0024: 570 tokens and $0.0002 per job fetched (limit $5.00)"
    );

    let unknown = spent(PricingTable::default(), "my-model", usage);
    assert_eq!(unknown.unpriced_models, ["my-model"]);
    assert_eq!(
        describe_cost(&unknown, 5.0, 10),
        "cost: 5,700 tokens (5,500 in, 200 out), cost unknown (no price for my-model): 570 tokens per job fetched (the $5.00 limit stands as 5000000 tokens)"
    );
}
