//! The Phase 1 → Phase 2 handoff contract (spec 002, "Phase 1 → Phase 2 Handoff Contract"):
//! what exploring a page found, in the spec's camelCase JSON shape, plus what Phase 2 needs
//! to start collecting without a model (the listing selectors and the pagination control).

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::collect::ListingSelectors;

/// Selectors for the elements Phase 2 starts from. Written in camelCase, as the spec's
/// `Phase1Output` interface has them; read in the spec's snake_case too (its example
/// output: `filter_button`, `job_listings`). A key of neither form is refused by name,
/// never read as nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyElements {
    /// Opens the filters.
    #[serde(
        default,
        alias = "filter_button",
        skip_serializing_if = "Option::is_none"
    )]
    pub filter_button: Option<String>,
    /// Starts an application.
    #[serde(
        default,
        alias = "apply_button",
        skip_serializing_if = "Option::is_none"
    )]
    pub apply_button: Option<String>,
    /// Individual job listings (examples; [`Phase1Output::listing`] generalizes them).
    #[serde(default, alias = "job_listings")]
    pub job_listings: Vec<String>,
    /// The search box.
    #[serde(
        default,
        alias = "search_input",
        skip_serializing_if = "Option::is_none"
    )]
    pub search_input: Option<String>,
    /// The next-page (or load-more) control.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pagination: Option<String>,
    /// Other elements by purpose (e.g. `close_button`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub other: BTreeMap<String, String>,
}

impl KeyElements {
    /// Sets the selector for `purpose`, mapping the spec's names (`filter_button`,
    /// `apply_button`, `job_listing(s)`, `search_input`, `pagination`/`next_page`) to their
    /// fields and anything else into [`other`](Self::other). A job listing is added to the
    /// list (once); the others keep the first selector given.
    pub fn set(&mut self, purpose: &str, selector: &str) {
        let selector = selector.trim();
        if selector.is_empty() {
            return;
        }
        let keep_first = |slot: &mut Option<String>| {
            if slot.is_none() {
                *slot = Some(selector.to_owned());
            }
        };
        match canonical_purpose(purpose).as_str() {
            "filter_button" => keep_first(&mut self.filter_button),
            "apply_button" => keep_first(&mut self.apply_button),
            "search_input" => keep_first(&mut self.search_input),
            "pagination" => keep_first(&mut self.pagination),
            "job_listing" => {
                if !self.job_listings.iter().any(|s| s == selector) {
                    self.job_listings.push(selector.to_owned());
                }
            }
            other => {
                self.other
                    .entry(other.to_owned())
                    .or_insert_with(|| selector.to_owned());
            }
        }
    }
}

/// A purpose or element type in one spelling: lowercase words joined by `_`, with the
/// usual synonyms folded (`"filter button"`, `"filters"` → `filter_button`; `"job card"`,
/// `"job listings"` → `job_listing`; `"next page"`, `"load more"` → `pagination`; `"search
/// box"` → `search_input`; `"apply"` → `apply_button`).
pub fn canonical_purpose(purpose: &str) -> String {
    let words: Vec<String> = purpose
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let joined = words.join("_");
    let has = |w: &str| words.iter().any(|x| x == w);
    let mentions = |prefix: &str| words.iter().any(|x| x.starts_with(prefix));
    if mentions("filter") && !has("option") && !has("options") {
        "filter_button".to_owned()
    } else if has("apply") && !mentions("filter") {
        "apply_button".to_owned()
    } else if has("search") && (has("input") || has("box") || has("field") || has("bar")) {
        "search_input".to_owned()
    } else if has("pagination")
        || (has("next") && (has("page") || has("link") || has("button")))
        || (has("load") && has("more"))
    {
        "pagination".to_owned()
    } else if (has("job") || has("jobs"))
        && (mentions("listing") || has("card") || has("cards") || has("item") || has("link"))
    {
        "job_listing".to_owned()
    } else {
        joined
    }
}

/// What acting on one element type does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BehaviorSummary {
    /// The action: `click`, `type` or `scroll`.
    pub action: String,
    /// What happened, e.g. "opens modal".
    pub effect: String,
    /// Seen two or more times.
    pub confirmed: bool,
}

/// One page (semantic page type) the explorer saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageSummary {
    /// The page id the Classifier gave, e.g. `job_search`.
    pub id: String,
    /// The URLs seen as this page, first first.
    pub urls: Vec<String>,
    /// The Summarizer's summary (or the Classifier's understanding when none).
    pub understanding: String,
    /// Times the page was entered.
    pub visits: u32,
}

/// The Phase 1 output: the spec's `Phase1Output` plus the pages seen, the findings, the
/// generalized listing selectors and why exploring stopped early, if it did. Written in
/// camelCase; the spec's snake_case names are read too.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Phase1Output {
    /// Where exploring started.
    #[serde(default, alias = "start_url")]
    pub start_url: String,
    /// The explored page's type, e.g. `job_search`.
    #[serde(alias = "page_type")]
    pub page_type: String,
    /// Selectors Phase 2 starts from.
    #[serde(alias = "key_elements")]
    pub key_elements: KeyElements,
    /// What each element type does, by element type (e.g. `filter_button`).
    #[serde(default)]
    pub behaviors: BTreeMap<String, BehaviorSummary>,
    /// Filter options by filter name.
    #[serde(
        default,
        alias = "filter_options",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub filter_options: BTreeMap<String, Vec<String>>,
    /// Human-readable summary.
    pub understanding: String,
    /// The Explorer's key findings.
    #[serde(default, alias = "key_findings")]
    pub key_findings: Vec<String>,
    /// The pages seen, in order of first visit.
    #[serde(default)]
    pub pages: Vec<PageSummary>,
    /// Selectors for every listing and its fields, generalized from the job listings seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listing: Option<ListingSelectors>,
    /// Why exploring ended before the Explorer called `done` (a circuit breaker, an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The kind of [`stopped`](Self::stopped)'s reason, e.g. `breaker`, `done_refused`
    /// (see [`ExploreStop::kind`](crate::orchestrator::ExploreStop::kind)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_kind: Option<String>,
    /// The key selectors of the Explorer's `done`, as checked in the browser.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selector_checks: Vec<SelectorCheck>,
    /// What the Explorer reported that was not observed: left out of the key elements and
    /// the findings above, never reported as fact.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unverified: Vec<Unverified>,
}

/// A key selector the Explorer's `done` named, checked in the browser.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelectorCheck {
    /// What it is for (`pagination`, `job_listing`, ...).
    pub purpose: String,
    /// The selector.
    pub selector: String,
    /// The page it was checked on.
    pub url: String,
    /// How many elements it matched there (-1: not a valid selector).
    pub matches: i64,
    /// Whether an action on it succeeded during the run.
    pub acted_on: bool,
}

impl SelectorCheck {
    /// Observed: it matched an element when checked, or was acted on during the run.
    pub fn verified(&self) -> bool {
        self.matches > 0 || self.acted_on
    }
}

/// A selector or finding the Explorer reported that the run did not observe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Unverified {
    /// `selector` or `finding`.
    pub kind: String,
    /// The purpose or behaviour it claims (`pagination`, `job_listing`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<String>,
    /// The selector or the finding's text.
    pub value: String,
    /// Why it is not taken as fact.
    pub why: String,
}

/// Reading a Phase 1 file failed.
#[derive(Debug, thiserror::Error)]
pub enum Phase1Error {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a Phase 1 output.
    #[error("{path} is not a Phase 1 output: {source}")]
    Parse {
        /// The file.
        path: String,
        /// Why.
        source: serde_json::Error,
    },
}

impl Phase1Output {
    /// Reads a Phase 1 output written by `explore`.
    pub fn read(path: &Path) -> Result<Self, Phase1Error> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| Phase1Error::Read {
            path: name.clone(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| Phase1Error::Parse { path: name, source })
    }

    /// The JSON Schema of the output.
    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Phase1Output)).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purposes_fold_to_the_spec_names() {
        for (given, expected) in [
            ("filter button", "filter_button"),
            ("Filters", "filter_button"),
            ("filter_button", "filter_button"),
            ("apply button", "apply_button"),
            ("job listing", "job_listing"),
            ("job_listings", "job_listing"),
            ("job card", "job_listing"),
            ("search input", "search_input"),
            ("search box", "search_input"),
            ("next page", "pagination"),
            ("load more button", "pagination"),
            ("close button", "close_button"),
            ("filter options", "filter_options"),
        ] {
            assert_eq!(canonical_purpose(given), expected, "{given}");
        }
    }

    #[test]
    fn key_elements_keep_first_and_list_jobs_once() {
        let mut k = KeyElements::default();
        k.set("filter button", "#open-filters");
        k.set("filters", "#other");
        k.set("job card", "#job-1");
        k.set("job listing", "#job-2");
        k.set("job_listings", "#job-1");
        k.set("close button", "#close");
        k.set("apply", "  ");
        assert_eq!(k.filter_button.as_deref(), Some("#open-filters"));
        assert_eq!(k.job_listings, ["#job-1", "#job-2"]);
        assert_eq!(k.other["close_button"], "#close");
        assert_eq!(k.apply_button, None);
    }

    #[test]
    fn the_spec_s_snake_case_form_is_read_and_an_unknown_key_refused() {
        // Spec 002's example output: keyElements with snake_case keys.
        let spec: Phase1Output = serde_json::from_value(serde_json::json!({
            "page_type": "job_search",
            "understanding": "...",
            "keyFindings": ["..."],
            "keyElements": {
                "filter_button": "#ember150",
                "apply_button": "#jobs-apply-button-id",
                "job_listings": ["#ember224", "#ember214"],
                "search_input": "#jobs-search-box-keyword-id-ember100"
            }
        }))
        .unwrap();
        assert_eq!(
            spec.key_elements.filter_button.as_deref(),
            Some("#ember150")
        );
        assert_eq!(spec.key_elements.job_listings, ["#ember224", "#ember214"]);
        assert_eq!(
            spec.key_elements.search_input.as_deref(),
            Some("#jobs-search-box-keyword-id-ember100")
        );
        let wrong = serde_json::from_value::<Phase1Output>(serde_json::json!({
            "pageType": "job_search",
            "understanding": "...",
            "keyElements": {"JobListings": ["#a"]}
        }))
        .unwrap_err();
        assert!(wrong.to_string().contains("JobListings"), "{wrong}");
    }

    #[test]
    fn output_is_camel_case_and_round_trips() {
        let mut out = Phase1Output {
            page_type: "job_search".into(),
            understanding: "A board.".into(),
            ..Phase1Output::default()
        };
        out.key_elements.set("filter button", "#f");
        out.behaviors.insert(
            "filter_button".into(),
            BehaviorSummary {
                action: "click".into(),
                effect: "opens modal".into(),
                confirmed: true,
            },
        );
        let json = serde_json::to_value(&out).unwrap();
        assert_eq!(json["pageType"], "job_search");
        assert_eq!(json["keyElements"]["filterButton"], "#f");
        assert_eq!(json["keyElements"]["jobListings"], serde_json::json!([]));
        assert_eq!(json["behaviors"]["filter_button"]["confirmed"], true);
        let back: Phase1Output = serde_json::from_value(json).unwrap();
        assert_eq!(back, out);
        let schema = Phase1Output::json_schema();
        assert!(schema["properties"]["keyElements"].is_object());
    }
}
