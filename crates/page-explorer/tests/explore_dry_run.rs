//! Phase 1 end to end in real headless Chromium: the orchestrator, the four agents on the
//! recorded model responses of `fixtures/page-explorer/dry-run/`, the memory and the Phase 1
//! output, on the two fixture boards served on loopback.
#![cfg(test)]

mod support;

use page_explorer::memory::PageChange;
use std::path::PathBuf;
use std::sync::Arc;

use agent_llm::ChatModel;
use agent_llm::testing::RecordedModel;
use agent_runtime::{CollectingSink, CostLimits, CostMeter};
use page_explorer::agents::ExplorerModels;
use page_explorer::{
    Browser as _, Exploration, ExploreEvent, ExploreOptions, Phase1Output, explore,
};
use tokio_util::sync::CancellationToken;

fn recording(site: &str) -> Arc<RecordedModel> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/page-explorer/dry-run")
        .join(format!("{site}.json"));
    Arc::new(RecordedModel::from_file(&path).unwrap())
}

async fn dry_run(site: &str) -> (Exploration, Vec<ExploreEvent>, Arc<RecordedModel>, String) {
    let base = support::serve(support::site(site)).await;
    let recorded = recording(site);
    let model: Arc<dyn ChatModel> = recorded.clone();
    let models = ExplorerModels::single(model, CostMeter::new(CostLimits::default()));
    let sink = CollectingSink::default();
    let browser = support::launch().await;
    let options = ExploreOptions::new("Find how jobs are listed, filtered and paginated");
    let explored = explore(
        &browser,
        &models,
        &base,
        &options,
        &sink,
        &CancellationToken::new(),
    )
    .await;
    browser.close().await;
    (explored.unwrap(), sink.events(), recorded, base)
}

/// The last tool result the Explorer was sent in `request`.
fn tool_result(request: &agent_llm::ChatRequest) -> String {
    request
        .messages
        .last()
        .unwrap()
        .content
        .iter()
        .find_map(|block| match block {
            agent_llm::ContentBlock::ToolResult { content, .. } => Some(content.clone()),
            _ => None,
        })
        .unwrap()
}

fn every_recording_used(recorded: &RecordedModel) {
    assert_eq!(recorded.unused(), Vec::<String>::new(), "answers left over");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn board_spa_dry_run_finds_the_panel_the_filter_modal_and_the_key_elements() {
    let (exploration, events, recorded, base) = dry_run("board-spa").await;
    every_recording_used(&recorded);
    assert!(exploration.completed);
    let out = &exploration.output;
    assert_eq!(out.stopped, None);
    assert_eq!(out.start_url, base);
    assert_eq!(out.page_type, "job_search");
    let keys = &out.key_elements;
    assert_eq!(keys.filter_button.as_deref(), Some("#open-filters"));
    assert_eq!(keys.search_input.as_deref(), Some("#search"));
    assert_eq!(keys.apply_button.as_deref(), Some("#details > a"));
    assert_eq!(
        keys.job_listings,
        ["[data-testid='job-1']", "[data-testid='job-2']"]
    );
    assert_eq!(keys.other["close_button"], "#close-filters");
    // Clicking two listings confirmed the behavior; the filter button was classified from
    // its effect.
    assert!(out.behaviors["job_listing"].confirmed);
    assert_eq!(
        out.behaviors["filter_button"].effect,
        "opens the filter dialog"
    );
    assert!(!out.behaviors["filter_button"].confirmed);
    assert_eq!(out.filter_options["level"], ["Senior", "Junior"]);
    assert_eq!(out.pages.len(), 1);
    assert!(
        out.pages[0]
            .understanding
            .starts_with("Single-page job board.")
    );
    let listing = out.listing.as_ref().expect("listing selectors generalized");
    assert!(
        listing.link.is_empty(),
        "the SPA's listings are buttons: {listing:?}"
    );

    // One screenshot, a PNG.
    assert_eq!(exploration.screenshots.len(), 1);
    assert!(exploration.screenshots[0].png.starts_with(b"\x89PNG"));
    assert_eq!(exploration.actions, 6);

    // The report, in order.
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            ExploreEvent::Started { .. } => "started",
            ExploreEvent::Classified { .. } => "classified",
            ExploreEvent::Action { .. } => "action",
            ExploreEvent::Change { .. } => "change",
            ExploreEvent::Finding { .. } => "finding",
            ExploreEvent::Summarized { .. } => "summarized",
            ExploreEvent::Warning { .. } => "warning",
            ExploreEvent::Stopped { .. } => "stopped",
            ExploreEvent::Finished { .. } => "finished",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "started",
            "classified",
            "action",
            "change",
            "action",
            "change",
            "action",
            "change",
            "finding",
            "finding",
            "action",
            "change",
            "action",
            "change",
            "action",
            "change",
            "finding",
            "finding",
            "finding",
            "summarized",
            "finished"
        ]
    );
    match events.last().unwrap() {
        ExploreEvent::Finished {
            model_calls,
            input_tokens,
            ..
        } => {
            assert_eq!(*model_calls, 15);
            assert!(*input_tokens > 1_000);
        }
        other => panic!("{other:?}"),
    }

    // The ChangeAnalyzer saw the dialog open, with its contents, and close.
    let analyses = recorded.requests_on("analyze_change");
    let opened = analyses[2].messages[0].text();
    assert!(
        opened.contains("ACTION: click \"#open-filters\""),
        "{opened}"
    );
    assert!(opened.contains("DIALOG: opened"), "{opened}");
    assert!(opened.contains("=== THE OPEN DIALOG ==="), "{opened}");
    assert!(opened.contains("#apply-filters"), "{opened}");
    assert!(analyses[3].messages[0].text().contains("DIALOG: closed"));
    // Selecting a job shows its details as new text.
    let selected = analyses[0].messages[0].text();
    assert!(selected.contains("Rust Engineer at Acme"), "{selected}");

    // The Explorer's click results told it what changed; the type went into the field.
    let explorer = recorded.requests_on("Explorer");
    let click_result = tool_result(&explorer[1]);
    let click_result: serde_json::Value = serde_json::from_str(&click_result).unwrap();
    assert_eq!(click_result["success"], true);
    assert_eq!(click_result["url_changed"], false);
    assert_eq!(click_result["element_type"], "job_listing");
    assert!(
        click_result["changes"]
            .as_str()
            .unwrap()
            .contains("Rust Engineer at Acme")
    );
    let typed: serde_json::Value = serde_json::from_str(&tool_result(&explorer[5])).unwrap();
    assert_eq!(typed["element_type"], "search_input");
    assert!(
        typed["changes"]
            .as_str()
            .unwrap()
            .contains("value=\"rust\""),
        "{typed}"
    );
    let scrolled: serde_json::Value = serde_json::from_str(&tool_result(&explorer[6])).unwrap();
    // Everything on this board is there from the start: scrolling loads nothing.
    assert_eq!(scrolled["new_content_loaded"], false, "{scrolled}");

    // The output is the contract: camelCase, and it reads back.
    let json = serde_json::to_value(out).unwrap();
    assert_eq!(json["keyElements"]["filterButton"], "#open-filters");
    let back: Phase1Output = serde_json::from_value(json).unwrap();
    assert_eq!(&back, out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn board_pages_dry_run_classifies_every_url_change_with_both_pages() {
    let (exploration, events, recorded, base) = dry_run("board-pages").await;
    every_recording_used(&recorded);
    assert!(exploration.completed);
    let memory = &exploration.memory;
    assert_eq!(memory.page_ids(), ["job_search", "job_details"]);
    let changes: Vec<(String, PageChange)> = events
        .iter()
        .filter_map(|e| match e {
            ExploreEvent::Classified {
                page_id, change, ..
            } => Some((page_id.clone(), *change)),
            _ => None,
        })
        .collect();
    assert_eq!(
        changes,
        [
            ("job_search".to_owned(), PageChange::NewPage),
            ("job_details".to_owned(), PageChange::NewPage),
            ("job_search".to_owned(), PageChange::Revisit),
            // page2.html: the same page showing other jobs.
            ("job_search".to_owned(), PageChange::SamePage),
        ]
    );
    let search = memory.page("job_search").unwrap();
    assert_eq!(search.visits, 2);
    assert_eq!(
        search.urls,
        [
            base.clone(),
            format!("{base}index.html"),
            format!("{base}page2.html")
        ]
    );
    let edges: Vec<(&str, &str, &str)> = memory
        .edges()
        .iter()
        .map(|e| {
            (
                e.from.as_str(),
                e.to.as_str(),
                e.selector.as_deref().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        edges,
        [
            ("job_search", "job_details", "li:nth-of-type(1) > a"),
            ("job_details", "job_search", "p:nth-of-type(1) > a"),
        ]
    );
    assert_eq!(memory.edges()[0].description, "clicked job listing");

    // The Classifier got the old and the new page each time, and the known pages.
    let classifier = recorded.requests_on("classify");
    assert_eq!(classifier.len(), 4);
    let first = classifier[0].messages[0].text();
    assert!(first.contains("OLD URL: (none)") && !first.contains("=== OLD PAGE ==="));
    let to_details = classifier[1].messages[0].text();
    assert!(to_details.contains("=== OLD PAGE ===") && to_details.contains("=== NEW PAGE ==="));
    assert!(
        to_details.contains("KNOWN PAGES: job_search"),
        "{to_details}"
    );
    assert!(
        to_details.contains("[CLICK: \"li:nth-of-type(2) > a\"]"),
        "old page listed: {to_details}"
    );
    assert!(
        to_details.contains("link \"Apply\""),
        "new page listed: {to_details}"
    );
    assert!(
        classifier[2].messages[0]
            .text()
            .contains("KNOWN PAGES: job_search, job_details")
    );

    // Leaving a page summarizes it first: job_search, then job_details; at the end only the
    // page with new observations.
    let summaries: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            ExploreEvent::Summarized { page_id, .. } => Some(page_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(summaries, ["job_search", "job_details", "job_search"]);

    // Every new page context starts fresh: the Explorer's second request is a new
    // conversation holding the memory summary.
    let explorer = recorded.requests_on("Explorer");
    assert_eq!(explorer[1].messages.len(), 1);
    let fresh = explorer[1].messages[0].text();
    assert!(fresh.contains("CURRENT PAGE: [job_details]"), "{fresh}");
    assert!(fresh.contains("YOUR RECENT ACTIONS:"), "{fresh}");

    assert_eq!(exploration.screenshots.len(), 2);
    let graph = memory.to_mermaid();
    assert!(graph.contains("p0 -->|"), "{graph}");
    let out = &exploration.output;
    assert_eq!(
        out.key_elements.pagination.as_deref(),
        Some("a:nth-of-type(3)")
    );
    let listing = out.listing.as_ref().expect("listing selectors generalized");
    assert!(!listing.link.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_start_url_is_a_clear_error() {
    let browser = support::launch().await;
    let recorded = recording("board-spa");
    let model: Arc<dyn ChatModel> = recorded.clone();
    let models = ExplorerModels::single(model, CostMeter::new(CostLimits::default()));
    let sink = CollectingSink::default();
    // Nothing listens on port 9 (discard) here.
    let explored = explore(
        &browser,
        &models,
        "http://127.0.0.1:9/",
        &ExploreOptions::new("x"),
        &sink,
        &CancellationToken::new(),
    )
    .await;
    let _ = browser.url().await;
    browser.close().await;
    let error = explored.expect_err("a dead server");
    assert!(
        error.to_string().starts_with("opening http://127.0.0.1:9/"),
        "{error}"
    );
    assert_eq!(recorded.served("classify"), 0);
}
