//! One Explorer tool call, carried out: the browser action, the ChangeAnalyzer's verdict,
//! the Classifier on a URL change (with the Summarizer for the page left), the guard, the
//! memory and the report.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::{EXPLORE_FIRST, Explore, ExploreStop, Handoff};
use crate::agents::change_analyzer::{ActionDescription, analyze_change, describe_change};
use crate::agents::classifier::{ClassifierInput, classify};
use crate::agents::clip;
use crate::agents::explorer::{DoneArgs, ExplorerCall, ExplorerCallError, ScrollDirection};
use crate::browser::BrowserError;
use crate::dom::{Observation, observe};
use crate::guard::ActionRecord;
use crate::memory::{ChangeObservation, Classification, NavAction, Transition, page_key};
use crate::phase1::canonical_purpose;
use crate::report::ExploreEvent;

/// How far one `scroll` moves, in CSS pixels.
const SCROLL_STEP: f64 = 700.0;

/// A page with this many observations since its last summary is summarized.
const SUMMARIZE_AFTER: usize = 12;

/// The change description in a tool result is cut to this many characters.
const CHANGES_IN_RESULT: usize = 3_000;

/// Why an Explorer tool call failed; its text goes back to the Explorer as the tool's error.
#[derive(Debug, thiserror::Error)]
pub(super) enum CallError {
    /// The call could not be parsed.
    #[error(transparent)]
    Parse(#[from] ExplorerCallError),
    /// The page could not be read.
    #[error("the page could not be read: {0}")]
    Unreadable(BrowserError),
    /// `done` was refused.
    #[error("{0}")]
    Refused(&'static str),
    /// The browser action failed.
    #[error("{tool} failed: {error}")]
    Action {
        /// The tool called (`click`, `type_text`, `scroll`).
        tool: &'static str,
        /// What the browser said.
        error: BrowserError,
    },
}

/// A browser action the Explorer asked for.
enum Act {
    Click(String),
    Type(String, String),
    Scroll(ScrollDirection),
}

impl Act {
    fn tool(&self) -> &'static str {
        match self {
            Act::Click(_) => "click",
            Act::Type(..) => "type_text",
            Act::Scroll(_) => "scroll",
        }
    }

    fn nav(&self) -> NavAction {
        match self {
            Act::Click(_) => NavAction::Click,
            Act::Type(..) => NavAction::Type,
            Act::Scroll(_) => NavAction::Scroll,
        }
    }

    fn selector(&self) -> Option<&str> {
        match self {
            Act::Click(s) | Act::Type(s, _) => Some(s),
            Act::Scroll(_) => None,
        }
    }

    fn target(&self) -> String {
        match self {
            Act::Click(s) => format!("\"{s}\""),
            Act::Type(s, text) => format!("\"{s}\" ← {text:?}"),
            Act::Scroll(ScrollDirection::Down) => "down".to_owned(),
            Act::Scroll(ScrollDirection::Up) => "up".to_owned(),
        }
    }

    fn argument(&self) -> Option<&str> {
        match self {
            Act::Type(_, text) => Some(text),
            Act::Scroll(ScrollDirection::Down) => Some("down"),
            Act::Scroll(ScrollDirection::Up) => Some("up"),
            Act::Click(_) => None,
        }
    }
}

impl Explore<'_> {
    /// Carries out one Explorer tool call; the result (or error) goes back to the Explorer.
    pub(super) async fn run_call(
        &mut self,
        name: &str,
        input: &Value,
    ) -> (Result<Value, CallError>, Handoff) {
        let call = match ExplorerCall::parse(name, input) {
            Ok(call) => call,
            Err(error) => return (Err(error.into()), Handoff::None),
        };
        match call {
            ExplorerCall::Observe(_) => self.observe_now().await,
            ExplorerCall::Done(args) => self.done(args).await,
            ExplorerCall::Click(args) => self.act(Act::Click(args.selector), &args.reason).await,
            ExplorerCall::TypeText(args) => {
                self.act(Act::Type(args.selector, args.text), &args.reason)
                    .await
            }
            ExplorerCall::Scroll(args) => self.act(Act::Scroll(args.direction), &args.reason).await,
        }
    }

    /// `observe`: the page now. When its URL is not the one last seen (the page moved on by
    /// itself: a redirect, a late navigation), the Classifier runs on it as on any URL
    /// change and the Explorer starts again with fresh context.
    async fn observe_now(&mut self) -> (Result<Value, CallError>, Handoff) {
        let page = match observe(self.browser, Some(&self.page), self.options.budget_tokens).await {
            Ok(page) => page,
            Err(error) => return (Err(CallError::Unreadable(error)), Handoff::None),
        };
        let before = std::mem::replace(&mut self.page, page);
        let mut result =
            json!({ "dom": self.page.text, "url": self.page.url, "title": self.page.title });
        if before.url == self.page.url {
            return (Ok(result), Handoff::None);
        }
        result["url_changed"] = json!(true);
        if self.stopped.is_none() {
            let after = self.page.clone();
            self.classify_new_url(
                NavAction::Navigate,
                None,
                "observe (the page had moved on)".to_owned(),
                &before,
                &after,
            )
            .await;
        }
        (Ok(result), Handoff::PageChanged)
    }

    /// `done`: refused (the Explorer told to explore first) before any browser action, up
    /// to the refusal limit; else checked against what was observed (see
    /// [`verify_done`](Explore::verify_done)) and what holds recorded.
    async fn done(&mut self, args: DoneArgs) -> (Result<Value, CallError>, Handoff) {
        if self.actions == 0 {
            let handoff = if self.refuse_early_done() {
                Handoff::None
            } else {
                Handoff::Stop
            };
            return (Err(CallError::Refused(EXPLORE_FIRST)), handoff);
        }
        let verified = self.verify_done(&args).await;
        self.memory.finish(
            &args.understanding,
            &args.page_type,
            &verified.findings,
            &verified.elements,
        );
        for text in &verified.findings {
            self.emit(ExploreEvent::Finding { text: text.clone() });
        }
        self.completed = true;
        (
            Ok(json!({ "status": "exploration complete" })),
            Handoff::Done,
        )
    }

    /// A browser action and everything that follows it.
    async fn act(&mut self, act: Act, reason: &str) -> (Result<Value, CallError>, Handoff) {
        let before = self.page.clone();
        self.actions += 1;
        let step = self.actions;
        let done = match &act {
            Act::Click(selector) => self.browser.click(selector).await,
            Act::Type(selector, text) => self.browser.type_text(selector, text).await,
            Act::Scroll(direction) => {
                let dy = match direction {
                    ScrollDirection::Down => SCROLL_STEP,
                    ScrollDirection::Up => -SCROLL_STEP,
                };
                self.browser.scroll(0.0, dy).await
            }
        };
        if let Err(error) = done {
            let text = error.to_string();
            self.emit(ExploreEvent::Action {
                step,
                tool: act.tool().to_owned(),
                target: act.target(),
                reason: reason.to_owned(),
                ok: false,
                url_changed: false,
                error: Some(text.clone()),
            });
            self.recent
                .push(format!("{} {} ✗ {text}", act.tool(), act.target()));
            let record = ActionRecord::new(act.tool(), act.selector(), &before.url, false);
            let handoff = self.guarded(&record);
            let tool = act.tool();
            return (Err(CallError::Action { tool, error }), handoff);
        }
        let after = match self.look_after(&before).await {
            Ok(after) => after,
            Err(error) => {
                self.stop(ExploreStop::Unreadable {
                    tool: act.tool().to_owned(),
                    reason: error.to_string(),
                });
                return (Err(CallError::Unreadable(error)), Handoff::Stop);
            }
        };
        let url_changed = after.url != before.url;
        if let Some(selector) = act.selector() {
            self.acted.insert(selector.to_owned());
        }
        self.emit(ExploreEvent::Action {
            step,
            tool: act.tool().to_owned(),
            target: act.target(),
            reason: reason.to_owned(),
            ok: true,
            url_changed,
            error: None,
        });
        let record = ActionRecord::new(act.tool(), act.selector(), &before.url, true);
        let guarded = self.guarded(&record);
        let effect = if self.stopped.is_none() {
            self.analyze(&act, reason, &before, &after).await
        } else {
            None
        };
        let mut summary = format!("{} {}", act.tool(), act.target());
        if let Some((element_type, description)) = &effect {
            summary.push_str(&format!(" → {description} ({element_type})"));
        }
        if url_changed {
            summary.push_str(&format!(" → {}", after.url));
        }
        self.recent.push(summary);
        let keep = self.options.recent_actions;
        if self.recent.len() > keep {
            self.recent.drain(..self.recent.len() - keep);
        }
        let mut result = json!({ "success": true, "url_changed": url_changed });
        if let Some((element_type, description)) = effect {
            result["effect"] = json!(description);
            result["element_type"] = json!(element_type);
        }
        let handoff = if url_changed {
            result["new_url"] = json!(after.url);
            if self.stopped.is_none() {
                let action = format!("{} {}", act.tool(), act.target());
                self.classify_new_url(act.nav(), act.selector(), action, &before, &after)
                    .await;
            }
            Handoff::PageChanged
        } else {
            guarded
        };
        if let Act::Scroll(_) = act {
            let old: HashSet<&str> = before
                .elements
                .iter()
                .map(|e| e.selector.as_str())
                .collect();
            let loaded = after
                .elements
                .iter()
                .any(|e| !old.contains(e.selector.as_str()))
                || after.text.len() > before.text.len();
            result["new_content_loaded"] = json!(loaded);
        }
        if !url_changed {
            result["changes"] = json!(clip(&describe_change(&before, &after), CHANGES_IN_RESULT));
        }
        self.page = after;
        (Ok(result), handoff)
    }

    /// Records an action with the guard; a tripped breaker stops exploring.
    fn guarded(&mut self, record: &ActionRecord) -> Handoff {
        match self.guard.record(record) {
            Ok(()) => Handoff::None,
            Err(stop) => {
                self.stop(ExploreStop::Breaker {
                    reason: stop.to_string(),
                });
                Handoff::Stop
            }
        }
    }

    /// The page after an action: settled, then observed (once more after a second settle
    /// if a navigation was still under way).
    async fn look_after(&self, before: &Observation) -> Result<Observation, BrowserError> {
        let budget = self.options.budget_tokens;
        if let Err(error) = self.browser.wait_for_settle(self.options.settle).await {
            tracing::debug!(%error, "settling after an action");
        }
        match observe(self.browser, Some(before), budget).await {
            Ok(page) => Ok(page),
            Err(first) => {
                tracing::debug!(%first, "observing after an action; trying again");
                let _ = self.browser.wait_for_settle(self.options.settle).await;
                observe(self.browser, Some(before), budget).await
            }
        }
    }

    /// The ChangeAnalyzer on an action: its verdict goes into memory and the report.
    /// Returns the element type and the effect.
    async fn analyze(
        &mut self,
        act: &Act,
        reason: &str,
        before: &Observation,
        after: &Observation,
    ) -> Option<(String, String)> {
        let action = ActionDescription {
            tool: act.tool(),
            selector: act.selector(),
            argument: act.argument(),
            reason,
        };
        let session = self.session.clone();
        let answer = self
            .ask(async {
                analyze_change(&session, &action, before, after)
                    .await
                    .map_err(|e| e.error)
            })
            .await?;
        let analysis = match answer {
            Ok(extracted) => extracted.value,
            Err(error) => {
                self.warn(format!(
                    "the ChangeAnalyzer failed on {} {}: {error}",
                    act.tool(),
                    act.target()
                ));
                return None;
            }
        };
        let element_type = canonical_purpose(&analysis.element_type);
        if element_type == "job_listing" && self.listing_url.is_none() {
            self.listing_url = Some(before.url.clone());
        }
        let status = self.memory.add_pattern_observation(&ChangeObservation {
            action: act.nav(),
            selector: act.selector().map(str::to_owned),
            element_type: element_type.clone(),
            effect: analysis.description.clone(),
            change_type: analysis.change_type.clone(),
        });
        self.emit(ExploreEvent::Change {
            selector: act.selector().map(str::to_owned),
            element_type: element_type.clone(),
            change_type: analysis.change_type.clone(),
            effect: analysis.description.clone(),
            confirmed: status == crate::memory::PatternStatus::Confirmed,
        });
        for (filter, options) in &analysis.filter_options {
            if options.is_empty() {
                continue;
            }
            self.memory
                .add_filter_options(filter, options.iter().cloned());
            self.emit(ExploreEvent::Finding {
                text: format!("filter {filter}: {}", options.join(", ")),
            });
        }
        // Spec: summarize "periodically if a page has many observations".
        let crowded = self
            .memory
            .current_page()
            .filter(|page| page.observations.len() >= SUMMARIZE_AFTER)
            .map(|page| page.id.clone());
        if let Some(page_id) = crowded {
            self.summarize_page(&page_id).await;
        }
        Some((element_type, analysis.description))
    }

    /// The URL changed: the Classifier compares the old and new page; leaving a page, the
    /// Summarizer condenses it first; then the memory moves to the page.
    async fn classify_new_url(
        &mut self,
        nav: NavAction,
        selector: Option<&str>,
        action: String,
        before: &Observation,
        after: &Observation,
    ) {
        let known: Vec<String> = self
            .memory
            .page_ids()
            .iter()
            .map(|s| s.to_string())
            .collect();
        let known: Vec<&str> = known.iter().map(String::as_str).collect();
        let current = self.memory.current_page_id().map(str::to_owned);
        let input = ClassifierInput {
            old_url: Some(&before.url),
            new_url: &after.url,
            old_page: Some(&before.text),
            new_page: &after.text,
            known_pages: &known,
            current_page: current.as_deref(),
            action: Some(&action),
        };
        let session = self.session.clone();
        let answer = self
            .ask(async { classify(&session, &input).await.map_err(|e| e.error) })
            .await;
        let fallback = || {
            let id = current.clone().unwrap_or_else(|| "page".to_owned());
            Classification::new(&id, false, &after.title)
        };
        let classification = match answer {
            None => return,
            Some(Ok(extracted)) => extracted.value,
            Some(Err(error)) => {
                self.warn(format!(
                    "the Classifier failed on {}: {error}; kept as the current page",
                    after.url
                ));
                fallback()
            }
        };
        let leaving = current
            .as_deref()
            .filter(|id| *id != page_key(&classification.page_id))
            .filter(|_| {
                classification.is_new_page || self.memory.page(&classification.page_id).is_some()
            });
        if let Some(id) = leaving.map(str::to_owned) {
            self.summarize_page(&id).await;
        }
        let described = match selector {
            Some(selector) => format!("{} {selector}", nav.as_str()),
            None => action.clone(),
        };
        let via = Transition::new(nav, selector, &described);
        self.enter(&classification, after, Some(&via)).await;
    }
}
