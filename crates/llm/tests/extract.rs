//! `extract::<T>()` against scripted models: both request styles, re-asking, failures.
#![cfg(test)]

use agent_llm::testing::{ScriptedModel, TestModel, responses};
use agent_llm::{
    ChatRequest, ContentBlock, ExtractOptions, LlmError, ResponseFormat, Role, StopReason,
    StructuredOutputMode, ToolChoice, extract, extract_with,
};
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
struct ChatAnswer {
    answer: String,
    confidence: f64,
    note: Option<String>,
}

#[tokio::test]
async fn forced_tool_answer_is_validated_and_corrected() {
    let model = ScriptedModel::new(vec![
        responses::tool_call("toolu_1", "ChatAnswer", json!({"answer": "4"})),
        responses::tool_call(
            "toolu_2",
            "ChatAnswer",
            json!({"answer": "4", "confidence": 0.9, "note": null}),
        ),
    ]);
    let out = extract::<ChatAnswer, _>(&model, ChatRequest::from_prompt("2+2?"))
        .await
        .unwrap();
    assert_eq!(
        out.value,
        ChatAnswer {
            answer: "4".into(),
            confidence: 0.9,
            note: None
        }
    );
    assert_eq!(out.attempts, 2);
    assert_eq!(out.usage.len(), 2);
    assert_eq!(out.total_usage(), out.usage[0] + out.usage[1]);

    let first = &model.requests()[0];
    assert_eq!(
        first.tool_choice,
        Some(ToolChoice::Tool {
            name: "ChatAnswer".into()
        })
    );
    // The tool carries the name; the schema is sent without a title.
    assert_eq!(first.tools[0].name, "ChatAnswer");
    assert!(first.tools[0].input_schema.get("title").is_none());
    let retry = &model.requests()[1];
    assert_eq!(
        retry.messages.len(),
        3,
        "question, rejected answer, correction"
    );
    assert_eq!(retry.messages[1].role, Role::Assistant);
    insta::assert_json_snapshot!("extract_tool_correction", retry.messages[2]);
    let ContentBlock::ToolResult {
        tool_use_id,
        is_error,
        content,
    } = &retry.messages[2].content[0]
    else {
        panic!("the correction answers the rejected tool call");
    };
    assert_eq!(tool_use_id, "toolu_1");
    assert!(is_error);
    assert!(content.contains("missing field `confidence`"), "{content}");
}

#[tokio::test]
async fn json_schema_mode_sends_a_strict_schema_and_reads_fenced_json() {
    let model = ScriptedModel::new(vec![responses::text(
        "Here you go:\n```json\n{\"answer\": \"yes\", \"confidence\": 1, \"note\": \"sure\"}\n```",
    )])
    .with_structured_output_mode(StructuredOutputMode::JsonSchema);
    let out = extract::<ChatAnswer, _>(&model, ChatRequest::from_prompt("ok?"))
        .await
        .unwrap();
    assert_eq!(out.value.note.as_deref(), Some("sure"));
    let request = model.last_request().unwrap();
    assert!(request.tools.is_empty());
    let Some(ResponseFormat::JsonSchema {
        name,
        schema,
        strict,
    }) = request.response_format
    else {
        panic!("a json_schema response format is sent");
    };
    assert_eq!(name, "ChatAnswer");
    assert!(strict);
    assert_eq!(schema["required"], json!(["answer", "confidence", "note"]));
    assert_eq!(schema["additionalProperties"], json!(false));
}

#[tokio::test]
async fn text_answers_are_corrected_with_a_user_message() {
    let model = ScriptedModel::from_texts([
        "I think it is four.",
        "{\"answer\": \"4\", \"confidence\": 0.8}",
    ])
    .with_structured_output_mode(StructuredOutputMode::JsonSchema);
    let out = extract::<ChatAnswer, _>(&model, ChatRequest::from_prompt("2+2?"))
        .await
        .unwrap();
    assert_eq!(out.attempts, 2);
    let correction = &model.requests()[1].messages[2];
    assert_eq!(correction.role, Role::User);
    assert!(
        correction.text().contains("no JSON found"),
        "{}",
        correction.text()
    );
}

#[tokio::test]
async fn exhausted_attempts_keep_every_usage() {
    let model = ScriptedModel::from_texts(["nope", "still no", "never"]);
    let options = ExtractOptions {
        max_attempts: 3,
        ..ExtractOptions::default()
    };
    let error = extract_with::<ChatAnswer, _>(&model, ChatRequest::from_prompt("?"), options)
        .await
        .unwrap_err();
    assert_eq!(error.attempts, 3);
    assert_eq!(error.usage.len(), 3);
    assert!(matches!(error.error, LlmError::InvalidResponse(_)));
    assert_eq!(model.call_count(), 3);
}

#[tokio::test]
async fn a_provider_error_ends_extraction_with_the_usage_so_far() {
    let model = ScriptedModel::from_results([
        Ok(responses::text("not json")),
        Err(LlmError::Auth {
            status: 401,
            message: "bad key".into(),
        }),
    ]);
    let error = extract::<ChatAnswer, _>(&model, ChatRequest::from_prompt("?"))
        .await
        .unwrap_err();
    assert_eq!(error.attempts, 2);
    assert_eq!(error.usage.len(), 1);
    assert!(matches!(error.error, LlmError::Auth { .. }));
}

#[tokio::test]
async fn a_refusal_is_reported_not_parsed() {
    let mut refusal = responses::text("{\"answer\": \"no\", \"confidence\": 1}");
    refusal.stop_reason = StopReason::Refusal;
    let model = ScriptedModel::new(vec![refusal]);
    let options = ExtractOptions {
        max_attempts: 1,
        ..ExtractOptions::default()
    };
    let error = extract_with::<ChatAnswer, _>(&model, ChatRequest::from_prompt("?"), options)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("refused"), "{error}");
}

#[tokio::test]
async fn test_model_satisfies_extract_in_both_modes() {
    for mode in [
        StructuredOutputMode::ForcedTool,
        StructuredOutputMode::JsonSchema,
    ] {
        let model = TestModel::new().with_structured_output_mode(mode);
        let out = extract::<ChatAnswer, _>(&model, ChatRequest::from_prompt("?"))
            .await
            .unwrap();
        assert_eq!(out.attempts, 1, "{mode:?}");
    }
}

#[tokio::test]
async fn json_object_mode_puts_the_schema_in_the_system_prompt() {
    let model =
        ScriptedModel::from_texts(["{\"answer\": \"4\", \"confidence\": 0.7, \"note\": null}"])
            .with_structured_output_mode(StructuredOutputMode::JsonObject);
    let request = ChatRequest::from_prompt("2+2?").with_system("You are a calculator.");
    let out = extract::<ChatAnswer, _>(&model, request).await.unwrap();
    assert_eq!(out.value.answer, "4");
    let sent = model.last_request().unwrap();
    assert_eq!(sent.response_format, Some(ResponseFormat::JsonObject));
    assert!(sent.tools.is_empty() && sent.tool_choice.is_none());
    insta::assert_snapshot!("extract_json_object_system_prompt", sent.system.unwrap());
}

#[tokio::test]
async fn an_answer_cut_off_at_max_tokens_is_asked_again_with_more_room() {
    let cut = agent_llm::ChatResponse {
        stop_reason: StopReason::MaxTokens,
        ..responses::text("{\"answer\": \"a very long")
    };
    let model = ScriptedModel::new(vec![
        cut.clone(),
        cut,
        responses::text("{\"answer\": \"short\", \"confidence\": 1}"),
    ])
    .with_structured_output_mode(StructuredOutputMode::JsonSchema);
    let request = ChatRequest::from_prompt("Describe it.").with_max_tokens(100);
    let out = extract::<ChatAnswer, _>(&model, request).await.unwrap();
    assert_eq!(out.value.answer, "short");
    let limits: Vec<Option<u32>> = model.requests().iter().map(|r| r.max_tokens).collect();
    assert_eq!(limits, [Some(100), Some(200), Some(400)]);
    // The cut-off answers are not fed back: the same question is asked with more room.
    assert!(model.requests().iter().all(|r| r.messages.len() == 1));
}
