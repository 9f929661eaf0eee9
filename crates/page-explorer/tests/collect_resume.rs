//! Phase 2 when pages fail: failed steps are recorded and retried, too many failures in a
//! row stop the collection with the jobs it has, and a checkpointed collection resumes
//! where it stopped. Real headless Chromium against the fixture boards on loopback; the
//! failures are injected by a wrapper around the real browser.
#![cfg(test)]

mod support;

use page_explorer::collect::CollectStep;
use std::sync::Arc;

use agent_runtime::checkpoint::testing::{InterceptedStore, StoreCall};
use agent_runtime::checkpoint::{CheckpointError, FileCheckpointStore, InMemoryCheckpointStore};
use support::flaky::Flaky;
use support::{open, with_shared_browser};

use page_explorer::{
    CollectCheckpoints, CollectEnd, CollectOptions, DetailSelectors, ListingSelectors, StopReason,
    collect, collect_checkpointed, resume_collection,
};

fn board_options() -> CollectOptions {
    CollectOptions::new(ListingSelectors {
        item: "li.job".into(),
        title: "a".into(),
        link: "a".into(),
        company: Some(".company".into()),
        ..ListingSelectors::default()
    })
}

fn titles(jobs: &[page_explorer::CollectedJob]) -> Vec<String> {
    jobs.iter().map(|job| job.title.clone()).collect()
}

fn checkpoints(dir: &std::path::Path) -> CollectCheckpoints {
    CollectCheckpoints::new(Arc::new(FileCheckpointStore::new(dir)), "collect")
}

#[tokio::test]
async fn a_page_that_fails_is_retried_and_recorded() {
    let base = support::serve(support::site("board-pages")).await;
    with_shared_browser(async |browser| {
        open(browser, &base).await;
        let flaky = Flaky::failing_on(browser, "page2", 2);
        let found = collect(&flaky, &board_options()).await;
        assert_eq!(found.jobs.len(), 12, "{:?}", titles(&found.jobs));
        assert_eq!(found.end, CollectEnd::Pages(StopReason::NoNextControl));
        assert_eq!(*flaky.failed.lock().unwrap(), 2);
        // The paginator itself waits out a failure while a page loads; what it gives up
        // on is recorded.
        assert!(!found.errors.is_empty());
        assert!(
            found.errors.iter().all(|e| e.error.contains("on purpose")),
            "{:?}",
            found.errors
        );
        assert_eq!(found.duplicates, 0);
    })
    .await;
}

#[tokio::test]
async fn a_browser_that_dies_stops_the_collection_and_a_resume_finishes_it() {
    let base = support::serve(support::site("board-pages")).await;
    let dir = tempfile::tempdir().unwrap();
    let checkpoints = checkpoints(dir.path());
    let options = board_options();
    with_shared_browser(async |browser| {
        open(browser, &base).await;
        let dying = Arc::new(Flaky::dying_on(browser, "page3"));
        let stopped = collect_checkpointed(dying, &options, &checkpoints)
            .await
            .unwrap();
        assert_eq!(stopped.end, CollectEnd::TooManyErrors);
        assert_eq!(stopped.jobs.len(), 8, "the first two pages are kept");
        assert_eq!(stopped.errors.len(), options.max_consecutive_errors);
        assert!(checkpoints.exists().await.unwrap());
    })
    .await;
    // A new browser, on no page at all: the checkpoint says where to go on.
    with_shared_browser(async |browser| {
        let resumed = resume_collection(browser.clone(), &options, &checkpoints)
            .await
            .unwrap();
        assert_eq!(resumed.end, CollectEnd::Pages(StopReason::NoNextControl));
        assert_eq!(resumed.resumed_jobs, 8);
        assert_eq!(resumed.jobs.len(), 12, "{:?}", titles(&resumed.jobs));
        assert_eq!(resumed.jobs[11].title, "Engineering Manager");
        assert_eq!(
            resumed.duplicates, 0,
            "the jobs carried over are not duplicates"
        );
        assert_eq!(resumed.pages, 3);
        assert_eq!(
            resumed.errors.len(),
            3,
            "the earlier failures stay on record"
        );
        // Finished: resuming again gives the same collection, without browsing.
        let again = resume_collection(browser.clone(), &options, &checkpoints)
            .await
            .unwrap();
        assert_eq!(again.jobs, resumed.jobs);
        assert_eq!(again.end, resumed.end);
    })
    .await;
}

#[tokio::test]
async fn a_collection_cut_off_mid_walk_resumes_from_its_last_page() {
    let base = support::serve(support::site("board-pages")).await;
    let dir = tempfile::tempdir().unwrap();
    let checkpoints = checkpoints(dir.path());
    let options = board_options();
    with_shared_browser(async |browser| {
        open(browser, &base).await;
        // The process "dies" on the third page: its future is dropped there.
        let hanging = Arc::new(Flaky::hanging_on(browser, "page3"));
        tokio::select! {
            _ = collect_checkpointed(hanging.clone(), &options, &checkpoints) => {
                panic!("the collection finished on a page that never answers")
            }
            () = hanging.hung.as_ref().unwrap().notified() => {}
        }
    })
    .await;
    with_shared_browser(async |browser| {
        let resumed = resume_collection(browser.clone(), &options, &checkpoints)
            .await
            .unwrap();
        assert_eq!(resumed.end, CollectEnd::Pages(StopReason::NoNextControl));
        // Saved when the walk reached the second page: the first page's jobs; the
        // second page is read again, its jobs once.
        assert_eq!(resumed.resumed_jobs, 4);
        assert_eq!(resumed.jobs.len(), 12, "{:?}", titles(&resumed.jobs));
        assert_eq!(resumed.duplicates, 0);
        assert!(resumed.errors.is_empty(), "{:?}", resumed.errors);
    })
    .await;
}

#[tokio::test]
async fn detail_pages_left_unread_are_read_on_resume() {
    let base = support::serve(support::site("board-pages")).await;
    let dir = tempfile::tempdir().unwrap();
    let checkpoints = checkpoints(dir.path());
    let mut options = board_options();
    options.max_jobs = 6;
    options.detail = Some(DetailSelectors {
        title: Some("h1".into()),
        apply: Some("a.apply".into()),
        ..DetailSelectors::default()
    });
    with_shared_browser(async |browser| {
        open(browser, &base).await;
        let dying = Arc::new(Flaky::dying_on(browser, "jobs/3.html"));
        let stopped = collect_checkpointed(dying, &options, &checkpoints)
            .await
            .unwrap();
        assert_eq!(stopped.end, CollectEnd::TooManyErrors);
        // Jobs 3, 4 and 5 failed in a row; 6 was never tried.
        assert_eq!(stopped.jobs.len(), 6);
        assert!(
            stopped.jobs[1].apply_url.starts_with("mailto:"),
            "job 2's page was read"
        );
        for job in &stopped.jobs[2..] {
            assert!(job.apply_url.ends_with(".html"), "not read: {job:?}");
        }
        assert!(
            stopped
                .errors
                .iter()
                .all(|e| e.step == CollectStep::Details),
            "{:?}",
            stopped.errors
        );
    })
    .await;
    with_shared_browser(async |browser| {
        let resumed = resume_collection(browser.clone(), &options, &checkpoints)
            .await
            .unwrap();
        assert_eq!(resumed.end, CollectEnd::MaxJobs);
        assert_eq!(resumed.jobs.len(), 6);
        for job in &resumed.jobs {
            assert!(job.apply_url.starts_with("mailto:"), "{job:?}");
        }
    })
    .await;
}

/// A store whose disk fills up after the run's first checkpoint: every later save fails,
/// the rest works.
fn full_disk() -> InterceptedStore {
    InterceptedStore::new(
        Arc::new(InMemoryCheckpointStore::default()),
        |call| match call {
            StoreCall::Save(checkpoint) if checkpoint.seq > 0 => Err(CheckpointError::Io {
                path: format!("{}.json", checkpoint.run_id).into(),
                source: std::io::Error::other("no space left on device"),
            }),
            _ => Ok(()),
        },
    )
}

#[tokio::test]
async fn a_checkpoint_that_cannot_be_written_stops_with_the_jobs_gathered() {
    let base = support::serve(support::site("board-pages")).await;
    let store = full_disk();
    let checkpoints = CollectCheckpoints::new(Arc::new(store), "collect");
    with_shared_browser(async |browser| {
        open(browser, &base).await;
        let found = collect_checkpointed(browser.clone(), &board_options(), &checkpoints)
            .await
            .unwrap();
        assert_eq!(found.end, CollectEnd::CheckpointFailed);
        assert_eq!(found.jobs.len(), 4, "the first page's jobs are kept");
        let error = found.errors.last().unwrap();
        assert_eq!(error.step, CollectStep::Checkpoint);
        assert!(error.error.contains("no space left"), "{error}");
    })
    .await;
}

#[tokio::test]
async fn resuming_a_collection_that_never_ran_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    with_shared_browser(async |browser| {
        let error = resume_collection(browser.clone(), &board_options(), &checkpoints(dir.path()))
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "there is no collection \"collect\" to resume"
        );
    })
    .await;
}
