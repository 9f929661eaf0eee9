//! Searching before collecting with Phase 1's search box, or one detected, in real headless
//! Chromium against the fixture boards on loopback.
#![cfg(test)]

mod support;

use support::{open, with_browser};

use page_explorer::search::{SearchError, Submitted, search};
use page_explorer::{Browser as _, CollectOptions, ListingSelectors, collect};

fn spa_listing() -> ListingSelectors {
    ListingSelectors {
        item: "#jobs > li".into(),
        title: "button".into(),
        link: String::new(),
        ..ListingSelectors::default()
    }
}

#[tokio::test]
async fn phase_one_search_box_narrows_the_listings() {
    let base = support::serve(support::site("board-spa")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let searched = search(browser, Some("#search"), "rust", support::SETTLE)
            .await
            .unwrap();
        assert_eq!(searched.selector, "#search");
        assert!(!searched.detected);
        assert_eq!(searched.submitted, Submitted::EnterKey);
        let found = collect(browser, &CollectOptions::new(spa_listing())).await;
        let titles: Vec<&str> = found.jobs.iter().map(|j| j.title.as_str()).collect();
        // "Rust Engineer", and the embedded role whose text says "C and Rust".
        assert_eq!(titles, ["Rust Engineer", "Embedded Engineer"]);
    })
    .await;
}

#[tokio::test]
async fn a_search_box_is_detected_when_phase_one_named_none_or_a_stale_one() {
    let base = support::serve(support::site("board-spa")).await;
    with_browser(async |browser| {
        for known in [None, Some("#gone")] {
            open(browser, &base).await;
            let searched = search(browser, known, "python", support::SETTLE)
                .await
                .unwrap();
            assert!(searched.detected, "{known:?}");
            assert_eq!(searched.selector, "#search");
            let shown = browser
                .evaluate(
                    "Array.from(document.querySelectorAll('#jobs > li')).map(l => l.innerText)",
                )
                .await
                .unwrap();
            assert_eq!(shown, serde_json::json!(["Data Engineer — Umbrella"]));
        }
    })
    .await;
}

#[tokio::test]
async fn a_board_without_a_search_box_says_so() {
    let base = support::serve(support::site("board-pages")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let error = search(browser, Some("#search"), "rust", support::SETTLE)
            .await
            .unwrap_err();
        assert!(matches!(error, SearchError::NoSearchBox { .. }), "{error}");
        assert_eq!(
            error.to_string(),
            "no search box on the page (Phase 1's \"#search\" matches none)"
        );
    })
    .await;
}

#[tokio::test]
async fn a_form_with_no_script_is_submitted() {
    let base = support::serve(support::site("board-form")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let searched = search(browser, None, "rust", support::SETTLE)
            .await
            .unwrap();
        assert_eq!(searched.selector, "#q");
        assert!(searched.detected);
        assert_eq!(searched.submitted, Submitted::Form);
        let url = browser.url().await.unwrap();
        assert!(url.ends_with("index.html?q=rust"), "{url}");
    })
    .await;
}
