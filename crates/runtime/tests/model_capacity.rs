//! Agents on a model server with one slot: time queued for it is not counted against a
//! tool's round timeout, and the session reports the calls as progress while they run.
#![cfg(test)]

use agent_llm::capacity::{CallEvent, CapacityLimited, ModelCapacity};
use agent_llm::testing::{LatencyModel, ScriptedModel, responses};
use agent_llm::{ChatModel, ChatRequest};
use agent_runtime::{
    AgentConfig, AgentContext, AgentIdentity, AgentLoop, CollectingSink, CostLimits, CostMeter,
    MeteredModel, ModelProgress, Session, StopCause, ToolError, tool,
};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

type Ctx = AgentContext<(), String>;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Section {
    name: String,
}

/// An agent whose `write` tool asks a slow model (20 s a call) on a one-slot server, and
/// whose round timeout is 30 s.
fn writer(server: Arc<dyn ChatModel>) -> AgentConfig<(), String> {
    AgentConfig::new(AgentIdentity::new("craftsman", "resume"), "Write sections.")
        .with_tool(tool(
            "write",
            "Writes one section.",
            move |args: Section, ctx: Ctx| {
                let server = server.clone();
                async move {
                    let metered = MeteredModel::new(server, ctx.meter().unwrap().clone());
                    let draft = metered
                        .chat(&ChatRequest::from_prompt(format!("Write {}", args.name)))
                        .await
                        .map_err(|e| ToolError::Failed(e.to_string()))?;
                    Ok::<_, ToolError>(draft.text())
                }
            },
        ))
        .with_round_timeout(Duration::from_secs(30))
}

/// The tools' model: 20 s a call, on `slots`.
fn drafting_model(slots: &ModelCapacity, answers: usize) -> Arc<dyn ChatModel> {
    let drafts = ScriptedModel::from_texts((0..answers).map(|n| format!("draft {n}")));
    Arc::new(CapacityLimited::new(
        LatencyModel::new(drafts, Duration::from_secs(20)),
        slots.clone(),
    ))
}

fn progress_line(agent: &AgentIdentity, progress: &ModelProgress) -> Option<String> {
    let call = match &progress.call {
        CallEvent::Queued => "queued".to_owned(),
        CallEvent::Dequeued { .. } => return None,
        CallEvent::Started => "started".to_owned(),
        CallEvent::Running { elapsed } => format!("running {}s", elapsed.as_secs()),
        CallEvent::Finished { elapsed, .. } => format!("finished in {}s", elapsed.as_secs()),
        CallEvent::Failed { error, .. } => format!("failed: {error}"),
    };
    Some(format!(
        "{}: {call} ({} calls, {} tokens so far)",
        agent.name,
        progress.calls_so_far.unwrap_or_default(),
        progress.tokens_so_far.unwrap_or_default()
    ))
}

#[tokio::test(start_paused = true)]
async fn tool_calls_queued_behind_a_one_slot_server_are_not_timed_out() {
    // One server slot, shared by the loop's model calls and its tools'.
    let slots = ModelCapacity::new(1);
    let loop_model = CapacityLimited::new(
        ScriptedModel::new(vec![
            responses::tool_calls(vec![
                ("c1", "write", json!({"name": "summary"})),
                ("c2", "write", json!({"name": "experience"})),
                ("c3", "write", json!({"name": "skills"})),
            ]),
            responses::text("All three written."),
        ]),
        slots.clone(),
    );
    let events = CollectingSink::default();
    let session = Session::new("s", ())
        .with_events(Arc::new(events.clone()))
        .with_meter(CostMeter::new(CostLimits::default()))
        .with_progress(progress_line);
    let agent = AgentLoop::new(writer(drafting_model(&slots, 3)), loop_model);
    let result = agent
        .run(
            &session.context(agent.identity().clone()),
            "Write the resume",
        )
        .await;

    // The third call queued 40 s and ran 20 s: 60 s in all, past the 30 s round timeout,
    // yet only its 20 s of work counted.
    assert_eq!(result.stop, StopCause::Completed);
    let results: Vec<String> = result.transcript[2]
        .content
        .iter()
        .map(|block| format!("{block:?}"))
        .collect();
    assert!(results.iter().all(|r| r.contains("draft")), "{results:?}");
    let lines = events.events();
    assert_eq!(
        lines,
        [
            "craftsman: started (0 calls, 0 tokens so far)",
            "craftsman: finished in 0s (1 calls, 38 tokens so far)",
            "craftsman: started (1 calls, 38 tokens so far)",
            "craftsman: queued (1 calls, 38 tokens so far)",
            "craftsman: queued (1 calls, 38 tokens so far)",
            "craftsman: running 15s (1 calls, 38 tokens so far)",
            "craftsman: finished in 20s (2 calls, 60 tokens so far)",
            "craftsman: started (2 calls, 60 tokens so far)",
            "craftsman: running 15s (2 calls, 60 tokens so far)",
            "craftsman: finished in 20s (3 calls, 82 tokens so far)",
            "craftsman: started (3 calls, 82 tokens so far)",
            "craftsman: running 15s (3 calls, 82 tokens so far)",
            "craftsman: finished in 20s (4 calls, 104 tokens so far)",
            "craftsman: started (4 calls, 104 tokens so far)",
            "craftsman: finished in 0s (5 calls, 129 tokens so far)",
        ]
    );
}
