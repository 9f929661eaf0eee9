//! Applying filters before collecting (spec 002, Phase 2: the Collector's
//! `apply_filters(filter_settings)`, "apply filters if needed (using Phase 1's filterButton
//! selector)"): [`apply_filters`] opens the filters with Phase 1's filter button, turns on the
//! controls labelled as asked (checkboxes, radios, `<select>` options, pressed buttons and
//! chips) and submits them (or closes the dialog they are in).
//!
//! Only generic markup is relied on: accessible labels (`<label>`, `aria-label`,
//! `aria-labelledby`, text), ARIA roles and states, and dialogs marked as such (`<dialog
//! open>`, `role=dialog`, `aria-modal`). Controls inside iframes and shadow roots are not
//! searched.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::browser::{Browser, BrowserError};

/// What [`apply_filters`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppliedFilters {
    /// The labels whose control is now on (also those that were on already), in the order
    /// asked.
    pub applied: Vec<String>,
    /// The labels no control matched, or whose control would not turn on.
    pub missing: Vec<String>,
    /// A submit button ("Apply", "Show results", "Done", ...) was clicked. When `false` the
    /// filters either apply by themselves or the dialog holding them was closed.
    pub submitted: bool,
}

/// Why filters could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    /// The browser failed, or the filter button matches nothing
    /// ([`BrowserError::ElementNotFound`]).
    #[error(transparent)]
    Browser(#[from] BrowserError),
    /// None of the labels asked for matched a control that could be turned on (the dialog
    /// opened for them, if any, was closed again).
    #[error("no filter control is labelled {}", quoted(missing))]
    NothingApplied {
        /// The labels asked for.
        missing: Vec<String>,
    },
}

/// `"a", "b"`.
fn quoted(labels: &[String]) -> String {
    labels
        .iter()
        .map(|label| format!("{label:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Functions shared by the scripts. `ARGS` is defined before them by each script.
const PRELUDE_JS: &str = r#"
const MARK = 'data-pe-filter';
const ON_MARK = 'data-pe-filter-on';
const SCOPE_MARK = 'data-pe-filter-scope';
const DIALOGS = 'dialog[open], [role=dialog], [role=alertdialog], [aria-modal=true]';
const norm = s => (s || '').replace(/\s+/g, ' ').trim().toLowerCase();
const stripCount = s => s.replace(/\s*[\(\[]\s*[\d.,]+\s*[k+]*\s*[\)\]]$/, '').trim();
const visible = e => !!e && e.isConnected && e.getClientRects().length > 0
    && getComputedStyle(e).visibility !== 'hidden';
const disabled = e => !!(e.disabled || e.getAttribute('aria-disabled') === 'true'
    || (e.closest && e.closest('fieldset[disabled]')));
const textOf = e => e ? (e.innerText || e.textContent || '') : '';
const rawNames = e => {
    const out = [];
    const aria = e.getAttribute('aria-label');
    if (aria) out.push(aria);
    const by = e.getAttribute('aria-labelledby');
    if (by) out.push(by.split(/\s+/).map(id => textOf(document.getElementById(id))).join(' '));
    if (e.labels) for (const l of e.labels) out.push(textOf(l));
    if (e.tagName === 'OPTION') { out.push(e.label); out.push(e.text); }
    else if (e.tagName === 'INPUT') { if (/^(button|submit)$/i.test(e.type)) out.push(e.value); }
    else if (e.tagName !== 'SELECT' && e.tagName !== 'TEXTAREA') out.push(textOf(e));
    if (e.title) out.push(e.title);
    return out.filter(s => norm(s) !== '');
};
// How well the control's names match `want`: 0 exactly, 1 but for a trailing count such as
// "(12)", 2 on one line of a longer label; -1 not at all.
const matchTier = (e, want) => {
    const w = norm(want);
    let best = -1;
    for (const raw of rawNames(e)) {
        const n = norm(raw);
        let t = -1;
        if (n === w) t = 0;
        else if (stripCount(n) === w) t = 1;
        else if (raw.split('\n').some(line => norm(line) === w || stripCount(norm(line)) === w)) t = 2;
        if (t >= 0 && (best < 0 || t < best)) best = t;
    }
    return best;
};
const CONTROLS = 'input[type=checkbox], input[type=radio], option, [role=checkbox], [role=radio], '
    + '[role=switch], [role=menuitemcheckbox], [role=menuitemradio], [role=option], [role=tab], '
    + '[aria-pressed], button, [role=button], a[href]';
// What kind of control `e` is: 'check' (native), 'option' (of a select), 'aria' (a state in
// an ARIA attribute) or 'plain' (a button or link whose state is at best a class).
const kindOf = e => {
    if (e.tagName === 'INPUT') return 'check';
    if (e.tagName === 'OPTION') return 'option';
    if (e.hasAttribute('aria-pressed') || e.hasAttribute('aria-checked')
        || /^(checkbox|radio|switch|menuitemcheckbox|menuitemradio|option|tab)$/.test(e.getAttribute('role') || '')) return 'aria';
    return 'plain';
};
// Whether the control is on: true, false, or null when that cannot be told.
const isOn = e => {
    switch (kindOf(e)) {
        case 'check': return e.checked;
        case 'option': return e.selected;
        case 'aria': {
            for (const a of ['aria-pressed', 'aria-checked', 'aria-selected']) {
                const v = e.getAttribute(a);
                if (v !== null) return v === 'true' || v === 'mixed';
            }
            return false;
        }
        default: {
            const current = e.getAttribute('aria-current');
            if ((current && current !== 'false') || e.getAttribute('aria-selected') === 'true') return true;
            return /(^|[\s_-])(active|selected|checked|is-active|is-selected)($|\s)/i.test(e.className || '') ? true : null;
        }
    }
};
const selectOf = o => o.closest('select');
// Where the control can be seen: itself, its select or one of its labels.
const reachable = e => {
    if (e.tagName === 'OPTION') return visible(selectOf(e));
    if (visible(e)) return true;
    return !!(e.labels && Array.from(e.labels).some(visible));
};
// Whether `e` is in a closed dialog (other than `scope` or one around it).
const inOtherDialog = (e, scope) => {
    const d = e.closest(DIALOGS);
    return !!d && !visible(d) && !d.contains(scope);
};
// The element the filters are in: the one marked, or the topmost open dialog, or the body.
const scopeNow = () => {
    const marked = document.querySelector('[' + SCOPE_MARK + ']');
    if (marked && visible(marked)) return marked;
    const dialogs = Array.from(document.querySelectorAll(DIALOGS)).filter(visible);
    return dialogs.length ? dialogs[dialogs.length - 1] : document.body;
};
const scopeKind = s => s === document.body ? 'page'
    : (s.matches(DIALOGS) ? 'dialog' : 'panel');
// The controls in `scope` labelled `want`, best first.
const candidates = (scope, want) => {
    const rank = { check: 0, option: 0, aria: 1, plain: 2 };
    const all = Array.from(scope.querySelectorAll(CONTROLS));
    return all
        .map((e, i) => ({ e, i, tier: matchTier(e, want) }))
        .filter(c => c.tier >= 0 && !disabled(c.e) && !(c.e.tagName === 'OPTION' && disabled(selectOf(c.e)))
            && !inOtherDialog(c.e, scope))
        .map(c => ({ ...c, kind: rank[kindOf(c.e)], seen: reachable(c.e) ? 0 : 1 }))
        .sort((a, b) => a.tier - b.tier || a.kind - b.kind || a.seen - b.seen || a.i - b.i)
        .map(c => c.e);
};
// Whether a mouse click in the middle of `t` reaches it (nothing covers it).
const hits = t => {
    if (!visible(t)) return false;
    t.scrollIntoView({ block: 'center', inline: 'center' });
    const r = t.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) return false;
    const p = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return !!p && (p === t || t.contains(p) || (p.tagName === 'LABEL' && p.control === t)
        || (t.tagName === 'LABEL' && t.control === p));
};
// Marks `t` to be clicked and returns its selector.
let marks = 0;
const markForClick = t => {
    const id = String(++marks);
    t.setAttribute(MARK, id);
    return '[' + MARK + '="' + id + '"]';
};
const clearMarks = () => document.querySelectorAll('[' + MARK + ']').forEach(e => e.removeAttribute(MARK));
const fire = (e, type) => e.dispatchEvent(new Event(type, { bubbles: true }));
"#;

/// Picks and marks the scope among the open dialogs (those holding a control labelled as
/// asked first), the panel the filter button controls, and the page. `ARGS = { wanted,
/// opener }`.
const SCOPE_JS: &str = r#"
document.querySelectorAll('[' + SCOPE_MARK + ']').forEach(e => e.removeAttribute(SCOPE_MARK));
document.querySelectorAll('[' + ON_MARK + ']').forEach(e => e.removeAttribute(ON_MARK));
const scopes = Array.from(document.querySelectorAll(DIALOGS)).filter(visible).reverse();
let opener = null;
try { opener = ARGS.opener ? document.querySelector(ARGS.opener) : null; } catch (e) {}
const controlled = opener && opener.getAttribute('aria-controls');
if (controlled) {
    const panel = document.getElementById(controlled.split(/\s+/)[0]);
    if (visible(panel) && !scopes.includes(panel)) scopes.push(panel);
}
scopes.push(document.body);
const scope = scopes.find(s => ARGS.wanted.some(w => candidates(s, w).length > 0)) || scopes[0];
if (scope !== document.body) scope.setAttribute(SCOPE_MARK, '');
return scopeKind(scope);
"#;

/// Finds the control labelled `ARGS.label` and, unless it is on, turns it on: a `<select>`
/// option is selected at once; anything else is marked for a mouse click, or clicked from
/// script when the mouse cannot reach it. `ARGS = { label, force }`; with `force` a control
/// still off is clicked from script (and a checkbox set) instead.
const TURN_ON_JS: &str = r#"
clearMarks();
const scope = scopeNow();
const found = candidates(scope, ARGS.label);
if (found.length === 0) return { status: 'missing' };
const e = found[0];
const state = isOn(e);
e.setAttribute(ON_MARK, '');
if (state === true) return { status: 'on' };
if (e.tagName === 'OPTION') {
    const select = selectOf(e);
    e.selected = true;
    if (select) { fire(select, 'input'); fire(select, 'change'); }
    return { status: isOn(e) ? 'set' : 'off' };
}
if (ARGS.force) {
    if (state === false || state === null) e.click();
    if (kindOf(e) === 'check' && !e.checked) { e.checked = true; fire(e, 'input'); fire(e, 'change'); }
    return { status: isOn(e) === false ? 'off' : 'set' };
}
const targets = kindOf(e) === 'check'
    ? [...(e.getBoundingClientRect().width >= 8 ? [e] : []), ...Array.from(e.labels || []), e]
    : [e];
const target = targets.find(hits);
if (target) return { status: 'click', selector: markForClick(target) };
e.click();
return { status: isOn(e) === false ? 'off' : 'set' };
"#;

/// The state of the control labelled `ARGS.label`: 'on', 'off', 'unknown' or 'missing'.
const STATE_JS: &str = r#"
const found = candidates(scopeNow(), ARGS.label);
if (found.length === 0) return 'missing';
const state = isOn(found[0]);
return state === null ? 'unknown' : (state ? 'on' : 'off');
"#;

/// Marks the button that submits the filters: in the dialog or panel, or, on the page, in the
/// forms holding the controls turned on. Evaluates to its selector or `null`.
const SUBMIT_JS: &str = r#"
clearMarks();
const scope = scopeNow();
let roots = [scope];
if (scopeKind(scope) === 'page') {
    roots = Array.from(new Set(Array.from(document.querySelectorAll('[' + ON_MARK + ']'))
        .map(e => e.closest('form')).filter(f => f)));
}
const good = /\b(apply|show|done|search|update|see results)\b/;
const bad = /\b(close|cancel|reset|clear|dismiss|remove|back|more|less)\b/;
const buttons = roots.flatMap(r => Array.from(r.querySelectorAll(
        'button, [role=button], input[type=submit], input[type=button]')))
    .filter(b => visible(b) && !disabled(b) && !b.hasAttribute(ON_MARK)
        && !b.hasAttribute('aria-pressed') && !b.hasAttribute('aria-checked'));
const named = b => rawNames(b).map(norm);
const score = b => {
    const names = named(b);
    if (names.some(n => bad.test(n))) return -1;
    if (names.some(n => good.test(n) && n.search(good) === 0)) return 2;
    if (names.some(n => good.test(n))) return 1;
    if (scopeKind(scope) === 'page' && (b.type === 'submit')) return 0;
    return -1;
};
const best = buttons.map((b, i) => ({ b, i, s: score(b) })).filter(c => c.s >= 0)
    .sort((x, y) => y.s - x.s || x.i - y.i)[0];
return best ? markForClick(best.b) : null;
"#;

/// Whether the dialog the filters are in is still open.
const OPEN_JS: &str = r#"
const marked = document.querySelector('[' + SCOPE_MARK + ']');
return !!marked && visible(marked) && scopeKind(marked) === 'dialog';
"#;

/// Closes the dialog the filters are in: marks its close button and evaluates to its
/// selector, else closes it from script (a native dialog's `close()`, else Escape) and
/// evaluates to `null`.
const CLOSE_JS: &str = r#"
clearMarks();
const dialog = document.querySelector('[' + SCOPE_MARK + ']');
if (!dialog || !visible(dialog)) return null;
const closer = Array.from(dialog.querySelectorAll('button, [role=button], a[href], input[type=button]'))
    .filter(b => visible(b) && !disabled(b))
    .find(b => rawNames(b).map(norm).some(n => /\b(close|dismiss)\b/.test(n) || /^[×✕✖✗x]$/.test(n)));
if (closer && hits(closer)) return markForClick(closer);
if (dialog.tagName === 'DIALOG' && typeof dialog.close === 'function') { dialog.close(); return null; }
const target = dialog.contains(document.activeElement) ? document.activeElement : dialog;
for (const type of ['keydown', 'keyup']) {
    target.dispatchEvent(new KeyboardEvent(type, { key: 'Escape', code: 'Escape', keyCode: 27, which: 27, bubbles: true, cancelable: true }));
}
return null;
"#;

/// Removes the marks left on the page.
const CLEAN_JS: &str = r#"
clearMarks();
for (const m of [ON_MARK, SCOPE_MARK]) document.querySelectorAll('[' + m + ']').forEach(e => e.removeAttribute(m));
return true;
"#;

/// A script: the prelude, `ARGS` and `body`, in a function evaluated at once.
fn script(args: &Value, body: &str) -> String {
    format!("(() => {{\nconst ARGS = {args};\n{PRELUDE_JS}\n{body}\n}})()")
}

/// Evaluates `body` with `args` and reads its value as `T`.
async fn run<T: serde::de::DeserializeOwned>(
    browser: &dyn Browser,
    what: &str,
    args: Value,
    body: &str,
) -> Result<T, BrowserError> {
    let value = browser.evaluate(&script(&args, body)).await?;
    serde_json::from_value(value)
        .map_err(|error| BrowserError::Protocol(format!("{what}: unexpected answer: {error}")))
}

/// What [`TURN_ON_JS`] did.
#[derive(Debug, Deserialize)]
struct TurnOn {
    status: String,
    #[serde(default)]
    selector: Option<String>,
}

/// Opens the filters, turns on the controls labelled `wanted` and submits them.
///
/// With `filter_button` (Phase 1's `keyElements.filterButton`) that button is clicked first
/// and the page let settle; the filters are then looked for in the dialog it opened (or the
/// panel it controls), else on the whole page (filters in a sidebar). Each label is matched,
/// case-insensitively and trimmed, against the accessible labels of checkboxes and radios
/// (`<label>` around or `for=`, `aria-label`, `aria-labelledby`), `<select>` options (which
/// are selected, with `input` and `change` dispatched), buttons and chips with `aria-pressed`
/// or a checked/selected ARIA role, and, last, plain buttons and links; a label with a count
/// after it ("Senior (4)") matches too. A control already on is left as it is, so applying
/// twice changes nothing. Then a button in the dialog reading apply, show, done, search,
/// update or see results (never close, cancel, reset) is clicked; failing that the dialog is
/// closed (its close button, else Escape). The page is let settle (`settle` at most) after
/// every click.
///
/// Labels that match nothing are returned as [`AppliedFilters::missing`]; when none could be
/// applied the result is [`FilterError::NothingApplied`]. No labels: nothing is done.
pub async fn apply_filters(
    browser: &dyn Browser,
    filter_button: Option<&str>,
    wanted: &[String],
    settle: Duration,
) -> Result<AppliedFilters, FilterError> {
    let mut labels: Vec<String> = Vec::new();
    for label in wanted {
        let label = label.trim();
        if !label.is_empty() && !labels.iter().any(|l| l.eq_ignore_ascii_case(label)) {
            labels.push(label.to_owned());
        }
    }
    if labels.is_empty() {
        return Ok(AppliedFilters::default());
    }
    if let Some(selector) = filter_button {
        browser.click(selector).await?;
        browser.wait_for_settle(settle).await?;
    }
    let args = serde_json::json!({ "wanted": labels, "opener": filter_button });
    let scope: String = run(browser, "finding the filters", args, SCOPE_JS).await?;
    tracing::debug!(%scope, "filters are looked for in the {scope}");

    let mut result = AppliedFilters::default();
    for label in labels {
        if turn_on(browser, &label, settle).await? {
            result.applied.push(label);
        } else {
            result.missing.push(label);
        }
    }
    if result.applied.is_empty() {
        close_dialog(browser, settle).await?;
        clean(browser).await;
        return Err(FilterError::NothingApplied {
            missing: result.missing,
        });
    }
    let submit: Option<String> =
        run(browser, "finding the submit button", Value::Null, SUBMIT_JS).await?;
    if let Some(selector) = submit {
        browser.click(&selector).await?;
        browser.wait_for_settle(settle).await?;
        result.submitted = true;
    }
    close_dialog(browser, settle).await?;
    clean(browser).await;
    tracing::debug!(?result, "filters applied");
    Ok(result)
}

/// Turns on the control labelled `label`; whether it is on afterwards (or was clicked and its
/// state cannot be told).
async fn turn_on(
    browser: &dyn Browser,
    label: &str,
    settle: Duration,
) -> Result<bool, BrowserError> {
    let args = serde_json::json!({ "label": label, "force": false });
    let first: TurnOn = run(browser, "turning a filter on", args, TURN_ON_JS).await?;
    match (first.status.as_str(), first.selector) {
        ("missing", _) => return Ok(false),
        ("on", _) => return Ok(true),
        ("click", Some(selector)) => {
            browser.click(&selector).await?;
        }
        _ => {}
    }
    browser.wait_for_settle(settle).await?;
    let args = serde_json::json!({ "label": label });
    let state: String = run(browser, "reading a filter", args, STATE_JS).await?;
    if state != "off" {
        // On, or a button or link whose state cannot be told, or gone with the click (the
        // page changed): the click did what it could.
        return Ok(true);
    }
    // The click did not turn it on (something covered it, or the page ignores the mouse
    // there): from script.
    let args = serde_json::json!({ "label": label, "force": true });
    let forced: TurnOn = run(browser, "turning a filter on", args, TURN_ON_JS).await?;
    browser.wait_for_settle(settle).await?;
    let on = matches!(forced.status.as_str(), "on" | "set");
    if !on {
        tracing::warn!(label, "the filter control would not turn on");
    }
    Ok(on)
}

/// Closes the dialog the filters are in, if it is still open.
async fn close_dialog(browser: &dyn Browser, settle: Duration) -> Result<(), BrowserError> {
    let open: bool = run(browser, "checking the filters dialog", Value::Null, OPEN_JS).await?;
    if !open {
        return Ok(());
    }
    let closer: Option<String> =
        run(browser, "closing the filters dialog", Value::Null, CLOSE_JS).await?;
    if let Some(selector) = closer {
        browser.click(&selector).await?;
    }
    browser.wait_for_settle(settle).await?;
    Ok(())
}

/// Removes the marks left on the page (failing to is only logged).
async fn clean(browser: &dyn Browser) {
    if let Err(error) = browser.evaluate(&script(&Value::Null, CLEAN_JS)).await {
        tracing::debug!(%error, "the filter marks could not be removed");
    }
}
