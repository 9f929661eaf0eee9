//! Tools that act on one thing in turn: sequential calls, a call that ends the run (and
//! leaves the calls after it unrun), a run that stays ended once saved, and repeated
//! calls run again when an agent allows them.
#![cfg(test)]

use std::time::Duration;

use agent_llm::testing::{ScriptedModel, responses};
use agent_llm::{ChatRequest, ContentBlock, Message};
use agent_runtime::{
    AgentConfig, AgentContext, AgentIdentity, AgentLoop, AgentRun, Next, Session, StopCause,
    ToolError, tool,
};
use serde_json::json;

/// The browser the tools share: what was done to it, in order.
#[derive(Debug, Clone, Default)]
struct Page {
    actions: Vec<String>,
}

type Ctx = AgentContext<Page, ()>;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Act {
    /// What to do.
    action: String,
    /// How long it takes, in milliseconds.
    #[serde(default)]
    millis: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Done {
    why: String,
}

fn explorer() -> AgentConfig<Page, ()> {
    AgentConfig::new(AgentIdentity::new("explorer", "pages"), "Explore.")
        .with_tool(tool(
            "act",
            "Acts on the page.",
            |args: Act, ctx: Ctx| async move {
                tokio::time::sleep(Duration::from_millis(args.millis)).await;
                let seen = ctx.update_state(|page| {
                    page.actions.push(args.action.clone());
                    page.actions.len()
                });
                Ok::<_, ToolError>(json!({ "actions_so_far": seen }))
            },
        ))
        .with_tool(tool(
            "done",
            "Ends the exploration.",
            |args: Done, ctx: Ctx| async move {
                ctx.end_run(args.why);
                Ok::<_, ToolError>("ending")
            },
        ))
}

fn results(message: &Message) -> Vec<(String, bool)> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolResult {
                content, is_error, ..
            } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn sequential_calls_run_in_the_order_written_each_after_the_one_before() {
    let model = ScriptedModel::new(vec![
        responses::tool_calls([
            ("c1", "act", json!({"action": "open menu", "millis": 500})),
            ("c2", "act", json!({"action": "click jobs", "millis": 1})),
        ]),
        responses::text("Explored."),
    ]);
    let session = Session::new("s", Page::default());
    let agent = AgentLoop::new(explorer().with_sequential_tools(), model);
    let result = agent
        .run(
            &session.context(AgentIdentity::new("explorer", "pages")),
            "Go.",
        )
        .await;
    assert_eq!(result.stop, StopCause::Completed);
    // The slow first call finished before the second started.
    assert_eq!(
        session.state().snapshot().actions,
        ["open menu", "click jobs"]
    );
    let seen = results(&result.transcript[2]);
    assert_eq!(seen[1].0, r#"{"actions_so_far":2}"#);
}

#[tokio::test(start_paused = true)]
async fn a_call_that_ends_the_run_leaves_the_calls_after_it_unrun_and_the_model_unasked() {
    let model = ScriptedModel::new(vec![responses::tool_calls([
        ("c1", "act", json!({"action": "scroll"})),
        ("c2", "done", json!({"why": "the page changed"})),
        ("c3", "act", json!({"action": "click apply"})),
    ])]);
    let session = Session::new("s", Page::default());
    let agent = AgentLoop::new(explorer().with_sequential_tools(), model.clone());
    let result = agent
        .run(
            &session.context(AgentIdentity::new("explorer", "pages")),
            "Go.",
        )
        .await;
    assert_eq!(result.stop, StopCause::Ended("the page changed".into()));
    assert_eq!(model.call_count(), 1, "no model call after the run ended");
    assert_eq!(session.state().snapshot().actions, ["scroll"]);
    let seen = results(&result.transcript[2]);
    assert_eq!(seen.len(), 3, "every call has its result");
    assert!(!seen[1].1);
    assert!(
        seen[2].1
            && seen[2]
                .0
                .contains("an earlier call ended the run (the page changed)"),
        "{seen:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn concurrent_calls_all_run_and_the_run_ends_after_them() {
    let model = ScriptedModel::new(vec![responses::tool_calls([
        ("c1", "done", json!({"why": "finished"})),
        ("c2", "act", json!({"action": "scroll"})),
    ])]);
    let session = Session::new("s", Page::default());
    let result = AgentLoop::new(explorer(), model.clone())
        .run(
            &session.context(AgentIdentity::new("explorer", "pages")),
            "Go.",
        )
        .await;
    assert_eq!(result.stop, StopCause::Ended("finished".into()));
    assert_eq!(session.state().snapshot().actions, ["scroll"]);
    assert_eq!(model.call_count(), 1);
}

#[test]
fn an_ended_run_saved_and_read_back_stays_ended() {
    let mut run = AgentRun::new(ChatRequest::from_prompt("Go."), 10, None);
    run.end("handed to a person");
    let saved = serde_json::to_value(&run).unwrap();
    let mut restored: AgentRun = serde_json::from_value(saved).unwrap();
    assert!(restored.is_finished());
    assert!(matches!(restored.next_step(), Next::Done));
    assert_eq!(
        restored.stop_cause(),
        Some(&StopCause::Ended("handed to a person".into()))
    );
}

#[tokio::test(start_paused = true)]
async fn a_repeated_call_runs_again_when_the_agent_allows_it() {
    let next_page = || responses::tool_call("c", "act", json!({"action": "next page"}));
    let script = || {
        vec![
            next_page(),
            next_page(),
            responses::text("Read both pages."),
        ]
    };
    for (config, expected) in [
        (explorer(), vec!["next page"]),
        (
            explorer().with_repeated_calls(),
            vec!["next page", "next page"],
        ),
    ] {
        let session = Session::new("s", Page::default());
        let result = AgentLoop::new(config, ScriptedModel::new(script()))
            .run(
                &session.context(AgentIdentity::new("explorer", "pages")),
                "Go.",
            )
            .await;
        assert_eq!(result.stop, StopCause::Completed);
        assert_eq!(session.state().snapshot().actions, expected);
    }
}
