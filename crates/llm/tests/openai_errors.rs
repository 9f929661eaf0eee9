//! The OpenAI-compatible provider's errors and retries, Azure addressing and embeddings,
//! against a local server replaying recorded and documented bodies.
#![cfg(test)]

mod support;

use agent_llm::openai::{OpenAiConfig, OpenAiModel};
use agent_llm::{
    ChatModel, EmbeddingModel, EmbeddingRequest, LlmError, RetryPolicy, StopReason, StreamEvent,
};
use futures::StreamExt;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::openai::*;
use support::{fixture, read};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

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
    let stream = model(&server).chat_stream(&prompt("x")).await.unwrap();
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
    let response = model.chat(&prompt("x")).await.unwrap();
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

/// Answers an embeddings request with one vector per input: `[position, batch size]`.
struct EchoEmbeddings;

impl wiremock::Respond for EchoEmbeddings {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let body: Value = request.body_json().unwrap();
        let inputs = body["input"].as_array().unwrap();
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let at: f64 = text.as_str().unwrap().parse().unwrap();
                json!({"object": "embedding", "index": i, "embedding": [at, inputs.len() as f64]})
            })
            .collect();
        ResponseTemplate::new(200).set_body_json(json!({
            "object": "list",
            "data": data,
            "model": "text-embedding-3-small",
            "usage": {"prompt_tokens": inputs.len(), "total_tokens": inputs.len()},
        }))
    }
}

#[tokio::test]
async fn many_inputs_are_embedded_in_batches_in_order() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(EchoEmbeddings)
        .mount(&server)
        .await;
    let inputs: Vec<String> = (0..600).map(|i| i.to_string()).collect();
    let response = model(&server)
        .embed(EmbeddingRequest {
            inputs,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(response.vectors.len(), 600);
    for (i, vector) in response.vectors.iter().enumerate() {
        assert_eq!(vector[0], i as f32, "in input order");
    }
    let sizes: Vec<f32> = [0, 256, 512]
        .iter()
        .map(|&i| response.vectors[i][1])
        .collect();
    assert_eq!(sizes, [256.0, 256.0, 88.0]);
    assert_eq!(response.usage.input_tokens, 600);
    assert_eq!(request_count(&server).await, 3);
}

#[test]
fn yaml_folding_matches_the_recorded_json() {
    let folded = yaml_single_quoted("{\"a\": \"it''s a\n        b\"}\n\n\n        next'");
    assert_eq!(folded, "{\"a\": \"it's a b\"}\n\nnext");
}

#[tokio::test]
async fn a_timeout_names_the_limit_that_ran_out_and_how_to_raise_it() {
    let server = serve(vec![json_ok(LOCATION).set_delay(Duration::from_secs(3))]).await;
    let mut config = config(&server).with_retry(RetryPolicy::none());
    config.http.request_timeout = Duration::from_secs(1);
    // A whole answer is silent until it is ready: only the request timeout bounds it.
    config.http.read_timeout = Duration::from_millis(10);
    let err = OpenAiModel::new(config.clone())
        .unwrap()
        .chat(&prompt("x"))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "request timed out: no answer within 1 s (the request timeout; raise it with LLM_TIMEOUT_SECS)"
    );
    config.http.request_timeout = Duration::from_secs(10);
    let answer = OpenAiModel::new(config).unwrap().chat(&prompt("x")).await;
    assert!(answer.is_ok(), "{answer:?}");
}

#[tokio::test]
async fn llama_cpp_saying_the_prompt_exceeds_its_context_is_context_too_long() {
    // llama.cpp's body for a prompt over the server's context (tools/server/utils.hpp).
    let body = json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 9100, "n_ctx": 8192}});
    let server = serve(vec![error(400, body.to_string())]).await;
    let err = chat(&server, prompt("x")).await.unwrap_err();
    assert!(matches!(err, LlmError::ContextTooLong(_)), "{err:?}");
    assert!(!err.is_retryable());
}

#[tokio::test]
async fn a_known_context_window_lowers_max_tokens_and_refuses_a_prompt_that_cannot_fit() {
    let server = serve(vec![json_ok(LOCATION)]).await;
    let model = OpenAiModel::new(config(&server).with_context_window(8192)).unwrap();
    let long = prompt(&"word ".repeat(3000)).with_max_tokens(4096);
    model.chat(&long).await.unwrap();
    let sent = &sent_bodies(&server).await[0];
    let limit = sent["max_completion_tokens"].as_u64().unwrap();
    assert!((256..4096).contains(&limit), "{sent}");

    let too_long = prompt(&"word ".repeat(8000));
    let err = model.chat(&too_long).await.unwrap_err();
    assert!(matches!(err, LlmError::ContextTooLong(_)), "{err:?}");
    assert_eq!(request_count(&server).await, 1, "refused before sending");
}
