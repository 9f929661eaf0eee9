//! Framework overhead of agent-runtime on the workloads of `../shared/bench/WORKLOAD.md`:
//! A (loop overhead), B (concurrent sessions), C (state graph, with and without an
//! in-memory checkpoint store). The model is fake, so the figures are the runtime's own
//! cost. Run in release:
//!
//! ```text
//! cargo run --release -p examples --example runtime_bench
//! ```
//!
//! Prints one line per figure: `name value unit` (labels in braces tell the variants of
//! one figure apart). `--features mimalloc` runs it on mimalloc instead of the system
//! allocator (the first line says which).

// A command-line program: its output is the point.
#![allow(clippy::print_stdout, clippy::print_stderr)]

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use agent_llm::{ChatModel, ChatRequest, ChatResponse, ContentBlock, LlmError, StopReason, Usage};
use agent_runtime::{
    AgentConfig, AgentContext, AgentIdentity, AgentLoop, Session, ToolError, tool,
};
use anyhow::{Context, ensure};
use async_trait::async_trait;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The request-driven fake model of WORKLOAD.md: `k` tool results so far decide the answer.
struct FakeModel {
    rounds: usize,
    latency: Option<Duration>,
}

#[async_trait]
impl ChatModel for FakeModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if let Some(latency) = self.latency {
            tokio::time::sleep(latency).await;
        }
        let k = request
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .filter(|b| matches!(b, ContentBlock::ToolResult { .. }))
            .count();
        let (content, stop_reason) = if k < self.rounds {
            let (name, input) = if k % 2 == 0 {
                ("echo", json!({ "text": format!("hello {k}") }))
            } else {
                ("add", json!({ "a": k, "b": 1 }))
            };
            let call = ContentBlock::ToolUse {
                id: format!("call_{k}"),
                name: name.into(),
                input,
            };
            (vec![call], StopReason::ToolUse)
        } else {
            (
                vec![ContentBlock::text(format!("done after {k} tool calls"))],
                StopReason::EndTurn,
            )
        };
        Ok(ChatResponse {
            id: String::new(),
            model: "fake".into(),
            content,
            stop_reason,
            usage: Usage::default(),
        })
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

type Ctx = AgentContext<(), ()>;

fn agent(rounds: usize, latency: Option<Duration>) -> AgentLoop<(), (), FakeModel> {
    let config = AgentConfig::new(AgentIdentity::new("bench", "bench"), "")
        .with_tool(tool(
            "echo",
            "Echoes the text.",
            |args: Echo, _: Ctx| async move { Ok::<_, ToolError>(args.text) },
        ))
        .with_tool(tool(
            "add",
            "Adds two integers.",
            |args: Add, _: Ctx| async move { Ok::<_, ToolError>(args.a + args.b) },
        ))
        .with_max_rounds(rounds as u32 + 1)
        .with_compaction(None);
    AgentLoop::new(config, FakeModel { rounds, latency })
}

async fn invoke(
    agent: &AgentLoop<(), (), FakeModel>,
    session: &Session<(), ()>,
    rounds: usize,
) -> anyhow::Result<()> {
    let result = agent
        .run(&session.context(agent.identity().clone()), "go")
        .await;
    let expected = format!("done after {rounds} tool calls");
    ensure!(
        result.final_text.as_deref() == Some(expected.as_str()),
        "bad final text: {:?} ({:?})",
        result.final_text,
        result.stop
    );
    ensure!(
        result.transcript.len() == 2 + 2 * rounds,
        "bad transcript length {}",
        result.transcript.len()
    );
    Ok(())
}

/// Resident memory now and at its peak, in KiB, from /proc/self/status.
fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn workload_a() -> anyhow::Result<()> {
    const ROUNDS: usize = 10;
    const INVOCATIONS: usize = 2_000;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let agent = agent(ROUNDS, None);
        let session = Session::new("a", ());
        // What one invocation holds while it waits (inline in its task; workload B's
        // memory per session is mostly this).
        let ctx = session.context(agent.identity().clone());
        let invocation = std::mem::size_of_val(&agent.run(&ctx, "go"));
        println!("loop_future_bytes {invocation} B");
        invoke(&agent, &session, ROUNDS).await?; // warm-up and sanity check
        let started = Instant::now();
        for _ in 0..INVOCATIONS {
            invoke(&agent, &session, ROUNDS).await?;
        }
        let elapsed = started.elapsed();
        println!(
            "loop_us_per_round {:.3} us",
            elapsed.as_secs_f64() * 1e6 / (INVOCATIONS * ROUNDS) as f64
        );
        println!("loop_s {:.4} s", elapsed.as_secs_f64());
        println!("loop_peak_rss_mib {:.1} MiB", rss_kib().1 as f64 / 1024.0);
        anyhow::Ok(())
    })
}

fn workload_b(flavour: &str, sessions: usize) -> anyhow::Result<()> {
    const ROUNDS: usize = 5;
    let runtime = match flavour {
        "current_thread" => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        _ => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?,
    };
    runtime.block_on(async {
        let agent = Arc::new(agent(ROUNDS, Some(Duration::from_millis(50))));
        let (baseline, _) = rss_kib();
        let started = Instant::now();
        let mut tasks = Vec::with_capacity(sessions);
        for i in 0..sessions {
            let agent = Arc::clone(&agent);
            tasks.push(tokio::spawn(async move {
                let session = Session::new(format!("b{i}"), ());
                invoke(&agent, &session, ROUNDS).await
            }));
        }
        // Sample memory while every session is waiting on its model.
        tokio::time::sleep(Duration::from_millis(125)).await;
        let (during, _) = rss_kib();
        for task in tasks {
            task.await.context("a session panicked")??;
        }
        let wall = started.elapsed().as_secs_f64();
        let labels = format!("{{flavour=\"{flavour}\",sessions=\"{sessions}\"}}");
        println!("concurrent_wall_s{labels} {wall:.3} s");
        let per_session = during.saturating_sub(baseline) as f64 / sessions as f64;
        println!("concurrent_rss_kib_per_session{labels} {per_session:.2} KiB");
        anyhow::Ok(())
    })
}

fn main() -> anyhow::Result<()> {
    let process = Instant::now();
    // `runtime_bench a c` runs only workloads A and C; no argument runs all three.
    let chosen: Vec<String> = std::env::args().skip(1).map(|a| a.to_lowercase()).collect();
    // `b:<flavour>:<sessions>`: one workload B configuration (the parent starts these).
    if let Some(config) = chosen.iter().find_map(|c| c.strip_prefix("b:")) {
        let (flavour, sessions) = config.split_once(':').context("b:<flavour>:<sessions>")?;
        return workload_b(flavour, sessions.parse()?);
    }
    let allocator = if cfg!(feature = "mimalloc") {
        "mimalloc"
    } else {
        "system"
    };
    println!("allocator{{name=\"{allocator}\"}} 1 flag");
    let wanted = |name: &str| chosen.is_empty() || chosen.iter().any(|c| c == name);
    if wanted("a") {
        workload_a()?;
    }
    if wanted("b") {
        // Each configuration in a fresh process, so its memory figure is its own.
        for flavour in ["current_thread", "multi_thread"] {
            for sessions in [1_000, 10_000] {
                let status = std::process::Command::new(std::env::current_exe()?)
                    .arg(format!("b:{flavour}:{sessions}"))
                    .status()
                    .context("starting a workload B process")?;
                ensure!(
                    status.success(),
                    "workload B ({flavour}, {sessions}) failed"
                );
            }
        }
    }
    if wanted("c") {
        graph_bench::workload_c()?;
    }
    println!("process_wall_s {:.3} s", process.elapsed().as_secs_f64());
    Ok(())
}

mod graph_bench {
    use agent_runtime::checkpoint::{CheckpointStore, InMemoryCheckpointStore};
    use agent_runtime::graph::{
        CompiledGraph, END, NodeContext, RunOptions, RunStatus, START, StateGraph, node_fn,
    };
    use anyhow::ensure;
    use std::sync::Arc;
    use std::time::Instant;

    const RUNS: usize = 20_000;
    const TRANSITIONS: usize = 12;

    #[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
    struct State {
        x: i64,
        loops: i64,
    }

    /// n1 -> n2 -> n3 -> n4 -> (n2 while loops < 3, else n5) -> n6: 12 transitions.
    fn graph() -> anyhow::Result<CompiledGraph<State>> {
        let step = || {
            node_fn(|ctx: &NodeContext<State>| {
                Box::pin(async move {
                    ctx.update(|s| s.x += 1);
                    Ok(())
                })
            })
        };
        let graph = StateGraph::new()
            .add_node("n1", step())
            .add_node("n2", step())
            .add_node("n3", step())
            .add_node(
                "n4",
                node_fn(|ctx: &NodeContext<State>| {
                    Box::pin(async move {
                        ctx.update(|s| {
                            s.x += 1;
                            s.loops += 1;
                        });
                        Ok(())
                    })
                }),
            )
            .add_node("n5", step())
            .add_node("n6", step())
            .add_edge(START, "n1")
            .add_edge("n1", "n2")
            .add_edge("n2", "n3")
            .add_edge("n3", "n4")
            .add_conditional_edges(
                "n4",
                |s: &State| if s.loops < 3 { "again" } else { "on" },
                [("again", "n2"), ("on", "n5")],
            )
            .add_edge("n5", "n6")
            .add_edge("n6", END)
            .compile()?;
        Ok(graph)
    }

    pub fn workload_c() -> anyhow::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let graph = graph()?;
            let started = Instant::now();
            for _ in 0..RUNS {
                let result = graph.run(State::default(), RunOptions::new()).await;
                ensure!(
                    result.status == RunStatus::Success
                        && result.state.x == 12
                        && result.state.loops == 3,
                    "bad run: {:?}",
                    result.state
                );
            }
            let per_transition =
                started.elapsed().as_secs_f64() * 1e6 / (RUNS * TRANSITIONS) as f64;
            println!("graph_us_per_transition {per_transition:.3} us");

            let store = Arc::new(InMemoryCheckpointStore::new());
            let dyn_store: Arc<dyn CheckpointStore> = store.clone();
            let started = Instant::now();
            for i in 0..RUNS {
                let options = RunOptions::new().with_run_id(format!("run-{i}"));
                let result = graph
                    .run_checkpointed(State::default(), dyn_store.clone(), options)
                    .await?;
                ensure!(
                    result.status == RunStatus::Success && result.state.x == 12,
                    "bad checkpointed run: {:?}",
                    result.state
                );
            }
            let per_transition =
                started.elapsed().as_secs_f64() * 1e6 / (RUNS * TRANSITIONS) as f64;
            println!("graph_ckpt_us_per_transition {per_transition:.3} us");
            println!("graph_ckpt_runs_retained {} runs", store.run_count());
            println!(
                "graph_ckpt_checkpoints_retained {} checkpoints",
                store.checkpoint_count()
            );
            // Memory held after 20,000 checkpointed runs: bounded by the store's retention.
            println!(
                "graph_ckpt_rss_mib {:.1} MiB",
                super::rss_kib().0 as f64 / 1024.0
            );
            anyhow::Ok(())
        })
    }
}
