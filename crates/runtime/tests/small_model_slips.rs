//! What a small local model gets wrong, and how the loop copes: answers cut off at the
//! output-token limit, tool calls written as text, the same call made again and again.
#![cfg(test)]

use agent_llm::testing::{ScriptedModel, responses};
use agent_llm::{ChatResponse, ContentBlock, Role, StopReason, ToolChoice};
use agent_runtime::{
    AgentConfig, AgentContext, AgentIdentity, AgentLoop, Session, StopCause, ToolError, tool,
};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

type Ctx = AgentContext<(), ()>;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    city: String,
}

/// An agent with one `lookup` tool that counts its runs.
fn agent(model: ScriptedModel, runs: Arc<AtomicUsize>) -> AgentLoop<(), (), ScriptedModel> {
    AgentLoop::new(guide(runs), model)
}

fn guide(runs: Arc<AtomicUsize>) -> AgentConfig<(), ()> {
    AgentConfig::new(AgentIdentity::new("guide", "test"), "Answer about cities.").with_tool(tool(
        "lookup",
        "Facts about a city.",
        move |args: Lookup, _ctx: Ctx| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>(format!("{} has 1M people", args.city))
            }
        },
    ))
}

fn cut_off(text: &str) -> ChatResponse {
    ChatResponse {
        stop_reason: StopReason::MaxTokens,
        ..responses::text(text)
    }
}

async fn run(agent: &AgentLoop<(), (), ScriptedModel>) -> agent_runtime::AgentResult {
    let session = Session::new("s", ());
    agent
        .run(
            &session.context(agent.identity().clone()),
            "Tell me about Oslo",
        )
        .await
}

#[tokio::test]
async fn a_cut_off_answer_is_asked_again_shorter() {
    let model = ScriptedModel::new(vec![
        cut_off("Oslo is the capital of Norway, founded in 1040, and its"),
        responses::text("Oslo: capital of Norway."),
    ]);
    let result = run(&agent(model.clone(), Arc::default())).await;
    assert_eq!(result.stop, StopCause::Completed);
    assert_eq!(
        result.final_text.as_deref(),
        Some("Oslo: capital of Norway.")
    );
    let second = &model.requests()[1];
    let note = second.messages.last().unwrap();
    assert_eq!(note.role, Role::User);
    assert!(
        note.text().contains("cut off at the output-token limit"),
        "{}",
        note.text()
    );
}

#[tokio::test]
async fn answers_cut_off_three_times_in_a_row_stop_the_run_with_the_reason() {
    let model = ScriptedModel::new(vec![cut_off("a"), cut_off("b"), cut_off("c")]);
    let result = run(&agent(model, Arc::default())).await;
    assert_eq!(
        result.stop,
        StopCause::CutOff {
            max_tokens: Some(4096)
        }
    );
    assert_eq!(result.rounds_used, 3);
    assert!(result.final_text.is_none());
    // Everything the model said is kept.
    assert_eq!(result.transcript.len(), 6);
}

#[tokio::test]
async fn a_tool_call_written_as_text_is_run() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new(vec![
        responses::text(
            "<tool_call>\n{\"name\": \"lookup\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
        ),
        responses::text("Oslo has a million people."),
    ]);
    let result = run(&agent(model, runs.clone())).await;
    assert_eq!(result.stop, StopCause::Completed);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(matches!(
        &result.transcript[1].content[..],
        [ContentBlock::ToolUse { name, .. }] if name == "lookup"
    ));
}

#[tokio::test]
async fn the_same_call_made_again_right_after_is_not_run_twice() {
    let runs = Arc::new(AtomicUsize::new(0));
    let call = || responses::tool_call("c", "lookup", json!({"city": "Oslo"}));
    let model = ScriptedModel::new(vec![
        call(),
        call(),
        responses::tool_call("d", "lookup", json!({"city": "Bergen"})),
        responses::text("Done."),
    ]);
    let result = run(&agent(model.clone(), runs.clone())).await;
    assert_eq!(result.stop, StopCause::Completed);
    // After a turn that only repeated, the next answer is asked for without tools; the
    // one after gets the tools back.
    let choices: Vec<Option<ToolChoice>> = model
        .requests()
        .iter()
        .map(|r| r.tool_choice.clone())
        .collect();
    assert_eq!(choices, [None, None, Some(ToolChoice::None), None]);
    // Oslo once, the repeat refused, then Bergen.
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let refused = &result.transcript[4].content[0];
    assert!(
        matches!(refused, ContentBlock::ToolResult { is_error: true, content, .. } if content.contains("same lookup call")),
        "{refused:?}"
    );
}

#[tokio::test]
async fn calls_beyond_the_per_turn_cap_are_told_to_wait_for_the_next_turn() {
    let runs = Arc::new(AtomicUsize::new(0));
    let cities = ["Oslo", "Bergen", "Tromso", "Bodo", "Alta"];
    let model = ScriptedModel::new(vec![
        responses::tool_calls(
            cities
                .iter()
                .enumerate()
                .map(|(i, city)| (format!("c{i}"), "lookup", json!({ "city": city }))),
        ),
        responses::text("Done."),
    ]);
    let capped = AgentLoop::new(guide(runs.clone()).with_max_calls_per_turn(2), model);
    let result = run(&capped).await;
    assert_eq!(result.stop, StopCause::Completed);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let results = &result.transcript[2].content;
    assert_eq!(results.len(), 5, "every call gets a result");
    let refused = results
        .iter()
        .filter(|block| matches!(block, ContentBlock::ToolResult { is_error: true, content, .. } if content.contains("at most 2 tool calls")))
        .count();
    assert_eq!(refused, 3);
}

fn written_call() -> ChatResponse {
    responses::text(
        "<tool_call>{\"name\": \"lookup\", \"arguments\": {\"city\": \"Bergen\"}}</tool_call>",
    )
}

#[tokio::test]
async fn an_answer_asked_for_without_tools_that_writes_a_call_is_asked_for_again_in_words() {
    let runs = Arc::new(AtomicUsize::new(0));
    let call = || responses::tool_call("c", "lookup", json!({"city": "Oslo"}));
    let model = ScriptedModel::new(vec![
        call(),
        call(),
        written_call(),
        responses::text("Oslo has about a million people."),
    ]);
    let result = run(&agent(model.clone(), runs.clone())).await;
    assert_eq!(result.stop, StopCause::Completed);
    assert_eq!(
        result.final_text.as_deref(),
        Some("Oslo has about a million people.")
    );
    // The written call (Bergen) was not run.
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let requests = model.requests();
    let choices: Vec<Option<ToolChoice>> = requests.iter().map(|r| r.tool_choice.clone()).collect();
    assert_eq!(
        choices,
        [None, None, Some(ToolChoice::None), Some(ToolChoice::None)]
    );
    let note = requests[3].messages.last().unwrap();
    assert_eq!(note.role, Role::User);
    assert!(note.text().contains("in plain words"), "{}", note.text());
}

#[tokio::test]
async fn a_model_that_keeps_writing_calls_when_asked_for_words_stops_without_an_answer() {
    let runs = Arc::new(AtomicUsize::new(0));
    let call = || responses::tool_call("c", "lookup", json!({"city": "Oslo"}));
    let model = ScriptedModel::new(vec![call(), call(), written_call(), written_call()]);
    let result = run(&agent(model.clone(), runs.clone())).await;
    assert_eq!(result.stop, StopCause::NoAnswer);
    assert_eq!(result.final_text, None);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(result.rounds_used, 4);
    // What was gathered is kept: the first call's result is in the transcript.
    let gathered = &result.transcript[2].content[0];
    assert!(
        matches!(gathered, ContentBlock::ToolResult { is_error: false, content, .. } if content.contains("1M people")),
        "{gathered:?}"
    );
}

#[tokio::test]
async fn with_an_answer_at_the_last_round_a_model_still_calling_tools_answers_from_their_results() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new(vec![
        responses::tool_call("a", "lookup", json!({"city": "Oslo"})),
        responses::tool_call("b", "lookup", json!({"city": "Bergen"})),
        responses::text("Oslo and Bergen have 1M people each."),
    ]);
    let config = guide(runs.clone())
        .with_max_rounds(3)
        .with_answer_at_last_round();
    let result = run(&AgentLoop::new(config, model.clone())).await;
    assert_eq!(result.stop, StopCause::Completed);
    assert_eq!(
        result.final_text.as_deref(),
        Some("Oslo and Bergen have 1M people each.")
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let requests = model.requests();
    let choices: Vec<Option<ToolChoice>> = requests.iter().map(|r| r.tool_choice.clone()).collect();
    assert_eq!(choices, [None, None, Some(ToolChoice::None)]);
    // The note rides in the message with Bergen's result.
    let last = requests[2].messages.last().unwrap();
    assert!(matches!(last.content[0], ContentBlock::ToolResult { .. }));
    assert!(last.text().contains("This is your last step"), "{last:?}");
}

#[tokio::test]
async fn without_it_the_run_stops_at_the_round_limit_with_the_tools_offered_throughout() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new(vec![
        responses::tool_call("a", "lookup", json!({"city": "Oslo"})),
        responses::tool_call("b", "lookup", json!({"city": "Bergen"})),
    ]);
    let result = run(&AgentLoop::new(
        guide(runs.clone()).with_max_rounds(2),
        model.clone(),
    ))
    .await;
    assert_eq!(result.stop, StopCause::MaxRounds);
    assert_eq!(result.final_text, None);
    assert!(model.requests().iter().all(|r| r.tool_choice.is_none()));
}
