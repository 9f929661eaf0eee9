//! RecordedModel, through the public API: routing, ordinals, reactions, batches, usage,
//! errors and concurrency.
#![cfg(test)]

use agent_llm::testing::{RecordedModel, RecordingError};
use agent_llm::{
    ChatModel, ChatRequest, ContentBlock, LlmError, Message, ResponseFormat, Role, StopReason,
    StructuredOutputMode, ToolChoice, Usage, extract,
};
use serde_json::{Value, json};
use std::sync::Arc;

fn model(answers: Value) -> RecordedModel {
    RecordedModel::from_json(&json!({ "answers": answers }).to_string(), "test").unwrap()
}

fn forced(tool: &str, prompt: &str) -> ChatRequest {
    ChatRequest::from_prompt(prompt).with_tool_choice(ToolChoice::Tool { name: tool.into() })
}

fn agent(name: &str, opening: &str) -> ChatRequest {
    ChatRequest::from_prompt(opening).with_system(format!("You are the {name} of a small team."))
}

/// `request` continued with `response` and the tool results `results` (by call order).
fn continued(
    mut request: ChatRequest,
    response: &agent_llm::ChatResponse,
    results: &[&str],
) -> ChatRequest {
    request.messages.push(response.to_message());
    let blocks = response
        .tool_calls()
        .iter()
        .zip(results)
        .map(|((id, _, _), result)| ContentBlock::tool_result(*id, *result))
        .collect();
    request.messages.push(Message::new(Role::User, blocks));
    request
}

fn invalid_response(error: LlmError) -> String {
    match error {
        LlmError::InvalidResponse(message) => message,
        other => panic!("expected InvalidResponse, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Routing

#[test]
fn the_route_is_the_forced_tool_then_the_schema_then_the_agent_then_default() {
    let system = "You are the Explorer of a job site.";
    let plain = ChatRequest::from_prompt("look").with_system(system);
    assert_eq!(RecordedModel::route_of(&plain), "Explorer");
    let schema = plain
        .clone()
        .with_response_format(ResponseFormat::JsonSchema {
            name: "PageSummary".into(),
            schema: json!({"type": "object"}),
            strict: true,
        });
    assert_eq!(RecordedModel::route_of(&schema), "PageSummary");
    let tool = schema.with_tool_choice(ToolChoice::Tool {
        name: "classify".into(),
    });
    assert_eq!(RecordedModel::route_of(&tool), "classify");
    assert_eq!(
        RecordedModel::route_of(&ChatRequest::from_prompt("hi").with_system("Be brief.")),
        "default"
    );
    assert_eq!(
        RecordedModel::route_of(
            &ChatRequest::from_prompt("hi")
                .with_system("You are the ChangeAnalyzer: say what changed.")
        ),
        "ChangeAnalyzer"
    );
}

#[tokio::test]
async fn answers_are_routed_by_route_and_markers_in_user_text_only() {
    let model = model(json!([
        {"route": "ExtractedJob", "when": "\nURL: https://a.example/1\n", "output": {"title": "One"}},
        {"route": "ExtractedJob", "when": ["\nURL: https://a.example/2\n", "Company: Acme"], "output": {"title": "Two"}},
        {"route": "Greeter", "text": "Hello from the greeter."},
    ]));
    let one = model
        .chat(&forced(
            "ExtractedJob",
            "Company: Acme\nURL: https://a.example/1\n\nrest",
        ))
        .await
        .unwrap();
    assert_eq!(one.stop_reason, StopReason::ToolUse);
    assert_eq!(one.tool_calls()[0].1, "ExtractedJob");
    assert_eq!(one.tool_calls()[0].2, &json!({"title": "One"}));
    // Standing answers: the same key gets the same answer every time.
    let again = model
        .chat(&forced(
            "ExtractedJob",
            "Company: Acme\nURL: https://a.example/1\n",
        ))
        .await
        .unwrap();
    assert_eq!(again.tool_calls()[0].2, &json!({"title": "One"}));
    // Every marker must be there.
    let error = model
        .chat(&forced(
            "ExtractedJob",
            "Company: Globex\nURL: https://a.example/2\n",
        ))
        .await
        .unwrap_err();
    assert!(invalid_response(error).contains("route \"ExtractedJob\""));
    // A marker in a tool result does not count.
    let mut request = agent("Greeter", "hi");
    request.messages.push(Message::new(
        Role::Assistant,
        vec![ContentBlock::ToolUse {
            id: "t1".into(),
            name: "lookup".into(),
            input: json!({}),
        }],
    ));
    request.messages.push(Message::new(
        Role::User,
        vec![ContentBlock::tool_result(
            "t1",
            "URL: https://a.example/1\n",
        )],
    ));
    assert_eq!(
        model.chat(&request).await.unwrap().text(),
        "Hello from the greeter."
    );
    assert_eq!(model.served("ExtractedJob"), 2);
    assert_eq!(model.served("Greeter"), 1);
    assert_eq!(model.call_count(), 4);
}

#[tokio::test]
async fn a_structured_answer_without_a_forced_tool_is_json_text() {
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema, PartialEq)]
    struct Forecast {
        celsius: i32,
    }
    let model = model(json!([{"route": "Forecast", "output": {"celsius": 7},
        "usage": {"input_tokens": 300, "output_tokens": 12}}]));
    let json_mode = model
        .clone()
        .with_structured_output_mode(StructuredOutputMode::JsonSchema);
    assert_eq!(
        json_mode.structured_output_mode(),
        StructuredOutputMode::JsonSchema
    );
    let by_schema = extract::<Forecast, _>(&json_mode, ChatRequest::from_prompt("Oslo?"))
        .await
        .unwrap();
    assert_eq!(by_schema.value, Forecast { celsius: 7 });
    assert_eq!(json_mode.requests()[0].tool_choice, None);
    let by_tool = extract::<Forecast, _>(&model, ChatRequest::from_prompt("Oslo?"))
        .await
        .unwrap();
    assert_eq!(by_tool.value, Forecast { celsius: 7 });
    assert_eq!(by_tool.usage[0].input_tokens, 300);
    assert_eq!(model.requests_on("Forecast").len(), 2);
}

// ---------------------------------------------------------------------------------------
// Ordinals

#[tokio::test]
async fn n_counts_the_requests_on_each_route_separately() {
    let model = model(json!([
        {"route": "classify", "n": 1, "output": {"page": "search"}},
        {"route": "classify", "n": 2, "output": {"page": "details"}},
        {"route": "summarize", "n": 1, "output": {"summary": "a board"}},
    ]));
    let first = model.chat(&forced("classify", "a")).await.unwrap();
    let summary = model.chat(&forced("summarize", "s")).await.unwrap();
    let second = model.chat(&forced("classify", "b")).await.unwrap();
    assert_eq!(first.tool_calls()[0].2["page"], "search");
    assert_eq!(summary.tool_calls()[0].2["summary"], "a board");
    assert_eq!(second.tool_calls()[0].2["page"], "details");
    assert_eq!(model.remaining("classify"), 0);
    assert!(model.unused().is_empty());

    let third = model.chat(&forced("classify", "c")).await.unwrap_err();
    let message = invalid_response(third);
    assert!(
        message
            .contains("no recorded answer for route \"classify\" (request 3 on the route, turn 1)"),
        "{message}"
    );
    assert!(message.contains("(test)"), "{message}");
}

#[tokio::test]
async fn turn_follows_the_transcript_so_a_resumed_conversation_gets_the_next_answer() {
    let model = model(json!([
        {"route": "Planner", "when": "Phase: plan\n", "turn": 1,
         "tool_calls": [{"name": "get_weather", "input": {"city": "Oslo"}},
                        {"name": "get_time", "input": {}}]},
        {"route": "Planner", "when": "Phase: plan\n", "turn": 2, "text": "Pack a coat."},
        {"route": "Planner", "when": "Phase: review\n", "turn": 1, "text": "Looks fine."},
    ]));
    let opening = agent("Planner", "Phase: plan\nTrip: Oslo");
    let first = model.chat(&opening).await.unwrap();
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    let calls = first.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!((calls[0].0, calls[0].1), ("rec_1_0", "get_weather"));
    assert_eq!((calls[1].0, calls[1].1), ("rec_1_1", "get_time"));
    let next = continued(opening.clone(), &first, &["rain, 7 C", "noon"]);
    assert_eq!(RecordedModel::turn_of(&next), 2);

    // Another model (a restarted process) answers the saved transcript the same way.
    let restarted = planner_after_a_restart();
    assert_eq!(restarted.chat(&next).await.unwrap().text(), "Pack a coat.");
    assert_eq!(model.chat(&next).await.unwrap().text(), "Pack a coat.");
    // Another phase is another conversation.
    let review = agent("Planner", "Phase: review\n");
    assert_eq!(model.chat(&review).await.unwrap().text(), "Looks fine.");
    // A third turn was not recorded.
    let third = continued(next, &first, &["x", "y"]);
    let message = invalid_response(model.chat(&third).await.unwrap_err());
    assert!(
        message.contains("route \"Planner\" (request 4 on the route, turn 3)"),
        "{message}"
    );
}

/// A fresh model, as a restarted process builds, holding the plan's second turn.
fn planner_after_a_restart() -> RecordedModel {
    model(json!([
        {"route": "Planner", "when": "Phase: plan\n", "turn": 2, "text": "Pack a coat."},
    ]))
}

// ---------------------------------------------------------------------------------------
// Reactions

#[tokio::test]
async fn a_reaction_answers_a_tool_result_fills_its_templates_and_is_not_a_turn() {
    let model = model(json!([
        {"route": "Writer", "after": {"tool": "present", "contains": "\"status\":\"revise\""},
         "tool_calls": [{"name": "revise", "input": {"section": "{{result.section}}", "notes": ["{{result.feedback}}"]}}]},
        {"route": "Writer", "after": {"tool": "revise"},
         "tool_calls": [{"name": "present", "input": {"section": "{{result.name}}"}}]},
        {"route": "Writer", "turn": 1, "tool_calls": [{"name": "present", "input": {"section": "Summary"}}]},
        {"route": "Writer", "turn": 2, "text": "All approved."},
    ]));
    let opening = agent("Writer", "Write.");
    let first = model.chat(&opening).await.unwrap();
    let revise_please = r#"{"feedback":"Shorter.","section":"Summary","status":"revise"}"#;
    let asked = continued(opening, &first, &[revise_please]);
    let revise = model.chat(&asked).await.unwrap();
    let calls = revise.tool_calls();
    assert_eq!(calls[0].0, "rec_react_2_0");
    assert_eq!(calls[0].1, "revise");
    assert_eq!(
        calls[0].2,
        &json!({"section": "Summary", "notes": ["Shorter."]})
    );
    let revised = continued(asked, &revise, &[r#"{"name":"Summary","bullets":[]}"#]);
    assert_eq!(
        RecordedModel::turn_of(&revised),
        2,
        "the reaction is not a turn"
    );
    let present = model.chat(&revised).await.unwrap();
    assert_eq!(present.tool_calls()[0].1, "present");
    assert_eq!(present.tool_calls()[0].2, &json!({"section": "Summary"}));
    let approved = continued(revised, &present, &[r#"{"status":"approved"}"#]);
    assert_eq!(RecordedModel::turn_of(&approved), 2);
    assert_eq!(model.chat(&approved).await.unwrap().text(), "All approved.");
}

#[tokio::test]
async fn a_reaction_whose_template_the_result_cannot_fill_is_an_error() {
    let model = model(json!([
        {"route": "Writer", "after": {"tool": "present"},
         "tool_calls": [{"name": "revise", "input": {"feedback": "{{result.feedback}}"}}]},
        {"route": "Writer", "turn": 1, "tool_calls": [{"name": "present", "input": {}}]},
    ]));
    let opening = agent("Writer", "Write.");
    let first = model.chat(&opening).await.unwrap();
    let error = model
        .chat(&continued(opening, &first, &[r#"{"status":"revise"}"#]))
        .await
        .unwrap_err();
    let message = invalid_response(error);
    assert!(message.contains("{{result.feedback}}"), "{message}");
    assert!(message.contains("route \"Writer\""), "{message}");
}

// ---------------------------------------------------------------------------------------
// Batches

#[tokio::test]
async fn a_batch_holds_the_items_the_request_lists_in_its_order() {
    let model = model(json!([
        {"route": "Scores", "batch": {"into": "scores", "per": "\n- id: ", "items": [
            {"when": "\n- id: a1\n", "value": {"job_id": "a1", "score": 80}},
            {"when": "\n- id: b2\n", "value": {"job_id": "b2", "score": 35}},
            {"when": "\n- id: c3\n", "value": {"job_id": "c3", "score": 10}}
        ]}, "usage": {"input_tokens": 2600, "output_tokens": 700}},
    ]));
    let answer = model
        .chat(&forced(
            "Scores",
            "Score these.\n\n- id: c3\n  url: x\n\n- id: a1\n  url: y\n",
        ))
        .await
        .unwrap();
    assert_eq!(
        answer.tool_calls()[0].2,
        &json!({"scores": [{"job_id": "c3", "score": 10}, {"job_id": "a1", "score": 80}]})
    );
    assert_eq!(answer.usage.output_tokens, 700);
    let error = model
        .chat(&forced("Scores", "Score these.\n\n- id: a1\n\n- id: zz\n"))
        .await
        .unwrap_err();
    let message = invalid_response(error);
    assert!(message.contains("has 1 of the 2 items"), "{message}");
}

// ---------------------------------------------------------------------------------------
// Usage, model, log

#[tokio::test]
async fn usage_is_recorded_or_estimated_and_the_model_is_the_requests() {
    let model = model(json!([
        {"route": "Recorded", "text": "ok", "usage": {"input_tokens": 1850, "output_tokens": 95, "cache_read_input_tokens": 100}},
        {"route": "Estimated", "text": "a fairly long answer, long enough to count a few tokens"},
    ]))
    .with_default_model("dry-run");
    let recorded = model
        .chat(&agent("Recorded", "hi").with_model("claude-x"))
        .await
        .unwrap();
    assert_eq!(
        recorded.usage,
        Usage {
            input_tokens: 1850,
            output_tokens: 95,
            cache_read_input_tokens: 100,
            cache_creation_input_tokens: 0
        }
    );
    assert_eq!(recorded.model, "claude-x");
    let short = model.chat(&agent("Estimated", "hi")).await.unwrap();
    let long = model
        .chat(&agent("Estimated", &"a much longer prompt ".repeat(100)))
        .await
        .unwrap();
    assert_eq!(short.model, "dry-run");
    assert!(short.usage.input_tokens > 0 && short.usage.output_tokens > 5);
    assert!(long.usage.input_tokens > short.usage.input_tokens + 400);
    assert_eq!(long.usage.output_tokens, short.usage.output_tokens);
    assert_eq!(model.default_model().as_deref(), Some("dry-run"));
}

#[tokio::test]
async fn the_request_log_can_be_turned_off() {
    let answers = json!([{"route": "Greeter", "text": "hi"}]);
    let logged = model(answers.clone());
    let quiet = model(answers).with_request_log(false);
    for model in [&logged, &quiet] {
        model.chat(&agent("Greeter", "a")).await.unwrap();
        assert_eq!(model.call_count(), 1);
        assert_eq!(model.served("Greeter"), 1);
    }
    assert_eq!(logged.requests().len(), 1);
    assert_eq!(logged.requests_on("Greeter")[0].messages[0].text(), "a");
    assert!(quiet.requests().is_empty());
}

// ---------------------------------------------------------------------------------------
// Concurrency

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_keyed_requests_get_their_own_answers_whatever_the_scheduling() {
    let answers: Vec<Value> = (0..40)
        .map(|i| json!({"route": "ExtractedJob", "when": format!("\nURL: https://jobs.example/{i}\n"), "output": {"n": i}}))
        .collect();
    let model = Arc::new(model(Value::Array(answers)));
    let tasks: Vec<_> = (0..40)
        .rev()
        .map(|i| {
            let model = model.clone();
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                let request = forced(
                    "ExtractedJob",
                    &format!("Job\nURL: https://jobs.example/{i}\n\nbody"),
                );
                let answer = model.chat(&request).await.unwrap();
                (i, answer.tool_calls()[0].2["n"].as_u64().unwrap())
            })
        })
        .collect();
    for task in tasks {
        let (asked, got) = task.await.unwrap();
        assert_eq!(asked, got);
    }
    assert_eq!(model.served("ExtractedJob"), 40);
    assert!(model.unused().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_queued_requests_each_get_one_answer_once() {
    let answers: Vec<Value> = (1..=30)
        .map(|n| json!({"route": "classify", "n": n, "output": {"n": n}}))
        .collect();
    let model = Arc::new(model(Value::Array(answers)));
    let tasks: Vec<_> = (0..30)
        .map(|_| {
            let model = model.clone();
            tokio::spawn(async move {
                let answer = model.chat(&forced("classify", "page")).await.unwrap();
                answer.tool_calls()[0].2["n"].as_u64().unwrap()
            })
        })
        .collect();
    let mut got = Vec::new();
    for task in tasks {
        got.push(task.await.unwrap());
    }
    got.sort_unstable();
    assert_eq!(got, (1..=30).collect::<Vec<u64>>());
    assert_eq!(model.remaining("classify"), 0);
}

// ---------------------------------------------------------------------------------------
// Reading recordings

#[test]
fn bad_recordings_are_refused_with_the_answer_and_the_reason() {
    let cases = [
        (
            json!([{"route": "A", "n": 1, "turn": 1, "text": "x"}]),
            "not both",
        ),
        (json!([{"route": "A"}]), "no answer"),
        (
            json!([{"route": "A", "text": "x", "output": {}}]),
            "give one answer",
        ),
        (json!([{"route": "", "text": "x"}]), "route is empty"),
        (json!([{"route": "A", "n": 0, "text": "x"}]), "count from 1"),
        (
            json!([{"route": "A", "when": "", "text": "x"}]),
            "empty `when`",
        ),
    ];
    for (answers, expected) in cases {
        let error = RecordedModel::from_json(&json!({"answers": answers}).to_string(), "bad.json")
            .unwrap_err();
        assert!(
            matches!(error, RecordingError::Invalid { index: 0, .. }),
            "{error}"
        );
        let message = error.to_string();
        assert!(
            message.contains(expected) && message.starts_with("bad.json"),
            "{message}"
        );
    }
    let typo =
        RecordedModel::from_json(r#"{"answers": [{"route": "A", "txet": "x"}]}"#, "typo.json")
            .unwrap_err();
    assert!(matches!(typo, RecordingError::Parse { .. }), "{typo}");
    assert!(typo.to_string().contains("answers[0]"), "{typo}");
    let missing = RecordedModel::from_file("/no/such/recording.json").unwrap_err();
    assert!(
        missing.to_string().contains("/no/such/recording.json"),
        "{missing}"
    );
}

#[test]
fn a_recording_reads_from_a_file_and_names_it() {
    let path = std::env::temp_dir().join(format!("recorded-model-{}.json", std::process::id()));
    std::fs::write(
        &path,
        r#"{"about": "a test", "answers": [{"route": "Greeter", "text": "hi"}]}"#,
    )
    .unwrap();
    let model = RecordedModel::from_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(model.origin(), path.display().to_string());
    let message = invalid_response(model.respond(&agent("Other", "x")).unwrap_err());
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert_eq!(model.unused(), ["Greeter #0"]);
}
