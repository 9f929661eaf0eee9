//! A graph whose state is its session's state, with an agent loop inside a node that is
//! saved after every round: killed in the middle of the agent's run and resumed in a new
//! session (as a restarted process would), it pays no completed model call again, runs no
//! completed tool again, emits no event twice and waits at the same gate ids.
#![cfg(test)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_llm::testing::{ScriptedModel, responses};
use agent_llm::{ChatModel, ChatRequest, ChatResponse, LlmError};
use agent_runtime::checkpoint::{CheckpointStore, InMemoryCheckpointStore};
use agent_runtime::graph::{
    CompiledGraph, NodeContext, NodeError, RunOptions, RunStatus, StateGraph, node_fn,
};
use agent_runtime::{
    AgentConfig, AgentContext, AgentIdentity, AgentLoop, CostLimits, CostMeter, EventSink, Gate,
    Session, ToolError, tool,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Notes {
    notes: Vec<String>,
    finished: bool,
    /// How many times the node's code before its agents ran (on the state it saw).
    visits: u32,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Note {
    text: String,
}

/// Counts the tool's side effects across both "processes" of one test.
type Taken = Arc<AtomicUsize>;

fn scribe(taken: Taken) -> AgentConfig<Notes, String> {
    AgentConfig::new(AgentIdentity::new("scribe", "demo"), "Take notes.").with_tool(tool(
        "note",
        "Writes a note once the user approves it.",
        move |args: Note, ctx: AgentContext<Notes, String>| {
            let taken = Arc::clone(&taken);
            async move {
                const APPROVE: Gate<String, bool> = Gate::new("approve");
                let approved = ctx
                    .ask(&APPROVE, &args.text)
                    .await
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                taken.fetch_add(1, Ordering::SeqCst);
                ctx.update_state(|s| s.notes.push(args.text.clone()));
                ctx.emit(format!("noted {}", args.text));
                Ok::<_, ToolError>(if approved { "noted" } else { "refused" })
            }
        },
    ))
}

fn graph<M: ChatModel + 'static>(model: M, taken: &Taken) -> CompiledGraph<Notes, String> {
    let agent = Arc::new(AgentLoop::new(scribe(Arc::clone(taken)), model));
    StateGraph::sequence([
        (
            "write",
            node_fn(move |ctx: &NodeContext<Notes, String>| {
                let agent = Arc::clone(&agent);
                Box::pin(async move {
                    ctx.emit("writing".into());
                    let result = ctx.run_agent(&agent, "Note a, b and c.").await;
                    assert!(result.is_complete(), "{:?}", result.stop);
                    Ok(())
                })
            }),
        ),
        (
            "finish",
            node_fn(|ctx: &NodeContext<Notes, String>| {
                Box::pin(async move {
                    ctx.update(|s| s.finished = true);
                    ctx.emit("finished".into());
                    Ok(())
                })
            }),
        ),
    ])
    .compile()
    .unwrap()
}

fn note(id: &str, text: &str) -> ChatResponse {
    responses::tool_call(id, "note", json!({ "text": text }))
}

/// Passes calls to a script, and hangs forever on call `hang_at` (the process dies there).
struct HangOn {
    script: ScriptedModel,
    hang_at: usize,
    calls: AtomicUsize,
    reached: Arc<tokio::sync::Notify>,
}

#[async_trait::async_trait]
impl ChatModel for HangOn {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) + 1 == self.hang_at {
            self.reached.notify_one();
            std::future::pending::<()>().await;
        }
        self.script.chat(request).await
    }
}

/// Keeps every event with its ordinal.
#[derive(Clone, Default)]
struct Numbered(Arc<Mutex<Vec<(u64, String)>>>);

impl EventSink<String> for Numbered {
    fn emit(&self, event: String) {
        self.emit_numbered(0, event);
    }

    fn emit_numbered(&self, ordinal: u64, event: String) {
        self.0.lock().unwrap().push((ordinal, event));
    }
}

/// A session that approves every gate, recording the gate ids it answered.
fn session(events: &Numbered) -> (Session<Notes, String>, Arc<Mutex<Vec<String>>>) {
    let session = Session::new("notes-1", Notes::default())
        .with_events(Arc::new(events.clone()))
        .with_meter(CostMeter::new(CostLimits::default()));
    let answered = Arc::new(Mutex::new(Vec::new()));
    let (gates, log) = (session.gates().clone(), Arc::clone(&answered));
    tokio::spawn(async move {
        loop {
            let gate = gates.next_pending().await;
            log.lock().unwrap().push(gate.id.clone());
            gates.respond(&gate.id, json!(true)).unwrap();
        }
    });
    (session, answered)
}

#[tokio::test]
async fn an_agent_killed_mid_run_resumes_at_its_last_round_with_nothing_repeated() {
    let store: Arc<dyn CheckpointStore> = Arc::new(InMemoryCheckpointStore::new());

    // The first process: notes a and b, then dies while the model works on call 3.
    let reached = Arc::new(tokio::sync::Notify::new());
    let first_model = HangOn {
        script: ScriptedModel::new(vec![note("t1", "a"), note("t2", "b")]),
        hang_at: 3,
        calls: AtomicUsize::new(0),
        reached: Arc::clone(&reached),
    };
    let first_events = Numbered::default();
    let (first, first_gates) = session(&first_events);
    let taken = Taken::default();
    let running = {
        let (graph, first, store) = (
            graph(first_model, &taken),
            first.clone(),
            Arc::clone(&store),
        );
        tokio::spawn(async move {
            let options = RunOptions::new().with_run_id("notes-1");
            graph.run_checkpointed_in(&first, store, options).await
        })
    };
    reached.notified().await;
    running.abort();
    assert!(running.await.unwrap_err().is_cancelled());
    assert_eq!(taken.load(Ordering::SeqCst), 2);
    assert_eq!(
        *first_gates.lock().unwrap(),
        ["scribe:approve:1", "scribe:approve:2"]
    );

    // The restarted process: a fresh session and a model that knows only what is left.
    let second_model = ScriptedModel::new(vec![note("t3", "c"), responses::text("All noted.")]);
    let second_events = Numbered::default();
    let (second, second_gates) = session(&second_events);
    let graph = graph(second_model.clone(), &taken);
    let result = graph
        .resume_in(&second, "notes-1", Arc::clone(&store), RunOptions::new())
        .await
        .unwrap();

    assert_eq!(result.status, RunStatus::Success, "{:?}", result.reason);
    assert_eq!(result.state.notes, ["a", "b", "c"]);
    assert!(result.state.finished);
    // Two calls in the second process: the one in flight at the kill, and the last one.
    assert_eq!(second_model.call_count(), 2);
    let resumed = &second_model.requests()[0];
    assert_eq!(
        resumed.messages.len(),
        5,
        "opening, and two rounds of call and result"
    );
    // Every tool ran once, and the gate ids went on where they were.
    assert_eq!(taken.load(Ordering::SeqCst), 3);
    assert_eq!(*second_gates.lock().unwrap(), ["scribe:approve:3"]);
    // Events keep their ordinals across the restart: the node's opening event, emitted
    // again as the node runs again, has the ordinal it had (a store that holds it drops
    // it), and the saved rounds emit nothing again.
    let numbered = |events: &[(u64, &str)]| -> Vec<(u64, String)> {
        events.iter().map(|(n, e)| (*n, (*e).to_owned())).collect()
    };
    assert_eq!(
        *first_events.0.lock().unwrap(),
        numbered(&[(1, "writing"), (2, "noted a"), (3, "noted b")])
    );
    assert_eq!(
        *second_events.0.lock().unwrap(),
        numbered(&[(1, "writing"), (4, "noted c"), (5, "finished")])
    );
    // The meter counts the whole run: two calls before the kill, two after.
    assert_eq!(second.meter().unwrap().snapshot().calls, 4);

    // Resuming the finished run does nothing more.
    let again = graph
        .resume_in(&second, "notes-1", store, RunOptions::new())
        .await
        .unwrap();
    assert!(again.is_success() && again.steps.is_empty());
    assert_eq!(second_model.call_count(), 2);
}

/// One node, two runs of the agent, and code before and between them that is not
/// idempotent (it counts its visits) and depends on the first run's work.
fn two_step_graph<M: ChatModel + 'static>(model: M, taken: &Taken) -> CompiledGraph<Notes, String> {
    let agent = Arc::new(AgentLoop::new(scribe(Arc::clone(taken)), model));
    StateGraph::sequence([(
        "write",
        node_fn(move |ctx: &NodeContext<Notes, String>| {
            let agent = Arc::clone(&agent);
            Box::pin(async move {
                ctx.update(|s| s.visits += 1);
                let first = ctx.run_agent(&agent, "Note a.").await;
                assert!(first.is_complete(), "{:?}", first.stop);
                if ctx.read(|s| s.notes != ["a"]) {
                    return Err(NodeError::fatal("the first run's note is missing"));
                }
                let second = ctx.run_agent(&agent, "Note b and c.").await;
                assert!(second.is_complete(), "{:?}", second.stop);
                ctx.update(|s| s.finished = true);
                Ok(())
            })
        }),
    )])
    .compile()
    .unwrap()
}

#[tokio::test]
async fn a_node_resumed_in_its_second_agent_replays_its_code_on_the_state_it_saw() {
    let store: Arc<dyn CheckpointStore> = Arc::new(InMemoryCheckpointStore::new());
    let taken = Taken::default();
    let reached = Arc::new(tokio::sync::Notify::new());
    // The first run notes a and finishes; the second notes b, then dies on its next call.
    let first_model = HangOn {
        script: ScriptedModel::new(vec![
            note("t1", "a"),
            responses::text("Noted a."),
            note("t2", "b"),
        ]),
        hang_at: 4,
        calls: AtomicUsize::new(0),
        reached: Arc::clone(&reached),
    };
    let (first, _) = session(&Numbered::default());
    let running = {
        let graph = two_step_graph(first_model, &taken);
        let (first, store) = (first.clone(), Arc::clone(&store));
        tokio::spawn(async move {
            let options = RunOptions::new().with_run_id("notes-1");
            graph.run_checkpointed_in(&first, store, options).await
        })
    };
    reached.notified().await;
    running.abort();
    let _ = running.await;
    assert_eq!(first.state().snapshot().visits, 1);

    let second_model = ScriptedModel::new(vec![note("t3", "c"), responses::text("Noted.")]);
    let (second, answered) = session(&Numbered::default());
    let result = two_step_graph(second_model.clone(), &taken)
        .resume_in(&second, "notes-1", store, RunOptions::new())
        .await
        .unwrap();
    assert_eq!(result.status, RunStatus::Success, "{:?}", result.reason);
    // The node's code ran again on what it saw the first time: counted once, and the
    // first run's note was there for the check between the runs.
    assert_eq!(result.state.visits, 1);
    assert_eq!(result.state.notes, ["a", "b", "c"]);
    assert!(result.state.finished);
    assert_eq!(second_model.call_count(), 2);
    assert_eq!(taken.load(Ordering::SeqCst), 3);
    assert_eq!(*answered.lock().unwrap(), ["scribe:approve:3"]);
}

/// A scribe with a tool that only looks (the session's state unchanged) beside its note
/// tool (the state changed).
fn looker() -> AgentConfig<Notes, String> {
    AgentConfig::new(AgentIdentity::new("scribe", "demo"), "Take notes.")
        .with_tool(tool(
            "note",
            "Writes a note.",
            |args: Note, ctx: AgentContext<Notes, String>| async move {
                ctx.update_state(|s| s.notes.push(args.text.clone()));
                Ok::<_, ToolError>("noted")
            },
        ))
        .with_tool(tool(
            "look",
            "Reads the notes.",
            |_: Note, ctx: AgentContext<Notes, String>| async move {
                Ok::<_, ToolError>(ctx.read_state(|s| s.notes.join(", ")))
            },
        ))
}

#[tokio::test]
async fn every_checkpoint_of_an_agents_rounds_holds_the_state_as_it_was_then() {
    // Keeps every checkpoint of the run.
    let store = Arc::new(InMemoryCheckpointStore::with_retention(64, 1));
    let call =
        |id: &str, name: &str, text: &str| responses::tool_call(id, name, json!({ "text": text }));
    let model = ScriptedModel::new(vec![
        call("t1", "look", ""),
        call("t2", "note", "a"),
        call("t3", "look", ""),
        call("t4", "note", "b"),
        responses::text("Done."),
    ]);
    let agent = Arc::new(AgentLoop::new(looker(), model));
    let graph = StateGraph::sequence([(
        "write",
        node_fn(move |ctx: &NodeContext<Notes, String>| {
            let agent = Arc::clone(&agent);
            Box::pin(async move {
                let result = ctx.run_agent(&agent, "Note a and b.").await;
                assert!(result.is_complete(), "{:?}", result.stop);
                Ok(())
            })
        }),
    )])
    .compile()
    .unwrap();
    let session = Session::new("looks-1", Notes::default());
    let result = graph
        .run_checkpointed_in(
            &session,
            store.clone(),
            RunOptions::new().with_run_id("looks-1"),
        )
        .await
        .unwrap();
    assert_eq!(result.state.notes, ["a", "b"]);

    // Saved: the start, then each round's answer and each round's results, then the
    // node. A note is in every checkpoint saved after its tool ran, and in none before.
    let notes: Vec<Vec<String>> = store
        .list("looks-1")
        .await
        .unwrap()
        .iter()
        .map(|cp| cp.state.parse::<Notes>().unwrap().notes)
        .collect();
    let (none, a, ab) = (
        vec![],
        vec!["a".to_owned()],
        vec!["a".to_owned(), "b".to_owned()],
    );
    assert_eq!(
        notes,
        [
            none.clone(), // the start
            none.clone(), // round 1: look asked
            none.clone(), // round 1: looked
            none,         // round 2: note a asked
            a.clone(),    // round 2: a noted
            a.clone(),    // round 3: look asked
            a.clone(),    // round 3: looked
            a,            // round 4: note b asked
            ab.clone(),   // round 4: b noted
            ab.clone(),   // round 5: the answer
            ab,           // the node done
        ]
    );
}
