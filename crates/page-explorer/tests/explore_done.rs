//! The Explorer's `done` checked against what was observed, in real Chromium with scripted
//! models: refused before any action (bounded, then a typed stop keeping what was gathered),
//! key selectors checked on the page, claimed behaviours needing a sighting; what was not
//! observed is recorded as unverified and never reported as fact.
#![cfg(test)]

mod support;

use agent_llm::ChatResponse;
use agent_llm::testing::responses;
use page_explorer::{ExploreEvent, ExploreStop};
use serde_json::{Value, json};
use support::script::{Script, click, done, explore_site, options, results};
use tokio_util::sync::CancellationToken;

fn done_with(args: Value) -> ChatResponse {
    responses::tool_call("d", "done", args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_done_before_any_action_is_refused_and_taken_after_acting() {
    let script = Script::new(
        vec![
            Some(done()),
            Some(click("[data-testid='job-2']")),
            Some(done()),
        ],
        None,
        None,
    );
    let run = explore_site("board-spa/", &script, options(), CancellationToken::new()).await;
    run.browser.close().await;
    let told = results(&script);
    assert!(told[0].0, "{told:?}");
    assert!(
        told[0]
            .1
            .contains("not accepted: you have not clicked, typed or scrolled yet"),
        "{told:?}"
    );
    assert!(run.exploration.completed);
    assert_eq!(run.exploration.stop, None);
    assert_eq!(run.exploration.actions, 1);
    assert!(run.events.iter().any(|e| matches!(
        e,
        ExploreEvent::Warning { message } if message.contains("refused (1 of 2)")
    )));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explorer_that_never_acts_is_stopped_with_a_typed_reason_keeping_what_was_gathered() {
    // `done` forever, never an action.
    let script = Script::new(vec![], None, None);
    let run = explore_site("board-spa/", &script, options(), CancellationToken::new()).await;
    run.browser.close().await;
    let exploration = &run.exploration;
    assert!(!exploration.completed);
    assert_eq!(
        exploration.stop,
        Some(ExploreStop::DoneRefused { refusals: 2 })
    );
    assert_eq!(script.requests("").len(), 2);
    let out = &exploration.output;
    assert_eq!(out.stop_kind.as_deref(), Some("done_refused"));
    assert!(
        out.stopped
            .as_deref()
            .unwrap()
            .contains("without having acted"),
        "{out:?}"
    );
    // The refused done's findings are not taken; the classified start page is kept.
    assert!(out.key_findings.is_empty(), "{out:?}");
    assert_eq!(out.pages.len(), 1);
    assert_eq!(out.pages[0].id, "job_search");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unobserved_selectors_and_findings_are_recorded_unverified_not_as_fact() {
    let script = Script::new(
        vec![
            Some(click("[data-testid='job-1']")),
            Some(done_with(json!({
                "understanding": "A board.",
                "page_type": "job_search",
                "key_findings": [
                    "Clicking a job listing shows its details",
                    "Jobs are paginated with a Next button",
                    "The board lists twelve jobs"
                ],
                "key_elements": {
                    "filter_button": "#open-filters",
                    "pagination": ".pagination a.next",
                    "job_listings": ["[data-testid='job-1']"]
                }
            }))),
        ],
        None,
        None,
    );
    let run = explore_site("board-spa/", &script, options(), CancellationToken::new()).await;
    run.browser.close().await;
    assert!(run.exploration.completed);
    let out = &run.exploration.output;
    // Matches on the page (never acted on), acted on, matches nothing.
    assert_eq!(
        out.key_elements.filter_button.as_deref(),
        Some("#open-filters")
    );
    assert_eq!(out.key_elements.job_listings, ["[data-testid='job-1']"]);
    assert_eq!(out.key_elements.pagination, None);
    assert_eq!(
        out.key_findings,
        [
            "Clicking a job listing shows its details",
            "The board lists twelve jobs"
        ]
    );
    let unverified: Vec<(&str, &str)> = out
        .unverified
        .iter()
        .map(|u| (u.kind.as_str(), u.value.as_str()))
        .collect();
    assert_eq!(
        unverified,
        [
            ("selector", ".pagination a.next"),
            ("finding", "Jobs are paginated with a Next button")
        ]
    );
    let checks: Vec<(&str, i64, bool)> = out
        .selector_checks
        .iter()
        .map(|c| (c.selector.as_str(), c.matches, c.acted_on))
        .collect();
    assert!(checks.contains(&("#open-filters", 1, false)), "{checks:?}");
    assert!(
        checks.contains(&(".pagination a.next", 0, false)),
        "{checks:?}"
    );
    assert!(
        checks.contains(&("[data-testid='job-1']", 1, true)),
        "{checks:?}"
    );
    // The unverified finding was not reported as one.
    assert!(!run.events.iter().any(|e| matches!(
        e,
        ExploreEvent::Finding { text } if text.contains("paginated")
    )));
    let json = serde_json::to_value(out).unwrap();
    assert_eq!(json["unverified"][0]["purpose"], "pagination");
    assert!(json["selectorChecks"][0]["actedOn"].is_boolean());
}

/// The Classifier runs on a URL first seen by `observe` (the page moved on by itself), and
/// the Explorer starts again on the new page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_first_seen_by_observe_is_classified() {
    use agent_llm::testing::LatencyModel;
    use agent_runtime::{CollectingSink, CostLimits, CostMeter};
    use page_explorer::agents::ExplorerModels;
    use std::sync::Arc;
    use std::time::Duration;

    let script = Script::new(
        vec![
            Some(responses::tool_call(
                "o",
                "observe",
                json!({ "what": "page" }),
            )),
            Some(click("#heading")),
        ],
        None,
        None,
    );
    // Every answer takes 3.5 s: the page has moved on (after 6 s) by the time the
    // Explorer observes, with seconds of margin either side for a loaded machine.
    let slow = LatencyModel::new(script.model.clone(), Duration::from_millis(3_500));
    let models = ExplorerModels::single(Arc::new(slow), CostMeter::new(CostLimits::default()));
    let base = support::serve(support::site("late-nav")).await;
    let browser = support::launch().await;
    let sink = CollectingSink::default();
    let exploration = page_explorer::explore(
        &browser,
        &models,
        &base,
        &options(),
        &sink,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    browser.close().await;
    let classified: Vec<String> = script
        .requests("classify")
        .iter()
        .map(|r| r.messages[0].text())
        .collect();
    assert_eq!(classified.len(), 2, "{classified:?}");
    assert!(classified[1].contains("/jobs/42"), "{}", classified[1]);
    let ids: Vec<&str> = exploration
        .output
        .pages
        .iter()
        .map(|p| p.id.as_str())
        .collect();
    assert_eq!(ids, ["job_search", "job_details"]);
    // A fresh context on the new page: the Explorer's next request opens with it.
    let next = &script.requests("")[1];
    assert_eq!(next.messages.len(), 1);
    assert!(next.messages[0].text().contains("Rust Engineer at Acme"));
    assert!(sink.events().iter().any(|e| matches!(
        e,
        ExploreEvent::Classified { url, .. } if url.ends_with("/jobs/42")
    )));
}
