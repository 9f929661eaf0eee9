//! How a turn that ends before the model answered reads to the user: it says why, keeps
//! what the tools did, and finishes as `length`, never as an error or a raw tool call.
#![cfg(test)]

mod common;

use std::sync::Arc;

use agent_llm::ChatModel;
use agent_llm::testing::{ScriptedModel, dry_run_router, responses};
use agent_server::chat::{ChatReply, FinishReason};
use common::{Conversation, services};
use job_agent_chat::JobAgentChat;
use serde_json::json;

async fn turn(model: ScriptedModel) -> ChatReply {
    let (services, _replay) = services().await;
    let model: Arc<dyn ChatModel> = Arc::new(model);
    let chat = JobAgentChat::new(services, model, dry_run_router());
    Conversation::new("ada")
        .say(&chat, "show my saved jobs")
        .await
}

fn route() -> agent_llm::ChatResponse {
    responses::tool_call("r", "Route", json!({"intent": "JOB_SEARCH"}))
}

#[tokio::test]
async fn a_model_that_writes_tool_calls_instead_of_answering_gets_a_plain_explanation() {
    let list = || responses::tool_call("l", "list_jobs", json!({}));
    let written = || responses::text(r#"{"name": "list_jobs", "arguments": {"status": "saved"}}"#);
    // The same call twice (the second refused), then, asked for words, calls as text twice.
    let reply = turn(ScriptedModel::new(vec![
        route(),
        list(),
        list(),
        written(),
        written(),
    ]))
    .await;
    assert_eq!(reply.finish, FinishReason::Length);
    assert!(!reply.text.contains("list_jobs"), "{}", reply.text);
    assert!(
        reply.text.contains(
            "I stopped before finishing: the model kept asking for tools instead of answering"
        ),
        "{}",
        reply.text
    );
}

/// `count` list_jobs calls, no two in a row alike (none is refused as a repeat).
fn listings(count: usize) -> impl Iterator<Item = agent_llm::ChatResponse> {
    let statuses = ["new", "saved", "applied", "archived"];
    (0..count).map(move |n| {
        responses::tool_call(
            format!("s{n}"),
            "list_jobs",
            json!({"status": statuses[n % 4]}),
        )
    })
}

#[tokio::test]
async fn a_turn_at_the_step_limit_says_so() {
    // Eight calls, the last one made although the last step offers no tools (as a model that ignores the tool choice would).
    let reply = turn(ScriptedModel::new(
        std::iter::once(route()).chain(listings(8)).collect(),
    ))
    .await;
    assert_eq!(reply.finish, FinishReason::Length);
    assert!(
        reply
            .text
            .contains("I stopped before finishing: it took more than 8 steps"),
        "{}",
        reply.text
    );
}

#[tokio::test]
async fn a_model_still_calling_tools_at_the_last_step_answers_from_their_results() {
    let answer = responses::text("You have no jobs yet: shall I search?");
    let model = ScriptedModel::new(
        std::iter::once(route())
            .chain(listings(7))
            .chain([answer])
            .collect(),
    );
    let reply = turn(model.clone()).await;
    assert_eq!(reply.finish, FinishReason::Stop);
    assert_eq!(reply.text, "You have no jobs yet: shall I search?");
    // The router's call, seven with tools, then the eighth and last without.
    let requests = model.requests();
    assert_eq!(requests.len(), 9);
    assert_eq!(requests[8].tool_choice, Some(agent_llm::ToolChoice::None));
    assert!(requests[7].tool_choice.is_none());
}
