//! Declared gates: asked by tools with a typed answer, checked by spec, closed with a
//! reason when they expire; time spent waiting at them is not work for the round timeout.
#![cfg(test)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_llm::testing::{ScriptedModel, responses};
use agent_runtime::{
    AgentConfig, AgentContext, AgentIdentity, AgentLoop, Gate, GateError, GateListener,
    GateRegistry, PendingGate, Session, ToolError, tool,
};
use serde_json::{Value, json};

#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Approval {
    approved: bool,
}

/// What the user approves.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
struct Draft {
    draft: u32,
}

const APPROVE: Gate<Draft, Approval> = Gate::new("approve");

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

type Ctx = AgentContext<(), ()>;

/// A tool that waits at the gate, then works for `work` (of paused time).
fn agent(work: Duration) -> AgentConfig<(), ()> {
    AgentConfig::new(AgentIdentity::new("writer", "demo"), "Write.")
        .with_round_timeout(Duration::from_secs(10))
        .with_tool(tool(
            "publish",
            "Publishes after approval.",
            move |_: Nothing, ctx: Ctx| async move {
                let answer = ctx
                    .ask(&APPROVE, &Draft { draft: 1 })
                    .await
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                tokio::time::sleep(work).await;
                Ok::<_, ToolError>(if answer.approved { "published" } else { "held" })
            },
        ))
}

fn model() -> ScriptedModel {
    ScriptedModel::new(vec![
        responses::tool_call("c1", "publish", json!({})),
        responses::text("Done."),
    ])
}

/// Answers the first gate after `after`.
fn answer_after(gates: GateRegistry, after: Duration) {
    tokio::spawn(async move {
        let gate = gates.next_pending().await;
        assert_eq!(
            (gate.name.as_str(), gate.kind.as_str()),
            ("approve", "approve")
        );
        tokio::time::sleep(after).await;
        gates
            .answer(&APPROVE, &gate.id, &Approval { approved: true })
            .unwrap();
    });
}

fn tool_result(model: &ScriptedModel) -> String {
    let last = model
        .requests()
        .last()
        .unwrap()
        .messages
        .last()
        .unwrap()
        .clone();
    serde_json::to_string(&last.content).unwrap()
}

#[tokio::test(start_paused = true)]
async fn an_hour_at_a_gate_is_not_work_for_the_round_timeout() {
    let session: Session<(), ()> = Session::new("s", ());
    answer_after(session.gates().clone(), Duration::from_secs(3_600));
    let model = model();
    let agent = AgentLoop::new(agent(Duration::from_secs(4)), model.clone());
    let result = agent
        .run(&session.context(agent.identity().clone()), "Go")
        .await;
    assert!(result.is_complete());
    assert!(
        tool_result(&model).contains("published"),
        "{}",
        tool_result(&model)
    );
}

#[tokio::test(start_paused = true)]
async fn work_after_the_gate_still_has_its_round_timeout() {
    let session: Session<(), ()> = Session::new("s", ());
    answer_after(session.gates().clone(), Duration::from_secs(60));
    let model = model();
    let agent = AgentLoop::new(agent(Duration::from_secs(30)), model.clone());
    agent
        .run(&session.context(agent.identity().clone()), "Go")
        .await;
    let result = tool_result(&model);
    assert!(
        result.contains("timed out") || result.contains("10s"),
        "{result}"
    );
}

#[derive(Default)]
struct Closed(Mutex<Vec<String>>);

impl GateListener for Closed {
    fn opened(&self, _: &PendingGate) {}
    fn answered(&self, _: &str, _: &Value) {}
    fn closed(&self, id: &str, reason: &str) {
        self.0.lock().unwrap().push(format!("{id} {reason}"));
    }
}

#[tokio::test(start_paused = true)]
async fn an_expired_gate_is_closed_with_its_reason() {
    let closed = Arc::new(Closed::default());
    let gates = GateRegistry::with_listener(closed.clone());
    let session: Session<(), ()> = Session::new("s", ()).with_gates(gates);
    let ctx = session.context(AgentIdentity::new("writer", "demo"));
    let request = APPROVE
        .request_for("intro", &Draft { draft: 2 })
        .unwrap()
        .with_timeout(Duration::from_secs(30));
    let error = ctx.ask_with(&APPROVE, request).await.unwrap_err();
    assert!(error.to_string().contains("timed out"), "{error}");
    assert_eq!(
        *closed.0.lock().unwrap(),
        ["writer:approve_intro:1 expired"]
    );
    assert!(session.gates().pending().is_empty());
}

#[test]
fn a_spec_checks_answers_and_names_the_field() {
    let spec = APPROVE.spec();
    assert_eq!(spec.name, "approve");
    assert_eq!(
        spec.answer_schema["properties"]["approved"]["type"],
        "boolean"
    );
    assert!(spec.check(&json!({"approved": false})).is_ok());
    let error = spec.check(&json!({"approved": "yes"})).unwrap_err();
    assert_eq!(error.path, "approved");
    assert!(
        error.to_string().starts_with("at approved: invalid type"),
        "{error}"
    );
    assert_eq!(spec.check(&json!([])).unwrap_err().path, ".");
}

#[tokio::test]
async fn code_answers_a_gate_with_its_typed_answer_and_only_a_gate_of_its_kind() {
    const OTHER: Gate<(), bool> = Gate::new("other");
    let session: Session<(), ()> = Session::new("s", ());
    let gates = session.gates().clone();
    let ctx = session.context(AgentIdentity::new("writer", "demo"));
    let asking = tokio::spawn(async move { ctx.ask(&APPROVE, &Draft { draft: 3 }).await });
    let waiting = gates.next_pending().await;
    assert_eq!(waiting.payload, json!({"draft": 3}));
    let refused = gates.answer(&OTHER, &waiting.id, &true).unwrap_err();
    assert!(
        matches!(refused, GateError::WrongKind { ref kind, .. } if kind == "approve"),
        "{refused:?}"
    );
    gates
        .answer(&APPROVE, &waiting.id, &Approval { approved: false })
        .unwrap();
    assert!(!asking.await.unwrap().unwrap().approved);
}
