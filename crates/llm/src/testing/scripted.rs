//! [`ScriptedModel`]: a model that plays back a script.

use super::log::RequestLog;
use super::responses;
use crate::error::LlmError;
use crate::model::{ChatModel, StructuredOutputMode};
use crate::types::{ChatRequest, ChatResponse};
use async_trait::async_trait;
use serde_json::Value;
use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex};

type Responder = dyn Fn(&ChatRequest) -> Result<ChatResponse, LlmError> + Send + Sync;

struct Script {
    queue: Mutex<VecDeque<Result<ChatResponse, LlmError>>>,
    responder: Option<Box<Responder>>,
}

/// A [`ChatModel`] that answers from a script: a queue of canned results, a closure over
/// the request, or both (the queue first, then the closure).
///
/// Every request is recorded before it is answered, so a test can check what an agent
/// sent ([`requests`](Self::requests), [`last_request`](Self::last_request),
/// [`call_count`](Self::call_count)). When the queue is empty and there is no closure,
/// the call fails with [`LlmError::InvalidResponse`]
/// (`ScriptedModel: no scripted response left for call N`) rather than panicking.
///
/// Returned responses with an empty `id` get `scripted_<call>`; an empty `model` becomes
/// the request's model, else [`with_default_model`](Self::with_default_model)'s, else
/// `scripted`. Clones share the script and the log, so keep a clone to inspect after
/// handing the model to an agent.
///
/// ```
/// use agent_llm::{ChatModel, ChatRequest, LlmError, StopReason, testing::ScriptedModel};
/// use serde_json::json;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = ScriptedModel::new(vec![
///     ScriptedModel::tool_call_response("call_1", "get_time", json!({"timezone": "UTC"})),
///     ScriptedModel::text_response("It is noon."),
/// ]);
/// let first = model.chat(&ChatRequest::from_prompt("What time is it?")).await.unwrap();
/// assert_eq!(first.stop_reason, StopReason::ToolUse);
/// let second = model.chat(&ChatRequest::from_prompt("and now?")).await.unwrap();
/// assert_eq!(second.text(), "It is noon.");
/// assert_eq!(model.call_count(), 2);
/// assert_eq!(model.last_request().unwrap().messages[0].text(), "and now?");
/// let third = model.chat(&ChatRequest::from_prompt("again")).await;
/// assert!(matches!(third, Err(LlmError::InvalidResponse(m)) if m.contains("call 3")));
/// # });
/// ```
#[derive(Clone)]
pub struct ScriptedModel {
    script: Arc<Script>,
    log: RequestLog,
    default_model: Option<String>,
    mode: StructuredOutputMode,
}

impl fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("remaining", &self.remaining())
            .field("has_closure", &self.script.responder.is_some())
            .field("calls", &self.call_count())
            .field("default_model", &self.default_model)
            .field("mode", &self.mode)
            .finish()
    }
}

impl ScriptedModel {
    fn build(
        queue: VecDeque<Result<ChatResponse, LlmError>>,
        responder: Option<Box<Responder>>,
    ) -> Self {
        ScriptedModel {
            script: Arc::new(Script {
                queue: Mutex::new(queue),
                responder,
            }),
            log: RequestLog::default(),
            default_model: None,
            mode: StructuredOutputMode::default(),
        }
    }

    /// Answers with these responses, one per call, in order.
    pub fn new(responses: Vec<ChatResponse>) -> Self {
        Self::from_results(responses.into_iter().map(Ok))
    }

    /// Answers with these results, one per call, in order; errors are returned as they are,
    /// which is how a test makes a call fail.
    ///
    /// ```
    /// use agent_llm::{ChatModel, ChatRequest, LlmError, testing::ScriptedModel};
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let model = ScriptedModel::from_results([
    ///     Err(LlmError::Timeout("read".into())),
    ///     Ok(ScriptedModel::text_response("ok")),
    /// ]);
    /// assert!(model.chat(&ChatRequest::from_prompt("1")).await.is_err());
    /// assert_eq!(model.chat(&ChatRequest::from_prompt("2")).await.unwrap().text(), "ok");
    /// # });
    /// ```
    pub fn from_results(results: impl IntoIterator<Item = Result<ChatResponse, LlmError>>) -> Self {
        Self::build(results.into_iter().collect(), None)
    }

    /// Answers with these texts as final answers ([`crate::StopReason::EndTurn`]), one per
    /// call, in order.
    ///
    /// ```
    /// let model = agent_llm::testing::ScriptedModel::from_texts(["a", "b"]);
    /// assert_eq!(model.remaining(), 2);
    /// ```
    pub fn from_texts<S: Into<String>>(texts: impl IntoIterator<Item = S>) -> Self {
        Self::new(texts.into_iter().map(responses::text).collect())
    }

    /// Answers every call with the closure's result for the request.
    ///
    /// ```
    /// use agent_llm::{ChatModel, ChatRequest, testing::ScriptedModel};
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let echo = ScriptedModel::from_fn(|request| {
    ///     let prompt = request.messages.last().map(|m| m.text()).unwrap_or_default();
    ///     Ok(ScriptedModel::text_response(format!("you said: {prompt}")))
    /// });
    /// let answer = echo.chat(&ChatRequest::from_prompt("hi")).await.unwrap();
    /// assert_eq!(answer.text(), "you said: hi");
    /// # });
    /// ```
    pub fn from_fn<F>(responder: F) -> Self
    where
        F: Fn(&ChatRequest) -> Result<ChatResponse, LlmError> + Send + Sync + 'static,
    {
        Self::build(VecDeque::new(), Some(Box::new(responder)))
    }

    /// Sets the model reported by [`ChatModel::default_model`] and used in responses to
    /// requests that name none.
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.default_model = Some(model.into());
        self
    }

    /// Sets what [`ChatModel::structured_output_mode`] reports (default
    /// [`StructuredOutputMode::ForcedTool`]).
    pub fn with_structured_output_mode(mut self, mode: StructuredOutputMode) -> Self {
        self.mode = mode;
        self
    }

    /// Appends a response to the queue (shared with every clone).
    pub fn push_response(&self, response: ChatResponse) {
        self.push_result(Ok(response));
    }

    /// Appends a result (a response or an error) to the queue.
    pub fn push_result(&self, result: Result<ChatResponse, LlmError>) {
        self.queue().push_back(result);
    }

    /// Queued results not yet returned (the closure, if any, is not counted).
    pub fn remaining(&self) -> usize {
        self.queue().len()
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.log.requests()
    }

    /// The most recent request, if any.
    pub fn last_request(&self) -> Option<ChatRequest> {
        self.log.last()
    }

    /// How many calls were made (including those that failed).
    pub fn call_count(&self) -> usize {
        self.log.len()
    }

    /// Forgets the recorded requests (the script is unchanged).
    pub fn clear_requests(&self) {
        self.log.clear();
    }

    /// A final text answer with a plausible usage; see [`responses::text`].
    pub fn text_response(text: impl Into<String>) -> ChatResponse {
        responses::text(text)
    }

    /// An answer calling one tool, with a plausible usage; see [`responses::tool_call`].
    pub fn tool_call_response(
        id: impl Into<String>,
        name: impl Into<String>,
        input: Value,
    ) -> ChatResponse {
        responses::tool_call(id, name, input)
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<Result<ChatResponse, LlmError>>> {
        self.script
            .queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn next_result(&self, call: usize, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let queued = self.queue().pop_front();
        match (queued, &self.script.responder) {
            (Some(result), _) => result,
            (None, Some(responder)) => responder(request),
            (None, None) => Err(LlmError::InvalidResponse(format!(
                "ScriptedModel: no scripted response left for call {call}"
            ))),
        }
    }
}

#[async_trait]
impl ChatModel for ScriptedModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let call = self.log.record(request);
        let mut response = self.next_result(call, request)?;
        tracing::debug!(call, stop_reason = ?response.stop_reason, "ScriptedModel answered");
        if response.id.is_empty() {
            response.id = format!("scripted_{call}");
        }
        if response.model.is_empty() {
            response.model = request
                .model
                .clone()
                .or_else(|| self.default_model.clone())
                .unwrap_or_else(|| "scripted".to_owned());
        }
        Ok(response)
    }

    fn structured_output_mode(&self) -> StructuredOutputMode {
        self.mode
    }

    fn default_model(&self) -> Option<String> {
        self.default_model.clone()
    }
}
