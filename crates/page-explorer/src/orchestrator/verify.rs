//! The Explorer's `done`, checked against what was observed: its key selectors must match
//! on the page (checked in the browser) or have been acted on during the run; a finding
//! that claims a behaviour (listings showing details, pagination, filters, search,
//! applying) needs that behaviour seen during the run. What fails is recorded as
//! [`Unverified`] and left out of what is reported as fact.

use std::collections::BTreeMap;

use serde_json::json;

use super::Explore;
use crate::agents::explorer::DoneArgs;
use crate::phase1::{SelectorCheck, Unverified};

/// The behaviour a finding claims, as an element type, when it claims one: e.g. "Jobs are
/// paginated with a Next button" claims `pagination`. A finding of absence ("No
/// pagination: all jobs are listed at once") claims none.
pub fn claimed_behavior(finding: &str) -> Option<&'static str> {
    let text = format!(" {} ", finding.to_lowercase());
    let has = |words: &[&str]| words.iter().any(|w| text.contains(w));
    if has(&[" no ", " not ", "n't ", " without ", " none "]) {
        return None;
    }
    if has(&[
        "paginat",
        "next page",
        "next button",
        "load more",
        "page 2",
        "more pages",
    ]) {
        Some("pagination")
    } else if has(&["filter"]) {
        Some("filter_button")
    } else if has(&["search"]) {
        Some("search_input")
    } else if has(&["apply", "application"]) {
        Some("apply_button")
    } else if has(&["click", "detail", "panel", "opens", "shows"])
        && has(&["listing", "job", "card", "posting"])
    {
        Some("job_listing")
    } else {
        None
    }
}

/// What of a `done` was verified.
pub(super) struct Verified {
    /// The key selectors by purpose that matched or were acted on.
    pub elements: BTreeMap<String, Vec<String>>,
    /// The findings whose claimed behaviour was seen (or that claim none).
    pub findings: Vec<String>,
}

impl Explore<'_> {
    /// How many elements `selector` matches on the page now (-1: invalid or unreadable).
    async fn matches(&self, selector: &str) -> i64 {
        let js = format!(
            "(() => {{ try {{ return document.querySelectorAll({}).length; }} catch (e) {{ return -1; }} }})()",
            json!(selector)
        );
        self.browser
            .evaluate(&js)
            .await
            .ok()
            .and_then(|v| v.as_i64())
            .unwrap_or(-1)
    }

    /// Checks `args` against the page and the run; records the checks and what was not
    /// observed, and warns about the latter.
    pub(super) async fn verify_done(&mut self, args: &DoneArgs) -> Verified {
        let mut elements: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (purpose, selectors) in args.key_elements.by_purpose() {
            for selector in selectors {
                let acted_on = self.acted.contains(&selector);
                let matches = if selector.contains(">>>") {
                    // A shadow-piercing selector the page cannot query: only acting counts.
                    0
                } else {
                    self.matches(&selector).await
                };
                let check = SelectorCheck {
                    purpose: purpose.clone(),
                    selector: selector.clone(),
                    url: self.page.url.clone(),
                    matches,
                    acted_on,
                };
                if check.verified() {
                    elements.entry(purpose.clone()).or_default().push(selector);
                } else {
                    self.unverify(Unverified {
                        kind: "selector".to_owned(),
                        purpose: Some(purpose.clone()),
                        value: selector,
                        why: format!(
                            "matches nothing on {} and was never acted on",
                            self.page.url
                        ),
                    });
                }
                self.checks.push(check);
            }
        }
        let mut findings = Vec::new();
        for finding in &args.key_findings {
            match claimed_behavior(finding) {
                Some(behavior) if !self.memory.behavior_observed(behavior) => {
                    self.unverify(Unverified {
                        kind: "finding".to_owned(),
                        purpose: Some(behavior.to_owned()),
                        value: finding.clone(),
                        why: format!("no {behavior} behaviour was seen during the run"),
                    });
                }
                _ => findings.push(finding.clone()),
            }
        }
        Verified { elements, findings }
    }

    /// Records something not observed, and says so.
    fn unverify(&mut self, unverified: Unverified) {
        self.warn(format!(
            "unverified {} {:?} ({}): {}",
            unverified.kind,
            unverified.value,
            unverified.purpose.as_deref().unwrap_or("-"),
            unverified.why
        ));
        self.unverified.push(unverified);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_name_the_behaviour_they_claim() {
        for (finding, claimed) in [
            ("Jobs are paginated with a Next button", Some("pagination")),
            ("A load more button adds jobs", Some("pagination")),
            ("Filters open in a dialog", Some("filter_button")),
            ("There is a search box", Some("search_input")),
            ("Easy apply on each job", Some("apply_button")),
            (
                "Clicking a job listing shows its details",
                Some("job_listing"),
            ),
            ("The site is a job board", None),
            ("No pagination: all twelve jobs are listed at once", None),
            ("Job listings open a details panel, not a new page", None),
        ] {
            assert_eq!(claimed_behavior(finding), claimed, "{finding}");
        }
    }
}
