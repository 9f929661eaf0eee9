//! The values the memory store keeps: how the explorer acted, what the Classifier said of
//! a page, the pages, the edges between them, the path, patterns and observed changes.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How the explorer acted.
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

/// What the Classifier decided about the page the browser shows (its `classify` tool).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Classification {
    /// A semantic name for the page type, e.g. `job_search`, `job_details`.
    pub page_id: String,
    /// True when this is a page type not seen before (false: a known page, or the same
    /// page showing different data).
    pub is_new_page: bool,
    /// What the page is about.
    pub understanding: String,
    /// For a new page: the page id it was reached from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub came_from: Option<String>,
    /// For a new page: the action that led to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via_action: Option<String>,
}

impl Classification {
    /// A classification with no origin.
    pub fn new(page_id: &str, is_new_page: bool, understanding: &str) -> Self {
        Classification {
            page_id: page_id.to_owned(),
            is_new_page,
            understanding: understanding.to_owned(),
            came_from: None,
            via_action: None,
        }
    }
}

/// The browser action that changed the URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    /// The kind of action.
    pub action: NavAction,
    /// The selector acted on.
    pub selector: Option<String>,
    /// A description, e.g. `clicked "Jobs"`.
    pub description: String,
}

impl Transition {
    /// A transition by `action` on `selector`.
    pub fn new(action: NavAction, selector: Option<&str>, description: &str) -> Self {
        Transition {
            action,
            selector: selector.map(str::to_owned),
            description: description.to_owned(),
        }
    }
}

/// What a classification did to the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PageChange {
    /// A page not seen before was added.
    NewPage,
    /// A known page was entered again.
    Revisit,
    /// Still the current page (an SPA showing other data): no new node, no edge.
    SamePage,
}

/// A page (a semantic page type) in the graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageNode {
    /// The Classifier's page id.
    pub id: String,
    /// The Classifier's understanding of the page.
    pub understanding: String,
    /// The Summarizer's summary, once there is one.
    pub summary: Option<String>,
    /// Observations gathered on the page since its last summary.
    pub observations: Vec<String>,
    /// URLs seen as this page, in order.
    pub urls: Vec<String>,
    /// The last title seen.
    pub title: Option<String>,
    /// Times the page was entered.
    pub visits: u32,
    /// When the page was first entered.
    pub first_seen: DateTime<Utc>,
    /// When the page was last entered.
    pub last_seen: DateTime<Utc>,
}

impl PageNode {
    /// The summary when there is one, else the Classifier's understanding.
    pub fn best_understanding(&self) -> &str {
        self.summary.as_deref().unwrap_or(&self.understanding)
    }
}

/// A transition between two pages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edge {
    /// The page id left.
    pub from: String,
    /// The page id reached.
    pub to: String,
    /// The kind of action.
    pub action: NavAction,
    /// What was done, e.g. `clicked "Jobs"`.
    pub description: String,
    /// The selector acted on, if any.
    pub selector: Option<String>,
    /// Times this transition was taken.
    pub count: u32,
}

/// One step of the navigation path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathStep {
    /// The page id reached.
    pub page: String,
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

/// A pattern observation (e.g. "click job_listing: updates the details panel").
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

/// What the ChangeAnalyzer made of one action (spec: `addPatternObservation`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeObservation {
    /// The action taken.
    pub action: NavAction,
    /// The selector acted on.
    pub selector: Option<String>,
    /// The element type, classified from the effect (e.g. `filter_button`).
    pub element_type: String,
    /// What happened.
    pub effect: String,
    /// The kind of change, e.g. `modal_opened`, `content_updated`, `navigation`, `none`.
    pub change_type: String,
}
