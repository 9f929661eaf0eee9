//! A new product in one file: the template to copy when you embed agent-runtime.
//!
//! The product writes a short cover-letter opening. It has its own state and event types,
//! two typed tools, one agent, one gate (answered here by a simulated user), and a
//! two-node graph whose conditional edge loops back until the user approves.
//! It runs offline on `ScriptedModel`; swap in `ProviderConfig::from_env()` for a real model.
//!
//! ```text
//! cargo run -p examples --example embed_runtime
//! ```

// A command-line program: its output is the point.
#![allow(clippy::print_stdout)]

use agent_llm::testing::{ScriptedModel, responses};
use agent_runtime::graph::{END, NodeError, RunOptions, START, StateGraph, node_fn};
use agent_runtime::{
    AgentConfig, AgentContext, AgentIdentity, AgentLoop, CollectingSink, GateRequest, Session,
    ToolError, tool,
};
use serde_json::json;
use std::sync::Arc;

// 1. The product's state: what its agents share.
#[derive(Debug, Clone, Default)]
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

// 5. A scripted model: two drafting runs of three answers each.
fn scripted_model() -> ScriptedModel {
    let run = |text: &str| {
        [
            responses::tool_call("c1", "lookup_company", json!({ "name": "Acme Pay" })),
            responses::tool_call("c2", "save_draft", json!({ "text": text })),
            responses::text("Draft saved."),
        ]
    };
    ScriptedModel::new(
        run("Acme Pay makes payments simple.")
            .into_iter()
            .chain(run(
                "I want to help Acme Pay make payments simple for everyone.",
            ))
            .collect(),
    )
}

#[derive(serde::Deserialize)]
struct Review {
    approve: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let events = CollectingSink::default();
    let session = Session::new(
        "demo-session",
        Letter {
            company: "Acme Pay".into(),
            ..Letter::default()
        },
    )
    .with_events(events.clone());
    let agent = Arc::new(AgentLoop::new(writer(), scripted_model()));

    // 6. The graph: `draft` runs the agent, `review` waits at a gate; not approved loops back.
    //    Its own state is `()`: the session holds the product state the agents share.
    let (draft_session, draft_agent) = (session.clone(), Arc::clone(&agent));
    let review_session = session.clone();
    let graph = StateGraph::new()
        .add_node(
            "draft",
            node_fn(move |_: &mut (), _ctx| {
                let (session, agent) = (draft_session.clone(), Arc::clone(&draft_agent));
                Box::pin(async move {
                    let company = session.state().read(|l| l.company.clone());
                    let result = agent
                        .run(
                            &session.context(agent.identity().clone()),
                            format!("Write for {company}."),
                        )
                        .await;
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
            node_fn(move |_: &mut (), _ctx| {
                let session = review_session.clone();
                Box::pin(async move {
                    let coordinator =
                        session.context(AgentIdentity::new("coordinator", "cover_letter"));
                    let draft = session.state().read(|l| l.draft.clone());
                    let gate =
                        GateRequest::new("approve_draft").with_payload(json!({ "draft": draft }));
                    let review: Review = coordinator.wait_for_user(gate).await?;
                    session.state().update(|l| l.approved = review.approve);
                    if review.approve {
                        coordinator.emit(LetterEvent::Approved);
                    }
                    Ok(())
                })
            }),
        )
        .add_edge(START, "draft")
        .add_edge("draft", "review");
    let approved = session.clone();
    let graph = graph
        .add_conditional_edges(
            "review",
            move |_: &()| {
                if approved.state().read(|l| l.approved) {
                    "done"
                } else {
                    "revise"
                }
            },
            [("done", END), ("revise", "draft")],
        )
        .compile()?;

    // 7. The user, simulated: rejects the first draft, approves the second.
    let gates = session.gates().clone();
    let user = tokio::spawn(async move {
        for approve in [false, true] {
            let gate = gates.next_pending().await;
            println!(
                "gate {} shows {}; answering approve={approve}",
                gate.id, gate.payload
            );
            gates.respond(&gate.id, json!({ "approve": approve }))?;
        }
        anyhow::Ok(())
    });

    let result = graph.run((), RunOptions::new()).await;
    user.await??;

    let letter = session.state().snapshot();
    println!("graph: {:?} after {:?}", result.status, result.node_names());
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
