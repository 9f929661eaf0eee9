//! The thin async driver around [`AgentRun`]: model calls, concurrent tool calls,
//! timeouts, cancellation, observers and tracing.

use super::run::{AgentRun, Next, ToolCall, ToolCalls};
use crate::chat_span::{chat_span, record_response};
use crate::config::AgentConfig;
use crate::context::AgentContext;
use crate::events::{LoopEvent, LoopObserver};
use crate::invocation_calls::InvocationCalls;
use crate::prefix_reuse::PrefixReuse;
use crate::result::{AgentResult, StopCause};
use crate::tool::ToolError;
use agent_llm::capacity::observe_calls;
use agent_llm::{
    ChatModel, ChatRequest, ContentBlock, LlmError, Message, PromptLayout, ToolDefinition,
};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;
use tracing::instrument::Instrumented;

/// Saves a run after every step: the model's answer taken, a round's tool results taken.
/// A durable run in a graph node saves through the run's checkpoint store
/// ([`NodeContext::run_agent`](crate::graph::NodeContext::run_agent)); a failed save
/// stops the run as [`StopCause::Checkpoint`], keeping what it gathered.
#[async_trait::async_trait]
pub trait RunSaver: Send + Sync {
    /// Saves `run` as it is now.
    async fn save(&self, run: &AgentRun) -> Result<(), crate::checkpoint::CheckpointError>;
}

/// An agent ready to run: its config with the tool definitions prepared once, a model,
/// and an optional observer. Build it once and run it for many invocations.
///
/// ```
/// use agent_runtime::{AgentConfig, AgentIdentity, AgentLoop, Session};
/// use agent_llm::testing::ScriptedModel;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let config: AgentConfig<(), ()> = AgentConfig::new(AgentIdentity::new("greeter", "demo"), "Greet.");
/// let model = ScriptedModel::from_texts(["Hello!"]);
/// let agent = AgentLoop::new(config, model);
/// let session = Session::new("s1", ());
/// let result = agent.run(&session.context(agent.identity().clone()), "Say hi").await;
/// assert_eq!(result.final_text.as_deref(), Some("Hello!"));
/// # });
/// ```
pub struct AgentLoop<S, E, M> {
    config: AgentConfig<S, E>,
    definitions: Arc<[ToolDefinition]>,
    model: M,
    observer: Option<Arc<dyn LoopObserver>>,
}

impl<S, E, M> AgentLoop<S, E, M>
where
    S: Send + Sync + 'static,
    E: Send + Sync + 'static,
    M: ChatModel,
{
    /// Prepares `config` to run on `model`.
    pub fn new(config: AgentConfig<S, E>, model: M) -> Self {
        if let Err(unrendered) = crate::config::render_placeholders(&config.system_prompt, |_| None)
        {
            tracing::warn!(
                agent = %config.identity,
                placeholders = ?unrendered.missing,
                "the system prompt still has placeholders; render it with AgentConfig::rendered"
            );
        }
        let definitions = config.tools.iter().map(|tool| tool.definition()).collect();
        AgentLoop {
            config,
            definitions,
            model,
            observer: None,
        }
    }

    /// Reports loop events to `observer`.
    pub fn with_observer(mut self, observer: impl LoopObserver + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// The agent's identity.
    pub fn identity(&self) -> &crate::AgentIdentity {
        &self.config.identity
    }

    /// The config.
    pub fn config(&self) -> &AgentConfig<S, E> {
        &self.config
    }

    /// The opening request for a conversation (oldest message first).
    fn opening_request(&self, messages: Vec<Message>) -> ChatRequest {
        let config = &self.config;
        ChatRequest {
            model: config.model.clone(),
            system: (!config.system_prompt.is_empty()).then(|| config.system_prompt.clone()),
            messages,
            tools: self.definitions.clone(),
            tool_choice: None,
            max_tokens: config.max_tokens,
            temperature: config.temperature,
            response_format: None,
            stop: Vec::new(),
            cache_breakpoint: None,
        }
    }

    /// Runs one invocation to its end: the model answers, rounds run out, the overall
    /// timeout passes, the session is cancelled, or a model call fails. Everything
    /// gathered is in the result, whatever stopped it.
    pub async fn run(
        &self,
        ctx: &AgentContext<S, E>,
        initial_message: impl Into<Message>,
    ) -> AgentResult {
        let mut run = self.start(initial_message);
        self.resume(ctx, &mut run).await;
        self.result(ctx, run)
    }

    /// A new run of this agent, starting with `initial_message`, not driven yet (see
    /// [`resume`](Self::resume)).
    pub fn start(&self, initial_message: impl Into<Message>) -> AgentRun {
        self.start_conversation(vec![initial_message.into()])
    }

    /// A new run answering a conversation so far (oldest first, the last message the
    /// user's), not driven yet: a chat turn's history becomes the run's transcript.
    pub fn start_conversation(&self, messages: Vec<Message>) -> AgentRun {
        let run = AgentRun::new(
            self.opening_request(messages),
            self.config.max_rounds,
            self.config.compaction,
        );
        if self.config.answer_at_last_round {
            run.answering_at_last_round()
        } else {
            run
        }
    }

    /// Runs one invocation answering a conversation (see
    /// [`start_conversation`](Self::start_conversation) and [`run`](Self::run)).
    pub async fn run_conversation(
        &self,
        ctx: &AgentContext<S, E>,
        messages: Vec<Message>,
    ) -> AgentResult {
        let mut run = self.start_conversation(messages);
        self.resume(ctx, &mut run).await;
        self.result(ctx, run)
    }

    /// The result of a run driven in `ctx`.
    pub fn result(&self, ctx: &AgentContext<S, E>, run: AgentRun) -> AgentResult {
        let parts = run.into_parts();
        AgentResult {
            scratchpad: ctx.scratchpad().snapshot(),
            messages_out: ctx.messages_out(),
            usage: parts.usage,
            round_usage: parts.round_usage,
            rounds_used: parts.rounds,
            final_text: parts.final_text,
            stop: parts.stop,
            transcript: parts.transcript,
        }
    }

    /// Drives a run (new, or restored from a saved [`AgentRun`]) until it is done.
    pub async fn resume(&self, ctx: &AgentContext<S, E>, run: &mut AgentRun) {
        self.resume_saving(ctx, run, None).await;
    }

    /// Like [`resume`](Self::resume), handing the run to `saver` after every step.
    pub async fn resume_saving(
        &self,
        ctx: &AgentContext<S, E>,
        run: &mut AgentRun,
        saver: Option<&dyn RunSaver>,
    ) {
        let agent = &self.config.identity;
        let span = tracing::info_span!(
            "invoke_agent",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.name = %agent.name,
            agent.domain = %agent.domain,
            session.id = %ctx.session_id(),
        );
        let interrupted = {
            // The loop's model calls and its tools' are heard: time queued for the model
            // server is left out of the timeouts, and progress is reported.
            let calls = InvocationCalls::observer(ctx, self.observer.clone());
            // Made inside the select, not bound first: a future held in a local and then
            // moved in would take its room in this future twice.
            tokio::select! {
                biased;
                _ = ctx.cancellation().cancelled() => Some(StopCause::Cancelled),
                _ = ctx.wait_clock().work_for(self.config.overall_timeout) => {
                    Some(StopCause::Timeout(self.config.overall_timeout))
                }
                _ = observe_calls(calls, self.drive(ctx, run, saver).instrument(span)) => None,
            }
        };
        if let Some(cause) = interrupted {
            tracing::warn!(agent = %agent, ?cause, "agent run interrupted; keeping what it gathered");
            run.stop(cause);
        }
    }

    async fn drive(
        &self,
        ctx: &AgentContext<S, E>,
        run: &mut AgentRun,
        saver: Option<&dyn RunSaver>,
    ) {
        // A round is one model call and the tool calls it asks for: both run in its span.
        let mut round_span = tracing::Span::none();
        // The previous round's prompt, for the share of each prompt that repeats it.
        let mut previous_prompt: Option<PromptLayout> = None;
        loop {
            // A model that answers at once never lets the select above see the
            // cancellation: a cancelled run starts no further step.
            if ctx.cancellation().is_cancelled() {
                run.stop(StopCause::Cancelled);
                return;
            }
            let rounds_done = run.rounds();
            match run.next_step() {
                Next::Done => return,
                Next::CallModel(request) => {
                    let round = rounds_done + 1;
                    if let Some(Err(limit)) = ctx.meter().map(|meter| meter.check()) {
                        run.stop(StopCause::LimitExceeded(limit));
                        continue;
                    }
                    round_span = tracing::info_span!("agent.round", round);
                    self.observe(|| LoopEvent::RoundStarted { round });
                    // The answer is taken in this statement, so none of it waits in the
                    // future while the run is saved.
                    let answered = match self.call_model(request, &round_span).await {
                        Ok(response) => {
                            let usage = response.usage;
                            if let Some(meter) = ctx.meter() {
                                meter.record(&self.served_model(request, &response), usage);
                                let prompt = PromptLayout::of(request);
                                meter.record_prefix(PrefixReuse::of_call(
                                    &prompt,
                                    previous_prompt.as_ref(),
                                    usage.prompt_tokens(),
                                ));
                                previous_prompt = Some(prompt);
                            }
                            run.on_model_response(response);
                            self.observe(|| LoopEvent::Usage {
                                round: run.rounds(),
                                usage,
                            });
                            true
                        }
                        Err(LlmError::LimitExceeded(limit)) => {
                            run.stop(StopCause::LimitExceeded(limit));
                            false
                        }
                        Err(LlmError::Cancelled) => {
                            run.stop(StopCause::Cancelled);
                            false
                        }
                        Err(error) => {
                            ctx.parts().report_model_error(&error);
                            run.stop(StopCause::ModelError(error));
                            false
                        }
                    };
                    if answered {
                        save(saver, run).await;
                    }
                }
                Next::RunTools(calls) => {
                    let results = self
                        .run_tools(ctx, calls, rounds_done)
                        .instrument(round_span.clone())
                        .await;
                    if let Some((removed, kept)) = run.on_tool_results(results) {
                        self.observe(|| LoopEvent::Compacted { removed, kept });
                    }
                    if let Some(reason) = ctx.ending() {
                        run.end(reason);
                    }
                    save(saver, run).await;
                }
            }
        }
    }

    /// Asks the model, retrying as configured, in a `chat` span under the `round` span
    /// (made in the round's scope: only the chat span is entered while the call runs).
    async fn call_model(
        &self,
        request: &ChatRequest,
        round: &tracing::Span,
    ) -> Result<agent_llm::ChatResponse, LlmError> {
        let span = round.in_scope(|| chat_span(request));
        let response = self
            .config
            .retry
            .run(None, |_| self.model.chat(request))
            .instrument(span.clone())
            .await?;
        record_response(&span, &response);
        Ok(response)
    }

    /// Why `call` (the `index`-th of `calls`) is not run, if it is not: the run was ended
    /// by an earlier call, the answer asked for too many calls, or it repeats the previous
    /// round's call. The model gets the reason as the call's error result.
    fn refusal(
        &self,
        ctx: &AgentContext<S, E>,
        calls: &ToolCalls<'_>,
        index: usize,
        call: &ToolCall<'_>,
    ) -> Option<String> {
        if let Some(reason) = ctx.ending() {
            return Some(format!(
                "Not run: an earlier call ended the run ({reason})."
            ));
        }
        let cap = self.config.max_calls_per_turn.unwrap_or(usize::MAX);
        if index >= cap {
            Some(format!(
                "Not run: at most {cap} tool calls are run from one answer. Make this call again in your next turn if it is still needed."
            ))
        } else if self.config.refuse_repeated_calls && calls.repeats(call) {
            tracing::warn!(tool = %call.name, "the model repeated its previous call; not run again");
            Some(format!(
                "You made this same {} call in your previous turn and have its result above. \
                 Use that result instead of calling again, or finish.",
                call.name
            ))
        } else {
            None
        }
    }

    /// Runs the round's calls, concurrently or (with sequential tools) one after the
    /// other; results come back in call order.
    ///
    /// The futures of the tool steps are `async move` blocks rather than `async fn`s: an
    /// `async fn` keeps its arguments twice in its state, and a session's future holds
    /// the largest step it may wait in.
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn would keep its arguments twice in the session's future"
    )]
    fn run_tools<'a>(
        &'a self,
        ctx: &'a AgentContext<S, E>,
        calls: ToolCalls<'a>,
        round: u32,
    ) -> impl Future<Output = Vec<ContentBlock>> + Send + 'a {
        async move {
            if !self.config.sequential_tools && calls.len() > 1 {
                // A refusal is decided before any call of the round runs.
                let all = calls.iter().enumerate().map(|(index, call)| {
                    let refused = self.refusal(ctx, &calls, index, &call);
                    async move {
                        match refused {
                            Some(refused) => ContentBlock::tool_error(call.id, refused),
                            None => self.run_tool(ctx, call, round).await,
                        }
                    }
                });
                return futures::future::join_all(all).await;
            }
            // One call at a time (in order, or the only one) goes through a single await,
            // so the future keeps room for one running tool.
            let mut results = Vec::with_capacity(calls.len());
            for (index, call) in calls.iter().enumerate() {
                if let Some(refused) = self.refusal(ctx, &calls, index, &call) {
                    results.push(ContentBlock::tool_error(call.id, refused));
                    continue;
                }
                results.push(self.run_tool(ctx, call, round).await);
            }
            results
        }
    }

    /// Runs `call`; the model gets what the tool returns, or its error. Only the tool's
    /// own future (boxed) and its span wait across the await: the steps around it are
    /// plain functions.
    fn run_tool<'a>(
        &'a self,
        ctx: &'a AgentContext<S, E>,
        call: ToolCall<'a>,
        round: u32,
    ) -> impl Future<Output = ContentBlock> + Send + 'a {
        let mut running = self.start_tool(ctx, call, round);
        async move {
            let outcome = self.tool_outcome(ctx, &mut running.future).await;
            self.finish_tool(running, outcome, round)
        }
    }

    /// Starts the tool `call` names in its `execute_tool` span (an unknown tool's future
    /// fails at once).
    fn start_tool<'a>(
        &'a self,
        ctx: &'a AgentContext<S, E>,
        call: ToolCall<'a>,
        round: u32,
    ) -> RunningTool<'a> {
        self.observe(|| LoopEvent::ToolCalled {
            round,
            name: call.name.into(),
            id: call.id.into(),
        });
        let span = tracing::info_span!(
            "execute_tool",
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %call.name,
            gen_ai.tool.call.id = %call.id,
        );
        let future: ToolFuture<'a> = match self
            .config
            .tools
            .iter()
            .find(|tool| tool.name() == call.name)
        {
            Some(tool) => span.in_scope(|| tool.execute(call.input, ctx)),
            None => {
                let unknown = ToolError::UnknownTool(call.name.into());
                Box::pin(std::future::ready(Err(unknown)))
            }
        };
        RunningTool {
            call,
            future: future.instrument(span),
            // Read the clock only for an observer.
            started: self.observer.as_ref().map(|_| Instant::now()),
        }
    }

    /// Drives a tool's future to its end, within the round timeout.
    async fn tool_outcome(
        &self,
        ctx: &AgentContext<S, E>,
        running: &mut Instrumented<ToolFuture<'_>>,
    ) -> Result<Value, ToolError> {
        // Most tools finish on their first poll; only a tool that waits gets a timer.
        if let std::task::Poll::Ready(outcome) = futures::poll!(&mut *running) {
            return outcome;
        }
        // The round timeout measures work: time spent waiting at gates or in the model
        // server's queue is left out. Its timer is boxed: kept inline, it would make every
        // session's future bigger for the tools that wait only.
        let limit = self.config.round_timeout;
        tokio::select! {
            outcome = running => outcome,
            () = Box::pin(ctx.wait_clock().work_for(limit)) => Err(ToolError::Timeout(limit)),
        }
    }

    /// Reports a finished tool call and turns its outcome into the model's result block.
    fn finish_tool(
        &self,
        running: RunningTool<'_>,
        outcome: Result<Value, ToolError>,
        round: u32,
    ) -> ContentBlock {
        let RunningTool { call, started, .. } = running;
        crate::process_metrics::tool_call(call.name, outcome.is_ok());
        self.observe(|| LoopEvent::ToolFinished {
            round,
            name: call.name.into(),
            id: call.id.into(),
            ok: outcome.is_ok(),
            elapsed: started.map(|s| s.elapsed()).unwrap_or_default(),
        });
        match outcome {
            Ok(Value::String(text)) => ContentBlock::tool_result(call.id, text),
            Ok(value) => ContentBlock::tool_result(call.id, value.to_string()),
            Err(error) => {
                tracing::debug!(tool = %call.name, %error, "tool call failed; the model is told");
                ContentBlock::tool_error(call.id, error.to_string())
            }
        }
    }

    /// The model that answered, for pricing: as the response names it, else as asked.
    fn served_model(&self, request: &ChatRequest, response: &agent_llm::ChatResponse) -> String {
        if !response.model.is_empty() {
            return response.model.clone();
        }
        request
            .model
            .clone()
            .or_else(|| self.model.default_model())
            .unwrap_or_default()
    }

    fn observe(&self, event: impl FnOnce() -> LoopEvent) {
        if let Some(observer) = &self.observer {
            observer.on_event(&self.config.identity, &event());
        }
    }
}

/// What a tool's `execute` returns: its work, boxed.
type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send + 'a>>;

/// A tool call under way: the tool's future in its span, and what its end reports.
struct RunningTool<'a> {
    call: ToolCall<'a>,
    future: Instrumented<ToolFuture<'a>>,
    started: Option<Instant>,
}

/// Hands `run` to `saver`, stopping it when the save fails.
async fn save(saver: Option<&dyn RunSaver>, run: &mut AgentRun) {
    if let Some(saver) = saver
        && let Err(error) = saver.save(run).await
    {
        tracing::error!(%error, "the agent run could not be saved; stopping it");
        run.stop(StopCause::Checkpoint(error.to_string()));
    }
}
