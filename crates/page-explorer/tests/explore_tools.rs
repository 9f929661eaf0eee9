//! The orchestrator in real headless Chromium with scripted models: each Explorer tool's
//! effect on the page and what the Explorer is told, the circuit breakers, cancellation,
//! failing and invalid model answers. Whatever stops exploring, the output is produced.
#![cfg(test)]

mod support;

use std::time::Duration;

use agent_llm::testing::responses;
use agent_runtime::{CollectingSink, CostLimits};
use page_explorer::{Breakers, Browser as _, ExploreEvent, explore};
use serde_json::{Value, json};
use support::script::{Script, click, explore_site, options, results};
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tool_acts_on_the_page_and_tells_the_explorer_what_happened() {
    let script = Script::new(
        vec![
            Some(click("[data-testid='job-3']")),
            Some(responses::tool_call(
                "t",
                "type_text",
                json!({ "selector": "#search", "text": "rust", "reason": "search" }),
            )),
            Some(responses::tool_call(
                "o",
                "observe",
                json!({ "what": "page" }),
            )),
            Some(click("#open-filters")),
            Some(responses::tool_call(
                "o2",
                "observe",
                json!({ "what": "modal" }),
            )),
            Some(click("#close-filters")),
            Some(responses::tool_call(
                "s",
                "scroll",
                json!({ "direction": "down", "reason": "more" }),
            )),
        ],
        None,
        None,
    );
    let run = explore_site("board-spa/", &script, options(), CancellationToken::new()).await;
    let browser = &run.browser;
    // The effects, read back from the page itself.
    assert_eq!(
        browser
            .evaluate("document.getElementById('details-title').textContent")
            .await
            .unwrap(),
        "Frontend Engineer at Initech"
    );
    assert_eq!(
        browser
            .evaluate("document.getElementById('search').value")
            .await
            .unwrap(),
        "rust"
    );
    assert_eq!(
        browser
            .evaluate("document.getElementById('filters-dialog').hidden")
            .await
            .unwrap(),
        true
    );
    assert!(
        browser
            .evaluate("window.scrollY")
            .await
            .unwrap()
            .as_f64()
            .unwrap()
            > 0.0
    );
    run.browser.close().await;

    let results = results(&script);
    // Seven results; `done` ends exploring, so its result goes nowhere.
    assert_eq!(results.len(), 7, "{results:?}");
    assert!(results.iter().all(|(error, _)| !error), "{results:?}");
    let json = |i: usize| serde_json::from_str::<Value>(&results[i].1).unwrap();
    assert_eq!(json(0)["url_changed"], false);
    assert!(
        json(0)["changes"]
            .as_str()
            .unwrap()
            .contains("Frontend Engineer at Initech")
    );
    assert!(
        json(1)["changes"]
            .as_str()
            .unwrap()
            .contains("value=\"rust\"")
    );
    let observed = json(2);
    assert!(
        observed["dom"]
            .as_str()
            .unwrap()
            .contains("[CLICK: \"#open-filters\"]")
    );
    assert_eq!(observed["title"], "Job Board");
    assert!(
        observed["url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
    // The dialog: observing shows only its contents.
    let modal = json(4)["dom"].as_str().unwrap().to_owned();
    assert!(modal.contains("A dialog is open"), "{modal}");
    assert!(
        modal.contains("#close-filters") && !modal.contains("job-3"),
        "{modal}"
    );
    assert!(
        json(3)["changes"]
            .as_str()
            .unwrap()
            .contains("DIALOG: opened")
    );
    assert!(
        json(5)["changes"]
            .as_str()
            .unwrap()
            .contains("DIALOG: closed")
    );
    assert!(json(6).get("new_content_loaded").is_some());
    assert!(run.exploration.completed);
    assert_eq!(run.exploration.actions, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrolling_an_infinite_list_reports_new_content() {
    let scroll = || {
        Some(responses::tool_call(
            "s",
            "scroll",
            json!({ "direction": "down", "reason": "more" }),
        ))
    };
    let script = Script::new(vec![scroll(), scroll(), scroll()], None, None);
    let run = explore_site(
        "board-scroll/infinite.html",
        &script,
        options(),
        CancellationToken::new(),
    )
    .await;
    let shown = run
        .browser
        .evaluate("document.querySelectorAll('li.job').length")
        .await
        .unwrap();
    run.browser.close().await;
    assert!(shown.as_u64().unwrap() > 8, "{shown}");
    let loaded: Vec<Value> = results(&script)
        .iter()
        .filter_map(|(_, r)| serde_json::from_str::<Value>(r).ok())
        .filter_map(|r| r.get("new_content_loaded").cloned())
        .collect();
    assert!(loaded.contains(&json!(true)), "{loaded:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_change_hands_off_and_the_rest_of_the_answer_is_not_run() {
    let two = responses::tool_calls([
        (
            "c1",
            "click",
            json!({ "selector": "li:nth-of-type(2) > a", "reason": "open a job" }),
        ),
        (
            "c2",
            "click",
            json!({ "selector": "li:nth-of-type(3) > a", "reason": "and another" }),
        ),
    ]);
    let script = Script::new(vec![Some(two)], None, None);
    let run = explore_site("board-pages/", &script, options(), CancellationToken::new()).await;
    run.browser.close().await;
    let details = run.exploration.memory.page("job_details").unwrap();
    assert!(
        details.urls[0].ends_with("/jobs/2.html"),
        "{:?}",
        details.urls
    );
    assert_eq!(
        run.exploration.memory.page_ids(),
        ["job_search", "job_details"]
    );
    assert_eq!(run.exploration.actions, 1);
    // The classifier compared both pages; the Explorer restarted on the new page.
    let classify = script.requests("classify");
    assert_eq!(classify.len(), 2);
    assert!(classify[1].messages[0].text().contains("=== OLD PAGE ==="));
    let explorer = script.requests("");
    assert_eq!(explorer[1].messages.len(), 1, "a fresh context");
    assert!(
        explorer[1].messages[0]
            .text()
            .contains("CURRENT PAGE: [job_details]")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_click_over_and_over_trips_the_loop_breaker() {
    let script = Script::new(vec![], Some(click("[data-testid='job-1']")), None);
    let run = explore_site("board-spa/", &script, options(), CancellationToken::new()).await;
    run.browser.close().await;
    let out = &run.exploration.output;
    let stopped = out.stopped.as_deref().unwrap();
    assert!(stopped.starts_with("repeated action"), "{stopped}");
    assert!(!run.exploration.completed);
    assert_eq!(run.exploration.actions, 4);
    // What was learned is kept, and the page was still summarized.
    assert!(out.behaviors["job_listing"].confirmed);
    assert_eq!(script.requests("summarize").len(), 1);
    assert!(
        run.events
            .iter()
            .any(|e| matches!(e, ExploreEvent::Stopped { .. }))
    );
    assert!(matches!(
        run.events.last(),
        Some(ExploreEvent::Finished { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_action_and_error_breakers_stop_exploring() {
    // Distinct clicks, but more than allowed.
    let clicks = (1..=8)
        .map(|i| Some(click(&format!("[data-testid='job-{i}']"))))
        .collect();
    let script = Script::new(clicks, None, None);
    let mut limited = options();
    limited.breakers = Breakers {
        max_actions: 3,
        ..Breakers::default()
    };
    let run = explore_site("board-spa/", &script, limited, CancellationToken::new()).await;
    run.browser.close().await;
    let stopped = run.exploration.output.stopped.clone().unwrap();
    assert!(stopped.starts_with("too many actions"), "{stopped}");
    assert_eq!(run.exploration.actions, 4);

    // Selectors that match nothing: errors go back to the Explorer, then the breaker trips.
    let misses = (1..=8)
        .map(|i| Some(click(&format!("#missing-{i}"))))
        .collect();
    let script = Script::new(misses, None, None);
    let run = explore_site("board-spa/", &script, options(), CancellationToken::new()).await;
    run.browser.close().await;
    let stopped = run.exploration.output.stopped.clone().unwrap();
    assert!(
        stopped.starts_with("too many consecutive errors"),
        "{stopped}"
    );
    let errors = results(&script);
    assert!(
        !errors.is_empty()
            && errors
                .iter()
                .all(|(error, text)| *error && text.contains("#missing-")),
        "{errors:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_up_or_cancelled_stops_without_more_model_calls() {
    let script = Script::new(vec![], Some(click("[data-testid='job-1']")), None);
    let mut timed = options();
    timed.breakers = Breakers {
        max_duration: Duration::ZERO,
        ..Breakers::default()
    };
    let run = explore_site("board-spa/", &script, timed, CancellationToken::new()).await;
    run.browser.close().await;
    let stopped = run.exploration.output.stopped.clone().unwrap();
    assert!(stopped.starts_with("time limit exceeded"), "{stopped}");
    assert_eq!(script.requests("").len(), 0);
    assert_eq!(script.requests("summarize").len(), 0);
    // The starting page was classified before the clock ran out, and is in the output.
    assert_eq!(run.exploration.output.pages.len(), 1);

    let cancel = CancellationToken::new();
    cancel.cancel();
    let script = Script::new(vec![], Some(click("[data-testid='job-1']")), None);
    let run = explore_site("board-spa/", &script, options(), cancel).await;
    run.browser.close().await;
    assert_eq!(run.exploration.output.stopped.as_deref(), Some("cancelled"));
    assert_eq!(script.model.requests().len(), 0);
    assert_eq!(run.exploration.output.pages[0].id, "start_page");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_and_invalid_model_answers_are_reported_and_nothing_is_lost() {
    // The Classifier answers nonsense twice (the page id is a number): re-asked once, then a
    // warning and a neutral id. Then the Explorer clicks once and its model fails.
    let script = Script::new(
        vec![Some(click("[data-testid='job-1']")), None],
        None,
        Some(json!({ "page_id": 7, "is_new_page": "yes" })),
    );
    let run = explore_site("board-spa/", &script, options(), CancellationToken::new()).await;
    run.browser.close().await;
    assert_eq!(script.requests("classify").len(), 2);
    let warned = run.events.iter().any(|e| matches!(e, ExploreEvent::Warning { message } if message.starts_with("the Classifier failed")));
    assert!(warned, "{:?}", run.events);
    let out = &run.exploration.output;
    assert_eq!(out.pages[0].id, "start_page");
    let stopped = out.stopped.as_deref().unwrap();
    assert!(
        stopped.starts_with("the Explorer's model failed"),
        "{stopped}"
    );
    // The click before the failure is in the output.
    assert_eq!(out.behaviors["job_listing"].effect, "shows a job");
    assert_eq!(out.key_elements.job_listings, ["[data-testid='job-1']"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_without_done_is_taken_as_done_once_the_explorer_has_acted() {
    let script = Script::new(
        vec![
            Some(responses::text("A board.")),
            Some(click("[data-testid='job-1']")),
            Some(responses::text("It is a job board with twelve jobs.")),
        ],
        None,
        None,
    );
    let run = explore_site("board-spa/", &script, options(), CancellationToken::new()).await;
    run.browser.close().await;
    assert!(run.exploration.completed);
    // The first answer, before any action, was refused; the Explorer was told why.
    let second = &script.requests("")[1];
    assert!(
        second.messages[0]
            .text()
            .contains("(answered without acting) ✗ not accepted"),
        "{}",
        second.messages[0].text()
    );
    assert_eq!(run.exploration.actions, 1);
    assert_eq!(
        run.exploration.output.understanding,
        "It is a job board with twelve jobs."
    );
    assert_eq!(run.exploration.output.stopped, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_with_many_observations_is_summarized_along_the_way() {
    let clicks = (1..=12)
        .map(|i| Some(click(&format!("[data-testid='job-{i}']"))))
        .collect();
    let script = Script::new(clicks, None, None);
    let run = explore_site("board-spa/", &script, options(), CancellationToken::new()).await;
    run.browser.close().await;
    assert!(run.exploration.completed);
    // Twelve observations: summarized once on the way; nothing new after it, so no
    // summary at the end.
    assert_eq!(script.requests("summarize").len(), 1);
    let summarized_at = run
        .events
        .iter()
        .position(|e| matches!(e, ExploreEvent::Summarized { .. }))
        .unwrap();
    let last_action = run
        .events
        .iter()
        .rposition(|e| matches!(e, ExploreEvent::Action { .. }))
        .unwrap();
    assert!(summarized_at > last_action);
    assert!(
        run.events[summarized_at..]
            .iter()
            .any(|e| matches!(e, ExploreEvent::Finding { .. }))
    );
    let page = run.exploration.memory.page("job_search").unwrap();
    assert_eq!(page.summary.as_deref(), Some("summarized"));
    assert!(page.observations.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cost_limit_stops_exploring_and_keeps_what_was_learned() {
    let script = Script::new(vec![], Some(click("[data-testid='job-1']")), None);
    let base = support::serve(support::site("board-spa")).await;
    let browser = support::launch().await;
    let sink = CollectingSink::default();
    // Three calls: the Classifier, the Explorer, the ChangeAnalyzer; the fourth is refused.
    let models = script.models_within(CostLimits {
        max_calls: Some(3),
        ..CostLimits::default()
    });
    let exploration = explore(
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
    let stopped = exploration.output.stopped.clone().unwrap();
    assert!(stopped.starts_with("cost limit"), "{stopped}");
    assert_eq!(script.model.requests().len(), 3);
    assert_eq!(exploration.actions, 1);
    assert_eq!(
        exploration.output.behaviors["job_listing"].effect,
        "shows a job"
    );
}
