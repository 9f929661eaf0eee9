//! The test doubles of `agent_llm::testing`, through the public API only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_llm::testing::{
    FaultyModel, FixtureModel, LatencyModel, ScriptedModel, TestModel, responses, value_for_schema,
};
use agent_llm::{
    ChatModel, ChatRequest, ContentBlock, LlmError, Message, ResponseFormat, RetryPolicy, Role,
    StopReason, StructuredOutputMode, ToolChoice, ToolDefinition, Usage, collect_stream,
};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

// ---------------------------------------------------------------------------------------
// Helpers

/// A fixture directory under the system temp dir, removed when dropped.
struct TempFixtures(PathBuf);

impl TempFixtures {
    fn new(name: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let unique = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!(
            "agent-llm-fixtures-{}-{unique}-{name}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempFixtures(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `<key>.json` holding a text answer `text`.
    fn text(&self, key: &str, text: &str) -> &Self {
        let body = json!({
            "id": format!("fx_{key}"),
            "model": "fixture",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 120, "output_tokens": 18}
        });
        self.raw(key, &body.to_string())
    }

    fn raw(&self, key: &str, body: &str) -> &Self {
        std::fs::write(self.0.join(format!("{key}.json")), body).unwrap();
        self
    }
}

impl Drop for TempFixtures {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition::new(
        name,
        format!("The {name} tool"),
        json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
    )
}

fn prompt(text: &str) -> ChatRequest {
    ChatRequest::from_prompt(text)
}

/// A conversation where the assistant called `tool_name` (id `call_9`) and the user
/// sends back its result.
fn after_tool_call(tool_name: &str) -> ChatRequest {
    ChatRequest::new(vec![
        Message::user("go"),
        Message::new(
            Role::Assistant,
            vec![ContentBlock::ToolUse {
                id: "call_9".into(),
                name: tool_name.into(),
                input: json!({}),
            }],
        ),
        Message::new(Role::User, vec![ContentBlock::tool_result("call_9", "42")]),
    ])
}

fn server_error() -> LlmError {
    LlmError::Server {
        status: 503,
        message: "unavailable".into(),
        retry_after: None,
    }
}

// ---------------------------------------------------------------------------------------
// ScriptedModel

#[tokio::test]
async fn scripted_answers_in_order_records_requests_and_fails_clearly_when_exhausted() {
    let model = ScriptedModel::from_texts(["first", "second"]);
    let observer = model.clone();

    assert_eq!(model.chat(prompt("one")).await.unwrap().text(), "first");
    assert_eq!(
        model
            .chat(prompt("two").with_system("sys"))
            .await
            .unwrap()
            .text(),
        "second"
    );

    let error = model.chat(prompt("three")).await.unwrap_err();
    assert_eq!(
        error,
        LlmError::InvalidResponse("ScriptedModel: no scripted response left for call 3".into())
    );
    assert!(!error.is_retryable());

    assert_eq!(observer.call_count(), 3);
    let sent: Vec<String> = observer
        .requests()
        .iter()
        .map(|r| r.messages[0].text())
        .collect();
    assert_eq!(sent, ["one", "two", "three"]);
    assert_eq!(observer.requests()[1].system.as_deref(), Some("sys"));
    assert_eq!(observer.last_request().unwrap().messages[0].text(), "three");
    assert_eq!(observer.remaining(), 0);
}

#[tokio::test]
async fn scripted_responses_get_ids_models_and_usage() {
    let model = ScriptedModel::new(vec![
        ScriptedModel::text_response("a"),
        ScriptedModel::tool_call_response("call_1", "search", json!({"q": "rust"})),
        responses::with_usage(
            responses::text("custom"),
            Usage {
                input_tokens: 7,
                output_tokens: 3,
                ..Usage::default()
            },
        ),
    ])
    .with_default_model("scripted-large");
    assert_eq!(model.default_model().as_deref(), Some("scripted-large"));

    let first = model.chat(prompt("x")).await.unwrap();
    assert_eq!(first.id, "scripted_1");
    assert_eq!(first.model, "scripted-large");
    assert_eq!(first.stop_reason, StopReason::EndTurn);
    assert!(first.usage.input_tokens > 0 && first.usage.output_tokens > 0);

    let second = model.chat(prompt("y").with_model("other")).await.unwrap();
    assert_eq!(second.model, "other");
    assert_eq!(second.stop_reason, StopReason::ToolUse);
    assert_eq!(
        second.tool_calls(),
        [("call_1", "search", &json!({"q": "rust"}))]
    );

    let third = model.chat(prompt("z")).await.unwrap();
    assert_eq!(
        third.usage,
        Usage {
            input_tokens: 7,
            output_tokens: 3,
            ..Usage::default()
        }
    );
}

#[tokio::test]
async fn scripted_errors_are_returned_in_their_turn() {
    let model = ScriptedModel::from_results([
        Err(LlmError::Timeout("read".into())),
        Ok(responses::text("recovered")),
    ]);
    assert_eq!(
        model.chat(prompt("1")).await,
        Err(LlmError::Timeout("read".into()))
    );
    assert_eq!(model.chat(prompt("2")).await.unwrap().text(), "recovered");
}

#[tokio::test]
async fn scripted_closure_answers_from_the_request() {
    let model = ScriptedModel::from_fn(|request| {
        if request.tools.is_empty() {
            Ok(responses::text(format!(
                "echo: {}",
                request.messages[0].text()
            )))
        } else {
            Err(LlmError::InvalidRequest {
                status: 400,
                message: "no tools here".into(),
            })
        }
    });
    assert_eq!(model.chat(prompt("hi")).await.unwrap().text(), "echo: hi");
    let error = model
        .chat(prompt("hi").with_tool(tool("search")))
        .await
        .unwrap_err();
    assert!(matches!(
        error,
        LlmError::InvalidRequest { status: 400, .. }
    ));
    assert_eq!(model.call_count(), 2);

    // Queued responses go first, then the closure takes over again.
    model.push_response(responses::text("queued"));
    assert_eq!(model.chat(prompt("a")).await.unwrap().text(), "queued");
    assert_eq!(model.chat(prompt("b")).await.unwrap().text(), "echo: b");
}

#[tokio::test]
async fn scripted_default_stream_replays_the_response() {
    let model = ScriptedModel::new(vec![responses::tool_calls([
        ("c1", "a", json!({"x": 1})),
        ("c2", "b", json!({})),
    ])]);
    let response = collect_stream(model.chat_stream(prompt("go")).await.unwrap())
        .await
        .unwrap();
    assert_eq!(response.tool_calls().len(), 2);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(model.call_count(), 1);
}

// ---------------------------------------------------------------------------------------
// FixtureModel

#[tokio::test]
async fn fixture_routes_by_forced_tool_then_schema_then_tool_result_then_tools_then_default() {
    let fx = TempFixtures::new("routing");
    fx.text("forced", "by forced tool")
        .text("Answer", "by schema name")
        .text("search.after", "after search")
        .text("lookup", "by offered tool")
        .text("default", "by default");
    let model = FixtureModel::new(fx.path());

    let schema_format = ResponseFormat::JsonSchema {
        name: "Answer".into(),
        schema: json!({}),
        strict: true,
    };

    // (a) a forced tool wins over everything else.
    let forced = prompt("x")
        .with_tool(tool("forced"))
        .with_tool(tool("lookup"))
        .with_tool_choice(ToolChoice::Tool {
            name: "forced".into(),
        })
        .with_response_format(schema_format.clone());
    assert_eq!(model.chat(forced).await.unwrap().text(), "by forced tool");

    // (b) the schema name.
    let schema = prompt("x")
        .with_tool(tool("lookup"))
        .with_response_format(schema_format);
    assert_eq!(model.chat(schema).await.unwrap().text(), "by schema name");

    // (c) `<tool>.after` for the tool whose result the last message carries.
    let after = after_tool_call("search").with_tool(tool("lookup"));
    assert_eq!(model.chat(after).await.unwrap().text(), "after search");

    // (d) the offered tools, in order, first existing file winning.
    let offered = prompt("x")
        .with_tool(tool("nothing_recorded"))
        .with_tool(tool("lookup"));
    assert_eq!(model.chat(offered).await.unwrap().text(), "by offered tool");

    // (e) default.
    assert_eq!(
        model
            .chat(after_tool_call("unrecorded"))
            .await
            .unwrap()
            .text(),
        "by default"
    );

    assert_eq!(
        model.served_keys(),
        ["forced", "Answer", "search.after", "lookup", "default"]
    );
    assert_eq!(model.call_count(), 5);
}

#[tokio::test]
async fn fixture_reads_the_documented_file_format() {
    let fx = TempFixtures::new("format");
    fx.raw(
        "get_time",
        r#"{"id":"fx_1","model":"fixture","content":[{"type":"tool_use","id":"toolu_1","name":"get_time","input":{"timezone":"UTC"}}],"stop_reason":"tool_use","usage":{"input_tokens":120,"output_tokens":18}}"#,
    )
    .raw("minimal", r#"{"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn"}"#);
    let model = FixtureModel::new(fx.path());

    let response = model
        .chat(prompt("time?").with_tool(tool("get_time")))
        .await
        .unwrap();
    assert_eq!(response.id, "fx_1");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.tool_calls(),
        [("toolu_1", "get_time", &json!({"timezone": "UTC"}))]
    );
    assert_eq!(response.usage.input_tokens, 120);
    assert_eq!(response.usage.output_tokens, 18);

    let minimal = prompt("x")
        .with_model("claude-x")
        .with_tool(tool("minimal"));
    let response = model.chat(minimal).await.unwrap();
    assert_eq!(response.model, "claude-x");
    assert_eq!(response.text(), "hi");
}

#[tokio::test]
async fn fixture_without_a_matching_file_names_the_directory_and_every_key() {
    let fx = TempFixtures::new("missing");
    let model = FixtureModel::new(fx.path());
    let request = after_tool_call("search").with_tool(tool("lookup"));
    let LlmError::InvalidResponse(message) = model.chat(request).await.unwrap_err() else {
        unreachable!("expected InvalidResponse")
    };
    assert!(
        message.contains(&fx.path().display().to_string()),
        "{message}"
    );
    for key in ["search.after.json", "lookup.json", "default.json"] {
        assert!(message.contains(key), "{key} missing from: {message}");
    }
    assert_eq!(model.call_count(), 1);
    assert!(model.served_keys().is_empty());
}

#[tokio::test]
async fn fixture_with_a_malformed_file_names_the_file_and_the_parse_error() {
    let fx = TempFixtures::new("malformed");
    fx.raw(
        "default",
        r#"{"content":[{"type":"text","text":"hi"}],"stop_reason":42}"#,
    );
    let model = FixtureModel::new(fx.path());
    let LlmError::InvalidResponse(message) = model.chat(prompt("x")).await.unwrap_err() else {
        unreachable!("expected InvalidResponse")
    };
    assert!(message.contains("default.json"), "{message}");
    assert!(message.contains("stop_reason"), "{message}");

    fx.raw("default", "not json at all");
    let LlmError::InvalidResponse(message) = model.chat(prompt("x")).await.unwrap_err() else {
        unreachable!("expected InvalidResponse")
    };
    assert!(
        message.contains("default.json") && message.contains("expected"),
        "{message}"
    );
}

#[test]
fn fixture_routing_keys_are_listed_without_duplicates() {
    let request = after_tool_call("lookup")
        .with_tool(tool("lookup"))
        .with_tool(tool("search"))
        .with_tool_choice(ToolChoice::Tool {
            name: "search".into(),
        });
    assert_eq!(
        FixtureModel::routing_keys(&request),
        ["search", "lookup.after", "lookup", "default"]
    );
    assert!(
        FixtureModel::workspace_default()
            .dir()
            .ends_with("fixtures/llm")
    );
}

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

    let first = model.chat(request.clone()).await.unwrap();
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
    let second = model.chat(request).await.unwrap();
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
    let a = TestModel::new().chat(request.clone()).await.unwrap();
    let b = TestModel::new().chat(request).await.unwrap();
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
    let response = model.chat(forced).await.unwrap();
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
    let response = model.chat(request).await.unwrap();
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
    let response = only_b.chat(request.clone()).await.unwrap();
    assert_eq!(
        response.tool_calls(),
        [("test_call_1", "b", &json!({"query": "fixed"}))]
    );

    let none = TestModel::new()
        .with_call_tools(Vec::<String>::new())
        .with_final_text("done");
    let response = none.chat(request.clone()).await.unwrap();
    assert_eq!(
        (response.text().as_str(), response.stop_reason),
        ("done", StopReason::EndTurn)
    );

    let no_choice = request.clone().with_tool_choice(ToolChoice::None);
    let response = TestModel::new().chat(no_choice).await.unwrap();
    assert_eq!(response.text(), "success (no tool calls)");

    let plain = TestModel::new().with_default_model("test-small");
    let response = plain.chat(prompt("hi")).await.unwrap();
    assert_eq!(response.text(), "success (no tool calls)");
    assert_eq!(response.model, "test-small");

    let unknown = request.with_tool_choice(ToolChoice::Tool { name: "zzz".into() });
    let error = TestModel::new().chat(unknown).await.unwrap_err();
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
    let response = policy
        .run(None, |_| model.chat(prompt("hi")))
        .await
        .unwrap();
    assert_eq!(response.text(), "finally");
    assert_eq!(model.injected_faults(), 2);
    assert_eq!(model.call_count(), 3);
    // Only the call that got through reached the wrapped model.
    assert_eq!(model.inner().call_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn faulty_model_gives_up_with_the_injected_error_when_attempts_run_out() {
    let model = FaultyModel::new(TestModel::new()).fail_first(5, server_error());
    let result = RetryPolicy::default()
        .with_max_attempts(3)
        .run(None, |_| model.chat(prompt("hi")))
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
        outcomes.push(model.chat(prompt("x")).await.is_ok());
    }
    assert_eq!(outcomes, [true, true, false, true, true, false]);
    assert_eq!(model.injected_faults(), 2);
    assert!(model.chat_stream(prompt("x")).await.is_ok());
    assert!(model.chat_stream(prompt("x")).await.is_ok());
    assert!(matches!(
        model.chat_stream(prompt("x")).await,
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
            outcomes.push(model.chat(prompt("x")).await.is_err());
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
        assert!(never.chat(prompt("x")).await.is_ok());
        assert!(always.chat(prompt("x")).await.is_err());
    }
}

#[tokio::test(start_paused = true)]
async fn latency_model_delays_chat_and_stream_in_virtual_time() {
    let wall = std::time::Instant::now();
    let model = LatencyModel::new(TestModel::new(), Duration::from_secs(5));

    let start = tokio::time::Instant::now();
    model.chat(prompt("x")).await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(5));

    let start = tokio::time::Instant::now();
    let stream = model.chat_stream(prompt("x")).await.unwrap();
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
        model.chat(prompt("x")).await.unwrap();
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
    assert_eq!(mock.chat(request).await.unwrap().text(), "mocked");
    assert_eq!(mock.default_model().as_deref(), Some("mock-1"));
    mock.checkpoint();
}
