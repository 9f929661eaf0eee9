//! Searching a board before collecting (spec 002, Phase 2, with Phase 1's `searchInput`):
//! [`search`] types a query into the search box Phase 1 named, or into one it detects when
//! Phase 1 named none (or one that is not on the page), and submits it the way the page
//! listens: an Enter key the page handles, else its form, else a search button beside it.
//!
//! Only generic markup is relied on: `type=search`, `role=searchbox`, and names, ids,
//! placeholders and labels that say search, keywords or query.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::browser::{Browser, BrowserError};

/// The attribute the search box is marked with, to type into it.
const MARK: &str = "data-pe-search";

/// How a query was submitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Submitted {
    /// The page handled the Enter key itself.
    EnterKey,
    /// The box's form was submitted.
    Form,
    /// A search button beside the box was clicked.
    Button,
    /// Enter was pressed but nothing on the page claimed it: a page that searches as you
    /// type has searched already.
    Typed,
}

/// What [`search`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Searched {
    /// The search box: Phase 1's selector, or one describing the box detected.
    pub selector: String,
    /// The box was detected, not Phase 1's.
    pub detected: bool,
    /// How the query was submitted.
    pub submitted: Submitted,
}

/// Why a search could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The browser failed.
    #[error(transparent)]
    Browser(#[from] BrowserError),
    /// Neither Phase 1's selector nor detection found a search box.
    #[error("no search box on the page{}", known.as_ref().map(|k| format!(" (Phase 1's {k:?} matches none)")).unwrap_or_default())]
    NoSearchBox {
        /// Phase 1's selector, when one was given.
        known: Option<String>,
    },
}

/// The script that finds the search box (Phase 1's `KNOWN` first) and marks it.
const FIND_JS: &str = r#"((KNOWN) => {
    const MARK = 'data-pe-search';
    document.querySelectorAll('[' + MARK + ']').forEach(e => e.removeAttribute(MARK));
    const visible = e => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
    const typable = e => e && visible(e) && !e.disabled && !e.readOnly
        && (e.matches('textarea, [contenteditable=""], [contenteditable=true]')
            || (e.matches('input') && /^(|text|search)$/i.test(e.getAttribute('type') || '')));
    if (KNOWN) {
        let known = null;
        try { known = Array.from(document.querySelectorAll(KNOWN)).find(typable); } catch (e) {}
        if (known) { known.setAttribute(MARK, '1'); return { selector: KNOWN, detected: false }; }
    }
    const SAYS = /search|keyword|query|\bq\b|what|job title/i;
    const label = e => [e.getAttribute('name'), e.id, e.getAttribute('placeholder'),
        e.getAttribute('aria-label'), e.getAttribute('title'),
        ...Array.from(e.labels || []).map(l => l.innerText)].filter(Boolean).join(' ');
    const fields = Array.from(document.querySelectorAll('input, textarea, [role=searchbox], [contenteditable]')).filter(typable);
    const found = fields.find(e => /^search$/i.test(e.getAttribute('type') || '') || e.getAttribute('role') === 'searchbox')
        || fields.find(e => SAYS.test(label(e)))
        || fields.find(e => e.closest('form[role=search], [role=search]'));
    if (!found) return null;
    found.setAttribute(MARK, '1');
    const selector = found.id ? '#' + CSS.escape(found.id)
        : found.getAttribute('name') ? found.tagName.toLowerCase() + '[name="' + found.getAttribute('name') + '"]'
        : found.tagName.toLowerCase() + '[' + MARK + ']';
    return { selector, detected: true };
})"#;

/// The script that submits the query typed into the marked box.
const SUBMIT_JS: &str = r#"(() => {
    const box = document.querySelector('[data-pe-search]');
    if (!box) return 'typed';
    const key = type => {
        const event = new KeyboardEvent(type, { key: 'Enter', code: 'Enter', keyCode: 13, which: 13, bubbles: true, cancelable: true });
        box.dispatchEvent(event);
        return event.defaultPrevented;
    };
    const handled = [key('keydown'), key('keypress'), key('keyup')].some(Boolean);
    if (handled) return 'enter_key';
    if (box.form) { box.form.requestSubmit(); return 'form'; }
    const text = e => (e.innerText || e.value || e.getAttribute('aria-label') || '').trim();
    for (let scope = box.parentElement, up = 0; scope && up < 3; scope = scope.parentElement, up++) {
        const button = Array.from(scope.querySelectorAll('button, [role=button], input[type=submit], input[type=button]'))
            .find(b => /search|find|go\b/i.test(text(b)));
        if (button) { button.click(); return 'button'; }
    }
    return 'typed';
})()"#;

/// The box found.
#[derive(Debug, Deserialize)]
struct Found {
    selector: String,
    detected: bool,
}

/// Types `query` into the search box and submits it, then waits up to `settle` for the
/// results. The box is Phase 1's `known` selector when it matches a visible text field,
/// else one detected on the page.
///
/// ```no_run
/// # async fn run(browser: &dyn page_explorer::Browser) -> Result<(), page_explorer::search::SearchError> {
/// let searched = page_explorer::search::search(browser, Some("#search"), "rust", std::time::Duration::from_secs(5)).await?;
/// tracing::info!(box_ = %searched.selector, how = ?searched.submitted, "searched");
/// # Ok(()) }
/// ```
pub async fn search(
    browser: &dyn Browser,
    known: Option<&str>,
    query: &str,
    settle: Duration,
) -> Result<Searched, SearchError> {
    let known = known.map(str::trim).filter(|k| !k.is_empty());
    let value = browser
        .evaluate(&format!("{FIND_JS}({})", Value::from(known)))
        .await?;
    if value.is_null() {
        return Err(SearchError::NoSearchBox {
            known: known.map(str::to_owned),
        });
    }
    let found: Found = serde_json::from_value(value)
        .map_err(|error| BrowserError::Protocol(format!("finding the search box: {error}")))?;
    if found.detected {
        tracing::info!(selector = %found.selector, ?known, "search box detected");
    }
    browser.type_text(&format!("[{MARK}]"), query).await?;
    let submitted: Submitted = serde_json::from_value(browser.evaluate(SUBMIT_JS).await?)
        .map_err(|error| BrowserError::Protocol(format!("submitting the search: {error}")))?;
    browser.wait_for_settle(settle).await?;
    browser
        .evaluate(&format!(
            "document.querySelectorAll('[{MARK}]').forEach(e => e.removeAttribute('{MARK}'))"
        ))
        .await?;
    Ok(Searched {
        selector: found.selector,
        detected: found.detected,
        submitted,
    })
}
