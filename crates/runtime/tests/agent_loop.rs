//! The agent loop against scripted and mock models.
#![cfg(test)]

use agent_llm::testing::{FaultyModel, ScriptedModel, responses};
use agent_llm::{
    ChatModel, ChatRequest, ChatResponse, ContentBlock, LlmError, Message, RetryPolicy, Role, Usage,
};
use agent_runtime::{
    AgentConfig, AgentContext, AgentIdentity, AgentLoop, AgentRun, Compaction, CostLimits,
    CostMeter, Gate, LoopEvent, MeteredModel, Session, StopCause, ToolError, tool,
};
use async_trait::async_trait;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Ctx = AgentContext<(), ()>;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Wait {
    /// Seconds to sleep.
    seconds: u64,
    label: String,
}

fn config() -> AgentConfig<(), ()> {
    AgentConfig::new(AgentIdentity::new("calc", "test"), "You add numbers.")
        .with_tool(tool(
            "add",
            "Adds two integers.",
            |args: Add, ctx: Ctx| async move {
                ctx.scratchpad().set("last_sum", json!(args.a + args.b));
                Ok::<_, ToolError>(args.a + args.b)
            },
        ))
        .with_tool(tool(
            "wait",
            "Sleeps, then echoes its label.",
            |args: Wait, _ctx: Ctx| async move {
                tokio::time::sleep(Duration::from_secs(args.seconds)).await;
                Ok::<_, ToolError>(args.label)
            },
        ))
        .with_retry(RetryPolicy::default().with_base_delay(Duration::from_millis(1)))
}

fn ctx() -> Ctx {
    Session::new("s", ()).context(AgentIdentity::new("calc", "test"))
}

fn results_of(message: &Message) -> Vec<(String, String, bool)> {
    message
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => (tool_use_id.clone(), content.clone(), *is_error),
            other => panic!("expected tool results, got {other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn typed_tool_runs_and_the_model_answers() {
    let model = ScriptedModel::new(vec![
        responses::tool_call("c1", "add", json!({"a": 2, "b": 3})),
        responses::text("2 + 3 = 5"),
    ]);
    let agent = AgentLoop::new(config(), model.clone());
    let result = agent.run(&ctx(), "What is 2 + 3?").await;
    assert_eq!(result.stop, StopCause::Completed);
    assert_eq!(result.final_text.as_deref(), Some("2 + 3 = 5"));
    assert_eq!(result.rounds_used, 2);
    assert_eq!(result.scratchpad["last_sum"], json!(5));
    assert_eq!(result.transcript.len(), 4);
    assert_eq!(
        results_of(&result.transcript[2]),
        vec![("c1".into(), "5".into(), false)]
    );
    assert_eq!(
        result.usage,
        result.round_usage.iter().copied().sum::<Usage>()
    );
    let first = &model.requests()[0];
    insta::assert_json_snapshot!("opening_request", first);
}

#[tokio::test]
async fn invalid_arguments_and_unknown_tools_go_back_to_the_model() {
    let model = ScriptedModel::new(vec![
        responses::tool_calls([
            ("c1", "add", json!({"a": "two", "b": 3})),
            ("c2", "multiply", json!({"a": 2, "b": 3})),
        ]),
        responses::tool_call("c3", "add", json!({"a": 2, "b": 3})),
        responses::text("5"),
    ]);
    let result = AgentLoop::new(config(), model).run(&ctx(), "2+3").await;
    assert!(result.is_complete());
    let errors = results_of(&result.transcript[2]);
    assert!(
        errors[0].2 && errors[0].1.starts_with("invalid arguments"),
        "{errors:?}"
    );
    assert!(
        errors[1].2 && errors[1].1.contains("unknown tool \"multiply\""),
        "{errors:?}"
    );
    assert_eq!(
        results_of(&result.transcript[4]),
        vec![("c3".into(), "5".into(), false)]
    );
}

#[tokio::test(start_paused = true)]
async fn concurrent_tool_calls_return_in_call_order() {
    let model = ScriptedModel::new(vec![
        responses::tool_calls([
            ("slow", "wait", json!({"seconds": 3, "label": "first"})),
            ("fast", "wait", json!({"seconds": 1, "label": "second"})),
        ]),
        responses::text("done"),
    ]);
    let started = tokio::time::Instant::now();
    let result = AgentLoop::new(config(), model).run(&ctx(), "go").await;
    assert_eq!(
        results_of(&result.transcript[2]),
        vec![
            ("slow".into(), "first".into(), false),
            ("fast".into(), "second".into(), false)
        ]
    );
    assert_eq!(
        started.elapsed().as_secs(),
        3,
        "the two calls ran at the same time"
    );
}

#[tokio::test(start_paused = true)]
async fn round_timeout_fails_the_call_but_not_the_time_at_a_gate() {
    const ANSWER: Gate<(), String> = Gate::new("answer");
    let config = config()
        .with_round_timeout(Duration::from_secs(5))
        .with_tool(tool(
            "ask_user",
            "Waits for the user.",
            |_args: Wait, ctx: Ctx| async move {
                let answer = ctx.ask(&ANSWER, &()).await;
                answer.map_err(|e| ToolError::failed(e.to_string()))
            },
        ));
    // One round each: time at a gate pauses the clock of the whole round.
    let model = ScriptedModel::new(vec![
        responses::tool_call("w", "wait", json!({"seconds": 60, "label": "late"})),
        responses::tool_call("q", "ask_user", json!({"seconds": 0, "label": ""})),
        responses::text("ok"),
    ]);
    // The user answers after a minute, far beyond the round timeout.
    let session = Session::new("s", ());
    let gates = session.gates().clone();
    let user = tokio::spawn(async move {
        let gate = gates.next_pending().await;
        tokio::time::sleep(Duration::from_secs(60)).await;
        gates.respond(&gate.id, json!("answered")).unwrap();
    });
    let ctx = session.context(AgentIdentity::new("calc", "test"));
    let result = AgentLoop::new(config, model).run(&ctx, "go").await;
    user.await.unwrap();
    let timed_out = results_of(&result.transcript[2]);
    assert!(
        timed_out[0].2 && timed_out[0].1.contains("did not finish within 5s"),
        "{timed_out:?}"
    );
    let answered = results_of(&result.transcript[4]);
    assert_eq!(answered, [("q".into(), "answered".into(), false)]);
}

/// A model that answers from a script, then never again.
struct HangsAfter {
    script: ScriptedModel,
    answers: usize,
}

#[async_trait]
impl ChatModel for HangsAfter {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if self.script.call_count() >= self.answers {
            std::future::pending::<()>().await;
        }
        self.script.chat(request).await
    }
}

fn hangs_after_one_round() -> HangsAfter {
    HangsAfter {
        script: ScriptedModel::new(vec![responses::tool_call(
            "c1",
            "add",
            json!({"a": 1, "b": 1}),
        )]),
        answers: 1,
    }
}

#[tokio::test(start_paused = true)]
async fn overall_timeout_keeps_what_was_gathered() {
    let config = config().with_overall_timeout(Duration::from_secs(30));
    let result = AgentLoop::new(config, hangs_after_one_round())
        .run(&ctx(), "1+1")
        .await;
    assert_eq!(result.stop, StopCause::Timeout(Duration::from_secs(30)));
    assert_eq!(result.rounds_used, 1);
    assert_eq!(result.scratchpad["last_sum"], json!(2));
    assert_eq!(
        result.transcript.len(),
        3,
        "opening, tool call, tool result"
    );
    assert!(result.usage.total_tokens() > 0);
}

#[tokio::test]
async fn cancellation_ends_the_run_and_keeps_results() {
    let session = Session::new("s", ());
    let ctx = session.context(AgentIdentity::new("calc", "test"));
    let cancel = session.cancellation().clone();
    let agent = AgentLoop::new(config(), hangs_after_one_round()).with_observer(
        move |_: &AgentIdentity, event: &LoopEvent| {
            if matches!(event, LoopEvent::ToolFinished { .. }) {
                cancel.cancel();
            }
        },
    );
    let result = agent.run(&ctx, "1+1").await;
    assert_eq!(result.stop, StopCause::Cancelled);
    assert_eq!(result.scratchpad["last_sum"], json!(2));
}

#[tokio::test]
async fn a_cancelled_run_whose_model_answers_at_once_takes_no_further_step() {
    // The model never waits, so the loop never yields to see the cancellation: the loop
    // itself checks it before every step.
    let model = ScriptedModel::from_fn(|request| {
        let n = request.messages.len();
        Ok(responses::tool_call(
            format!("c{n}"),
            "add",
            json!({"a": n, "b": 1}),
        ))
    });
    let session = Session::new("s", ());
    let ctx = session.context(AgentIdentity::new("calc", "test"));
    let cancel = session.cancellation().clone();
    let agent = AgentLoop::new(config().with_max_rounds(50), model).with_observer(
        move |_: &AgentIdentity, event: &LoopEvent| {
            if matches!(event, LoopEvent::ToolFinished { .. }) {
                cancel.cancel();
            }
        },
    );
    let result = agent.run(&ctx, "count").await;
    assert_eq!(result.stop, StopCause::Cancelled);
    assert_eq!(result.rounds_used, 1);
}

#[tokio::test]
async fn max_rounds_stops_a_model_that_never_finishes() {
    let model = ScriptedModel::from_fn(|request| {
        let n = request.messages.len();
        Ok(responses::tool_call(
            format!("c{n}"),
            "add",
            json!({"a": n, "b": 1}),
        ))
    });
    let result = AgentLoop::new(config().with_max_rounds(4), model)
        .run(&ctx(), "loop")
        .await;
    assert_eq!(result.stop, StopCause::MaxRounds);
    assert_eq!(result.rounds_used, 4);
    assert_eq!(result.transcript.len(), 9, "every call got its result");
}

#[tokio::test]
async fn compaction_keeps_the_opening_and_never_orphans_a_result() {
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let model = ScriptedModel::from_fn(move |_request| {
        let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(if n == 30 {
            responses::text("done")
        } else {
            responses::tool_call(format!("c{n}"), "add", json!({"a": 1, "b": 1}))
        })
    });
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let config = config()
        .with_max_rounds(100)
        .with_compaction(Some(Compaction {
            threshold: 12,
            keep_recent: 7,
        }));
    let agent =
        AgentLoop::new(config, model).with_observer(move |_: &AgentIdentity, e: &LoopEvent| {
            seen.lock().unwrap().push(e.clone());
        });
    let result = agent.run(&ctx(), "count").await;
    assert!(result.is_complete(), "{:?}", result.stop);
    assert!(result.transcript.len() <= 13);
    assert!(result.transcript[0].text().starts_with("count"));
    assert!(
        result.transcript[0]
            .text()
            .contains("earlier messages were removed")
    );
    let mut calls = std::collections::HashSet::new();
    for message in &result.transcript {
        for block in &message.content {
            match block {
                ContentBlock::ToolUse { id, .. } => assert!(calls.insert(id.clone())),
                ContentBlock::ToolResult { tool_use_id, .. } => {
                    assert!(calls.contains(tool_use_id), "orphan {tool_use_id}")
                }
                _ => {}
            }
        }
    }
    let events = events.lock().unwrap();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, LoopEvent::Compacted { .. }))
    );
}

#[tokio::test]
async fn loop_events_arrive_in_order() {
    let model = ScriptedModel::new(vec![
        responses::tool_call("c1", "add", json!({"a": 1, "b": 2})),
        responses::text("3"),
    ]);
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let agent = AgentLoop::new(config(), model).with_observer(
        move |agent: &AgentIdentity, e: &LoopEvent| {
            assert_eq!(agent.name, "calc");
            let name = match e {
                LoopEvent::RoundStarted { round } => format!("round {round}"),
                LoopEvent::ToolCalled { round, name, .. } => format!("call {name} in {round}"),
                LoopEvent::ToolFinished {
                    round, name, ok, ..
                } => format!("done {name} in {round} ok={ok}"),
                LoopEvent::Usage { round, .. } => format!("usage {round}"),
                LoopEvent::Compacted { .. } => "compacted".into(),
                LoopEvent::ModelCall(call) => format!("model call {call:?}"),
            };
            seen.lock().unwrap().push(name);
        },
    );
    agent.run(&ctx(), "1+2").await;
    assert_eq!(
        *events.lock().unwrap(),
        [
            "round 1",
            "usage 1",
            "call add in 1",
            "done add in 1 ok=true",
            "round 2",
            "usage 2"
        ]
    );
}

#[tokio::test]
async fn failed_model_calls_are_retried_then_reported_with_partial_results() {
    let flaky = FaultyModel::new(ScriptedModel::from_texts(["fine"])).fail_first(
        2,
        LlmError::Server {
            status: 500,
            message: "boom".into(),
            retry_after: None,
        },
    );
    let result = AgentLoop::new(config(), flaky).run(&ctx(), "hi").await;
    assert_eq!(
        result.final_text.as_deref(),
        Some("fine"),
        "two failures, third attempt works"
    );

    let broken = FaultyModel::new(ScriptedModel::new(vec![responses::tool_call(
        "c1",
        "add",
        json!({"a": 1, "b": 1}),
    )]))
    .fail_every(
        2,
        LlmError::Auth {
            status: 401,
            message: "bad key".into(),
        },
    );
    let result = AgentLoop::new(config(), broken).run(&ctx(), "hi").await;
    assert!(
        matches!(result.stop, StopCause::ModelError(LlmError::Auth { .. })),
        "{:?}",
        result.stop
    );
    assert_eq!(
        result.scratchpad["last_sum"],
        json!(2),
        "the first round's work is kept"
    );
}

#[tokio::test]
async fn a_cost_limit_stops_the_loop_as_limit_exceeded() {
    let meter = CostMeter::new(CostLimits {
        max_calls: Some(1),
        ..Default::default()
    });
    let model = MeteredModel::new(
        ScriptedModel::new(vec![
            responses::tool_call("c1", "add", json!({"a": 1, "b": 1})),
            responses::text("never"),
        ]),
        meter.clone(),
    );
    let result = AgentLoop::new(config(), model).run(&ctx(), "hi").await;
    assert!(
        matches!(
            &result.stop,
            StopCause::LimitExceeded(agent_llm::Limit::Calls { made: 1, max: 1 })
        ),
        "{:?}",
        result.stop
    );
    assert_eq!(result.rounds_used, 1);
    assert_eq!(meter.snapshot().calls, 1);
}

#[tokio::test]
async fn a_saved_run_resumes_in_another_loop() {
    let model = ScriptedModel::new(vec![responses::tool_call(
        "c1",
        "add",
        json!({"a": 4, "b": 4}),
    )]);
    let first = AgentLoop::new(config(), model);
    let mut run = AgentRun::new(
        ChatRequest::from_prompt("4+4").with_system("You add numbers."),
        5,
        None,
    );
    // Take one model answer by hand, then save the run as JSON.
    let request = match run.next_step() {
        agent_runtime::Next::CallModel(request) => request.clone(),
        other => panic!("{other:?}"),
    };
    run.on_model_response(first_model_answer(&request).await);
    let saved = serde_json::to_string(&run).unwrap();
    drop(first);

    let mut restored: AgentRun = serde_json::from_str(&saved).unwrap();
    let second = AgentLoop::new(config(), ScriptedModel::from_texts(["8"]));
    second.resume(&ctx(), &mut restored).await;
    assert_eq!(restored.final_text(), Some("8"));
    assert_eq!(restored.rounds(), 2);
    let results: Vec<&Message> = restored
        .transcript()
        .iter()
        .filter(|m| m.role == Role::User)
        .collect();
    assert_eq!(
        results_of(results[1]),
        vec![("c1".into(), "8".into(), false)]
    );
}

async fn first_model_answer(request: &ChatRequest) -> ChatResponse {
    ScriptedModel::new(vec![responses::tool_call(
        "c1",
        "add",
        json!({"a": 4, "b": 4}),
    )])
    .chat(request)
    .await
    .unwrap()
}

#[tokio::test]
async fn mock_models_work_too() {
    let mut mock = agent_llm::MockChatModel::new();
    mock.expect_chat()
        .withf(|request: &ChatRequest| {
            request.system.as_deref() == Some("You add numbers.") && request.tools.len() == 2
        })
        .times(1)
        .returning(|_| Ok(responses::text("mocked")));
    let result = AgentLoop::new(config(), mock).run(&ctx(), "hi").await;
    assert_eq!(result.final_text.as_deref(), Some("mocked"));
    let _unused: Option<Value> = None;
}

#[tokio::test]
async fn the_loop_does_not_retry_on_top_of_the_provider_unless_asked() {
    let error = LlmError::Server {
        status: 503,
        message: "busy".into(),
        retry_after: None,
    };
    let flaky = FaultyModel::new(ScriptedModel::from_texts(["fine"])).fail_first(1, error.clone());
    let plain = AgentConfig::new(AgentIdentity::new("calc", "test"), "You add numbers.");
    let result = AgentLoop::new(plain, flaky).run(&ctx(), "hi").await;
    assert_eq!(
        result.stop,
        StopCause::ModelError(error),
        "no retry by default"
    );
    assert_eq!(result.rounds_used, 0);
}
