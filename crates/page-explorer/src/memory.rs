//! The exploration memory store (spec 002, "Memory Store"): a page graph, the navigation path,
//! pattern observations that become confirmed after two sightings, discovered selectors by
//! purpose, and the key elements, behaviors and filter options found so far.
//!
//! Everything here is pure data: the orchestrator feeds it what the browser and the model
//! reported, and reads back [`MemoryStore::summary_for_model`], [`MemoryStore::phase1_output`]
//! and [`MemoryStore::to_mermaid`].

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Default character cap for [`MemoryStore::summary_for_model`].
pub const DEFAULT_SUMMARY_CHARS: usize = 4_000;

/// How the agent moved from one page to another.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum NavAction {
    /// Clicked an element.
    Click,
    /// Typed into an element.
    Type,
    /// Scrolled the page.
    Scroll,
    /// Navigated to a URL directly.
    Navigate,
}

impl NavAction {
    /// The lowercase name used in summaries and diagrams.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Click => "click",
            Self::Type => "type",
            Self::Scroll => "scroll",
            Self::Navigate => "navigate",
        }
    }
}

/// A page in the page graph, keyed by URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageNode {
    /// The page URL.
    pub url: String,
    /// The page type once classified (e.g. `job_search`).
    pub page_type: Option<String>,
    /// The page title, if known.
    pub title: Option<String>,
    /// Times the page was visited.
    pub visits: u32,
    /// When the page was first seen.
    pub first_seen: DateTime<Utc>,
    /// When the page was last seen.
    pub last_seen: DateTime<Utc>,
}

/// A transition between two pages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edge {
    /// URL of the source page.
    pub from: String,
    /// URL of the target page.
    pub to: String,
    /// The action taken.
    pub action: NavAction,
    /// The selector acted on, if any.
    pub selector: Option<String>,
    /// Times this transition was taken.
    pub count: u32,
}

/// One step of the navigation path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathStep {
    /// The URL reached.
    pub url: String,
    /// The action that led here (`None` for the starting page).
    pub action: Option<NavAction>,
}

/// Whether a pattern has been seen once or confirmed by a second sighting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PatternStatus {
    /// Seen once.
    Observed,
    /// Seen two or more times.
    Confirmed,
}

/// A pattern observation (e.g. "clicking a job card updates the detail panel").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pattern {
    /// Kind of pattern, e.g. `behavior`.
    pub kind: String,
    /// Description as first reported.
    pub description: String,
    /// Selector involved, if any.
    pub selector: Option<String>,
    /// Number of sightings.
    pub sightings: u32,
}

impl Pattern {
    /// `Confirmed` after two sightings, `Observed` before.
    pub fn status(&self) -> PatternStatus {
        if self.sightings >= 2 {
            PatternStatus::Confirmed
        } else {
            PatternStatus::Observed
        }
    }
}

/// A key element of the explored page, with its selector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KeyElement {
    /// What the element is for (e.g. `job_card`, `next_page`, `filter_button`).
    pub purpose: String,
    /// CSS selector for the element.
    pub selector: String,
}

/// A behavior observed on the page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Behavior {
    /// Element type acted on (e.g. `job_card`).
    pub element: String,
    /// Action taken (`click`, `type`, ...).
    pub action: String,
    /// Effect seen (e.g. "updates detail panel").
    pub effect: String,
    /// True when observed two or more times.
    pub confirmed: bool,
}

/// The Phase 1 to Phase 2 handoff contract (spec 002, "Phase 1 Output").
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Phase1Output {
    /// Page type, e.g. `job_search`.
    pub page_type: String,
    /// Key elements with their selectors.
    pub key_elements: Vec<KeyElement>,
    /// Behaviors observed.
    pub behaviors: Vec<Behavior>,
    /// Filter options by filter name (e.g. `experience` to `["Entry", "Senior"]`).
    pub filter_options: BTreeMap<String, Vec<String>>,
    /// Human-readable summary of the understanding.
    pub understanding: String,
}

/// The memory store for one exploration.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MemoryStore {
    pages: Vec<PageNode>,
    edges: Vec<Edge>,
    path: Vec<PathStep>,
    patterns: BTreeMap<String, Pattern>,
    selectors: BTreeMap<String, Vec<String>>,
    behaviors: BTreeMap<(String, String, String), (String, u32)>,
    filter_options: BTreeMap<String, Vec<String>>,
    notes: Vec<String>,
    understanding: Option<String>,
}

/// Normalizes a pattern description into its key: lowercase, alphanumeric words joined by one
/// space.
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

    /// Records arriving at `url` at time `at`, via `action` from the current page (if any).
    /// Updates the page node, the edge from the previous page, and the navigation path.
    pub fn visit(
        &mut self,
        url: &str,
        title: Option<&str>,
        action: Option<NavAction>,
        selector: Option<&str>,
        at: DateTime<Utc>,
    ) {
        let previous = self.current_url().map(str::to_owned);
        match self.pages.iter_mut().find(|p| p.url == url) {
            Some(page) => {
                page.visits = page.visits.saturating_add(1);
                page.last_seen = at;
                if let Some(t) = title {
                    page.title = Some(t.to_owned());
                }
            }
            None => self.pages.push(PageNode {
                url: url.to_owned(),
                page_type: None,
                title: title.map(str::to_owned),
                visits: 1,
                first_seen: at,
                last_seen: at,
            }),
        }
        if let (Some(from), Some(act)) = (previous, action) {
            let sel = selector.map(str::to_owned);
            match self
                .edges
                .iter_mut()
                .find(|e| e.from == from && e.to == url && e.action == act && e.selector == sel)
            {
                Some(edge) => edge.count = edge.count.saturating_add(1),
                None => self.edges.push(Edge {
                    from,
                    to: url.to_owned(),
                    action: act,
                    selector: sel,
                    count: 1,
                }),
            }
        }
        self.path.push(PathStep {
            url: url.to_owned(),
            action,
        });
    }

    /// Sets the page type of `url` (classifier result). Returns false when the page is unknown.
    pub fn classify(&mut self, url: &str, page_type: &str) -> bool {
        match self.pages.iter_mut().find(|p| p.url == url) {
            Some(page) => {
                page.page_type = Some(page_type.to_owned());
                true
            }
            None => false,
        }
    }

    /// Adds a pattern sighting keyed by the normalized description; returns its new status.
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

    /// Records a selector discovered for `purpose` (e.g. `job_card`); duplicates are ignored.
    pub fn add_selector(&mut self, purpose: &str, selector: &str) {
        let list = self.selectors.entry(purpose.to_owned()).or_default();
        if !list.iter().any(|s| s == selector) {
            list.push(selector.to_owned());
        }
    }

    /// Records a behavior sighting: acting on `element` with `action` caused `effect`.
    /// The behavior is confirmed after two sightings. Also feeds the pattern store.
    pub fn add_behavior(&mut self, element: &str, action: &str, effect: &str) -> PatternStatus {
        let key = (
            element.to_owned(),
            action.to_owned(),
            normalize_description(effect),
        );
        let entry = self
            .behaviors
            .entry(key)
            .or_insert_with(|| (effect.trim().to_owned(), 0));
        entry.1 = entry.1.saturating_add(1);
        self.observe_pattern("behavior", &format!("{action} {element}: {effect}"), None)
    }

    /// Records options for a filter; duplicates are ignored.
    pub fn add_filter_options<I, S>(&mut self, filter: &str, options: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let list = self.filter_options.entry(filter.to_owned()).or_default();
        for o in options {
            let o = o.into();
            if !list.contains(&o) {
                list.push(o);
            }
        }
    }

    /// Adds a free-form note (warning, observation) about the current page.
    pub fn add_note(&mut self, note: &str) {
        self.notes.push(note.to_owned());
    }

    /// Sets the human-readable understanding text used in the Phase 1 output.
    pub fn set_understanding(&mut self, text: &str) {
        self.understanding = Some(text.to_owned());
    }

    /// The URL of the current page (the last step of the path).
    pub fn current_url(&self) -> Option<&str> {
        self.path.last().map(|s| s.url.as_str())
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
        self.selectors.get(purpose).map_or(&[], Vec::as_slice)
    }

    /// All discovered selectors by purpose.
    pub fn selectors(&self) -> &BTreeMap<String, Vec<String>> {
        &self.selectors
    }

    fn label(&self, url: &str) -> String {
        match self
            .pages
            .iter()
            .find(|p| p.url == url)
            .and_then(|p| p.page_type.as_deref())
        {
            Some(t) => format!("{t} {url}"),
            None => url.to_owned(),
        }
    }

    /// The memory summary for the model, capped at [`DEFAULT_SUMMARY_CHARS`] characters.
    pub fn summary_for_model(&self) -> String {
        self.summary_for_model_capped(DEFAULT_SUMMARY_CHARS)
    }

    /// The memory summary for the model (spec 002, "Memory Summary Format"), cut to at most
    /// `max_chars` characters (whole lines are dropped from the end, marked with `...`).
    pub fn summary_for_model_capped(&self, max_chars: usize) -> String {
        let mut out = String::from("EXPLORED PAGES:\n");
        for page in &self.pages {
            let ty = page.page_type.as_deref().unwrap_or("unclassified");
            let _ = write!(out, "[{ty}] {} (visits: {})", page.url, page.visits);
            if let Some(t) = &page.title {
                let _ = write!(out, " \"{t}\"");
            }
            out.push('\n');
            for e in self.edges.iter().filter(|e| e.to == page.url) {
                let _ = writeln!(
                    out,
                    "  ← from: [{}] via {}{} (x{})",
                    self.label(&e.from),
                    e.action.as_str(),
                    e.selector
                        .as_deref()
                        .map(|s| format!(" {s}"))
                        .unwrap_or_default(),
                    e.count
                );
            }
            for e in self.edges.iter().filter(|e| e.from == page.url) {
                let _ = writeln!(
                    out,
                    "  → leads to: [{}] via {}{} (x{})",
                    self.label(&e.to),
                    e.action.as_str(),
                    e.selector
                        .as_deref()
                        .map(|s| format!(" {s}"))
                        .unwrap_or_default(),
                    e.count
                );
            }
        }
        let confirmed: Vec<&Pattern> = self
            .patterns
            .values()
            .filter(|p| p.status() == PatternStatus::Confirmed)
            .collect();
        if !confirmed.is_empty() {
            out.push_str("\nCONFIRMED PATTERNS:\n");
            for p in confirmed {
                let _ = write!(out, "- {}: {}", p.kind, p.description);
                if let Some(s) = &p.selector {
                    let _ = write!(out, " ({s})");
                }
                out.push('\n');
            }
        }
        if !self.selectors.is_empty() {
            out.push_str("\nKNOWN SELECTORS:\n");
            for (purpose, sels) in &self.selectors {
                let _ = writeln!(out, "- {purpose}: {}", sels.join(", "));
            }
        }
        if !self.notes.is_empty() {
            out.push_str("\nNOTES:\n");
            for n in &self.notes {
                let _ = writeln!(out, "- {n}");
            }
        }
        if let Some(cur) = self.current_url() {
            let _ = writeln!(out, "\nCURRENT PAGE: [{}]", self.label(cur));
        }
        if !self.path.is_empty() {
            let path: Vec<String> = self.path.iter().map(|s| self.label(&s.url)).collect();
            let _ = writeln!(out, "PATH: {}", path.join(" → "));
        }
        truncate_lines(&out, max_chars)
    }

    /// The Phase 1 output for the current page type (spec 002, "Phase 1 → Phase 2 Handoff").
    pub fn phase1_output(&self) -> Phase1Output {
        let page_type = self
            .current_url()
            .and_then(|u| self.pages.iter().find(|p| p.url == u))
            .and_then(|p| p.page_type.clone())
            .or_else(|| self.pages.iter().rev().find_map(|p| p.page_type.clone()))
            .unwrap_or_else(|| "unknown".to_owned());
        let key_elements = self
            .selectors
            .iter()
            .flat_map(|(purpose, sels)| {
                sels.iter().map(move |s| KeyElement {
                    purpose: purpose.clone(),
                    selector: s.clone(),
                })
            })
            .collect();
        let behaviors = self
            .behaviors
            .iter()
            .map(|((element, action, _), (effect, n))| Behavior {
                element: element.clone(),
                action: action.clone(),
                effect: effect.clone(),
                confirmed: *n >= 2,
            })
            .collect();
        let understanding = self
            .understanding
            .clone()
            .unwrap_or_else(|| self.summary_for_model());
        Phase1Output {
            page_type,
            key_elements,
            behaviors,
            filter_options: self.filter_options.clone(),
            understanding,
        }
    }

    /// The page graph as a Mermaid flowchart. Node ids (`p0`, `p1`, ...) follow first-visit
    /// order, so they are stable across calls; labels are escaped.
    pub fn to_mermaid(&self) -> String {
        let mut out = String::from("flowchart LR\n");
        for (i, p) in self.pages.iter().enumerate() {
            let label = match &p.page_type {
                Some(t) => format!("{}<br/>{}", escape_mermaid(t), escape_mermaid(&p.url)),
                None => escape_mermaid(&p.url),
            };
            let _ = writeln!(out, "    p{i}[\"{label}\"]");
        }
        for e in &self.edges {
            let (Some(from), Some(to)) = (self.node_index(&e.from), self.node_index(&e.to)) else {
                continue;
            };
            let mut label = e.action.as_str().to_owned();
            if let Some(s) = &e.selector {
                label.push(' ');
                label.push_str(s);
            }
            if e.count > 1 {
                let _ = write!(label, " x{}", e.count);
            }
            let _ = writeln!(out, "    p{from} -->|\"{}\"| p{to}", escape_mermaid(&label));
        }
        out
    }

    fn node_index(&self, url: &str) -> Option<usize> {
        self.pages.iter().position(|p| p.url == url)
    }
}

/// Escapes text for a quoted Mermaid label (quotes, brackets, pipes and angle brackets become
/// HTML entities).
pub fn escape_mermaid(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '|' => out.push_str("#124;"),
            '[' => out.push_str("#91;"),
            ']' => out.push_str("#93;"),
            '{' => out.push_str("#123;"),
            '}' => out.push_str("#125;"),
            '#' => out.push_str("#35;"),
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

fn truncate_lines(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    const MARK: &str = "...\n";
    let budget = max_chars.saturating_sub(MARK.len());
    let mut out = String::new();
    let mut used = 0;
    for line in text.split_inclusive('\n') {
        let n = line.chars().count();
        if used + n > budget {
            break;
        }
        out.push_str(line);
        used += n;
    }
    if max_chars >= MARK.len() {
        out.push_str(MARK);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000 + secs, 0)
            .single()
            .unwrap_or_default()
    }

    fn sample() -> MemoryStore {
        let mut m = MemoryStore::new();
        m.visit("https://x.test/", Some("Home"), None, None, t(0));
        m.classify("https://x.test/", "homepage");
        m.visit(
            "https://x.test/jobs",
            Some("Jobs"),
            Some(NavAction::Click),
            Some("a#jobs"),
            t(5),
        );
        m.classify("https://x.test/jobs", "job_search");
        m
    }

    #[test]
    fn visits_build_graph_and_path() {
        let mut m = sample();
        m.visit(
            "https://x.test/",
            None,
            Some(NavAction::Navigate),
            None,
            t(10),
        );
        m.visit(
            "https://x.test/jobs",
            None,
            Some(NavAction::Click),
            Some("a#jobs"),
            t(20),
        );
        assert_eq!(m.pages().len(), 2);
        let home = &m.pages()[0];
        assert_eq!(home.visits, 2);
        assert_eq!(home.first_seen, t(0));
        assert_eq!(home.last_seen, t(10));
        assert_eq!(home.title.as_deref(), Some("Home"));
        assert_eq!(m.edges().len(), 2);
        assert_eq!(m.edges()[0].count, 2);
        assert_eq!(m.path().len(), 4);
        assert_eq!(m.path()[0].action, None);
        assert_eq!(m.path()[3].action, Some(NavAction::Click));
        assert_eq!(m.current_url(), Some("https://x.test/jobs"));
        assert!(!m.classify("https://nope.test/", "x"));
    }

    #[test]
    fn patterns_confirm_on_second_sighting() {
        let mut m = MemoryStore::new();
        assert_eq!(
            m.observe_pattern("behavior", "Clicking a card opens the panel", None),
            PatternStatus::Observed
        );
        assert_eq!(
            m.observe_pattern(
                "behavior",
                "  clicking a CARD opens the panel!",
                Some(".card")
            ),
            PatternStatus::Confirmed
        );
        let p: Vec<_> = m.patterns().collect();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].sightings, 2);
        assert_eq!(p[0].selector.as_deref(), Some(".card"));
        assert_eq!(normalize_description(" A--b  C "), "a b c");
    }

    #[test]
    fn selectors_dedup_by_purpose() {
        let mut m = MemoryStore::new();
        m.add_selector("job_card", ".card");
        m.add_selector("job_card", ".card");
        m.add_selector("job_card", "li.job");
        assert_eq!(m.selectors_for("job_card"), [".card", "li.job"]);
        assert!(m.selectors_for("next_page").is_empty());
        assert_eq!(m.selectors().len(), 1);
    }

    #[test]
    fn summary_follows_spec_shape() {
        let mut m = sample();
        m.observe_pattern("behavior", "card opens panel", Some(".card"));
        m.observe_pattern("behavior", "card opens panel", None);
        m.observe_pattern("behavior", "only once", None);
        m.add_selector("next_page", "a.next");
        m.add_note("login wall on apply");
        let s = m.summary_for_model();
        assert!(s.starts_with("EXPLORED PAGES:\n"), "{s}");
        assert!(
            s.contains("[homepage] https://x.test/ (visits: 1) \"Home\""),
            "{s}"
        );
        assert!(s.contains("→ leads to: [job_search https://x.test/jobs] via click a#jobs (x1)"));
        assert!(s.contains("← from: [homepage https://x.test/] via click a#jobs"));
        assert!(s.contains("CONFIRMED PATTERNS:\n- behavior: card opens panel (.card)"));
        assert!(!s.contains("only once"));
        assert!(s.contains("KNOWN SELECTORS:\n- next_page: a.next"));
        assert!(s.contains("NOTES:\n- login wall on apply"));
        assert!(s.contains("CURRENT PAGE: [job_search https://x.test/jobs]"));
        assert!(s.contains("PATH: homepage https://x.test/ → job_search https://x.test/jobs"));
    }

    #[test]
    fn summary_respects_cap() {
        let mut m = MemoryStore::new();
        for i in 0..200 {
            m.visit(
                &format!("https://x.test/{i}"),
                None,
                Some(NavAction::Click),
                None,
                t(i),
            );
        }
        let full = m.summary_for_model_capped(usize::MAX);
        assert!(full.chars().count() > 500);
        let s = m.summary_for_model_capped(500);
        assert!(s.chars().count() <= 500, "{}", s.chars().count());
        assert!(s.ends_with("...\n"));
        assert!(m.summary_for_model().chars().count() <= DEFAULT_SUMMARY_CHARS);
        assert_eq!(m.summary_for_model_capped(2), "");
    }

    #[test]
    fn phase1_output_collects_contract() {
        let mut m = sample();
        m.add_selector("job_card", ".card");
        m.add_selector("next_page", "a.next");
        assert_eq!(
            m.add_behavior("job_card", "click", "Updates detail panel"),
            PatternStatus::Observed
        );
        assert_eq!(
            m.add_behavior("job_card", "click", "updates detail panel."),
            PatternStatus::Confirmed
        );
        m.add_behavior("filter_button", "click", "opens modal");
        m.add_filter_options("experience", ["Entry", "Senior"]);
        m.add_filter_options("experience", ["Senior", "Mid"]);
        let out = m.phase1_output();
        assert_eq!(out.page_type, "job_search");
        assert_eq!(
            out.key_elements,
            vec![
                KeyElement {
                    purpose: "job_card".into(),
                    selector: ".card".into()
                },
                KeyElement {
                    purpose: "next_page".into(),
                    selector: "a.next".into()
                },
            ]
        );
        assert_eq!(out.behaviors.len(), 2);
        let card = out
            .behaviors
            .iter()
            .find(|b| b.element == "job_card")
            .cloned()
            .unwrap_or_else(|| Behavior {
                element: String::new(),
                action: String::new(),
                effect: String::new(),
                confirmed: false,
            });
        assert!(card.confirmed);
        assert_eq!(card.effect, "Updates detail panel");
        assert!(
            out.behaviors
                .iter()
                .any(|b| b.element == "filter_button" && !b.confirmed)
        );
        assert_eq!(out.filter_options["experience"], ["Entry", "Senior", "Mid"]);
        assert!(out.understanding.contains("EXPLORED PAGES"));
        m.set_understanding("Job board with list and panel");
        assert_eq!(
            m.phase1_output().understanding,
            "Job board with list and panel"
        );
    }

    #[test]
    fn phase1_output_schema_and_serde_roundtrip() -> Result<(), serde_json::Error> {
        let schema = serde_json::to_value(schemars::schema_for!(Phase1Output))?;
        let props = &schema["properties"];
        for key in [
            "page_type",
            "key_elements",
            "behaviors",
            "filter_options",
            "understanding",
        ] {
            assert!(props.get(key).is_some(), "missing {key} in {schema}");
        }
        let out = sample().phase1_output();
        let back: Phase1Output = serde_json::from_str(&serde_json::to_string(&out)?)?;
        assert_eq!(back, out);
        assert_eq!(MemoryStore::new().phase1_output().page_type, "unknown");
        Ok(())
    }

    #[test]
    fn mermaid_is_stable_and_escaped() {
        let mut m = sample();
        m.visit(
            "https://x.test/q?a=\"b\"|c",
            None,
            Some(NavAction::Type),
            Some("input[name=\"q\"]"),
            t(30),
        );
        m.visit(
            "https://x.test/jobs",
            None,
            Some(NavAction::Navigate),
            None,
            t(40),
        );
        let d = m.to_mermaid();
        assert_eq!(d, m.to_mermaid());
        assert!(d.starts_with("flowchart LR\n"));
        assert!(d.contains("p0[\"homepage<br/>https://x.test/\"]"), "{d}");
        assert!(
            d.contains("p2[\"https://x.test/q?a=#quot;b#quot;#124;c\"]"),
            "{d}"
        );
        assert!(d.contains("p0 -->|\"click a#35;jobs\"| p1"), "{d}");
        assert!(
            d.contains("p1 -->|\"type input#91;name=#quot;q#quot;#93;\"| p2"),
            "{d}"
        );
        assert!(d.contains("p2 -->|\"navigate\"| p1"), "{d}");
        assert_eq!(escape_mermaid("a\nb<c>{d}"), "a b#lt;c#gt;#123;d#125;");
    }
}
