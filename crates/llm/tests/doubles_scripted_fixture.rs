//! ScriptedModel and FixtureModel, through the public API.
#![cfg(test)]

use agent_llm::testing::{FixtureModel, ScriptedModel, responses};
use agent_llm::{
    ChatModel, LlmError, ResponseFormat, StopReason, ToolChoice, Usage, collect_stream,
};
use serde_json::json;

mod support;
use support::doubles::*;

// ---------------------------------------------------------------------------------------
// ScriptedModel

#[tokio::test]
async fn scripted_answers_in_order_records_requests_and_fails_clearly_when_exhausted() {
    let model = ScriptedModel::from_texts(["first", "second"]);
    let observer = model.clone();

    assert_eq!(model.chat(&prompt("one")).await.unwrap().text(), "first");
    assert_eq!(
        model
            .chat(&prompt("two").with_system("sys"))
            .await
            .unwrap()
            .text(),
        "second"
    );

    let error = model.chat(&prompt("three")).await.unwrap_err();
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

    let first = model.chat(&prompt("x")).await.unwrap();
    assert_eq!(first.id, "scripted_1");
    assert_eq!(first.model, "scripted-large");
    assert_eq!(first.stop_reason, StopReason::EndTurn);
    assert!(first.usage.input_tokens > 0 && first.usage.output_tokens > 0);

    let second = model.chat(&prompt("y").with_model("other")).await.unwrap();
    assert_eq!(second.model, "other");
    assert_eq!(second.stop_reason, StopReason::ToolUse);
    assert_eq!(
        second.tool_calls(),
        [("call_1", "search", &json!({"q": "rust"}))]
    );

    let third = model.chat(&prompt("z")).await.unwrap();
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
        model.chat(&prompt("1")).await,
        Err(LlmError::Timeout("read".into()))
    );
    assert_eq!(model.chat(&prompt("2")).await.unwrap().text(), "recovered");
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
    assert_eq!(model.chat(&prompt("hi")).await.unwrap().text(), "echo: hi");
    let error = model
        .chat(&prompt("hi").with_tool(tool("search")))
        .await
        .unwrap_err();
    assert!(matches!(
        error,
        LlmError::InvalidRequest { status: 400, .. }
    ));
    assert_eq!(model.call_count(), 2);

    // Queued responses go first, then the closure takes over again.
    model.push_response(responses::text("queued"));
    assert_eq!(model.chat(&prompt("a")).await.unwrap().text(), "queued");
    assert_eq!(model.chat(&prompt("b")).await.unwrap().text(), "echo: b");
}

#[tokio::test]
async fn scripted_default_stream_replays_the_response() {
    let model = ScriptedModel::new(vec![responses::tool_calls([
        ("c1", "a", json!({"x": 1})),
        ("c2", "b", json!({})),
    ])]);
    let response = collect_stream(model.chat_stream(&prompt("go")).await.unwrap())
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
    assert_eq!(model.chat(&forced).await.unwrap().text(), "by forced tool");

    // (b) the schema name.
    let schema = prompt("x")
        .with_tool(tool("lookup"))
        .with_response_format(schema_format);
    assert_eq!(model.chat(&schema).await.unwrap().text(), "by schema name");

    // (c) `<tool>.after` for the tool whose result the last message carries.
    let after = after_tool_call("search").with_tool(tool("lookup"));
    assert_eq!(model.chat(&after).await.unwrap().text(), "after search");

    // (d) the offered tools, in order, first existing file winning.
    let offered = prompt("x")
        .with_tool(tool("nothing_recorded"))
        .with_tool(tool("lookup"));
    assert_eq!(
        model.chat(&offered).await.unwrap().text(),
        "by offered tool"
    );

    // (e) default.
    assert_eq!(
        model
            .chat(&after_tool_call("unrecorded"))
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
        .chat(&prompt("time?").with_tool(tool("get_time")))
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
    let response = model.chat(&minimal).await.unwrap();
    assert_eq!(response.model, "claude-x");
    assert_eq!(response.text(), "hi");
}

#[tokio::test]
async fn fixture_without_a_matching_file_names_the_directory_and_every_key() {
    let fx = TempFixtures::new("missing");
    let model = FixtureModel::new(fx.path());
    let request = after_tool_call("search").with_tool(tool("lookup"));
    let LlmError::InvalidResponse(message) = model.chat(&request).await.unwrap_err() else {
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
    let LlmError::InvalidResponse(message) = model.chat(&prompt("x")).await.unwrap_err() else {
        unreachable!("expected InvalidResponse")
    };
    assert!(message.contains("default.json"), "{message}");
    assert!(message.contains("stop_reason"), "{message}");

    fx.raw("default", "not json at all");
    let LlmError::InvalidResponse(message) = model.chat(&prompt("x")).await.unwrap_err() else {
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
