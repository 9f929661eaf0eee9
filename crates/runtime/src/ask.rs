//! [`Ask`]: the one way a node or a tool asks a model, through its session's model,
//! router and meter: for a typed answer (`Session::extract`, `AgentContext::extract`,
//! `NodeContext::extract`) or, for an agent that answers with tool calls or text, the
//! request as it is (`Session::chat`, `NodeContext::chat`).

use std::future::Future;
use std::sync::Arc;

use agent_llm::{
    ChatModel, ChatRequest, ChatResponse, ExtractError, ExtractOptions, Extracted, LlmError,
    ModelTier, extract_with,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::metered::MeteredModel;
use crate::session_parts::SessionParts;

/// One structured-output question: the prompt, the tier whose model answers it, the step
/// its cost is counted under, and how often an invalid answer is asked again.
///
/// Asked with `extract::<T>(ask)` on a [`Session`](crate::Session), an
/// [`AgentContext`](crate::AgentContext) or a [`NodeContext`](crate::graph::NodeContext):
/// the session's model answers, on the model id its router gives the tier; a reached
/// limit of the session's meter refuses each attempt before it is made, and every
/// attempt's usage is recorded on the meter (under the step, when named); cancelling the
/// session (or the run) stops the call with [`LlmError::Cancelled`].
///
/// ```
/// use agent_llm::{ModelTier, testing::ScriptedModel};
/// use agent_runtime::{Ask, CostLimits, CostMeter, Session};
/// use std::sync::Arc;
/// #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
/// struct Verdict { fits: bool }
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let meter = CostMeter::new(CostLimits::default());
/// let session: Session<(), ()> = Session::new("s1", ())
///     .with_model(Arc::new(ScriptedModel::from_texts([r#"{"fits": true}"#])))
///     .with_meter(meter.clone());
/// let ask = Ask::new("Does a Rust job fit a Rust engineer?")
///     .system("Answer as JSON.")
///     .tier(ModelTier::Light)
///     .step("screen");
/// let verdict = session.extract::<Verdict>(ask).await.unwrap();
/// assert!(verdict.value.fits);
/// assert_eq!(meter.snapshot().calls_by_step["screen"], 1);
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct Ask {
    request: ChatRequest,
    tier: Option<ModelTier>,
    step: Option<String>,
    options: ExtractOptions,
}

impl Ask {
    /// A question with this user prompt.
    pub fn new(prompt: impl Into<String>) -> Self {
        Ask::from_request(ChatRequest::from_prompt(prompt))
    }

    /// A question made of a whole request (messages, model, sampling); `extract` adds
    /// the answer's schema to it.
    pub fn from_request(request: ChatRequest) -> Self {
        Ask {
            request,
            tier: None,
            step: None,
            options: ExtractOptions::default(),
        }
    }

    /// Sets the system prompt.
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.request.system = Some(system.into());
        self
    }

    /// Answered by the model the session's router gives `tier` (without a router, by the
    /// model the request names, or else the model's default).
    pub fn tier(mut self, tier: ModelTier) -> Self {
        self.tier = Some(tier);
        self
    }

    /// Answered by this model id, whatever the router says.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.tier = None;
        self.request.model = Some(model.into());
        self
    }

    /// Counts the call's cost under `step` on the meter (see `CostMeter::for_step`).
    pub fn step(mut self, step: impl Into<String>) -> Self {
        self.step = Some(step.into());
        self
    }

    /// Sets the sampling temperature.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.request.temperature = Some(temperature);
        self
    }

    /// Sets the answer's token limit (of the first attempt: `extract` gives an answer cut
    /// off at the limit more room when it asks again).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.request.max_tokens = Some(max_tokens);
        self
    }

    /// Calls in all, the first included (default 3): an invalid answer is asked again
    /// until this is reached.
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.options.max_attempts = attempts.max(1);
        self
    }

    /// Sends the answer's schema without its field descriptions, for a system prompt
    /// that already says what each field holds (`ExtractOptions::field_descriptions`).
    pub fn without_field_descriptions(mut self) -> Self {
        self.options.field_descriptions = false;
        self
    }

    /// Names the tool the answer is given through, with its description (in forced-tool
    /// mode; by default the answer type's name and none).
    pub fn tool(mut self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.options.name = Some(name.into());
        self.options.description = Some(description.into());
        self
    }
}

/// The model, request and meter an ask goes to, or why it cannot be asked.
fn prepared<S, E>(
    session: &SessionParts<S, E>,
    ask: Ask,
) -> Result<(Arc<dyn ChatModel>, ChatRequest, ExtractOptions), LlmError> {
    let Some(model) = session.model.as_ref() else {
        return Err(LlmError::Config(format!(
            "session {} has no model to ask (Session::with_model)",
            session.id
        )));
    };
    let Ask {
        mut request,
        tier,
        step,
        options,
    } = ask;
    if let (Some(tier), Some(router)) = (tier, session.router.as_ref()) {
        request.model = Some(router.model(tier).to_owned());
    }
    let model: Arc<dyn ChatModel> = match &session.meter {
        Some(meter) => {
            let meter = match &step {
                Some(step) => meter.for_step(step),
                None => meter.clone(),
            };
            Arc::new(MeteredModel::new(Arc::clone(model), meter))
        }
        None => Arc::clone(model),
    };
    Ok((model, request, options))
}

/// Runs `call` unless the session or `cancel` is cancelled first or meanwhile.
async fn unless_cancelled<T, S, E>(
    session: &SessionParts<S, E>,
    cancel: Option<&CancellationToken>,
    cancelled: impl FnOnce() -> T,
    call: impl Future<Output = T>,
) -> T {
    let run_cancel = cancel.unwrap_or(&session.cancel);
    // Cancellation first: a call on a cancelled session or run is never made.
    tokio::select! {
        biased;
        () = session.cancel.cancelled() => cancelled(),
        () = run_cancel.cancelled() => cancelled(),
        outcome = call => outcome,
    }
}

/// Sends the ask's request as it is (tools and all) to the session's model: the plain
/// metered call, for an agent that answers with tool calls or text rather than a typed
/// value. Stops early when `cancel` (or the session's token) fires.
pub(crate) async fn chat<S, E>(
    session: &SessionParts<S, E>,
    cancel: Option<&CancellationToken>,
    ask: Ask,
) -> Result<ChatResponse, LlmError> {
    let (model, request, _) = prepared(session, ask)?;
    let call = async move { model.chat(&request).await };
    let answer = unless_cancelled(session, cancel, || Err(LlmError::Cancelled), call).await;
    if let Err(error) = &answer {
        session.report_model_error(error);
    }
    answer
}

/// Asks the session's model; stops early when `cancel` (or the session's token) fires.
pub(crate) async fn extract<T, S, E>(
    session: &SessionParts<S, E>,
    cancel: Option<&CancellationToken>,
    ask: Ask,
) -> Result<Extracted<T>, ExtractError>
where
    T: JsonSchema + DeserializeOwned,
{
    let refused = |error: LlmError| ExtractError {
        error,
        attempts: 0,
        usage: Vec::new(),
    };
    let (model, request, options) = prepared(session, ask).map_err(refused)?;
    let call = async move { extract_with::<T, _>(model.as_ref(), request, options).await };
    let answer =
        unless_cancelled(session, cancel, || Err(refused(LlmError::Cancelled)), call).await;
    if let Err(failed) = &answer {
        session.report_model_error(&failed.error);
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Session;
    use crate::cost::{CostLimits, CostMeter};
    use agent_llm::testing::ScriptedModel;
    use agent_llm::{Limit, ModelRouter, ProviderKind};

    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    struct Count {
        n: u32,
    }

    fn session(model: ScriptedModel) -> Session<(), ()> {
        Session::new("s", ()).with_model(Arc::new(model))
    }

    #[tokio::test]
    async fn the_tier_picks_the_routers_model_and_the_meter_counts_every_attempt() {
        let model = ScriptedModel::from_texts(["not json", r#"{"n": 2}"#]);
        let meter = CostMeter::new(CostLimits::default());
        let router = ModelRouter::for_provider(ProviderKind::OpenAi)
            .with_model(ModelTier::Light, "small-one");
        let session = session(model.clone())
            .with_router(router)
            .with_meter(meter.clone());
        let out = session
            .extract::<Count>(Ask::new("count").tier(ModelTier::Light).step("count"))
            .await
            .unwrap();
        assert_eq!((out.value.n, out.attempts), (2, 2));
        let sent = model.requests();
        assert_eq!(sent[0].model.as_deref(), Some("small-one"));
        let spent = meter.snapshot();
        assert_eq!((spent.calls, spent.calls_by_step["count"]), (2, 2));
    }

    #[tokio::test]
    async fn a_reached_limit_refuses_the_call_before_it_is_made() {
        let model = ScriptedModel::from_texts([r#"{"n": 1}"#]);
        let meter = CostMeter::new(CostLimits {
            max_calls: Some(0),
            ..CostLimits::default()
        });
        let session = session(model.clone()).with_meter(meter);
        let error = session
            .extract::<Count>(Ask::new("count"))
            .await
            .unwrap_err();
        assert!(matches!(
            error.error,
            LlmError::LimitExceeded(Limit::Calls { .. })
        ));
        assert!(model.requests().is_empty());
    }

    #[tokio::test]
    async fn a_session_without_a_model_says_so() {
        let session: Session<(), ()> = Session::new("s9", ());
        let error = session
            .extract::<Count>(Ask::new("count"))
            .await
            .unwrap_err();
        assert!(matches!(&error.error, LlmError::Config(m) if m.contains("s9")));
    }

    #[tokio::test]
    async fn a_cancelled_session_makes_no_call() {
        let model = ScriptedModel::from_texts([r#"{"n": 1}"#]);
        let session = session(model.clone());
        session.cancellation().cancel();
        let error = session
            .extract::<Count>(Ask::new("count"))
            .await
            .unwrap_err();
        assert_eq!(error.error, LlmError::Cancelled);
        assert!(model.requests().is_empty());
    }

    #[tokio::test]
    async fn a_node_asks_until_its_run_is_cancelled_even_if_the_session_is_not() {
        use crate::graph::{NodeContext, RunContext};
        let model = ScriptedModel::from_texts([r#"{"n": 1}"#]);
        let session = session(model.clone());
        let mut run = RunContext::standalone("run-1");
        let run_cancel = CancellationToken::new();
        run.cancel = std::sync::Arc::new(run_cancel.clone());
        let node = NodeContext::new(run, session.clone(), None, Default::default());
        run_cancel.cancel();
        let error = node.extract::<Count>(Ask::new("count")).await.unwrap_err();
        assert_eq!(error.error, LlmError::Cancelled);
        assert!(model.requests().is_empty());
        // The session itself still asks.
        let answer = session.extract::<Count>(Ask::new("count")).await.unwrap();
        assert_eq!(answer.value.n, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn cancelling_the_session_stops_a_call_in_flight() {
        let slow = agent_llm::testing::LatencyModel::new(
            ScriptedModel::from_texts([r#"{"n": 1}"#]),
            std::time::Duration::from_secs(60),
        );
        let session: Session<(), ()> = Session::new("s", ()).with_model(Arc::new(slow));
        let cancel = session.cancellation().clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            cancel.cancel();
        });
        let error = session
            .extract::<Count>(Ask::new("count"))
            .await
            .unwrap_err();
        assert_eq!(error.error, LlmError::Cancelled);
    }

    #[tokio::test]
    async fn a_plain_chat_sends_the_request_as_it_is_routed_and_metered() {
        use agent_llm::{ChatRequest, ToolDefinition};
        let model = ScriptedModel::from_texts(["clicked"]);
        let meter = CostMeter::new(CostLimits::default());
        let router = ModelRouter::for_provider(ProviderKind::OpenAi)
            .with_model(ModelTier::Orchestrator, "big-one");
        let session = session(model.clone())
            .with_router(router)
            .with_meter(meter.clone());
        let mut request = ChatRequest::from_prompt("next action?");
        request.add_tool(ToolDefinition::new(
            "click",
            "Clicks an element",
            serde_json::json!({"type": "object"}),
        ));
        let ask = Ask::from_request(request)
            .tier(ModelTier::Orchestrator)
            .step("explorer");
        let answer = session.chat(ask).await.unwrap();
        assert_eq!(answer.text(), "clicked");
        let sent = &model.requests()[0];
        assert_eq!(sent.model.as_deref(), Some("big-one"));
        assert_eq!(sent.tools[0].name, "click");
        assert_eq!(meter.snapshot().calls_by_step["explorer"], 1);
        session.cancellation().cancel();
        let refused = session.chat(Ask::new("again")).await.unwrap_err();
        assert_eq!(refused, LlmError::Cancelled);
        assert_eq!(model.requests().len(), 1);
    }
}
