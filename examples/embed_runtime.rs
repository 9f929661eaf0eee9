//! A new hosted product in one file: the template to copy when you build on agent-runtime.
//!
//! It drafts a cover-letter opening: a graph whose `draft` node runs an agent with a typed
//! tool and whose `review` node asks at a typed gate, looping until the draft is approved.
//! The server hosts it under `/api/letter` (start, SSE stream, answers, status, cancel,
//! OpenAPI), every session and checkpoint in one SQLite file: kill it (`kill -9`) at any
//! point, start it again with the same `--db`, and each session goes on where it was.
//!
//! ```text
//! cargo run -p examples --example embed_runtime -- [--db output/letters.db] [--port 8080]
//! curl -X POST localhost:8080/api/letter/start -d '{"company": "Acme Pay"}'
//! ```
#![allow(clippy::print_stdout)] // a command-line program says where it listens

use agent_backends::SqliteSessionStore;
use agent_llm::testing::{LatencyModel, TestModel};
use agent_runtime::graph::{CompiledGraph, END, GraphError, NodeContext, NodeError};
use agent_runtime::graph::{START, StateGraph, node_fn};
use agent_runtime::{AgentConfig, AgentContext, AgentIdentity, AgentLoop, Gate, ToolError, tool};
use agent_server::{AgentServer, GraphProduct};
use clap::Parser;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::{sync::Arc, time::Duration};

/// The start request.
#[derive(Deserialize, JsonSchema)]
struct Start {
    company: String,
}

/// The state the graph checkpoints and routes on, and the session's result.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
struct Letter {
    company: String,
    draft: Option<String>,
    revisions: u32,
    approved: bool,
}

/// What the stream shows as the work goes on.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
enum LetterEvent {
    Drafted { revision: u32 },
    Approved,
}

/// The typed tool's input: its schema is what the model sees.
#[derive(Deserialize, JsonSchema)]
struct SaveDraft {
    /// The opening paragraph.
    text: String,
}

/// The typed gate: what the user is shown, and what they answer.
#[derive(Serialize, JsonSchema)]
struct DraftToReview {
    draft: String,
}
#[derive(Serialize, Deserialize, JsonSchema)]
struct Review {
    approve: bool,
}
const REVIEW: Gate<DraftToReview, Review> = Gate::new("review");

fn writer() -> AgentConfig<Letter, LetterEvent> {
    let save_draft = |args: SaveDraft, ctx: AgentContext<Letter, LetterEvent>| async move {
        let revision = ctx.update_state(|l| {
            l.draft = Some(args.text);
            l.revisions += 1;
            l.revisions
        });
        ctx.emit(LetterEvent::Drafted { revision });
        Ok::<_, ToolError>("saved")
    };
    let writer = AgentIdentity::new("writer", "letters");
    let save_draft = tool("save_draft", "Saves it.", save_draft);
    AgentConfig::new(writer, "Draft an opening.").with_tool(save_draft)
}

fn graph(latency: Duration) -> Result<CompiledGraph<Letter, LetterEvent>, GraphError> {
    // A model for offline runs: it calls each tool, then answers. Use a real one with
    // `ProviderConfig::from_env()?.chat_model(ModelTier::Primary)?`.
    let model = TestModel::new().with_tool_arguments("save_draft", json!({"text": "Hello!"}));
    let agent = Arc::new(AgentLoop::new(writer(), LatencyModel::new(model, latency)));
    let draft = node_fn(move |ctx: &NodeContext<Letter, LetterEvent>| {
        let agent = Arc::clone(&agent);
        Box::pin(async move {
            let ask = ctx.read(|l| format!("Write to {}, draft {}.", l.company, l.revisions + 1));
            if !ctx.run_agent(&agent, ask).await.is_complete() {
                return Err(NodeError::fatal("the writer did not finish"));
            }
            Ok(())
        })
    });
    let review = node_fn(|ctx: &NodeContext<Letter, LetterEvent>| {
        Box::pin(async move {
            let draft = ctx.read(|l| l.draft.clone().unwrap_or_default());
            let editor = ctx.agent_context(AgentIdentity::new("editor", "letters"));
            let review = editor.ask(&REVIEW, &DraftToReview { draft }).await?;
            ctx.update(|l| l.approved = review.approve);
            if review.approve {
                ctx.emit(LetterEvent::Approved);
            }
            Ok(())
        })
    });
    let approved = |l: &Letter| if l.approved { "done" } else { "revise" };
    StateGraph::new()
        .add_node("draft", draft)
        .add_node("review", review)
        .add_edge(START, "draft")
        .add_edge("draft", "review")
        .add_conditional_edges("review", approved, [("done", END), ("revise", "draft")])
        .compile()
}

/// Serves the letter product.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    log: examples::telemetry::LogArgs,
    /// The SQLite file of the sessions and their checkpoints (made with its directory).
    #[arg(long, default_value = "output/letters.db")]
    db: std::path::PathBuf,
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// How long each model answer takes.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let _telemetry = examples::telemetry::install("embed_runtime", "warn", args.log.log_format)?;
    let store = SqliteSessionStore::open(&args.db).await?;
    // The graph is the product: each start is its first state, its end state the result.
    let graph = graph(Duration::from_millis(args.latency_ms))?;
    let first = |start: Start| Letter {
        company: start.company,
        ..Letter::default()
    };
    let product = GraphProduct::new("letter", graph, first).with_gates([REVIEW.spec()]);
    let server = AgentServer::new(Arc::new(store))
        .with_product(Arc::new(product))
        .with_metrics(agent_server::install_prometheus()?);
    server.resume_unfinished().await?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
    println!("listening on http://{}", listener.local_addr()?);
    Ok(server.serve(listener).await?)
}
