//! The router: one light-tier structured call per request classifies the conversation as
//! job search or application prep. Anything it cannot read goes to job search, the agent
//! with the broader tools (spec 004's default).

use agent_llm::{ChatRequest, Message, ModelTier};
use agent_runtime::{Ask, Session};
use agent_server::chat::{ChatMessage, ChatRole};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which agent answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Intent {
    /// Searching, saving, ranking, profile, resume, feedback, notifications, anything else.
    JobSearch,
    /// Application materials, job fit, saved application packages.
    AppPrep,
}

impl Intent {
    /// How the stream names it.
    pub fn label(self) -> &'static str {
        match self {
            Intent::JobSearch => "job search",
            Intent::AppPrep => "application prep",
        }
    }
}

/// The classifier's answer.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct Route {
    /// JOB_SEARCH or APP_PREP.
    pub intent: Intent,
}

/// The router's system prompt.
pub const ROUTER_PROMPT: &str = "You are the Router of a job-search assistant. Classify the \
user's latest request, reading the conversation for context. APP_PREP: they want application \
materials for a job (resume suggestions, a cover letter, an intro email), an analysis of how \
they fit a job, or their prepared application packages. JOB_SEARCH: everything else \
(searching, saving, listing, ranking or deleting jobs, their profile or resume, feedback, \
notifications, greetings).";

/// The most recent messages the router reads.
const READ_LAST: usize = 6;

/// The router's request: the conversation's last messages as one text.
pub fn route_request(messages: &[ChatMessage]) -> ChatRequest {
    let said: Vec<&ChatMessage> = messages
        .iter()
        .filter(|m| m.role != ChatRole::System)
        .collect();
    let start = said.len().saturating_sub(READ_LAST);
    let transcript: String = said[start..]
        .iter()
        .map(|m| {
            let who = if m.role == ChatRole::User {
                "user"
            } else {
                "assistant"
            };
            let text: String = m.content.chars().take(600).collect();
            format!("{who}: {text}\n")
        })
        .collect();
    ChatRequest::new(vec![Message::user(format!(
        "Conversation:\n{transcript}\nClassify the user's latest request."
    ))])
    .with_system(ROUTER_PROMPT)
    .with_temperature(0.0)
    .with_max_tokens(100)
}

/// A routing decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Routed {
    /// The agent chosen.
    pub intent: Intent,
    /// Why the default was taken, when the classifier failed.
    pub fallback: Option<String>,
}

/// Classifies the conversation: the runtime's one metered call on `session` (its model,
/// the model its router gives the light tier, its meter, which counts the call and its
/// tokens under `router`).
pub async fn classify<S, E>(session: &Session<S, E>, messages: &[ChatMessage]) -> Routed {
    let ask = Ask::from_request(route_request(messages))
        .tier(ModelTier::Light)
        .step("router")
        .attempts(2);
    match session.extract::<Route>(ask).await {
        Ok(route) => Routed {
            intent: route.value.intent,
            fallback: None,
        },
        Err(error) => {
            tracing::warn!(%error, "the router failed; answering as job search");
            Routed {
                intent: Intent::JobSearch,
                fallback: Some(error.to_string()),
            }
        }
    }
}
