//! Applying filters before collecting, with real headless Chromium against the single-page
//! fixture board: its Filters button opens a modal dialog with checkboxes and an Apply
//! button, and "Remote only" leaves the 6 remote jobs of 12.
#![cfg(test)]

mod support;

use support::{SETTLE, open, strings, with_browser};

use page_explorer::{
    Browser, BrowserError, ChromiumBrowser, CollectOptions, FilterError, apply_filters, collect,
    infer_listing,
};
use serde_json::Value;

/// The board's remote jobs, in order.
const REMOTE: [&str; 6] = [
    "Rust Engineer — Acme",
    "Frontend Engineer — Initech",
    "Site Reliability Engineer — Hooli",
    "Security Engineer — Stark",
    "Platform Engineer — Wonka",
    "Embedded Engineer — Cyberdyne",
];

/// The jobs the board lists now.
async fn listed(browser: &ChromiumBrowser) -> Vec<String> {
    let js = "Array.from(document.querySelectorAll('#jobs button')).map(b => b.textContent.trim())";
    serde_json::from_value(browser.evaluate(js).await.unwrap()).unwrap()
}

async fn dialog_open(browser: &ChromiumBrowser) -> bool {
    let js = "!document.getElementById('filters-dialog').hidden";
    browser.evaluate(js).await.unwrap() == Value::Bool(true)
}

/// Which of the dialog's checkboxes are checked, by name.
async fn checked(browser: &ChromiumBrowser) -> Vec<String> {
    let js =
        "Array.from(document.querySelectorAll('#filters-dialog input:checked')).map(i => i.name)";
    serde_json::from_value(browser.evaluate(js).await.unwrap()).unwrap()
}

/// No marks of the filter code are left on the page.
async fn unmarked(browser: &ChromiumBrowser) -> bool {
    let js = "Array.from(document.querySelectorAll('*')).every(e => !Array.from(e.attributes).some(a => a.name.startsWith('data-pe-filter')))";
    browser.evaluate(js).await.unwrap() == Value::Bool(true)
}

#[tokio::test]
async fn remote_only_leaves_the_six_remote_jobs_and_collect_reads_them_once() {
    let base = support::serve(support::site("board-spa")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        assert_eq!(listed(browser).await.len(), 12);
        let applied = apply_filters(
            browser,
            Some("#open-filters"),
            &strings(&["Remote only"]),
            SETTLE,
        )
        .await
        .unwrap();
        assert_eq!(applied.applied, ["Remote only"]);
        assert!(applied.missing.is_empty(), "{applied:?}");
        assert!(applied.submitted, "{applied:?}");
        assert!(!dialog_open(browser).await, "the dialog is closed");
        assert_eq!(checked(browser).await, ["remote"]);
        assert_eq!(listed(browser).await, REMOTE);
        assert!(unmarked(browser).await);

        // Collecting now reads exactly the filtered listings, each once.
        let examples = strings(&[r#"[data-testid="job-3"]"#]);
        let listing = infer_listing(browser, &examples).await.unwrap().unwrap();
        let found = collect(browser, &CollectOptions::new(listing)).await;
        // Each listing reads "Title — Company": written as its title and its company.
        let read: Vec<String> = found
            .jobs
            .iter()
            .map(|j| format!("{} — {}", j.title, j.company))
            .collect();
        assert_eq!(read, REMOTE, "{found:?}");
        assert_eq!(found.duplicates, 0);
        assert_eq!(listed(browser).await, REMOTE, "still filtered");
    })
    .await;
}

#[tokio::test]
async fn labels_match_loosely_and_unknown_ones_are_missing() {
    let base = support::serve(support::site("board-spa")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let applied = apply_filters(
            browser,
            Some("#open-filters"),
            &strings(&["  remote ONLY ", "Principal", "senior", ""]),
            SETTLE,
        )
        .await
        .unwrap();
        assert_eq!(applied.applied, ["remote ONLY", "senior"]);
        assert_eq!(applied.missing, ["Principal"]);
        assert!(applied.submitted);
        assert!(!dialog_open(browser).await);
        assert_eq!(checked(browser).await, ["remote", "level"]);
        assert_eq!(listed(browser).await, REMOTE);

        // Nothing matches: an error naming the labels, and the dialog closed again.
        open(browser, &base).await;
        let error = apply_filters(
            browser,
            Some("#open-filters"),
            &strings(&["Principal", "Contract"]),
            SETTLE,
        )
        .await
        .unwrap_err();
        match &error {
            FilterError::NothingApplied { missing } => {
                assert_eq!(missing, &["Principal", "Contract"])
            }
            other => panic!("unexpected error: {other}"),
        }
        assert!(error.to_string().contains("\"Principal\""), "{error}");
        assert!(!dialog_open(browser).await, "the dialog is closed again");
        assert!(checked(browser).await.is_empty());
        assert_eq!(listed(browser).await.len(), 12);
        assert!(unmarked(browser).await);

        // No labels: nothing is done.
        let none = apply_filters(browser, Some("#open-filters"), &[], SETTLE)
            .await
            .unwrap();
        assert!(none.applied.is_empty() && none.missing.is_empty() && !none.submitted);
        assert!(!dialog_open(browser).await);
    })
    .await;
}

#[tokio::test]
async fn a_wrong_filter_button_is_a_clear_error() {
    let base = support::serve(support::site("board-spa")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let error = apply_filters(
            browser,
            Some("#no-such-filters"),
            &strings(&["Remote only"]),
            SETTLE,
        )
        .await
        .unwrap_err();
        match &error {
            FilterError::Browser(BrowserError::ElementNotFound { selector }) => {
                assert_eq!(selector, "#no-such-filters");
            }
            other => panic!("unexpected error: {other}"),
        }
        assert!(error.to_string().contains("#no-such-filters"), "{error}");
        assert_eq!(listed(browser).await.len(), 12);
    })
    .await;
}

#[tokio::test]
async fn applying_twice_keeps_the_filter_on() {
    let base = support::serve(support::site("board-spa")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        for round in 0..2 {
            let applied = apply_filters(
                browser,
                Some("#open-filters"),
                &strings(&["Remote only"]),
                SETTLE,
            )
            .await
            .unwrap();
            assert_eq!(applied.applied, ["Remote only"], "round {round}");
            assert!(applied.submitted, "round {round}");
            assert_eq!(checked(browser).await, ["remote"], "round {round}");
            assert_eq!(listed(browser).await, REMOTE, "round {round}");
            assert!(!dialog_open(browser).await, "round {round}");
        }
    })
    .await;
}

#[tokio::test]
async fn without_a_filter_button_the_page_itself_is_searched() {
    let base = support::serve(support::site("board-spa")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        // The dialog is opened beforehand (as if by hand): it is found as the scope.
        browser.click("#open-filters").await.unwrap();
        browser.wait_for_settle(SETTLE).await.unwrap();
        let applied = apply_filters(browser, None, &strings(&["Remote only"]), SETTLE)
            .await
            .unwrap();
        assert!(applied.submitted, "{applied:?}");
        assert_eq!(listed(browser).await, REMOTE);
        assert!(!dialog_open(browser).await);

        // With the dialog closed, its controls are out of reach: nothing is applied.
        open(browser, &base).await;
        let error = apply_filters(browser, None, &strings(&["Junior"]), SETTLE)
            .await
            .unwrap_err();
        assert!(
            matches!(error, FilterError::NothingApplied { .. }),
            "{error}"
        );
        assert!(checked(browser).await.is_empty());
    })
    .await;
}

/// A board of its own written into the page: filters in a sidebar form (a select, chips with
/// `aria-pressed`, a visually hidden checkbox with a `for=` label, an ARIA switch), and a
/// native `<dialog>` with one more filter and only a close button.
const SIDEBAR: &str = r#"<!doctype html><html><head><title>Sidebar</title><style>
.sr { position: absolute; opacity: 0; width: 1px; height: 1px; margin: 0; }
.chip[aria-pressed=true] { font-weight: bold; }
</style></head><body>
<form id="filters">
  <label for="type">Job type</label>
  <select id="type" name="type"><option value="">Any type</option><option value="ft">Full-time</option><option value="contract">Contract</option></select>
  <button type="button" class="chip" aria-pressed="false" data-level="senior">Senior <span>(4)</span></button>
  <button type="button" class="chip" aria-pressed="false" data-level="junior">Junior <span>(8)</span></button>
  <input type="checkbox" class="sr" id="remote" name="remote"><label for="remote">Remote</label>
  <div role="switch" aria-checked="false" tabindex="0" id="visa">Visa sponsorship</div>
  <button type="reset">Reset</button>
  <button type="submit">Search</button>
</form>
<button id="more" type="button">More filters</button>
<dialog id="more-dialog"><label><input type="checkbox" id="hybrid"> Hybrid</label>
  <button type="button" aria-label="Close" id="x">×</button></dialog>
<script>
  // In a function: the board's script declared some of these names in this window before.
  (() => {
  window.changes = 0;
  window.submits = [];
  document.getElementById('type').addEventListener('change', () => window.changes++);
  document.querySelectorAll('.chip').forEach(c => c.addEventListener('click',
    () => c.setAttribute('aria-pressed', String(c.getAttribute('aria-pressed') !== 'true'))));
  const visa = document.getElementById('visa');
  visa.addEventListener('click', () => visa.setAttribute('aria-checked', String(visa.getAttribute('aria-checked') !== 'true')));
  document.getElementById('filters').addEventListener('submit', e => {
    e.preventDefault();
    window.submits.push({
      type: document.getElementById('type').value,
      remote: document.getElementById('remote').checked,
      levels: Array.from(document.querySelectorAll('.chip[aria-pressed=true]')).map(c => c.dataset.level),
      visa: visa.getAttribute('aria-checked'),
    });
  });
  const dialog = document.getElementById('more-dialog');
  document.getElementById('more').addEventListener('click', () => dialog.showModal());
  document.getElementById('x').addEventListener('click', () => dialog.close());
  })();
</script></body></html>"#;

#[tokio::test]
async fn sidebar_controls_of_every_kind_turn_on_once() {
    let base = support::serve(support::site("board-spa")).await;
    with_browser(async |browser| {
        open(browser, &base).await;
        let write = format!(
            "(() => {{ document.open(); document.write({}); document.close(); return true; }})()",
            Value::from(SIDEBAR)
        );
        browser.evaluate(&write).await.unwrap();
        browser.wait_for_settle(SETTLE).await.unwrap();
        let wanted = strings(&["Contract", "Senior", "Remote", "Visa sponsorship"]);
        for round in 0..2 {
            let applied = apply_filters(browser, None, &wanted, SETTLE).await.unwrap();
            assert_eq!(applied.applied, wanted, "round {round}");
            assert!(applied.submitted, "the form's Search button, round {round}");
            let submits = browser.evaluate("window.submits").await.unwrap();
            assert_eq!(
                submits[round],
                serde_json::json!({
                    "type": "contract", "remote": true, "levels": ["senior"], "visa": "true"
                }),
                "round {round}: {submits}"
            );
        }
        // The select changed once, with a change event; nothing was reset.
        assert_eq!(browser.evaluate("window.changes").await.unwrap(), 1);
        assert!(unmarked(browser).await);

        // A native dialog with no apply button: the filter is set and the dialog closed.
        let applied = apply_filters(browser, Some("#more"), &strings(&["hybrid"]), SETTLE)
            .await
            .unwrap();
        assert_eq!(applied.applied, ["hybrid"]);
        assert!(!applied.submitted, "{applied:?}");
        let js = "[document.getElementById('more-dialog').open, document.getElementById('hybrid').checked]";
        assert_eq!(
            browser.evaluate(js).await.unwrap(),
            serde_json::json!([false, true])
        );
    })
    .await;
}
