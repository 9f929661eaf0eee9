//! Independent work runs concurrently, under the configured bound: model calls of one
//! step overlap up to `JH_MAX_CONCURRENCY` and never beyond.
#![cfg(test)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_llm::testing::RecordedModel;
use agent_llm::{ChatModel, ChatRequest, ChatResponse, LlmError, StructuredOutputMode};
use agent_runtime::graph::RunStatus;
use async_trait::async_trait;
use job_hunter::{JobHunter, Settings};

/// Answers like the dry run, after a short pause, counting the calls in flight.
struct CountingModel {
    inner: RecordedModel,
    in_flight: AtomicUsize,
    most: AtomicUsize,
}

#[async_trait]
impl ChatModel for CountingModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.inner.respond(request)
    }

    fn structured_output_mode(&self) -> StructuredOutputMode {
        StructuredOutputMode::ForcedTool
    }
}

async fn most_in_flight(bound: usize) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        max_concurrency: bound,
        ..common::settings(dir.path())
    };
    let model = Arc::new(CountingModel {
        inner: job_hunter::dry_run::recorded_model(&common::fixtures()).unwrap(),
        in_flight: AtomicUsize::new(0),
        most: AtomicUsize::new(0),
    });
    let (deps, _) = common::dry_deps(&settings);
    let result = JobHunter::new(deps.with_model(model.clone()), settings.clone())
        .run(common::config("bound", &settings))
        .await
        .unwrap();
    assert_eq!(result.status, RunStatus::Success, "{:?}", result.reason);
    // 48 jobs from the boards and 4 read off Old Mill's careers page; those the search
    // wants are scored.
    assert_eq!(result.state.job_counts.fetched, 52);
    assert_eq!(result.state.scored.len(), result.state.job_counts.kept);
    model.most.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_calls_overlap_up_to_the_bound_and_never_beyond() {
    assert_eq!(most_in_flight(8).await, 8);
    assert_eq!(most_in_flight(3).await, 3);
    assert_eq!(most_in_flight(1).await, 1);
}
