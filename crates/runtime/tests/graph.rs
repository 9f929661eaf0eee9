//! The state graph: building, validation, routing, limits, errors and rendering.
#![cfg(test)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_llm::LlmError;
use agent_runtime::graph::{
    CompiledGraph, END, FnNode, GraphError, Node, NodeContext, NodeError, NodeErrorKind,
    RunContext, RunOptions, RunResult, RunStatus, START, StateGraph, StopKind, node_fn,
};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Default, Clone, PartialEq)]
struct Counter {
    x: i64,
    loops: i64,
}

/// A node adding `dx` to `x` and `dloops` to `loops`, after sleeping `sleep` seconds.
fn bump(dx: i64, dloops: i64, sleep: u64) -> FnNode<Counter> {
    node_fn(move |ctx: &NodeContext<Counter>| {
        Box::pin(async move {
            ctx.update(|s| s.x += dx);
            if sleep > 0 {
                tokio::time::sleep(Duration::from_secs(sleep)).await;
            }
            ctx.update(|s| s.loops += dloops);
            Ok(())
        })
    })
}

fn add_one() -> FnNode<Counter> {
    bump(1, 0, 0)
}

async fn run(graph: &CompiledGraph<Counter>, options: RunOptions) -> RunResult<Counter> {
    graph.run(Counter::default(), options).await
}

/// WORKLOAD.md part C: START→n1→n2→n3→n4, n4 back to n2 while loops < 3, then n5→n6→END.
fn workload_c() -> CompiledGraph<Counter> {
    StateGraph::new()
        .add_node("n1", add_one())
        .add_node("n2", add_one())
        .add_node("n3", add_one())
        .add_node("n4", bump(1, 1, 0))
        .add_node("n5", add_one())
        .add_node("n6", add_one())
        .add_edge(START, "n1")
        .add_edge("n1", "n2")
        .add_edge("n2", "n3")
        .add_edge("n3", "n4")
        .add_conditional_edges(
            "n4",
            |s: &Counter| if s.loops < 3 { "again" } else { "done" },
            [("again", "n2"), ("done", "n5")],
        )
        .add_edge("n5", "n6")
        .add_edge("n6", END)
        .compile()
        .unwrap()
}

#[tokio::test]
async fn the_workload_c_graph_ends_with_x_12_and_3_loops() {
    let result = run(&workload_c(), RunOptions::new()).await;
    assert_eq!(result.status, RunStatus::Success);
    assert_eq!(result.state, Counter { x: 12, loops: 3 });
    assert_eq!(
        result.node_names(),
        [
            "n1", "n2", "n3", "n4", "n2", "n3", "n4", "n2", "n3", "n4", "n5", "n6"
        ]
    );
    let steps: Vec<u64> = result.steps.iter().map(|s| s.step).collect();
    assert_eq!(steps, (1..=12).collect::<Vec<_>>());
    assert!(result.errors.is_empty() && result.reason.is_none() && result.stop.is_none());
    assert!(!result.run_id.is_empty());
}

#[tokio::test]
async fn a_compiled_graph_runs_concurrently_on_other_threads() {
    let graph = Arc::new(workload_c());
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let graph = graph.clone();
            tokio::spawn(async move {
                let options = RunOptions::new().with_run_id(format!("run-{i}"));
                graph.run(Counter::default(), options).await
            })
        })
        .collect();
    for (i, handle) in handles.into_iter().enumerate() {
        let result = handle.await.unwrap();
        assert_eq!(result.run_id, format!("run-{i}"));
        assert_eq!(result.state, Counter { x: 12, loops: 3 });
    }
}

#[derive(Debug, Default, Clone)]
struct Trail {
    score: u32,
    visited: Vec<String>,
}

fn scored(score: u32) -> Trail {
    Trail {
        score,
        visited: Vec::new(),
    }
}

fn visit(label: &'static str) -> impl Node<Trail> {
    node_fn(move |ctx: &NodeContext<Trail>| {
        Box::pin(async move {
            let visit = format!("{label}@{}#{}", ctx.node(), ctx.step());
            ctx.update(|s| s.visited.push(visit));
            Ok(())
        })
    })
}

#[tokio::test]
async fn conditional_edges_route_on_the_state_to_a_node_or_to_end() {
    let graph = StateGraph::new()
        .add_node("score", visit("score"))
        .add_node("repair", visit("repair"))
        .add_node("report", visit("report"))
        .add_conditional_edges(
            START,
            |s: &Trail| if s.score > 100 { "skip" } else { "work" },
            [("work", "score"), ("skip", END)],
        )
        // A router may return an owned String too.
        .add_conditional_edges(
            "score",
            |s: &Trail| String::from(if s.score >= 50 { "pass" } else { "fail" }),
            [("pass", "report"), ("fail", "repair")],
        )
        .add_edge("repair", "report")
        .add_edge("report", END)
        .compile()
        .unwrap();

    let low = graph.run(scored(0), RunOptions::new()).await;
    assert_eq!(
        low.state.visited,
        ["score@score#1", "repair@repair#2", "report@report#3"]
    );

    let high = graph.run(scored(70), RunOptions::new()).await;
    assert_eq!(high.state.visited, ["score@score#1", "report@report#2"]);

    let skipped = graph.run(scored(101), RunOptions::new()).await;
    assert_eq!(skipped.status, RunStatus::Success);
    assert!(skipped.steps.is_empty() && skipped.state.visited.is_empty());
}

#[tokio::test]
async fn a_router_key_without_a_branch_fails_the_run() {
    let graph = one_node()
        .add_edge(START, "a")
        .add_conditional_edges("a", |_: &Counter| "sideways", [("done", END)])
        .compile()
        .unwrap();
    let result = run(&graph, RunOptions::new()).await;
    assert_eq!(result.status, RunStatus::Failed);
    assert_eq!(result.stop, Some(StopKind::UnknownRoute));
    assert!(result.reason.unwrap().contains("\"sideways\""));
    assert_eq!(result.state.x, 1);
}

#[tokio::test]
async fn a_sequence_is_a_pipeline_from_start_to_end() {
    let graph = StateGraph::sequence([("a", visit("a")), ("b", visit("b")), ("c", visit("c"))])
        .compile()
        .unwrap();
    let result = graph.run(Trail::default(), RunOptions::new()).await;
    assert_eq!(result.state.visited, ["a@a#1", "b@b#2", "c@c#3"]);
    assert_eq!(graph.node_names().collect::<Vec<_>>(), ["a", "b", "c"]);
}

struct Multiply(i64);

#[async_trait::async_trait]
impl Node<Counter> for Multiply {
    async fn run(&self, ctx: &NodeContext<Counter>) -> Result<(), NodeError> {
        ctx.update(|state| state.x *= self.0);
        Ok(())
    }
}

#[tokio::test]
async fn struct_nodes_shared_nodes_and_closures_mix_with_then() {
    let shared: Arc<dyn Node<Counter>> = Arc::new(Multiply(10));
    let graph = StateGraph::new()
        .then("one", add_one())
        .then("times_ten", shared.clone())
        .then("times_three", Multiply(3))
        .then("again_ten", shared)
        .add_edge("again_ten", END)
        .compile()
        .unwrap();
    let result = run(&graph, RunOptions::new()).await;
    assert_eq!(result.state.x, 300);
}

fn err(graph: StateGraph<Counter>) -> GraphError {
    graph.compile().expect_err("the graph should not compile")
}

/// Nodes (each adding one) and plain edges.
fn graph(nodes: &[&str], edges: &[(&str, &str)]) -> StateGraph<Counter> {
    let graph = nodes
        .iter()
        .fold(StateGraph::new(), |g, n| g.add_node(*n, add_one()));
    edges
        .iter()
        .fold(graph, |g, (from, to)| g.add_edge(*from, *to))
}

#[test]
fn validation_rejects_each_kind_of_broken_graph() {
    use GraphError as E;
    fn s(text: &str) -> String {
        text.to_owned()
    }
    let x = |_: &Counter| "x";
    assert!(graph(&["a"], &[(START, "a"), ("a", END)]).compile().is_ok());

    let a_to_end = [(START, "a"), ("a", END)];
    assert_eq!(err(graph(&["a", "a"], &a_to_end)), E::DuplicateNode(s("a")));
    for name in [START, END, ""] {
        assert_eq!(err(graph(&[name], &[])), E::InvalidName(s(name)));
    }
    let unknown = |node: &str, from: &str, to: &str| E::UnknownNode {
        node: s(node),
        from: s(from),
        to: s(to),
    };
    let to_b = graph(&["a"], &[(START, "a"), ("a", "b")]);
    assert_eq!(err(to_b), unknown("b", "a", "b"));
    let from_z = graph(&["a"], &[(START, "a"), ("a", END), ("z", "a")]);
    assert_eq!(err(from_z), unknown("z", "z", "a"));
    let branch_to_nowhere =
        graph(&["a"], &[(START, "a")]).add_conditional_edges("a", x, [("x", END), ("y", "no")]);
    assert_eq!(err(branch_to_nowhere), unknown("no", "a", "no"));

    let from_end = err(graph(&["a"], &[(START, "a"), ("a", END), (END, "a")]));
    assert!(matches!(from_end, E::InvalidEdge { from, .. } if from == END));
    let into_start = err(graph(&["a"], &[(START, "a"), ("a", START)]));
    assert!(matches!(into_start, E::InvalidEdge { to, .. } if to == START));

    assert_eq!(err(graph(&["a"], &[("a", END)])), E::NoEntry);
    assert_eq!(err(graph(&[], &[])), E::NoEntry);
    let dead_end = graph(&["a", "b"], &[(START, "a"), ("a", "b")]);
    assert_eq!(err(dead_end), E::NoOutgoingEdge(s("b")));

    let fan_out = graph(
        &["a", "b"],
        &[(START, "a"), ("a", "b"), ("a", END), ("b", END)],
    );
    assert_eq!(err(fan_out), E::MultipleEdges(s("a")));
    let two_routers = graph(&["a"], &[(START, "a")])
        .add_conditional_edges("a", x, [("x", END)])
        .add_conditional_edges("a", x, [("x", END)]);
    assert_eq!(err(two_routers), E::MultipleEdges(s("a")));
    let mixed = graph(&["a"], &a_to_end).add_conditional_edges("a", x, [("x", END)]);
    assert_eq!(err(mixed), E::MixedEdges(s("a")));

    let none: [(&str, &str); 0] = [];
    let no_branches = graph(&["a"], &[(START, "a")]).add_conditional_edges("a", x, none);
    assert!(matches!(err(no_branches), E::InvalidBranches { .. }));
    let twice =
        graph(&["a"], &[(START, "a")]).add_conditional_edges("a", x, [("x", END), ("x", "a")]);
    assert!(matches!(err(twice), E::InvalidBranches { reason, .. } if reason.contains("\"x\"")));

    let orphan = graph(
        &["a", "orphan"],
        &[(START, "a"), ("a", END), ("orphan", END)],
    );
    assert_eq!(err(orphan), E::Unreachable(s("orphan")));
    // a branches into b -> c -> b, which never reaches END.
    let trap = graph(&["a", "b", "c"], &[(START, "a"), ("b", "c"), ("c", "b")])
        .add_conditional_edges("a", |_: &Counter| "in", [("in", "b"), ("out", END)]);
    assert_eq!(err(trap), E::NoPathToEnd(s("b")));

    assert_eq!(
        err(graph(&["a"], &a_to_end).with_step_limit(0)),
        E::ZeroStepLimit
    );
}

fn one_node() -> StateGraph<Counter> {
    StateGraph::new().add_node("a", add_one())
}

#[tokio::test]
async fn the_step_limit_fails_a_run_that_loops_too_long() {
    let graph = one_node()
        .add_edge(START, "a")
        .add_conditional_edges(
            "a",
            |s: &Counter| if s.x < 1_000 { "again" } else { "done" },
            [("again", "a"), ("done", END)],
        )
        .with_step_limit(10)
        .compile()
        .unwrap();
    let result = run(&graph, RunOptions::new()).await;
    assert_eq!(result.status, RunStatus::Failed);
    assert_eq!(result.stop, Some(StopKind::StepLimit));
    assert_eq!(
        result.reason.as_deref(),
        Some("step limit of 10 reached before node \"a\"")
    );
    assert_eq!(result.state.x, 10);
    assert_eq!(result.steps.len(), 10);
}

#[tokio::test(start_paused = true)]
async fn a_node_that_times_out_fails_the_run_and_keeps_the_state() {
    let graph = StateGraph::sequence([
        ("quick", add_one()),
        ("slow", bump(100, 1, 3600)),
        ("never", add_one()),
    ])
    .compile()
    .unwrap();
    let options = RunOptions::new().with_node_timeout(Duration::from_secs(5));
    let result = run(&graph, options).await;
    assert_eq!(result.status, RunStatus::Failed);
    assert_eq!(result.stop, Some(StopKind::NodeTimeout));
    assert_eq!(
        result.reason.as_deref(),
        Some("node \"slow\" timed out after 5s")
    );
    assert_eq!(result.state, Counter { x: 101, loops: 0 });
    assert_eq!(result.node_names(), ["quick", "slow"]);
}

#[tokio::test(start_paused = true)]
async fn a_nodes_time_queued_for_the_model_server_is_not_work() {
    use agent_llm::capacity::{CapacityLimited, ModelCapacity};
    use agent_llm::testing::{LatencyModel, ScriptedModel};
    use agent_llm::{ChatModel, ChatRequest};
    // One slot, held for 60 s by a call outside the run; the node's own call takes 2 s.
    let capacity = ModelCapacity::new(1);
    let slow = LatencyModel::new(
        ScriptedModel::from_texts(["busy", "mine"]),
        Duration::from_secs(60),
    );
    let model = Arc::new(CapacityLimited::new(slow, capacity.clone()));
    let busy = model.clone();
    let holder = tokio::spawn(async move { busy.chat(&ChatRequest::from_prompt("x")).await });
    tokio::task::yield_now().await;
    let quick = Arc::new(CapacityLimited::new(
        LatencyModel::new(ScriptedModel::from_texts(["mine"]), Duration::from_secs(2)),
        capacity,
    ));
    let calling = node_fn(move |ctx: &NodeContext<Counter>| {
        let quick = quick.clone();
        Box::pin(async move {
            quick
                .chat(&ChatRequest::from_prompt("mine"))
                .await
                .map_err(|e| NodeError::fatal(e.to_string()))?;
            ctx.update(|s| s.x += 1);
            Ok(())
        })
    });
    let graph = StateGraph::sequence([("call", calling)]).compile().unwrap();
    let options = RunOptions::new().with_node_timeout(Duration::from_secs(5));
    let result = run(&graph, options).await;
    assert_eq!(result.status, RunStatus::Success, "{:?}", result.reason);
    assert_eq!(result.state.x, 1);
    assert!(result.steps[0].elapsed >= Duration::from_secs(60));
    holder.await.unwrap().unwrap();
}

fn failing(error: fn() -> NodeError) -> FnNode<Counter> {
    node_fn(move |ctx: &NodeContext<Counter>| {
        Box::pin(async move {
            ctx.update(|s| s.x += 10);
            Err(error())
        })
    })
}

#[tokio::test]
async fn a_recoverable_error_is_recorded_and_the_run_goes_on() {
    let graph = StateGraph::sequence([
        ("a", add_one()),
        (
            "flaky",
            failing(|| NodeError::recoverable("board 3 did not answer")),
        ),
        ("c", add_one()),
    ])
    .compile()
    .unwrap();
    let result = run(&graph, RunOptions::new()).await;
    assert_eq!(result.status, RunStatus::Success);
    assert_eq!(result.state.x, 12);
    assert_eq!(result.errors.len(), 1);
    let failure = &result.errors[0];
    assert_eq!((failure.node.as_str(), failure.step), ("flaky", 2));
    assert_eq!(failure.kind, NodeErrorKind::Recoverable);
    assert_eq!(failure.message, "board 3 did not answer");
}

#[tokio::test]
async fn a_fatal_error_fails_the_run_with_the_state() {
    let graph = StateGraph::sequence([
        ("a", add_one()),
        ("b", failing(|| NodeError::fatal("no resume"))),
        ("c", add_one()),
    ])
    .compile()
    .unwrap();
    let result = run(&graph, RunOptions::new()).await;
    assert_eq!(result.status, RunStatus::Failed);
    assert_eq!(result.stop, Some(StopKind::NodeFailed));
    assert_eq!(
        result.reason.as_deref(),
        Some("node \"b\" failed: no resume")
    );
    assert_eq!(result.state.x, 11);
}

#[tokio::test]
async fn a_limit_error_from_a_model_call_ends_the_run_partial_with_the_state() {
    // What `?` on a model call refused by a cost meter produces.
    let refused = || {
        NodeError::from(LlmError::LimitExceeded(agent_llm::Limit::Usd {
            spent: 2.0,
            max: 2.0,
            stand_in_tokens: None,
        }))
    };
    let graph = StateGraph::sequence([
        ("gather", add_one()),
        ("score", failing(refused)),
        ("notify", add_one()),
    ])
    .compile()
    .unwrap();
    let result = run(&graph, RunOptions::new()).await;
    assert_eq!(result.status, RunStatus::Partial);
    assert_eq!(result.stop, Some(StopKind::Limit));
    assert!(
        result
            .reason
            .unwrap()
            .contains("spent $2.0000 of a $2.0000 limit")
    );
    assert_eq!(result.state.x, 11);
    assert_eq!(result.errors[0].kind, NodeErrorKind::Limit);

    assert_eq!(
        NodeError::from(LlmError::Cancelled).kind(),
        NodeErrorKind::Fatal
    );
    assert_eq!(
        NodeError::from(LlmError::Timeout("read".into())).kind(),
        NodeErrorKind::Fatal
    );
}

#[tokio::test]
async fn a_limit_hook_stops_the_run_partial_before_the_next_node() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let options = RunOptions::new()
        .with_limit_check(|| None)
        .with_limit_check(move || {
            (seen.fetch_add(1, Ordering::SeqCst) >= 5)
                .then(|| "cost limit of $1.00 reached".to_owned())
        });
    let result = run(&workload_c(), options).await;
    assert_eq!(result.status, RunStatus::Partial);
    assert_eq!(result.stop, Some(StopKind::Limit));
    assert_eq!(
        result.reason.as_deref(),
        Some("cost limit of $1.00 reached")
    );
    assert_eq!(result.state.x, 5);
    assert_eq!(calls.load(Ordering::SeqCst), 6);
}

#[tokio::test(start_paused = true)]
async fn an_exhausted_wall_time_budget_stops_the_run_partial_between_nodes() {
    let slow = || bump(1, 0, 20);
    let graph = StateGraph::sequence([("a", slow()), ("b", slow()), ("c", slow())])
        .compile()
        .unwrap();
    let options = RunOptions::new().with_wall_time_budget(Duration::from_secs(30));
    let result = run(&graph, options).await;
    assert_eq!(result.status, RunStatus::Partial);
    assert_eq!(result.stop, Some(StopKind::WallTime));
    assert_eq!(result.state.x, 2);
    assert!(result.reason.unwrap().contains("before node \"c\""));
}

#[tokio::test]
async fn cancellation_fails_the_run_before_or_during_a_node_and_keeps_the_state() {
    let token = CancellationToken::new();
    token.cancel();
    let before = run(&workload_c(), RunOptions::new().with_cancellation(token)).await;
    assert_eq!(
        (before.status, before.stop),
        (RunStatus::Failed, Some(StopKind::Cancelled))
    );
    assert!(before.steps.is_empty());

    let token = CancellationToken::new();
    let started = Arc::new(tokio::sync::Notify::new());
    let signal = started.clone();
    let graph = StateGraph::sequence([
        ("a", add_one()),
        (
            "wait",
            node_fn(move |ctx: &NodeContext<Counter>| {
                let signal = signal.clone();
                Box::pin(async move {
                    ctx.update(|s| s.x += 10);
                    signal.notify_one();
                    std::future::pending::<()>().await;
                    Ok(())
                })
            }),
        ),
    ])
    .compile()
    .unwrap();
    let canceller = token.clone();
    tokio::spawn(async move {
        started.notified().await;
        canceller.cancel();
    });
    let during = run(&graph, RunOptions::new().with_cancellation(token)).await;
    assert_eq!(during.status, RunStatus::Failed);
    assert_eq!(during.stop, Some(StopKind::Cancelled));
    assert_eq!(
        during.reason.as_deref(),
        Some("cancelled while node \"wait\" was running")
    );
    assert_eq!(during.state.x, 11);
}

#[tokio::test]
async fn once_runs_a_side_effect_once_per_key_within_a_run() {
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    let graph = one_node()
        .add_node(
            "notify",
            node_fn(move |ctx: &NodeContext<Counter>| {
                let counter = counter.clone();
                Box::pin(async move {
                    let id: usize = ctx
                        .once("digest-email", || async {
                            Ok::<_, NodeError>(counter.fetch_add(1, Ordering::SeqCst))
                        })
                        .await?;
                    let per_visit = format!("ping-{}", ctx.step());
                    ctx.once(&per_visit, || async { Ok::<_, NodeError>(()) })
                        .await?;
                    ctx.update(|s| {
                        s.loops += 1;
                        s.x += i64::try_from(id).unwrap();
                    });
                    Ok(())
                })
            }),
        )
        .add_edge(START, "a")
        .add_edge("a", "notify")
        .add_conditional_edges(
            "notify",
            |s: &Counter| if s.loops < 3 { "again" } else { "done" },
            [("again", "a"), ("done", END)],
        )
        .compile()
        .unwrap();
    let result = run(&graph, RunOptions::new()).await;
    assert_eq!(result.status, RunStatus::Success);
    assert_eq!(sent.load(Ordering::SeqCst), 1);
    assert_eq!(result.state.loops, 3);

    let ctx = RunContext::standalone("alone");
    let failed: Result<u8, NodeError> = ctx
        .once("k", || async { Err(NodeError::recoverable("smtp down")) })
        .await;
    assert_eq!(failed.unwrap_err().kind(), NodeErrorKind::Recoverable);
    assert!(ctx.journal().is_empty(), "a failed effect records nothing");
    assert_eq!(
        ctx.once("k", || async { Ok::<_, NodeError>(5u8) })
            .await
            .unwrap(),
        5
    );
    assert_eq!(ctx.journal().get("k"), Some(serde_json::json!(5)));
}

#[test]
fn the_mermaid_rendering_shows_start_end_and_labelled_branches() {
    insta::assert_snapshot!("workload_c_mermaid", workload_c().to_mermaid());
}

#[test]
fn mermaid_ids_stay_valid_for_awkward_names() {
    let graph = StateGraph::sequence([
        ("end", add_one()),
        ("fetch page", add_one()),
        ("say \"hi\"", add_one()),
    ])
    .compile()
    .unwrap();
    let text = graph.to_mermaid();
    assert!(text.contains("__node0[\"end\"]"), "{text}");
    assert!(text.contains("__node1[\"fetch page\"]"), "{text}");
    assert!(text.contains("__node2[\"say #quot;hi#quot;\"]"), "{text}");
    assert!(text.contains("__node2 --> __end__"), "{text}");
}

/// Times WORKLOAD.md part C without checkpoints. A measurement, not an assertion:
/// `cargo test --release -p agent-runtime --test graph -- --ignored --nocapture`.
#[test]
#[ignore = "benchmark; run in release with --ignored --nocapture"]
#[allow(clippy::print_stderr)]
fn bench_workload_c_without_checkpoints() {
    let graph = workload_c();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let warm = run(&graph, RunOptions::new()).await;
        assert_eq!(warm.state, Counter { x: 12, loops: 3 });
        let runs = 20_000u32;
        let start = std::time::Instant::now();
        for _ in 0..runs {
            assert_eq!(run(&graph, RunOptions::new()).await.state.x, 12);
        }
        let elapsed = start.elapsed();
        eprintln!(
            "workload C, no checkpoints: {:.3} us/transition, {:.2} us/run ({runs} runs in {elapsed:?})",
            elapsed.as_secs_f64() * 1e6 / f64::from(runs * 12),
            elapsed.as_secs_f64() * 1e6 / f64::from(runs),
        );
    });
}
