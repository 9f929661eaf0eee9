//! The tracing spans the agent loop emits: names, OpenTelemetry GenAI fields (including
//! those recorded after the span started) and nesting, seen through a recording layer.
#![cfg(test)]

use agent_llm::testing::ScriptedModel;
use agent_llm::testing::responses::{self, SCRIPTED_INPUT_TOKENS};
use agent_runtime::graph::{END, NodeContext, RunOptions, RunStatus, START, StateGraph, node_fn};
use agent_runtime::{
    AgentConfig, AgentContext, AgentIdentity, AgentLoop, Session, ToolError, tool,
};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Subscriber, subscriber::DefaultGuard};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{Layer, Registry};

/// One span as the recording layer saw it.
#[derive(Debug, Clone)]
struct SpanRecord {
    name: &'static str,
    /// Index of the parent span in the recording, if it has a recorded parent.
    parent: Option<usize>,
    fields: BTreeMap<String, String>,
    closed: bool,
}

impl SpanRecord {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// Spans in creation order.
#[derive(Clone, Default)]
struct Recording(Arc<Mutex<Vec<SpanRecord>>>);

impl Recording {
    fn spans(&self) -> Vec<SpanRecord> {
        self.0.lock().unwrap().clone()
    }

    /// Indexes of the spans called `name`, in creation order.
    fn named(&self, name: &str) -> Vec<usize> {
        self.spans()
            .iter()
            .enumerate()
            .filter(|(_, span)| span.name == name)
            .map(|(index, _)| index)
            .collect()
    }

    /// The names of the spans from `index`'s parent up to the root.
    fn ancestors(&self, index: usize) -> Vec<&'static str> {
        let spans = self.spans();
        let mut names = Vec::new();
        let mut next = spans[index].parent;
        while let Some(parent) = next {
            names.push(spans[parent].name);
            next = spans[parent].parent;
        }
        names
    }
}

/// Where a span's record sits in the recording (kept in the span's extensions).
struct RecordIndex(usize);

struct FieldVisitor<'a>(&'a mut BTreeMap<String, String>);

impl Visit for FieldVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

/// Records every span, its fields (also those recorded later) and its parent.
struct RecordingLayer(Recording);

impl<S> Layer<S> for RecordingLayer
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let parent = span.parent().and_then(|parent| {
            parent
                .extensions()
                .get::<RecordIndex>()
                .map(|index| index.0)
        });
        let mut fields = BTreeMap::new();
        attrs.record(&mut FieldVisitor(&mut fields));
        let mut spans = self.0.0.lock().unwrap();
        spans.push(SpanRecord {
            name: attrs.metadata().name(),
            parent,
            fields,
            closed: false,
        });
        span.extensions_mut().insert(RecordIndex(spans.len() - 1));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        if let Some(RecordIndex(index)) = span.extensions().get::<RecordIndex>() {
            let mut spans = self.0.0.lock().unwrap();
            values.record(&mut FieldVisitor(&mut spans[*index].fields));
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        if let Some(RecordIndex(index)) = span.extensions().get::<RecordIndex>() {
            self.0.0.lock().unwrap()[*index].closed = true;
        }
    }
}

/// Records the spans of everything run on this thread until the guard drops.
fn record() -> (Recording, DefaultGuard) {
    let recording = Recording::default();
    let subscriber = Registry::default().with(RecordingLayer(recording.clone()));
    (recording, tracing::subscriber::set_default(subscriber))
}

type Ctx = AgentContext<(), ()>;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

fn config() -> AgentConfig<(), ()> {
    AgentConfig::new(AgentIdentity::new("calc", "test"), "You add numbers.")
        .with_model("scripted-1")
        .with_tool(tool(
            "add",
            "Adds two integers.",
            |args: Add, _ctx: Ctx| async move { Ok::<_, ToolError>(args.a + args.b) },
        ))
}

fn ctx() -> Ctx {
    Session::new("s-42", ()).context(AgentIdentity::new("calc", "test"))
}

/// A tool call, then an answer.
fn add_then_answer() -> ScriptedModel {
    ScriptedModel::new(vec![
        responses::tool_call("c1", "add", json!({"a": 2, "b": 3})),
        responses::text("2 + 3 = 5"),
    ])
}

#[tokio::test]
async fn one_run_emits_invoke_agent_chat_and_execute_tool_spans() {
    let (recording, _guard) = record();
    let result = AgentLoop::new(config(), add_then_answer())
        .run(&ctx(), "What is 2 + 3?")
        .await;
    assert!(result.is_complete(), "{:?}", result.stop);

    let spans = recording.spans();
    assert!(spans.iter().all(|span| span.closed), "{spans:#?}");

    let agents = recording.named("invoke_agent");
    assert_eq!(agents.len(), 1, "{spans:#?}");
    let agent = &spans[agents[0]];
    assert_eq!(agent.parent, None);
    assert_eq!(agent.field("gen_ai.operation.name"), Some("invoke_agent"));
    assert_eq!(agent.field("gen_ai.agent.name"), Some("calc"));
    assert_eq!(agent.field("agent.domain"), Some("test"));
    assert_eq!(agent.field("session.id"), Some("s-42"));

    let chats = recording.named("chat");
    assert_eq!(chats.len(), 2, "{spans:#?}");
    let input_tokens = SCRIPTED_INPUT_TOKENS.to_string();
    for (&index, finish) in chats.iter().zip(["tool_use", "end_turn"]) {
        let chat = &spans[index];
        assert!(
            recording.ancestors(index).contains(&"invoke_agent"),
            "chat not under invoke_agent: {spans:#?}"
        );
        assert_eq!(chat.field("gen_ai.operation.name"), Some("chat"));
        assert_eq!(chat.field("gen_ai.request.model"), Some("scripted-1"));
        assert_eq!(chat.field("gen_ai.response.model"), Some("scripted-1"));
        // Recorded with `span.record` once the answer is in.
        assert_eq!(
            chat.field("gen_ai.usage.input_tokens"),
            Some(input_tokens.as_str()),
            "{chat:?}"
        );
        let output: u64 = chat
            .field("gen_ai.usage.output_tokens")
            .expect("output tokens recorded")
            .parse()
            .unwrap();
        assert!(output > 0, "{chat:?}");
        assert_eq!(chat.field("gen_ai.response.finish_reasons"), Some(finish));
    }

    let tools = recording.named("execute_tool");
    assert_eq!(tools.len(), 1, "{spans:#?}");
    let tool = &spans[tools[0]];
    assert!(
        recording.ancestors(tools[0]).contains(&"invoke_agent"),
        "execute_tool not under invoke_agent: {spans:#?}"
    );
    assert_eq!(tool.field("gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(tool.field("gen_ai.tool.name"), Some("add"));
    assert_eq!(tool.field("gen_ai.tool.call.id"), Some("c1"));
}

#[tokio::test]
async fn each_round_groups_its_model_call_and_tool_calls() {
    let (recording, _guard) = record();
    let result = AgentLoop::new(config(), add_then_answer())
        .run(&ctx(), "What is 2 + 3?")
        .await;
    assert!(result.is_complete(), "{:?}", result.stop);

    let spans = recording.spans();
    let tree: Vec<_> = spans
        .iter()
        .map(|span| {
            (
                span.name,
                span.parent.map(|parent| spans[parent].name),
                span.field("round").map(str::to_owned),
            )
        })
        .collect();
    let round = |n: &str| Some(n.to_owned());
    assert_eq!(
        tree,
        [
            ("invoke_agent", None, None),
            ("agent.round", Some("invoke_agent"), round("1")),
            ("chat", Some("agent.round"), None),
            ("execute_tool", Some("agent.round"), None),
            ("agent.round", Some("invoke_agent"), round("2")),
            ("chat", Some("agent.round"), None),
        ]
    );
    // The tool call runs in the round of the model call that asked for it.
    assert_eq!(spans[3].parent, spans[2].parent);
}

#[tokio::test]
async fn parallel_and_failing_tool_calls_each_get_an_execute_tool_span() {
    let (recording, _guard) = record();
    let model = ScriptedModel::new(vec![
        responses::tool_calls([
            ("c1", "add", json!({"a": 1, "b": 1})),
            ("c2", "add", json!({"a": "one", "b": 1})),
            ("c3", "multiply", json!({"a": 2, "b": 3})),
        ]),
        responses::text("done"),
    ]);
    let result = AgentLoop::new(config(), model).run(&ctx(), "go").await;
    assert!(result.is_complete(), "{:?}", result.stop);

    let spans = recording.spans();
    let tools = recording.named("execute_tool");
    let calls: Vec<_> = tools
        .iter()
        .map(|&index| {
            (
                spans[index].field("gen_ai.tool.call.id").unwrap(),
                spans[index].field("gen_ai.tool.name").unwrap(),
            )
        })
        .collect();
    assert_eq!(calls, [("c1", "add"), ("c2", "add"), ("c3", "multiply")]);
    for &index in &tools {
        assert!(spans[index].closed);
        assert!(recording.ancestors(index).contains(&"invoke_agent"));
    }
    assert_eq!(recording.named("chat").len(), 2);
}

#[tokio::test]
async fn a_failed_model_call_leaves_the_usage_fields_unrecorded() {
    let (recording, _guard) = record();
    let model = ScriptedModel::from_results([Err(agent_llm::LlmError::Cancelled)]);
    let result = AgentLoop::new(config(), model).run(&ctx(), "go").await;
    assert!(!result.is_complete());

    let spans = recording.spans();
    let chats = recording.named("chat");
    assert_eq!(chats.len(), 1, "{spans:#?}");
    assert!(recording.named("execute_tool").is_empty());
    let chat = &spans[chats[0]];
    assert!(recording.ancestors(chats[0]).contains(&"invoke_agent"));
    assert_eq!(chat.field("gen_ai.request.model"), Some("scripted-1"));
    assert_eq!(chat.field("gen_ai.usage.input_tokens"), None);
    assert_eq!(chat.field("gen_ai.response.finish_reasons"), None);
}

#[derive(Debug, Default, Clone)]
struct Task {
    question: String,
    answer: Option<String>,
}

#[tokio::test]
async fn a_graph_run_nests_agent_spans_under_its_graph_node_span() {
    let agent = Arc::new(AgentLoop::new(config(), add_then_answer()));
    let graph = StateGraph::new()
        .add_node(
            "plan",
            node_fn(|node: &NodeContext<Task>| {
                Box::pin(async move {
                    node.update(|task| task.question = "What is 2 + 3?".into());
                    Ok(())
                })
            }),
        )
        .add_node(
            "solve",
            node_fn(move |node: &NodeContext<Task>| {
                let agent = Arc::clone(&agent);
                Box::pin(async move {
                    let question = node.read(|task| task.question.clone());
                    let result = agent.run(&ctx(), question.as_str()).await;
                    node.update(|task| task.answer = result.final_text);
                    Ok(())
                })
            }),
        )
        .add_edge(START, "plan")
        .add_edge("plan", "solve")
        .add_edge("solve", END)
        .compile()
        .unwrap();

    let (recording, _guard) = record();
    let result = graph
        .run(Task::default(), RunOptions::new().with_run_id("run-7"))
        .await;
    assert_eq!(result.status, RunStatus::Success);
    assert_eq!(result.state.answer.as_deref(), Some("2 + 3 = 5"));

    let spans = recording.spans();
    assert!(spans.iter().all(|span| span.closed), "{spans:#?}");
    let runs = recording.named("graph.run");
    assert_eq!(runs.len(), 1, "{spans:#?}");
    assert_eq!(spans[runs[0]].field("run_id"), Some("run-7"));

    let nodes: Vec<_> = recording
        .named("graph.node")
        .into_iter()
        .map(|index| {
            let span = &spans[index];
            assert_eq!(span.parent, Some(runs[0]), "graph.node outside graph.run");
            (
                span.field("node").unwrap(),
                span.field("step").unwrap().parse::<u64>().unwrap(),
            )
        })
        .collect();
    assert_eq!(nodes.len(), 2, "{spans:#?}");
    assert_eq!((nodes[0].0, nodes[1].0), ("plan", "solve"));
    assert!(nodes[0].1 < nodes[1].1, "steps go up: {nodes:?}");

    let agents = recording.named("invoke_agent");
    assert_eq!(agents.len(), 1, "{spans:#?}");
    let solve = recording.named("graph.node")[1];
    assert_eq!(spans[agents[0]].parent, Some(solve));
    for index in recording
        .named("chat")
        .into_iter()
        .chain(recording.named("execute_tool"))
    {
        assert_eq!(
            recording.ancestors(index).last(),
            Some(&"graph.run"),
            "{spans:#?}"
        );
        assert!(recording.ancestors(index).contains(&"graph.node"));
    }
}
