//! Where a job's parts are on a board, as CSS selectors: the listings
//! ([`ListingSelectors`]) and a job's details panel or page ([`DetailSelectors`], read as
//! [`DetailMode`] says), and reading the detail fields from the page shown. Phase 1 infers
//! them from the explorer's examples (the `listing` module); Phase 2 collects with them
//! (the `collect` module), which re-exports the public ones.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::browser::{Browser, BrowserError};

/// Where the parts of each listing are: CSS selectors, all but `item` relative to the item
/// (an empty selector means the item itself).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListingSelectors {
    /// Each listing.
    pub item: String,
    /// The job title.
    pub title: String,
    /// The link to the job (its detail page or where to apply).
    pub link: String,
    /// The company.
    pub company: Option<String>,
    /// The location.
    pub location: Option<String>,
    /// The salary, as written.
    pub salary: Option<String>,
    /// The date posted, as written.
    pub posted_date: Option<String>,
}

/// Fields read from a job's detail page, or from the details panel a listing fills when
/// clicked: CSS selectors over the whole document. A field found there replaces the one read
/// from the listing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DetailSelectors {
    /// What to click in a listing to show it in the panel, relative to the item; `None`
    /// clicks the first button or link-like element in it, else its title, else the item.
    pub select: Option<String>,
    /// The job title.
    pub title: Option<String>,
    /// The company.
    pub company: Option<String>,
    /// The location.
    pub location: Option<String>,
    /// The salary, as written.
    pub salary: Option<String>,
    /// The date posted, as written.
    pub posted_date: Option<String>,
    /// The apply link or button (its `href`, or the `action` of its form).
    pub apply: Option<String>,
}

/// Where a job's [`DetailSelectors`] fields are read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetailMode {
    /// From the panel for a listing without a link, else from its detail page.
    #[default]
    Auto,
    /// Open each job's link on the board's own site (after all listing pages are read) and
    /// read its detail page.
    Page,
    /// Click each listing on its own listing page and read the details panel it fills (a
    /// single-page board: "select the job, then extract the data"). The panel's apply link
    /// becomes the job's apply URL.
    Panel,
}

/// One listing (or its details) as read from the page.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct RawListing {
    pub(crate) title: String,
    pub(crate) link: String,
    pub(crate) company: String,
    pub(crate) location: String,
    pub(crate) salary: String,
    pub(crate) posted: String,
    /// The text of the listing, panel or page the fields were read from.
    #[serde(default)]
    pub(crate) body: String,
    /// The text of a panel or page without its headings, controls and the fields read:
    /// what describes the job.
    #[serde(default)]
    pub(crate) prose: String,
}

/// At most this many characters of a listing's, panel's or page's text are kept for the
/// Extractor.
pub(crate) const BODY_CHARS: usize = 6_000;

/// The JavaScript that reads text from an element, whitespace folded.
pub(crate) const TEXT_JS: &str =
    "const text = e => e ? (e.innerText || e.textContent || '').replace(/\\s+/g, ' ').trim() : '';";

/// Reads the [`DetailSelectors`] fields from the document shown now.
pub(crate) async fn read_fields(
    browser: &dyn Browser,
    selectors: &DetailSelectors,
) -> Result<RawListing, BrowserError> {
    let js = format!(
        "(() => {{
            {TEXT_JS}
            const find = sel => {{
                if (sel === null) return null;
                try {{ return document.querySelector(sel); }} catch (e) {{ return null; }}
            }};
            const apply = (() => {{
                const e = find({apply});
                if (!e) return '';
                if (e.href) return e.href;
                const a = e.closest('a[href]') || e.querySelector('a[href]');
                if (a) return a.href;
                return e.form && e.form.action ? e.form.action : '';
            }})();
            // The details' text: the smallest element holding both the title and the apply
            // control (the panel), else the title's section, else the page.
            const box = (() => {{
                const t = find({title}), a = find({apply});
                if (t && a) {{
                    let e = t;
                    while (e && !e.contains(a)) e = e.parentElement;
                    if (e) return e;
                }}
                if (t) return t.closest('section, article, main, [role=dialog], [role=region]') || t.parentElement;
                return document.body;
            }})();
            // The details' prose: their text without headings, controls, navigation and
            // the fields read above.
            const prose = (() => {{
                const copy = box.cloneNode(true);
                const fields = [{title}, {company}, {location}, {salary}, {posted}, {apply}]
                    .filter(s => s !== null);
                for (const sel of ['h1, h2, h3, h4, button, a, nav, form, select, input, label, script, style, noscript', ...fields]) {{
                    try {{ copy.querySelectorAll(sel).forEach(e => e.remove()); }} catch (e) {{}}
                }}
                return text(copy).slice(0, {BODY_CHARS});
            }})();
            return {{ title: text(find({title})), company: text(find({company})),
                      location: text(find({location})), salary: text(find({salary})),
                      posted: text(find({posted})), link: apply,
                      body: text(box).slice(0, {BODY_CHARS}), prose }};
        }})()",
        apply = Value::from(selectors.apply.clone()),
        title = Value::from(selectors.title.clone()),
        company = Value::from(selectors.company.clone()),
        location = Value::from(selectors.location.clone()),
        salary = Value::from(selectors.salary.clone()),
        posted = Value::from(selectors.posted_date.clone()),
    );
    serde_json::from_value(browser.evaluate(&js).await?)
        .map_err(|error| BrowserError::Protocol(format!("reading the details: {error}")))
}
