//! The exploration memory store (spec 002, "Memory Store"): pages keyed by the semantic id
//! the Classifier gives them (so one SPA page seen at many URLs is one node), the edges
//! between them with the action and selector that led there, the navigation path, pattern
//! observations that become confirmed on a second sighting, the selectors discovered for
//! each element type, behaviors, filter options and the Explorer's findings.
//!
//! Everything here is pure data: the orchestrator feeds it what the browser and the agents
//! reported, and reads back [`MemoryStore::summary_for_model`],
//! [`MemoryStore::phase1_output`] and [`MemoryStore::to_mermaid`].
//!
//! ```
//! use page_explorer::memory::{Classification, MemoryStore, NavAction, Transition};
//! let mut memory = MemoryStore::new();
//! let home = Classification::new("homepage", true, "Landing page with a Jobs link.");
//! memory.apply_classification(&home, "https://x.test/", Some("Home"), None);
//! let jobs = Classification::new("job_search", true, "Job list with filters.");
//! let via = Transition::new(NavAction::Click, Some("a#jobs"), "clicked Jobs nav");
//! memory.apply_classification(&jobs, "https://x.test/jobs", None, Some(&via));
//! assert_eq!(memory.page_ids(), ["homepage", "job_search"]);
//! assert!(memory.summary_for_model().contains("→ leads to: [job_search] via \"clicked Jobs nav\""));
//! ```

mod records;
mod render;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::collect::ListingSelectors;
use crate::phase1::{BehaviorSummary, KeyElements, PageSummary, Phase1Output, canonical_purpose};

pub use records::{
    ChangeObservation, Classification, Edge, NavAction, PageChange, PageNode, PathStep, Pattern,
    PatternStatus, Transition,
};
pub use render::{DEFAULT_SUMMARY_CHARS, escape_mermaid};

/// Element types that say nothing about the element.
const VAGUE_TYPES: [&str; 5] = ["unknown", "unknown_element", "none", "other", "element"];

/// The memory store for one exploration.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MemoryStore {
    pages: Vec<PageNode>,
    edges: Vec<Edge>,
    path: Vec<PathStep>,
    current: Option<usize>,
    patterns: BTreeMap<String, Pattern>,
    selectors: BTreeMap<String, Vec<String>>,
    behaviors: BTreeMap<String, Vec<(String, String, u32)>>,
    filter_options: BTreeMap<String, Vec<String>>,
    key_findings: Vec<String>,
    understanding: Option<String>,
    final_page_type: Option<String>,
}

/// Normalizes a description into a key: lowercase alphanumeric words joined by one space.
pub fn normalize_description(description: &str) -> String {
    description
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies the Classifier's verdict on the page now shown at `url`, reached by `via`
    /// (`None` for the starting page). A known page id is entered again (or, when it is the
    /// current page, kept with the URL added); a new id becomes a node with an edge from the
    /// current page. A classification that calls a new id "not a new page" while a page is
    /// current is taken as the current page showing other data.
    pub fn apply_classification(
        &mut self,
        classification: &Classification,
        url: &str,
        title: Option<&str>,
        via: Option<&Transition>,
    ) -> PageChange {
        self.apply_classification_at(classification, url, title, via, Utc::now())
    }

    /// [`apply_classification`](Self::apply_classification) at a given time.
    pub fn apply_classification_at(
        &mut self,
        classification: &Classification,
        url: &str,
        title: Option<&str>,
        via: Option<&Transition>,
        at: DateTime<Utc>,
    ) -> PageChange {
        let id = page_key(&classification.page_id);
        let known = self.pages.iter().position(|p| p.id == id);
        let (index, change) = match (known, self.current) {
            (Some(index), Some(current)) if index == current => (index, PageChange::SamePage),
            (Some(index), _) => (index, PageChange::Revisit),
            (None, Some(current)) if !classification.is_new_page => (current, PageChange::SamePage),
            (None, _) => {
                self.pages.push(PageNode {
                    id: id.clone(),
                    understanding: classification.understanding.trim().to_owned(),
                    summary: None,
                    observations: Vec::new(),
                    urls: Vec::new(),
                    title: None,
                    visits: 0,
                    first_seen: at,
                    last_seen: at,
                });
                (self.pages.len() - 1, PageChange::NewPage)
            }
        };
        let previous = self.current.map(|i| self.pages[i].id.clone());
        let page = &mut self.pages[index];
        if !page.urls.iter().any(|u| u == url) {
            page.urls.push(url.to_owned());
        }
        if let Some(t) = title.filter(|t| !t.trim().is_empty()) {
            page.title = Some(t.trim().to_owned());
        }
        page.last_seen = at;
        if change == PageChange::SamePage {
            return change;
        }
        page.visits = page.visits.saturating_add(1);
        let to = page.id.clone();
        self.current = Some(index);
        if let (Some(from), Some(via)) = (previous, via) {
            self.add_edge(&from, &to, via, classification.via_action.as_deref());
        }
        self.path.push(PathStep {
            page: to,
            url: url.to_owned(),
            action: via.map(|v| v.action),
        });
        change
    }

    fn add_edge(&mut self, from: &str, to: &str, via: &Transition, described: Option<&str>) {
        let existing = self.edges.iter_mut().find(|e| {
            e.from == from && e.to == to && e.action == via.action && e.selector == via.selector
        });
        match existing {
            Some(edge) => edge.count = edge.count.saturating_add(1),
            None => self.edges.push(Edge {
                from: from.to_owned(),
                to: to.to_owned(),
                action: via.action,
                description: described
                    .map(str::trim)
                    .filter(|d| !d.is_empty())
                    .unwrap_or(&via.description)
                    .to_owned(),
                selector: via.selector.clone(),
                count: 1,
            }),
        }
    }

    /// Records what the ChangeAnalyzer made of an action (spec `addPatternObservation`):
    /// the behavior of the element type, a pattern sighting, the selector as one for that
    /// element type (unless the type is vague, like `unknown`), and an observation on the
    /// current page. Returns the behavior's status.
    pub fn add_pattern_observation(&mut self, change: &ChangeObservation) -> PatternStatus {
        let element = canonical_purpose(&change.element_type);
        let vague = element.is_empty() || VAGUE_TYPES.contains(&element.as_str());
        if let (false, Some(selector)) = (vague, change.selector.as_deref()) {
            self.add_selector(&element, selector);
        }
        let action = change.action.as_str();
        let effect = change.effect.trim();
        let list = self.behaviors.entry(element.clone()).or_default();
        let key = normalize_description(effect);
        match list
            .iter_mut()
            .find(|(a, e, _)| a == action && normalize_description(e) == key)
        {
            Some(entry) => entry.2 = entry.2.saturating_add(1),
            None => list.push((action.to_owned(), effect.to_owned(), 1)),
        }
        self.enrich_current_page(&format!(
            "{action} {}{} → {effect} ({})",
            element,
            change
                .selector
                .as_deref()
                .map(|s| format!(" {s}"))
                .unwrap_or_default(),
            change.change_type
        ));
        self.observe_pattern(
            "behavior",
            &format!("{action} {element}: {effect}"),
            change.selector.as_deref(),
        )
    }

    /// Adds a pattern sighting keyed by kind and normalized description; returns its status.
    pub fn observe_pattern(
        &mut self,
        kind: &str,
        description: &str,
        selector: Option<&str>,
    ) -> PatternStatus {
        let key = format!("{}:{}", kind, normalize_description(description));
        let entry = self.patterns.entry(key).or_insert_with(|| Pattern {
            kind: kind.to_owned(),
            description: description.trim().to_owned(),
            selector: None,
            sightings: 0,
        });
        entry.sightings = entry.sightings.saturating_add(1);
        if entry.selector.is_none() {
            entry.selector = selector.map(str::to_owned);
        }
        entry.status()
    }

    /// Records a selector discovered for `purpose` (folded by
    /// [`canonical_purpose`](crate::phase1::canonical_purpose)); duplicates are ignored.
    pub fn add_selector(&mut self, purpose: &str, selector: &str) {
        let selector = selector.trim();
        if selector.is_empty() {
            return;
        }
        let list = self
            .selectors
            .entry(canonical_purpose(purpose))
            .or_default();
        if !list.iter().any(|s| s == selector) {
            list.push(selector.to_owned());
        }
    }

    /// Records options for a filter; duplicates are ignored.
    pub fn add_filter_options<I, S>(&mut self, filter: &str, options: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let list = self.filter_options.entry(filter.to_owned()).or_default();
        for option in options {
            let option = option.into();
            if !list.contains(&option) {
                list.push(option);
            }
        }
    }

    /// Adds an observation (a warning, a note) to the current page, if there is one.
    pub fn enrich_current_page(&mut self, observation: &str) {
        if let Some(page) = self.current.and_then(|i| self.pages.get_mut(i)) {
            page.observations.push(observation.trim().to_owned());
        }
    }

    /// Stores the Summarizer's summary of `page_id` and drops the observations it
    /// condensed. Returns false when the page is unknown.
    pub fn set_summary(&mut self, page_id: &str, summary: &str) -> bool {
        let id = page_key(page_id);
        match self.pages.iter_mut().find(|p| p.id == id) {
            Some(page) => {
                page.summary = Some(summary.trim().to_owned());
                page.observations.clear();
                true
            }
            None => false,
        }
    }

    /// Records the Explorer's `done`: its understanding, the page type, key findings and key
    /// elements (merged with the selectors discovered along the way).
    pub fn finish(
        &mut self,
        understanding: &str,
        page_type: &str,
        key_findings: &[String],
        key_elements: &BTreeMap<String, Vec<String>>,
    ) {
        if !understanding.trim().is_empty() {
            self.understanding = Some(understanding.trim().to_owned());
        }
        if !page_type.trim().is_empty() {
            self.final_page_type = Some(page_key(page_type));
        }
        for finding in key_findings {
            let finding = finding.trim();
            if !finding.is_empty() && !self.key_findings.iter().any(|f| f == finding) {
                self.key_findings.push(finding.to_owned());
            }
        }
        for (purpose, selectors) in key_elements {
            for selector in selectors {
                self.add_selector(purpose, selector);
            }
        }
    }

    /// The current page's id.
    pub fn current_page_id(&self) -> Option<&str> {
        self.current.map(|i| self.pages[i].id.as_str())
    }

    /// The current page.
    pub fn current_page(&self) -> Option<&PageNode> {
        self.current.and_then(|i| self.pages.get(i))
    }

    /// All page ids, in order of first visit (for the Classifier).
    pub fn page_ids(&self) -> Vec<&str> {
        self.pages.iter().map(|p| p.id.as_str()).collect()
    }

    /// The page with this id.
    pub fn page(&self, page_id: &str) -> Option<&PageNode> {
        let id = page_key(page_id);
        self.pages.iter().find(|p| p.id == id)
    }

    /// All pages, in order of first visit.
    pub fn pages(&self) -> &[PageNode] {
        &self.pages
    }

    /// All edges, in order of first traversal.
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// The navigation path.
    pub fn path(&self) -> &[PathStep] {
        &self.path
    }

    /// All patterns, ordered by key.
    pub fn patterns(&self) -> impl Iterator<Item = &Pattern> {
        self.patterns.values()
    }

    /// Selectors discovered for `purpose`.
    pub fn selectors_for(&self, purpose: &str) -> &[String] {
        self.selectors
            .get(&canonical_purpose(purpose))
            .map_or(&[], Vec::as_slice)
    }

    /// All discovered selectors by purpose.
    pub fn selectors(&self) -> &BTreeMap<String, Vec<String>> {
        &self.selectors
    }

    /// Whether acting on `element_type` (folded by
    /// [`canonical_purpose`](crate::phase1::canonical_purpose)) was seen to do something
    /// during the run.
    pub fn behavior_observed(&self, element_type: &str) -> bool {
        self.behaviors
            .get(&canonical_purpose(element_type))
            .is_some_and(|seen| !seen.is_empty())
    }

    /// The Explorer's key findings.
    pub fn key_findings(&self) -> &[String] {
        &self.key_findings
    }

    /// The Phase 1 output: the page type (the Explorer's, else the current page's), key
    /// elements from the selectors discovered, one behavior per element type (the most
    /// sighted), filter options, the understanding (the Explorer's, else the summaries)
    /// and every page.
    pub fn phase1_output(
        &self,
        start_url: &str,
        listing: Option<ListingSelectors>,
    ) -> Phase1Output {
        let page_type = self
            .final_page_type
            .clone()
            .or_else(|| self.current_page_id().map(str::to_owned))
            .unwrap_or_else(|| "unknown".to_owned());
        let mut key_elements = KeyElements::default();
        for (purpose, selectors) in &self.selectors {
            for selector in selectors {
                key_elements.set(purpose, selector);
            }
        }
        let behaviors = self
            .behaviors
            .iter()
            .filter_map(|(element, seen)| {
                let (action, effect, count) = seen.iter().max_by_key(|(_, _, n)| *n)?;
                Some((
                    element.clone(),
                    BehaviorSummary {
                        action: action.clone(),
                        effect: effect.clone(),
                        confirmed: *count >= 2,
                    },
                ))
            })
            .collect();
        let pages = self
            .pages
            .iter()
            .map(|p| PageSummary {
                id: p.id.clone(),
                urls: p.urls.clone(),
                understanding: p.best_understanding().to_owned(),
                visits: p.visits,
            })
            .collect();
        let understanding = self.understanding.clone().unwrap_or_else(|| {
            self.pages
                .iter()
                .map(|p| format!("[{}] {}", p.id, p.best_understanding()))
                .collect::<Vec<_>>()
                .join(" ")
        });
        Phase1Output {
            start_url: start_url.to_owned(),
            page_type,
            key_elements,
            behaviors,
            filter_options: self.filter_options.clone(),
            understanding,
            key_findings: self.key_findings.clone(),
            pages,
            listing,
            ..Phase1Output::default()
        }
    }
}

/// A page id in one spelling: lowercase words joined by `_` (`"Job Search"` → `job_search`).
pub fn page_key(page_id: &str) -> String {
    let key = page_id
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join("_");
    if key.is_empty() {
        "page".to_owned()
    } else {
        key
    }
}
