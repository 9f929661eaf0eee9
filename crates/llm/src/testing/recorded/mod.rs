//! [`RecordedModel`]: a model that answers from a recording of model answers, for dry runs
//! of whole products and for tests.
//!
//! # The recording
//!
//! A JSON file: an optional `about` text and a list of `answers`. Each answer names the
//! *route* of the requests it answers, optionally narrows them down, and gives the response:
//!
//! ```json
//! {
//!   "about": "A trip planner, recorded.",
//!   "answers": [
//!     {"route": "Planner", "when": "Trip: Oslo\n", "turn": 1,
//!      "tool_calls": [{"name": "get_weather", "input": {"city": "Oslo"}}],
//!      "usage": {"input_tokens": 900, "output_tokens": 40}},
//!     {"route": "Planner", "when": "Trip: Oslo\n", "turn": 2, "text": "Pack a coat."},
//!     {"route": "Planner", "after": {"tool": "ask_user", "contains": "\"status\":\"revise\""},
//!      "tool_calls": [{"name": "revise_plan", "input": {"feedback": "{{result.feedback}}"}}]},
//!     {"route": "Forecast", "when": "City: Oslo\n", "output": {"celsius": 7, "sky": "rain"}},
//!     {"route": "classify", "n": 1, "output": {"page": "search"}},
//!     {"route": "classify", "n": 2, "output": {"page": "details"}},
//!     {"route": "Scores", "batch": {"into": "scores", "per": "\n- id: ", "items": [
//!       {"when": "- id: a1\n", "value": {"job_id": "a1", "score": 80}},
//!       {"when": "- id: b2\n", "value": {"job_id": "b2", "score": 35}}]}}
//!   ]
//! }
//! ```
//!
//! **The route** of a request, the first that applies:
//!
//! 1. the forced tool's name, when `tool_choice` forces one (structured output asked as a
//!    forced tool: the schema name, or an agent's one tool such as `classify`);
//! 2. the schema name of a `json_schema` response format;
//! 3. the agent's name, from a system prompt that starts `You are the <Name>` (`Planner`);
//! 4. otherwise `default`.
//!
//! **Narrowing it down** (every condition given must hold; without any, the answer serves
//! every request on its route):
//!
//! - `when`: a text, or a list of texts, that must all occur in the request's user messages
//!   (their text, not tool results): a phase line, a posting's URL, a section name. A key
//!   like this keeps concurrent requests apart whatever order they arrive in.
//! - `turn`: the request's turn in its conversation, from 1: one more than its assistant
//!   messages, reaction turns not counted. Derived from the request alone, so an agent loop
//!   resumed from a saved transcript, or many sessions at once, get the same answers.
//! - `n`: the n-th request on this route this model has received, from 1 (a queue, for
//!   one-shot calls told apart only by their order).
//! - `after`: `{"tool": name, "contains": text}`: the last message carries a successful
//!   result of a call to `name` (containing `text`, if given). Such an answer is a
//!   *reaction*: its turn is not counted, a string `"{{result.FIELD}}"` in its tool
//!   calls' inputs becomes that field of the (JSON) tool result, and `{{result.FIELD}}`
//!   anywhere in its `text` becomes that field in words (a list joined by `, `; missing,
//!   null or empty: `none`).
//!
//! The first answer in file order that fits wins, so list reactions and narrower answers
//! before broader ones.
//!
//! **The response**, one of:
//!
//! - `text` and/or `tool_calls` (`[{"name", "input"}]`): a text answer, or tool calls with
//!   [`StopReason::ToolUse`](crate::StopReason::ToolUse);
//! - `output`: a structured answer: a call of the forced tool with `output` as its input,
//!   or, without a forced tool, `output` as JSON text;
//! - `batch`: a structured answer `{into: [...]}` holding the `value` of every item whose
//!   `when` occurs in the request, in the order the request lists them; with `per`, the
//!   request must list exactly as many items as there are occurrences of `per`.
//!
//! `usage` is reported as recorded; without it, it is estimated at four characters a
//! token of the request and of the answer, so metering and cost work in a dry run.
//!
//! A request no answer fits fails with [`LlmError::InvalidResponse`] naming the route, the
//! request's place on it and its turn. Every answer is logged at info level as
//! `recorded model answer` (target `agent_llm::testing::recorded`).

mod format;
mod matching;

pub use format::RecordingError;

use super::log::RequestLog;
use crate::error::LlmError;
use crate::model::{ChatModel, StructuredOutputMode};
use crate::types::{ChatRequest, ChatResponse};
use async_trait::async_trait;
use format::Entry;
use matching::Facts;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

/// What the model has done so far, behind one lock.
#[derive(Debug, Default)]
struct Progress {
    /// Requests received per route.
    received: BTreeMap<String, u32>,
    /// Answers given per route.
    served_on: BTreeMap<String, usize>,
    /// Times each recorded answer was given, by its index.
    served: Vec<usize>,
    /// The route of each logged request, in the order of the request log.
    routes: Vec<String>,
}

#[derive(Debug)]
struct Shared {
    origin: String,
    answers: Vec<Entry>,
    progress: Mutex<Progress>,
}

/// The model id a [`RecordedModel`] reports unless told another: free in
/// [`dry_run_pricing`].
pub const RECORDED_MODEL: &str = "recorded";

/// A [`ChatModel`] that answers from a recording (the format is in the
/// [module documentation](self)): the one dry-run model of every product.
///
/// Deterministic and safe to share between tasks: a request's answer depends on the
/// request and, for `n` answers only, on the order requests arrive on its route. Requests
/// are recorded for assertions unless [`with_request_log`](Self::with_request_log) turns
/// that off; clones share the recording, the counts and the log. For a delay before each
/// answer wrap it in [`LatencyModel`](super::LatencyModel).
///
/// ```
/// use agent_llm::{ChatModel, ChatRequest, LlmError, ToolChoice};
/// use agent_llm::testing::RecordedModel;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = RecordedModel::from_json(r#"{"answers": [
///     {"route": "Forecast", "when": "City: Oslo", "output": {"celsius": 7},
///      "usage": {"input_tokens": 120, "output_tokens": 9}},
///     {"route": "Greeter", "turn": 1, "text": "Hello!"}
/// ]}"#, "inline").unwrap();
///
/// let forecast = ChatRequest::from_prompt("City: Oslo")
///     .with_tool_choice(ToolChoice::Tool { name: "Forecast".into() });
/// let answer = model.chat(&forecast).await.unwrap();
/// assert_eq!(answer.tool_calls()[0].2["celsius"], 7);
/// assert_eq!(answer.usage.input_tokens, 120);
///
/// let hello = ChatRequest::from_prompt("hi").with_system("You are the Greeter of a shop.");
/// assert_eq!(model.chat(&hello).await.unwrap().text(), "Hello!");
///
/// let bergen = ChatRequest::from_prompt("City: Bergen")
///     .with_tool_choice(ToolChoice::Tool { name: "Forecast".into() });
/// let error = model.chat(&bergen).await.unwrap_err();
/// assert!(matches!(error, LlmError::InvalidResponse(m) if m.contains("route \"Forecast\" (request 2")));
/// assert_eq!(model.served("Forecast"), 1);
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct RecordedModel {
    shared: Arc<Shared>,
    log: Option<RequestLog>,
    default_model: Option<String>,
    mode: StructuredOutputMode,
}

impl RecordedModel {
    /// Reads a recording file.
    ///
    /// ```
    /// use agent_llm::testing::{RecordedModel, RecordingError};
    /// let missing = RecordedModel::from_file("no/such/recording.json").unwrap_err();
    /// assert!(matches!(missing, RecordingError::Read { .. }));
    /// ```
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, RecordingError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| RecordingError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_json(&text, &path.display().to_string())
    }

    /// Parses a recording; `origin` names it in errors and logs.
    ///
    /// ```
    /// use agent_llm::testing::{RecordedModel, RecordingError};
    /// let model = RecordedModel::from_json(r#"{"answers": [{"route": "Explorer", "n": 1, "text": "Done."}]}"#, "inline").unwrap();
    /// assert_eq!(model.remaining("Explorer"), 1);
    /// let bad = RecordedModel::from_json(r#"{"answers": [{"route": "Explorer", "n": 1}]}"#, "inline").unwrap_err();
    /// assert!(matches!(bad, RecordingError::Invalid { index: 0, .. }));
    /// ```
    pub fn from_json(text: &str, origin: &str) -> Result<Self, RecordingError> {
        let answers = format::parse(text, origin)?;
        let progress = Progress {
            served: vec![0; answers.len()],
            ..Progress::default()
        };
        Ok(RecordedModel {
            shared: Arc::new(Shared {
                origin: origin.to_owned(),
                answers,
                progress: Mutex::new(progress),
            }),
            log: Some(RequestLog::default()),
            default_model: None,
            mode: StructuredOutputMode::default(),
        })
    }

    /// Sets the model reported by [`ChatModel::default_model`] and put in answers to
    /// requests that name none (default `recorded`).
    ///
    /// ```
    /// use agent_llm::{ChatModel, testing::RecordedModel};
    /// let model = RecordedModel::from_json(r#"{"answers": []}"#, "empty").unwrap();
    /// assert_eq!(model.default_model().as_deref(), Some("recorded"));
    /// let model = model.with_default_model("dry-run");
    /// assert_eq!(model.default_model().as_deref(), Some("dry-run"));
    /// ```
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.default_model = Some(model.into());
        self
    }

    /// Sets what [`ChatModel::structured_output_mode`] reports (default
    /// [`StructuredOutputMode::ForcedTool`]).
    ///
    /// ```
    /// use agent_llm::{ChatModel, StructuredOutputMode, testing::RecordedModel};
    /// let model = RecordedModel::from_json(r#"{"answers": []}"#, "empty")
    ///     .unwrap()
    ///     .with_structured_output_mode(StructuredOutputMode::JsonSchema);
    /// assert_eq!(model.structured_output_mode(), StructuredOutputMode::JsonSchema);
    /// ```
    pub fn with_structured_output_mode(mut self, mode: StructuredOutputMode) -> Self {
        self.mode = mode;
        self
    }

    /// Keeps (the default) or stops keeping every request for
    /// [`requests`](Self::requests); a long-running dry-run server turns it off.
    ///
    /// ```
    /// let model = agent_llm::testing::RecordedModel::from_json(r#"{"answers": []}"#, "empty")
    ///     .unwrap()
    ///     .with_request_log(false);
    /// assert!(model.requests().is_empty());
    /// ```
    pub fn with_request_log(mut self, keep: bool) -> Self {
        self.log = keep.then(RequestLog::default);
        self
    }

    /// Where the recording came from (the file, or what [`from_json`](Self::from_json)
    /// was told).
    ///
    /// ```
    /// let model = agent_llm::testing::RecordedModel::from_json(r#"{"answers": []}"#, "inline").unwrap();
    /// assert_eq!(model.origin(), "inline");
    /// ```
    pub fn origin(&self) -> &str {
        &self.shared.origin
    }

    /// The route of `request` (see the [module documentation](self)).
    ///
    /// ```
    /// use agent_llm::{ChatRequest, ToolChoice, testing::RecordedModel};
    /// let agent = ChatRequest::from_prompt("Go").with_system("You are the Explorer of a site.");
    /// assert_eq!(RecordedModel::route_of(&agent), "Explorer");
    /// let forced = agent.with_tool_choice(ToolChoice::Tool { name: "classify".into() });
    /// assert_eq!(RecordedModel::route_of(&forced), "classify");
    /// assert_eq!(RecordedModel::route_of(&ChatRequest::from_prompt("hi")), "default");
    /// ```
    pub fn route_of(request: &ChatRequest) -> String {
        matching::route_of(request)
    }

    /// The turn of `request` in its conversation, from 1 (see the
    /// [module documentation](self)).
    ///
    /// ```
    /// use agent_llm::{ChatRequest, Message, testing::RecordedModel};
    /// let mut request = ChatRequest::from_prompt("Plan a trip");
    /// assert_eq!(RecordedModel::turn_of(&request), 1);
    /// request.messages.push(Message::assistant("Where to?"));
    /// request.messages.push(Message::user("Oslo"));
    /// assert_eq!(RecordedModel::turn_of(&request), 2);
    /// ```
    pub fn turn_of(request: &ChatRequest) -> u32 {
        matching::turn_of(request)
    }

    /// The recorded answer to `request`, without waiting: what [`ChatModel::chat`]
    /// returns (for callers that cannot await, such as a mock HTTP server).
    ///
    /// # Errors
    ///
    /// [`LlmError::InvalidResponse`] when no recorded answer fits the request, or the one
    /// that fits cannot be built (a batch missing items, a reaction template whose field
    /// the tool result lacks).
    ///
    /// ```
    /// use agent_llm::{ChatRequest, ToolChoice, testing::RecordedModel};
    /// let model = RecordedModel::from_json(r#"{"answers": [
    ///     {"route": "Scores", "batch": {"into": "scores", "per": "- id: ", "items": [
    ///         {"when": "- id: a1\n", "value": {"job_id": "a1", "score": 80}},
    ///         {"when": "- id: b2\n", "value": {"job_id": "b2", "score": 35}}]}}
    /// ]}"#, "inline").unwrap();
    /// let batch = ChatRequest::from_prompt("Score these.\n- id: b2\n- id: a1\n")
    ///     .with_tool_choice(ToolChoice::Tool { name: "Scores".into() });
    /// let answer = model.respond(&batch).unwrap();
    /// let scores = &answer.tool_calls()[0].2["scores"];
    /// assert_eq!(scores[0]["job_id"], "b2");
    /// assert_eq!(scores[1]["job_id"], "a1");
    /// ```
    pub fn respond(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let route = matching::route_of(request);
        let mut progress = self.progress();
        if let Some(log) = &self.log {
            log.record(request);
            progress.routes.push(route.clone());
        }
        let received = progress.received.entry(route.clone()).or_default();
        *received = received.saturating_add(1);
        let facts = Facts::new(request, route, *received);
        let found = self
            .shared
            .answers
            .iter()
            .enumerate()
            .find_map(|(index, entry)| facts.matches(entry).map(|result| (index, entry, result)));
        let Some((index, entry, result)) = found else {
            return Err(LlmError::InvalidResponse(format!(
                "RecordedModel ({}): no recorded answer for route {:?} (request {} on the route, turn {})",
                self.shared.origin, facts.route, facts.n, facts.turn
            )));
        };
        let mut response = facts.respond(entry, result, &self.shared.origin)?;
        if let Some(count) = progress.served.get_mut(index) {
            *count += 1;
        }
        *progress.served_on.entry(facts.route.clone()).or_default() += 1;
        drop(progress);
        response.model = request
            .model
            .clone()
            .or_else(|| self.default_model.clone())
            .unwrap_or_else(|| RECORDED_MODEL.to_owned());
        tracing::info!(
            route = %facts.route,
            n = facts.n,
            turn = facts.turn,
            answer = index,
            recording = %self.shared.origin,
            "recorded model answer"
        );
        Ok(response)
    }

    /// Answers given on `route` so far.
    ///
    /// ```
    /// use agent_llm::{ChatRequest, testing::RecordedModel};
    /// let model = RecordedModel::from_json(
    ///     r#"{"answers": [{"route": "Greeter", "n": 1, "text": "Hi!"}, {"route": "Greeter", "n": 2, "text": "Bye!"}]}"#,
    ///     "inline",
    /// ).unwrap();
    /// let hello = ChatRequest::from_prompt("hello").with_system("You are the Greeter.");
    /// model.respond(&hello).unwrap();
    /// assert_eq!(model.served("Greeter"), 1);
    /// assert_eq!(model.remaining("Greeter"), 1);
    /// assert_eq!(model.unused(), ["Greeter #1"]);
    /// assert_eq!(model.call_count(), 1);
    /// assert_eq!(model.requests_on("Greeter")[0].messages[0].text(), "hello");
    /// assert_eq!(model.requests().len(), 1);
    /// ```
    pub fn served(&self, route: &str) -> usize {
        self.progress().served_on.get(route).copied().unwrap_or(0)
    }

    /// Recorded answers on `route` never given yet.
    pub fn remaining(&self, route: &str) -> usize {
        let progress = self.progress();
        self.shared
            .answers
            .iter()
            .zip(&progress.served)
            .filter(|(entry, served)| entry.route == route && **served == 0)
            .count()
    }

    /// Every recorded answer never given yet, as `route #index` (its place in the file,
    /// from 0): empty when a run used the whole recording.
    pub fn unused(&self) -> Vec<String> {
        let progress = self.progress();
        self.shared
            .answers
            .iter()
            .zip(&progress.served)
            .enumerate()
            .filter(|(_, (_, served))| **served == 0)
            .map(|(index, (entry, _))| format!("{} #{index}", entry.route))
            .collect()
    }

    /// Every request received so far, oldest first (empty with the log turned off).
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.log
            .as_ref()
            .map(RequestLog::requests)
            .unwrap_or_default()
    }

    /// The requests received on `route`, oldest first.
    pub fn requests_on(&self, route: &str) -> Vec<ChatRequest> {
        let routes = self.progress().routes.clone();
        self.requests()
            .into_iter()
            .zip(routes)
            .filter(|(_, on)| on == route)
            .map(|(request, _)| request)
            .collect()
    }

    /// How many requests were received (answered or not).
    pub fn call_count(&self) -> usize {
        self.progress()
            .received
            .values()
            .map(|count| *count as usize)
            .sum()
    }

    fn progress(&self) -> MutexGuard<'_, Progress> {
        // A panicking thread must not hide the counts from the others.
        self.shared
            .progress
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl ChatModel for RecordedModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.respond(request)
    }

    fn structured_output_mode(&self) -> StructuredOutputMode {
        self.mode
    }

    fn default_model(&self) -> Option<String> {
        Some(
            self.default_model
                .clone()
                .unwrap_or_else(|| RECORDED_MODEL.to_owned()),
        )
    }
}

/// The model router of a dry run: every tier on a `dry-run-<tier>` model id, so reports
/// show what was asked of each tier ([`dry_run_pricing`] prices them free).
///
/// ```
/// use agent_llm::ModelTier;
/// let router = agent_llm::testing::dry_run_router();
/// assert_eq!(router.model(ModelTier::Light), "dry-run-light");
/// ```
pub fn dry_run_router() -> crate::ModelRouter {
    crate::ModelTier::ALL.into_iter().fold(
        crate::ModelRouter::for_provider(crate::ProviderKind::Local),
        |router, tier| router.with_model(tier, format!("dry-run-{tier}")),
    )
}

/// The prices of a dry run: the models of [`dry_run_router`] and [`RECORDED_MODEL`] free,
/// so that a dry run's summary counts its tokens at $0 instead of warning that their
/// cost is unknown.
///
/// ```
/// use agent_llm::{ModelPrice, ModelTier};
/// use agent_llm::testing::{dry_run_pricing, dry_run_router};
/// let pricing = dry_run_pricing();
/// let model = dry_run_router().model(ModelTier::Primary).to_owned();
/// assert_eq!(pricing.price(&model), Some(&ModelPrice::FREE));
/// ```
pub fn dry_run_pricing() -> crate::PricingTable {
    let router = dry_run_router();
    crate::ModelTier::ALL.into_iter().fold(
        crate::PricingTable::default().with_price(RECORDED_MODEL, crate::ModelPrice::FREE),
        |pricing, tier| pricing.with_price(router.model(tier), crate::ModelPrice::FREE),
    )
}
