//! TestModel, the latency and fault wrappers, and MockChatModel, through the public API.
#![cfg(test)]

use agent_llm::testing::{
    FaultyModel, LatencyModel, ScriptedModel, TestModel, responses, value_for_schema,
};
use agent_llm::{
    ChatModel, ChatRequest, ContentBlock, LlmError, Message, ResponseFormat, RetryPolicy, Role,
    StopReason, StructuredOutputMode, ToolChoice, ToolDefinition, collect_stream,
};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

mod support;
use support::doubles::*;

// ---------------------------------------------------------------------------------------
// TestModel

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Weather {
    city: String,
    #[schemars(range(min = 1, max = 14))]
    days: u8,
    unit: Unit,
}

#[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Unit {
    Celsius,
    Fahrenheit,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Report {
    summary: String,
    forecasts: Vec<Weather>,
    alert: Option<String>,
}

#[tokio::test]
async fn test_model_calls_every_tool_then_summarizes_the_results() {
    let model = TestModel::new();
    let mut request = prompt("weather and time?")
        .with_tool(ToolDefinition::for_type::<Weather>("weather", "Forecast"))
        .with_tool(tool("clock"));

    let first = model.chat(&request.clone()).await.unwrap();
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    let calls = first.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!((calls[0].0, calls[0].1), ("test_call_1", "weather"));
    assert_eq!((calls[1].0, calls[1].1), ("test_call_2", "clock"));
    let weather: Weather = serde_json::from_value(calls[0].2.clone()).unwrap();
    assert_eq!(
        (weather.city.as_str(), weather.days, weather.unit),
        ("a", 1, Unit::Celsius)
    );
    assert_eq!(calls[1].2, &json!({"query": "a"}));
    assert!(first.usage.input_tokens > 0 && first.usage.output_tokens > 0);

    request.messages.push(first.to_message());
    request.messages.push(Message::new(
        Role::User,
        vec![
            ContentBlock::tool_result("test_call_1", r#"{"temp": 21}"#),
            ContentBlock::tool_result("test_call_2", "noon"),
        ],
    ));
    let second = model.chat(&request).await.unwrap();
    assert_eq!(second.stop_reason, StopReason::EndTurn);
    assert_eq!(
        serde_json::from_str::<Value>(&second.text()).unwrap(),
        json!({"tool_results": {"weather": {"temp": 21}, "clock": "noon"}})
    );
    assert_eq!(model.call_count(), 2);
    assert_eq!(second.id, "test_msg_2");
    assert_eq!(second.model, "test");
}

#[tokio::test]
async fn test_model_usage_is_deterministic() {
    let request = prompt("same").with_tool(tool("clock"));
    let a = TestModel::new().chat(&request.clone()).await.unwrap();
    let b = TestModel::new().chat(&request).await.unwrap();
    assert_eq!(a.usage, b.usage);
    assert_eq!(a, b);
}

#[tokio::test]
async fn test_model_answers_structured_output_in_both_modes() {
    // Forced tool (Anthropic style): the tool's input is the structured value.
    let model = TestModel::new();
    assert_eq!(
        model.structured_output_mode(),
        StructuredOutputMode::ForcedTool
    );
    let forced = prompt("report")
        .with_tool(tool("distraction"))
        .with_tool(ToolDefinition::for_type::<Report>("Report", "The report"))
        .with_tool_choice(ToolChoice::Tool {
            name: "Report".into(),
        });
    let response = model.chat(&forced).await.unwrap();
    let calls = response.tool_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].1, "Report");
    let report: Report = serde_json::from_value(calls[0].2.clone()).unwrap();
    assert_eq!(report.summary, "a");

    // Response format (OpenAI style): the text is a schema-valid document.
    let model = TestModel::new().with_structured_output_mode(StructuredOutputMode::JsonSchema);
    assert_eq!(
        model.structured_output_mode(),
        StructuredOutputMode::JsonSchema
    );
    let schema = agent_llm::structured::schema_of::<Report>();
    let request = prompt("report").with_response_format(ResponseFormat::JsonSchema {
        name: "Report".into(),
        schema: schema.clone(),
        strict: true,
    });
    let response = model.chat(&request).await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let report: Report = serde_json::from_str(&response.text()).unwrap();
    assert!(report.forecasts.is_empty());
    assert_eq!(report.alert.as_deref(), Some("a"));
    assert_eq!(
        serde_json::from_str::<Value>(&response.text()).unwrap(),
        value_for_schema(&schema)
    );
}

#[tokio::test]
async fn test_model_is_configurable() {
    let request = prompt("go")
        .with_tool(tool("a"))
        .with_tool(tool("b"))
        .with_tool(tool("c"));

    let only_b = TestModel::new()
        .with_call_tools(["b"])
        .with_tool_arguments("b", json!({"query": "fixed"}));
    let response = only_b.chat(&request.clone()).await.unwrap();
    assert_eq!(
        response.tool_calls(),
        [("test_call_1", "b", &json!({"query": "fixed"}))]
    );

    let none = TestModel::new()
        .with_call_tools(Vec::<String>::new())
        .with_final_text("done");
    let response = none.chat(&request.clone()).await.unwrap();
    assert_eq!(
        (response.text().as_str(), response.stop_reason),
        ("done", StopReason::EndTurn)
    );

    let no_choice = request.clone().with_tool_choice(ToolChoice::None);
    let response = TestModel::new().chat(&no_choice).await.unwrap();
    assert_eq!(response.text(), "success (no tool calls)");

    let plain = TestModel::new().with_default_model("test-small");
    let response = plain.chat(&prompt("hi")).await.unwrap();
    assert_eq!(response.text(), "success (no tool calls)");
    assert_eq!(response.model, "test-small");

    let unknown = request.with_tool_choice(ToolChoice::Tool { name: "zzz".into() });
    let error = TestModel::new().chat(&unknown).await.unwrap_err();
    assert!(matches!(
        error,
        LlmError::InvalidRequest { status: 400, .. }
    ));
}

// ---------------------------------------------------------------------------------------
// Wrappers

#[tokio::test(start_paused = true)]
async fn faulty_model_is_recovered_by_the_retry_policy() {
    let model =
        FaultyModel::new(ScriptedModel::from_texts(["finally"])).fail_first(2, server_error());
    let policy = RetryPolicy::default().with_max_attempts(3);
    let request = prompt("hi");
    let response = policy.run(None, |_| model.chat(&request)).await.unwrap();
    assert_eq!(response.text(), "finally");
    assert_eq!(model.injected_faults(), 2);
    assert_eq!(model.call_count(), 3);
    // Only the call that got through reached the wrapped model.
    assert_eq!(model.inner().call_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn faulty_model_gives_up_with_the_injected_error_when_attempts_run_out() {
    let model = FaultyModel::new(TestModel::new()).fail_first(5, server_error());
    let request = prompt("hi");
    let result = RetryPolicy::default()
        .with_max_attempts(3)
        .run(None, |_| model.chat(&request))
        .await;
    assert_eq!(result.unwrap_err(), server_error());
    assert_eq!(model.injected_faults(), 3);
}

#[tokio::test]
async fn faulty_model_fails_every_kth_call_and_streams_too() {
    let model =
        FaultyModel::new(TestModel::new()).fail_every(3, LlmError::Transport("reset".into()));
    let mut outcomes = Vec::new();
    for _ in 0..6 {
        outcomes.push(model.chat(&prompt("x")).await.is_ok());
    }
    assert_eq!(outcomes, [true, true, false, true, true, false]);
    assert_eq!(model.injected_faults(), 2);
    assert!(model.chat_stream(&prompt("x")).await.is_ok());
    assert!(model.chat_stream(&prompt("x")).await.is_ok());
    assert!(matches!(
        model.chat_stream(&prompt("x")).await,
        Err(LlmError::Transport(_))
    ));
}

#[tokio::test]
async fn faulty_model_probability_is_reproducible_with_a_seed() {
    async fn pattern(seed: u64) -> Vec<bool> {
        let model = FaultyModel::new(TestModel::new())
            .fail_with_probability(0.5, LlmError::Timeout("t".into()))
            .with_seed(seed);
        let mut outcomes = Vec::new();
        for _ in 0..40 {
            outcomes.push(model.chat(&prompt("x")).await.is_err());
        }
        assert_eq!(
            model.injected_faults(),
            outcomes.iter().filter(|f| **f).count() as u64
        );
        outcomes
    }
    let a = pattern(7).await;
    assert_eq!(a, pattern(7).await);
    assert!(a.contains(&true) && a.contains(&false));

    let never = FaultyModel::new(TestModel::new()).fail_with_probability(0.0, server_error());
    let always = FaultyModel::new(TestModel::new()).fail_with_probability(1.0, server_error());
    for _ in 0..10 {
        assert!(never.chat(&prompt("x")).await.is_ok());
        assert!(always.chat(&prompt("x")).await.is_err());
    }
}

#[tokio::test(start_paused = true)]
async fn latency_model_delays_chat_and_stream_in_virtual_time() {
    let wall = std::time::Instant::now();
    let model = LatencyModel::new(TestModel::new(), Duration::from_secs(5));

    let start = tokio::time::Instant::now();
    model.chat(&prompt("x")).await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(5));

    let start = tokio::time::Instant::now();
    let stream = model.chat_stream(&prompt("x")).await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(5));
    assert_eq!(
        collect_stream(stream).await.unwrap().stop_reason,
        StopReason::EndTurn
    );

    // Ten virtual seconds passed; the wall clock barely moved.
    assert!(wall.elapsed() < Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn latency_model_uniform_delays_stay_in_range_and_delegate_metadata() {
    let inner = ScriptedModel::from_texts(["a", "b", "c"])
        .with_default_model("inner-model")
        .with_structured_output_mode(StructuredOutputMode::JsonSchema);
    let model = LatencyModel::uniform(
        inner,
        Duration::from_millis(100),
        Duration::from_millis(300),
    )
    .with_seed(1);
    assert_eq!(model.default_model().as_deref(), Some("inner-model"));
    assert_eq!(
        model.structured_output_mode(),
        StructuredOutputMode::JsonSchema
    );
    for _ in 0..3 {
        let start = tokio::time::Instant::now();
        model.chat(&prompt("x")).await.unwrap();
        let elapsed = start.elapsed();
        assert!(elapsed >= Duration::from_millis(100) && elapsed <= Duration::from_millis(301));
    }

    let faulty = FaultyModel::new(model);
    assert_eq!(faulty.default_model().as_deref(), Some("inner-model"));
    assert_eq!(
        faulty.structured_output_mode(),
        StructuredOutputMode::JsonSchema
    );
}

// ---------------------------------------------------------------------------------------
// mockall

#[cfg(feature = "mock")]
#[tokio::test]
async fn mock_chat_model_checks_expectations_on_chat() {
    use agent_llm::testing::MockChatModel;
    use mockall::predicate::function;

    let mut mock = MockChatModel::new();
    mock.expect_chat()
        .with(function(|request: &ChatRequest| {
            request.system.as_deref() == Some("Be brief.") && request.messages.len() == 1
        }))
        .times(1)
        .returning(|_| Ok(responses::text("mocked")));
    mock.expect_default_model()
        .return_const(Some("mock-1".to_owned()));

    let request = prompt("hello").with_system("Be brief.");
    assert_eq!(mock.chat(&request).await.unwrap().text(), "mocked");
    assert_eq!(mock.default_model().as_deref(), Some("mock-1"));
    mock.checkpoint();
}
