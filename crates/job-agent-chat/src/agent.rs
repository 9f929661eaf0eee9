//! [`JobAgentChat`]: a chat turn routed to one of two agents, each a full tool loop on the
//! runtime, answering the whole conversation. It is agent-server's [`ChatAgent`], so the
//! OpenAI-compatible front serves it.

use std::sync::Arc;
use std::time::Duration;

use agent_llm::{ChatModel, LlmError, Message, ModelRouter, ModelTier};
use agent_runtime::{
    AgentConfig, AgentIdentity, AgentLoop, CostLimits, CostMeter, EventSink, LoopEvent,
    MeterLabels, Session, StopCause,
};
use agent_server::chat::{
    ChatAgent, ChatAgentError, ChatFile, ChatMessage, ChatProgress, ChatReply, ChatRole, ChatTurn,
    ChatUsage, FinishReason,
};
use async_trait::async_trait;
use tracing::Instrument;

use crate::router::{Intent, classify};
use crate::tools::{Services, app_prep_tools, job_search_tools};

/// The job-search agent's system prompt.
pub const JOB_SEARCH_PROMPT: &str = "You are the JobSearchAgent, a job-search assistant. Use \
your tools to search for jobs, save and list them, change their status, rank saved jobs \
against the user's profile, set the profile from what the user says or from their resume, \
record feedback, show details, notify matches and archive or delete jobs. Refer to jobs by \
their ids. Never invent jobs, companies or results: report what the tools return. When a tool \
fails, say what failed and what the user can do. Answer briefly, in Markdown.";

/// The application-prep agent's system prompt.
pub const APP_PREP_PROMPT: &str = "You are the AppPrepAgent. You prepare job applications \
from the user's profile: application packages (resume suggestions, cover letter, intro \
email), job-fit analyses and the list of packages made. Find the job's id with list_jobs when \
the user names a job. Never claim experience the profile does not state; show what the tools \
return, including what they removed as unsupported. Answer in Markdown.";

/// How turns run.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatConfig {
    /// The model id clients ask for (`GET /v1/models`).
    pub model_name: String,
    /// Model calls per agent turn.
    pub max_rounds: u32,
    /// The longest a turn may work (waits for the model server's slots excluded).
    pub turn_timeout: Duration,
    /// Tokens one turn may use, over all its calls.
    pub max_tokens_per_turn: u64,
}

impl Default for ChatConfig {
    fn default() -> Self {
        ChatConfig {
            model_name: "job-agent".into(),
            max_rounds: 8,
            turn_timeout: Duration::from_secs(300),
            max_tokens_per_turn: 60_000,
        }
    }
}

/// The chat: router, job-search agent, application-prep agent.
pub struct JobAgentChat {
    services: Arc<Services>,
    model: Arc<dyn ChatModel>,
    router: ModelRouter,
    config: ChatConfig,
    job_search: AgentConfig<(), String>,
    app_prep: AgentConfig<(), String>,
}

impl std::fmt::Debug for JobAgentChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobAgentChat")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn agent(
    name: &str,
    prompt: &str,
    tools: Vec<crate::tools::ChatTool>,
    config: &ChatConfig,
    model: &str,
) -> AgentConfig<(), String> {
    let mut agent = AgentConfig::new(AgentIdentity::new(name, "job-agent-chat"), prompt)
        .with_max_rounds(config.max_rounds)
        // A person reads the answer: the last step answers from what the tools returned.
        .with_answer_at_last_round()
        .with_overall_timeout(config.turn_timeout)
        .with_model(model);
    agent.tools = tools;
    agent
}

impl JobAgentChat {
    /// The chat on `model` (tiers named by `router`: light for the router, primary for
    /// the agents), with `services`.
    pub fn new(services: Arc<Services>, model: Arc<dyn ChatModel>, router: ModelRouter) -> Self {
        JobAgentChat::with_config(services, model, router, ChatConfig::default())
    }

    /// Like [`new`](Self::new), with other limits.
    pub fn with_config(
        services: Arc<Services>,
        model: Arc<dyn ChatModel>,
        router: ModelRouter,
        config: ChatConfig,
    ) -> Self {
        let primary = router.model(ModelTier::Primary).to_owned();
        let job_search = agent(
            "JobSearchAgent",
            JOB_SEARCH_PROMPT,
            job_search_tools(&services),
            &config,
            &primary,
        );
        let app_prep = agent(
            "AppPrepAgent",
            APP_PREP_PROMPT,
            app_prep_tools(&services),
            &config,
            &primary,
        );
        JobAgentChat {
            services,
            model,
            router,
            config,
            job_search,
            app_prep,
        }
    }

    /// What the tools work with.
    pub fn services(&self) -> &Arc<Services> {
        &self.services
    }

    /// The model every call goes to.
    pub fn model(&self) -> Arc<dyn ChatModel> {
        Arc::clone(&self.model)
    }

    /// The tiers' models.
    pub fn router(&self) -> &ModelRouter {
        &self.router
    }

    /// The chat's limits.
    pub fn config(&self) -> &ChatConfig {
        &self.config
    }

    /// The agent answering `intent`.
    pub fn agent_config(&self, intent: Intent) -> &AgentConfig<(), String> {
        match intent {
            Intent::JobSearch => &self.job_search,
            Intent::AppPrep => &self.app_prep,
        }
    }
}

/// Tools' notes, as progress lines.
struct Notes(ChatProgress);

impl EventSink<String> for Notes {
    fn emit(&self, note: String) {
        self.0.note(format!("> {note}"));
    }
}

/// What the loop does, as progress lines: each tool called.
fn tool_notes(progress: ChatProgress) -> impl Fn(&AgentIdentity, &LoopEvent) + Send + Sync {
    move |_agent: &AgentIdentity, event: &LoopEvent| {
        if let LoopEvent::ToolCalled { name, .. } = event {
            progress.note(format!("> {} …", name.replace('_', " ")));
        }
    }
}

/// An earlier answer as the client kept it, without the progress lines a stream showed
/// before it (`> routed to …`, `> search jobs …`, then a blank line): streaming clients
/// keep them in the assistant message they send back.
fn without_progress(message: &ChatMessage) -> ChatMessage {
    if message.role != ChatRole::Assistant || !message.content.starts_with("> routed to ") {
        return message.clone();
    }
    let mut lines = message.content.lines().peekable();
    while lines.next_if(|line| line.starts_with("> ")).is_some() {}
    lines.next_if(|line| line.trim().is_empty());
    ChatMessage::new(ChatRole::Assistant, lines.collect::<Vec<_>>().join("\n"))
}

fn to_message(message: &ChatMessage) -> Option<Message> {
    match message.role {
        ChatRole::User => Some(Message::user(message.content.clone())),
        ChatRole::Assistant => Some(Message::assistant(message.content.clone())),
        // The agents keep their own instructions.
        ChatRole::System => None,
    }
}

fn unavailable(error: &LlmError) -> bool {
    matches!(
        error,
        LlmError::Transport(_)
            | LlmError::Timeout(_)
            | LlmError::Overloaded { .. }
            | LlmError::RateLimited { .. }
            | LlmError::Server { .. }
    )
}

/// Reads the files attached to the conversation's user messages into the user's
/// profile (a resume: PDF, DOCX or TXT, read in memory through job-capabilities) and
/// tells the agent, in the message, what became of each. Returns one line per file of
/// the last message, for the answer: read, or refused and why. A file sent before (the
/// same text: clients resend the whole conversation) is not read again.
async fn take_attachments(
    services: &Services,
    user: &str,
    messages: &mut [ChatMessage],
) -> Result<Vec<String>, ChatAgentError> {
    let last_user = messages.iter().rposition(|m| m.role == ChatRole::User);
    let mut lines = Vec::new();
    for (index, message) in messages.iter_mut().enumerate() {
        let mut notes = Vec::new();
        for file in std::mem::take(&mut message.files) {
            let outcome = read_attachment(services, user, file).await?;
            if Some(index) == last_user {
                lines.push(outcome.clone());
            }
            notes.push(outcome);
        }
        if !notes.is_empty() {
            let said = message.content.trim();
            let joined = notes.join(" ");
            message.content = if said.is_empty() {
                format!("[{joined}]")
            } else {
                format!("{said}\n\n[{joined}]")
            };
        }
    }
    Ok(lines)
}

/// One attached file read into the profile; what became of it, in a sentence.
async fn read_attachment(
    services: &Services,
    user: &str,
    file: ChatFile,
) -> Result<String, ChatAgentError> {
    let name = file.name.clone();
    let bytes = match file.content {
        Ok(bytes) => bytes,
        Err(reason) => return Ok(format!("Attached {name} was not read: {reason}.")),
    };
    let path = std::path::PathBuf::from(&name);
    let read = tokio::task::spawn_blocking(move || {
        job_capabilities::documents::read_resume_bytes(&bytes, &path)
    })
    .await
    .map_err(|e| ChatAgentError::Failed(format!("reading {name} stopped: {e}")))?;
    let text = match read {
        Ok(text) => text,
        Err(error) => {
            return Ok(format!(
                "Attached {name} was not read: {error}. Send a PDF with a text layer, a DOCX or a text file, or paste the resume's text."
            ));
        }
    };
    let store_failed = |e: agent_runtime::sessions::StoreError| {
        ChatAgentError::Unavailable(format!("the store failed: {e}"))
    };
    let mut profile = services
        .store
        .profile(user)
        .await
        .map_err(store_failed)?
        .unwrap_or_default();
    if profile.resume_digest != crate::resume::resume_digest(&text) {
        crate::resume::take_resume(&mut profile, &text, &name);
        services
            .store
            .save_profile(user, &profile)
            .await
            .map_err(store_failed)?;
    }
    let skills = if profile.skills.is_empty() {
        "no skills listed".to_owned()
    } else {
        format!("skills {}", profile.skills.join(", "))
    };
    let who = if profile.name.is_empty() {
        String::new()
    } else {
        format!("{}; ", profile.name)
    };
    Ok(format!(
        "Attached {name} was read into your profile: {who}{skills}."
    ))
}

#[async_trait]
impl ChatAgent for JobAgentChat {
    fn models(&self) -> Vec<String> {
        vec![self.config.model_name.clone()]
    }

    async fn reply(
        &self,
        turn: ChatTurn,
        progress: ChatProgress,
    ) -> Result<ChatReply, ChatAgentError> {
        let mut messages: Vec<ChatMessage> = turn.messages.iter().map(without_progress).collect();
        // Everything kept for the user is kept under its owner id, which names the tenant.
        let owner = turn.owner();
        let attached = take_attachments(&self.services, &owner, &mut messages).await?;
        for line in &attached {
            progress.note(format!("> {line}"));
        }
        // One session and one meter for the whole turn: the router's call, the agent's
        // and its tools'.
        let meter = CostMeter::new(CostLimits {
            max_tokens: Some(self.config.max_tokens_per_turn),
            ..CostLimits::default()
        })
        .with_labels(MeterLabels::product("job_agent_chat").with_router(&self.router));
        let session = Session::new(uuid::Uuid::new_v4().to_string(), ())
            .with_user(owner)
            .with_events(Arc::new(Notes(progress.clone())))
            .with_cancellation(turn.cancellation.clone())
            .with_model(self.model.clone())
            .with_router(self.router.clone())
            .with_meter(meter.clone());
        let routed = classify(&session, &messages).await;
        tracing::info!(
            intent = routed.intent.label(),
            fallback = routed.fallback.as_deref().unwrap_or(""),
            user = %turn.user,
            "routed"
        );
        progress.note(format!("> routed to {}", routed.intent.label()));

        let history: Vec<Message> = messages.iter().filter_map(to_message).collect();
        let config = self.agent_config(routed.intent);
        let ctx = session.context(config.identity.clone());
        let result = AgentLoop::new(config.clone(), self.model.clone())
            .with_observer(tool_notes(progress.clone()))
            .run_conversation(&ctx, history)
            .instrument(tracing::info_span!(
                "chat_agent",
                intent = routed.intent.label()
            ))
            .await;

        let spent = meter.snapshot();
        tracing::info!(
            cost = %spent.per_unit("chat turn", 1),
            intent = routed.intent.label(),
            "chat turn spent"
        );
        let usage = spent.usage;
        // OpenAI counts cached prompt tokens among the prompt's.
        let tokens = ChatUsage {
            prompt_tokens: usage.prompt_tokens(),
            completion_tokens: usage.output_tokens,
        };
        let answer = result.final_text.clone().filter(|t| !t.trim().is_empty());
        let (text, finish) = match (&result.stop, answer) {
            (StopCause::Completed, Some(text)) => (text, FinishReason::Stop),
            (StopCause::Completed, None) => (
                "I have no answer to give: the model replied with nothing. Please ask again."
                    .to_owned(),
                FinishReason::Stop,
            ),
            (StopCause::Cancelled, _) => {
                return Err(ChatAgentError::Failed("the turn was cancelled".into()));
            }
            (StopCause::ModelError(error), _) if unavailable(error) => {
                return Err(ChatAgentError::Unavailable(format!(
                    "the model could not be reached: {error}"
                )));
            }
            (StopCause::ModelError(error), _) => {
                return Err(ChatAgentError::Failed(format!("the model failed: {error}")));
            }
            (stop, text) => {
                let why = match stop {
                    StopCause::MaxRounds => {
                        format!("it took more than {} steps", self.config.max_rounds)
                    }
                    StopCause::Timeout(limit) => {
                        format!("it took longer than {}s", limit.as_secs())
                    }
                    StopCause::LimitExceeded(limit) => format!("it reached a limit ({limit})"),
                    StopCause::CutOff { .. } => {
                        "the answer kept running past the length limit".into()
                    }
                    StopCause::NoAnswer => {
                        "the model kept asking for tools instead of answering".into()
                    }
                    other => format!("{other:?}"),
                };
                let done = text.unwrap_or_default();
                (
                    format!("{done}\n\nI stopped before finishing: {why}. What I did so far is kept; ask me to continue.").trim().to_owned(),
                    FinishReason::Length,
                )
            }
        };
        let text = if attached.is_empty() {
            text
        } else {
            format!("{}\n\n{text}", attached.join("\n"))
        };
        Ok(ChatReply {
            text,
            usage: tokens,
            finish,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_a_streaming_client_kept_are_left_out_of_the_history() {
        let streamed = ChatMessage::new(
            ChatRole::Assistant,
            "> routed to job search\n> search jobs …\n\nI found 4 jobs.\n\n> A quote.",
        );
        assert_eq!(
            without_progress(&streamed).content,
            "I found 4 jobs.\n\n> A quote."
        );
        // An answer that merely quotes, and the user's words, are kept as they are.
        let quoting = ChatMessage::new(ChatRole::Assistant, "> Rust is required.\n\nYes.");
        assert_eq!(without_progress(&quoting), quoting);
        let said = ChatMessage::new(ChatRole::User, "> routed to job search");
        assert_eq!(without_progress(&said), said);
    }
}
