//! The OpenAI-compatible provider against a local server replaying recorded Chat
//! Completions bodies: text, tool calls, streaming, refusals, structured output.
#![cfg(test)]

mod support;

use agent_llm::{
    ChatModel, ContentBlock, Message, Role, StopReason, StreamEvent, ToolChoice, collect_stream,
    extract,
};
use futures::StreamExt;
use serde_json::json;
use support::openai::*;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer};

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
    let first = model.chat(&request.clone()).await.unwrap();
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
    model.chat(&request).await.unwrap();
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
    let stream = model(&server).chat_stream(&request).await.unwrap();
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
