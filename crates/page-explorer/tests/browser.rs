//! Real headless Chromium against the fixture sites on loopback.
#![cfg(test)]

mod support;

use support::{SETTLE, open, with_browser};

use std::time::Duration;

use page_explorer::{Browser, BrowserError, ChromiumBrowser, LaunchOptions, Observation, observe};
use serde_json::Value;

const BUDGET: usize = page_explorer::DEFAULT_BUDGET_TOKENS;

/// Every selector printed resolves to exactly one element (through iframes and shadow roots
/// for `>>>` selectors).
async fn assert_selectors_unique(browser: &ChromiumBrowser, seen: &Observation) {
    for element in &seen.elements {
        let parts: Vec<&str> = element.selector.split(">>>").map(str::trim).collect();
        let script = format!(
            "(() => {{
                const parts = {};
                let root = document;
                for (let i = 0; i < parts.length; i++) {{
                    const found = root.querySelectorAll(parts[i]);
                    if (found.length !== 1) return found.length;
                    if (i + 1 < parts.length) root = found[0].tagName === 'IFRAME' ? found[0].contentDocument : found[0].shadowRoot;
                }}
                return 1;
            }})()",
            serde_json::to_string(&parts).unwrap()
        );
        let count = browser.evaluate(&script).await.unwrap();
        assert_eq!(count, Value::from(1), "{} is not unique", element.selector);
    }
}

#[tokio::test]
async fn opens_a_page_and_reads_its_title_and_url() {
    let base = support::serve(support::site("board-pages")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        assert_eq!(browser.title().await.unwrap(), "Jobs — page 1 of 3");
        assert_eq!(browser.url().await.unwrap(), base);
        browser.click("a[rel=next]").await.unwrap();
        browser.wait_for_settle(SETTLE).await.unwrap();
        assert_eq!(browser.url().await.unwrap(), format!("{base}page2.html"));
        let png = browser.screenshot().await.unwrap();
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        let seen = observe(browser, None, BUDGET).await.unwrap();
        assert!(seen.text.contains("[CLICK: "), "{}", seen.text);
        assert!(seen.text.contains("link \"Next\""), "{}", seen.text);
        assert!(seen.text.contains("link \"SRE\""), "{}", seen.text);
        assert_selectors_unique(browser, &seen).await;
        // A job's own page.
        let sre = seen.elements.iter().find(|e| e.name == "SRE").unwrap();
        browser.click(&sre.selector).await.unwrap();
        browser.wait_for_settle(SETTLE).await.unwrap();
        let job = observe(browser, Some(&seen), BUDGET).await.unwrap();
        assert_eq!(job.url, format!("{base}jobs/5.html"));
        assert_eq!(job.title, "SRE at Hooli");
        let changes = job.changes.as_ref().unwrap();
        assert!(changes.url_changed && changes.title_changed, "{changes:?}");
        assert!(
            job.text.contains("link \"Back to the list\""),
            "{}",
            job.text
        );
        let missing = browser.click("#no-such-thing").await.unwrap_err();
        assert!(
            matches!(missing, BrowserError::ElementNotFound { .. }),
            "{missing}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_click_updates_the_details_panel_and_the_changes_show_it() {
    let base = support::serve(support::site("board-spa")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let before = observe(browser, None, BUDGET).await.unwrap();
        assert!(before.text.contains("Select a job"), "{}", before.text);
        let job = before
            .elements
            .iter()
            .find(|e| e.name.starts_with("Data Engineer"))
            .expect("the Data Engineer job is listed");
        browser.click(&job.selector).await.unwrap();
        browser.wait_for_settle(SETTLE).await.unwrap();
        let after = observe(browser, Some(&before), BUDGET).await.unwrap();
        assert!(
            after.text.contains("Data Engineer at Umbrella"),
            "{}",
            after.text
        );
        let changes = after
            .changes
            .as_ref()
            .expect("changes against the previous look");
        assert!(
            !changes.url_changed && !changes.title_changed,
            "{changes:?}"
        );
        assert!(
            changes
                .added
                .iter()
                .any(|e| e.name == "Apply to Data Engineer"),
            "{changes:?}"
        );
        assert!(
            after.text.contains("Changed since the last look"),
            "{}",
            after.text
        );
        assert_selectors_unique(browser, &after).await;
    })
    .await;
}

#[tokio::test]
async fn typing_fills_an_input() {
    let base = support::serve(support::site("board-spa")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        browser.type_text("#search", "rust remote").await.unwrap();
        let value = browser.evaluate("document.querySelector('#search').value").await.unwrap();
        assert_eq!(value, Value::from("rust remote"));
        // Typing again replaces what the field held.
        browser.type_text("#search", "go").await.unwrap();
        let seen = observe(browser, None, BUDGET).await.unwrap();
        let search = seen.elements.iter().find(|e| e.selector == "#search").unwrap();
        assert_eq!(search.state.value.as_deref(), Some("go"));
        assert!(
            seen.text.contains("[TYPE: \"#search\"] searchbox \"Search jobs\" (value=\"go\")"),
            "{}",
            seen.text
        );
        // Into the same-origin iframe too.
        let email = seen
            .elements
            .iter()
            .find(|e| e.selector.contains(">>>") && e.name == "Email")
            .expect("the iframe's email field is observed");
        browser.type_text(&email.selector, "me@example.com").await.unwrap();
        let typed = browser
            .evaluate("document.querySelector('#apply-frame').contentDocument.querySelector('#email').value")
            .await
            .unwrap();
        assert_eq!(typed, Value::from("me@example.com"));
        // Key by key: search-as-you-type pages hear every key; a character without a key
        // is still typed.
        browser
            .evaluate("window.keysUp = []; document.querySelector('#search').addEventListener('keyup', (e) => window.keysUp.push(e.key)); true")
            .await
            .unwrap();
        browser.type_text("#search", "Zürich 2").await.unwrap();
        let value = browser.evaluate("document.querySelector('#search').value").await.unwrap();
        assert_eq!(value, Value::from("Zürich 2"));
        let keys = browser.evaluate("window.keysUp.join('')").await.unwrap();
        assert_eq!(keys, Value::from("Zrich 2"));
    })
    .await;
}

#[tokio::test]
async fn scrolling_sends_a_real_wheel_event() {
    let base = support::serve(support::site("board-spa")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        browser.scroll(0.0, 400.0).await.unwrap();
        // The wheel event goes through the compositor: give it, and the scroll it causes, a
        // moment to arrive.
        let mut wheels = Value::Null;
        for _ in 0..40 {
            wheels = browser
                .evaluate("window.scrollY > 0 ? window.wheelEvents : []")
                .await
                .unwrap();
            if wheels.as_array().is_some_and(|w| !w.is_empty()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let wheels = wheels.as_array().expect("a list of wheel events");
        assert!(!wheels.is_empty(), "no wheel event, or no scroll");
        assert_eq!(wheels[0]["dy"], Value::from(400));
        let scrolled = browser.evaluate("window.scrollY").await.unwrap();
        assert!(
            scrolled.as_f64().unwrap() > 0.0,
            "the page did not scroll: {scrolled}"
        );
    })
    .await;
}

#[tokio::test]
async fn an_open_dialog_hides_everything_outside_it() {
    let base = support::serve(support::site("board-spa")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let closed = observe(browser, None, BUDGET).await.unwrap();
        assert!(!closed.modal);
        assert!(
            closed.text.contains("button \"Filters\" (not expanded)"),
            "{}",
            closed.text
        );
        browser.click("#open-filters").await.unwrap();
        browser.wait_for_settle(SETTLE).await.unwrap();
        let open = observe(browser, Some(&closed), BUDGET).await.unwrap();
        assert!(open.modal, "{}", open.text);
        let names: Vec<&str> = open.elements.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            ["Remote only", "Senior", "Junior", "Apply", "Close filters"],
            "{}",
            open.text
        );
        assert!(!open.text.contains("Rust Engineer"), "{}", open.text);
        assert!(
            open.text.contains("checkbox \"Remote only\" (not checked)"),
            "{}",
            open.text
        );
        assert_selectors_unique(browser, &open).await;
        // The checkboxes share names: their selectors still tell them apart.
        let junior = open.elements.iter().find(|e| e.name == "Junior").unwrap();
        browser.click(&junior.selector).await.unwrap();
        let checked = browser
            .evaluate("document.querySelector('input[value=junior]').checked")
            .await
            .unwrap();
        assert_eq!(checked, Value::Bool(true));
        let remote = open
            .elements
            .iter()
            .find(|e| e.name == "Remote only")
            .unwrap();
        browser.click(&remote.selector).await.unwrap();
        browser.click("#apply-filters").await.unwrap();
        browser.wait_for_settle(SETTLE).await.unwrap();
        let filtered = observe(browser, Some(&open), BUDGET).await.unwrap();
        assert!(!filtered.modal);
        assert!(filtered.text.contains("Rust Engineer"), "{}", filtered.text);
        assert!(
            !filtered.text.contains("Backend Developer"),
            "{}",
            filtered.text
        );
    })
    .await;
}

#[tokio::test]
async fn hidden_elements_are_left_out_and_frames_and_shadow_roots_are_in() {
    let base = support::serve(support::site("board-spa")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let seen = observe(browser, None, BUDGET).await.unwrap();
        for hidden in [
            "hidden-attr",
            "hidden-display",
            "hidden-visibility",
            "hidden-zero",
            "hidden-aria",
            "hidden-parent",
        ] {
            assert!(
                !seen.elements.iter().any(|e| e.selector.contains(hidden)),
                "{hidden} is observed:\n{}",
                seen.text
            );
        }
        assert!(!seen.text.contains("Hidden by"), "{}", seen.text);
        assert!(
            !seen.text.contains("Remote only"),
            "the closed dialog shows:\n{}",
            seen.text
        );
        assert_eq!(
            seen.elements
                .iter()
                .filter(|e| e.selector.starts_with("[data-testid="))
                .count(),
            12,
            "{}",
            seen.text
        );
        assert!(
            seen.elements
                .iter()
                .any(|e| e.selector == "#widget >>> button" && e.name == "Subscribe"),
            "{}",
            seen.text
        );
        assert!(
            seen.elements
                .iter()
                .any(|e| e.selector.starts_with("#apply-frame >>> ") && e.name == "Send"),
            "{}",
            seen.text
        );
        assert_selectors_unique(browser, &seen).await;
        browser.click("#widget >>> button").await.unwrap();
        let subscribed = browser
            .evaluate("window.subscribed === true")
            .await
            .unwrap();
        assert_eq!(subscribed, Value::Bool(true));
    })
    .await;
}

#[tokio::test]
async fn a_page_of_500_links_keeps_to_the_budget() {
    let base = support::serve(support::site("many-links")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let budget = 1_000;
        let seen = observe(browser, None, budget).await.unwrap();
        assert_eq!(seen.elements.len(), 500);
        assert!(seen.truncated);
        assert!(
            seen.text.chars().count() <= budget * 4,
            "{}",
            seen.text.len()
        );
        let shown = seen.text.matches("[CLICK: ").count();
        let summary = seen
            .text
            .lines()
            .find(|l| l.starts_with("… and "))
            .unwrap_or_else(|| panic!("no summary in\n{}", seen.text));
        assert_eq!(
            summary,
            format!(
                "… and {} more elements below: {} links",
                500 - shown,
                500 - shown
            )
        );
        assert!(
            seen.text.contains("link \"Item number 1\""),
            "{}",
            seen.text
        );
    })
    .await;
}

#[tokio::test]
async fn a_bad_executable_gives_a_launch_error_with_the_install_hint() {
    let options = LaunchOptions {
        executable: Some("/nonexistent/chromium".into()),
        ..LaunchOptions::default()
    };
    let error = ChromiumBrowser::launch(options).await.unwrap_err();
    assert!(matches!(error, BrowserError::Launch { .. }), "{error}");
    let message = error.to_string();
    assert!(message.starts_with("no browser could start: "), "{message}");
    assert!(
        message.contains("install Chromium: apt-get install -y chromium"),
        "{message}"
    );
}

#[tokio::test]
async fn settling_waits_for_a_slow_fetch() {
    let base = support::serve(support::site("board-spa")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        browser.evaluate("window.salaryDelay = 1200").await.unwrap();
        browser.click("#load-salaries").await.unwrap();
        let started = std::time::Instant::now();
        browser.wait_for_settle(SETTLE).await.unwrap();
        assert!(started.elapsed() < SETTLE, "settling ran out of time");
        let shown = browser
            .evaluate("document.querySelector('#salaries').textContent")
            .await
            .unwrap();
        assert_eq!(shown, Value::from("Salaries from $90k to $180k"));
    })
    .await;
}
