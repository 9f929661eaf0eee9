//! The paginator and the collector, with real headless Chromium against the fixture sites on
//! loopback.
#![cfg(test)]

mod support;

use page_explorer::collect::ApplyType;
use support::{open, with_browser};

use page_explorer::collect::{write_csv, write_json};
use page_explorer::{
    Advance, CollectEnd, CollectOptions, DetailSelectors, ListingSelectors, PaginationKind,
    Paginator, StopReason, collect,
};

fn board_selectors() -> ListingSelectors {
    ListingSelectors {
        item: "li.job".into(),
        title: "a".into(),
        link: "a".into(),
        company: Some(".company".into()),
        location: Some(".location".into()),
        ..ListingSelectors::default()
    }
}

const BOARD_TITLES: [&str; 12] = [
    "Rust Engineer",
    "Backend Developer",
    "Frontend Engineer",
    "Data Engineer",
    "SRE",
    "Mobile Developer",
    "Security Engineer",
    "QA Engineer",
    "Platform Engineer",
    "ML Engineer",
    "Embedded Engineer",
    "Engineering Manager",
];

#[tokio::test]
async fn collects_every_job_of_the_paged_board_exactly_once() {
    let base = support::serve(support::site("board-pages")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let options = CollectOptions::new(board_selectors());
        let found = collect(browser, &options).await;
        let titles: Vec<&str> = found.jobs.iter().map(|j| j.title.as_str()).collect();
        assert_eq!(found.jobs.len(), 12, "{titles:?}");
        assert_eq!(found.pages, 3);
        assert_eq!(found.end, CollectEnd::Pages(StopReason::NoNextControl));
        for (i, job) in found.jobs.iter().enumerate() {
            assert_eq!(job.apply_url, format!("{base}jobs/{}.html", i + 1));
            // Only the job's own page on the board is linked: how to apply is not known.
            assert_eq!(job.apply_type, ApplyType::Unknown);
            assert!(job.source_page.starts_with(&base), "{}", job.source_page);
        }
        assert_eq!(found.jobs[0].company, "Acme");
        assert_eq!(found.jobs[11].company, "Soylent");
        assert_eq!(titles, BOARD_TITLES);

        let dir = tempfile::tempdir().unwrap();
        write_json(&found.jobs, &dir.path().join("jobs.json")).unwrap();
        write_csv(&found.jobs, &dir.path().join("jobs.csv")).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("jobs.json")).unwrap())
                .unwrap();
        // Spec 002's JobData names; what the page did not show is null, not "".
        let jobs = json.as_array().unwrap();
        assert_eq!(jobs.len(), 12);
        let first = &jobs[0];
        assert_eq!(first["title"], "Rust Engineer");
        assert_eq!(first["company"], "Acme");
        assert_eq!(first["location"], serde_json::Value::Null);
        assert_eq!(first["salary"], serde_json::Value::Null);
        assert_eq!(first["url"], format!("{base}jobs/1.html"));
        assert_eq!(first["applyUrl"], format!("{base}jobs/1.html"));
        assert_eq!(first["applyType"], "unknown");
        assert!(first.get("description").is_some() && first.get("postedDate").is_some());
        let csv = std::fs::read_to_string(dir.path().join("jobs.csv")).unwrap();
        assert_eq!(csv.lines().count(), 13);
        assert!(
            csv.starts_with(
                "title,company,location,salary,url,applyUrl,applyType,postedDate,description,sourcePage\n"
            ),
            "{csv}"
        );
    })
    .await;
}

#[tokio::test]
async fn respects_max_jobs_and_max_pages() {
    let base = support::serve(support::site("board-pages")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let mut options = CollectOptions::new(board_selectors());
        options.max_jobs = 6;
        let found = collect(browser, &options).await;
        assert_eq!(found.jobs.len(), 6);
        assert_eq!(found.end, CollectEnd::MaxJobs);
        assert_eq!(found.jobs[5].apply_url, format!("{base}jobs/6.html"));

        open(browser, &base).await;
        let mut options = CollectOptions::new(board_selectors());
        options.max_pages = 2;
        let found = collect(browser, &options).await;
        assert_eq!(found.jobs.len(), 8);
        assert_eq!(found.pages, 2);
        assert_eq!(found.end, CollectEnd::Pages(StopReason::MaxPages));
    })
    .await;
}

#[tokio::test]
async fn reads_fields_from_detail_pages() {
    let base = support::serve(support::site("board-pages")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let mut options = CollectOptions::new(board_selectors());
        options.max_jobs = 2;
        options.detail = Some(DetailSelectors {
            title: Some("h1".into()),
            company: Some(".company".into()),
            apply: Some("a.apply".into()),
            ..DetailSelectors::default()
        });
        let found = collect(browser, &options).await;
        assert_eq!(found.jobs.len(), 2);
        let first = &found.jobs[0];
        assert_eq!(first.title, "Rust Engineer");
        assert_eq!(first.company, "Acme");
        assert!(
            first.apply_url.starts_with("mailto:"),
            "{}",
            first.apply_url
        );
        assert_eq!(first.apply_type, ApplyType::External);
        // The job's own page stays beside the apply link; its words describe it.
        assert_eq!(first.url, format!("{base}jobs/1.html"));
        assert!(
            first
                .description
                .as_deref()
                .is_some_and(|d| d.contains("A full-time role")),
            "{first:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn detects_the_next_link_and_walks_the_pages() {
    let base = support::serve(support::site("board-pages")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let mut paginator = Paginator::new("li.job", 10);
        let kind = paginator.detect(browser).await.unwrap();
        assert!(
            matches!(kind, Some(PaginationKind::Next { .. })),
            "{kind:?}"
        );
        let moved = paginator.advance(browser).await.unwrap();
        match moved {
            Advance::Moved { url, new_items, .. } => {
                assert_eq!(url, format!("{base}page2.html"));
                assert_eq!(new_items, 4);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            paginator.advance(browser).await.unwrap(),
            Advance::Moved { .. }
        ));
        assert_eq!(
            paginator.advance(browser).await.unwrap(),
            Advance::Stopped(StopReason::NoNextControl)
        );
        assert_eq!(paginator.pages(), 3);
    })
    .await;
}

#[tokio::test]
async fn load_more_collects_every_item_and_stops() {
    let base = support::serve(support::site("board-scroll")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let paginator = Paginator::new("li.job", 10);
        let kind = paginator.detect(browser).await.unwrap();
        assert!(
            matches!(kind, Some(PaginationKind::LoadMore { .. })),
            "{kind:?}"
        );
        let found = collect(browser, &CollectOptions::new(board_selectors())).await;
        assert_eq!(found.jobs.len(), 15);
        assert_eq!(found.pages, 3);
        assert!(matches!(found.end, CollectEnd::Pages(_)), "{:?}", found.end);
        assert_eq!(found.jobs[14].title, "Load Job 15");
        assert_eq!(found.jobs[14].location, "City 15");
        assert_eq!(found.jobs[14].apply_type, ApplyType::External);
        // Listings read again after more loaded are not duplicates.
        assert_eq!(found.duplicates, 0);
        assert!(found.errors.is_empty(), "{:?}", found.errors);
    })
    .await;
}

#[tokio::test]
async fn infinite_scroll_collects_every_item_and_stops() {
    let base = support::serve(support::site("board-scroll")).await;
    with_browser(async |browser| {
        open(browser, &format!("{base}infinite.html")).await;
        let found = collect(browser, &CollectOptions::new(board_selectors())).await;
        let titles: Vec<&str> = found.jobs.iter().map(|j| j.title.as_str()).collect();
        assert_eq!(found.jobs.len(), 24, "{titles:?}");
        assert_eq!(titles[23], "Scroll Job 24");
        assert_eq!(found.pages, 3);
        assert_eq!(found.end, CollectEnd::Pages(StopReason::NoNextControl));
        assert_eq!(found.jobs[0].apply_url, format!("{base}jobs/1.html"));
    })
    .await;
}

#[tokio::test]
async fn a_next_link_to_itself_does_not_loop() {
    let base = support::serve(support::site("board-scroll")).await;
    with_browser(async |browser| {
        open(browser, &format!("{base}loop.html")).await;
        let found = collect(browser, &CollectOptions::new(board_selectors())).await;
        assert_eq!(found.jobs.len(), 2);
        assert_eq!(found.pages, 1);
        assert!(
            matches!(
                found.end,
                CollectEnd::Pages(StopReason::Unchanged | StopReason::Revisited)
            ),
            "{:?}",
            found.end
        );
        assert_eq!(found.jobs[0].apply_type, ApplyType::External);
    })
    .await;
}

#[tokio::test]
async fn phase_one_pagination_selector_is_used_before_detecting_again() {
    let base = support::serve(support::site("board-odd-next")).await;
    with_browser(async |browser| {
        // Detection alone does not know "Onward".
        open(browser, &base).await;
        let alone = Paginator::new("li.job", 10);
        assert_eq!(alone.detect(browser).await.unwrap(), None);
        // Phase 1's selector finds it; one that matches nothing falls back to detecting.
        let mut known = Paginator::new("li.job", 10).with_known_next(Some("a.fwd".into()));
        assert!(
            matches!(known.advance(browser).await.unwrap(), Advance::Moved { .. }),
            "the known control was not followed"
        );
        let here = page_explorer::Browser::url(browser).await.unwrap();
        assert_eq!(here, format!("{base}page2.html"));
        open(browser, &base).await;
        let mut options = CollectOptions::new(ListingSelectors {
            item: "li.job".into(),
            title: "a".into(),
            link: "a".into(),
            ..ListingSelectors::default()
        });
        options.pagination = Some("a.fwd".into());
        let found = collect(browser, &options).await;
        assert_eq!(found.jobs.len(), 3);
        assert_eq!(found.pages, 2);
    })
    .await;
}
