//! The optimization graph (spec 003 section 4, V2 profile):
//!
//! ```text
//! jd_analysis → resume_retrieval → bullet_rewriting ─┬→ ats_scoring ─┬→ gap_analysis → result_aggregation
//!                                     ↑              │               ├→ targeted_repair ─┬→ ats_scoring
//!                                     └─ full_rewrite ┼───────────────┤                   └→ result_aggregation
//!                                                    └→ result_aggregation (budget)      └→ result_aggregation (budget)
//! ```
//!
//! Every node announces itself (`node_started`, `node_finished` with its tokens and
//! calls); model nodes check the budget first and degrade under pressure.

use std::sync::Arc;
use std::time::Instant;

use agent_runtime::graph::{CompiledGraph, END, GraphError, NodeError, START, StateGraph};
use async_trait::async_trait;

use crate::agents::{analyzer, gap, retriever, rewriter, scorer};
use crate::aggregate::finalize;
use crate::budget::{
    COMPACT_SCORER, FULL_REWRITE, NOTHING, SHORT_REWRITE, affords, limit_reached, shortfall,
};
use crate::deps::Deps;
use crate::events::OptimizeEvent;
use crate::guards::{degrade, stop_for_budget};
use crate::llm::{Node, metered, spent};
use crate::records::{BudgetLimit, Degrade, RouteKey};
use crate::repair::repair_targets;
use crate::router::decide_route;
use crate::state::OptimizationState;

/// The most bullets a rewrite asks for under budget pressure (whole chunks only, at
/// least one chunk's); without pressure it asks for every bullet it is given.
const SHORT_REWRITE_BULLETS: usize = 4;

fn limit_name(limit: BudgetLimit) -> &'static str {
    match limit {
        BudgetLimit::Tokens => "token budget",
        BudgetLimit::Calls => "call budget",
        BudgetLimit::WallTime => "time",
    }
}

/// Stops the run for the budget if a limit is already reached; whether it did.
fn budget_spent(ctx: &Node) -> bool {
    let (spent, budget) = (spent(ctx), ctx.read(|s| s.config.budget));
    match limit_reached(&budget, &spent) {
        Some((limit, message)) => {
            stop_for_budget(ctx, limit, message);
            true
        }
        None => ctx.read(|s| s.budget_stop.is_some()),
    }
}

/// The graph's steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    JdAnalysis,
    Retrieval,
    Rewriting,
    Scoring,
    Repair,
    Gap,
    Aggregation,
}

impl Step {
    fn name(self) -> &'static str {
        match self {
            Step::JdAnalysis => "jd_analysis",
            Step::Retrieval => "resume_retrieval",
            Step::Rewriting => "bullet_rewriting",
            Step::Scoring => "ats_scoring",
            Step::Repair => "targeted_repair",
            Step::Gap => "gap_analysis",
            Step::Aggregation => "result_aggregation",
        }
    }
}

struct OptimizerNode {
    deps: Arc<Deps>,
    step: Step,
}

#[async_trait]
impl agent_runtime::graph::Node<OptimizationState, crate::OptimizeEvent> for OptimizerNode {
    async fn run(&self, ctx: &Node) -> Result<(), NodeError> {
        let name = self.step.name();
        let started = Instant::now();
        ctx.update(|s| s.current_node = name.to_owned());
        let before = metered(ctx.session());
        ctx.emit(OptimizeEvent::NodeStarted { node: name.into() });
        let outcome = self.step_run(ctx).await;
        let used = metered(ctx.session()).since(&before);
        ctx.emit(OptimizeEvent::NodeFinished {
            node: name.into(),
            tokens: used.total_tokens(),
            calls: used.calls,
            elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        });
        outcome
    }
}

impl OptimizerNode {
    async fn step_run(&self, ctx: &Node) -> Result<(), NodeError> {
        let deps = &self.deps;
        match self.step {
            Step::JdAnalysis => analyzer::run(ctx, deps).await,
            Step::Retrieval => retriever::run(ctx, deps).await,
            Step::Rewriting => {
                if budget_spent(ctx) {
                    return Ok(());
                }
                let (spent, budget) = (spent(ctx), ctx.read(|s| s.config.budget));
                let max_bullets = if ctx.read(|s| s.degrades.contains(&Degrade::ShortRewrite)) {
                    Some(SHORT_REWRITE_BULLETS)
                } else if affords(&budget, &spent, FULL_REWRITE, COMPACT_SCORER) {
                    None
                } else if let Some(limit) = shortfall(&budget, &spent, SHORT_REWRITE, NOTHING) {
                    stop_for_budget(
                        ctx,
                        limit,
                        format!("the {} left does not cover a rewrite", limit_name(limit)),
                    );
                    return Ok(());
                } else {
                    degrade(
                        ctx,
                        Degrade::ShortRewrite,
                        "the budget left does not cover a full rewrite and its scoring",
                    );
                    Some(SHORT_REWRITE_BULLETS)
                };
                rewriter::rewrite(ctx, deps, max_bullets).await
            }
            Step::Scoring => {
                let rules = scorer::run(ctx, deps).await;
                let spent = spent(ctx);
                let route = ctx.update(|s| {
                    let targets = repair_targets(s, &rules);
                    let route = decide_route(s, &spent, !targets.is_empty());
                    s.route = Some(route.clone());
                    route
                });
                ctx.emit(OptimizeEvent::Routed {
                    next: route.next,
                    reason: route.reason,
                });
                Ok(())
            }
            Step::Repair => {
                if budget_spent(ctx) {
                    return Ok(());
                }
                let targets = ctx.read(|s| repair_targets(s, &scorer::rule_score(s)));
                rewriter::repair(ctx, deps, &targets).await
            }
            Step::Gap => {
                gap::run(ctx, deps).await;
                Ok(())
            }
            Step::Aggregation => {
                let stats = deps.cache.stats();
                let metered = metered(ctx.session());
                let result = ctx.update(|s| {
                    let mut result = finalize(s, &metered);
                    result.cache_stats = stats;
                    s.final_result = Some(result.clone());
                    result
                });
                ctx.emit(OptimizeEvent::OptimizationCompleted {
                    score: result.ats_score,
                    tokens_used: result.total_tokens_used,
                    model_calls: result.model_calls,
                });
                Ok(())
            }
        }
    }
}

/// Where a run goes after writing bullets: scoring, or aggregation once a budget limit
/// was reached.
fn after_writing(state: &OptimizationState) -> &'static str {
    if state.budget_stop.is_some() {
        RouteKey::BudgetReached.as_str()
    } else {
        "score"
    }
}

/// The router's decision, recorded by the scoring node.
fn after_scoring(state: &OptimizationState) -> &'static str {
    state
        .route
        .as_ref()
        .map_or(RouteKey::ProceedToGap, |r| r.next)
        .as_str()
}

/// The optimization graph on `deps`.
pub fn build_graph(
    deps: Arc<Deps>,
) -> Result<CompiledGraph<OptimizationState, OptimizeEvent>, GraphError> {
    let node = |step: Step| OptimizerNode {
        deps: Arc::clone(&deps),
        step,
    };
    let after_writing_branches = [
        ("score", Step::Scoring.name()),
        (RouteKey::BudgetReached.as_str(), Step::Aggregation.name()),
    ];
    StateGraph::new()
        .add_node(Step::JdAnalysis.name(), node(Step::JdAnalysis))
        .add_node(Step::Retrieval.name(), node(Step::Retrieval))
        .add_node(Step::Rewriting.name(), node(Step::Rewriting))
        .add_node(Step::Scoring.name(), node(Step::Scoring))
        .add_node(Step::Repair.name(), node(Step::Repair))
        .add_node(Step::Gap.name(), node(Step::Gap))
        .add_node(Step::Aggregation.name(), node(Step::Aggregation))
        .add_edge(START, Step::JdAnalysis.name())
        .add_edge(Step::JdAnalysis.name(), Step::Retrieval.name())
        .add_edge(Step::Retrieval.name(), Step::Rewriting.name())
        .add_conditional_edges(
            Step::Rewriting.name(),
            after_writing,
            after_writing_branches,
        )
        .add_conditional_edges(Step::Repair.name(), after_writing, after_writing_branches)
        .add_conditional_edges(
            Step::Scoring.name(),
            after_scoring,
            [
                (RouteKey::ProceedToGap.as_str(), Step::Gap.name()),
                (RouteKey::TargetedRepair.as_str(), Step::Repair.name()),
                (RouteKey::FullRewrite.as_str(), Step::Rewriting.name()),
                (RouteKey::BudgetReached.as_str(), Step::Aggregation.name()),
            ],
        )
        .add_edge(Step::Gap.name(), Step::Aggregation.name())
        .add_edge(Step::Aggregation.name(), END)
        .compile()
}
