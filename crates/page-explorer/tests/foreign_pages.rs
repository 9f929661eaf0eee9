#![allow(clippy::print_stderr)]
//! `observe` on pages written elsewhere: the Rust documentation installed with the toolchain
//! (mdBook books and rustdoc pages), served on loopback and opened in a real headless Chromium.
//!
//! For each page, and for some of their menus opened, two things are checked:
//!
//! 1. every selector `observe` prints resolves to exactly one element (through `>>>` into
//!    same-origin iframes and open shadow roots), and the text prints every element it lists;
//! 2. every interactive element the page shows is listed, checked against an independent count
//!    made here in the page (see [`AUDIT_JS`] for what "interactive" and "shows" mean).
//!
//! The documentation comes from `$(rustc --print sysroot)/share/doc/rust/html` (`rustup
//! component add rust-docs`); without it the tests fail, they do not skip.
#![cfg(test)]

mod support;

use support::{SETTLE, open};

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use page_explorer::{Browser, ChromiumBrowser, Observation, observe};
use serde::Deserialize;
use serde_json::Value;

/// Enough for the whole of any page opened here: nothing may be cut.
const WHOLE_PAGE: usize = 2_000_000;

/// The independent count, evaluated in the page with the printed selectors as its argument.
///
/// An element is *interactive* when it is
/// - `a[href]`, `area[href]`, `button`, `input` (not `type=hidden`), `select`, `textarea` or
///   `summary`;
/// - or has an `onclick` attribute, a widget role (`button`, `link`, `checkbox`, `radio`,
///   `switch`, `tab`, `menuitem`, `menuitemcheckbox`, `menuitemradio`, `option`, `combobox`,
///   `textbox`, `searchbox`, `slider`, `spinbutton`, `treeitem`), is an editing host
///   (`contenteditable` other than `false`) or has `tabindex` ≥ 0;
/// - or is a `label` whose control does not show itself (a styled stand-in for a hidden
///   checkbox: clicking the label is the only way to reach the control).
///
/// It *shows* when
/// - neither it nor any ancestor (across shadow roots and frames) has the `hidden` attribute or
///   `aria-hidden=true`, and `checkVisibility()` holds (no `display: none` ancestor, not in the
///   closed part of a `<details>`);
/// - its own computed `visibility` is `visible`, and its border box has a non-zero width and
///   height (off-viewport elements count: observe lists the whole page, scrolled or not);
/// - no ancestor that clips its overflow has a zero width or height (which clips everything);
/// - when a modal is open (the last rendered `dialog[open]`, `[role=dialog]`,
///   `[role=alertdialog]` or `[aria-modal=true]`, as `observe` decides), it is inside it.
///
/// Elements inside same-origin iframes and open shadow roots count like the others, when the
/// iframe or host shows.
const AUDIT_JS: &str = r#"((selectors) => {
  const ROLES = new Set(['button', 'link', 'checkbox', 'radio', 'switch', 'tab', 'menuitem',
    'menuitemcheckbox', 'menuitemradio', 'option', 'combobox', 'textbox', 'searchbox', 'slider',
    'spinbutton', 'treeitem']);
  const NATIVE = 'a[href], area[href], button, input:not([type=hidden]), select, textarea, summary';

  // The parent across shadow roots (to the host) and frames (to the iframe element).
  const up = (n) => {
    const p = n.parentNode;
    if (!p) return null;
    if (p.nodeType === 11) return p.host || null;
    if (p.nodeType === 9) return (p.defaultView && p.defaultView.frameElement) || null;
    return p;
  };
  const unhidden = (el) => {
    for (let n = el; n; n = up(n)) {
      if (n.nodeType !== 1) continue;
      if (n.hasAttribute('hidden') || n.getAttribute('aria-hidden') === 'true') return false;
      // checkVisibility() covers the ancestors in the element's own document (and is false
      // for `display: contents`): ask the element and the frames on the way up.
      if ((n === el || n.tagName === 'IFRAME') && !n.checkVisibility()) return false;
    }
    return true;
  };
  const shows = (el) => {
    if (!unhidden(el)) return false;
    const view = el.ownerDocument.defaultView;
    if (view.getComputedStyle(el).visibility !== 'visible') return false;
    const r = el.getBoundingClientRect();
    if (!(r.width > 0 && r.height > 0)) return false;
    for (let a = up(el); a; a = up(a)) {
      if (a.nodeType !== 1) continue;
      const s = a.ownerDocument.defaultView.getComputedStyle(a);
      if (s.display === 'contents' || s.overflow === 'visible') continue;
      const b = a.getBoundingClientRect();
      if (b.width === 0 || b.height === 0) return false;
    }
    return true;
  };
  const interactive = (el) => {
    if (el.matches(NATIVE) || el.hasAttribute('onclick')) return true;
    const role = (el.getAttribute('role') || '').trim().split(/\s+/)[0];
    if (ROLES.has(role)) return true;
    const editable = el.getAttribute('contenteditable');
    if (editable !== null && editable.toLowerCase() !== 'false') return true;
    if (el.hasAttribute('tabindex') && parseInt(el.getAttribute('tabindex'), 10) >= 0) return true;
    if (el.tagName === 'LABEL' && el.control && !shows(el.control)) return true;
    return false;
  };

  // All elements, through open shadow roots and same-origin frames.
  const all = [];
  const collect = (root) => {
    for (const el of root.querySelectorAll('*')) {
      all.push(el);
      if (el.shadowRoot) collect(el.shadowRoot);
      if (el.tagName === 'IFRAME') {
        let inner = null;
        try { inner = el.contentDocument; } catch (e) { inner = null; }
        if (inner) collect(inner);
      }
    }
  };
  collect(document);

  const modals = all.filter((d) => d.matches(
    'dialog[open], [role=dialog], [role=alertdialog], [aria-modal=true]') && shows(d));
  const modal = modals.length ? modals[modals.length - 1] : null;
  const inside = (el) => {
    if (!modal) return true;
    for (let n = el; n; n = up(n)) if (n === modal) return true;
    return false;
  };
  const expected = all.filter((el) => interactive(el) && shows(el) && inside(el));

  const describe = (el) => {
    const cls = typeof el.className === 'string' && el.className.trim()
      ? '.' + el.className.trim().split(/\s+/).join('.') : '';
    const id = el.id ? '#' + el.id : '';
    const text = (el.innerText || el.textContent || el.getAttribute('aria-label') || '')
      .replace(/\s+/g, ' ').trim().slice(0, 40);
    let parent = el.parentElement;
    const path = [];
    for (let i = 0; parent && i < 3; i++, parent = parent.parentElement) {
      path.unshift(parent.tagName.toLowerCase() + (parent.id ? '#' + parent.id : ''));
    }
    return `${path.join(' > ')} > ${el.tagName.toLowerCase()}${id}${cls} "${text}"`;
  };

  const counts = [];
  const listed = new Map();
  const duplicates = [];
  selectors.forEach((sel, i) => {
    const parts = sel.split('>>>').map((p) => p.trim());
    let root = document, found = [];
    for (let j = 0; j < parts.length; j++) {
      try { found = Array.from(root.querySelectorAll(parts[j])); } catch (e) { found = []; break; }
      if (found.length !== 1) break;
      if (j + 1 < parts.length) {
        const host = found[0];
        root = host.tagName === 'IFRAME' ? host.contentDocument : host.shadowRoot;
        if (!root) { found = []; break; }
      }
    }
    counts.push(found.length);
    if (found.length === 1) {
      if (listed.has(found[0])) duplicates.push(`${selectors[listed.get(found[0])]} and ${sel}`);
      else listed.set(found[0], i);
    }
  });
  const wanted = new Set(expected);
  return {
    counts,
    expected: expected.length,
    duplicates,
    missing: expected.filter((el) => !listed.has(el)).map(describe),
    unwanted: Array.from(listed.entries()).filter(([el]) => !wanted.has(el))
      .map(([el, i]) => `${selectors[i]}: ${describe(el)}`),
  };
})"#;

/// Counts the changes to the DOM from its first evaluation on.
const WATCH_JS: &str = "(() => {
    if (!window.__auditWatch) {
        window.__auditWatch = { changes: 0 };
        new MutationObserver((records) => { window.__auditWatch.changes += records.length; })
            .observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    }
    return window.__auditWatch.changes;
})()";

#[derive(Debug, Deserialize)]
struct Audit {
    counts: Vec<usize>,
    expected: usize,
    duplicates: Vec<String>,
    missing: Vec<String>,
    unwanted: Vec<String>,
}

/// The installed Rust documentation; fails, with how to install it, when it is missing.
fn rust_docs() -> PathBuf {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .unwrap_or_else(|error| panic!("{} --print sysroot: {error}", rustc.display()));
    assert!(
        output.status.success(),
        "{} --print sysroot failed: {}",
        rustc.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let sysroot = String::from_utf8(output.stdout).expect("a UTF-8 sysroot");
    let docs = PathBuf::from(sysroot.trim()).join("share/doc/rust/html");
    assert!(
        docs.join("std/index.html").is_file() && docs.join("book/index.html").is_file(),
        "the Rust documentation is not installed in {}: run `rustup component add rust-docs`",
        docs.display()
    );
    docs
}

/// Runs `test` with a fresh browser on the documentation served on loopback (its base URL
/// given), and closes the browser whatever happens.
async fn with_docs<F>(test: F)
where
    F: AsyncFnOnce(&ChromiumBrowser, &str),
{
    let base = support::serve(rust_docs()).await;
    let browser = support::launch().await;
    let outcome = {
        let run = std::panic::AssertUnwindSafe(test(&browser, &base));
        futures::FutureExt::catch_unwind(run).await
    };
    browser.close().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Waits until `probe` (a JavaScript expression) gives the same positive number for a second,
/// for pages that change in steps too far apart for `wait_for_settle`.
async fn settle_on(browser: &ChromiumBrowser, probe: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut last = (Value::Null, std::time::Instant::now());
    loop {
        let now = browser.evaluate(probe).await.unwrap();
        if now != last.0 {
            last = (now, std::time::Instant::now());
        } else if last.0.as_i64().is_some_and(|n| n > 0)
            && last.1.elapsed() >= Duration::from_secs(1)
        {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{probe} did not settle: {}",
            last.0
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The selectors of the `[CLICK: "…"]` and `[TYPE: "…"]` markers in the text, in order.
fn printed_selectors(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let rest = line
                .strip_prefix("[CLICK: \"")
                .or_else(|| line.strip_prefix("[TYPE: \""))?;
            let end = rest.find("\"] ")?;
            Some(rest[..end].to_owned())
        })
        .collect()
}

/// Observes the page whole and checks it against the independent count; returns the
/// observation. `what` names the page in messages and in the measurements printed.
async fn observe_and_audit(browser: &ChromiumBrowser, what: &str) -> Observation {
    // The count must see the page the observation saw: when the page changed in between (an
    // index still loading, results coming in), look again.
    let mut tries = 0;
    let (seen, took, audit) = loop {
        let before = browser.evaluate(WATCH_JS).await.unwrap();
        let started = std::time::Instant::now();
        let seen = observe(browser, None, WHOLE_PAGE).await.unwrap();
        let took = started.elapsed();
        let printed = printed_selectors(&seen.text);
        let script = format!("{AUDIT_JS}({})", serde_json::to_string(&printed).unwrap());
        let audit: Audit =
            serde_json::from_value(browser.evaluate(&script).await.unwrap()).unwrap();
        let after = browser.evaluate(WATCH_JS).await.unwrap();
        if before == after {
            break (seen, took, audit);
        }
        tries += 1;
        assert!(tries < 20, "{what}: the page never held still");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(!seen.truncated, "{what}: the observation was cut");
    let printed = printed_selectors(&seen.text);
    let listed: Vec<String> = seen.elements.iter().map(|e| e.selector.clone()).collect();
    assert_eq!(
        printed, listed,
        "{what}: the text does not print every element listed"
    );
    for element in &seen.elements {
        assert!(
            seen.text.contains(&element.render()),
            "{what}: {} is not printed",
            element.render()
        );
    }
    let chars = seen.text.chars().count();
    // The observer's estimate counts 4 characters a token.
    eprintln!(
        "{what}: {} elements listed ({} expected), {} chars ≈ {} tokens, observed in {took:.2?}",
        seen.elements.len(),
        audit.expected,
        chars,
        chars.div_ceil(4),
    );
    let not_unique: Vec<String> = printed
        .iter()
        .zip(&audit.counts)
        .filter(|(_, n)| **n != 1)
        .map(|(selector, n)| format!("{selector} matches {n}"))
        .collect();
    assert!(
        not_unique.is_empty(),
        "{what}: selectors not matching exactly one element:\n{}",
        not_unique.join("\n")
    );
    assert!(
        audit.duplicates.is_empty(),
        "{what}: elements listed twice:\n{}",
        audit.duplicates.join("\n")
    );
    assert!(
        audit.missing.is_empty(),
        "{what}: {} interactive elements shown and not listed:\n{}",
        audit.missing.len(),
        audit.missing.join("\n")
    );
    assert!(
        audit.unwanted.is_empty(),
        "{what}: {} elements listed that do not show or are not interactive:\n{}",
        audit.unwanted.len(),
        audit.unwanted.join("\n")
    );
    assert_eq!(seen.elements.len(), audit.expected, "{what}");
    seen
}

/// The element whose selector is `selector`, or a failure showing the text.
fn listed<'a>(seen: &'a Observation, selector: &str) -> &'a page_explorer::Element {
    seen.elements
        .iter()
        .find(|e| e.selector == selector)
        .unwrap_or_else(|| panic!("{selector} is not listed:\n{}", seen.text))
}

#[tokio::test]
async fn an_mdbook_chapter_with_its_contents_theme_menu_and_search_results() {
    with_docs(async |browser, base| {
        open(browser, &format!("{base}book/ch03-02-data-types.html")).await;
        let seen = observe_and_audit(browser, "book/ch03-02-data-types.html").await;
        // The viewport is narrow: the table of contents is folded away behind a label that
        // stands in for a hidden checkbox.
        let toggle = listed(&seen, "#mdbook-sidebar-toggle");
        assert_eq!(toggle.role, "checkbox");
        assert_eq!(toggle.state.checked, Some(false));
        browser.click(&toggle.selector).await.unwrap();
        browser.wait_for_settle(SETTLE).await.unwrap();
        let seen = observe_and_audit(browser, "book/ch03-02-data-types.html, contents").await;
        assert_eq!(
            listed(&seen, "#mdbook-sidebar-toggle").state.checked,
            Some(true)
        );
        assert!(seen.elements.len() > 100, "{}", seen.text);
        assert!(seen.text.contains("link \"Data Types\""), "{}", seen.text);
        let theme = listed(&seen, "#mdbook-theme-toggle");
        assert_eq!(theme.state.expanded, Some(false));
        assert!(
            !seen.elements.iter().any(|e| e.role == "menuitem"),
            "the closed theme menu shows:\n{}",
            seen.text
        );

        browser.click("#mdbook-theme-toggle").await.unwrap();
        browser.wait_for_settle(SETTLE).await.unwrap();
        let menu = observe_and_audit(browser, "book/ch03-02-data-types.html, theme menu").await;
        let themes = menu
            .elements
            .iter()
            .filter(|e| e.role == "menuitem")
            .count();
        assert!(themes >= 5, "{}", menu.text);

        browser.click("#mdbook-search-toggle").await.unwrap();
        browser.wait_for_settle(SETTLE).await.unwrap();
        browser
            .type_text("#mdbook-searchbar", "tuple")
            .await
            .unwrap();
        // mdBook searches on `keyup`, which inserting text does not send: send one.
        browser
            .evaluate(
                "document.getElementById('mdbook-searchbar')\
                 .dispatchEvent(new KeyboardEvent('keyup', { key: 'e', bubbles: true }))",
            )
            .await
            .unwrap();
        settle_on(
            browser,
            "document.querySelectorAll('#mdbook-searchresults a').length",
        )
        .await;
        let search = observe_and_audit(browser, "book/ch03-02-data-types.html, search").await;
        let bar = listed(&search, "#mdbook-searchbar");
        assert_eq!(bar.state.value.as_deref(), Some("tuple"));
        // The results are links, below the search field (the theme menu closed meanwhile).
        assert!(
            search.text.contains("search results for 'tuple'")
                && search.elements.len() >= seen.elements.len() + 20,
            "no search results listed:\n{}",
            search.text
        );
    })
    .await;
}

#[tokio::test]
async fn rust_by_example_with_its_code_editor() {
    with_docs(async |browser, base| {
        open(browser, &format!("{base}rust-by-example/hello/print.html")).await;
        let seen = observe_and_audit(browser, "rust-by-example/hello/print.html").await;
        // The example is an Ace editor, typed into through its text area.
        assert!(
            seen.elements
                .iter()
                .any(|e| e.kind == page_explorer::ElementKind::Type && e.role == "textbox"),
            "{}",
            seen.text
        );
    })
    .await;
}

#[tokio::test]
async fn the_whole_book_on_one_page() {
    with_docs(async |browser, base| {
        open(browser, &format!("{base}book/print.html")).await;
        let seen = observe_and_audit(browser, "book/print.html").await;
        assert!(seen.elements.len() > 1_000, "{}", seen.elements.len());
    })
    .await;
}

#[tokio::test]
async fn a_big_rustdoc_item_page_with_its_settings_and_search() {
    with_docs(async |browser, base| {
        open(browser, &format!("{base}std/option/enum.Option.html")).await;
        let seen = observe_and_audit(browser, "std/option/enum.Option.html").await;
        assert!(seen.elements.len() > 300, "{}", seen.text);

        // The search field shows once the search button is clicked.
        let button = listed(&seen, "#search-button > a");
        browser.click(&button.selector).await.unwrap();
        browser.wait_for_settle(SETTLE).await.unwrap();
        let searching =
            observe_and_audit(browser, "std/option/enum.Option.html, search field").await;
        let field = searching
            .elements
            .iter()
            .find(|e| e.kind == page_explorer::ElementKind::Type)
            .unwrap_or_else(|| panic!("no search field:\n{}", searching.text));
        browser.type_text(&field.selector, "unwrap").await.unwrap();
        // The results come in batches, from a search index loaded by script tags: wait until
        // they stop changing.
        settle_on(
            browser,
            "document.querySelector('.search-form.loading') ? -1 \
             : document.querySelectorAll('#search-tabs button, #results a').length",
        )
        .await;
        let results = observe_and_audit(browser, "std/option/enum.Option.html, search").await;
        assert!(
            results
                .elements
                .iter()
                .any(|e| e.role == "tab" || e.name.contains("unwrap")),
            "no search results:\n{}",
            results.text
        );

        // The settings, on the page opened afresh.
        open(browser, &format!("{base}std/option/enum.Option.html")).await;
        let settings = seen
            .elements
            .iter()
            .find(|e| e.name == "Settings")
            .unwrap_or_else(|| panic!("no settings:\n{}", seen.text));
        browser.click(&settings.selector).await.unwrap();
        browser.wait_for_settle(SETTLE).await.unwrap();
        let open_settings =
            observe_and_audit(browser, "std/option/enum.Option.html, settings").await;
        assert!(
            open_settings.elements.iter().any(|e| e.role == "checkbox"),
            "no settings listed:\n{}",
            open_settings.text
        );
    })
    .await;
}

#[tokio::test]
async fn the_std_crate_page_and_the_documentation_index() {
    with_docs(async |browser, base| {
        open(browser, &format!("{base}std/index.html")).await;
        let std = observe_and_audit(browser, "std/index.html").await;
        assert!(std.elements.len() > 100, "{}", std.text);
        open(browser, base).await;
        let index = observe_and_audit(browser, "index.html").await;
        assert!(index.elements.len() > 10, "{}", index.text);
    })
    .await;
}

/// The JSON the audit gets is the printed selectors, quoted as JavaScript strings.
#[test]
fn printed_selectors_are_read_from_the_markers() {
    let text = "Page: x\n\n[CLICK: \"#a\"] link \"A\"\nsome text\n[TYPE: \"form > input[name='q']\"] searchbox \"\"\n";
    assert_eq!(printed_selectors(text), ["#a", "form > input[name='q']"]);
    assert_eq!(
        serde_json::to_string(&printed_selectors(text)).unwrap(),
        Value::from(vec!["#a", "form > input[name='q']"]).to_string()
    );
}
