//! Phase 1 as a durable run, in real headless Chromium: an exploration cut off in the middle
//! (its future dropped while a model call is in flight, as a crash would) resumes from the
//! run's journal with the same id, asks the model only what had not been answered, and ends
//! with the Phase 1 output of an uninterrupted run; a finished run is returned as saved.
#![cfg(test)]

mod support;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_llm::testing::RecordedModel;
use agent_llm::{ChatModel, ChatRequest, ChatResponse, LlmError};
use agent_runtime::checkpoint::{CheckpointStore, InMemoryCheckpointStore};
use agent_runtime::{CollectingSink, CostLimits, CostMeter};
use page_explorer::agents::ExplorerModels;
use page_explorer::durable::{DurableExploration, DurableExplore, explore_durable};
use page_explorer::{Browser, ChromiumBrowser, ExploreEvent, ExploreOptions, ExploreStop};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

fn recording(site: &str) -> Arc<RecordedModel> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/page-explorer/dry-run")
        .join(format!("{site}.json"));
    Arc::new(RecordedModel::from_file(&path).unwrap())
}

/// Answers `limit` calls, then never answers again (and says so): the process "dies" with
/// that call in flight.
struct DiesAfter {
    inner: Arc<RecordedModel>,
    limit: usize,
    answered: AtomicUsize,
    dying: Arc<Notify>,
}

#[async_trait::async_trait]
impl ChatModel for DiesAfter {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if self.answered.fetch_add(1, Ordering::SeqCst) >= self.limit {
            self.dying.notify_one();
            std::future::pending::<()>().await;
        }
        self.inner.chat(request).await
    }
}

async fn explore(
    browser: &Arc<ChromiumBrowser>,
    model: Arc<dyn ChatModel>,
    start_url: &str,
    store: Arc<dyn CheckpointStore>,
    cancel: CancellationToken,
) -> (DurableExploration, Vec<ExploreEvent>) {
    let models = ExplorerModels::single(model, CostMeter::new(CostLimits::default()));
    let sink = Arc::new(CollectingSink::default());
    let run = DurableExplore {
        run_id: "board-1".into(),
        store,
        report: sink.clone(),
        cancel,
    };
    let options = ExploreOptions::new("Find how jobs are listed, filtered and paginated");
    let browser: Arc<dyn Browser> = browser.clone();
    let explored = explore_durable(browser, models, start_url, options, run)
        .await
        .unwrap();
    (explored, sink.events())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exploration_cut_off_mid_run_resumes_with_no_answer_asked_twice() {
    for site in ["board-spa", "board-pages"] {
        let base = support::serve(support::site(site)).await;
        let browser = Arc::new(support::launch().await);

        // The reference run, uninterrupted.
        let whole = recording(site);
        let store = Arc::new(InMemoryCheckpointStore::new());
        let (reference, _) = explore(
            &browser,
            whole.clone(),
            &base,
            store,
            CancellationToken::new(),
        )
        .await;
        let total = whole.call_count();
        assert!(reference.exploration.completed, "{site}");
        assert_eq!(reference.replayed, 0);

        // Cut off with the fifth call in flight.
        let store: Arc<dyn CheckpointStore> = Arc::new(InMemoryCheckpointStore::new());
        let first = recording(site);
        let dying = Arc::new(Notify::new());
        let model = Arc::new(DiesAfter {
            inner: first.clone(),
            limit: 4,
            answered: AtomicUsize::new(0),
            dying: dying.clone(),
        });
        tokio::select! {
            _ = explore(&browser, model, &base, store.clone(), CancellationToken::new()) => {
                panic!("{site}: the run finished before its fifth call")
            }
            () = dying.notified() => {}
        }
        assert_eq!(first.call_count(), 4);

        // Resumed: the four answers come from the journal, the rest from the model.
        let second = recording(site);
        let (resumed, events) = explore(
            &browser,
            second.clone(),
            &base,
            store.clone(),
            CancellationToken::new(),
        )
        .await;
        assert_eq!(resumed.replayed, 4, "{site}");
        assert_eq!(second.call_count(), total - 4, "{site}");
        assert!(!resumed.already_finished);
        let exploration = &resumed.exploration;
        assert!(exploration.completed, "{site}");
        assert_eq!(exploration.output, reference.exploration.output, "{site}");
        assert_eq!(exploration.actions, reference.exploration.actions);
        // The meter counts the whole run, replayed answers included.
        assert_eq!(exploration.cost.calls, reference.exploration.cost.calls);
        assert_eq!(exploration.cost.usage, reference.exploration.cost.usage);
        assert!(matches!(events.last(), Some(ExploreEvent::Finished { .. })));

        // Finished: returned as saved, with no model call and no browser action.
        let third = recording(site);
        let (again, events) = explore(
            &browser,
            third.clone(),
            &base,
            store,
            CancellationToken::new(),
        )
        .await;
        let exploration = &resumed.exploration;
        assert!(again.already_finished);
        assert_eq!(third.call_count(), 0);
        assert!(events.is_empty(), "{events:?}");
        assert_eq!(again.exploration.output, reference.exploration.output);
        // The screenshots as the resumed run saved them (a PNG compared, not printed).
        assert!(again.exploration.screenshots == exploration.screenshots);

        Arc::into_inner(browser).unwrap().close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_exploration_keeps_what_it_learned_and_stays_resumable() {
    let base = support::serve(support::site("board-spa")).await;
    let browser = Arc::new(support::launch().await);
    let store: Arc<dyn CheckpointStore> = Arc::new(InMemoryCheckpointStore::new());
    let cancel = CancellationToken::new();
    cancel.cancel();
    let (cancelled, _) = explore(
        &browser,
        recording("board-spa"),
        &base,
        store.clone(),
        cancel,
    )
    .await;
    assert_eq!(cancelled.exploration.stop, Some(ExploreStop::Cancelled));
    assert!(!cancelled.exploration.completed);

    let model = recording("board-spa");
    let (resumed, _) = explore(
        &browser,
        model.clone(),
        &base,
        store,
        CancellationToken::new(),
    )
    .await;
    assert!(resumed.exploration.completed);
    assert!(!resumed.already_finished);
    assert_eq!(model.unused(), Vec::<String>::new());
    Arc::into_inner(browser).unwrap().close().await;
}
