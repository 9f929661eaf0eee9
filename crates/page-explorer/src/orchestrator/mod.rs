//! The orchestrator (spec 002, "Orchestrator Responsibilities"): code, not a model. It runs
//! the Explorer's tool calls on the browser, hands off to the Classifier on every URL change,
//! to the ChangeAnalyzer after every action and to the Summarizer before leaving a page and
//! at the end, keeps the memory store, enforces the loop guard's breakers and reports every
//! step as it happens.
//!
//! The Explorer's conversation is an [`AgentRun`] (the runtime's loop state machine, with its
//! compaction), driven here because its tools are the orchestrator's own: after a URL change
//! the Explorer starts again with fresh context (the memory summary, its recent actions and
//! the new page).
//!
//! ```no_run
//! # async fn run(models: page_explorer::agents::ExplorerModels) -> Result<(), Box<dyn std::error::Error>> {
//! use page_explorer::{ExploreOptions, explore};
//! use page_explorer::{ChromiumBrowser, LaunchOptions, ExploreEvent};
//! let browser = ChromiumBrowser::launch(LaunchOptions::default()).await?;
//! let print = |event: ExploreEvent| tracing::info!("{event}");
//! let cancel = tokio_util::sync::CancellationToken::new();
//! let options = ExploreOptions::new("Find how jobs are listed and filtered");
//! let exploration = explore(&browser, &models, "http://127.0.0.1:8080/", &options, &print, &cancel).await;
//! browser.close().await;
//! println!("{}", serde_json::to_string_pretty(&exploration?.output)?);
//! # Ok(()) }
//! ```

mod options;
mod step;
mod stop;
mod verify;

pub use options::{Exploration, ExploreError, ExploreOptions, PageScreenshot};
pub use stop::ExploreStop;

use std::collections::HashSet;

use agent_llm::{ChatRequest, ContentBlock, LlmError, ModelTier};
use agent_runtime::{AgentRun, Ask, Compaction, EventSink, Next, Session};
use tokio_util::sync::CancellationToken;

use crate::agents::ExplorerModels;
use crate::agents::classifier::{ClassifierInput, classify};
use crate::agents::explorer::{explorer_message, explorer_request};
use crate::agents::summarizer::summarize;
use crate::browser::Browser;
use crate::dom::{Observation, observe};
use crate::guard::LoopGuard;
use crate::memory::{Classification, MemoryStore, PageChange, Transition};
use crate::phase1::{SelectorCheck, Unverified};
use crate::report::ExploreEvent;

/// What the Explorer is told when it finishes before acting.
const EXPLORE_FIRST: &str = "not accepted: you have not clicked, typed or scrolled yet. Explore \
     the page first: open a job listing, try the next-page control or the filters; then call \
     done with what you saw";

/// How a tool call ended the Explorer's turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handoff {
    /// Keep going in the same context.
    None,
    /// The page changed: the Classifier ran; the Explorer starts again with fresh context.
    PageChanged,
    /// The Explorer called `done`.
    Done,
    /// A breaker tripped, the session was cancelled, or something fatal happened.
    Stop,
}

/// The state of one exploration.
struct Explore<'a> {
    browser: &'a dyn Browser,
    models: &'a ExplorerModels,
    /// The session the agents ask through (see [`ExplorerModels::session`]).
    session: Session<(), ()>,
    options: &'a ExploreOptions,
    report: &'a dyn EventSink<ExploreEvent>,
    cancel: &'a CancellationToken,
    memory: MemoryStore,
    guard: LoopGuard,
    /// The page as last observed.
    page: Observation,
    actions: usize,
    recent: Vec<String>,
    screenshots: Vec<PageScreenshot>,
    /// Where job listings were seen first (Phase 2 starts there).
    listing_url: Option<String>,
    stopped: Option<ExploreStop>,
    /// `done`s refused because nothing had been done yet.
    refusals: u32,
    /// Selectors acted on successfully.
    acted: HashSet<String>,
    /// The key selectors of `done`, checked.
    checks: Vec<SelectorCheck>,
    /// What was reported but not observed.
    unverified: Vec<Unverified>,
    completed: bool,
    /// The Explorer ended with text and no `done`: its last words.
    final_text: Option<String>,
}

/// Explores `start_url` in `browser`: the main loop of spec 002. Events go to `report` as they
/// happen; `cancel` stops it between steps (what was learned is kept and returned).
pub async fn explore(
    browser: &dyn Browser,
    models: &ExplorerModels,
    start_url: &str,
    options: &ExploreOptions,
    report: &dyn EventSink<ExploreEvent>,
    cancel: &CancellationToken,
) -> Result<Exploration, ExploreError> {
    let open_error = |source| ExploreError::Open {
        url: start_url.to_owned(),
        source,
    };
    report.emit(ExploreEvent::Started {
        url: start_url.to_owned(),
        task: options.task.clone(),
    });
    browser.open(start_url).await.map_err(open_error)?;
    browser
        .wait_for_settle(options.settle)
        .await
        .map_err(open_error)?;
    let page = observe(browser, None, options.budget_tokens)
        .await
        .map_err(open_error)?;
    let mut run = Explore {
        browser,
        models,
        session: models.session("explore"),
        options,
        report,
        cancel,
        memory: MemoryStore::new(),
        guard: LoopGuard::new(options.breakers),
        page,
        actions: 0,
        recent: Vec::new(),
        screenshots: Vec::new(),
        listing_url: None,
        stopped: None,
        refusals: 0,
        acted: HashSet::new(),
        checks: Vec::new(),
        unverified: Vec::new(),
        completed: false,
        final_text: None,
    };
    run.classify_start().await;
    while run.stopped.is_none() && !run.completed {
        run.explorer_context().await;
    }
    Ok(run.finish(start_url).await)
}

impl Explore<'_> {
    fn emit(&self, event: ExploreEvent) {
        self.report.emit(event);
    }

    fn warn(&self, message: String) {
        tracing::warn!("{message}");
        self.emit(ExploreEvent::Warning { message });
    }

    fn stop(&mut self, reason: ExploreStop) {
        if self.stopped.is_none() {
            tracing::info!(%reason, "exploring stops");
            self.stopped = Some(reason);
        }
    }

    /// Whether time is up or the run was cancelled (then it is stopped).
    fn interrupted(&mut self) -> bool {
        if self.cancel.is_cancelled() {
            self.stop(ExploreStop::Cancelled);
        } else if let Err(stop) = self.guard.check_time() {
            self.stop(ExploreStop::Breaker {
                reason: stop.to_string(),
            });
        }
        self.stopped.is_some()
    }

    /// A model call that gives way to cancellation; a spending limit stops exploring.
    async fn ask<T, F>(&mut self, call: F) -> Option<Result<T, LlmError>>
    where
        F: Future<Output = Result<T, LlmError>>,
    {
        // A model call in flight is cut off by the wall-time breaker too: a slow model
        // cannot keep exploring past its limit.
        let deadline = self.guard.deadline();
        let answer = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(LlmError::Cancelled),
            _ = tokio::time::sleep_until(deadline) => {
                let reason = match self.guard.check_time() {
                    Err(stop) => stop.to_string(),
                    Ok(()) => format!(
                        "time limit of {:?} reached while waiting on the model",
                        self.guard.breakers().max_duration
                    ),
                };
                self.stop(ExploreStop::Breaker { reason });
                return None;
            }
            answer = call => answer,
        };
        match answer {
            Err(LlmError::Cancelled) => {
                self.stop(ExploreStop::Cancelled);
                None
            }
            Err(LlmError::LimitExceeded(limit)) => {
                self.stop(ExploreStop::CostLimit {
                    reason: limit.to_string(),
                });
                None
            }
            other => Some(other),
        }
    }

    /// The first classification: the starting page, with no old page.
    async fn classify_start(&mut self) {
        let page = self.page.clone();
        let input = ClassifierInput {
            old_url: None,
            new_url: &page.url,
            old_page: None,
            new_page: &page.text,
            known_pages: &[],
            current_page: None,
            action: None,
        };
        let session = self.session.clone();
        let verdict = self
            .ask(async { classify(&session, &input).await.map_err(|e| e.error) })
            .await;
        let classification = match verdict {
            None => Classification::new("start_page", true, &page.title),
            Some(Ok(extracted)) => extracted.value,
            Some(Err(error)) => {
                self.warn(format!(
                    "the Classifier failed on the starting page: {error}"
                ));
                Classification::new("start_page", true, &page.title)
            }
        };
        self.enter(&classification, &page, None).await;
    }

    /// Applies a classification, reports it and screenshots a new page.
    async fn enter(
        &mut self,
        classification: &Classification,
        page: &Observation,
        via: Option<&Transition>,
    ) -> PageChange {
        let change =
            self.memory
                .apply_classification(classification, &page.url, Some(&page.title), via);
        let page_id = self.memory.current_page_id().unwrap_or("page").to_owned();
        self.emit(ExploreEvent::Classified {
            page_id: page_id.clone(),
            url: page.url.clone(),
            change,
            understanding: classification.understanding.clone(),
        });
        if change == PageChange::NewPage && self.options.screenshots {
            match self.browser.screenshot().await {
                Ok(png) => self.screenshots.push(PageScreenshot {
                    page_id,
                    url: page.url.clone(),
                    png,
                }),
                Err(error) => self.warn(format!("no screenshot of [{page_id}]: {error}")),
            }
        }
        change
    }

    /// One Explorer context: from a fresh opening message until the page changes, the
    /// Explorer is done, or exploring stops.
    async fn explorer_context(&mut self) {
        let opening = explorer_message(&self.memory.summary_for_model(), &self.recent, &self.page);
        let mut run = AgentRun::new(
            explorer_request(&self.options.task, opening),
            self.options.rounds_per_page,
            Some(Compaction::default()),
        );
        loop {
            if self.interrupted() {
                return;
            }
            let request: ChatRequest = match run.next_step() {
                Next::Done => {
                    self.after_explorer_run(&run);
                    return;
                }
                Next::CallModel(request) => request.clone(),
                Next::RunTools(calls) => {
                    let calls: Vec<(String, String, serde_json::Value)> = calls
                        .iter()
                        .map(|c| (c.id.to_owned(), c.name.to_owned(), c.input.clone()))
                        .collect();
                    let (results, handoff) = self.run_calls(calls).await;
                    run.on_tool_results(results);
                    match handoff {
                        Handoff::None => continue,
                        Handoff::PageChanged | Handoff::Done | Handoff::Stop => return,
                    }
                }
            };
            let session = self.session.clone();
            let ask = Ask::from_request(request)
                .tier(ModelTier::Orchestrator)
                .step("explorer");
            match self.ask(session.chat(ask)).await {
                None => return,
                Some(Ok(response)) => run.on_model_response(response),
                Some(Err(error)) => {
                    self.stop(ExploreStop::ModelFailed {
                        reason: error.to_string(),
                    });
                    return;
                }
            }
        }
    }

    /// The Explorer's run ended without a handoff: it answered in text, or ran out of rounds.
    /// A final answer before any action is refused like an early `done`: the next context
    /// tells the Explorer to explore first.
    fn after_explorer_run(&mut self, run: &AgentRun) {
        match run.final_text() {
            Some(_) if self.actions == 0 => {
                if self.refuse_early_done() {
                    self.recent
                        .push(format!("(answered without acting) ✗ {EXPLORE_FIRST}"));
                }
            }
            Some(text) => {
                self.warn("the Explorer answered without calling done; taken as done".to_owned());
                self.final_text = Some(text.trim().to_owned());
                self.completed = true;
            }
            None => self.stop(ExploreStop::OutOfRounds {
                rounds: run.rounds(),
                page: self.memory.current_page_id().unwrap_or("page").to_owned(),
            }),
        }
    }

    /// Counts a `done` (or final answer) before any action: `true` when the Explorer is to
    /// be told to explore first, `false` when that was the last refusal and exploring
    /// stopped.
    fn refuse_early_done(&mut self) -> bool {
        self.refusals += 1;
        if self.refusals >= self.options.done_refusals.max(1) {
            self.stop(ExploreStop::DoneRefused {
                refusals: self.refusals,
            });
            false
        } else {
            self.warn(format!(
                "the Explorer finished before acting on the page; refused ({} of {})",
                self.refusals, self.options.done_refusals
            ));
            true
        }
    }

    /// Runs the calls of one Explorer answer in order. After a handoff the rest are not run
    /// (they are answered with why), so every call still gets its result.
    async fn run_calls(
        &mut self,
        calls: Vec<(String, String, serde_json::Value)>,
    ) -> (Vec<ContentBlock>, Handoff) {
        let mut results = Vec::with_capacity(calls.len());
        let mut handoff = Handoff::None;
        for (id, name, input) in calls {
            if handoff != Handoff::None {
                let why = match handoff {
                    Handoff::PageChanged => "not run: the page changed first",
                    Handoff::Done => "not run: exploration is complete",
                    _ => "not run: exploring stopped",
                };
                results.push(ContentBlock::tool_error(id, why));
                continue;
            }
            let (outcome, next) = self.run_call(&name, &input).await;
            handoff = next;
            results.push(match outcome {
                Ok(value) => ContentBlock::tool_result(id, value.to_string()),
                Err(error) => ContentBlock::tool_error(id, error.to_string()),
            });
            if handoff == Handoff::None && self.stopped.is_some() {
                handoff = Handoff::Stop;
            }
        }
        (results, handoff)
    }

    /// The Summarizer condenses `page_id`'s observations (before leaving it, when it has
    /// many, and at the end).
    async fn summarize_page(&mut self, page_id: &str) {
        let Some(page) = self.memory.page(page_id).cloned() else {
            return;
        };
        let session = self.session.clone();
        let memory = self.memory.clone();
        let answer = self
            .ask(async {
                summarize(&session, &memory, &page)
                    .await
                    .map_err(|e| e.error)
            })
            .await;
        match answer {
            None => {}
            Some(Ok(extracted)) => {
                let summary = extracted.value.summary;
                self.memory.set_summary(&page.id, &summary);
                self.emit(ExploreEvent::Summarized {
                    page_id: page.id.clone(),
                    summary,
                });
            }
            Some(Err(error)) => {
                self.warn(format!("the Summarizer failed on [{}]: {error}", page.id))
            }
        }
    }

    /// Final summaries, the listing selectors, the Phase 1 output.
    async fn finish(mut self, start_url: &str) -> Exploration {
        if let Some(text) = self.final_text.take() {
            let page_type = self
                .memory
                .current_page_id()
                .unwrap_or("unknown")
                .to_owned();
            self.memory
                .finish(&text, &page_type, &[], &Default::default());
        }
        // Out of time or cancelled: no more model calls or browser work.
        let wrap_up = !self.cancel.is_cancelled() && self.guard.check_time().is_ok();
        if wrap_up {
            let pending: Vec<String> = self
                .memory
                .pages()
                .iter()
                .filter(|p| p.summary.is_none() || !p.observations.is_empty())
                .map(|p| p.id.clone())
                .collect();
            for page_id in pending {
                if self.cancel.is_cancelled() {
                    break;
                }
                self.summarize_page(&page_id).await;
            }
        }
        let listing = if wrap_up {
            self.infer_listing().await
        } else {
            None
        };
        if let Some(reason) = &self.stopped {
            self.emit(ExploreEvent::Stopped {
                reason: reason.to_string(),
            });
        }
        let mut output = self.memory.phase1_output(start_url, listing);
        output.stopped = self.stopped.as_ref().map(ToString::to_string);
        output.stop_kind = self.stopped.as_ref().map(|s| s.kind().to_owned());
        output.selector_checks = std::mem::take(&mut self.checks);
        output.unverified = std::mem::take(&mut self.unverified);
        let cost = self.models.meter.snapshot();
        self.emit(ExploreEvent::Finished {
            page_type: output.page_type.clone(),
            pages: self.memory.pages().len(),
            actions: self.actions,
            model_calls: cost.calls,
            input_tokens: cost.usage.input_tokens,
            output_tokens: cost.usage.output_tokens,
        });
        Exploration {
            output,
            memory: self.memory,
            screenshots: self.screenshots,
            actions: self.actions,
            completed: self.completed,
            stop: self.stopped,
            cost,
        }
    }

    /// Generalizes the job listings seen into selectors for every listing, on the page where
    /// they were seen.
    async fn infer_listing(&mut self) -> Option<crate::collect::ListingSelectors> {
        let examples = self.memory.selectors_for("job_listing").to_vec();
        if examples.is_empty() {
            return None;
        }
        let here = self.browser.url().await.ok();
        if let Some(url) = self
            .listing_url
            .clone()
            .filter(|u| here.as_ref() != Some(u))
        {
            let back = async {
                self.browser.open(&url).await?;
                self.browser.wait_for_settle(self.options.settle).await
            };
            if let Err(error) = back.await {
                self.warn(format!(
                    "could not return to the listings at {url}: {error}"
                ));
                return None;
            }
        }
        match crate::listing::infer_listing(self.browser, &examples).await {
            Ok(found) => found,
            Err(error) => {
                self.warn(format!(
                    "the listing selectors could not be generalized: {error}"
                ));
                None
            }
        }
    }
}
