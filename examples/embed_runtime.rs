//! A new product in one file: the template to copy when you embed agent-runtime.
//!
//! The product writes a short cover-letter opening. It has its own state and event types,
//! two typed tools, one agent, one typed gate (answered here by a simulated user), and a
//! two-node graph whose state is the session's and whose conditional edge loops back
//! until the user approves. The run is checkpointed in a SQLite file after every node and
//! every round of the agent: kill it (`kill -9`) at any point and start it again with the
//! same `--db`: it resumes where it was, paying for no model call twice.
//! It runs offline on `ScriptedModel`; swap in `ProviderConfig::from_env()` for a real model.
//!
//! ```text
//! cargo run -p examples --example embed_runtime -- [--db output/embed-runtime.db] [--latency-ms 500]
//! ```

// A command-line program: its output is the point.
#![allow(clippy::print_stdout)]

use agent_backends::SqliteSessionStore;
use agent_llm::Role;
use agent_llm::testing::{LatencyModel, ScriptedModel, responses};
use agent_runtime::checkpoint::CheckpointStore;
use agent_runtime::graph::{END, NodeContext, NodeError, RunOptions, START, StateGraph, node_fn};
use agent_runtime::{
    AgentConfig, AgentContext, AgentIdentity, AgentLoop, CollectingSink, Gate, Session, ToolError,
    tool,
};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

// 1. The product's state: what its agents share, and what the graph checkpoints.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Letter {
    company: String,
    draft: Option<String>,
    approved: bool,
    revisions: u32,
}

// 2. The product's events: what a UI would be shown as things happen.
#[derive(Debug, Clone)]
enum LetterEvent {
    Drafted { revision: u32 },
    Approved,
}

type Ctx = AgentContext<Letter, LetterEvent>;

// 3. Typed tools: the input struct is the schema the model sees.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct LookupCompany {
    /// The company's name.
    name: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SaveDraft {
    /// The opening paragraph.
    text: String,
}

// 4. The agent: a prompt, the tools, limits.
fn writer() -> AgentConfig<Letter, LetterEvent> {
    AgentConfig::new(
        AgentIdentity::new("writer", "cover_letter"),
        "Write a one-paragraph opening.",
    )
    .with_tool(tool(
        "lookup_company",
        "Facts about a company.",
        |args: LookupCompany, _ctx: Ctx| async move {
            Ok::<_, ToolError>(json!({ "name": args.name, "mission": "make payments simple" }))
        },
    ))
    .with_tool(tool(
        "save_draft",
        "Saves the draft.",
        |args: SaveDraft, ctx: Ctx| async move {
            let revision = ctx.update_state(|letter| {
                letter.revisions += 1;
                letter.draft = Some(args.text);
                letter.revisions
            });
            ctx.emit(LetterEvent::Drafted { revision });
            Ok::<_, ToolError>("saved")
        },
    ))
    .with_max_rounds(5)
}

// 5. A scripted model: it answers from the request (the round, the revision asked for),
//    not from a queue, so a run resumed in a new process gets the answers it would have.
fn scripted_model() -> ScriptedModel {
    ScriptedModel::from_fn(|request| {
        let opening = request
            .messages
            .first()
            .map(|m| m.text())
            .unwrap_or_default();
        let text = if opening.contains("revision 2") {
            "I want to help Acme Pay make payments simple for everyone."
        } else {
            "Acme Pay makes payments simple."
        };
        let round = request
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        Ok(match round {
            0 => responses::tool_call("c1", "lookup_company", json!({ "name": "Acme Pay" })),
            1 => responses::tool_call("c2", "save_draft", json!({ "text": text })),
            _ => responses::text("Draft saved."),
        })
    })
}

// 6. A gate, declared once with its answer type.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Review {
    approve: bool,
}

const APPROVE_DRAFT: Gate<Review> = Gate::new("approve_draft");

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut db, mut latency) = ("output/embed-runtime.db".to_owned(), 0);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--db" => db = args.next().unwrap_or(db),
            "--latency-ms" => latency = args.next().and_then(|v| v.parse().ok()).unwrap_or(0),
            other => anyhow::bail!("unknown argument {other:?} (--db FILE, --latency-ms MS)"),
        }
    }
    if let Some(dir) = std::path::Path::new(&db).parent() {
        std::fs::create_dir_all(dir)?;
    }
    let store: Arc<dyn CheckpointStore> =
        Arc::new(SqliteSessionStore::open(&db).await?.checkpoints());
    let events = CollectingSink::default();
    let session = Session::new(
        "demo-session",
        Letter {
            company: "Acme Pay".into(),
            ..Letter::default()
        },
    )
    .with_events(Arc::new(events.clone()));
    let model = LatencyModel::new(scripted_model(), Duration::from_millis(latency));
    let agent = Arc::new(AgentLoop::new(writer(), model));

    // 7. The graph: `draft` runs the agent, `review` waits at the gate; not approved loops
    //    back. Its state is the session's: the agent's tools change what the graph routes
    //    on and checkpoints, and `run_agent` saves the agent after every round.
    let graph = StateGraph::new()
        .add_node(
            "draft",
            node_fn(move |ctx: &NodeContext<Letter, LetterEvent>| {
                let agent = Arc::clone(&agent);
                Box::pin(async move {
                    let (company, revision) = ctx.read(|l| (l.company.clone(), l.revisions + 1));
                    let opening = format!("Write for {company}, revision {revision}.");
                    let result = ctx.run_agent(&agent, opening).await;
                    if result.is_complete() {
                        Ok(())
                    } else {
                        Err(NodeError::fatal(format!(
                            "writer stopped: {:?}",
                            result.stop
                        )))
                    }
                })
            }),
        )
        .add_node(
            "review",
            node_fn(|ctx: &NodeContext<Letter, LetterEvent>| {
                Box::pin(async move {
                    let coordinator =
                        ctx.agent_context(AgentIdentity::new("coordinator", "cover_letter"));
                    let draft = ctx.read(|l| l.draft.clone());
                    let review = coordinator
                        .ask(&APPROVE_DRAFT, json!({ "draft": draft }))
                        .await?;
                    ctx.update(|l| l.approved = review.approve);
                    if review.approve {
                        ctx.emit(LetterEvent::Approved);
                    }
                    Ok(())
                })
            }),
        )
        .add_edge(START, "draft")
        .add_edge("draft", "review")
        .add_conditional_edges(
            "review",
            |l: &Letter| if l.approved { "done" } else { "revise" },
            [("done", END), ("revise", "draft")],
        )
        .compile()?;

    // 8. The user, simulated: rejects the first draft, approves the second.
    let gates = session.gates().clone();
    let user = tokio::spawn(async move {
        loop {
            let gate = gates.next_pending().await;
            let approve = gate.id.ends_with(":2");
            println!(
                "gate {} shows {}; answering approve={approve}",
                gate.id, gate.payload
            );
            gates.respond(&gate.id, json!({ "approve": approve }))?;
        }
        #[allow(unreachable_code)]
        anyhow::Ok(())
    });

    // 9. Run it, or resume it where a killed process left it.
    if store.exists(session.id()).await? {
        println!("resuming {} from {db}", session.id());
    }
    let result = graph
        .run_durable(&session, store, RunOptions::new())
        .await?;
    user.abort();

    println!("graph: {:?} after {:?}", result.status, result.node_names());
    let letter = result.state;
    for event in events.events() {
        match event {
            LetterEvent::Drafted { revision } => println!("event: drafted revision {revision}"),
            LetterEvent::Approved => println!("event: approved"),
        }
    }
    println!(
        "final draft (revision {}): {}",
        letter.revisions,
        letter.draft.unwrap_or_default()
    );
    println!("mermaid:\n{}", graph.to_mermaid());
    Ok(())
}
