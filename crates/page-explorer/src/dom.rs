//! What the model sees of a page: [`observe`] serializes the visible interactive elements and
//! text (through `observe.js`, run in the page) and renders them within a token budget.
//!
//! An element is interactive when it is a link (`a[href]`, `area[href]`), a button, an input
//! (not `type=hidden`), a select, a text area or a `summary`; or has an `onclick` attribute, a
//! widget role (`button`, `link`, `checkbox`, `radio`, `switch`, `tab`, `menuitem`,
//! `menuitemcheckbox`, `menuitemradio`, `option`, `combobox`, `textbox`, `searchbox`, `slider`,
//! `spinbutton`, `treeitem`), is editable (`contenteditable`) or focusable (`tabindex` ≥ 0);
//! or is a `label` standing in for a control that does not show itself (listed with the
//! control's role and state). It is visible when neither it nor an ancestor is `hidden`,
//! `aria-hidden=true` or not laid out (`display: none`, the closed part of a `<details>`), its
//! own `visibility` is `visible`, it has a non-zero size and no zero-size ancestor clips it;
//! when a modal is open, only what is inside it counts. Elements below or beside the viewport
//! are visible too: the whole page is listed, the budget decides what is printed.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::browser::{Browser, BrowserError};

/// The script run in the page to serialize it.
const OBSERVE_JS: &str = include_str!("observe.js");

/// The default budget of one observation, in tokens.
pub const DEFAULT_BUDGET_TOKENS: usize = 8_000;

/// Characters per token, for budgeting.
pub const CHARS_PER_TOKEN: usize = 4;

/// Room kept for the closing summary line.
const SUMMARY_RESERVE: usize = 200;

/// How an element is acted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElementKind {
    /// Clicked: links, buttons, checkboxes, anything clickable.
    Click,
    /// Typed into: text inputs, text areas, editable regions.
    Type,
}

/// The state of an element, where it has one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElementState {
    /// Disabled (`disabled` or `aria-disabled=true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// Checked (checkboxes and radios).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<bool>,
    /// `aria-expanded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expanded: Option<bool>,
    /// Selected (`aria-selected`, options).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected: Option<bool>,
    /// The value of an input, text area or select (passwords masked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// One visible interactive element.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Element {
    /// A CSS selector matching exactly this element; `A >>> B` reaches into the iframe or
    /// shadow root of `A`.
    pub selector: String,
    /// Its ARIA role (explicit or implied; `clickable` for generic clickable elements).
    pub role: String,
    /// Its accessible name.
    pub name: String,
    /// Its visible text (shortened).
    pub text: String,
    /// Clicked or typed into.
    pub kind: ElementKind,
    /// Its state.
    pub state: ElementState,
    /// Whether it shows in the viewport now.
    pub in_viewport: bool,
    /// Whether it is below the viewport.
    pub below: bool,
}

impl Element {
    /// The line the model sees for this element.
    pub fn render(&self) -> String {
        let verb = match self.kind {
            ElementKind::Click => "CLICK",
            ElementKind::Type => "TYPE",
        };
        let mut line = format!(
            "[{verb}: \"{}\"] {} \"{}\"",
            self.selector, self.role, self.name
        );
        let mut flags = Vec::new();
        let state = &self.state;
        for (flag, on) in [
            ("disabled", state.disabled),
            ("checked", state.checked),
            ("expanded", state.expanded),
            ("selected", state.selected),
        ] {
            match on {
                Some(true) => flags.push(flag.to_owned()),
                Some(false) if flag != "disabled" => flags.push(format!("not {flag}")),
                _ => {}
            }
        }
        if let Some(value) = &state.value {
            flags.push(format!("value={value:?}"));
        }
        if !flags.is_empty() {
            let _ = write!(line, " ({})", flags.join(", "));
        }
        line
    }
}

/// What changed since the previous observation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changes {
    /// The URL changed.
    pub url_changed: bool,
    /// The title changed.
    pub title_changed: bool,
    /// Elements present now and not before (by selector and name).
    pub added: Vec<Element>,
    /// Elements present before and not now.
    pub removed: Vec<Element>,
}

impl Changes {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        !self.url_changed && !self.title_changed && self.added.is_empty() && self.removed.is_empty()
    }

    pub(crate) fn between(
        previous: &Observation,
        url: &str,
        title: &str,
        elements: &[Element],
    ) -> Self {
        let key = |e: &Element| (e.selector.clone(), e.name.clone());
        let before: HashSet<_> = previous.elements.iter().map(key).collect();
        let now: HashSet<_> = elements.iter().map(key).collect();
        Changes {
            url_changed: previous.url != url,
            title_changed: previous.title != title,
            added: elements
                .iter()
                .filter(|e| !before.contains(&key(e)))
                .cloned()
                .collect(),
            removed: previous
                .elements
                .iter()
                .filter(|e| !now.contains(&key(e)))
                .cloned()
                .collect(),
        }
    }
}

/// A page as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    /// The page's URL.
    pub url: String,
    /// The page's title.
    pub title: String,
    /// Every visible interactive element (inside the open modal only, when one is open),
    /// in document order, including those left out of `text`.
    pub elements: Vec<Element>,
    /// Whether an open modal dialog limited what is observed.
    pub modal: bool,
    /// The rendering the model reads.
    pub text: String,
    /// Whether `text` left something out to keep within the budget.
    pub truncated: bool,
    /// What changed since the previous observation, when one was given.
    pub changes: Option<Changes>,
}

/// The page as the script returns it.
#[derive(Debug, Deserialize)]
struct Raw {
    url: String,
    title: String,
    modal: bool,
    elements: Vec<Element>,
    items: Vec<RawItem>,
}

#[derive(Debug, Deserialize)]
struct RawItem {
    text: Option<String>,
    element: Option<usize>,
    below: bool,
}

/// Observes the page: its visible interactive elements and text, rendered for a model within
/// `budget_tokens` (about four characters a token), with what changed since `previous`.
pub async fn observe(
    browser: &dyn Browser,
    previous: Option<&Observation>,
    budget_tokens: usize,
) -> Result<Observation, BrowserError> {
    let value = browser.evaluate(OBSERVE_JS).await?;
    let raw: Raw = serde_json::from_value(value)
        .map_err(|error| BrowserError::Protocol(format!("the page serialization: {error}")))?;
    let changes = previous.map(|p| Changes::between(p, &raw.url, &raw.title, &raw.elements));
    let (text, truncated) = render(&raw, changes.as_ref(), budget_tokens);
    tracing::debug!(
        url = %raw.url,
        elements = raw.elements.len(),
        chars = text.len(),
        truncated,
        "observed"
    );
    Ok(Observation {
        url: raw.url,
        title: raw.title,
        elements: raw.elements,
        modal: raw.modal,
        text,
        truncated,
        changes,
    })
}

/// Renders the page within the budget: the header, then the items in document order; the
/// items down to the bottom of the viewport come first, then those below it while the budget
/// lasts; the elements left out are summarized by role.
fn render(raw: &Raw, changes: Option<&Changes>, budget_tokens: usize) -> (String, bool) {
    let budget = budget_tokens.saturating_mul(CHARS_PER_TOKEN);
    let mut header = format!("Page: {}\nURL: {}\n", raw.title, raw.url);
    if raw.modal {
        header.push_str("A dialog is open: only its contents are shown.\n");
    }
    if let Some(changes) = changes {
        let mut said = Vec::new();
        if changes.url_changed {
            said.push("the URL".to_owned());
        }
        if changes.title_changed {
            said.push("the title".to_owned());
        }
        if !changes.added.is_empty() || !changes.removed.is_empty() {
            said.push(format!(
                "{} elements added, {} removed",
                changes.added.len(),
                changes.removed.len()
            ));
        }
        if said.is_empty() {
            header.push_str("Changed since the last look: nothing.\n");
        } else {
            let _ = writeln!(header, "Changed since the last look: {}.", said.join("; "));
        }
    }
    header.push('\n');

    let lines: Vec<String> = raw
        .items
        .iter()
        .map(
            |item| match (item.element.and_then(|i| raw.elements.get(i)), &item.text) {
                (Some(element), _) => element.render(),
                (None, Some(text)) => text.clone(),
                (None, None) => String::new(),
            },
        )
        .collect();
    let room = budget.saturating_sub(SUMMARY_RESERVE);
    let mut used = char_len(&header);
    let mut kept = vec![false; lines.len()];
    let mut full = false;
    // First what shows down to the bottom of the viewport, then what is below it.
    for pass_below in [false, true] {
        for (index, item) in raw.items.iter().enumerate() {
            if item.below != pass_below || lines[index].is_empty() || full {
                continue;
            }
            let cost = char_len(&lines[index]) + 1;
            if used + cost > room {
                full = true;
                continue;
            }
            used += cost;
            kept[index] = true;
        }
    }
    let mut text = header;
    for (index, line) in lines.iter().enumerate() {
        if kept[index] {
            text.push_str(line);
            text.push('\n');
        }
    }
    let mut left_out: BTreeMap<&str, usize> = BTreeMap::new();
    let mut left_out_total = 0;
    let mut text_left_out = false;
    for (index, item) in raw.items.iter().enumerate() {
        if kept[index] || lines[index].is_empty() {
            continue;
        }
        match item.element.and_then(|i| raw.elements.get(i)) {
            Some(element) => {
                *left_out.entry(element.role.as_str()).or_default() += 1;
                left_out_total += 1;
            }
            None => text_left_out = true,
        }
    }
    let truncated = left_out_total > 0 || text_left_out;
    if left_out_total > 0 {
        let counts: Vec<String> = left_out
            .iter()
            .map(|(role, n)| format!("{n} {}", plural(role, *n)))
            .collect();
        let _ = writeln!(
            text,
            "… and {left_out_total} more elements below: {}",
            counts.join(", ")
        );
    } else if text_left_out {
        text.push_str("… and more text below.\n");
    }
    // The summary itself must fit too.
    if char_len(&text) > budget {
        text = text.chars().take(budget.saturating_sub(1)).collect();
        text.push('…');
    }
    (text, truncated)
}

fn char_len(s: &str) -> usize {
    s.chars().count()
}

/// `link` → `links`, `checkbox` → `checkboxes`.
fn plural(role: &str, n: usize) -> String {
    if n == 1 {
        role.to_owned()
    } else if role.ends_with('x') || role.ends_with('s') {
        format!("{role}es")
    } else {
        format!("{role}s")
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn link(i: usize, below: bool) -> Element {
        Element {
            selector: format!("#l{i}"),
            role: "link".to_owned(),
            name: format!("Link number {i}"),
            text: String::new(),
            kind: ElementKind::Click,
            state: ElementState::default(),
            in_viewport: !below,
            below,
        }
    }

    #[test]
    fn the_rendering_keeps_to_the_budget_and_counts_what_it_left_out() {
        let elements: Vec<Element> = (0..500).map(|i| link(i, i >= 20)).collect();
        let items = (0..500)
            .map(|i| RawItem {
                text: None,
                element: Some(i),
                below: i >= 20,
            })
            .collect();
        let raw = Raw {
            url: "http://x/".to_owned(),
            title: "Many".to_owned(),
            modal: false,
            elements,
            items,
        };
        let (text, truncated) = render(&raw, None, 500);
        assert!(truncated);
        assert!(text.chars().count() <= 2000, "{}", text.len());
        assert!(text.contains("[CLICK: \"#l0\"] link \"Link number 0\""));
        assert!(text.contains("more elements below:"), "{text}");
        assert!(text.contains(" links"), "{text}");
    }

    #[test]
    fn states_are_rendered() {
        let mut element = link(1, false);
        element.kind = ElementKind::Type;
        element.role = "textbox".to_owned();
        element.state.value = Some("rust".to_owned());
        element.state.disabled = Some(false);
        assert_eq!(
            element.render(),
            "[TYPE: \"#l1\"] textbox \"Link number 1\" (value=\"rust\")"
        );
        assert_eq!(plural("checkbox", 2), "checkboxes");
    }
}
