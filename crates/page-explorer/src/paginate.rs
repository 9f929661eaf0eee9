//! Pagination as its own primitive: [`Paginator::detect`] recognizes how a listing goes on
//! (a next link or button, numbered page links, a load-more button or infinite scroll) and
//! [`Paginator::advance`] goes one page on, stopping when the listing set stops changing,
//! when no next control exists, when a page comes round again or after `max_pages`.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::browser::{Browser, BrowserError};

/// The attribute the paginator marks the control it found with, so it can click it.
const MARK: &str = "data-pe-paginate";

/// How the listing goes on to more items.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PaginationKind {
    /// A "next" link or button (`rel=next`, Next, ›, », an `aria-label` saying next).
    Next {
        /// The visible text or label of the control.
        label: String,
    },
    /// Numbered page links: the link to the page after the current one.
    Numbered {
        /// The number of the page the link goes to.
        page: u32,
    },
    /// A "Load more" / "Show more" button that appends items to the same page.
    LoadMore {
        /// The visible text of the button.
        label: String,
    },
    /// The document appends items when scrolled to its bottom.
    InfiniteScroll,
}

/// Why the paginator stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// No next control was found and scrolling grew nothing.
    NoNextControl,
    /// Going on left the set of listings as it was.
    Unchanged,
    /// Going on led to a page (URL and listings) already seen.
    Revisited,
    /// `max_pages` pages have been seen.
    MaxPages,
}

/// What [`Paginator::advance`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Advance {
    /// The listing moved on: a new page, or more items on the same page.
    Moved {
        /// How it moved on.
        kind: PaginationKind,
        /// The URL shown afterwards.
        url: String,
        /// Listings seen now that were not seen before the move.
        new_items: usize,
    },
    /// There is nothing more; the listing set did not change.
    Stopped(StopReason),
}

/// Walks a listing page by page. Remembers the URLs and listing fingerprints it has seen,
/// so it never loops.
#[derive(Debug, Clone)]
pub struct Paginator {
    item_selector: String,
    max_pages: usize,
    settle: Duration,
    patience: Duration,
    known_next: Option<String>,
    pages: usize,
    visited: HashSet<(String, String)>,
}

/// The JavaScript that finds the next control and marks it with [`MARK`]; returns the kind
/// as JSON or `null`.
const DETECT_JS: &str = r#"((KNOWN) => {
    const MARK = 'data-pe-paginate';
    document.querySelectorAll('[' + MARK + ']').forEach(e => e.removeAttribute(MARK));
    const visible = e => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
    const disabled = e => e.disabled || e.getAttribute('aria-disabled') === 'true'
        || /\bdisabled\b/i.test(e.className || '');
    const text = e => (e.innerText || e.textContent || '').replace(/\s+/g, ' ').trim();
    if (KNOWN) {
        let known = null;
        try { known = Array.from(document.querySelectorAll(KNOWN)).find(e => visible(e) && !disabled(e)); } catch (e) {}
        if (known) {
            const kind = /^((load|show|see|view) more|more )/i.test(text(known) || known.value || '') ? 'load_more' : 'next';
            known.setAttribute(MARK, '1');
            return kind === 'next' ? { kind, label: text(known) || 'next' } : { kind, label: text(known) || 'load more' };
        }
    }
    const controls = Array.from(document.querySelectorAll('a[href], button, [role=button], input[type=button], input[type=submit]'))
        .filter(e => visible(e) && !disabled(e));
    const mark = (e, kind) => { e.setAttribute(MARK, '1'); return kind; };
    const rel = controls.find(e => /\bnext\b/i.test(e.getAttribute('rel') || ''));
    if (rel) return mark(rel, { kind: 'next', label: text(rel) || rel.getAttribute('aria-label') || 'next' });
    const nextText = /^(next( page)?|next\s*[›»>→]|[›»>→]|more results|older( posts)?)$/i;
    const next = controls.find(e => nextText.test(text(e) || e.value || '')
        || /^next( page)?$/i.test(e.getAttribute('aria-label') || '')
        || /^next( page)?$/i.test(e.getAttribute('title') || ''));
    if (next) return mark(next, { kind: 'next', label: text(next) || next.getAttribute('aria-label') || 'next' });
    const moreText = /^((load|show|see|view) more|more (jobs|results|listings))\b/i;
    const more = controls.find(e => moreText.test(text(e) || e.value || '')
        || moreText.test(e.getAttribute('aria-label') || ''));
    if (more) return mark(more, { kind: 'load_more', label: text(more) || more.value || 'load more' });
    const current = Array.from(document.querySelectorAll('[aria-current=page], .active, .current, .selected'))
        .map(e => parseInt(text(e), 10)).find(n => Number.isFinite(n));
    if (current !== undefined) {
        const want = String(current + 1);
        const numbered = controls.find(e => text(e) === want);
        if (numbered) return mark(numbered, { kind: 'numbered', page: current + 1 });
    }
    return null;
})"#;

/// The JavaScript that reads the identity of every listing: its text and first link.
fn fingerprint_js(item_selector: &str) -> String {
    format!(
        "Array.from(document.querySelectorAll({sel})).map(e => {{
            const a = e.matches('a[href]') ? e : e.querySelector('a[href]');
            return (e.innerText || e.textContent || '').replace(/\\s+/g, ' ').trim() + ' <' + (a ? a.href : '') + '>';
        }})",
        sel = Value::from(item_selector)
    )
}

impl Paginator {
    /// A paginator for listings matched by the CSS selector `item_selector`, that sees at
    /// most `max_pages` pages (loads of more items count as pages; at least 1).
    pub fn new(item_selector: impl Into<String>, max_pages: usize) -> Self {
        Paginator {
            item_selector: item_selector.into(),
            max_pages: max_pages.max(1),
            settle: Duration::from_secs(5),
            patience: Duration::from_millis(1500),
            pages: 1,
            visited: HashSet::new(),
            known_next: None,
        }
    }

    /// How long to wait for the page to settle after each move (5 s by default).
    pub fn with_settle(mut self, settle: Duration) -> Self {
        self.settle = settle;
        self
    }

    /// How long to keep looking for new listings after the page settled (1.5 s by default).
    pub fn with_patience(mut self, patience: Duration) -> Self {
        self.patience = patience;
        self
    }

    /// Tries `selector` (Phase 1's pagination control) first, before detecting the next
    /// control again; when it matches no visible, enabled element, detection goes on as
    /// without it.
    pub fn with_known_next(mut self, selector: Option<String>) -> Self {
        self.known_next = selector.filter(|s| !s.trim().is_empty());
        self
    }

    /// Counts `pages` pages as seen already (at least 1): a collection resumed on a later
    /// page keeps its page limit.
    pub fn with_pages_seen(mut self, pages: usize) -> Self {
        self.pages = pages.max(1);
        self
    }

    /// How many pages have been seen (the first counts).
    pub fn pages(&self) -> usize {
        self.pages
    }

    /// The identities (text and link) of the listings shown now, in page order.
    pub async fn listings(&self, browser: &dyn Browser) -> Result<Vec<String>, BrowserError> {
        let value = browser
            .evaluate(&fingerprint_js(&self.item_selector))
            .await?;
        Ok(match value {
            Value::Array(items) => items
                .into_iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        })
    }

    /// Recognizes the next control on the page shown now, or infinite scroll (which it tests
    /// by turning the wheel to the bottom and watching the document grow, so the page may
    /// hold more items afterwards). `None` when the listing cannot go on.
    pub async fn detect(
        &self,
        browser: &dyn Browser,
    ) -> Result<Option<PaginationKind>, BrowserError> {
        let known = Value::from(self.known_next.clone()).to_string();
        let found = browser.evaluate(&format!("{DETECT_JS}({known})")).await?;
        if !found.is_null() {
            return serde_json::from_value(found)
                .map(Some)
                .map_err(|error| BrowserError::Protocol(format!("reading pagination: {error}")));
        }
        let before = self.growth(browser).await?;
        self.scroll_to_bottom(browser).await?;
        let after = self.grown(browser, before).await?;
        Ok((after != before).then_some(PaginationKind::InfiniteScroll))
    }

    /// Goes one page on and reports whether the set of listings changed.
    pub async fn advance(&mut self, browser: &dyn Browser) -> Result<Advance, BrowserError> {
        let before = self.listings(browser).await?;
        let url = browser.url().await?;
        self.visited.insert((url, before.join("\n")));
        if self.pages >= self.max_pages {
            return Ok(Advance::Stopped(StopReason::MaxPages));
        }
        let Some(kind) = self.detect(browser).await? else {
            tracing::debug!("no next control");
            return Ok(Advance::Stopped(StopReason::NoNextControl));
        };
        tracing::debug!(?kind, "going on");
        match kind {
            PaginationKind::Next { .. }
            | PaginationKind::Numbered { .. }
            | PaginationKind::LoadMore { .. } => {
                browser.click(&format!("[{MARK}]")).await?;
            }
            // `detect` already scrolled to the bottom.
            PaginationKind::InfiniteScroll => {}
        }
        let after = self.changed_listings(browser, &before).await?;
        let url = browser.url().await?;
        let seen: HashSet<&String> = before.iter().collect();
        let new_items = after.iter().filter(|item| !seen.contains(item)).count();
        if after == before {
            tracing::debug!(?kind, "the listings did not change");
            return Ok(Advance::Stopped(StopReason::Unchanged));
        }
        if !self.visited.insert((url.clone(), after.join("\n"))) {
            tracing::debug!(%url, "this page was seen before");
            return Ok(Advance::Stopped(StopReason::Revisited));
        }
        self.pages += 1;
        Ok(Advance::Moved {
            kind,
            url,
            new_items,
        })
    }

    /// Waits for the page to settle, then up to `patience` more for the listings to differ
    /// from `before`; returns the listings then.
    async fn changed_listings(
        &self,
        browser: &dyn Browser,
        before: &[String],
    ) -> Result<Vec<String>, BrowserError> {
        let deadline = Instant::now() + self.patience;
        loop {
            browser.wait_for_settle(self.settle).await?;
            // A navigation can leave no document to ask for a moment.
            let now = match self.listings(browser).await {
                Ok(now) => now,
                Err(error) if Instant::now() < deadline => {
                    tracing::trace!(%error, "reading the listings");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
                Err(error) => return Err(error),
            };
            if now != before || Instant::now() >= deadline {
                return Ok(now);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The document's height and number of listings.
    async fn growth(&self, browser: &dyn Browser) -> Result<(u64, u64), BrowserError> {
        let js = format!(
            "[document.documentElement.scrollHeight, document.querySelectorAll({}).length]",
            Value::from(self.item_selector.as_str())
        );
        let value = browser.evaluate(&js).await?;
        let at = |i: usize| value.get(i).and_then(Value::as_u64).unwrap_or(0);
        Ok((at(0), at(1)))
    }

    /// Waits until the document grew past `before`, or the page settled and `patience` passed.
    async fn grown(
        &self,
        browser: &dyn Browser,
        before: (u64, u64),
    ) -> Result<(u64, u64), BrowserError> {
        let deadline = Instant::now() + self.patience;
        loop {
            browser.wait_for_settle(self.settle).await?;
            let now = self.growth(browser).await?;
            if now != before || Instant::now() >= deadline {
                return Ok(now);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Turns the mouse wheel until the viewport reaches the bottom of the document (at most
    /// a few dozen turns).
    async fn scroll_to_bottom(&self, browser: &dyn Browser) -> Result<(), BrowserError> {
        const LEFT: &str = "Math.max(0, document.documentElement.scrollHeight - window.scrollY - window.innerHeight)";
        for _ in 0..40 {
            let left = browser.evaluate(LEFT).await?.as_f64().unwrap_or(0.0);
            if left <= 2.0 {
                break;
            }
            browser.scroll(0.0, left.min(2000.0)).await?;
            tokio::time::sleep(Duration::from_millis(80)).await;
        }
        Ok(())
    }
}
