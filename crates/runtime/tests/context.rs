//! What tools can do through their context: events, state, gates, messages, tiers, cost.
#![cfg(test)]

use agent_llm::testing::{ScriptedModel, responses};
use agent_llm::{ModelRouter, ModelTier, ProviderKind, Usage};
use agent_runtime::bus::{AgentBus, InMemoryBus, MessageType};
use agent_runtime::{
    AgentConfig, AgentContext, AgentIdentity, AgentLoop, CollectingSink, CostLimits, CostMeter,
    Gate, GateError, Session, ToolError, tool,
};
use futures::StreamExt;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

#[derive(Debug, Clone, Default, PartialEq)]
struct Draft {
    sections: Vec<String>,
    approved: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Event {
    SectionWritten(String),
}

type Ctx = AgentContext<Draft, Event>;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Write {
    section: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Present {
    summary: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Review {
    approved: bool,
}

/// What the user is shown: the draft's summary.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Summary {
    summary: String,
}

const DRAFT_REVIEW: Gate<Summary, Review> = Gate::new("draft_review");

fn writer() -> AgentConfig<Draft, Event> {
    AgentConfig::new(AgentIdentity::new("writer", "resume"), "You write resumes.")
        .with_tool(tool(
            "write_section",
            "Writes a section.",
            |args: Write, ctx: Ctx| async move {
                ctx.update_state(|draft| draft.sections.push(args.section.clone()));
                ctx.emit(Event::SectionWritten(args.section.clone()));
                ctx.send_message(
                    "producer",
                    MessageType::Handoff,
                    json!({ "section": args.section }),
                )
                .await
                .map_err(|e| ToolError::failed(e.to_string()))?;
                Ok::<_, ToolError>("written")
            },
        ))
        .with_tool(tool(
            "present_to_user",
            "Shows the draft and waits for approval.",
            |args: Present, ctx: Ctx| async move {
                let review = ctx
                    .ask(
                        &DRAFT_REVIEW,
                        &Summary {
                            summary: args.summary,
                        },
                    )
                    .await?;
                ctx.update_state(|draft| draft.approved = review.approved);
                Ok::<_, ToolError>(if review.approved {
                    "approved"
                } else {
                    "rejected"
                })
            },
        ))
}

#[tokio::test]
async fn tools_change_state_emit_events_wait_at_gates_and_send_messages() {
    let events = CollectingSink::default();
    let bus = Arc::new(InMemoryBus::new());
    let mut producer_inbox = bus.subscribe("resume", "producer").await.unwrap();
    let session = Session::new("session-1", Draft::default())
        .with_user("user-1")
        .with_events(Arc::new(events.clone()))
        .with_bus(bus.clone());
    let model = ScriptedModel::new(vec![
        responses::tool_call("c1", "write_section", json!({"section": "Summary"})),
        responses::tool_call("c2", "present_to_user", json!({"summary": "1 section"})),
        responses::text("The draft is approved."),
    ]);

    // The "user": answers the gate as soon as it is pending, as a browser would.
    let gates = session.gates().clone();
    let answering = tokio::spawn(async move {
        let gate = gates.next_pending().await;
        assert_eq!(gate.id, "writer:draft_review:1");
        assert_eq!(gate.payload, json!({"summary": "1 section"}));
        gates.respond(&gate.id, json!({"approved": true})).unwrap();
        gate.id
    });

    let ctx = session.context(AgentIdentity::new("writer", "resume"));
    let result = AgentLoop::new(writer(), model)
        .run(&ctx, "Write my resume.")
        .await;
    let gate_id = answering.await.unwrap();

    assert!(result.is_complete(), "{:?}", result.stop);
    assert_eq!(
        session.state().snapshot(),
        Draft {
            sections: vec!["Summary".into()],
            approved: true
        }
    );
    assert_eq!(
        events.events(),
        vec![Event::SectionWritten("Summary".into())]
    );
    assert_eq!(result.messages_out.len(), 1);
    assert_eq!(result.messages_out[0].to, "producer");
    let delivered = producer_inbox.next().await.unwrap();
    assert_eq!(delivered.id, result.messages_out[0].id);
    assert_eq!(delivered.payload, json!({"section": "Summary"}));
    assert_eq!(
        session
            .gates()
            .respond(&gate_id, json!({"approved": false})),
        Err(GateError::AlreadyAnswered(gate_id))
    );
    assert_eq!(ctx.session_id(), "session-1");
    assert_eq!(ctx.user_id(), "user-1");
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_gate_times_out_and_the_model_is_told() {
    let config = AgentConfig::new(AgentIdentity::new("asker", "demo"), "Ask.").with_tool(tool(
        "ask",
        "Asks the user.",
        |_: Present, ctx: AgentContext<(), ()>| async move {
            const CONFIRM: Gate<(), bool> = Gate::new("confirm");
            let request = CONFIRM.request(&())?.with_timeout(Duration::from_secs(60));
            let answer = ctx.ask_with(&CONFIRM, request).await?;
            Ok::<_, ToolError>(answer)
        },
    ));
    let model = ScriptedModel::new(vec![
        responses::tool_call("c1", "ask", json!({"summary": "?"})),
        responses::text("No answer; stopping."),
    ]);
    let session = Session::new("s", ());
    let result = AgentLoop::new(config, model.clone())
        .run(&session.context(AgentIdentity::new("asker", "demo")), "go")
        .await;
    assert!(result.is_complete());
    let sent = model.requests()[1].messages[2].clone();
    let agent_llm::ContentBlock::ToolResult {
        content, is_error, ..
    } = &sent.content[0]
    else {
        panic!()
    };
    assert!(
        *is_error && content.contains("timed out after 60s"),
        "{content}"
    );
    assert!(session.gates().pending().is_empty());
}

#[tokio::test]
async fn a_malformed_answer_is_reported_as_invalid() {
    let session: Session<(), ()> = Session::new("s", ());
    let ctx = session.context(AgentIdentity::new("a", "d"));
    let gates = session.gates().clone();
    let answer = tokio::spawn(async move {
        while gates.pending().is_empty() {
            tokio::task::yield_now().await;
        }
        gates.respond("a:choose:1", json!("not a number")).unwrap();
    });
    const CHOOSE: Gate<(), u32> = Gate::new("choose");
    let error = ctx.ask(&CHOOSE, &()).await.unwrap_err();
    answer.await.unwrap();
    assert!(
        matches!(error, GateError::InvalidAnswer { ref id, .. } if id == "a:choose:1"),
        "{error:?}"
    );
}

#[tokio::test]
async fn tools_see_model_tiers_and_the_cost_meter() {
    let seen = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&seen);
    let warned = Arc::new(AtomicU32::new(0));
    let warn_count = Arc::clone(&warned);
    let meter = CostMeter::new(CostLimits {
        warn_usd: Some(0.000_001),
        ..Default::default()
    })
    .on_warn(move |_| {
        warn_count.fetch_add(1, Ordering::SeqCst);
    });
    let session: Session<(), ()> = Session::new("s", ())
        .with_router(ModelRouter::for_provider(ProviderKind::Zai))
        .with_meter(meter.clone());
    let config = AgentConfig::new(AgentIdentity::new("a", "d"), "").with_tool(tool(
        "summarize",
        "Summarizes with a light model.",
        move |_: Present, ctx: AgentContext<(), ()>| {
            let counter = Arc::clone(&counter);
            async move {
                assert_eq!(ctx.model_for(ModelTier::Light), Some("glm-4.7-flash"));
                let usage = Usage {
                    input_tokens: 1_000,
                    output_tokens: 100,
                    ..Default::default()
                };
                ctx.meter().unwrap().record("glm-4.7", usage);
                ctx.meter().unwrap().record("glm-4.7", usage);
                counter.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>("ok")
            }
        },
    ));
    let model = ScriptedModel::new(vec![
        responses::tool_call("c1", "summarize", json!({"summary": "x"})),
        responses::text("done"),
    ]);
    AgentLoop::new(config, model)
        .run(&session.context(AgentIdentity::new("a", "d")), "go")
        .await;
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    // Two calls recorded by the tool, two model calls recorded by the loop.
    assert_eq!(meter.snapshot().calls, 4);
    assert_eq!(warned.load(Ordering::SeqCst), 1, "the warning fires once");
}

#[test]
fn unknown_models_are_counted_but_not_priced() {
    let meter = CostMeter::new(CostLimits {
        max_tokens: Some(100),
        ..Default::default()
    });
    let snapshot = meter.record(
        "in-house-model",
        Usage {
            input_tokens: 60,
            output_tokens: 50,
            ..Default::default()
        },
    );
    assert_eq!(snapshot.usd, 0.0);
    assert_eq!(snapshot.unpriced_models, vec!["in-house-model"]);
    assert_eq!(snapshot.usage.total_tokens(), 110);
    assert!(
        meter
            .check()
            .unwrap_err()
            .to_string()
            .contains("110 of 100 tokens")
    );
}

#[tokio::test]
async fn the_session_meter_limits_the_loop_without_wrapping_the_model() {
    let meter = CostMeter::new(CostLimits {
        max_calls: Some(2),
        ..Default::default()
    });
    let session: Session<Draft, Event> =
        Session::new("s", Draft::default()).with_meter(meter.clone());
    let model = ScriptedModel::new(vec![
        responses::tool_call("c1", "write_section", json!({"section": "A"})),
        responses::tool_call("c2", "write_section", json!({"section": "B"})),
        responses::text("never reached"),
    ]);
    let ctx = session.context(AgentIdentity::new("writer", "resume"));
    let result = AgentLoop::new(writer(), model.clone())
        .run(&ctx, "Write.")
        .await;
    assert!(
        matches!(
            &result.stop,
            agent_runtime::StopCause::LimitExceeded(agent_llm::Limit::Calls { made: 2, max: 2 })
        ),
        "{:?}",
        result.stop
    );
    assert_eq!(
        model.call_count(),
        2,
        "the third call was refused before it was sent"
    );
    assert_eq!(meter.snapshot().calls, 2);
    assert_eq!(
        session.state().snapshot().sections,
        vec!["A", "B"],
        "work done before the limit is kept"
    );
}

#[test]
fn wall_time_and_usd_budgets_refuse_further_calls() {
    let meter = CostMeter::new(CostLimits {
        max_wall: Some(Duration::ZERO),
        ..Default::default()
    });
    assert!(
        meter
            .check()
            .unwrap_err()
            .to_string()
            .contains("wall-time budget")
    );
    let meter = CostMeter::new(CostLimits {
        max_usd: Some(0.001),
        ..Default::default()
    });
    assert!(meter.check().is_ok());
    meter.record(
        "claude-haiku-4-5",
        Usage {
            input_tokens: 1_000,
            ..Default::default()
        },
    );
    let error = meter.check().unwrap_err();
    assert!(
        error
            .to_string()
            .contains("spent $0.0010 of a $0.0010 limit"),
        "{error}"
    );
}
