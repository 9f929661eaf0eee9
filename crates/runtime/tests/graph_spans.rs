//! Graph nodes run inside `graph.node` spans. Alone in its test binary: tracing caches
//! per-callsite interest across threads, so tests without a subscriber running beside it
//! could hide its spans.
#![cfg(test)]

use agent_runtime::graph::{NodeContext, NodeError, RunOptions, StateGraph, node_fn};
use std::sync::{Arc, Mutex};

#[derive(Debug, Default, Clone)]
struct Counter {
    value: u32,
}

fn add_one() -> agent_runtime::graph::FnNode<Counter> {
    node_fn(|ctx: &NodeContext<Counter>| {
        Box::pin(async move {
            ctx.update(|s| s.value += 1);
            Ok::<(), NodeError>(())
        })
    })
}

/// Records the spans opened, with their fields, to check the node spans.
#[derive(Default)]
struct SpanLog(Mutex<Vec<String>>);

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={:?}", field.name(), value));
    }
}

impl tracing::Subscriber for SpanLog {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut fields = Fields(span.metadata().name().to_owned());
        span.record(&mut fields);
        let mut log = self.0.lock().unwrap();
        log.push(fields.0);
        tracing::span::Id::from_u64(log.len() as u64)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn every_node_runs_in_a_graph_node_span() {
    let log = Arc::new(SpanLog::default());
    let graph = StateGraph::sequence([("a", add_one()), ("b", add_one())])
        .compile()
        .unwrap();
    tracing::subscriber::with_default(log.clone(), || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(graph.run(Counter::default(), RunOptions::new().with_run_id("traced")));
    });
    let spans = log.0.lock().unwrap().clone();
    assert_eq!(
        spans,
        [
            "graph.run run_id=\"traced\"",
            "graph.node node=\"a\" step=1",
            "graph.node node=\"b\" step=2",
        ]
    );
}
