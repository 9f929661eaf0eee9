//! Inferring listing selectors from a few example selectors, and collecting with them, with
//! real headless Chromium against the fixture sites on loopback: a paged board with links and
//! a single-page board whose listings are buttons that fill a details panel.
#![cfg(test)]

mod support;

use page_explorer::collect::ApplyType;
use support::{SETTLE, open, strings, with_browser};

use page_explorer::collect::DetailMode;
use page_explorer::listing::{infer_detail_page, infer_panel};
use page_explorer::{
    Browser, ChromiumBrowser, CollectEnd, CollectOptions, ListingSelectors, StopReason, collect,
    infer_listing,
};
use serde_json::Value;

/// For each element the item selector matches: the text of its title, the href of its link
/// and the text of its company, read with the relative selectors.
async fn read_items(browser: &ChromiumBrowser, listing: &ListingSelectors) -> Vec<[String; 3]> {
    let js = format!(
        "Array.from(document.querySelectorAll({item})).map(item => {{
            const pick = sel => sel === null ? null : (sel === '' ? item : item.querySelector(sel));
            const text = e => e ? e.textContent.replace(/\\s+/g, ' ').trim() : '';
            const link = pick({link});
            const a = link && (link.matches('a[href]') ? link : link.querySelector('a[href]'));
            return [text(pick({title})), a ? a.getAttribute('href') : '', text(pick({company}))];
        }})",
        item = Value::from(listing.item.as_str()),
        title = Value::from(listing.title.as_str()),
        link = Value::from(listing.link.as_str()),
        company = Value::from(listing.company.clone()),
    );
    serde_json::from_value(browser.evaluate(&js).await.unwrap()).unwrap()
}

const PAGE_ONE: [[&str; 3]; 4] = [
    ["Rust Engineer", "jobs/1.html", "Acme"],
    ["Backend Developer", "jobs/2.html", "Globex"],
    ["Frontend Engineer", "jobs/3.html", "Initech"],
    ["Data Engineer", "jobs/4.html", "Umbrella"],
];

#[tokio::test]
async fn infers_the_paged_board_from_one_or_two_examples() {
    let base = support::serve(support::site("board-pages")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        for examples in [
            strings(&["#jobs > li:nth-child(2) > a"]),
            strings(&["#jobs > li:nth-child(1) > a", "#jobs > li:nth-child(3)"]),
            strings(&[
                "li:nth-child(4) span.company",
                "#jobs > li:nth-child(2) > a",
            ]),
        ] {
            let listing = infer_listing(browser, &examples)
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("{examples:?} gives no listing"));
            assert!(!listing.item.contains("nth"), "{listing:?}");
            assert_eq!(read_items(browser, &listing).await, PAGE_ONE, "{listing:?}");
            assert!(listing.link.is_empty() || listing.link.starts_with('a'));
        }
    })
    .await;
}

#[tokio::test]
async fn infers_the_buttons_of_the_single_page_board() {
    let base = support::serve(support::site("board-spa")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        for examples in [
            strings(&[r#"[data-testid="job-3"]"#]),
            strings(&[
                "#jobs > li:nth-child(2) > button",
                "#jobs > li:nth-child(5)",
            ]),
        ] {
            let listing = infer_listing(browser, &examples).await.unwrap().unwrap();
            assert_eq!(listing.link, "", "{listing:?}");
            let items = read_items(browser, &listing).await;
            assert_eq!(items.len(), 12, "{listing:?}");
            assert_eq!(items[0][0], "Rust Engineer — Acme");
            assert_eq!(items[11][0], "Engineering Manager — Soylent");
            assert!(items.iter().all(|[_, link, _]| link.is_empty()));
        }
        // Nothing to generalize from.
        for examples in [
            strings(&[]),
            strings(&["#no-such-element"]),
            strings(&["#apply-frame >>> #email"]),
            strings(&["((not a selector"]),
        ] {
            assert_eq!(infer_listing(browser, &examples).await.unwrap(), None);
        }
    })
    .await;
}

#[tokio::test]
async fn collects_the_paged_board_with_inferred_selectors() {
    let base = support::serve(support::site("board-pages")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let examples = strings(&["#jobs > li:nth-child(2) > a"]);
        let listing = infer_listing(browser, &examples).await.unwrap().unwrap();
        let found = collect(browser, &CollectOptions::new(listing.clone())).await;
        assert_eq!(found.jobs.len(), 12);
        assert_eq!(found.pages, 3);
        assert_eq!(found.duplicates, 0);
        assert_eq!(found.end, CollectEnd::Pages(StopReason::NoNextControl));
        for (i, job) in found.jobs.iter().enumerate() {
            assert_eq!(job.apply_url, format!("{base}jobs/{}.html", i + 1));
        }
        assert_eq!(found.jobs[4].title, "SRE");
        assert_eq!(found.jobs[11].company, "Soylent");

        // The detail page's selectors, guessed on the first job's page.
        open(browser, &format!("{base}jobs/1.html")).await;
        let detail = infer_detail_page(browser).await.unwrap();
        assert!(
            detail.title.is_some() && detail.apply.is_some(),
            "{detail:?}"
        );
        open(browser, &base).await;
        let mut options = CollectOptions::new(listing);
        options.detail = Some(detail);
        options.max_jobs = 2;
        let found = collect(browser, &options).await;
        assert_eq!(found.jobs[1].title, "Backend Developer");
        assert_eq!(found.jobs[1].company, "Globex");
        assert_eq!(found.jobs[1].apply_type, ApplyType::External);
        assert!(found.jobs[1].apply_url.starts_with("mailto:"));
    })
    .await;
}

#[tokio::test]
async fn collects_the_single_page_board_through_its_details_panel() {
    let base = support::serve(support::site("board-spa")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let examples = strings(&[r#"[data-testid="job-3"]"#]);
        let listing = infer_listing(browser, &examples).await.unwrap().unwrap();
        let panel = infer_panel(browser, &listing, SETTLE)
            .await
            .unwrap()
            .expect("clicking a job fills a panel");
        assert!(panel.title.is_some() && panel.apply.is_some(), "{panel:?}");
        // The explorer's own state and clicks are forgotten: start again.
        open(browser, &base).await;
        let mut options = CollectOptions::new(listing);
        options.detail = Some(panel);
        let found = collect(browser, &options).await;
        let titles: Vec<&str> = found.jobs.iter().map(|j| j.title.as_str()).collect();
        assert_eq!(found.jobs.len(), 12, "{titles:?}");
        assert_eq!(found.duplicates, 0);
        assert_eq!(found.pages, 1);
        for (i, job) in found.jobs.iter().enumerate() {
            assert_eq!(job.apply_url, format!("{base}#apply-{}", i + 1));
            // The panel's apply control on the board itself.
            assert_eq!(job.apply_type, ApplyType::EasyApply);
            assert_eq!(job.source_page, base);
        }
        // The panel's heading "Rust Engineer at Acme" is told apart without a model.
        assert_eq!(titles[0], "Rust Engineer");
        assert_eq!(found.jobs[0].company, "Acme");
        assert_eq!(titles[11], "Engineering Manager");
        assert_eq!(found.jobs[11].company, "Soylent");

        // Panel mode forced, at most three jobs.
        open(browser, &base).await;
        options.detail_mode = DetailMode::Panel;
        options.max_jobs = 3;
        let found = collect(browser, &options).await;
        assert_eq!(found.jobs.len(), 3);
        assert_eq!(found.end, CollectEnd::MaxJobs);
        assert_eq!(found.jobs[2].apply_url, format!("{base}#apply-3"));
    })
    .await;
}

#[tokio::test]
async fn infers_location_and_collects_a_load_more_board() {
    let base = support::serve(support::site("board-scroll")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let examples = strings(&["#jobs > li:nth-child(3) > a"]);
        let listing = infer_listing(browser, &examples).await.unwrap().unwrap();
        assert!(listing.location.is_some(), "{listing:?}");
        let found = collect(browser, &CollectOptions::new(listing)).await;
        assert_eq!(found.jobs.len(), 15);
        assert_eq!(found.jobs[14].title, "Load Job 15");
        assert_eq!(found.jobs[14].company, "Company 15");
        assert_eq!(found.jobs[14].location, "City 15");
        assert_eq!(
            found.jobs[14].apply_url,
            "https://careers.example.com/jobs/15"
        );
    })
    .await;
}
