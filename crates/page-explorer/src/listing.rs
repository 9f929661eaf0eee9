//! From examples to selectors (spec 002, Phase 1 → Phase 2): [`infer_listing`] generalizes
//! the selectors of a few job listings the explorer saw into [`ListingSelectors`] that match
//! every listing, and [`infer_panel`] / [`infer_detail_page`] guess the [`DetailSelectors`]
//! of a details panel or of a job's own page. Everything is read from the page shown, with
//! generic cues only: repeated siblings, stable ids and classes, `itemprop`, data
//! attributes, headings, links, buttons and `<time>`.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::browser::{Browser, BrowserError};
use crate::selectors::{DetailSelectors, ListingSelectors, RawListing, read_fields};

/// Helpers shared by the scripts: stable class and id tests, selectors relative to an element
/// or unique in the document, and the fields a listing or a panel holds.
const HELPERS_JS: &str = r#"
const esc = s => CSS.escape(s);
const hashy = c => /^(css|sc|jsx|emotion|svelte|styled|ng)-|^_/.test(c) || /\d{3,}/.test(c)
    || (/\d/.test(c) && /[a-z]/.test(c) && /[A-Z]/.test(c)) || c.length > 40;
const STATE = /^(active|selected|current|hover|focus(ed)?|open(ed)?|closed|expanded|collapsed|visible|hidden|show|shown|disabled|checked|highlight(ed)?|first|last|odd|even|new)$/i;
const stable = c => !!c && !STATE.test(c) && !/^(is|has)-/.test(c) && !hashy(c);
const classes = e => Array.from(e.classList || []).filter(stable);
const idOk = e => !!e.id && stable(e.id) && !/\d/.test(e.id)
    && document.querySelectorAll('#' + esc(e.id)).length === 1;
const text = e => e ? (e.innerText || e.textContent || '').replace(/\s+/g, ' ').trim() : '';
const tag = e => e.tagName.toLowerCase();
const attrValue = v => '"' + v.replace(/["\\]/g, '\\$&') + '"';
const dataAttrs = e => Array.from(e.attributes).filter(a => /^data-/.test(a.name) && !/^data-pe/.test(a.name));
const realLink = a => {
    const h = (a.getAttribute('href') || '').trim();
    return h !== '' && h !== '#' && !/^javascript:/i.test(h);
};
const CLICKABLE = 'button, [role=button], [onclick]';
// A selector that finds `el` first within `root` (`''` for root itself), preferring cues
// that hold in the other roots `peers` too.
const relSel = (root, el, peers) => {
    if (el === root) return '';
    const ok = sel => {
        try {
            if (root.querySelector(sel) !== el) return false;
            const hits = peers.filter(p => p.querySelector(sel)).length;
            return hits * 5 >= peers.length * 4;
        } catch (e) { return false; }
    };
    const cands = [];
    const prop = el.getAttribute('itemprop');
    if (prop) cands.push('[itemprop=' + attrValue(prop) + ']');
    for (const c of classes(el)) cands.push('.' + esc(c), tag(el) + '.' + esc(c));
    for (const a of dataAttrs(el)) {
        const prefix = a.value.replace(/[0-9]+$/, '');
        if (prefix !== a.value && prefix.length >= 2) cands.push('[' + a.name + '^=' + attrValue(prefix) + ']');
        else cands.push('[' + a.name + '=' + attrValue(a.value) + ']');
        cands.push('[' + a.name + ']');
    }
    cands.push(tag(el));
    if (el.matches('a[href]')) cands.push('a[href]');
    for (const c of cands) if (ok(c)) return c;
    // A path down from root, by tag and position among tags.
    const parts = [];
    for (let cur = el; cur && cur !== root; cur = cur.parentElement) {
        const same = Array.from(cur.parentElement.children).filter(c => c.tagName === cur.tagName);
        parts.unshift(tag(cur) + (same.length > 1 ? ':nth-of-type(' + (same.indexOf(cur) + 1) + ')' : ''));
    }
    return ':scope > ' + parts.join(' > ');
};
// A selector unique in the document for `el`, by ids, classes and positions of ancestors.
const docSel = el => {
    const parts = [];
    for (let cur = el; cur && cur.nodeType === 1; cur = cur.parentElement) {
        if (idOk(cur)) { parts.unshift('#' + esc(cur.id)); break; }
        if (cur === document.body || cur === document.documentElement) { parts.unshift(tag(cur)); break; }
        let part = tag(cur) + classes(cur).map(c => '.' + esc(c)).join('');
        try {
            if (document.querySelectorAll(part).length === 1) { parts.unshift(part); break; }
        } catch (e) {}
        const same = cur.parentElement ? Array.from(cur.parentElement.children).filter(c => c.tagName === cur.tagName) : [];
        if (same.length > 1) part += ':nth-of-type(' + (same.indexOf(cur) + 1) + ')';
        parts.unshift(part);
    }
    return parts.join(' > ');
};
const hint = e => [e.className && typeof e.className === 'string' ? e.className : '', e.id,
    e.getAttribute('itemprop') || '', e.getAttribute('aria-label') || '',
    ...dataAttrs(e).map(a => a.name + ' ' + a.value)].join(' ').toLowerCase();
const CUES = {
    title: /title|position|job-?name|role-?name|headline/,
    company: /compan|employer|organi[sz]ation|hiring-?org|brand|firm/,
    location: /locat|city|region|place|address|geo|remote/,
    salary: /salar|compensation|\bpay|wage|base-?pay/,
    postedDate: /posted|date|publish|\bago\b|time/,
};
const MONEY = /[$€£¥]\s?\d|\d\s?[$€£]|\b\d{2,3}\s?k\b|\b(usd|eur|gbp)\b/i;
const WHEN = /\b(\d+\s+(minute|hour|day|week|month)s?\s+ago|today|yesterday|just posted|\d{4}-\d{2}-\d{2})\b/i;
// The elements in `scope` carrying each field, innermost first; `skip` is left out.
const fieldsIn = (scope, skip) => {
    const all = Array.from(scope.querySelectorAll('*')).filter(e => text(e)
        && !e.matches('button, input, select, textarea, option, [role=button], script, style')
        && !skip.some(s => s && (s === e || e.contains(s) || s.contains(e))));
    const found = {};
    for (const [field, cue] of Object.entries(CUES)) {
        if (field === 'title') continue;
        const hits = all.filter(e => cue.test(hint(e)) || (field === 'postedDate' && tag(e) === 'time'));
        const inner = hits.filter(e => !hits.some(o => o !== e && e.contains(o)));
        if (inner.length) { found[field] = inner[0]; continue; }
        const leaves = all.filter(e => e.children.length === 0 && text(e).length < 60);
        if (field === 'salary') found[field] = leaves.find(e => MONEY.test(text(e)));
        if (field === 'postedDate') found[field] = leaves.find(e => WHEN.test(text(e)));
    }
    return found;
};
const titleIn = scope => {
    const all = Array.from(scope.querySelectorAll('*')).filter(e => text(e));
    return all.find(e => e.getAttribute('itemprop') === 'title')
        || all.find(e => /^h[1-6]$/.test(tag(e)))
        || all.find(e => e.children.length === 0 && CUES.title.test(hint(e)));
};
"#;

/// The script that finds the repeated listing item from the examples and builds the
/// selectors; `EXAMPLES` is defined before it.
const LISTING_JS: &str = r#"
const els = [];
for (const sel of EXAMPLES) {
    let e = null;
    try { e = document.querySelector(sel); } catch (err) {}
    if (e && !els.includes(e)) els.push(e);
}
if (!els.length) return null;
const alike = (a, b) => {
    if (a.tagName !== b.tagName) return false;
    const ca = classes(a), cb = classes(b);
    return !ca.length || !cb.length || ca.some(c => cb.includes(c));
};
const peersOf = e => e.parentElement ? Array.from(e.parentElement.children).filter(c => alike(c, e)) : [e];
const actionable = e => e.matches('a[href], ' + CLICKABLE) || !!e.querySelector('a[href], ' + CLICKABLE);
const top = e => e === document.body || e === document.documentElement || !e.parentElement;
let item = null;
// Two or more examples: the nearest ancestors of the first that have another example in an
// alike sibling.
for (let a = els[0]; !item && els.length > 1 && !top(a); a = a.parentElement) {
    const peers = peersOf(a);
    if (els.slice(1).some(o => peers.some(p => p !== a && p.contains(o)))) item = a;
}
// One example (or none of the above): the nearest ancestor repeated among its siblings,
// most of them actionable.
for (let a = els[0]; !item && !top(a); a = a.parentElement) {
    const peers = peersOf(a);
    if (peers.length >= 2 && peers.filter(actionable).length * 2 >= peers.length && actionable(a)) item = a;
}
if (!item) return null;
const group = peersOf(item);
// The item part: tag, the stable classes all share, else a shared data attribute.
let part = tag(item);
const common = classes(item).filter(c => group.every(g => g.classList.contains(c)));
part += common.map(c => '.' + esc(c)).join('');
if (!common.length) {
    for (const a of dataAttrs(item)) {
        const values = group.map(g => g.getAttribute(a.name));
        if (values.some(v => v === null)) continue;
        if (values.every(v => v === values[0])) { part += '[' + a.name + '=' + attrValue(values[0]) + ']'; break; }
        let prefix = values.reduce((p, v) => { let i = 0; while (i < p.length && p[i] === v[i]) i++; return p.slice(0, i); });
        prefix = prefix.replace(/[0-9]+$/, '');
        if (prefix.length >= 2) { part += '[' + a.name + '^=' + attrValue(prefix) + ']'; break; }
    }
}
const exact = sel => {
    try {
        const hits = Array.from(document.querySelectorAll(sel));
        return hits.length === group.length && group.every(g => hits.includes(g));
    } catch (e) { return false; }
};
const parentSel = docSel(item.parentElement);
const cands = [parentSel + ' > ' + part, part, parentSel + ' > ' + tag(item)];
const itemSel = cands.find(exact) || cands[0];
// The fields, relative to the item.
const linkEl = item.matches('a[href]') && realLink(item) ? item
    : Array.from(item.querySelectorAll('a[href]')).find(a => realLink(a) && text(a))
    || Array.from(item.querySelectorAll('a[href]')).find(realLink);
const button = item.matches(CLICKABLE) ? item : Array.from(item.querySelectorAll(CLICKABLE)).find(text);
const titleEl = titleIn(item) || (linkEl && text(linkEl) ? linkEl : null) || button || item;
const fields = fieldsIn(item, [titleEl, linkEl, button]);
const rel = e => e ? relSel(item, e, group) : null;
return {
    item: itemSel,
    title: rel(titleEl),
    link: linkEl ? rel(linkEl) : '',
    company: rel(fields.company),
    location: rel(fields.location),
    salary: rel(fields.salary),
    postedDate: rel(fields.postedDate),
};
"#;

/// Infers selectors for every job listing on the page shown from `examples`: selectors of
/// individual listings as the explorer saw them (the listing itself or any element in it,
/// e.g. `#jobs > li:nth-child(2) > a` or `[data-testid="job-3"]`). Each example counts by
/// the first element it matches; examples reaching into a frame or shadow root (`A >>> B`)
/// or matching nothing are left out.
///
/// The listing item is the nearest ancestor of the examples repeated among its siblings
/// (same tag, a shared class): with two examples or more, the level where they sit in
/// sibling items; with one, the nearest one whose parent holds two or more alike children,
/// most with a link or a button. The item selector is `parent > tag.class` (or
/// `tag[data-x^="prefix"]`), checked to match exactly those siblings; the fields are
/// relative to the item. `link` is empty when the listings have no link (a button shows the
/// job: see [`DetailMode::Panel`](crate::selectors::DetailMode::Panel)).
///
/// `None` when no example gives a repeated listing.
///
/// ```no_run
/// # async fn run(browser: &dyn page_explorer::Browser) -> Result<(), page_explorer::BrowserError> {
/// let examples = vec!["#jobs > li:nth-child(2) > a".to_owned()];
/// if let Some(listing) = page_explorer::infer_listing(browser, &examples).await? {
///     tracing::info!(item = %listing.item, title = %listing.title, "listings");
/// }
/// # Ok(()) }
/// ```
pub async fn infer_listing(
    browser: &dyn Browser,
    examples: &[String],
) -> Result<Option<ListingSelectors>, BrowserError> {
    let examples: Vec<&str> = examples
        .iter()
        .map(|e| e.trim())
        .filter(|e| !e.is_empty() && !e.contains(">>>"))
        .collect();
    if examples.is_empty() {
        return Ok(None);
    }
    let js = format!(
        "(() => {{ const EXAMPLES = {examples}; {HELPERS_JS} {LISTING_JS} }})()",
        examples = Value::from(examples)
    );
    let value = browser.evaluate(&js).await?;
    if value.is_null() {
        return Ok(None);
    }
    let listing: ListingSelectors = serde_json::from_value(value)
        .map_err(|error| BrowserError::Protocol(format!("inferring the listing: {error}")))?;
    Ok((!listing.item.is_empty()).then_some(listing))
}

/// Guessed details, as the scripts return them.
#[derive(Debug, Deserialize)]
struct Guess {
    title: Option<String>,
    company: Option<String>,
    location: Option<String>,
    salary: Option<String>,
    posted: Option<String>,
    apply: Option<String>,
}

impl From<Guess> for DetailSelectors {
    fn from(guess: Guess) -> Self {
        DetailSelectors {
            select: None,
            title: guess.title,
            company: guess.company,
            location: guess.location,
            salary: guess.salary,
            posted_date: guess.posted,
            apply: guess.apply,
        }
    }
}

/// The script that guesses the detail fields in `scope` (preferring `inner`, where the
/// page changed); `scope` and `inner` are defined before it.
const GUESS_JS: &str = r#"
const APPLY = /\bapply\b|bewerben|postuler|candidat/i;
const controls = root => Array.from(root.querySelectorAll('a[href], button, input[type=submit], [role=button]'))
    .filter(e => APPLY.test(text(e) || e.value || e.getAttribute('aria-label') || ''));
const apply = controls(inner)[0] || controls(scope)[0]
    || (inner !== document.body ? Array.from(inner.querySelectorAll('a[href]')).find(realLink) : null);
const title = titleIn(inner) || titleIn(scope);
const fields = Object.assign({}, fieldsIn(scope, [title, apply]), fieldsIn(inner, [title, apply]));
const scopeSel = scope === document.body ? '' : docSel(scope) + ' ';
const sel = e => e ? (idOk(e) ? '#' + esc(e.id) : scopeSel + relSel(scope, e, [scope])) : null;
return { title: sel(title), company: sel(fields.company), location: sel(fields.location),
         salary: sel(fields.salary), posted: sel(fields.postedDate), apply: sel(apply) };
"#;

/// Guesses the [`DetailSelectors`] of a job's own page, the one shown now: its first
/// heading, an apply link or button, and company, location, salary and date by class names,
/// `itemprop`, data attributes and `<time>`.
pub async fn infer_detail_page(browser: &dyn Browser) -> Result<DetailSelectors, BrowserError> {
    let js = format!(
        "(() => {{ {HELPERS_JS} const scope = document.body, inner = document.body; {GUESS_JS} }})()"
    );
    let guess: Guess = serde_json::from_value(browser.evaluate(&js).await?)
        .map_err(|error| BrowserError::Protocol(format!("guessing the details: {error}")))?;
    Ok(guess.into())
}

/// The script run after clicking the first listing: where the page changed, outside the
/// listings, is the panel; `ITEM` is defined before it.
const PANEL_JS: &str = r#"
const observer = window.__pePanelObserver;
if (observer) { observer.takeRecords(); observer.disconnect(); }
const items = Array.from(document.querySelectorAll(ITEM));
const nodes = (window.__pePanelChanges || [])
    .map(n => n.nodeType === 1 ? n : n.parentElement)
    .filter(n => n && n.isConnected && document.body.contains(n) && n !== document.body
        && !items.some(i => i.contains(n) || n.contains(i)));
window.__pePanelChanges = [];
if (!nodes.length) return null;
let inner = nodes[0];
for (const n of nodes) while (inner && !inner.contains(n)) inner = inner.parentElement;
if (!inner || inner === document.body || inner === document.documentElement) return null;
let scope = inner;
while (scope.parentElement && scope.parentElement !== document.body
       && !items.some(i => scope.parentElement.contains(i))) scope = scope.parentElement;
"#;

/// Finds the details panel a listing fills when clicked and guesses its
/// [`DetailSelectors`]: clicks the first listing of `listing`, takes the part of the page
/// that changed outside the listings (widened up to just below what holds the listings),
/// and guesses the fields there (as [`infer_detail_page`] does). `None` when clicking
/// changed nothing outside the listings, or the listing is not there.
pub async fn infer_panel(
    browser: &dyn Browser,
    listing: &ListingSelectors,
    settle: Duration,
) -> Result<Option<DetailSelectors>, BrowserError> {
    let watch = "(() => {
        window.__pePanelChanges = [];
        if (window.__pePanelObserver) window.__pePanelObserver.disconnect();
        window.__pePanelObserver = new MutationObserver(records => {
            for (const r of records) {
                if (r.type === 'attributes' && /^data-pe/.test(r.attributeName)) continue;
                window.__pePanelChanges.push(r.target);
                r.addedNodes.forEach(n => window.__pePanelChanges.push(n));
            }
        });
        window.__pePanelObserver.observe(document.body,
            { subtree: true, childList: true, characterData: true, attributes: true });
        return true;
    })()";
    if browser.evaluate(&mark_listing_js(listing, 0, None)).await? != Value::Bool(true) {
        return Ok(None);
    }
    browser.evaluate(watch).await?;
    browser.click(&format!("[{SELECT_MARK}]")).await?;
    browser.wait_for_settle(settle).await?;
    let js = format!(
        "(() => {{ const ITEM = {item}; {HELPERS_JS} {PANEL_JS} {GUESS_JS} }})()",
        item = Value::from(listing.item.as_str())
    );
    let value = browser.evaluate(&js).await?;
    if value.is_null() {
        return Ok(None);
    }
    let guess: Guess = serde_json::from_value(value)
        .map_err(|error| BrowserError::Protocol(format!("guessing the panel: {error}")))?;
    Ok(Some(guess.into()))
}

/// The attribute the listing to click is marked with.
pub(crate) const SELECT_MARK: &str = "data-pe-select";

/// The JavaScript that marks what to click in the `index`-th listing with [`SELECT_MARK`]
/// (see [`DetailSelectors::select`]); evaluates to whether the listing exists.
pub(crate) fn mark_listing_js(
    listing: &ListingSelectors,
    index: usize,
    select: Option<&str>,
) -> String {
    format!(
        "(() => {{
            const MARK = {mark};
            document.querySelectorAll('[' + MARK + ']').forEach(e => e.removeAttribute(MARK));
            const item = document.querySelectorAll({item})[{index}];
            if (!item) return false;
            const pick = sel => {{
                if (sel === null) return null;
                if (sel === '') return item;
                try {{ return item.querySelector(sel); }} catch (e) {{ return null; }}
            }};
            const CLICKABLE = 'button, [role=button], a[href], [onclick], [tabindex]:not([tabindex=\"-1\"])';
            const target = pick({select}) || (item.matches(CLICKABLE) ? item : item.querySelector(CLICKABLE))
                || pick({title}) || item;
            target.setAttribute(MARK, '1');
            return true;
        }})()",
        mark = Value::from(SELECT_MARK),
        item = Value::from(listing.item.as_str()),
        select = Value::from(select),
        title = Value::from(listing.title.as_str()),
    )
}

/// A listing on the listing page shown.
pub(crate) struct PanelListing<'a> {
    pub(crate) selectors: &'a ListingSelectors,
    pub(crate) index: usize,
    pub(crate) page: &'a str,
}

/// Clicks the listing and reads the panel it fills; when the click navigated, reads the
/// page it led to and goes back to the listing page. `None` when the listing is gone.
pub(crate) async fn read_panel(
    browser: &dyn Browser,
    listing: &PanelListing<'_>,
    selectors: &DetailSelectors,
    settle: Duration,
) -> Result<Option<RawListing>, BrowserError> {
    let js = mark_listing_js(
        listing.selectors,
        listing.index,
        selectors.select.as_deref(),
    );
    if browser.evaluate(&js).await? != Value::Bool(true) {
        return Ok(None);
    }
    browser.click(&format!("[{SELECT_MARK}]")).await?;
    browser.wait_for_settle(settle).await?;
    let found = read_fields(browser, selectors).await;
    let now = browser.url().await?;
    if without_fragment(&now) != without_fragment(listing.page) {
        tracing::debug!(%now, "selecting the listing navigated: going back");
        browser.open(listing.page).await?;
        browser.wait_for_settle(settle).await?;
    }
    found.map(Some)
}

/// The URL without its `#fragment`.
fn without_fragment(url: &str) -> &str {
    url.split('#').next().unwrap_or(url)
}
